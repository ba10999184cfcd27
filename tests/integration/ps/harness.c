/* tests/integration/ps/harness.c: checks, child processes, fabric and data
 * helpers of the ps integration tests (see harness.h). */
#include "tests/integration/ps/harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *pt_who = "driver";

#define MAX_CHILDREN 32
static volatile pid_t live[MAX_CHILDREN];

void pt_kill_all(void)
{
    for (int i = 0; i < MAX_CHILDREN; i++) {
        pid_t p = live[i];
        if (p > 0)
            kill(p, SIGKILL);
    }
}

void pt_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "FAIL (%s) %s:%d: %s: %s\n  last error: %s\n", pt_who, file,
            line, cond, msg, rf_error_message());
    fflush(stderr);
    pt_kill_all();
    _exit(1);
}

void pt_note(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "[%s] %s\n", pt_who, msg);
}

const char *pt_provider(void)
{
    const char *p = getenv("RF_FABRIC");
    return p && *p ? p : "sock";
}

const char *pt_host(void)
{
    const char *h = getenv("RF_TEST_HOST");
    return h && *h ? h : "127.0.0.1";
}

int pt_scale(void)
{
    const char *s = getenv("RF_TEST_TIME_SCALE");
    int v = s ? atoi(s) : 1;
    return v > 0 ? v : 1;
}

int pt_ms(int base_ms)
{
    return base_ms * pt_scale();
}

long long pt_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void pt_sleep_ms(long long ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

rf_fabric *pt_fabric(void)
{
    rf_fabric_attr attr = {.bind_addr = pt_host()};
    rf_fabric *f = NULL;
    CHECK_OK(rf_fabric_open(pt_provider(), &attr, &f));
    return f;
}

uint16_t pt_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(fd >= 0, "socket: %s", strerror(errno));
    struct sockaddr_in a = {.sin_family = AF_INET};
    inet_pton(AF_INET, pt_host(), &a.sin_addr);
    CHECK(bind(fd, (struct sockaddr *)&a, sizeof a) == 0, "bind: %s",
          strerror(errno));
    socklen_t len = sizeof a;
    CHECK(getsockname(fd, (struct sockaddr *)&a, &len) == 0, "getsockname: %s",
          strerror(errno));
    close(fd);
    return ntohs(a.sin_port);
}

const char *pt_addr(uint16_t port)
{
    static char ring[16][300];
    static unsigned next;
    char *b = ring[next++ % 16];
    snprintf(b, 300, "%s:%u", pt_host(), port);
    return b;
}

/* ---- children -------------------------------------------------------------
 */

static void track(pid_t pid)
{
    for (int i = 0; i < MAX_CHILDREN; i++) {
        if (live[i] == 0) {
            live[i] = pid;
            return;
        }
    }
    kill(pid, SIGKILL);
    CHECK(0, "more than %d children", MAX_CHILDREN);
}

static void untrack(pid_t pid)
{
    for (int i = 0; i < MAX_CHILDREN; i++)
        if (live[i] == pid)
            live[i] = 0;
}

void pt_proc_init(bool is_child)
{
    signal(SIGPIPE, SIG_IGN);
    if (is_child) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() == 1)
            _exit(1);
    }
}

static const char *helper_path(void)
{
    static char path[PATH_MAX];
    if (path[0])
        return path;
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    CHECK(n > 0, "readlink /proc/self/exe: %s", strerror(errno));
    self[n] = '\0';
    snprintf(path, sizeof path, "%s/rf_ps_helper", dirname(self));
    return path;
}

void pt_spawn(pt_child *c, const char *name, const char *const *args)
{
    memset(c, 0, sizeof *c);
    c->from_fd = -1;
    snprintf(c->name, sizeof c->name, "%s", name);
    const char *argv[64];
    size_t n = 0;
    const char *path = helper_path();
    argv[n++] = path;
    for (size_t i = 0; args[i]; i++) {
        CHECK(n < 63, "too many arguments");
        argv[n++] = args[i];
    }
    argv[n] = NULL;
    int out[2];
    CHECK(pipe2(out, O_CLOEXEC) == 0, "pipe2: %s", strerror(errno));
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        if (dup2(out[1], 1) < 0 || (devnull >= 0 && dup2(devnull, 0) < 0))
            _exit(127);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        execv(path, (char *const *)argv);
        _exit(127);
    }
    close(out[1]);
    if (devnull >= 0)
        close(devnull);
    c->pid = pid;
    c->from_fd = out[0];
    track(pid);
}

void pt_line(pt_child *c, char *line, size_t cap, int timeout_ms)
{
    long long deadline = pt_now_ms() + timeout_ms;
    for (;;) {
        char *nl = memchr(c->buf, '\n', c->len);
        if (nl) {
            size_t len = (size_t)(nl - c->buf);
            CHECK(len < cap, "line from %s too long", c->name);
            memcpy(line, c->buf, len);
            line[len] = '\0';
            c->len -= len + 1;
            memmove(c->buf, nl + 1, c->len);
            return;
        }
        CHECK(c->len < sizeof c->buf, "line from %s too long", c->name);
        long long left = deadline - pt_now_ms();
        CHECK(left > 0, "no line from %s (pid %d) within %d ms", c->name,
              (int)c->pid, timeout_ms);
        struct pollfd p = {.fd = c->from_fd, .events = POLLIN};
        int r = poll(&p, 1, (int)left);
        if (r < 0 && errno == EINTR)
            continue;
        CHECK(r >= 0, "poll: %s", strerror(errno));
        if (r == 0)
            continue;
        ssize_t got = read(c->from_fd, c->buf + c->len, sizeof c->buf - c->len);
        if (got < 0 && errno == EINTR)
            continue;
        CHECK(got > 0, "%s (pid %d) closed its output (exited?)", c->name,
              (int)c->pid);
        c->len += (size_t)got;
    }
}

