/* tests/unit/checkpoint/test_ckpt_file.c: CRC32C against RFC 3720's
 * vectors, the write/read round trip of every dtype (scalars, empty
 * tensors, metadata) checked against the file's raw layout too,
 * determinism, the paths rf_ckpt_write refuses or fails on without
 * leaving anything behind or touching an existing file, symbolic links
 * followed (the target written, the link kept), and the temporaries of a
 * dead writer removed by the next writer of the same file. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ckpt_test.h"
#include "rdmaflow/byteorder.h"
#include "tests/common/check.h"

void case_crc(void)
{
    unsigned char b[32];
    memset(b, 0, sizeof b);
    CHECK_EQ_U64(rf_ckpt_crc32c(b, 32), 0x8a9136aa);
    memset(b, 0xff, sizeof b);
    CHECK_EQ_U64(rf_ckpt_crc32c(b, 32), 0x62a8ab43);
    for (int i = 0; i < 32; i++)
        b[i] = (unsigned char)i;
    CHECK_EQ_U64(rf_ckpt_crc32c(b, 32), 0x46dd794e);
    for (int i = 0; i < 32; i++)
        b[i] = (unsigned char)(31 - i);
    CHECK_EQ_U64(rf_ckpt_crc32c(b, 32), 0x113fdb5c);
    CHECK_EQ_U64(rf_ckpt_crc32c("123456789", 9), 0xe3069283); /* check */
    CHECK_EQ_U64(rf_ckpt_crc32c(NULL, 0), 0);
}

static const char *meta[] = {"producer", "unit", "step", "42", NULL};

/* The file's own bytes: length, padding, metadata, order, contiguity. */
static void check_layout(const char *path, const rf_ckpt_tensor *t, size_t n)
{
    size_t len;
    unsigned char *b = slurp(path, &len);
    CHECK(b && len >= 8, "%s: %zu bytes", path, b ? len : 0);
    uint64_t h = rf_get_le64(b);
    CHECK(h % 8 == 0 && 8 + h <= len, "header length %" PRIu64, h);
    char *hdr = strndup((const char *)b + 8, h);
    CHECK(hdr[h - 1] == ' ' || hdr[h - 1] == '}', "last header byte '%c'",
          hdr[h - 1]);
    CHECK(!strncmp(hdr, "{\"__metadata__\":{", 17), "header starts %.20s", hdr);
    CHECK(strstr(hdr, "\"producer\":\"unit\"") != NULL, "no producer in %s",
          hdr);
    /* the data: the tensors' bytes in byte order of the names */
    const char *prev = "";
    size_t off = 8 + h;
    for (size_t k = 0; k < n; k++) {
        const rf_ckpt_tensor *next = NULL;
        for (size_t i = 0; i < n; i++)
            if (strcmp(t[i].name, prev) > 0 &&
                (!next || strcmp(t[i].name, next->name) < 0))
                next = &t[i];
        CHECK(off + next->bytes <= len, "%s at %zu", next->name, off);
        CHECK(next->bytes == 0 || !memcmp(b + off, next->data, next->bytes),
              "%s's bytes at file offset %zu", next->name, off);
        char want[128], hex[16];
        snprintf(hex, sizeof hex, "%08" PRIx32,
                 rf_ckpt_crc32c(next->data, next->bytes));
        snprintf(want, sizeof want, "\"crc32c/%s\":\"%s\"", next->name, hex);
        CHECK(strstr(hdr, want) != NULL, "no %s in the header", want);
        off += next->bytes;
        prev = next->name;
    }
    CHECK(off == len, "data ends at %zu, the file at %zu", off, len);
    free(hdr);
    free(b);
}

