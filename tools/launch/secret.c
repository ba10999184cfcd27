/* tools/launch/secret.c: the job's own cluster secret (see secret.h): a
 * private run folder, the secret made in it by the library
 * (rf_secret_create: libsodium's random bytes, mode 0600), read back for
 * the tasks started over ssh, and removed at the end; and the job's task
 * token seed (RF_JOB_TOKEN). */
#include "secret.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "rdmaflow/secret.h"

/* The user gave a secret: RF_CLUSTER_SECRET_FILE is set (even empty: the
 * tasks then refuse it, as they would without rf-launch), or the program's
 * arguments carry --cluster_secret_file. */
static bool user_secret(const lt_opts *o)
{
    if (getenv("RF_CLUSTER_SECRET_FILE"))
        return true;
    static const char flag[] = "--cluster_secret_file";
    for (int i = 1; i < o->prog_argc; i++) {
        const char *a = o->prog[i];
        if (!strncmp(a, flag, sizeof flag - 1) &&
            (a[sizeof flag - 1] == '\0' || a[sizeof flag - 1] == '='))
            return true;
    }
    return false;
}

static int read_back(lt_secret *s, char *err, size_t errlen)
{
    int fd = open(s->path, O_RDONLY | O_CLOEXEC);
    size_t cap = 2 * RF_SECRET_CREATE_BYTES + 2;
    s->text = fd >= 0 ? malloc(cap) : NULL;
    ssize_t n = s->text ? read(fd, s->text, cap - 1) : -1;
    int e = errno;
    if (fd >= 0)
        close(fd);
    if (n <= 0 || s->text[n - 1] != '\n') {
        snprintf(err, errlen, "cluster secret %s: cannot read it back: %s",
                 s->path, n < 0 ? strerror(e) : "short");
        return -1;
    }
    s->len = (size_t)n;
    s->text[n] = '\0';
    return 0;
}

int lt_secret_prepare(const lt_opts *o, lt_secret *s, char *err, size_t errlen)
{
    *s = (lt_secret){0};
    bool mine = !user_secret(o);
    /* an elastic job needs the folder for its control socket */
    if (!mine && !o->elastic)
        return 0;
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = "/tmp";
    if (asprintf(&s->dir, "%s/rf-launch.XXXXXX", tmp) < 0) {
        s->dir = NULL;
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (!mkdtemp(s->dir)) { /* mode 0700 */
        snprintf(err, errlen,
                 "cannot make the job's run folder for its %s in %s: %s "
                 "(set TMPDIR%s)",
                 mine ? "cluster secret" : "control socket", tmp,
                 strerror(errno),
                 mine ? ", or give a secret: RF_CLUSTER_SECRET_FILE" : "");
        free(s->dir);
        s->dir = NULL;
        return -1;
    }
    if (!mine)
        return 0;
    if (asprintf(&s->path, "%s/secret", s->dir) < 0) {
        s->path = NULL;
        snprintf(err, errlen, "out of memory");
        lt_secret_finish(s, false);
        return -1;
    }
    if (rf_secret_create(s->path) != RF_OK) {
        snprintf(err, errlen, "%s", rf_error_message());
        lt_secret_finish(s, false);
        return -1;
    }
    if (o->hostfile && read_back(s, err, errlen) != 0) {
        lt_secret_finish(s, false);
        return -1;
    }
    return 0;
}

int lt_job_token_prepare(const lt_opts *o, const lt_secret *s, char *err,
                         size_t errlen)
{
    const char *given = getenv("RF_JOB_TOKEN");
    if (given) {
        /* over ssh's stdin it is one line, written whole (task.c) */
        if (o->hostfile && s->path && strchr(given, '\n')) {
            snprintf(err, errlen,
                     "RF_JOB_TOKEN holds a newline; give the job token as "
                     "one line");
            return -2;
        }
        if (o->hostfile && s->path && strlen(given) > LT_JOB_TOKEN_MAX) {
            snprintf(err, errlen, "RF_JOB_TOKEN is %zu bytes; at most %d",
                     strlen(given), LT_JOB_TOKEN_MAX);
            return -2;
        }
        return 0;
    }
    if (o->hostfile && !s->path) /* no stdin line: not on a command line */
        return 0;
    unsigned char seed[16];
    if (getrandom(seed, sizeof seed, 0) != (ssize_t)sizeof seed) {
        snprintf(err, errlen, "the job token: getrandom: %s", strerror(errno));
        return -1;
    }
    char hex[2 * sizeof seed + 1];
    for (size_t i = 0; i < sizeof seed; i++)
        snprintf(hex + 2 * i, 3, "%02x", seed[i]);
    explicit_bzero(seed, sizeof seed);
    int rc = setenv("RF_JOB_TOKEN", hex, 1);
    explicit_bzero(hex, sizeof hex);
    if (rc != 0) {
        snprintf(err, errlen, "the job token: setenv: %s", strerror(errno));
        return -1;
    }
    return 0;
}

void lt_secret_finish(lt_secret *s, bool keep)
{
    if (keep && s->path) {
        lt_msg("the cluster secret is kept in %s (--keep_secret)", s->path);
    } else if (s->dir) {
        if (s->path && unlink(s->path) != 0 && errno != ENOENT)
            lt_msg("warning: cannot remove the cluster secret %s: %s", s->path,
                   strerror(errno));
        if (rmdir(s->dir) != 0 && errno != ENOENT)
            lt_msg("warning: cannot remove the run folder %s: %s", s->dir,
                   strerror(errno));
    }
    if (s->text)
        explicit_bzero(s->text, s->len);
    free(s->text);
    free(s->path);
    free(s->dir);
    *s = (lt_secret){0};
}
