/* tests/unit/checkpoint/test_checkpoint.c: the checkpoint unit tests'
 * driver (rf_test_checkpoint CASE, one ctest unit.checkpoint.CASE each),
 * the fixture tensors and scratch helpers, and "emit DIR", the files the
 * independent Python reader (check_reader.py) and the rf-ckpt script test
 * (rf_ckpt_test.sh) check. */
#include <dirent.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt_test.h"
#include "rdmaflow/byteorder.h"
#include "tests/common/check.h"

static float f32v[6] = {-1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 3.14159274f};
static int32_t i32v[4] = {-2, 0, 7, INT32_MAX};
static int64_t i64v = 1234567890123LL;
static unsigned char boolv[5] = {1, 0, 1, 1, 0};
static float scalarv = 3.25f;
static int64_t stepv;

void fix_tensors(rf_ckpt_tensor t[FIX_N], long long step)
{
    stepv = step;
    int i = 0;
    t[i++] = (rf_ckpt_tensor){"global_step", RF_I64, RF_SCALAR, &stepv, 8};
    t[i++] = (rf_ckpt_tensor){"d/bool", RF_BOOL, RF_SHAPE(5), boolv, 5};
    t[i++] = (rf_ckpt_tensor){"a/f32", RF_F32, RF_SHAPE(2, 3), f32v, 24};
    t[i++] = (rf_ckpt_tensor){"z/empty_bool", RF_BOOL, RF_SHAPE(0), NULL, 0};
    t[i++] = (rf_ckpt_tensor){"c/i64", RF_I64, RF_SCALAR, &i64v, 8};
    t[i++] = (rf_ckpt_tensor){"e/empty", RF_F32, RF_SHAPE(0, 3), NULL, 0};
    t[i++] = (rf_ckpt_tensor){"b/i32", RF_I32, RF_SHAPE(4), i32v, 16};
    t[i++] = (rf_ckpt_tensor){"f/scalar_f32", RF_F32, RF_SCALAR, &scalarv, 4};
}

const rf_ckpt_tensor *fix_find(const rf_ckpt_tensor *t, size_t n,
                               const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(t[i].name, name))
            return &t[i];
    return NULL;
}

static char scratch_dir[256];

const char *scratch(void)
{
    if (!scratch_dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(scratch_dir, sizeof scratch_dir, "%s/rf-ckpt-test.XXXXXX",
                 tmp && *tmp ? tmp : "/tmp");
        CHECK(mkdtemp(scratch_dir) != NULL, "mkdtemp %s", scratch_dir);
    }
    return scratch_dir;
}

static int rm_one(const char *p, const struct stat *st, int flag,
                  struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(p);
}

void scratch_done(void)
{
    if (scratch_dir[0])
        nftw(scratch_dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    scratch_dir[0] = '\0';
}

const char *sp(const char *name)
{
    static char buf[8][512];
    static int k;
    char *b = buf[k++ % 8];
    snprintf(b, sizeof buf[0], "%s/%s", scratch(), name);
    return b;
}

int dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    CHECK(d != NULL, "opendir %s", dir);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n + 1);
    CHECK(b && fread(b, 1, (size_t)n, f) == (size_t)n, "reading %s", path);
    fclose(f);
    *len = (size_t)n;
    return b;
}

void spill(const char *path, const void *p, size_t len)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL, "cannot write %s", path);
    CHECK(len == 0 || fwrite(p, 1, len, f) == len, "writing %s", path);
    CHECK(fclose(f) == 0, "closing %s", path);
}

void write_raw(const char *path, const char *json, const void *data,
               size_t dlen)
{
    size_t h = strlen(json), padded = (h + 7) / 8 * 8;
    unsigned char *b = calloc(8 + padded + dlen + 1, 1);
    CHECK_TRUE(b != NULL);
    rf_put_le64(b, padded);
    memcpy(b + 8, json, h);
    memset(b + 8 + h, ' ', padded - h);
    if (dlen)
        memcpy(b + 8 + padded, data, dlen);
    spill(path, b, 8 + padded + dlen);
    free(b);
}

/* One "name dtype shape bytes crc v,v,..." line per tensor, printed from
 * the source arrays (not from the file). */