void case_roundtrip(void)
{
    rf_ckpt_tensor t[FIX_N];
    fix_tensors(t, 42);
    const char *path = sp("rt.safetensors");
    CHECK_OK(rf_ckpt_write(path, t, FIX_N, meta));
    check_layout(path, t, FIX_N);
    rf_ckpt *ck;
    CHECK_OK(rf_ckpt_open(path, &ck));
    CHECK(!strcmp(rf_ckpt_path(ck), path), "path %s", rf_ckpt_path(ck));
    CHECK_EQ_U64(rf_ckpt_count(ck), FIX_N);
    CHECK_TRUE(rf_ckpt_has_crc(ck));
    CHECK(!strcmp(rf_ckpt_note(ck), ""), "note '%s'", rf_ckpt_note(ck));
    for (size_t i = 0; i < FIX_N; i++) {
        const rf_ckpt_entry *e = rf_ckpt_at(ck, i);
        CHECK(e != NULL, "entry %zu", i);
        if (i)
            CHECK(strcmp(rf_ckpt_at(ck, i - 1)->t.name, e->t.name) < 0,
                  "%s before %s", rf_ckpt_at(ck, i - 1)->t.name, e->t.name);
        const rf_ckpt_tensor *w = fix_find(t, FIX_N, e->t.name);
        CHECK(w != NULL, "unexpected tensor %s", e->t.name);
        CHECK(rf_ckpt_find(ck, w->name) == e, "find %s", w->name);
        CHECK(e->t.dtype == w->dtype, "%s dtype %d", w->name, e->t.dtype);
        CHECK(rf_shape_equal(&e->t.shape, &w->shape), "%s rank %d", w->name,
              e->t.shape.rank);
        CHECK_EQ_U64(e->t.bytes, w->bytes);
        CHECK(w->bytes == 0 || !memcmp(e->t.data, w->data, w->bytes),
              "%s's values", w->name);
        CHECK_TRUE(e->has_crc);
        CHECK_EQ_U64(e->crc32c, rf_ckpt_crc32c(w->data, w->bytes));
    }
    CHECK(rf_ckpt_at(ck, FIX_N) == NULL, "%s", "entry past the end");
    CHECK(rf_ckpt_find(ck, "nope") == NULL, "%s", "found 'nope'");
    CHECK(!strcmp(rf_ckpt_meta(ck, "producer"), "unit"), "%s", "producer");
    CHECK(!strcmp(rf_ckpt_meta(ck, "step"), "42"), "%s", "step");
    CHECK(rf_ckpt_meta(ck, "crc32c/global_step") != NULL, "%s", "crc key");
    CHECK(rf_ckpt_meta(ck, "absent") == NULL, "%s", "absent key");
    rf_ckpt_close(ck);

    /* no tensors at all, and no metadata */
    CHECK_OK(rf_ckpt_write(sp("empty.safetensors"), NULL, 0, NULL));
    CHECK_OK(rf_ckpt_open(sp("empty.safetensors"), &ck));
    CHECK_EQ_U64(rf_ckpt_count(ck), 0);
    rf_ckpt_close(ck);

    /* an ordinary safetensors file: no CRCs, listed with computed ones */
    float v[2] = {1.5f, -2.0f};
    write_raw(sp("plain.safetensors"),
              "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],"
              "\"data_offsets\":[0,8]},\"__metadata__\":{\"format\":\"pt\"}}",
              v, 8);
    CHECK_OK(rf_ckpt_open(sp("plain.safetensors"), &ck));
    CHECK_TRUE(!rf_ckpt_has_crc(ck));
    const rf_ckpt_entry *e = rf_ckpt_find(ck, "w");
    CHECK(e && !e->has_crc && e->crc32c == rf_ckpt_crc32c(v, 8), "%s",
          "plain entry");
    CHECK(!strcmp(rf_ckpt_meta(ck, "format"), "pt"), "%s", "format");
    rf_ckpt_close(ck);

    /* bad arguments */
    rf_ckpt_tensor bad = t[2];
    bad.bytes = 20;
    CHECK_ST(rf_ckpt_write(sp("x"), &bad, 1, NULL), RF_ERR_INVALID_ARG);
    CHECK_MSG("a/f32");
    rf_ckpt_tensor two[2] = {t[2], t[2]};
    CHECK_ST(rf_ckpt_write(sp("x"), two, 2, NULL), RF_ERR_INVALID_ARG);
    CHECK_MSG("given twice");
    const char *reserved[] = {"crc32c/a/f32", "0", NULL};
    CHECK_ST(rf_ckpt_write(sp("x"), t, FIX_N, reserved), RF_ERR_INVALID_ARG);
    CHECK_MSG("reserved");
    const char *odd[] = {"k", NULL};
    CHECK_ST(rf_ckpt_write(sp("x"), t, FIX_N, odd), RF_ERR_INVALID_ARG);
    CHECK_MSG("no value");
    bad = t[2];
    bad.name = "__metadata__";
    CHECK_ST(rf_ckpt_write(sp("x"), &bad, 1, NULL), RF_ERR_INVALID_ARG);
    CHECK(access(sp("x"), F_OK) != 0, "%s", "a refused write left a file");
}

