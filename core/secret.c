/* core/secret.c: rf_secret_load (rdmaflow/secret.h): the cluster secret
 * file checked (regular, owner-only, bounded size), read whole, hashed into
 * the HMAC key kept in locked memory; every copy of the file's bytes is
 * wiped. */
#include "rdmaflow/secret.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"
#include "rdmaflow/env.h"

struct rf_cluster_secret {
    unsigned char key[RF_SECRET_KEY_BYTES];
    bool locked;
    char path[4096];
};

static rf_status read_whole(int fd, const char *path, unsigned char *buf,
                            size_t cap, size_t *len)
{
    size_t got = 0;
    for (;;) {
        ssize_t n = read(fd, buf + got, cap - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return rf_error_set(RF_ERR_IO, "cluster secret file '%s': %s", path,
                                strerror(errno));
        if (n == 0)
            break;
        got += (size_t)n;
        if (got == cap)
            break;
    }
    *len = got;
    return RF_OK;
}

rf_status rf_secret_load(const char *path, rf_cluster_secret **out)
{
    if (!path || !path[0] || !out)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_secret_load: no path given");
    *out = NULL;
    if (sodium_init() < 0)
        return rf_error_set(RF_ERR_AUTH, "libsodium failed to initialise");
    /* O_NONBLOCK: a FIFO must not block the open; it is refused below. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return rf_error_set(RF_ERR_IO, "cluster secret file '%s': %s", path,
                            strerror(errno));
    struct stat sb;
    rf_status st = RF_OK;
    if (fstat(fd, &sb) != 0)
        st = rf_error_set(RF_ERR_IO, "cluster secret file '%s': %s", path,
                          strerror(errno));
    else if (!S_ISREG(sb.st_mode))
        st = rf_error_set(RF_ERR_AUTH,
                          "cluster secret file '%s' is not a regular file",
                          path);
    else if (sb.st_mode & 077)
        st = rf_error_set(RF_ERR_AUTH,
                          "cluster secret file '%s' has mode %04o: group or "
                          "others may read or write it; make it readable by "
                          "its owner only (chmod 600)",
                          path, (unsigned)(sb.st_mode & 07777));
    if (st != RF_OK) {
        close(fd);
        return st;
    }
    /* One byte more than allowed tells a too-long file from a full one. */
    unsigned char buf[RF_SECRET_MAX_BYTES + 1];
    size_t len = 0;
    sodium_mlock(buf, sizeof buf);
    st = read_whole(fd, path, buf, sizeof buf, &len);
    close(fd);
    if (st == RF_OK && len < RF_SECRET_MIN_BYTES)
        st = rf_error_set(RF_ERR_AUTH,
                          "cluster secret file '%s' holds %zu bytes; at least "
                          "%d are needed (e.g. head -c 32 /dev/urandom)",
                          path, len, RF_SECRET_MIN_BYTES);
    else if (st == RF_OK && len > RF_SECRET_MAX_BYTES)
        st = rf_error_set(RF_ERR_AUTH,
                          "cluster secret file '%s' is longer than %d bytes",
                          path, RF_SECRET_MAX_BYTES);
    rf_cluster_secret *s = NULL;
    if (st == RF_OK) {
        s = calloc(1, sizeof *s);
        if (!s)
            st = rf_error_set(RF_ERR_NO_MEMORY, "rf_secret_load: no memory");
    }
    if (st == RF_OK) {
        s->locked = sodium_mlock(s->key, sizeof s->key) == 0;
        if (!s->locked)
            RF_LOG_WARN("cluster secret: cannot lock its key in memory (%s); "
                        "it may be swapped out",
                        strerror(errno));
        crypto_hash_sha256(s->key, buf, len);
        snprintf(s->path, sizeof s->path, "%s", path);
    }
    sodium_munlock(buf, sizeof buf); /* wipes it */
    sodium_memzero(buf, sizeof buf);
    if (st != RF_OK)
        return st;
    *out = s;
    return RF_OK;
}

rf_status rf_secret_load_default(const char *flag_path, rf_cluster_secret **out)
{
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_secret_load_default: NULL");
    *out = NULL;
    const char *env = getenv("RF_CLUSTER_SECRET_FILE");
    if (!(flag_path && flag_path[0]) && env && !env[0])
        /* a security setting: an empty value is not quietly "none" */
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "RF_CLUSTER_SECRET_FILE is set but empty (unset "
                            "it to run without a cluster secret)");
    const char *path = flag_path && flag_path[0] ? flag_path : env;
    if (!path || !path[0])
        return RF_OK;
    return rf_secret_load(path, out);
}

rf_status rf_secret_check_default(void)
{
    rf_cluster_secret *s = NULL;
    rf_status st = rf_secret_load_default(NULL, &s);
    rf_secret_free(s);
    return st;
}

const unsigned char *rf_secret_key(const rf_cluster_secret *s)
{
    return s ? s->key : NULL;
}

const char *rf_secret_path(const rf_cluster_secret *s)
{
    return s ? s->path : "";
}

void rf_secret_free(rf_cluster_secret *s)
{
    if (!s)
        return;
    if (s->locked)
        sodium_munlock(s->key, sizeof s->key);
    sodium_memzero(s->key, sizeof s->key);
    free(s);
}
