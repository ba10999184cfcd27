/* session/tfrecord.c: TFRecord files (see tfrecord.h); CRC32C from ISA-L
 * through rf_ckpt_crc32c (session/ckpt_crc.c). */
#include "session/tfrecord.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "rdmaflow/checkpoint.h"

struct rf_tfrecord_writer {
    int fd;
    off_t size;  /* the bytes of the whole records written */
    bool broken; /* a record written in part could not be taken back */
    char path[];
};

uint32_t rf_tfrecord_masked_crc(const void *data, size_t len)
{
    uint32_t crc = rf_ckpt_crc32c(data, len);
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

static void put_le32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

rf_status rf_tfrecord_create(const char *path, rf_tfrecord_writer **out)
{
    *out = NULL;
    if (!path || !*path)
        return rf_error_set(RF_ERR_INVALID_ARG, "tfrecord: empty path");
    size_t n = strlen(path);
    rf_tfrecord_writer *w = malloc(sizeof *w + n + 1);
    if (!w)
        return rf_error_set(RF_ERR_NO_MEMORY, "tfrecord: out of memory");
    memcpy(w->path, path, n + 1);
    w->broken = false;
    w->size = 0;
    w->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        int e = errno;
        free(w);
        return rf_error_set(e == EEXIST ? RF_ERR_INVALID_ARG : RF_ERR_IO,
                            "tfrecord: creating %s: %s%s", path, strerror(e),
                            e == EEXIST ? " (an existing file is never "
                                          "overwritten)"
                                        : "");
    }
    *out = w;
    return RF_OK;
}

rf_status rf_tfrecord_write(rf_tfrecord_writer *w, const void *data, size_t len)
{
    if (w->broken)
        return rf_error_set(RF_ERR_IO,
                            "tfrecord: %s: an earlier record was written in "
                            "part; nothing more is appended",
                            w->path);
    if (len && !data)
        return rf_error_set(RF_ERR_INVALID_ARG, "tfrecord: %s: no data",
                            w->path);
    unsigned char head[12], tail[4];
    put_le64(head, len);
    put_le32(head + 8, rf_tfrecord_masked_crc(head, 8));
    put_le32(tail, rf_tfrecord_masked_crc(data, len));
    struct iovec iov[3] = {{head, sizeof head},
                           {(void *)(uintptr_t)data, len},
                           {tail, sizeof tail}};
    int first = 0;
    size_t done = 0, total = sizeof head + len + sizeof tail;
    while (done < total) {
        ssize_t r = writev(w->fd, iov + first, 3 - first);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            int e = r < 0 ? errno : EIO;
            /* a record written in part is taken back, so the file ends
             * with a whole record and a later write may succeed */
            w->broken =
                done > 0 && (ftruncate(w->fd, w->size) != 0 ||
                             lseek(w->fd, w->size, SEEK_SET) != w->size);
            return rf_error_set(RF_ERR_IO, "tfrecord: writing %s: %s%s",
                                w->path, strerror(e),
                                w->broken ? " (a record was left in part; "
                                            "nothing more is appended)"
                                          : "");
        }
        done += (size_t)r;
        /* skip what was written */
        size_t k = (size_t)r;
        while (k > 0 && k >= iov[first].iov_len) {
            k -= iov[first].iov_len;
            first++;
        }
        if (k) {
            iov[first].iov_base = (unsigned char *)iov[first].iov_base + k;
            iov[first].iov_len -= k;
        }
    }
    w->size += (off_t)total;
    return RF_OK;
}

rf_status rf_tfrecord_sync(rf_tfrecord_writer *w)
{
    if (fsync(w->fd) < 0)
        return rf_error_set(RF_ERR_IO, "tfrecord: fsync %s: %s", w->path,
                            strerror(errno));
    return RF_OK;
}

rf_status rf_tfrecord_close(rf_tfrecord_writer *w)
{
    if (!w)
        return RF_OK;
    rf_status st = RF_OK;
    if (close(w->fd) < 0)
        st = rf_error_set(RF_ERR_IO, "tfrecord: closing %s: %s", w->path,
                          strerror(errno));
    free(w);
    return st;
}

const char *rf_tfrecord_path(const rf_tfrecord_writer *w)
{
    return w->path;
}