void case_determinism(void)
{
    rf_ckpt_tensor t[FIX_N], r[FIX_N];
    fix_tensors(t, 7);
    for (int i = 0; i < FIX_N; i++) /* the same tensors in another order */
        r[i] = t[(i * 3 + 1) % FIX_N];
    const char *m2[] = {"step", "42", "producer", "unit", NULL};
    CHECK_OK(rf_ckpt_write(sp("a"), t, FIX_N, meta));
    CHECK_OK(rf_ckpt_write(sp("b"), t, FIX_N, meta));
    CHECK_OK(rf_ckpt_write(sp("c"), r, FIX_N, m2));
    size_t la, lb, lc;
    unsigned char *a = slurp(sp("a"), &la), *b = slurp(sp("b"), &lb),
                  *c = slurp(sp("c"), &lc);
    CHECK(la == lb && !memcmp(a, b, la), "%s", "two writes differ");
    CHECK(la == lc && !memcmp(a, c, la), "%s", "order changed the bytes");
    /* a different value gives a different file */
    const char *m3[] = {"producer", "unit", "step", "43", NULL};
    CHECK_OK(rf_ckpt_write(sp("d"), t, FIX_N, m3));
    size_t ld;
    unsigned char *d = slurp(sp("d"), &ld);
    CHECK(ld != la || memcmp(a, d, la), "%s", "metadata ignored");
    /* rewriting a file replaces it */
    CHECK_OK(rf_ckpt_write(sp("d"), t, FIX_N, meta));
    free(d);
    d = slurp(sp("d"), &ld);
    CHECK(ld == la && !memcmp(a, d, la), "%s", "rewrite differs");
    free(a);
    free(b);
    free(c);
    free(d);
}

/* path must be refused with a message containing why; the scratch
 * directory keeps nentries entries. */
static void refused(const char *path, const char *why, int nentries)
{
    rf_ckpt_tensor t[FIX_N];
    fix_tensors(t, 1);
    CHECK_ST(rf_ckpt_check_path(path), RF_ERR_INVALID_ARG);
    CHECK_MSG(why);
    CHECK_ST(rf_ckpt_write(path, t, FIX_N, NULL), RF_ERR_INVALID_ARG);
    CHECK_MSG(why);
    CHECK_MSG(path);
    CHECK(dir_entries(scratch()) == nentries, "%d entries, want %d",
          dir_entries(scratch()), nentries);
}

