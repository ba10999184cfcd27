/* tests/unit/tfrecord/test_tfrecord.c: session/tfrecord.c.
 *   unit        CRC32C's check value, the refusals (an existing file is
 *               never overwritten, a missing directory), sync and close;
 *               a record the file size limit cuts (RLIMIT_FSIZE, as a full
 *               disk) taken back whole, and the next write, once there is
 *               room, appended after the last whole record;
 *   write FILE  the records read_tfrecord.py expects: sizes 0, 1, 7, 8,
 *               100, 4096, 70000 and 1 MiB, byte i of a record of n bytes
 *               being (31 i + n) mod 256.
 *   reader      the reader (tfrecord_read.c) on that file: every record
 *               back exactly, then a clean end; copies with one bit
 *               flipped in a length, a length CRC, the data or a data CRC,
 *               cut short in a header or in the data, and with a length
 *               above the bound, each refused with its reason, naming the
 *               record and its offset, after the good records before it
 *               (and again on the next call); a copy cut at a record's end
 *               reads cleanly.
 * The framing and both masked CRCs are checked by the independent reader
 * (read_tfrecord.py: its own CRC32C, struct), never by this code; the
 * reader is checked against files the writer made. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rdmaflow/checkpoint.h"
#include "session/tfrecord.h"
#include "tests/common/check.h"

static const size_t sizes[] = {0, 1, 7, 8, 100, 4096, 70000, 1u << 20};

static void unit(void)
{
    CHECK(rf_ckpt_crc32c("123456789", 9) == 0xe3069283u,
          "CRC32C check value: %08x", rf_ckpt_crc32c("123456789", 9));
    char dir[] = "/tmp/rf-tfrecord-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
    char path[256];
    snprintf(path, sizeof path, "%s/events", dir);
    rf_tfrecord_writer *w = NULL;
    CHECK_OK(rf_tfrecord_create(path, &w));
    CHECK(strcmp(rf_tfrecord_path(w), path) == 0, "path");
    CHECK_OK(rf_tfrecord_write(w, "abc", 3));
    CHECK_OK(rf_tfrecord_sync(w));
    CHECK_OK(rf_tfrecord_close(w));
    struct stat sb;
    CHECK(stat(path, &sb) == 0 && sb.st_size == 12 + 3 + 4,
          "one 3-byte record is %lld bytes, want 19", (long long)sb.st_size);
    /* an existing file: refused by name, left as it was */
    rf_tfrecord_writer *again = (rf_tfrecord_writer *)(uintptr_t)1;
    CHECK_ST(rf_tfrecord_create(path, &again), RF_ERR_INVALID_ARG);
    CHECK(again == NULL, "a refused create left *out set");
    CHECK(strstr(rf_error_message(), path) &&
              strstr(rf_error_message(), "never overwritten"),
          "message: %s", rf_error_message());
    CHECK(stat(path, &sb) == 0 && sb.st_size == 19,
          "the existing file changed: %lld bytes", (long long)sb.st_size);
    /* a directory that does not exist */
    char missing[300];
    snprintf(missing, sizeof missing, "%s/no/such/dir/events", dir);
    CHECK_ST(rf_tfrecord_create(missing, &again), RF_ERR_IO);
    CHECK(strstr(rf_error_message(), missing) != NULL, "message: %s",
          rf_error_message());
    CHECK_ST(rf_tfrecord_create("", &again), RF_ERR_INVALID_ARG);
    CHECK_OK(rf_tfrecord_close(NULL));
    unlink(path);

    /* no room for a whole record: it is taken back, the file stays whole */
    CHECK_OK(rf_tfrecord_create(path, &w));
    CHECK_OK(rf_tfrecord_write(w, "abc", 3)); /* 19 bytes */
    struct rlimit old, lim;
    CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0, "getrlimit");
    lim = old;
    lim.rlim_cur = 19 + 50; /* the next 116-byte record is cut at 50 */
    signal(SIGXFSZ, SIG_IGN);
    CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0, "setrlimit: %s", strerror(errno));
    char big[100];
    memset(big, 'x', sizeof big);
    rf_status st = rf_tfrecord_write(w, big, sizeof big);
    CHECK(setrlimit(RLIMIT_FSIZE, &old) == 0, "setrlimit back");
    CHECK(st == RF_ERR_IO && strstr(rf_error_message(), path),
          "a write past the limit: %s: %s", rf_status_string(st),
          rf_error_message());
    CHECK(stat(path, &sb) == 0 && sb.st_size == 19,
          "after the cut write: %lld bytes, want 19 (the record taken back)",
          (long long)sb.st_size);
    CHECK_OK(rf_tfrecord_write(w, big, sizeof big)); /* room again */
    CHECK_OK(rf_tfrecord_close(w));
    CHECK(stat(path, &sb) == 0 && sb.st_size == 19 + 116,
          "after the next write: %lld bytes, want 135", (long long)sb.st_size);
    signal(SIGXFSZ, SIG_DFL);
    unlink(path);
    rmdir(dir);
}

