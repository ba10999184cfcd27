/* tests/unit/checkpoint/test_ckpt_corrupt.c: every damaged file is refused
 * with RF_ERR_CORRUPT and a message naming the path and what is wrong: the
 * file truncated at every length, every byte flipped (header and each
 * tensor's data), trailing bytes, and hand-made headers (overlapping,
 * reversed and gapped offsets, a header length past the end, bad JSON,
 * dtypes, shapes, metadata). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt_test.h"
#include "rdmaflow/byteorder.h"
#include "tests/common/check.h"

/* Opening path must fail with RF_ERR_CORRUPT and a message holding the
 * path and needle (NULL: any). */
static void corrupt(const char *path, const char *needle, const char *what)
{
    rf_ckpt *ck = (rf_ckpt *)1;
    rf_status st = rf_ckpt_open(path, &ck);
    CHECK(st == RF_ERR_CORRUPT, "%s: %s (%s)", what, rf_status_string(st),
          rf_error_message());
    CHECK(ck == NULL, "%s: the handle is set", what);
    CHECK(strstr(rf_error_message(), path) != NULL, "%s: message '%s'", what,
          rf_error_message());
    CHECK(!needle || strstr(rf_error_message(), needle), "%s: '%s' lacks '%s'",
          what, rf_error_message(), needle);
}

void case_corrupt(void)
{
    rf_ckpt_tensor t[FIX_N];
    fix_tensors(t, 42);
    const char *meta[] = {"producer", "unit", NULL};
    const char *good = sp("good.safetensors"), *bad = sp("bad.safetensors");
    CHECK_OK(rf_ckpt_write(good, t, FIX_N, meta));
    size_t len;
    unsigned char *b = slurp(good, &len);
    size_t hend = 8 + (size_t)rf_get_le64(b);
    rf_ckpt *ck;
    CHECK_OK(rf_ckpt_open(good, &ck));
    unsigned char *copy = malloc(len + 16);
    CHECK_TRUE(copy != NULL);

    /* truncated at every length */
    for (size_t n = 0; n < len; n++) {
        spill(bad, b, n);
        char what[64];
        snprintf(what, sizeof what, "truncated to %zu of %zu bytes", n, len);
        corrupt(bad,
                n < 8      ? "too short"
                : n < hend ? "past the end of the file"
                           : "truncated",
                what);
    }
    /* every byte flipped, two ways */
    int data_named = 0;
    for (size_t k = 0; k < len; k++)
        for (int m = 0; m < 2; m++) {
            memcpy(copy, b, len);
            copy[k] ^= m ? 0x80 : 0x01;
            spill(bad, copy, len);
            char what[64];
            snprintf(what, sizeof what, "byte %zu of %zu ^ 0x%02x", k, len,
                     m ? 0x80 : 0x01);
            const char *name = NULL;
            if (k >= hend) {
                /* the tensor owning file byte k: the data are the tensors
                 * in name order (case_roundtrip checks that layout) */
                size_t off = hend;
                for (size_t i = 0; i < rf_ckpt_count(ck); i++) {
                    const rf_ckpt_entry *e = rf_ckpt_at(ck, i);
                    if (k >= off && k < off + e->t.bytes)
                        name = e->t.name;
                    off += e->t.bytes;
                }
                CHECK(name != NULL, "byte %zu belongs to no tensor", k);
                data_named++;
            }
            corrupt(bad, name, what);
            if (name)
                CHECK_MSG("CRC32C");
        }
    CHECK(data_named == 2 * (int)(len - hend), "%d data flips", data_named);
    /* trailing garbage */
    memcpy(copy, b, len);
    memset(copy + len, 0, 16);
    spill(bad, copy, len + 1);
    corrupt(bad, "trailing", "1 trailing byte");
    spill(bad, copy, len + 16);
    corrupt(bad, "16 bytes of trailing", "16 trailing bytes");
    /* the header length past the end, and over the bound */
    memcpy(copy, b, len);
    rf_put_le64(copy, len);
    spill(bad, copy, len);
    corrupt(bad, "past the end", "length = file size");
    rf_put_le64(copy, (uint64_t)1 << 40);
    spill(bad, copy, len);
    corrupt(bad, "bound", "length 2^40");
    rf_ckpt_close(ck);
    free(copy);
    free(b);
    /* nothing there: an I/O error, not corruption */
    CHECK_ST(rf_ckpt_open(sp("absent"), &ck), RF_ERR_IO);
    CHECK_MSG("absent");
    CHECK_ST(rf_ckpt_open(scratch(), &ck), RF_ERR_IO);
}

typedef struct raw_case {
    const char *json;
    size_t dlen;
    const char *needle;
} raw_case;