void case_paths(void)
{
    spill(sp("target"), "old", 3);
    CHECK(mkdir(sp("adir"), 0755) == 0, "%s", "mkdir");
    CHECK(symlink(sp("target"), sp("link")) == 0, "%s", "symlink");
    refused(sp("adir"), "is a directory", 3);
    refused("/dev/null", "not a regular file", 3);
    refused(sp("missing/x.safetensors"), "does not exist", 3);
    refused(sp("target/x.safetensors"), "not a directory", 3);
    refused(sp("trailing/"), "cannot end in", 3);
    struct stat st;
    CHECK(lstat(sp("link"), &st) == 0 && S_ISLNK(st.st_mode), "%s",
          "the link is gone");
    CHECK(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode), "%s",
          "/dev/null changed");
    size_t n;
    unsigned char *old = slurp(sp("target"), &n);
    CHECK(n == 3 && !memcmp(old, "old", 3), "%s", "target changed");
    free(old);
    CHECK(access(sp("adir"), F_OK) == 0 && dir_entries(sp("adir")) == 0, "%s",
          "the directory changed");
    CHECK_OK(rf_ckpt_check_path(sp("target")));
    CHECK_OK(rf_ckpt_check_path(sp("new.safetensors")));
    CHECK_OK(rf_ckpt_check_path("relative.safetensors"));

    /* a write that fails half way (RLIMIT_FSIZE: EFBIG) removes its
     * temporary file and leaves the existing file alone */
    static float big[16384];
    rf_ckpt_tensor t = {"big", RF_F32, RF_SHAPE(16384), big, sizeof big};
    struct rlimit saved, small = {4096, 4096};
    CHECK(getrlimit(RLIMIT_FSIZE, &saved) == 0, "%s", "getrlimit");
    small.rlim_max = saved.rlim_max;
    signal(SIGXFSZ, SIG_IGN);
    CHECK(setrlimit(RLIMIT_FSIZE, &small) == 0, "%s", "setrlimit");
    rf_status st2 = rf_ckpt_write(sp("target"), &t, 1, NULL);
    CHECK(setrlimit(RLIMIT_FSIZE, &saved) == 0, "%s", "setrlimit");
    CHECK_ST(st2, RF_ERR_IO);
    CHECK_MSG("cannot write");
    CHECK_MSG(strerror(EFBIG)); /* the errno is named */
    old = slurp(sp("target"), &n);
    CHECK(n == 3 && !memcmp(old, "old", 3), "%s", "target changed");
    free(old);
    CHECK(dir_entries(scratch()) == 3, "%d entries after a failed write",
          dir_entries(scratch()));
    /* a directory where nothing can be created (as root too) */
    CHECK_ST(rf_ckpt_write("/proc/rf-ckpt-test.safetensors", &t, 1, NULL),
             access("/proc", W_OK) == 0 ? RF_ERR_IO : RF_ERR_INVALID_ARG);
    CHECK(access("/proc/rf-ckpt-test.safetensors", F_OK) != 0, "%s",
          "a file in /proc");
    /* and a successful write replaces the target */
    CHECK_OK(rf_ckpt_write(sp("target"), &t, 1, NULL));
    rf_ckpt *ck;
    CHECK_OK(rf_ckpt_open(sp("target"), &ck));
    CHECK_EQ_U64(rf_ckpt_find(ck, "big")->t.bytes, sizeof big);
    rf_ckpt_close(ck);
    CHECK(dir_entries(scratch()) == 3, "%d entries", dir_entries(scratch()));
}

/* A write through path must succeed, leave path a symbolic link and put
 * the file at target. */
static void through_link(const char *path, const char *target)
{
    rf_ckpt_tensor t[FIX_N];
    fix_tensors(t, 7);
    CHECK_OK(rf_ckpt_check_path(path));
    CHECK_OK(rf_ckpt_write(path, t, FIX_N, NULL));
    struct stat st;
    CHECK(lstat(path, &st) == 0 && S_ISLNK(st.st_mode),
          "%s is no longer a symbolic link", path);
    CHECK(lstat(target, &st) == 0 && S_ISREG(st.st_mode),
          "%s is not the regular file written", target);
    rf_ckpt *ck;
    CHECK_OK(rf_ckpt_open(target, &ck));
    rf_ckpt_close(ck);
}

