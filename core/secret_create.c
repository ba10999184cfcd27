/* core/secret_create.c: rf_secret_create (rdmaflow/secret.h): a fresh
 * random cluster secret written to a new owner-only file, for launchers
 * that give every job its own secret (rf-launch). */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rdmaflow/secret.h"

static rf_status write_all(int fd, const char *p, size_t n, const char *path)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return rf_error_set(RF_ERR_IO, "cluster secret file '%s': %s", path,
                                strerror(errno));
        p += w;
        n -= (size_t)w;
    }
    return RF_OK;
}

rf_status rf_secret_create(const char *path)
{
    if (!path || !path[0])
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_secret_create: no path given");
    if (sodium_init() < 0)
        return rf_error_set(RF_ERR_IO, "libsodium failed to initialise");
    int fd =
        open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return rf_error_set(RF_ERR_IO, "cluster secret file '%s': %s", path,
                            strerror(errno));
    unsigned char raw[RF_SECRET_CREATE_BYTES];
    char text[2 * RF_SECRET_CREATE_BYTES + 2];
    randombytes_buf(raw, sizeof raw);
    sodium_bin2hex(text, sizeof text, raw, sizeof raw);
    sodium_memzero(raw, sizeof raw);
    size_t len = strlen(text);
    text[len++] = '\n';
    rf_status st = RF_OK;
    /* 0600 whatever the umask made of it */
    if (fchmod(fd, 0600) != 0)
        st = rf_error_set(RF_ERR_IO, "cluster secret file '%s': chmod: %s",
                          path, strerror(errno));
    if (st == RF_OK)
        st = write_all(fd, text, len, path);
    sodium_memzero(text, sizeof text);
    if (st == RF_OK && fsync(fd) != 0)
        st = rf_error_set(RF_ERR_IO, "cluster secret file '%s': fsync: %s",
                          path, strerror(errno));
    if (close(fd) != 0 && st == RF_OK)
        st = rf_error_set(RF_ERR_IO, "cluster secret file '%s': close: %s",
                          path, strerror(errno));
    if (st != RF_OK)
        unlink(path);
    return st;
}