void case_malformed(void)
{
    static const unsigned char data[32] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    const char *path = sp("raw.safetensors");
#define E(n, dt, sh, b, e)                                                     \
    "\"" n "\":{\"dtype\":\"" dt "\",\"shape\":" sh ",\"data_offsets\":[" #b   \
    "," #e "]}"
    static const raw_case cases[] = {
        /* the valid one the others depart from */
        {"{" E("a", "F32", "[2]", 0, 8) "," E("b", "F32", "[1]", 8, 12) "}", 12,
         NULL},
        {"{" E("a", "F32", "[2]", 0, 8) "," E("b", "F32", "[2]", 4, 12) "}", 12,
         "overlap tensor 'a'"},
        {"{" E("a", "F32", "[2]", 8, 0) "}", 8,
         "'a': data_offsets [8, 0] end "
         "before they begin"},
        {"{" E("a", "F32", "[1]", 0, 4) "," E("b", "F32", "[1]", 8, 12) "}", 12,
         "[4, 8) before tensor 'b' belong to no tensor"},
        {"{" E("a", "F32", "[3]", 0, 8) "}", 8,
         "'a': data_offsets [0, 8] hold"},
        {"{" E("a", "F32", "[2]", 0, 8) "," E("b", "F32", "[2]", 8, 16) "}", 12,
         "'b': data_offsets [8, 16] end past the file"},
        {"{" E("a", "F32", "[2]", 0, 8) "}", 12, "4 bytes of trailing data"},
        {"{" E("a", "F16", "[2]", 0, 4) "}", 4, "'a': unknown dtype \"F16\""},
        {"{" E("a", "F32", "[-2]", 0, 8) "}", 8, "'a': shape holds '-2'"},
        {"{" E("a", "F32", "[1,1,1,1,1,1,1,1,1]", 0, 4) "}", 4,
         "at most 8 dimensions"},
        {"{" E("a", "F32", "[2.5]", 0, 8) "}", 8, "not a non-negative integer"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4,
         "'a' lacks "
         "data_offsets"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],"
         "\"x\":1}}",
         4, "unknown field 'x'"},
        {"{\"a\":[1]}", 0, "'a' is not a JSON object"},
        {"[1,2]", 0, "not a JSON object"},
        {"{\"a\":", 0, "not valid JSON"},
        {"{} x", 0, "bytes after its JSON"},
        {"{\"__metadata__\":{\"k\":1}}", 0, "value of 'k' is not a string"},
        {"{\"__metadata__\":[]}", 0, "\"__metadata__\" is not a JSON object"},
        {"{\"__metadata__\":{\"crc32c/zz\":\"00000000\"}," E("a", "F32", "[1]",
                                                             0, 4) "}",
         4, "\"crc32c/zz\" names no tensor"},
        {"{\"__metadata__\":{\"crc32c/a\":\"0000000G\"}," E("a", "F32", "[1]",
                                                            0, 4) "}",
         4, "not 8 lowercase hex digits"},
        {"{\"__metadata__\":{\"crc32c/a\":\"00000000\"}," E("a", "F32", "[1]",
                                                            0, 4) "}",
         4, "tensor 'a' (file bytes ["},
    };
#undef E
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_raw(path, cases[i].json, data, cases[i].dlen);
        char what[32];
        snprintf(what, sizeof what, "raw case %zu", i);
        if (!cases[i].needle) {
            rf_ckpt *ck;
            CHECK_OK(rf_ckpt_open(path, &ck));
            CHECK_EQ_U64(rf_ckpt_count(ck), 2);
            rf_ckpt_close(ck);
            continue;
        }
        corrupt(path, cases[i].needle, what);
    }
    /* the last case's message: the tensor's file offsets and both CRCs */
    const char *last = cases[sizeof cases / sizeof cases[0] - 1].json;
    size_t at = 8 + (strlen(last) + 7) / 8 * 8;
    char want[128];
    snprintf(want, sizeof want,
             "(file bytes [%zu, %zu)): CRC32C %08" PRIx32
             ", the header says 00000000",
             at, at + 4, rf_ckpt_crc32c(data, 4));
    CHECK_MSG(want);
    /* a CRC-carrying file whose header CRC is missing */
    rf_ckpt_tensor t[FIX_N];
    fix_tensors(t, 1);
    CHECK_OK(rf_ckpt_write(path, t, 1, NULL));
    size_t len;
    unsigned char *b = slurp(path, &len);
    char *key = memmem(b, len, "crc32c.header", 13);
    CHECK_TRUE(key != NULL);
    memcpy(key, "crc32c_header", 13); /* an ordinary key now */
    spill(path, b, len);
    corrupt(path, "no \"crc32c.header\"", "header CRC key renamed");
    free(b);
}
