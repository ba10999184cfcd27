/* tests/unit/data/test_idx.c: loading IDX files: valid gzip and plain files
 * give exact values; every kind of missing, truncated or corrupt file (made
 * here in a temporary directory: truncated streams and trailers, damaged
 * CRC32 and ISIZE, trailing garbage, FIFOs and devices) gives RF_ERR_IO or
 * RF_ERR_CORRUPT with a message naming the file and the problem, and
 * returns nothing. */
#include <stdarg.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixtures.h"
#include "rdmaflow/data.h"

static bool msg_has(const char *needle)
{
    return strstr(rf_error_message(), needle) != NULL;
}

/* Loads images/labels expecting failure `want` with a message containing
 * the failing file's path and every one of the NULL-terminated needles. */
static void expect_fail(const char *images, const char *labels, rf_status want,
                        const char *bad_path, ...)
{
    rf_dataset *ds = (rf_dataset *)&not_a_dataset; /* must be reset to NULL */
    rf_error_clear();
    rf_status st = rf_dataset_load_idx(images, labels, &ds);
    CHECK(st == want, "%s: got %s, expected %s", bad_path, rf_status_string(st),
          rf_status_string(want));
    CHECK(ds == NULL, "%s: something returned on failure", bad_path);
    CHECK(msg_has(bad_path), "message does not name %s: '%s'", bad_path,
          rf_error_message());
    va_list ap;
    va_start(ap, bad_path);
    for (const char *n = va_arg(ap, const char *); n;
         n = va_arg(ap, const char *))
        CHECK(msg_has(n), "%s: message lacks '%s': '%s'", bad_path, n,
              rf_error_message());
    va_end(ap);
    if (st == RF_OK)
        rf_dataset_free(ds);
}

/* A valid 5-image set of 3x2 pixels with known bytes. */
static const uint8_t px5[5 * 6] = {
    0,   255, 1,   2, 3, 4, 10, 20, 30, 40,  50, 60,  128, 127, 126,
    125, 124, 123, 7, 7, 7, 7,  7,  7,  254, 1,  253, 2,   252, 3,
};
static const uint8_t lb5[5] = {3, 0, 9, 1, 3};
static const uint32_t idims5[3] = {5, 3, 2}, ldims5[1] = {5};

static void test_valid(int gz)
{
    const char *img = tmp_path(gz ? "ok-images.gz" : "ok-images");
    const char *lab = tmp_path(gz ? "ok-labels.gz" : "ok-labels");
    write_idx(img, gz, 0x803, idims5, 3, px5, sizeof px5);
    write_idx(lab, gz, 0x801, ldims5, 1, lb5, sizeof lb5);
    rf_dataset *ds = NULL;
    CHECK(rf_dataset_load_idx(img, lab, &ds) == RF_OK, "load %s", img);
    if (!ds)
        return;
    CHECK(rf_dataset_size(ds) == 5 && rf_dataset_rows(ds) == 3 &&
              rf_dataset_cols(ds) == 2 && rf_dataset_example_dim(ds) == 6,
          "shape %zu %u %u", rf_dataset_size(ds), rf_dataset_rows(ds),
          rf_dataset_cols(ds));
    CHECK(rf_dataset_num_classes(ds) == 10, "classes %d",
          (int)rf_dataset_num_classes(ds));
    for (size_t i = 0; i < 5; i++) {
        const float *x;
        int32_t y;
        size_t src;
        CHECK(rf_dataset_example(ds, i, &x, &y, &src) == RF_OK, "example");
        CHECK(y == lb5[i] && src == i, "label %zu = %d", i, (int)y);
        for (size_t k = 0; k < 6; k++)
            CHECK(x[k] == (float)px5[i * 6 + k] / 255.0f && x[k] >= 0.0f &&
                      x[k] <= 1.0f,
                  "pixel %zu,%zu = %g", i, k, (double)x[k]);
    }
    const float *x;
    CHECK(rf_dataset_example(ds, 0, &x, NULL, NULL) == RF_OK && x[0] == 0.0f &&
              x[1] == 1.0f,
          "0 -> 0.0 and 255 -> 1.0 exactly");
    CHECK(rf_dataset_example(ds, 5, &x, NULL, NULL) == RF_ERR_INVALID_ARG,
          "example past the end");
    rf_dataset_free(ds);
}

