/* rdmaflow/secret.h: the cluster secret (--cluster_secret_file,
 * RF_CLUSTER_SECRET_FILE) every task of an authenticated cluster shares.
 * rf_secret_load reads the file once: it must be a regular file that
 * neither group nor others may read or write (mode & 077 == 0), of
 * RF_SECRET_MIN_BYTES to RF_SECRET_MAX_BYTES bytes, read whole. What is
 * kept is the HMAC key derived from it (SHA-256 of the file's bytes, via
 * libsodium), in locked memory (sodium_mlock) that is wiped on free; the
 * file's bytes are wiped as soon as the key is derived. Implemented in
 * core/secret.c; the ps handshake (ps/ps_auth.c) uses the key. */
#ifndef RDMAFLOW_SECRET_H
#define RDMAFLOW_SECRET_H

#include "rdmaflow/api.h"

#include <stdbool.h>
#include <stddef.h>

#include "rdmaflow/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RF_SECRET_MIN_BYTES 32
#define RF_SECRET_MAX_BYTES 4096
#define RF_SECRET_KEY_BYTES 32

typedef struct rf_cluster_secret rf_cluster_secret;

/* Loads path. Errors: RF_ERR_AUTH naming the path and the reason (not a
 * regular file, mode 0640 readable by group or others, too short, too
 * long), RF_ERR_IO for a file that cannot be opened or read. */
RF_API rf_status rf_secret_load(const char *path, rf_cluster_secret **out);
/* The file named by RF_CLUSTER_SECRET_FILE, if set (else *out = NULL and
 * RF_OK); flag_path, when not NULL or empty, wins over the variable. */
RF_API rf_status rf_secret_load_default(const char *flag_path,
                                        rf_cluster_secret **out);
/* rf_secret_load_default(NULL) without keeping the secret: what rf-info
 * reports (rf_setting_check) before a task would refuse the variable. */
RF_API rf_status rf_secret_check_default(void);
/* Writes a fresh cluster secret to path, a file that must not exist yet
 * (O_EXCL, a symbolic link is not followed): RF_SECRET_CREATE_BYTES random
 * bytes (libsodium's randombytes_buf) as lowercase hex and a newline, mode
 * 0600 whatever the umask, fsynced. On any failure the file is removed
 * again. Errors: RF_ERR_IO naming the path and the reason. rf-launch makes
 * each job's secret with it. */
#define RF_SECRET_CREATE_BYTES 32
RF_API rf_status rf_secret_create(const char *path);
/* The 32-byte HMAC-SHA256 key. */
RF_API const unsigned char *rf_secret_key(const rf_cluster_secret *secret);
/* The path it was loaded from, for logs. */
RF_API const char *rf_secret_path(const rf_cluster_secret *secret);
/* Wipes and frees; NULL is ignored. */
RF_API void rf_secret_free(rf_cluster_secret *secret);

#ifdef __cplusplus
}
#endif
#endif
