/* graph/data/idx.c: the IDX reader (see idx.h). zlib's gzread reads both
 * gzip and plain files; the header is checked before any data is kept, the
 * data buffer grows with what is actually read (a corrupt header claiming
 * gigabytes allocates nothing up front), and the end of the file is checked
 * so that truncated, damaged or oversized files are all refused. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "graph/data/idx.h"
#include "rdmaflow/status.h"

/* Largest payload accepted (a sanity bound on corrupt headers): 64 GiB. */
#define IDX_MAX_BYTES (UINT64_C(1) << 36)
/* gzread takes an unsigned int length: read in pieces of at most this. */
#define IDX_CHUNK       (1u << 30)
#define IDX_FIRST_ALLOC ((size_t)1 << 20)

typedef struct reader {
    gzFile gz;
    const char *path;
} reader;

/* zlib's message without the "<path>: " prefix gzerror puts on it. */
static const char *zlib_message(const reader *rd, const char *msg)
{
    size_t n = strlen(rd->path);
    if (strncmp(msg, rd->path, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ')
        return msg + n + 2;
    return msg;
}

/* A failed gzread (or one that stopped early) while reading `what`, of
 * which got of want bytes arrived: why, as an rf_status. */
static rf_status gz_failure(reader *rd, const char *what, size_t got,
                            size_t want)
{
    int err = Z_OK;
    const char *msg = gzerror(rd->gz, &err);
    switch (err) {
    case Z_ERRNO:
        return rf_error_set(RF_ERR_IO, "%s: cannot read %s: %s", rd->path, what,
                            strerror(errno));
    case Z_MEM_ERROR:
        return rf_error_set(RF_ERR_NO_MEMORY, "%s: zlib out of memory",
                            rd->path);
    case Z_BUF_ERROR:
        if (got == want)
            return rf_error_set(RF_ERR_CORRUPT,
                                "%s: truncated gzip file (the gzip trailer "
                                "is missing or incomplete)",
                                rd->path);
        return rf_error_set(RF_ERR_CORRUPT,
                            "%s: truncated gzip file (%zu of the %zu bytes "
                            "of %s before the compressed stream ends)",
                            rd->path, got, want, what);
    case Z_OK:
        return rf_error_set(RF_ERR_CORRUPT,
                            "%s: file too short (%zu of the %zu bytes of %s)",
                            rd->path, got, want, what);
    default:
        return rf_error_set(RF_ERR_CORRUPT, "%s: damaged gzip data: %s",
                            rd->path, zlib_message(rd, msg));
    }
}

/* Reads exactly len bytes or fails. */
static rf_status read_exact(reader *rd, void *buf, size_t len, const char *what)
{
    size_t got = 0;
    while (got < len) {
        size_t want = len - got < IDX_CHUNK ? len - got : IDX_CHUNK;
        int n = gzread(rd->gz, (char *)buf + got, (unsigned)want);
        if (n <= 0)
            return gz_failure(rd, what, got, len);
        got += (size_t)n;
    }
    return RF_OK;
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
        return rf_error_set(
            RF_ERR_CORRUPT,
            "%s: bad magic 0x%08x, expected 0x%08x (IDX file "
            "of unsigned bytes with %u dimension%s)%s",
            rd->path, got, want, ndims, ndims == 1 ? "" : "s",
            gzdirect(rd->gz) ? "; the file is not gzip-compressed either" : "");
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
        size_t want = cap - have < IDX_CHUNK ? cap - have : IDX_CHUNK;
        int n = gzread(rd->gz, buf + have, (unsigned)want);
        if (n <= 0) {
            free(buf);
            return gz_failure(rd, "data the header declares", have, out->size);
        }
        have += (size_t)n;
    }
    out->data = buf;
    return RF_OK;
}

/* The file must end exactly where the header says, with an intact gzip
 * trailer (CRC and length, checked by zlib). */
static rf_status check_end(reader *rd, const rf_idx *idx)
{
    uint8_t extra;
    int n = gzread(rd->gz, &extra, 1);
    if (n > 0)
        return rf_error_set(RF_ERR_CORRUPT,
                            "%s: more data than the header declares (%zu "
                            "bytes): dimensions inconsistent with the file "
                            "size",
                            rd->path, idx->size);
    int err = Z_OK;
    gzerror(rd->gz, &err);
    if (n < 0 || err != Z_OK)
        return gz_failure(rd, "data the header declares", idx->size, idx->size);
    return RF_OK;
}

rf_status rf_idx_read(const char *path, unsigned ndims, rf_idx *out)
{
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_idx_read: out NULL");
    memset(out, 0, sizeof *out);
    if (!path || ndims < 1 || ndims > RF_IDX_MAX_DIMS)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_idx_read: bad arguments (path %s, ndims %u)",
                            path ? path : "NULL", ndims);
    errno = 0;
    reader rd = {gzopen(path, "rb"), path};
    if (!rd.gz)
        return rf_error_set(RF_ERR_IO, "%s: cannot open: %s", path,
                            errno ? strerror(errno) : "out of memory");
    gzbuffer(rd.gz, 1u << 17);
    rf_idx idx = {0};
    rf_status st = read_header(&rd, ndims, &idx);
    if (!st)
        st = read_data(&rd, &idx);
    if (!st)
        st = check_end(&rd, &idx);
    int closed = gzclose_r(rd.gz);
    if (!st && closed != Z_OK)
        st = rf_error_set(closed == Z_ERRNO ? RF_ERR_IO : RF_ERR_CORRUPT,
                          "%s: error closing the file (zlib %d)", path, closed);
    if (st) {
        free(idx.data);
        return st;
    }
    *out = idx;
    return RF_OK;
}

void rf_idx_free(rf_idx *idx)
{
    if (!idx)
        return;
    free(idx->data);
    memset(idx, 0, sizeof *idx);
}