static void test_missing_and_unreadable(void)
{
    const char *img = tmp_path("ok-images.gz"), *lab = tmp_path("ok-labels.gz");
    const char *missing = tmp_path("no-such-file.gz");
    expect_fail(missing, lab, RF_ERR_IO, missing, "cannot open", "No such file",
                NULL);
    expect_fail(img, missing, RF_ERR_IO, missing, "cannot open", NULL);
    /* Not regular files: refused before anything is read. */
    expect_fail(tmp_dir, lab, RF_ERR_IO, tmp_dir, "is a directory", NULL);
    expect_fail("/dev/null", lab, RF_ERR_IO, "/dev/null", "not a regular file",
                NULL);
    /* A FIFO nobody writes to must not block the reader: the alarm kills
     * the test (and fails it) if it does. */
    const char *fifo = tmp_path("fifo-images.gz");
    CHECK(mkfifo(fifo, 0600) == 0, "mkfifo %s", fifo);
    alarm(10);
    expect_fail(fifo, lab, RF_ERR_IO, fifo, "not a regular file", NULL);
    expect_fail(img, fifo, RF_ERR_IO, fifo, "not a regular file", NULL);
    alarm(0);
    /* A symbolic link to a good file is read. */
    const char *link = tmp_path("link-images.gz");
    CHECK(symlink(img, link) == 0, "symlink %s", link);
    rf_dataset *ds = NULL;
    CHECK(rf_dataset_load_idx(link, lab, &ds) == RF_OK, "through a link: %s",
          rf_error_message());
    rf_dataset_free(ds);
}

static void test_bad_headers(void)
{
    const char *lab = tmp_path("ok-labels.gz");
    const char *p = tmp_path("magic.gz");
    write_idx(p, 1, 0x804, idims5, 3, px5, sizeof px5);
    expect_fail(p, lab, RF_ERR_CORRUPT, p, "bad magic 0x00000804",
                "expected 0x00000803", NULL);

    /* Labels where images are expected, and the other way round. */
    expect_fail(lab, lab, RF_ERR_CORRUPT, lab, "bad magic 0x00000801",
                "expected 0x00000803", NULL);
    const char *img = tmp_path("ok-images.gz");
    expect_fail(img, img, RF_ERR_CORRUPT, img, "bad magic 0x00000803",
                "expected 0x00000801", NULL);

    /* Not unsigned bytes (0x0D = float). */
    p = tmp_path("float.gz");
    write_idx(p, 1, 0xD03, idims5, 3, px5, sizeof px5);
    expect_fail(p, lab, RF_ERR_CORRUPT, p, "bad magic 0x00000d03", NULL);

    p = tmp_path("zero-dim.gz");
    const uint32_t zero[3] = {5, 0, 2};
    write_idx(p, 1, 0x803, zero, 3, px5, 0);
    expect_fail(p, lab, RF_ERR_CORRUPT, p, "dimension 1 has size 0", NULL);

    /* A header claiming an absurd size is refused before any read. */
    p = tmp_path("huge.gz");
    const uint32_t huge[3] = {0xffffffffu, 28, 28};
    write_idx(p, 1, 0x803, huge, 3, px5, sizeof px5);
    expect_fail(p, lab, RF_ERR_CORRUPT, p, "too large", NULL);

    /* A plausible but wrong count: a million images claimed, 5 present. */
    p = tmp_path("million.gz");
    const uint32_t million[3] = {1000000, 3, 2};
    write_idx(p, 1, 0x803, million, 3, px5, sizeof px5);
    expect_fail(p, lab, RF_ERR_CORRUPT, p, "file too short", "30 of the",
                "6000000 bytes", NULL);

    p = tmp_path("empty.gz");
    write_raw(p, "", 0);
    expect_fail(p, lab, RF_ERR_CORRUPT, p, "file too short", "the magic number",
                NULL);

    p = tmp_path("short-header.gz");
    write_idx(p, 1, 0x803, idims5, 1, NULL, 0); /* only one size */
    expect_fail(p, lab, RF_ERR_CORRUPT, p, "file too short", "dimension sizes",
                NULL);
}

static void test_size_mismatch(void)
{
    const char *lab = tmp_path("ok-labels.gz");
    const char *p = tmp_path("fewer.gz");
    write_idx(p, 1, 0x803, idims5, 3, px5, sizeof px5 - 6);
    expect_fail(p, lab, RF_ERR_CORRUPT, p, "file too short", "24 of the 30",
                NULL);

    p = tmp_path("more.gz");
    uint8_t bigger[sizeof px5 + 6] = {0};
    memcpy(bigger, px5, sizeof px5);
    write_idx(p, 1, 0x803, idims5, 3, bigger, sizeof bigger);
    expect_fail(p, lab, RF_ERR_CORRUPT, p, "more data than the header",
                "inconsistent with the file size", NULL);

    /* 5 images, 4 labels: both files are named. */
    const char *img = tmp_path("ok-images.gz");
    p = tmp_path("four-labels.gz");
    const uint32_t four[1] = {4};
    write_idx(p, 1, 0x801, four, 1, lb5, 4);
    expect_fail(img, p, RF_ERR_CORRUPT, p, "5 images", "4 labels", img, NULL);
}

