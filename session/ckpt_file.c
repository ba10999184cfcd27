/* session/ckpt_file.c: where a checkpoint file may go (rf_ckpt_check_path)
 * and the crash-safe writer every checkpoint file and state file goes
 * through: a temporary file in the same directory, fsync, rename, fsync of
 * the directory. */
#include "rdmaflow/env.h"
#include "session/ckpt_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *ckpt_join(const char *dir, const char *name)
{
    size_t d = dir ? strlen(dir) : 0, n = strlen(name);
    char *s = malloc(d + n + 2);
    if (!s)
        return NULL;
    if (d == 0) {
        memcpy(s, name, n + 1);
        return s;
    }
    memcpy(s, dir, d);
    size_t at = d;
    if (s[d - 1] != '/')
        s[at++] = '/';
    memcpy(s + at, name, n + 1);
    return s;
}

/* The directory part of path ("." if none); malloc'd. */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    if (slash == path)
        return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

rf_status rf_ckpt_check_path(const char *path)
{
    if (!path || !*path)
        return rf_error_set(RF_ERR_INVALID_ARG, "checkpoint path is empty");
    size_t len = strlen(path);
    if (path[len - 1] == '/')
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: a checkpoint file name cannot end in '/'",
                            path);
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (S_ISLNK(st.st_mode))
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "%s is a symbolic link: refusing to replace "
                                "it with a checkpoint file",
                                path);
        if (S_ISDIR(st.st_mode))
            return rf_error_set(RF_ERR_INVALID_ARG, "%s is a directory", path);
        if (!S_ISREG(st.st_mode))
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "%s is not a regular file (a device, fifo or "
                                "socket)",
                                path);
    } else if (errno != ENOENT && errno != ENOTDIR) {
        return rf_error_set(RF_ERR_INVALID_ARG, "%s: %s", path,
                            strerror(errno));
    }
    char *dir = dir_of(path);
    if (!dir)
        return rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory", path);
    rf_status rc = RF_OK;
    if (stat(dir, &st) != 0)
        rc = rf_error_set(RF_ERR_INVALID_ARG,
                          "%s: directory %s does not exist (%s)", path, dir,
                          strerror(errno));
    else if (!S_ISDIR(st.st_mode))
        rc = rf_error_set(RF_ERR_INVALID_ARG, "%s: %s is not a directory", path,
                          dir);
    else if (access(dir, W_OK | X_OK) != 0)
        rc = rf_error_set(RF_ERR_INVALID_ARG,
                          "%s: directory %s is not writable (%s)", path, dir,
                          strerror(errno));
    free(dir);
    return rc;
}

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

static int fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

/* The fault tests' hook (tests/integration/fault): when the environment
 * names a marker file (RF_TEST_CKPT_STOP_BEFORE_RENAME) whose first line
 * is this file's base name, the marker is removed and the process stops
 * itself (SIGSTOP) with the temporary file written and synced but not yet
 * renamed, so a test can kill it at exactly that instant. Once per marker:
 * a restarted process with the same environment does not stop again. */
static void test_stop_before_rename(const char *base)
{
    const char *marker = rf_env_str("RF_TEST_CKPT_STOP_BEFORE_RENAME", NULL);
    FILE *f = marker && *marker ? fopen(marker, "r") : NULL;
    if (!f)
        return;
    char want[512] = "";
    bool match = fgets(want, sizeof want, f) != NULL;
    fclose(f);
    want[strcspn(want, "\n")] = '\0';
    if (match && strcmp(want, base) == 0 && unlink(marker) == 0)
        raise(SIGSTOP);
}

rf_status ckpt_atomic_write(const char *path, const ckpt_chunk *c, size_t n)
{
    static atomic_uint counter;
    char *dir = dir_of(path);
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    char name[512];
    int k = snprintf(name, sizeof name, ".%.400s.tmp.%ld.%u", base,
                     (long)getpid(), atomic_fetch_add(&counter, 1));
    char *tmp = dir && k > 0 ? ckpt_join(dir, name) : NULL;
    if (!tmp) {
        free(dir);
        return rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory", path);
    }
    rf_status rc = RF_OK;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        rc = rf_error_set(RF_ERR_IO, "cannot create %s: %s", tmp,
                          strerror(errno));
        goto out;
    }
    for (size_t i = 0; i < n && rc == RF_OK; i++)
        if (write_all(fd, c[i].p, c[i].len) != 0)
            rc = rf_error_set(RF_ERR_IO, "writing %s: %s", tmp,
                              strerror(errno ? errno : EIO));
    if (rc == RF_OK && fsync(fd) != 0)
        rc = rf_error_set(RF_ERR_IO, "fsync %s: %s", tmp, strerror(errno));
    if (close(fd) != 0 && rc == RF_OK)
        rc = rf_error_set(RF_ERR_IO, "closing %s: %s", tmp, strerror(errno));
    if (rc == RF_OK)
        test_stop_before_rename(base);
    if (rc == RF_OK && rename(tmp, path) != 0)
        rc = rf_error_set(RF_ERR_IO, "renaming %s to %s: %s", tmp, path,
                          strerror(errno));
    if (rc != RF_OK) {
        unlink(tmp);
        goto out;
    }
    if (fsync_dir(dir) != 0)
        rc = rf_error_set(RF_ERR_IO,
                          "%s is written but fsync of its directory %s "
                          "failed: %s",
                          path, dir, strerror(errno));
out:
    free(tmp);
    free(dir);
    return rc;
}

const char *ckpt_dtype_st(rf_dtype d)
{
    switch (d) {
    case RF_F32:
        return "F32";
    case RF_I32:
        return "I32";
    case RF_I64:
        return "I64";
    case RF_BOOL:
        return "BOOL";
    }
    return NULL;
}

bool ckpt_dtype_parse(const char *s, rf_dtype *out)
{
    for (int d = 0; d < RF_DTYPE_COUNT; d++)
        if (!strcmp(s, ckpt_dtype_st((rf_dtype)d))) {
            *out = (rf_dtype)d;
            return true;
        }
    return false;
}
