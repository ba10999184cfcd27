/* tests/unit/tfrecord/test_tfrecord.c: session/tfrecord.c.
 *   unit        CRC32C's check value, the refusals (an existing file is
 *               never overwritten, a missing directory), sync and close;
 *               a record the file size limit cuts (RLIMIT_FSIZE, as a full
 *               disk) taken back whole, and the next write, once there is
 *               room, appended after the last whole record;
 *   write FILE  the records read_tfrecord.py expects: sizes 0, 1, 7, 8,
 *               100, 4096, 70000 and 1 MiB, byte i of a record of n bytes
 *               being (31 i + n) mod 256.
 * The framing and both masked CRCs are checked by the independent reader
 * (read_tfrecord.py: its own CRC32C, struct), never by this code. */
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

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "unit") == 0) {
        unit();
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "write") == 0) {
        write_file(argv[2]);
        return 0;
    }
    fprintf(stderr, "usage: rf_test_tfrecord unit | write FILE\n");
    return 2;
}