void case_links(void)
{
    CHECK(mkdir(sp("adir"), 0755) == 0 && mkdir(sp("sub"), 0755) == 0, "%s",
          "mkdir");
    spill(sp("t1"), "old", 3);
    CHECK(chmod(sp("t1"), 0600) == 0, "%s", "chmod");
    CHECK(symlink(sp("t1"), sp("l1")) == 0, "%s", "symlink"); /* absolute */
    through_link(sp("l1"), sp("t1"));
    struct stat st;
    CHECK(stat(sp("t1"), &st) == 0 && (st.st_mode & 07777) == 0600,
          "the target's mode 0%o was not kept", (unsigned)st.st_mode & 07777);
    /* relative to the link's directory: the temporary goes beside the
     * target, in sub/, and nothing is left in either directory */
    CHECK(symlink("sub/t2", sp("l2")) == 0, "%s", "symlink");
    through_link(sp("l2"), sp("sub/t2"));
    CHECK(dir_entries(sp("sub")) == 1, "%d entries in sub/",
          dir_entries(sp("sub")));
    /* a dangling link names the file to create; a chain is followed */
    CHECK(symlink("t3", sp("l3")) == 0, "%s", "symlink");
    through_link(sp("l3"), sp("t3"));
    CHECK(symlink("l1", sp("l4")) == 0, "%s", "symlink");
    through_link(sp("l4"), sp("t1"));
    int before = dir_entries(scratch());
    /* refused through a link: what the target is, naming both */
    CHECK(symlink(sp("adir"), sp("l5")) == 0, "%s", "symlink");
    CHECK(symlink("/dev/null", sp("l6")) == 0, "%s", "symlink");
    CHECK(symlink("l8", sp("l7")) == 0 && symlink("l7", sp("l8")) == 0, "%s",
          "symlink");
    CHECK(symlink("missing/x", sp("l9")) == 0, "%s", "symlink");
    before += 5;
    refused(sp("l5"), "is a directory", before);
    CHECK_MSG("a symbolic link to");
    refused(sp("l6"), "not a regular file", before);
    CHECK_MSG("/dev/null");
    refused(sp("l7"), "cannot follow the symbolic link", before);
    refused(sp("l9"), "does not exist", before);
    CHECK(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode), "%s",
          "/dev/null changed");
    CHECK(lstat(sp("l6"), &st) == 0 && S_ISLNK(st.st_mode), "%s",
          "the link to /dev/null changed");
}

/* A process id that was just used and is now gone. */
static long dead_pid(void)
{
    pid_t p = fork();
    if (p == 0)
        _exit(0);
    CHECK(p > 0 && waitpid(p, NULL, 0) == p, "%s", "fork");
    return (long)p;
}

void case_stale(void)
{
    long dead = dead_pid(), live = (long)getppid();
    char name[128];
    const char *keep[4];
    snprintf(name, sizeof name, ".model.st.tmp.%ld.0", dead);
    spill(sp(name), "partial", 7); /* a killed writer's: removed */
    snprintf(name, sizeof name, ".model.st.tmp.%ld.3", live);
    keep[0] = strdup(sp(name)); /* a live process's: kept */
    spill(keep[0], "partial", 7);
    snprintf(name, sizeof name, ".other.st.tmp.%ld.0", dead);
    keep[1] = strdup(sp(name)); /* another target's: kept */
    spill(keep[1], "partial", 7);
    keep[2] = strdup(sp(".model.st.tmp.x.0")); /* not a temporary name */
    spill(keep[2], "partial", 7);
    snprintf(name, sizeof name, ".model.st.tmp.%ld.0", dead);
    const char *gone = strdup(sp(name));
    rf_ckpt_tensor t[FIX_N];
    fix_tensors(t, 3);
    CHECK_OK(rf_ckpt_write(sp("model.st"), t, FIX_N, NULL));
    CHECK(access(gone, F_OK) != 0, "the dead writer's %s is still there", gone);
    for (int i = 0; i < 3; i++) {
        CHECK(access(keep[i], F_OK) == 0, "%s was removed", keep[i]);
        free((void *)keep[i]);
    }
    free((void *)gone);
    /* stale files with this process's own PID (a dead writer's PID reused,
     * as after a container restart) do not block a write */
    for (int i = 0; i < 40; i++) {
        snprintf(name, sizeof name, ".model.st.tmp.%ld.%d", (long)getpid(), i);
        spill(sp(name), "partial", 7);
    }
    CHECK_OK(rf_ckpt_write(sp("model.st"), t, FIX_N, NULL));
    /* the state file's writer cleans its own temporaries the same way, and
     * a checkpoint directory never lists a temporary */
    snprintf(name, sizeof name, ".checkpoint.tmp.%ld.1", dead);
    gone = strdup(sp(name));
    spill(gone, "model_checkpoint_path: \"x\"", 26);
    CHECK_OK(rf_ckpt_dir_save(scratch(), 5, t, FIX_N, NULL, 0, NULL, 0));
    CHECK(access(gone, F_OK) != 0, "%s is still there", gone);
    free((void *)gone);
    rf_ckpt_list l;
    CHECK_OK(rf_ckpt_dir_list(scratch(), &l));
    CHECK(l.n == 1 && strstr(l.paths[0], "model.ckpt-5.safetensors"),
          "%zu checkpoints listed", l.n);
    rf_ckpt_list_free(&l);
}