static void write_file(const char *path)
{
    rf_tfrecord_writer *w = NULL;
    CHECK_OK(rf_tfrecord_create(path, &w));
    unsigned char *buf = malloc(1u << 20);
    CHECK(buf != NULL, "malloc");
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        for (size_t i = 0; i < n; i++)
            buf[i] = (unsigned char)((31 * i + n) & 0xff);
        CHECK_OK(rf_tfrecord_write(w, n ? buf : NULL, n));
    }
    free(buf);
    CHECK_OK(rf_tfrecord_close(w));
}

#define NSIZES (sizeof sizes / sizeof sizes[0])

/* Where record k of write_file's file starts. */
static size_t record_offset(size_t k)
{
    size_t off = 0;
    for (size_t i = 0; i < k; i++)
        off += 12 + sizes[i] + 4;
    return off;
}

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    CHECK(fp != NULL, "fopen %s: %s", path, strerror(errno));
    CHECK(fseek(fp, 0, SEEK_END) == 0, "fseek");
    long n = ftell(fp);
    rewind(fp);
    unsigned char *buf = malloc((size_t)n);
    CHECK(buf && fread(buf, 1, (size_t)n, fp) == (size_t)n, "read %s", path);
    fclose(fp);
    *len = (size_t)n;
    return buf;
}

static void spill(const char *path, const unsigned char *buf, size_t len)
{
    FILE *fp = fopen(path, "wb");
    CHECK(fp && fwrite(buf, 1, len, fp) == len && fclose(fp) == 0, "write %s",
          path);
}

/* Reads path with a bound of max_len; the first `good` records must come
 * back as write_file wrote them; then, with want NULL, a clean end, else
 * RF_ERR_CORRUPT whose message holds "record <good> at offset <off>: " and
 * want, twice. */
static void expect_read(const char *path, size_t max_len, size_t good,
                        const char *want)
{
    rf_tfrecord_reader *r = NULL;
    CHECK_OK(rf_tfrecord_open(path, max_len, &r));
    CHECK(strcmp(rf_tfrecord_reader_path(r), path) == 0, "path");
    const void *data;
    size_t len;
    bool end;
    for (size_t k = 0; k < good; k++) {
        CHECK_OK(rf_tfrecord_read(r, &data, &len, &end));
        CHECK(!end && len == sizes[k], "%s: record %zu: %zu bytes, end %d",
              path, k, len, end);
        for (size_t i = 0; i < len; i++)
            CHECK(((const unsigned char *)data)[i] ==
                      (unsigned char)((31 * i + len) & 0xff),
                  "%s: record %zu byte %zu", path, k, i);
        CHECK(rf_tfrecord_reader_record(r) == k &&
                  rf_tfrecord_reader_offset(r) == record_offset(k),
              "record %zu at %zu: reader says %llu at %llu", k,
              record_offset(k),
              (unsigned long long)rf_tfrecord_reader_record(r),
              (unsigned long long)rf_tfrecord_reader_offset(r));
    }
    if (!want) {
        for (int again = 0; again < 2; again++) {
            CHECK_OK(rf_tfrecord_read(r, &data, &len, &end));
            CHECK(end && !data && len == 0, "%s: no clean end after %zu", path,
                  good);
        }
    } else {
        char at[64];
        snprintf(at, sizeof at, "record %zu at offset %zu: ", good,
                 record_offset(good));
        for (int again = 0; again < 2; again++) {
            CHECK_ST(rf_tfrecord_read(r, &data, &len, &end), RF_ERR_CORRUPT);
            CHECK(!end && !data, "an error with data or end set");
            CHECK_MSG(path);
            CHECK_MSG(at);
            CHECK_MSG(want);
        }
        rft_note("refused: %s", rf_error_message());
    }
    rf_tfrecord_reader_close(r);
}

/* This process's address space in pages (/proc/self/statm's first). */
static long vm_pages(void)
{
    FILE *fp = fopen("/proc/self/statm", "r");
    long pages = -1;
    CHECK(fp && fscanf(fp, "%ld", &pages) == 1, "/proc/self/statm");
    fclose(fp);
    return pages;
}

