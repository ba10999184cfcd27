/* tests/unit/checkpoint/test_ckpt_verify.c: rf_ckpt_verify, strict by
 * default. Every file the library writes (whole, in pieces, with no
 * tensor, through a checkpoint directory) verifies strictly; a file
 * lacking a tensor's or the header's CRC32C is refused, naming the file,
 * how many tensors and which (the first five, long names cut), and the
 * header; allow_unchecked accepts it, counts what went unchecked and still
 * checks the CRC32Cs that are there. rf_ckpt_open's rule (all or none)
 * stays as it was. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt_test.h"
#include "tests/common/check.h"

static const rf_ckpt_verify_options lenient = {.allow_unchecked = true};

/* path verifies strictly, every one of its tensors and its header
 * checked. */
static void strict_ok(const char *path, size_t tensors)
{
    rf_ckpt_verify_report r = {.unchecked = 99};
    CHECK_OK(rf_ckpt_verify(path, NULL, &r));
    CHECK(r.tensors == tensors && r.unchecked == 0 && r.header_checked,
          "%s: %zu tensors (want %zu), %zu unchecked, header checked %d", path,
          r.tensors, tensors, r.unchecked, (int)r.header_checked);
    rf_ckpt_verify_options strict = {.allow_unchecked = false};
    CHECK_OK(rf_ckpt_verify(path, &strict, NULL));
}

/* path is refused strictly (RF_ERR_CORRUPT saying needle), accepted with
 * allow_unchecked with this many unchecked tensors and header. */
static void unchecked(const char *path, const char *needle, size_t tensors,
                      size_t n_unchecked, bool header_checked)
{
    rf_ckpt_verify_report r = {.tensors = 99};
    CHECK_ST(rf_ckpt_verify(path, NULL, &r), RF_ERR_CORRUPT);
    CHECK_MSG(path);
    CHECK_MSG(": cannot be verified: ");
    CHECK_MSG(needle);
    CHECK(r.tensors == 0, "%s: a refused file's report is not zeroed", path);
    CHECK_OK(rf_ckpt_verify(path, &lenient, &r));
    CHECK(r.tensors == tensors && r.unchecked == n_unchecked &&
              r.header_checked == header_checked,
          "%s: %zu tensors, %zu unchecked, header checked %d; want %zu, %zu, "
          "%d",
          path, r.tensors, r.unchecked, (int)r.header_checked, tensors,
          n_unchecked, (int)header_checked);
}

/* A raw file whose json holds "crc32c.header":"00000000": the digits are
 * set to the CRC32C of the padded header, as the library writes it. */
static void write_header_crc(const char *path, const char *json,
                             const void *data, size_t dlen)
{
    write_raw(path, json, data, dlen);
    size_t len;
    unsigned char *b = slurp(path, &len);
    CHECK_TRUE(b != NULL);
    size_t hlen = (strlen(json) + 7) / 8 * 8;
    const char *mark = "\"crc32c.header\":\"";
    unsigned char *at = memmem(b + 8, hlen, mark, strlen(mark));
    CHECK(at != NULL, "%s", "no header CRC in the json");
    char hex[9];
    snprintf(hex, sizeof hex, "%08" PRIx32, rf_ckpt_crc32c(b + 8, hlen));
    memcpy(at + strlen(mark), hex, 8);
    spill(path, b, len);
    free(b);
}

static rf_status fill_from(void *ctx, uint64_t off, void *buf, size_t len)
{
    memcpy(buf, (const unsigned char *)ctx + off, len);
    return RF_OK;
}

#define E(name, b, e)                                                          \
    "\"" name "\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[" #b      \
    "," #e "]}"

