/* graph/data/idx.c: the IDX reader (see idx.h). The file is read with
 * read(2) and, when it starts with the gzip magic, inflated with zlib's
 * inflate (gzip framing only): zlib checks each member's trailer (CRC32
 * and ISIZE) when its stream ends, and the reader itself sees what gzread
 * would hide: a stream cut before its trailer, and bytes after the last
 * member that are not another gzip member (trailing garbage). Other files
 * are read as plain IDX. Only regular files are read (a FIFO or device is
 * refused before it could block). The header is checked before any data
 * is kept, the data buffer grows with what is actually read (a corrupt
 * header claiming gigabytes allocates nothing up front), and the end of
 * the file is checked so that truncated, damaged or oversized files are
 * all refused. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "graph/data/idx.h"
#include "rdmaflow/file.h"
#include "rdmaflow/status.h"

/* Largest payload accepted (a sanity bound on corrupt headers): 64 GiB. */
#define IDX_MAX_BYTES (UINT64_C(1) << 36)
/* inflate takes unsigned int lengths: output in pieces of at most this. */
#define IDX_CHUNK       (1u << 30)
#define IDX_FIRST_ALLOC ((size_t)1 << 20)
#define IDX_INBUF       ((size_t)1 << 17)

typedef struct reader {
    const char *path;
    int fd;
    bool gz;         /* inflating gzip members, else plain bytes */
    bool zinit;      /* zs initialised */
    bool member_end; /* the current gzip member's trailer was checked */
    bool eof;        /* read(2) returned 0 */
    bool cut;        /* the file ended inside a gzip member */
    z_stream zs;
    uint8_t *buf; /* input buffer: [pos, len) not consumed yet */
    size_t pos, len;
    uint64_t consumed; /* file bytes before buf[0] */
} reader;

/* Reads more input until at least need bytes are buffered or the file
 * ends. */
