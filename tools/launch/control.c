/* tools/launch/control.c: the control socket of a running launch (see
 * control.h): the launcher's side (open, serve, close) and the client's
 * (rf-launch --add_worker / --remove_worker). */
#include "control.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "launch.h"
#include "rdmaflow/env.h"

#define STR_(x)   #x
#define STR(x)    STR_(x)
#define SOCK_NAME "control"
#define PID_NAME  "pid"
/* How long the launcher waits for a request line, the client for the
 * reply (a start of N tasks is quick: fork and exec). */
#define SERVE_WAIT_MS  1000
#define CLIENT_WAIT_MS 10000

static int sock_path(const char *dir, struct sockaddr_un *a)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    int k = snprintf(a->sun_path, sizeof a->sun_path, "%s/" SOCK_NAME, dir);
    return k > 0 && (size_t)k < sizeof a->sun_path ? 0 : -1;
}

int lt_control_open(const char *dir, char *err, size_t errlen)
{
    struct sockaddr_un a;
    if (sock_path(dir, &a) != 0) {
        snprintf(err, errlen,
                 "control socket: the run folder's path %s is too long "
                 "for a socket (the limit is %zu bytes)",
                 dir, sizeof a.sun_path - sizeof "/" SOCK_NAME);
        return -1;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "control socket: %s", strerror(errno));
        return -1;
    }
    /* the folder is 0700 already; the socket itself 0600 from its birth */
    mode_t old = umask(077);
    int rc = bind(fd, (struct sockaddr *)&a, sizeof a);
    umask(old);
    if (rc == 0)
        rc = chmod(a.sun_path, 0600);
    if (rc != 0 || listen(fd, 8) != 0) {
        snprintf(err, errlen, "control socket %s: %s", a.sun_path,
                 strerror(errno));
        close(fd);
        return -1;
    }
    char pid_path[sizeof a.sun_path + 8];
    snprintf(pid_path, sizeof pid_path, "%s/" PID_NAME, dir);
    old = umask(077);
    FILE *f = fopen(pid_path, "wx");
    umask(old);
    if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) != 0) {
        snprintf(err, errlen, "%s: %s", pid_path, strerror(errno));
        unlink(a.sun_path);
        close(fd);
        return -1;
    }
    return fd;
}

void lt_control_close(int lfd, const char *dir)
{
    if (lfd < 0)
        return;
    close(lfd);
    struct sockaddr_un a;
    if (sock_path(dir, &a) == 0)
        unlink(a.sun_path);
    char pid_path[sizeof a.sun_path + 8];
    snprintf(pid_path, sizeof pid_path, "%s/" PID_NAME, dir);
    unlink(pid_path);
}

/* Reads one line (without its newline) of at most max - 1 bytes into buf
 * within wait_ms. Returns 0, -1 on timeout, EOF or error, -2 too long. */
static int read_line(int fd, char *buf, size_t max, int wait_ms)
{
    size_t len = 0;
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, wait_ms);
        if (r <= 0)
            return -1;
        ssize_t k = read(fd, buf + len, max - len);
        if (k < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (k <= 0)
            return -1;
        char *nl = memchr(buf + len, '\n', (size_t)k);
        len += (size_t)k;
        if (nl) {
            *nl = '\0';
            return 0;
        }
        if (len == max)
            return -2;
    }
}

/* Sends all of s; a peer gone is not a SIGPIPE (the client does not
 * ignore it as the launcher does). */
static void write_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t k = send(fd, s, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return;
        s += k;
        n -= (size_t)k;
    }
}

/* The process at the other end of fd is of this process's user; *cred
 * says who it is (uid and pid -1 when the kernel does not say). */
static bool peer_is_me(int fd, struct ucred *cred)
{
    socklen_t clen = sizeof *cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cred, &clen) != 0) {
        cred->uid = (uid_t)-1;
        cred->pid = -1;
        return false;
    }
    return cred->uid == geteuid();
}

static void serve_one(int fd, lt_control_fn fn, void *ctx)
{
    struct ucred cred;
    if (!peer_is_me(fd, &cred)) {
        lt_msg("control socket: refused a connection from uid %d (pid %d): "
               "not this launcher's user",
               (int)cred.uid, (int)cred.pid);
        return;
    }
    char req[LT_CONTROL_REQ_MAX], reply[LT_CONTROL_REPLY_MAX];
    int rc = read_line(fd, req, sizeof req, SERVE_WAIT_MS);
    if (rc == -2)
        snprintf(reply, sizeof reply,
                 "error request longer than the limit of %d bytes",
                 LT_CONTROL_REQ_MAX);
    else if (rc != 0)
        snprintf(reply, sizeof reply, "error no request line within %d ms",
                 SERVE_WAIT_MS);
    else
        fn(ctx, req, reply, sizeof reply);
    size_t n = strlen(reply);
    if (n + 1 < sizeof reply)
        reply[n++] = '\n';
    write_all(fd, reply, n);
}

void lt_control_serve(int lfd, lt_control_fn fn, void *ctx)
{
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            return; /* EAGAIN: no more pending */
        serve_one(fd, fn, ctx);
        close(fd);
    }
}

/* ---- the client ---------------------------------------------------- */

static int usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "rf-launch: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr,
            "\nusage: rf-launch --add_worker [N] JOB\n"
            "       rf-launch --remove_worker [N | --task worker:K] JOB\n"
            "JOB: the job's run folder or its job id (rf-launch prints both "
            "when an\nelastic job starts); N: 1.." STR(
                LT_MAX_ADDED_WORKERS) " "
                                      "(default 1)\n");
    return LT_EXIT_USAGE;
}

