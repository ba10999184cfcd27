/* ps/ps_token.c: where a task's token comes from. A token is 16 bytes the
 * task presents in its connect hello (PS_CONN_FLAG_TOKEN) to every ps; a
 * ps binds each client id (and the chief's role) to the first token it saw
 * and, without a cluster secret, refuses that id from any other
 * (ps_server_token.c). So every run of one task must present the same
 * token and no other task may know it:
 *   1. RF_JOB_TOKEN set (rf-launch sets it for every task it starts, in
 *      the environment only): SHA-256("rdmaflow task token" 0 job 0 id),
 *      first 16 bytes; a ps with the same job token checks it for every id.
 *   2. Otherwise a file of 32 hex characters, RF_TOKEN_DIR (default
 *      /tmp/rdmaflow-UID, not $XDG_RUNTIME_DIR: that goes with the login
 *      session, and a task outlives it; made 0700 and required to be this
 *      user's and not group/other accessible)
 *      "/token-<ps0>-<id>": read if it exists, else created O_EXCL 0600
 *      with random bytes. A task restarted on the same host by the same
 *      user finds it again.
 *   3. Else a random token for this process, with a warning. */
#include "ps/ps_token.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "core/log.h"
#include "rdmaflow/env.h"

bool ps_token_equal(const unsigned char a[PS_TOKEN_LEN],
                    const unsigned char b[PS_TOKEN_LEN])
{
    return sodium_memcmp(a, b, PS_TOKEN_LEN) == 0;
}

bool ps_token_from_job(uint32_t client_id, unsigned char out[PS_TOKEN_LEN])
{
    const char *job = rf_env_str("RF_JOB_TOKEN", NULL);
    if (!job || !*job)
        return false;
    static const char label[] = "rdmaflow task token";
    unsigned char id[4] = {
        (unsigned char)client_id, (unsigned char)(client_id >> 8),
        (unsigned char)(client_id >> 16), (unsigned char)(client_id >> 24)};
    unsigned char zero = 0, h[crypto_hash_sha256_BYTES];
    crypto_hash_sha256_state st;
    crypto_hash_sha256_init(&st);
    crypto_hash_sha256_update(&st, (const unsigned char *)label, sizeof label);
    crypto_hash_sha256_update(&st, (const unsigned char *)job, strlen(job));
    crypto_hash_sha256_update(&st, &zero, 1);
    crypto_hash_sha256_update(&st, id, sizeof id);
    crypto_hash_sha256_final(&st, h);
    memcpy(out, h, PS_TOKEN_LEN);
    return true;
}

/* The token directory, made if missing; false (why in err) if it cannot
 * be made or is not this user's alone. */
static bool token_dir(char *dir, size_t len, char *err, size_t err_len)
{
    const char *d = rf_env_str("RF_TOKEN_DIR", NULL);
    if (d && *d)
        snprintf(dir, len, "%s", d);
    else
        snprintf(dir, len, "/tmp/rdmaflow-%u", (unsigned)getuid());
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, err_len, "cannot make %s: %s", dir, strerror(errno));
        return false;
    }
    struct stat sb;
    if (lstat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode) || sb.st_uid != getuid() ||
        (sb.st_mode & 077)) {
        snprintf(err, err_len,
                 "%s is not a directory of this user's alone (mode 0700)", dir);
        return false;
    }
    return true;
}

static bool hex_decode(const char *hex, unsigned char out[PS_TOKEN_LEN])
{
    size_t n = 0;
    return sodium_hex2bin(out, PS_TOKEN_LEN, hex, 2 * PS_TOKEN_LEN, NULL, &n,
                          NULL) == 0 &&
           n == PS_TOKEN_LEN;
}

/* Reads the token file at path, or creates it; false (why in err). */
static bool token_file(const char *path, unsigned char out[PS_TOKEN_LEN],
                       bool *made, char *err, size_t err_len)
{
    char hex[2 * PS_TOKEN_LEN + 2];
    for (int attempt = 0; attempt < 2; attempt++) {
        int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0) {
            ssize_t r = read(fd, hex, sizeof hex - 1);
            close(fd);
            hex[r > 0 ? r : 0] = '\0';
            hex[strcspn(hex, "\n")] = '\0';
            if (strlen(hex) == 2 * PS_TOKEN_LEN && hex_decode(hex, out)) {
                *made = false;
                return true;
            }
            snprintf(err, err_len, "%s does not hold a token", path);
            return false;
        }
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                  0600);
        if (fd < 0 && errno == EEXIST)
            continue; /* another run made it: read it */
        if (fd < 0) {
            snprintf(err, err_len, "cannot create %s: %s", path,
                     strerror(errno));
            return false;
        }
        randombytes_buf(out, PS_TOKEN_LEN);
        sodium_bin2hex(hex, sizeof hex, out, PS_TOKEN_LEN);
        size_t n = strlen(hex);
        hex[n++] = '\n';
        /* not fsynced: a connect should not wait for the disk, and a token
         * lost to a crash only makes this task's restart be refused */
        bool ok = write(fd, hex, n) == (ssize_t)n;
        close(fd);
        if (!ok) {
            snprintf(err, err_len, "cannot write %s: %s", path,
                     strerror(errno));
            unlink(path);
            return false;
        }
        *made = true;
        return true;
    }
    snprintf(err, err_len, "%s: created and gone again", path);
    return false;
}

void ps_token_for(uint32_t client_id, const char *ps0,
                  unsigned char out[PS_TOKEN_LEN], char *src, size_t src_len)
{
    if (sodium_init() < 0) {
        /* cannot happen on Linux with getrandom; a fixed token is still a
         * token, only a weak one */
        memset(out, 0, PS_TOKEN_LEN);
        snprintf(src, src_len, "none (libsodium failed to start)");
        return;
    }
    if (ps_token_from_job(client_id, out)) {
        snprintf(src, src_len, "the job token (RF_JOB_TOKEN)");
        return;
    }
    char dir[512], path[1024], err[1200];
    if (token_dir(dir, sizeof dir, err, sizeof err)) {
        char name[300];
        snprintf(name, sizeof name, "%s", ps0 ? ps0 : "");
        for (char *p = name; *p; p++)
            if (*p == '/' || *p == '[' || *p == ']')
                *p = '_';
        snprintf(path, sizeof path, "%s/token-%s-%u", dir, name, client_id);
        bool made = false;
        if (token_file(path, out, &made, err, sizeof err)) {
            snprintf(src, src_len, "%s %s", made ? "made" : "read", path);
            return;
        }
    }
    randombytes_buf(out, PS_TOKEN_LEN);
    snprintf(src, src_len, "random for this process");
    RF_LOG_WARN("client %u: no task token to keep across restarts (%s): a "
                "restart of this task will be refused by ps tasks without a "
                "cluster secret; set RF_JOB_TOKEN or RF_TOKEN_DIR",
                client_id, err);
}