void pt_expect(pt_child *c, const char *prefix, char *rest, size_t cap,
               int timeout_ms)
{
    long long deadline = pt_now_ms() + timeout_ms;
    char line[2048];
    for (;;) {
        long long left = deadline - pt_now_ms();
        CHECK(left > 0, "%s: no \"%s\" line within %d ms", c->name, prefix,
              timeout_ms);
        pt_line(c, line, sizeof line, (int)left);
        if (strncmp(line, prefix, strlen(prefix)) == 0) {
            snprintf(rest, cap, "%s", line + strlen(prefix));
            return;
        }
        pt_note("%s says: %s", c->name, line);
    }
}

int pt_wait(pt_child *c, int timeout_ms)
{
    CHECK(c->pid > 0, "%s already reaped", c->name);
    long long deadline = pt_now_ms() + timeout_ms;
    for (;;) {
        int status = 0;
        pid_t r = waitpid(c->pid, &status, WNOHANG);
        if (r == c->pid) {
            untrack(c->pid);
            c->pid = 0;
            close(c->from_fd);
            c->from_fd = -1;
            return status;
        }
        CHECK(r == 0 || errno == EINTR, "waitpid: %s", strerror(errno));
        if (pt_now_ms() >= deadline) {
            pid_t pid = c->pid;
            pt_kill(c);
            CHECK(0, "%s (pid %d) did not exit within %d ms; killed", c->name,
                  (int)pid, timeout_ms);
        }
        pt_sleep_ms(5);
    }
}

void pt_wait_ok(pt_child *c, int timeout_ms)
{
    char name[sizeof c->name];
    memcpy(name, c->name, sizeof name);
    int st = pt_wait(c, timeout_ms);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: %s %d", name,
          WIFEXITED(st) ? "exit status" : "killed by signal",
          WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
}

void pt_kill(pt_child *c)
{
    if (c->pid > 0) {
        kill(c->pid, SIGKILL);
        while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
            ;
        untrack(c->pid);
        c->pid = 0;
    }
    if (c->from_fd >= 0)
        close(c->from_fd);
    c->from_fd = -1;
}

void pt_ps_start(pt_ps *ps, int index, uint16_t port)
{
    char idx[16], prt[16], name[32];
    snprintf(idx, sizeof idx, "%d", index);
    snprintf(prt, sizeof prt, "%u", port);
    snprintf(name, sizeof name, "ps%d", index);
    const char *args[] = {"ps", "--index", idx, "--port", prt, NULL};
    pt_spawn(&ps->child, name, args);
    char rest[256];
    pt_expect(&ps->child, "READY ", rest, sizeof rest, pt_ms(15000));
    unsigned p = 0;
    unsigned long long inc = 0;
    CHECK(sscanf(rest, "%u %llx", &p, &inc) == 2, "bad READY line: %s", rest);
    ps->port = (uint16_t)p;
    ps->incarnation = inc;
}

/* ---- data
 * -------------------------------------------------------------------- */

float pt_rand(uint64_t seed, uint64_t i)
{
    uint64_t z = seed * 0x9e3779b97f4a7c15ull + i + 1;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (float)((double)(z >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
}

void pt_fill(float *p, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = pt_rand(seed, i);
}

/* Every test buffer, freed at the end (after the clients are closed). */
static void **bufs;
static size_t nbufs, capbufs;

void pt_buf_release_all(void)
{
    for (size_t i = 0; i < nbufs; i++)
        free(bufs[i]);
    free(bufs);
    bufs = NULL;
    nbufs = capbufs = 0;
}

void pt_buf_alloc(rf_ps_client *c, pt_buf *b, size_t n)
{
    size_t bytes = (n ? n : 1) * sizeof(float);
    bytes = (bytes + 63) / 64 * 64;
    b->p = aligned_alloc(64, bytes);
    CHECK(b->p, "out of memory");
    memset(b->p, 0, bytes);
    if (nbufs == capbufs) {
        capbufs = capbufs ? 2 * capbufs : 64;
        bufs = realloc(bufs, capbufs * sizeof *bufs);
        CHECK(bufs, "out of memory");
    }
    bufs[nbufs++] = b->p;
    b->n = n;
    CHECK_OK(rf_ps_client_register(c, b->p, bytes, &b->mr));
}

rf_ps_client *pt_client(rf_fabric *f, const char *const *addrs, size_t n,
                        uint32_t id, bool chief)
{
    rf_ps_client_options o = {.client_id = id,
                              .is_chief = chief,
                              .connect_timeout_ms = pt_ms(20000),
                              .op_timeout_ms = pt_ms(20000),
                              .lock_timeout_ms = pt_ms(20000),
                              .lookup_timeout_ms = pt_ms(20000)};
    rf_ps_client *c = NULL;
    CHECK_OK(rf_ps_client_connect(f, addrs, n, &o, &c));
    return c;
}