static void test_damaged_gzip(void)
{
    const char *lab = tmp_path("ok-labels.gz");
    /* A larger payload so that the compressed stream has some length. */
    enum { N = 200, R = 28, C = 28 };
    uint8_t *px = malloc((size_t)N * R * C);
    for (size_t i = 0; i < (size_t)N * R * C; i++)
        px[i] = (uint8_t)((i * 2654435761u) >> 13);
    const uint32_t dims[3] = {N, R, C};

    const char *p = tmp_path("cut-half.gz");
    write_idx(p, 1, 0x803, dims, 3, px, (size_t)N * R * C);
    cut_file(p, file_size(p) / 2);
    expect_fail(p, lab, RF_ERR_CORRUPT, p, "truncated gzip", NULL);

    /* Only the gzip trailer (CRC32 and length) is cut: every data byte is
     * there, the stream is still incomplete. */
    p = tmp_path("cut-trailer.gz");
    write_idx(p, 1, 0x803, dims, 3, px, (size_t)N * R * C);
    cut_file(p, file_size(p) - 4);
    expect_fail(p, lab, RF_ERR_CORRUPT, p, "truncated gzip", NULL);

    /* A damaged CRC32 in the trailer. */
    p = tmp_path("bad-crc.gz");
    write_idx(p, 1, 0x803, dims, 3, px, (size_t)N * R * C);
    flip_byte(p, file_size(p) - 8, 0x5a);
    expect_fail(p, lab, RF_ERR_CORRUPT, p, "damaged gzip data", NULL);

    /* Damaged compressed data in the middle. */
    p = tmp_path("bad-data.gz");
    write_idx(p, 1, 0x803, dims, 3, px, (size_t)N * R * C);
    for (long off = 40; off < 60; off++)
        flip_byte(p, off, 0xff);
    expect_fail(p, lab, RF_ERR_CORRUPT, p, NULL);

    /* Trailing garbage after the gzip member: refused, with its size. */
    p = tmp_path("trailing.gz");
    write_idx(p, 1, 0x803, dims, 3, px, (size_t)N * R * C);
    long full = file_size(p);
    append_raw(p, "garbage", 7);
    expect_fail(p, lab, RF_ERR_CORRUPT, p, "trailing garbage",
                "7 bytes after the end of the gzip stream", NULL);
    /* One stray zero byte is garbage too (gzip(1) would only warn). */
    p = tmp_path("trailing-zero.gz");
    write_idx(p, 1, 0x803, dims, 3, px, (size_t)N * R * C);
    append_raw(p, "", 1);
    expect_fail(p, lab, RF_ERR_CORRUPT, p, "trailing garbage", NULL);
    /* A damaged length (ISIZE) in the trailer. */
    p = tmp_path("bad-isize.gz");
    write_idx(p, 1, 0x803, dims, 3, px, (size_t)N * R * C);
    flip_byte(p, full - 2, 0x01);
    expect_fail(p, lab, RF_ERR_CORRUPT, p, "damaged gzip data",
                "incorrect length check", NULL);
    /* Cut inside the trailer's CRC: every data byte is there. */
    p = tmp_path("cut-crc.gz");
    write_idx(p, 1, 0x803, dims, 3, px, (size_t)N * R * C);
    cut_file(p, full - 6);
    expect_fail(p, lab, RF_ERR_CORRUPT, p, "truncated gzip",
                "trailer is missing or incomplete", NULL);
    /* Two gzip members (cat a.gz b.gz, RFC 1952) are one valid stream. */
    p = tmp_path("two-members.gz");
    write_two_members(p, 0x803, dims, 3, px, (size_t)N * R * C);
    rf_dataset *ds = NULL;
    const char *lab200 = tmp_path("labels200.gz");
    uint8_t lb[N] = {0};
    const uint32_t ld[1] = {N};
    write_idx(lab200, 1, 0x801, ld, 1, lb, N);
    CHECK(rf_dataset_load_idx(p, lab200, &ds) == RF_OK, "two members: %s",
          rf_error_message());
    const float *x = NULL;
    CHECK(ds && rf_dataset_example(ds, N - 1, &x, NULL, NULL) == RF_OK &&
              x[R * C - 1] == (float)px[(size_t)N * R * C - 1] / 255.0f,
          "%s", "the second member's bytes");
    rf_dataset_free(ds);
    /* ...and garbage after the second member is still refused. */
    append_raw(p, "\x1f", 1);
    expect_fail(p, lab200, RF_ERR_CORRUPT, p, "trailing garbage", NULL);

    /* Not gzip at all (zlib reads it as a plain file): the magic says so. */
    p = tmp_path("garbage.gz");
    const char text[] = "this is not an IDX file, nor gzip\n";
    write_raw(p, text, sizeof text - 1);
    expect_fail(p, lab, RF_ERR_CORRUPT, p, "bad magic", "not gzip-compressed",
                NULL);
    free(px);
}

int main(void)
{
    make_tmp_dir();
    test_valid(1);
    test_valid(0);
    test_missing_and_unreadable();
    test_bad_headers();
    test_size_mismatch();
    test_damaged_gzip();
    CHECK(rf_dataset_load_idx(NULL, "x", &(rf_dataset *){0}) ==
              RF_ERR_INVALID_ARG,
          "NULL path");
    CHECK(rf_dataset_load_idx("x", "y", NULL) == RF_ERR_INVALID_ARG,
          "NULL out");
    remove_tmp_dir();
    printf("unit.data.idx: all checks passed\n");
    return 0;
}