/* ---- tensors written in pieces (rf_ckpt_write_filled) ------------------- */

typedef struct piece_src {
    const unsigned char *bytes;
    size_t total;
    uint64_t next; /* the offset the next call must ask for */
    size_t calls, fail_at;
} piece_src;

static rf_status piece_fill(void *ctx, uint64_t off, void *buf, size_t len)
{
    piece_src *p = ctx;
    CHECK(off == p->next && len <= RF_CKPT_FILL_CHUNK && len > 0 &&
              off + len <= p->total,
          "fill asked for %zu bytes at %llu (next %llu of %zu)", len,
          (unsigned long long)off, (unsigned long long)p->next, p->total);
    if (++p->calls == p->fail_at)
        return rf_error_set(RF_ERR_IO, "piece %zu refused", p->calls);
    memcpy(buf, p->bytes + off, len);
    p->next = off + len;
    return RF_OK;
}

/* A 20 MiB tensor in pieces (3 of at most RF_CKPT_FILL_CHUNK) among the
 * fixture: the file is byte for byte the one rf_ckpt_write makes from the
 * whole buffer, and opens with every CRC verified; a failing piece fails
 * the write with its message and leaves no file. */
void case_filled(void)
{
    size_t big = (size_t)20 << 20, n = FIX_N + 1;
    unsigned char *b = malloc(big);
    CHECK(b != NULL, "out of memory");
    for (size_t i = 0; i < big; i++)
        b[i] = (unsigned char)(i * 2654435761u >> 13);
    rf_ckpt_tensor t[FIX_N + 1];
    fix_tensors(t, 7);
    t[FIX_N] = (rf_ckpt_tensor){"emb/table", RF_F32,
                                RF_SHAPE((int64_t)(big / 64), 16), b, big};
    CHECK_OK(rf_ckpt_write(sp("whole.safetensors"), t, n, NULL));
    rf_ckpt_fill fills[FIX_N + 1];
    memset(fills, 0, sizeof fills);
    piece_src src = {.bytes = b, .total = big};
    fills[FIX_N] = (rf_ckpt_fill){piece_fill, &src};
    t[FIX_N].data = NULL;
    CHECK_OK(rf_ckpt_write_filled(sp("pieces.safetensors"), t, fills, n, NULL));
    CHECK(src.calls == 3 && src.next == big, "%zu pieces up to %llu", src.calls,
          (unsigned long long)src.next);
    size_t la = 0, lb = 0;
    unsigned char *fa = slurp(sp("whole.safetensors"), &la);
    unsigned char *fb = slurp(sp("pieces.safetensors"), &lb);
    CHECK(fa && fb && la == lb && !memcmp(fa, fb, la),
          "the file written in pieces differs from the whole one (%zu, %zu "
          "bytes)",
          la, lb);
    rf_ckpt *ck = NULL;
    CHECK_OK(rf_ckpt_open(sp("pieces.safetensors"), &ck));
    CHECK(rf_ckpt_has_crc(ck), "no CRCs");
    rf_ckpt_close(ck);
    /* a failing piece: the write fails, saying so, and nothing is left */
    src = (piece_src){.bytes = b, .total = big, .fail_at = 2};
    CHECK_ST(rf_ckpt_write_filled(sp("failed.safetensors"), t, fills, n, NULL),
             RF_ERR_IO);
    CHECK_MSG("piece 2 refused");
    CHECK_MSG("emb/table");
    CHECK(access(sp("failed.safetensors"), F_OK) != 0,
          "a failed write left a file");
    /* no data and no fill: refused */
    CHECK_ST(rf_ckpt_write(sp("none.safetensors"), t, n, NULL),
             RF_ERR_INVALID_ARG);
    CHECK_MSG("has no data");
    free(fa);
    free(fb);
    free(b);
    scratch_done();
}
