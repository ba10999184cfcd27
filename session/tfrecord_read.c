/* session/tfrecord_read.c: the TFRecord reader (see tfrecord.h), as
 * TensorFlow's RecordReader checks a record: the 12-byte header (length,
 * masked CRC32C of the length), then the data and its masked CRC32C. A
 * file is untrusted input: the length is believed only after its CRC
 * matched and below the reader's bound, and the buffer grows with the
 * bytes that actually arrive, so a length in a short file costs nothing.
 * Not a writer's companion for live files: a record being written is, to
 * this reader, a record cut short. */
#include "session/tfrecord.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HEADER_BYTES 12
#define CRC_BYTES    4
#define FIRST_CHUNK  ((size_t)64 << 10) /* the buffer's first size */

struct rf_tfrecord_reader {
    FILE *fp;
    size_t max_len;
    uint64_t record; /* the current record's number */
    uint64_t offset; /* and where it starts */
    uint64_t count;  /* records returned */
    uint64_t next;   /* where the next record starts */
    unsigned char *buf;
    size_t cap;
    rf_status failed;  /* RF_OK, or the error every later call returns */
    char failure[512]; /* its message */
    char path[];
};

static uint32_t get_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static uint64_t get_le64(const unsigned char *p)
{
    return (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

rf_status rf_tfrecord_open(const char *path, size_t max_len,
                           rf_tfrecord_reader **out)
{
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_tfrecord_open: out NULL");
    *out = NULL;
    if (!path || !*path)
        return rf_error_set(RF_ERR_INVALID_ARG, "tfrecord: empty path");
    size_t n = strlen(path);
    rf_tfrecord_reader *r = calloc(1, sizeof *r + n + 1);
    if (!r)
        return rf_error_set(RF_ERR_NO_MEMORY, "tfrecord: out of memory");
    memcpy(r->path, path, n + 1);
    r->max_len = max_len ? max_len : RF_TFRECORD_MAX_RECORD;
    /* what is not a regular file is refused before it is opened (a FIFO
     * would block the open, a device may act on it); non-blocking, so a
     * FIFO swapped in after the stat cannot block either (fstat refuses
     * it), then blocking again for the reads */
    struct stat sb;
    int fd = -1;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
        goto err_not_regular;
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        free(r);
        return rf_error_set(RF_ERR_IO, "tfrecord: opening %s: %s", path,
                            strerror(e));
    }
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
        goto err_not_regular;
    r->fp = fcntl(fd, F_SETFL, 0) == 0 ? fdopen(fd, "rb") : NULL;
    if (!r->fp) {
        int e = errno;
        close(fd);
        free(r);
        return rf_error_set(RF_ERR_IO, "tfrecord: opening %s: %s", path,
                            strerror(e));
    }
    *out = r;
    return RF_OK;
err_not_regular:
    if (fd >= 0)
        close(fd);
    free(r);
    return rf_error_set(RF_ERR_IO,
                        "tfrecord: %s is not a regular file (a directory, "
                        "FIFO, device or socket)",
                        path);
}

/* Records st and the message just set as r's failure: every later read
 * returns them. */
static rf_status fail(rf_tfrecord_reader *r, rf_status st)
{
    r->failed = st;
    snprintf(r->failure, sizeof r->failure, "%s", rf_error_message());
    return st;
}

/* Reads up to want bytes into r->buf at done, growing the buffer with
 * what arrives (at most doubling past what is held); the bytes now held. */
static rf_status fill(rf_tfrecord_reader *r, size_t want, size_t *done)
{
    while (*done < want) {
        if (r->cap < want && *done == r->cap) {
            size_t cap = r->cap ? 2 * r->cap : FIRST_CHUNK;
            if (cap > want)
                cap = want;
            unsigned char *b = realloc(r->buf, cap);
            if (!b)
                return rf_error_set(RF_ERR_NO_MEMORY,
                                    "tfrecord: %s: record %" PRIu64
                                    ": out of memory for %zu bytes",
                                    r->path, r->record, cap);
            r->buf = b;
            r->cap = cap;
        }
        size_t room = (r->cap < want ? r->cap : want) - *done;
        size_t got = fread(r->buf + *done, 1, room, r->fp);
        *done += got;
        if (got < room) {
            if (ferror(r->fp))
                return rf_error_set(RF_ERR_IO, "tfrecord: reading %s: %s",
                                    r->path, strerror(errno));
            return RF_OK; /* the end of the file */
        }
    }
    return RF_OK;
}

rf_status rf_tfrecord_read(rf_tfrecord_reader *r, const void **data,
                           size_t *len, bool *end)
{
    *data = NULL;
    *len = 0;
    *end = false;
    if (r->failed != RF_OK)
        return rf_error_set(r->failed, "%s", r->failure);
    r->record = r->count;
    r->offset = r->next;
    unsigned char head[HEADER_BYTES];
    size_t got = fread(head, 1, sizeof head, r->fp);
    if (got < sizeof head && ferror(r->fp))
        return fail(r, rf_error_set(RF_ERR_IO, "tfrecord: reading %s: %s",
                                    r->path, strerror(errno)));
    if (got == 0) {
        *end = true;
        return RF_OK;
    }
    char at[512]; /* what every message starts with */
    snprintf(at, sizeof at,
             "tfrecord: %s: record %" PRIu64 " at offset %" PRIu64, r->path,
             r->record, r->offset);
    if (got < sizeof head)
        return fail(r, rf_error_set(RF_ERR_CORRUPT,
                                    "%s: cut short: the file ends %zu bytes "
                                    "into its %d-byte header",
                                    at, got, HEADER_BYTES));
    uint32_t stored = get_le32(head + 8),
             computed = rf_tfrecord_masked_crc(head, 8);
    if (stored != computed)
        return fail(r, rf_error_set(RF_ERR_CORRUPT,
                                    "%s: length CRC mismatch (stored %08" PRIx32
                                    ", computed %08" PRIx32
                                    "): a damaged length, or not a TFRecord "
                                    "file",
                                    at, stored, computed));
    uint64_t n = get_le64(head);
    if (n > r->max_len)
        return fail(r, rf_error_set(RF_ERR_CORRUPT,
                                    "%s: length %" PRIu64
                                    " bytes is above this reader's limit of "
                                    "%zu",
                                    at, n, r->max_len));
    size_t want = (size_t)n + CRC_BYTES, done = 0;
    rf_status st = fill(r, want, &done);
    if (st != RF_OK)
        return fail(r, st);
    if (done < want)
        return fail(r, rf_error_set(RF_ERR_CORRUPT,
                                    "%s: cut short: the file ends %zu bytes "
                                    "into its data and CRC (%" PRIu64
                                    " + 4 bytes)",
                                    at, done, n));
    stored = get_le32(r->buf + n);
    computed = rf_tfrecord_masked_crc(r->buf, (size_t)n);
    if (stored != computed)
        return fail(r, rf_error_set(RF_ERR_CORRUPT,
                                    "%s: data CRC mismatch over its %" PRIu64
                                    " bytes (stored %08" PRIx32
                                    ", computed %08" PRIx32 ")",
                                    at, n, stored, computed));
    r->count++;
    r->next = r->offset + HEADER_BYTES + want;
    *data = r->buf;
    *len = (size_t)n;
    return RF_OK;
}

uint64_t rf_tfrecord_reader_record(const rf_tfrecord_reader *r)
{
    return r->record;
}

uint64_t rf_tfrecord_reader_offset(const rf_tfrecord_reader *r)
{
    return r->offset;
}

const char *rf_tfrecord_reader_path(const rf_tfrecord_reader *r)
{
    return r->path;
}

void rf_tfrecord_reader_close(rf_tfrecord_reader *r)
{
    if (!r)
        return;
    fclose(r->fp);
    free(r->buf);
    free(r);
}
