/* tools/launch/remote.c: a task's argv turned into an ssh command line
 * (see remote.h), with the remote shell's quoting. */
#include "remote.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

/* The remote watcher: the task in the background (stdin from /dev/null,
 * SIGTERM forwarded), a reader of ssh's stdin (fd 3) that stops it at EOF,
 * and the task's status as the exit status. */
static const char watch[] =
    "exec 3<&0; \"$@\" </dev/null 3<&- & p=$!; "
    "trap 'kill -TERM $p 2>/dev/null' TERM HUP INT; "
    "{ cat >/dev/null 2>&1; kill -TERM $p 2>/dev/null; } <&3 & exec 3<&-; "
    "s=0; wait $p || s=$?; "
    "while kill -0 $p 2>/dev/null; do wait $p; s=$?; done; exit $s";

/* With the job's own secret: first its line from ssh's stdin (read byte by
 * byte by the shell, so nothing after it is consumed) into a private file
 * of this host (a mktemp -d folder, mode 0700; the file 0600), named to
 * the task by RF_CLUSTER_SECRET_FILE and removed when the task has ended;
 * then the job token's line (empty: none) into RF_JOB_TOKEN; then the
 * watcher above. Neither is ever on a command line. */
static const char watch_secret[] =
    "d=$(mktemp -d \"${TMPDIR:-/tmp}/rf-task.XXXXXX\") || exit 1; "
    "IFS= read -r k || { echo 'rf-launch: no cluster secret on stdin' >&2; "
    "rm -rf \"$d\"; exit 1; }; "
    "(umask 077 && printf '%s\\n' \"$k\" >\"$d/secret\") || "
    "{ rm -rf \"$d\"; exit 1; }; k=; "
    "RF_CLUSTER_SECRET_FILE=$d/secret; export RF_CLUSTER_SECRET_FILE; "
    "IFS= read -r j || { echo 'rf-launch: no job token line on stdin' >&2; "
    "rm -rf \"$d\"; exit 1; }; "
    "if [ -n \"$j\" ]; then RF_JOB_TOKEN=$j; export RF_JOB_TOKEN; fi; j=; "
    "exec 3<&0; \"$@\" </dev/null 3<&- & p=$!; "
    "trap 'kill -TERM $p 2>/dev/null' TERM HUP INT; "
    "{ cat >/dev/null 2>&1; kill -TERM $p 2>/dev/null; } <&3 & exec 3<&-; "
    "s=0; wait $p || s=$?; "
    "while kill -0 $p 2>/dev/null; do wait $p; s=$?; done; "
    "rm -rf \"$d\"; exit $s";

/* Appends text to a growing string; -1 if out of memory. */
typedef struct sbuf {
    char *s;
    size_t len, cap;
} sbuf;

static int put(sbuf *b, const char *text, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = (b->len + n + 1) * 2;
        char *s = realloc(b->s, cap);
        if (!s)
            return -1;
        b->s = s;
        b->cap = cap;
    }
    memcpy(b->s + b->len, text, n);
    b->len += n;
    b->s[b->len] = '\0';
    return 0;
}

/* ' word' single-quoted for sh ('\'' for a quote). */
static int put_quoted(sbuf *b, const char *w)
{
    if (put(b, " '", 2) != 0)
        return -1;
    for (const char *q; (q = strchr(w, '\'')); w = q + 1)
        if (put(b, w, (size_t)(q - w)) != 0 || put(b, "'\\''", 4) != 0)
            return -1;
    return put(b, w, strlen(w)) != 0 || put(b, "'", 1) != 0 ? -1 : 0;
}

static char *remote_command(const lt_task *t)
{
    sbuf b = {0};
    char cwd[4096];
    int rc = getcwd(cwd, sizeof cwd) ? 0 : -1;
    rc = rc || put(&b, "cd", 2) || put_quoted(&b, cwd) ||
         put(&b, " && exec env", 12);
    if (!t->tf_config)
        rc = rc || put(&b, " -u TF_CONFIG", 13);
    /* with the job's secret the job token goes on stdin too (task.c) */
    for (char **e = environ; !rc && *e; e++)
        if (!strncmp(*e, "RF_", 3) && strchr(*e, '=') &&
            strncmp(*e, "RF_LAUNCH_TASK=", 15) != 0 &&
            (!t->secret || strncmp(*e, "RF_JOB_TOKEN=", 13) != 0))
            rc = put_quoted(&b, *e);
    /* rf-launch prefixes the task's lines itself (task.c) */
    if (!rc) {
        char *kv = NULL;
        rc = asprintf(&kv, "RF_LAUNCH_TASK=%s", t->name) < 0 ? -1 : 0;
        rc = rc || put_quoted(&b, kv);
        free(kv);
    }
    if (!rc && t->tf_config) {
        char *kv = NULL;
        rc = asprintf(&kv, "TF_CONFIG=%s", t->tf_config) < 0 ? -1 : 0;
        rc = rc || put_quoted(&b, kv);
        free(kv);
    }
    rc = rc || put(&b, " sh -c", 6) ||
         put_quoted(&b, t->secret ? watch_secret : watch) ||
         put(&b, " rf-task", 8);
    for (char **a = t->argv; !rc && *a; a++)
        rc = put_quoted(&b, *a);
    if (rc) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

int lt_remote_wrap(const lt_opts *o, lt_task *t)
{
    char *cmd = remote_command(t);
    char *ssh = strdup(o->ssh ? o->ssh : LT_DEFAULT_SSH);
    size_t n = 0, cap = 8;
    char **argv = calloc(cap, sizeof *argv);
    int rc = cmd && ssh && argv ? 0 : -1;
    char *save = NULL;
    for (char *w = rc ? NULL : strtok_r(ssh, " \t", &save); w && !rc;
         w = strtok_r(NULL, " \t", &save)) {
        if (n + 3 >= cap) {
            char **a = realloc(argv, (cap *= 2) * sizeof *a);
            if (!a) {
                rc = -1;
                break;
            }
            argv = a;
        }
        if (!(argv[n++] = strdup(w)))
            rc = -1;
    }
    if (!rc && !(argv[n++] = strdup(t->host)))
        rc = -1;
    if (!rc) {
        argv[n++] = cmd;
        cmd = NULL;
        argv[n] = NULL;
    }
    free(ssh);
    free(cmd);
    if (rc) {
        for (size_t i = 0; argv && i < n; i++)
            free(argv[i]);
        free(argv);
        return -1;
    }
    for (char **a = t->argv; a && *a; a++)
        free(*a);
    free(t->argv);
    t->argv = argv;
    return 0;
}