void case_verify(void)
{
    /* what the library writes: whole, in pieces, no tensor, directories */
    rf_ckpt_tensor t[FIX_N];
    fix_tensors(t, 5);
    const char *meta[] = {"producer", "test_ckpt_verify", NULL};
    CHECK_OK(rf_ckpt_write(sp("whole.st"), t, FIX_N, meta));
    strict_ok(sp("whole.st"), FIX_N);
    rf_ckpt_fill fills[FIX_N];
    memset(fills, 0, sizeof fills);
    for (size_t i = 0; i < FIX_N; i++)
        if (t[i].bytes) {
            fills[i] = (rf_ckpt_fill){fill_from, (void *)t[i].data};
            t[i].data = NULL;
        }
    CHECK_OK(rf_ckpt_write_filled(sp("pieces.st"), t, fills, FIX_N, meta));
    strict_ok(sp("pieces.st"), FIX_N);
    CHECK_OK(rf_ckpt_write(sp("none.st"), NULL, 0, NULL));
    strict_ok(sp("none.st"), 0);
    char path[1024];
    CHECK_OK(rf_ckpt_dir_save_filled(scratch(), 3, t, fills, FIX_N, NULL, 0,
                                     path, sizeof path));
    strict_ok(path, FIX_N);
    fix_tensors(t, 6);
    CHECK_OK(
        rf_ckpt_dir_save(scratch(), 6, t, FIX_N, NULL, 0, path, sizeof path));
    strict_ok(path, FIX_N);

    /* a plain safetensors file: refused strictly, opened as before */
    float v[2] = {1.5f, -2.0f};
    write_raw(sp("plain.st"), "{" E("a", 0, 4) "," E("b", 4, 8) "}", v, 8);
    unchecked(sp("plain.st"),
              "2 of 2 tensors have no CRC32C (\"crc32c/<name>\") and the "
              "header has none (\"crc32c.header\"): 'a', 'b'",
              2, 2, false);
    rf_ckpt *ck;
    CHECK_OK(rf_ckpt_open(sp("plain.st"), &ck));
    CHECK_TRUE(!rf_ckpt_has_crc(ck));
    rf_ckpt_close(ck);

    /* the header's CRC32C and a's, none for b */
    char json[512], ha[9], hb[9];
    snprintf(ha, sizeof ha, "%08" PRIx32, rf_ckpt_crc32c(&v[0], 4));
    snprintf(hb, sizeof hb, "%08" PRIx32, rf_ckpt_crc32c(&v[1], 4));
    snprintf(json, sizeof json,
             "{\"__metadata__\":{\"crc32c.header\":\"00000000\","
             "\"crc32c/a\":\"%s\"}," E("a", 0, 4) "," E("b", 4, 8) "}",
             ha);
    write_header_crc(sp("one.st"), json, v, 8);
    unchecked(sp("one.st"),
              "1 of 2 tensors has no CRC32C (\"crc32c/<name>\"): 'b'", 2, 1,
              true);
    CHECK_ST(rf_ckpt_open(sp("one.st"), &ck), RF_ERR_CORRUPT);
    CHECK_MSG("tensor 'b' has no \"crc32c/b\" while the file carries CRC32Cs");
    /* allow_unchecked still checks a's CRC32C and the header's */
    float w[2] = {1.25f, -2.0f};
    write_header_crc(sp("one-a.st"), json, w, 8); /* a's data changed */
    CHECK_ST(rf_ckpt_verify(sp("one-a.st"), &lenient, NULL), RF_ERR_CORRUPT);
    CHECK_MSG("tensor 'a' (file bytes [");
    char *cap = strstr(json, "\"crc32c/a\"");
    CHECK_TRUE(cap != NULL);
    cap[8] = 'A'; /* "crc32c/A": names no tensor */
    write_header_crc(sp("one-h.st"), json, v, 8);
    cap[8] = 'a';
    CHECK_ST(rf_ckpt_verify(sp("one-h.st"), &lenient, NULL), RF_ERR_CORRUPT);
    CHECK_MSG("names no tensor");
    /* the header CRC32C changed: found with allow_unchecked too */
    size_t len;
    unsigned char *b = slurp(sp("one.st"), &len);
    unsigned char *k = memmem(b, len, "\"crc32c.header\":\"", 17);
    CHECK_TRUE(k != NULL);
    k[17] = k[17] == '0' ? '1' : '0';
    spill(sp("one-hcrc.st"), b, len);
    free(b);
    CHECK_ST(rf_ckpt_verify(sp("one-hcrc.st"), &lenient, NULL), RF_ERR_CORRUPT);
    CHECK_MSG("its \"crc32c.header\" says");

    /* every tensor's CRC32C, no header CRC32C */
    snprintf(json, sizeof json,
             "{\"__metadata__\":{\"crc32c/a\":\"%s\",\"crc32c/b\":\"%s\"}," E(
                 "a", 0, 4) "," E("b", 4, 8) "}",
             ha, hb);
    write_raw(sp("nohdr.st"), json, v, 8);
    unchecked(sp("nohdr.st"), "the header has no CRC32C (\"crc32c.header\")", 2,
              0, false);
    CHECK_ST(rf_ckpt_open(sp("nohdr.st"), &ck), RF_ERR_CORRUPT);
    CHECK_MSG("no \"crc32c.header\" in the metadata");
    write_raw(sp("nohdr-b.st"), json, w, 8);
    CHECK_ST(rf_ckpt_verify(sp("nohdr-b.st"), &lenient, NULL), RF_ERR_CORRUPT);
    CHECK_MSG("tensor 'a' (file bytes [");

    /* no tensor, no metadata: only the header is unchecked */
    write_raw(sp("empty.st"), "{}", NULL, 0);
    unchecked(sp("empty.st"), "the header has no CRC32C", 0, 0, false);

    /* seven tensors with 60-byte names: five named, each cut, 2 more */
    char big[2048] = "{";
    float seven[7] = {0};
    for (int i = 0; i < 7; i++) {
        char one[160];
        snprintf(one, sizeof one,
                 "%s\"%c%059d\":{\"dtype\":\"F32\",\"shape\":[1],"
                 "\"data_offsets\":[%d,%d]}",
                 i ? "," : "", 'a' + i, i, 4 * i, 4 * i + 4);
        strcat(big, one);
    }
    strcat(big, "}");
    write_raw(sp("seven.st"), big, seven, sizeof seven);
    unchecked(sp("seven.st"), "7 of 7 tensors have no CRC32C", 7, 7, false);
    CHECK_ST(rf_ckpt_verify(sp("seven.st"), NULL, NULL), RF_ERR_CORRUPT);
    CHECK_MSG("'a00000000000000000000000000000000000000000000...', 'b00");
    CHECK_MSG("'e00000000000000000000000000000000000000000000...' and 2 "
              "more");

    /* other failures are rf_ckpt_open's */
    CHECK_ST(rf_ckpt_verify(NULL, NULL, NULL), RF_ERR_INVALID_ARG);
    CHECK_MSG("rf_ckpt_verify: no path");
    CHECK_ST(rf_ckpt_verify(sp("absent.st"), &lenient, NULL), RF_ERR_IO);
    CHECK_MSG("cannot open");
}