/* A count 1..LT_MAX_ADDED_WORKERS. */
static bool parse_count(const char *s, int *out)
{
    if (!*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 4)
        return false;
    int v = atoi(s);
    if (v < 1 || v > LT_MAX_ADDED_WORKERS)
        return false;
    *out = v;
    return true;
}

/* The run folder of job id (the launcher's pid): the rf-launch.* folder
 * of $TMPDIR (or /tmp) whose pid file says it. */
static char *find_job(const char *id)
{
    const char *tmp = getenv("TMPDIR");
    char pattern[4096];
    snprintf(pattern, sizeof pattern, "%s/rf-launch.*/" PID_NAME,
             tmp && *tmp ? tmp : "/tmp");
    glob_t g;
    char *found = NULL;
    if (glob(pattern, 0, NULL, &g) != 0)
        return NULL;
    for (size_t i = 0; i < g.gl_pathc && !found; i++) {
        FILE *f = fopen(g.gl_pathv[i], "r");
        char line[32] = "";
        if (f) {
            if (!fgets(line, sizeof line, f))
                line[0] = '\0';
            fclose(f);
        }
        line[strcspn(line, "\n")] = '\0';
        if (strcmp(line, id) == 0) {
            found = strdup(g.gl_pathv[i]);
            if (found)
                *strrchr(found, '/') = '\0';
        }
    }
    globfree(&g);
    return found;
}

static int send_request(const char *job, const char *req)
{
    char *dir = NULL;
    if (strspn(job, "0123456789") == strlen(job)) {
        dir = find_job(job);
        if (!dir) {
            const char *tmp = getenv("TMPDIR");
            lt_msg("no rf-launch job %s runs here (no run folder of %s/"
                   "rf-launch.* names it; give the run folder if TMPDIR "
                   "differs)",
                   RF_ECHO(job), tmp && *tmp ? tmp : "/tmp");
            return LT_EXIT_FAILED;
        }
    } else if (!(dir = strdup(job))) {
        lt_msg("out of memory");
        return LT_EXIT_FAILED;
    }
    struct sockaddr_un a;
    if (sock_path(dir, &a) != 0) {
        lt_msg("%s: path too long for a control socket", RF_ECHO(dir));
        free(dir);
        return LT_EXIT_FAILED;
    }
    free(dir);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        int e = errno;
        lt_msg("no rf-launch job runs in %s: %s: %s%s", RF_ECHO(job),
               RF_ECHO(a.sun_path), strerror(e),
               e == ENOENT || e == ECONNREFUSED
                   ? " (the job has ended, or this is not a job's run folder)"
                   : "");
        if (fd >= 0)
            close(fd);
        return LT_EXIT_FAILED;
    }
    struct ucred cred;
    if (!peer_is_me(fd, &cred)) {
        lt_msg("%s: the process listening there is not of this user; "
               "refusing to talk to it",
               a.sun_path);
        close(fd);
        return LT_EXIT_FAILED;
    }
    char line[LT_CONTROL_REQ_MAX + 2];
    snprintf(line, sizeof line, "%s\n", req);
    write_all(fd, line, strlen(line));
    char reply[LT_CONTROL_REPLY_MAX + 1];
    int rc = read_line(fd, reply, sizeof reply, CLIENT_WAIT_MS);
    close(fd);
    if (rc != 0) {
        lt_msg("job %s: no reply from the launcher within %d s", RF_ECHO(job),
               CLIENT_WAIT_MS / 1000);
        return LT_EXIT_FAILED;
    }
    if (strncmp(reply, "ok ", 3) == 0) {
        printf("rf-launch: %s\n", reply + 3);
        return LT_EXIT_OK;
    }
    lt_msg("%s", strncmp(reply, "error ", 6) == 0 ? reply + 6 : reply);
    return LT_EXIT_FAILED;
}

int lt_control_client(int argc, char **argv)
{
    const char *op = argv[1];
    bool add = strncmp(op, "--add_worker", 12) == 0;
    const char *eq = strchr(op, '=');
    int count = 1, i = 2;
    const char *task = NULL;
    if (eq && !parse_count(eq + 1, &count))
        return usage_error("%s: the count must be an integer in [1, %d]",
                           RF_ECHO(op), LT_MAX_ADDED_WORKERS);
    if (!eq && i < argc - 1 && parse_count(argv[i], &count))
        i++;
    else if (!eq && !add && i < argc - 1 && strcmp(argv[i], "--task") == 0) {
        task = argv[i + 1];
        i += 2;
    } else if (!eq && i < argc - 1)
        return usage_error("'%s' is not a count in [1, %d]", RF_ECHO(argv[i]),
                           LT_MAX_ADDED_WORKERS);
    if (i >= argc)
        return usage_error("missing JOB (the run folder or job id)");
    if (i != argc - 1)
        return usage_error("unexpected argument '%s'", RF_ECHO(argv[i + 1]));
    const char *job = argv[i];
    if (!*job)
        return usage_error("empty JOB");
    char req[LT_CONTROL_REQ_MAX];
    if (task) {
        const char *k = strncmp(task, "worker:", 7) == 0  ? task + 7
                        : strncmp(task, "chief:", 6) == 0 ? task + 6
                                                          : NULL;
        if (!k || !*k || strspn(k, "0123456789") != strlen(k) || strlen(k) > 4)
            return usage_error("--task '%s': expected worker:K (K a worker "
                               "index)",
                               RF_ECHO(task));
        snprintf(req, sizeof req, "remove %s", task);
    } else {
        snprintf(req, sizeof req, "%s %d", add ? "add" : "remove", count);
    }
    return send_request(job, req);
}