static void put_le(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void reader(void)
{
    char dir[] = "/tmp/rf-tfrecord-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
    char path[256], bad[256];
    snprintf(path, sizeof path, "%s/records", dir);
    snprintf(bad, sizeof bad, "%s/bad", dir);
    write_file(path);
    expect_read(path, 0, NSIZES, NULL);

    size_t len;
    unsigned char *orig = slurp(path, &len), *copy = malloc(len);
    CHECK(copy != NULL, "malloc");
    size_t off4 = record_offset(4), off7 = record_offset(7);
    struct {
        size_t byte; /* the byte whose bit 3 flips */
        const char *want;
    } flips[] = {
        {off4 + 1, "length CRC mismatch"},
        {off4 + 9, "length CRC mismatch"},
        {off4 + 12 + 50, "data CRC mismatch over its 100 bytes"},
        {off4 + 12 + 100 + 2, "data CRC mismatch"},
    };
    for (size_t i = 0; i < sizeof flips / sizeof flips[0]; i++) {
        memcpy(copy, orig, len);
        copy[flips[i].byte] ^= 0x08;
        spill(bad, copy, len);
        expect_read(bad, 0, 4, flips[i].want);
    }
    /* cut short: in record 7's header, in its data, in its data CRC */
    spill(bad, orig, off7 + 5);
    expect_read(bad, 0, 7,
                "cut short: the file ends 5 bytes into its "
                "12-byte header");
    spill(bad, orig, off7 + 12 + 1000);
    expect_read(bad, 0, 7,
                "cut short: the file ends 1000 bytes into its "
                "data and CRC (1048576 + 4 bytes)");
    spill(bad, orig, len - 1);
    expect_read(bad, 0, 7, "cut short");
    /* cut at a record's end: a clean end; an empty file too */
    spill(bad, orig, off7);
    expect_read(bad, 0, 7, NULL);
    spill(bad, orig, 0);
    expect_read(bad, 0, 0, NULL);
    /* a length above the bound, its CRC right: 64 MiB + 1 and 2^62 */
    const uint64_t huge[] = {RF_TFRECORD_MAX_RECORD + 1, (uint64_t)1 << 62};
    for (size_t i = 0; i < 2; i++) {
        memcpy(copy, orig, len);
        put_le(copy + off4, huge[i], 8);
        put_le(copy + off4 + 8, rf_tfrecord_masked_crc(copy + off4, 8), 4);
        spill(bad, copy, len);
        char want[128];
        snprintf(want, sizeof want,
                 "length %llu bytes is above this reader's limit of 67108864",
                 (unsigned long long)huge[i]);
        expect_read(bad, 0, 4, want);
    }
    /* a bound given: record 5 (4096 bytes) is above 4000 */
    expect_read(path, 4000, 5,
                "length 4096 bytes is above this reader's "
                "limit of 4000");
    /* a length below the bound in a short file: cut short, not a 60 MiB
     * buffer */
    memcpy(copy, orig, off4 + 112);
    put_le(copy + off4, (uint64_t)60 << 20, 8);
    put_le(copy + off4 + 8, rf_tfrecord_masked_crc(copy + off4, 8), 4);
    spill(bad, copy, off4 + 112);
    expect_read(bad, 0, 4,
                "cut short: the file ends 100 bytes into its "
                "data and CRC (62914560 + 4 bytes)");
    /* and the reader's memory (its address space, where a 60 MiB buffer
     * would be mapped, with or without the sanitizers' allocator) grew by
     * less than 16 MiB while it found that out */
    rf_tfrecord_reader *r = NULL;
    CHECK_OK(rf_tfrecord_open(bad, 0, &r));
    const void *data;
    size_t got;
    bool end;
    for (int k = 0; k < 4; k++)
        CHECK_OK(rf_tfrecord_read(r, &data, &got, &end));
    long before = vm_pages();
    CHECK_ST(rf_tfrecord_read(r, &data, &got, &end), RF_ERR_CORRUPT);
    long grown = (vm_pages() - before) * sysconf(_SC_PAGESIZE);
    CHECK(grown < (16l << 20),
          "reading a 60 MiB length in a short file "
          "grew the address space by %ld bytes",
          grown);
    rf_tfrecord_reader_close(r);
    /* a missing file */
    r = (rf_tfrecord_reader *)(uintptr_t)1;
    char missing[300];
    snprintf(missing, sizeof missing, "%s/missing", dir);
    CHECK_ST(rf_tfrecord_open(missing, 0, &r), RF_ERR_IO);
    CHECK(r == NULL, "a failed open left *out set");
    CHECK_MSG(missing);
    CHECK_ST(rf_tfrecord_open("", 0, &r), RF_ERR_INVALID_ARG);
    /* not regular files: a directory, a FIFO (never waited on), a device */
    char fifo[300];
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    CHECK(mkfifo(fifo, 0600) == 0, "mkfifo: %s", strerror(errno));
    const char *not_regular[] = {dir, fifo, "/dev/null"};
    for (size_t i = 0; i < 3; i++) {
        CHECK_ST(rf_tfrecord_open(not_regular[i], 0, &r), RF_ERR_IO);
        CHECK(r == NULL, "a failed open left *out set");
        CHECK_MSG(not_regular[i]);
        CHECK_MSG("is not a regular file");
    }
    unlink(fifo);
    rf_tfrecord_reader_close(NULL);
    free(orig);
    free(copy);
    unlink(path);
    unlink(bad);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "unit") == 0) {
        unit();
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "reader") == 0) {
        reader();
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "write") == 0) {
        write_file(argv[2]);
        return 0;
    }
    fprintf(stderr, "usage: rf_test_tfrecord unit | reader | write FILE\n");
    return 2;
}