static rf_status fill(reader *rd, size_t need)
{
    if (rd->pos > 0 && rd->len - rd->pos < need) {
        memmove(rd->buf, rd->buf + rd->pos, rd->len - rd->pos);
        rd->consumed += rd->pos;
        rd->len -= rd->pos;
        rd->pos = 0;
    }
    while (rd->len - rd->pos < need && !rd->eof) {
        ssize_t n = read(rd->fd, rd->buf + rd->len, IDX_INBUF - rd->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return rf_error_set(RF_ERR_IO, "%s: cannot read: %s", rd->path,
                                strerror(errno));
        if (n == 0)
            rd->eof = true;
        rd->len += (size_t)n;
    }
    return RF_OK;
}

static size_t avail(const reader *rd)
{
    return rd->len - rd->pos;
}

static bool at_gzip_magic(const reader *rd)
{
    return avail(rd) >= 2 && rd->buf[rd->pos] == 0x1f &&
           rd->buf[rd->pos + 1] == 0x8b;
}

/* zlib's reason, with what its two trailer checks mean. */
static rf_status damaged(reader *rd)
{
    const char *m = rd->zs.msg ? rd->zs.msg : "invalid data";
    const char *why = !strcmp(m, "incorrect data check")
                          ? " (the CRC32 in the gzip trailer does not match "
                            "the data)"
                      : !strcmp(m, "incorrect length check")
                          ? " (the length in the gzip trailer does not match "
                            "the data)"
                          : "";
    return rf_error_set(RF_ERR_CORRUPT, "%s: damaged gzip data: %s%s", rd->path,
                        m, why);
}

/* After a member's end: the file must end, or another gzip member start
 * (RFC 1952 allows several); anything else is trailing garbage. Sets
 * *done when the file ended. */
static rf_status next_member(reader *rd, bool *done)
{
    rf_status st = fill(rd, 2);
    if (st)
        return st;
    *done = avail(rd) == 0;
    if (*done)
        return RF_OK;
    if (!at_gzip_magic(rd)) {
        uint64_t at = rd->consumed + rd->pos;
        struct stat sb;
        if (fstat(rd->fd, &sb) == 0 && (uint64_t)sb.st_size > at)
            return rf_error_set(RF_ERR_CORRUPT,
                                "%s: trailing garbage: %llu bytes after the "
                                "end of the gzip stream (at offset %llu)",
                                rd->path,
                                (unsigned long long)((uint64_t)sb.st_size - at),
                                (unsigned long long)at);
        return rf_error_set(RF_ERR_CORRUPT,
                            "%s: trailing garbage after the end of the gzip "
                            "stream (at offset %llu)",
                            rd->path, (unsigned long long)at);
    }
    if (inflateReset(&rd->zs) != Z_OK)
        return rf_error_set(RF_ERR_CORRUPT, "%s: zlib cannot restart",
                            rd->path);
    rd->member_end = false;
    return RF_OK;
}

/* Up to len bytes of decompressed (or plain) data into out; *got is how
 * many (fewer only at the end of the data). A file that ends inside a
 * gzip member sets rd->cut and returns RF_ERR_CORRUPT without a message:
 * the caller knows what was being read. */
static rf_status produce(reader *rd, uint8_t *out, size_t len, size_t *got)
{
    *got = 0;
    while (*got < len) {
        rf_status st = fill(rd, 1);
        if (st)
            return st;
        if (!rd->gz) {
            size_t n = avail(rd) < len - *got ? avail(rd) : len - *got;
            if (n == 0)
                return RF_OK; /* end of file */
            memcpy(out + *got, rd->buf + rd->pos, n);
            rd->pos += n;
            *got += n;
            continue;
        }
        if (rd->member_end) {
            bool done;
            if ((st = next_member(rd, &done)) || done)
                return st;
        }
        size_t want = len - *got < IDX_CHUNK ? len - *got : IDX_CHUNK;
        rd->zs.next_in = rd->buf + rd->pos;
        rd->zs.avail_in = (uInt)avail(rd);
        rd->zs.next_out = out + *got;
        rd->zs.avail_out = (uInt)want;
        int z = inflate(&rd->zs, Z_NO_FLUSH);
        rd->pos = rd->len - rd->zs.avail_in;
        *got += want - rd->zs.avail_out;
        if (z == Z_STREAM_END) {
            rd->member_end = true;
        } else if (z == Z_BUF_ERROR && rd->zs.avail_in == 0 && rd->eof) {
            rd->cut = true;
            return RF_ERR_CORRUPT; /* the caller says what was cut */
        } else if (z == Z_MEM_ERROR) {
            return rf_error_set(RF_ERR_NO_MEMORY, "%s: zlib out of memory",
                                rd->path);
        } else if (z != Z_OK && z != Z_BUF_ERROR) {
            return damaged(rd);
        }
    }
    return RF_OK;
}

/* A stream that ends (file end inside a gzip member) while reading what,
 * of which got of want bytes arrived. */
static rf_status truncated(reader *rd, const char *what, size_t got,
                           size_t want)
{
    if (got == want)
        return rf_error_set(RF_ERR_CORRUPT,
                            "%s: truncated gzip file (the gzip trailer is "
                            "missing or incomplete)",
                            rd->path);
    return rf_error_set(RF_ERR_CORRUPT,
                        "%s: truncated gzip file (%zu of the %zu bytes of %s "
                        "before the compressed stream ends)",
                        rd->path, got, want, what);
}

/* Reads exactly len bytes of `what` (of which done were read before, of
 * total) or fails. */
static rf_status read_part(reader *rd, void *buf, size_t len, const char *what,
                           size_t done, size_t total)
{
    size_t got = 0;
    rf_status st = produce(rd, buf, len, &got);
    if (st && rd->cut)
        return truncated(rd, what, done + got, total);
    if (st)
        return st;
    if (got < len)
        return rf_error_set(RF_ERR_CORRUPT,
                            "%s: file too short (%zu of the %zu bytes of %s)",
                            rd->path, done + got, total, what);
    return RF_OK;
}

static rf_status read_exact(reader *rd, void *buf, size_t len, const char *what)
{
    return read_part(rd, buf, len, what, 0, len);
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           (uint32_t)p[3];
}

static rf_status read_header(reader *rd, unsigned ndims, rf_idx *out)
{
    uint8_t magic[4];
    rf_status st = read_exact(rd, magic, sizeof magic, "the magic number");
    if (st)
        return st;
    uint32_t got = be32(magic), want = 0x00000800u | ndims;
    if (got != want)
        return rf_error_set(RF_ERR_CORRUPT,
                            "%s: bad magic 0x%08x, expected 0x%08x (IDX file "
                            "of unsigned bytes with %u dimension%s)%s",
                            rd->path, got, want, ndims, ndims == 1 ? "" : "s",
                            !rd->gz ? "; the file is not gzip-compressed either"
                                    : "");
    uint8_t dims[4 * RF_IDX_MAX_DIMS];
    if ((st = read_exact(rd, dims, 4 * ndims, "the dimension sizes")))
        return st;
    uint64_t size = 1;
    out->ndims = ndims;
    for (unsigned i = 0; i < ndims; i++) {
        out->dims[i] = be32(dims + 4 * i);
        if (out->dims[i] == 0)
            return rf_error_set(RF_ERR_CORRUPT, "%s: dimension %u has size 0",
                                rd->path, i);
        size *= out->dims[i]; /* each factor < 2^32 and size <= 2^36 */
        if (size > IDX_MAX_BYTES)
            return rf_error_set(RF_ERR_CORRUPT,
                                "%s: dimension sizes too large (over %llu "
                                "bytes)",
                                rd->path, (unsigned long long)IDX_MAX_BYTES);
    }
#if SIZE_MAX < UINT64_MAX
    if (size > SIZE_MAX)
        return rf_error_set(RF_ERR_CORRUPT, "%s: too large for this machine",
                            rd->path);
#endif
    out->size = (size_t)size;
    return RF_OK;
}

/* Reads out->size bytes into a buffer that grows with the data read. */
static rf_status read_data(reader *rd, rf_idx *out)
{
    size_t cap = 0, have = 0;
    uint8_t *buf = NULL;
    while (have < out->size) {
        if (have == cap) {
            size_t next = cap ? cap * 2 : IDX_FIRST_ALLOC;
            if (next > out->size)
                next = out->size;
            uint8_t *grown = realloc(buf, next);
            if (!grown) {
                free(buf);
                return rf_error_set(RF_ERR_NO_MEMORY,
                                    "%s: cannot allocate %zu bytes", rd->path,
                                    next);
            }
            buf = grown;
            cap = next;
        }
        rf_status st = read_part(rd, buf + have, cap - have,
                                 "data the header declares", have, out->size);
        if (st) {
            free(buf);
            return st;
        }
        have = cap;
    }
    out->data = buf;
    return RF_OK;
}

/* The file must end exactly where the header says: no more data, and
 * (gzip) every member read to its end, the trailers checked, nothing
 * after the last member. */
static rf_status check_end(reader *rd, const rf_idx *idx)
{
    uint8_t extra;
    size_t n = 0;
    rf_status st = produce(rd, &extra, 1, &n);
    if (st && rd->cut)
        return truncated(rd, "data the header declares", idx->size, idx->size);
    if (st)
        return st;
    if (n > 0)
        return rf_error_set(RF_ERR_CORRUPT,
                            "%s: more data than the header declares (%zu "
                            "bytes): dimensions inconsistent with the file "
                            "size",
                            rd->path, idx->size);
    return RF_OK;
}

/* Opens path for reading, refusing anything but a regular file (opened
 * non-blocking, so a FIFO swapped in after the check cannot block), and
 * finds out whether it is gzip. */
static rf_status reader_open(reader *rd, const char *path)
{
    *rd = (reader){.path = path, .fd = -1};
    rf_status st = rf_file_check_input(path);
    if (st)
        return st;
    rd->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat sb;
    if (rd->fd < 0)
        return rf_error_set(RF_ERR_IO, "%s: cannot open: %s", path,
                            strerror(errno));
    if (fstat(rd->fd, &sb) != 0 || !S_ISREG(sb.st_mode))
        return rf_error_set(RF_ERR_IO,
                            "%s is not a regular file (a FIFO, device or "
                            "socket): refusing to read it",
                            path);
    rd->buf = malloc(IDX_INBUF);
    if (!rd->buf)
        return rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory", path);
    if ((st = fill(rd, 2)))
        return st;
    rd->gz = at_gzip_magic(rd);
    if (rd->gz) {
        if (inflateInit2(&rd->zs, 16 + MAX_WBITS) != Z_OK) /* gzip only */
            return rf_error_set(RF_ERR_NO_MEMORY, "%s: zlib out of memory",
                                path);
        rd->zinit = true;
    }
    return RF_OK;
}

static void reader_close(reader *rd)
{
    if (rd->zinit)
        inflateEnd(&rd->zs);
    if (rd->fd >= 0)
        close(rd->fd);
    free(rd->buf);
}

rf_status idx_read(const char *path, unsigned ndims, rf_idx *out)
{
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG, "idx_read: out NULL");
    memset(out, 0, sizeof *out);
    if (!path || ndims < 1 || ndims > RF_IDX_MAX_DIMS)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "idx_read: bad arguments (path %s, ndims %u)",
                            path ? path : "NULL", ndims);
    reader rd;
    rf_idx idx = {0};
    rf_status st = reader_open(&rd, path);
    if (!st)
        st = read_header(&rd, ndims, &idx);
    if (!st)
        st = read_data(&rd, &idx);
    if (!st)
        st = check_end(&rd, &idx);
    reader_close(&rd);
    if (st) {
        free(idx.data);
        return st;
    }
    *out = idx;
    return RF_OK;
}

void idx_free(rf_idx *idx)
{
    if (!idx)
        return;
    free(idx->data);
    memset(idx, 0, sizeof *idx);
}