static void write_expect(const char *path, const rf_ckpt_tensor *t, size_t n)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL, "cannot write %s", path);
    static const char *const st[] = {"F32", "I32", "I64", "BOOL"};
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%s %s [", t[i].name, st[t[i].dtype]);
        for (int d = 0; d < t[i].shape.rank; d++)
            fprintf(f, "%s%" PRId64, d ? "," : "", t[i].shape.dims[d]);
        fprintf(f, "] %zu %08" PRIx32 " ", t[i].bytes,
                rf_ckpt_crc32c(t[i].data, t[i].bytes));
        size_t es = rf_dtype_size(t[i].dtype), ne = t[i].bytes / es;
        for (size_t k = 0; k < ne; k++) {
            const char *p = (const char *)t[i].data + k * es;
            if (k)
                fputc(',', f);
            switch (t[i].dtype) {
            case RF_F32:
                fprintf(f, "%.9g", (double)*(const float *)p);
                break;
            case RF_I32:
                fprintf(f, "%" PRId32, *(const int32_t *)p);
                break;
            case RF_I64:
                fprintf(f, "%" PRId64, *(const int64_t *)p);
                break;
            case RF_BOOL:
                fprintf(f, "%d", *(const unsigned char *)p);
                break;
            }
        }
        fputs(ne ? "\n" : "-\n", f);
    }
    CHECK(fclose(f) == 0, "closing %s", path);
}

void emit_fixtures(const char *dir)
{
    char p[1024], q[1024];
    rf_ckpt_tensor t[FIX_N];
    fix_tensors(t, 42);
    const char *meta[] = {"producer", "rf_test_checkpoint", "note", "a \"q\"",
                          NULL};
    snprintf(p, sizeof p, "%s/fixture.safetensors", dir);
    CHECK_OK(rf_ckpt_write(p, t, FIX_N, meta));
    snprintf(p, sizeof p, "%s/expect.txt", dir);
    write_expect(p, t, FIX_N);

    /* near: a/f32[0] off by 1e-3 */
    float near[6];
    memcpy(near, f32v, sizeof near);
    near[0] += 1e-3f;
    rf_ckpt_tensor tn[FIX_N];
    memcpy(tn, t, sizeof tn);
    tn[2].data = near;
    snprintf(p, sizeof p, "%s/near.safetensors", dir);
    CHECK_OK(rf_ckpt_write(p, tn, FIX_N, NULL));

    /* other: d/bool gone, y/extra new, b/i32 as [2,2], c/i64 as I32 */
    int32_t c32 = 5;
    rf_ckpt_tensor to[FIX_N];
    memcpy(to, t, sizeof to);
    to[1] = (rf_ckpt_tensor){"y/extra", RF_F32, RF_SCALAR, &scalarv, 4};
    to[4] = (rf_ckpt_tensor){"c/i64", RF_I32, RF_SCALAR, &c32, 4};
    to[6].shape = RF_SHAPE(2, 2);
    snprintf(p, sizeof p, "%s/other.safetensors", dir);
    CHECK_OK(rf_ckpt_write(p, to, FIX_N, NULL));

    /* an ordinary safetensors file without CRCs */
    snprintf(p, sizeof p, "%s/plain.safetensors", dir);
    write_raw(
        p, "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
        f32v, 8);

    /* a checkpoint directory with steps 1, 2, 3 */
    snprintf(q, sizeof q, "%s/ckdir", dir);
    CHECK(mkdir(q, 0755) == 0, "mkdir %s", q);
    for (long long s = 1; s <= 3; s++) {
        fix_tensors(t, s);
        CHECK_OK(rf_ckpt_dir_save(q, s, t, FIX_N, NULL, 0, NULL, 0));
    }
}

static const struct {
    const char *name;
    void (*fn)(void);
} cases[] = {
    {"crc", case_crc},
    {"roundtrip", case_roundtrip},
    {"determinism", case_determinism},
    {"paths", case_paths},
    {"links", case_links},
    {"stale", case_stale},
    {"corrupt", case_corrupt},
    {"malformed", case_malformed},
    {"filled", case_filled},
    {"dir", case_dir},
    {"dir_latest", case_dir_latest},
    {"dir_state", case_dir_state},
    {"dir_orphans", case_dir_orphans},
    {"verify", case_verify},
};

int main(int argc, char **argv)
{
    rft_set_who("checkpoint");
    if (argc == 3 && !strcmp(argv[1], "emit")) {
        emit_fixtures(argv[2]);
        return 0;
    }
    int ran = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (argc < 2 || !strcmp(argv[1], cases[i].name)) {
            cases[i].fn();
            scratch_done();
            printf("PASS %s\n", cases[i].name);
            ran++;
        }
    if (!ran) {
        fprintf(stderr, "usage: %s [CASE] | emit DIR\n", argv[0]);
        return 2;
    }
    return 0;
}
