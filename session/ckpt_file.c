/* session/ckpt_file.c: where a checkpoint file may go (rf_ckpt_check_path)
 * and the crash-safe writer every checkpoint file and state file goes
 * through: both are core's (rdmaflow/file.h: symbolic links followed, a
 * temporary file beside the target, fsync, rename, fsync of the directory,
 * stale temporaries of dead writers removed); plus path joining and the
 * dtype names of the format. */
#include "rdmaflow/file.h"
#include "session/ckpt_internal.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

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

rf_status rf_ckpt_check_path(const char *path)
{
    if (!path || !*path)
        return rf_error_set(RF_ERR_INVALID_ARG, "checkpoint path is empty");
    return rf_file_check_output(path);
}

rf_status ckpt_atomic_write(const char *path, const ckpt_chunk *c, size_t n)
{
    return rf_file_write_atomic(path, c, n);
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
