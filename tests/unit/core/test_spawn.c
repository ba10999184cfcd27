/* tests/unit/core/test_spawn.c: ctest unit.spawn, the behaviour of the spawn
 * helper (rdmaflow/spawn.h): exit status, exec failure reported as an error
 * naming the program (no child left), stdio pipes and /dev/null, the
 * ready-fd port handshake, bounded wait and terminate (SIGTERM, SIGKILL
 * after the grace), process groups, die-with-parent (a real SIGKILL to the
 * parent of a grandchild), environment overrides and removals, the signal
 * state and option checks. The children are this program re-executed with
 * --child MODE. Not a test of the tools that use the helper (their own tests
 * check their command lines and output). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rdmaflow/clock.h"
#include "rdmaflow/spawn.h"
#include "tests/common/check.h"

#define PROG "rf_test_spawn"

/* Every wait of the test is bounded by this (sanitizers are slow). */
#define WAIT_MS 10000

/* ------------------------------------------------------------ children */

/* port LINE FD READ_END: writes LINE on FD; the parent's READ_END must
 * not be open here. */
static int child_port(char **a)
{
    if (fcntl(atoi(a[2]), F_GETFD) != -1)
        return 4; /* the parent's read end leaked into the child */
    size_t n = strlen(a[0]);
    return write(atoi(a[1]), a[0], n) == (ssize_t)n ? 0 : 3;
}

static int child_echo(char **a)
{
    (void)a;
    char buf[256];
    ssize_t r;
    while ((r = read(0, buf, sizeof buf)) > 0)
        if (write(1, buf, (size_t)r) != r)
            return 3;
    return write(2, "err\n", 4) == 4 && r == 0 ? 0 : 3;
}

static int child_devnull(char **a)
{
    (void)a;
    char c;
    return read(0, &c, 1) == 0 && write(0, "x", 1) < 0 && write(1, "x", 1) == 1
               ? 0
               : 3;
}

static int child_ignore_term(char **a)
{
    (void)a;
    signal(SIGTERM, SIG_IGN);
    if (write(3, "1\n", 2) != 2)
        return 3;
    rf_sleep_ms(60000);
    return 0;
}

static const char *disposition(int sig)
{
    struct sigaction sa;
    sigaction(sig, NULL, &sa);
    return sa.sa_handler == SIG_IGN   ? "ign"
           : sa.sa_handler == SIG_DFL ? "dfl"
                                      : "handler";
}

static int child_sigstate(char **a)
{
    (void)a;
    sigset_t m;
    sigprocmask(SIG_SETMASK, NULL, &m);
    printf("usr1_blocked=%d pipe=%s usr2=%s\n", sigismember(&m, SIGUSR1),
           disposition(SIGPIPE), disposition(SIGUSR2));
    return 0;
}

static int child_env(char **a)
{
    (void)a;
    int set_entries = 0;
    for (char **e = environ; *e; e++)
        set_entries += strncmp(*e, "RF_SPAWN_T_SET=", 15) == 0;
    const char *names[] = {"RF_SPAWN_T_KEEP", "RF_SPAWN_T_SET",
                           "RF_SPAWN_T_ADD", "RF_SPAWN_T_DROP"};
    for (int i = 0; i < 4; i++) {
        const char *v = getenv(names[i]);
        printf("%s=%s\n", names[i], v ? v : "(unset)");
    }
    printf("set_entries=%d\n", set_entries);
    return 0;
}

/* Starts a grandchild (this program, sleeping) with die_with_parent as
 * asked, in this process's group, prints its pid and waits to be killed. */
static int child_middle(char **a)
{
    const char *argv[] = {PROG, "--child", "sleep", "60000", NULL};
    rf_spawn_opts o = {.argv = argv,
                       .path = RF_SPAWN_SELF,
                       .die_with_parent = strcmp(a[0], "die") == 0};
    rf_child g;
    if (rf_spawn(&o, &g) != RF_OK) {
        fprintf(stderr, "middle: %s\n", rf_error_message());
        return 3;
    }
    printf("grandchild %d\n", (int)g.pid);
    fflush(stdout);
    rf_sleep_ms(60000);
    return 0;
}

static int child_exit(char **a)
{
    return atoi(a[0]);
}

static int child_sleep(char **a)
{
    rf_sleep_ms(atoi(a[0]));
    return 0;
}

static int child_pgid(char **a)
{
    (void)a;
    printf("%d %d\n", (int)getpid(), (int)getpgid(0));
    return 0;
}

static const struct {
    const char *mode;
    int (*run)(char **args);
} children[] = {
    {"exit", child_exit},         {"sleep", child_sleep},
    {"port", child_port},         {"echo", child_echo},
    {"devnull", child_devnull},   {"ignore-term", child_ignore_term},
    {"sigstate", child_sigstate}, {"env", child_env},
    {"pgid", child_pgid},         {"middle", child_middle},
};

/* a: MODE ARGS... */
static int run_child(char **a)
{
    for (size_t i = 0; i < sizeof children / sizeof children[0]; i++)
        if (strcmp(a[0], children[i].mode) == 0)
            return children[i].run(a + 1);
    fprintf(stderr, PROG ": unknown child mode '%s'\n", a[0]);
    return 2;
}

/* -------------------------------------------------------------- helpers */

/* Options re-executing this program as --child ARGS... (argv must have
 * room for them and stay alive). */
static rf_spawn_opts self_opts(const char **argv, const char *const *args)
{
    int n = 0;
    argv[n++] = PROG;
    argv[n++] = "--child";
    while (*args)
        argv[n++] = *args++;
    argv[n] = NULL;
    return (rf_spawn_opts){.argv = argv, .path = RF_SPAWN_SELF};
}

/* Reads fd until end of file (or the buffer is full) within WAIT_MS. */
static size_t read_all(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    int64_t deadline = rf_deadline_ms(WAIT_MS);
    while (n < cap - 1) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, rf_deadline_left_ms(deadline)) <= 0)
            break;
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    buf[n] = '\0';
    return n;
}

/* Reads one line (without its '\n') within WAIT_MS. */
static void read_line(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    int64_t deadline = rf_deadline_ms(WAIT_MS);
    while (n < cap - 1) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        char c;
        if (poll(&p, 1, rf_deadline_left_ms(deadline)) <= 0 ||
            read(fd, &c, 1) != 1 || c == '\n')
            break;
        buf[n++] = c;
    }
    buf[n] = '\0';
}

/* Waits for the child and returns its exit status (-1: not a plain exit). */
static int exit_status(rf_child *c)
{
    int st = 0;
    rf_status s = rf_child_wait(c, WAIT_MS, &st);
    CHECK(s == RF_OK, "waiting for pid %d: %s", (int)c->pid,
          rf_status_string(s));
    return s == RF_OK && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Runs the child to its end with stdout piped; its output goes to out, its
 * reaped handle to *c, and its exit status is returned. */
static int run_output(rf_spawn_opts *o, char *out, size_t cap, rf_child *c)
{
    o->stdio[1] = RF_SPAWN_PIPE;
    out[0] = '\0';
    rf_status s = rf_spawn(o, c);
    CHECK(s == RF_OK, "spawn --child %s", o->argv[2]);
    if (s != RF_OK)
        return -1;
    read_all(c->stdio_fd[1], out, cap);
    int st = exit_status(c);
    rf_child_close(c);
    return st;
}

static void check_no_child_left(const char *what)
{
    errno = 0;
    CHECK(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD,
          "%s: a child is left (errno %d)", what, errno);
}

/* ---------------------------------------------------------------- tests */

static void test_exit_status(void)
{
    const char *argv[8];
    rf_spawn_opts o = self_opts(argv, (const char *[]){"exit", "7", NULL});
    rf_child c;
    CHECK(rf_spawn(&o, &c) == RF_OK, "spawn exit 7");
    CHECK(c.pid > 0 && !c.reaped, "pid %d", (int)c.pid);
    CHECK(exit_status(&c) == 7, "exit status");
    CHECK(c.reaped && WEXITSTATUS(c.wstatus) == 7, "status kept");
    int st = -1;
    CHECK(rf_child_wait(&c, 0, &st) == RF_OK && WEXITSTATUS(st) == 7,
          "a reaped child gives its status again");
    CHECK(rf_child_signal(&c, SIGTERM) == RF_ERR_INVALID_ARG,
          "no signal to a reaped child");

    /* path NULL: argv[0] is looked up in PATH. */
    const char *sh[] = {"sh", "-c", "exit 3", NULL};
    CHECK(rf_spawn(&(rf_spawn_opts){.argv = sh}, &c) == RF_OK, "spawn sh");
    CHECK(exit_status(&c) == 3, "sh -c 'exit 3'");
    check_no_child_left("exit status");
}

static void test_exec_failure(void)
{
    const char *missing[] = {"/nonexistent/rf-prog", NULL};
    rf_child c;
    rf_status s = rf_spawn(&(rf_spawn_opts){.argv = missing}, &c);
    CHECK(s == RF_ERR_IO, "got %s", rf_status_string(s));
    CHECK(strcmp(rf_error_message(), "cannot run '/nonexistent/rf-prog': No "
                                     "such file or directory") == 0,
          "message '%s'", rf_error_message());
    check_no_child_left("exec failure");

    const char *unknown[] = {"rf-no-such-program-in-path", NULL};
    s = rf_spawn(&(rf_spawn_opts){.argv = unknown}, &c);
    CHECK(s == RF_ERR_IO &&
              strstr(rf_error_message(),
                     "cannot run 'rf-no-such-program-in-path'") != NULL,
          "PATH lookup: %s", rf_error_message());

    /* The file executed is named, not argv[0]. */
    const char *named[] = {"whatever", NULL};
    s = rf_spawn(&(rf_spawn_opts){.argv = named, .path = "/dev/null"}, &c);
    CHECK(s == RF_ERR_IO &&
              strstr(rf_error_message(),
                     "cannot run '/dev/null': Permission") != NULL,
          "path: %s", rf_error_message());
    check_no_child_left("exec failures");
}

static void test_invalid_options(void)
{
    rf_child c;
    const char *argv[] = {"true", NULL};
    int closed = open("/dev/null", O_RDONLY);
    close(closed);
    CHECK(rf_spawn(&(rf_spawn_opts){.argv = NULL}, &c) == RF_ERR_INVALID_ARG,
          "no argv");
    CHECK(rf_spawn(&(rf_spawn_opts){.argv = argv,
                                    .env_set = (const char *[]){"NOEQ", NULL}},
                   &c) == RF_ERR_INVALID_ARG &&
              strstr(rf_error_message(), "'NOEQ'"),
          "env_set without '='");
    CHECK(rf_spawn(&(rf_spawn_opts){.argv = argv,
                                    .keep = &(rf_spawn_fd){0, 2},
                                    .nkeep = 1},
                   &c) == RF_ERR_INVALID_ARG,
          "child_fd 2");
    rf_spawn_fd twice[] = {{0, 5}, {1, 5}};
    CHECK(rf_spawn(&(rf_spawn_opts){.argv = argv, .keep = twice, .nkeep = 2},
                   &c) == RF_ERR_INVALID_ARG,
          "child_fd twice");
    CHECK(rf_spawn(&(rf_spawn_opts){.argv = argv,
                                    .keep = &(rf_spawn_fd){closed, 3},
                                    .nkeep = 1},
                   &c) == RF_ERR_INVALID_ARG,
          "closed fd");
    check_no_child_left("invalid options");
}

static void test_pipes(void)
{
    const char *argv[8];
    rf_spawn_opts o = self_opts(argv, (const char *[]){"echo", NULL});
    o.stdio[0] = o.stdio[1] = o.stdio[2] = RF_SPAWN_PIPE;
    o.pipe_nonblock = true;
    rf_child c;
    CHECK(rf_spawn(&o, &c) == RF_OK, "spawn echo");
    for (int i = 0; i < 3; i++)
        CHECK(c.stdio_fd[i] >= 0 &&
                  (fcntl(c.stdio_fd[i], F_GETFL) & O_NONBLOCK) &&
                  (fcntl(c.stdio_fd[i], F_GETFD) & FD_CLOEXEC),
              "stdio_fd[%d] non-blocking, close-on-exec", i);
    CHECK(write(c.stdio_fd[0], "hello\n", 6) == 6, "write stdin");
    close(c.stdio_fd[0]);
    c.stdio_fd[0] = -1;
    char out[64], err[64];
    read_all(c.stdio_fd[1], out, sizeof out);
    read_all(c.stdio_fd[2], err, sizeof err);
    CHECK(strcmp(out, "hello\n") == 0, "stdout '%s'", out);
    CHECK(strcmp(err, "err\n") == 0, "stderr '%s'", err);
    CHECK(exit_status(&c) == 0, "echo exit");
    rf_child_close(&c);
    CHECK(c.stdio_fd[1] == -1 && c.stdio_fd[2] == -1, "closed");

    /* /dev/null: stdin read-only at end of file, stdout writable. */
    o = self_opts(argv, (const char *[]){"devnull", NULL});
    o.stdio[0] = o.stdio[1] = RF_SPAWN_DEVNULL;
    CHECK(rf_spawn(&o, &c) == RF_OK, "spawn devnull");
    CHECK(c.stdio_fd[0] == -1 && c.stdio_fd[1] == -1, "no pipes");
    CHECK(exit_status(&c) == 0, "devnull child");
}

/* Spawns `--child MODE LINE FD READ_END` with the write end of a pipe as
 * the child's FD and reads its port; returns the status, *c the child (to
 * wait for), *rd the read end (to close). FD 3 comes from another number;
 * any other FD is given from the same number in the caller. */
static rf_status port_case(const char *mode, const char *line, int fd,
                           const char *prefix, int64_t timeout_ms,
                           uint16_t *port, int *rd, rf_child *c)
{
    int fds[2];
    CHECK(pipe2(fds, O_CLOEXEC) == 0, "pipe2");
    *rd = fcntl(fds[0], F_DUPFD_CLOEXEC, 20); /* clear of the child's FD */
    close(fds[0]);
    int w = fds[1];
    if (fd != 3) {
        w = fcntl(fds[1], F_DUPFD_CLOEXEC, fd);
        CHECK(w == fd, "fd %d is free", fd);
        close(fds[1]);
    }
    char fdarg[16], rdarg[16];
    snprintf(fdarg, sizeof fdarg, "%d", fd);
    snprintf(rdarg, sizeof rdarg, "%d", *rd);
    const char *argv[8];
    rf_spawn_opts o =
        self_opts(argv, (const char *[]){mode, line, fdarg, rdarg, NULL});
    o.keep = &(rf_spawn_fd){w, fd};
    o.nkeep = 1;
    rf_status s = rf_spawn(&o, c);
    CHECK(s == RF_OK, "spawn %s", mode);
    close(w); /* the child's copy is the only writer now */
    return rf_spawn_read_port(*rd, prefix, timeout_ms, port);
}

static void test_ready_fd(void)
{
    rf_child c;
    uint16_t port = 0;
    int rd;
    rf_status s =
        port_case("port", "port 4242\n", 3, "port ", WAIT_MS, &port, &rd, &c);
    CHECK(s == RF_OK && port == 4242, "port line: %s, %u", rf_status_string(s),
          port);
    CHECK(exit_status(&c) == 0, "port child (its fd 3, not the read end)");
    close(rd);

    /* Nothing after the line is consumed; fd 9 given from fd 9. */
    s = port_case("port", "4242\nrest", 9, NULL, WAIT_MS, &port, &rd, &c);
    CHECK(s == RF_OK && port == 4242, "bare number: %s", rf_status_string(s));
    char rest[16];
    read_all(rd, rest, sizeof rest);
    CHECK(strcmp(rest, "rest") == 0, "after the line: '%s'", rest);
    CHECK(exit_status(&c) == 0, "bare number child");
    close(rd);

    const char *bad[] = {"hello\n", "70000\n", "0\n", "port 12x\n", "12\n"};
    for (int i = 0; i < 5; i++) {
        s = port_case("port", bad[i], 3, i < 3 ? NULL : "port ", WAIT_MS, &port,
                      &rd, &c);
        CHECK(s == RF_ERR_CORRUPT, "'%s': %s", bad[i], rf_status_string(s));
        exit_status(&c);
        close(rd);
    }

    /* The child exits without writing: end of file. */
    s = port_case("exit", "1", 3, "", WAIT_MS, &port, &rd, &c);
    CHECK(s == RF_ERR_DISCONNECTED, "closed: %s", rf_status_string(s));
    CHECK(exit_status(&c) == 1, "exit 1 child");
    close(rd);

    /* The child writes nothing for a while: timeout. */
    int64_t t0 = rf_now_ms();
    s = port_case("sleep", "5000", 3, NULL, 200, &port, &rd, &c);
    int64_t took = rf_now_ms() - t0;
    CHECK(s == RF_ERR_TIMEOUT, "silent: %s", rf_status_string(s));
    CHECK(took >= 200 && took < WAIT_MS, "timeout after %lld ms",
          (long long)took);
    CHECK(rf_child_stop(&c, SIGKILL, WAIT_MS, NULL, NULL) == RF_OK, "stop");
    close(rd);
}

static void test_wait_and_stop(void)
{
    sigset_t empty, term;
    sigemptyset(&empty);
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    const char *argv[8];
    rf_spawn_opts o = self_opts(argv, (const char *[]){"sleep", "30000", NULL});
    o.sigmask = &empty;
    o.sigdefault = &term;
    rf_child c;
    CHECK(rf_spawn(&o, &c) == RF_OK, "spawn sleep");
    int64_t t0 = rf_now_ms();
    rf_status s = rf_child_wait(&c, 200, NULL);
    int64_t took = rf_now_ms() - t0;
    CHECK(s == RF_ERR_TIMEOUT, "wait: %s", rf_status_string(s));
    CHECK(took >= 200 && took < WAIT_MS, "wait took %lld ms", (long long)took);
    CHECK(rf_child_wait(&c, 0, NULL) == RF_ERR_TIMEOUT, "just look");
    int st = 0;
    bool killed = true;
    s = rf_child_stop(&c, SIGTERM, WAIT_MS, &st, &killed);
    CHECK(s == RF_OK && !killed && WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM,
          "SIGTERM stops it: %s, killed %d, status 0x%x", rf_status_string(s),
          killed, (unsigned)st);

    /* A child ignoring SIGTERM is killed after the grace. */
    int fds[2];
    CHECK(pipe2(fds, O_CLOEXEC) == 0, "pipe2");
    o = self_opts(argv, (const char *[]){"ignore-term", NULL});
    o.keep = &(rf_spawn_fd){fds[1], 3};
    o.nkeep = 1;
    CHECK(rf_spawn(&o, &c) == RF_OK, "spawn ignore-term");
    close(fds[1]);
    uint16_t ready = 0;
    CHECK(rf_spawn_read_port(fds[0], NULL, WAIT_MS, &ready) == RF_OK &&
              ready == 1,
          "ignore-term ready");
    close(fds[0]);
    t0 = rf_now_ms();
    s = rf_child_stop(&c, SIGTERM, 300, &st, &killed);
    took = rf_now_ms() - t0;
    CHECK(s == RF_OK && killed && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
          "SIGKILL after the grace: %s, killed %d, status 0x%x",
          rf_status_string(s), killed, (unsigned)st);
    CHECK(took >= 300 && took < WAIT_MS, "stop took %lld ms", (long long)took);

    /* sig 0: only wait, here for a child that exits by itself. */
    o = self_opts(argv, (const char *[]){"exit", "5", NULL});
    CHECK(rf_spawn(&o, &c) == RF_OK, "spawn exit 5");
    s = rf_child_stop(&c, 0, WAIT_MS, &st, &killed);
    CHECK(s == RF_OK && !killed && WIFEXITED(st) && WEXITSTATUS(st) == 5,
          "wait only: %s", rf_status_string(s));
    check_no_child_left("wait and stop");
}

/* The grandchild of a "middle" child, reparented to this process (a child
 * subreaper) once the middle is gone. */
static rf_child grandchild_of(rf_child *middle)
{
    char line[64];
    read_line(middle->stdio_fd[1], line, sizeof line);
    int pid = 0;
    CHECK(sscanf(line, "grandchild %d", &pid) == 1 && pid > 0, "line '%s'",
          line);
    return (rf_child){.pid = pid, .stdio_fd = {-1, -1, -1}};
}

static void test_process_group(void)
{
    const char *argv[8];
    rf_spawn_opts o = self_opts(argv, (const char *[]){"pgid", NULL});
    o.new_pgroup = true;
    rf_child c;
    char out[64];
    CHECK(run_output(&o, out, sizeof out, &c) == 0 && c.pgroup, "pgid child");
    int pid = 0, pgid = 0;
    CHECK(sscanf(out, "%d %d", &pid, &pgid) == 2 && pid == c.pid &&
              pgid == c.pid,
          "pid/pgid '%s' for child %d", out, (int)c.pid);
    CHECK(getpgid(0) != c.pid, "the caller stays in its group");

    /* Stopping a group leader signals its whole group. */
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    o = self_opts(argv, (const char *[]){"middle", "keep", NULL});
    o.new_pgroup = true;
    o.stdio[1] = RF_SPAWN_PIPE;
    o.sigdefault = &term;
    CHECK(rf_spawn(&o, &c) == RF_OK, "spawn middle");
    rf_child g = grandchild_of(&c);
    int st = 0;
    CHECK(rf_child_stop(&c, SIGTERM, WAIT_MS, &st, NULL) == RF_OK &&
              WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM,
          "middle stopped");
    CHECK(rf_child_wait(&g, WAIT_MS, &st) == RF_OK && WIFSIGNALED(st) &&
              WTERMSIG(st) == SIGTERM,
          "the grandchild got the group's SIGTERM (status 0x%x)", (unsigned)st);
    rf_child_close(&c);
    check_no_child_left("process group");
}

static void test_die_with_parent(void)
{
    const char *argv[8];
    for (int die = 1; die >= 0; die--) {
        rf_spawn_opts o = self_opts(
            argv, (const char *[]){"middle", die ? "die" : "keep", NULL});
        o.stdio[1] = RF_SPAWN_PIPE;
        rf_child m;
        CHECK(rf_spawn(&o, &m) == RF_OK, "spawn middle");
        rf_child g = grandchild_of(&m);
        int st = 0;
        CHECK(kill(m.pid, SIGKILL) == 0, "kill the middle");
        CHECK(rf_child_wait(&m, WAIT_MS, &st) == RF_OK && WIFSIGNALED(st),
              "middle killed");
        rf_child_close(&m);
        if (die) {
            rf_status s = rf_child_wait(&g, WAIT_MS, &st);
            CHECK(s == RF_OK && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
                  "die_with_parent: grandchild %s, status 0x%x",
                  rf_status_string(s), (unsigned)st);
            if (s != RF_OK)
                rf_child_stop(&g, SIGKILL, WAIT_MS, NULL, NULL);
        } else {
            CHECK(rf_child_wait(&g, 300, NULL) == RF_ERR_TIMEOUT,
                  "without die_with_parent the grandchild lives on");
            CHECK(rf_child_stop(&g, SIGKILL, WAIT_MS, NULL, NULL) == RF_OK,
                  "stop the grandchild");
        }
    }
    check_no_child_left("die with parent");
}

static void test_env(void)
{
    setenv("RF_SPAWN_T_KEEP", "kept", 1);
    setenv("RF_SPAWN_T_SET", "old", 1);
    setenv("RF_SPAWN_T_DROP", "dropped", 1);
    const char *argv[8];
    rf_spawn_opts o = self_opts(argv, (const char *[]){"env", NULL});
    o.env_set =
        (const char *[]){"RF_SPAWN_T_SET=new", "RF_SPAWN_T_ADD=added", NULL};
    o.env_unset = (const char *[]){"RF_SPAWN_T_DROP", "RF_SPAWN_T_NONE", NULL};
    rf_child c;
    char out[256];
    CHECK(run_output(&o, out, sizeof out, &c) == 0, "env child");
    CHECK(strcmp(out, "RF_SPAWN_T_KEEP=kept\n"
                      "RF_SPAWN_T_SET=new\n"
                      "RF_SPAWN_T_ADD=added\n"
                      "RF_SPAWN_T_DROP=(unset)\n"
                      "set_entries=1\n") == 0,
          "child environment:\n%s", out);
    CHECK(strcmp(getenv("RF_SPAWN_T_SET"), "old") == 0 &&
              getenv("RF_SPAWN_T_DROP"),
          "the caller's environment is unchanged");

    /* Without overrides the child gets the caller's environment. */
    o.env_set = o.env_unset = NULL;
    CHECK(run_output(&o, out, sizeof out, &c) == 0, "env child");
    CHECK(strstr(out, "RF_SPAWN_T_SET=old\n") &&
              strstr(out, "RF_SPAWN_T_DROP=dropped\n"),
          "inherited:\n%s", out);
}

static void on_usr2(int sig)
{
    (void)sig;
}

static void test_signal_state(void)
{
    sigset_t usr1, old, empty, pipeset;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigemptyset(&empty);
    sigemptyset(&pipeset);
    sigaddset(&pipeset, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &usr1, &old);
    struct sigaction ign = {.sa_handler = SIG_IGN}, h = {.sa_handler = on_usr2};
    struct sigaction old_pipe, old_usr2;
    sigaction(SIGPIPE, &ign, &old_pipe);
    sigaction(SIGUSR2, &h, &old_usr2);

    const char *argv[8];
    rf_spawn_opts o = self_opts(argv, (const char *[]){"sigstate", NULL});
    rf_child c;
    char out[128];
    CHECK(run_output(&o, out, sizeof out, &c) == 0, "sigstate child");
    CHECK(strcmp(out, "usr1_blocked=1 pipe=ign usr2=dfl\n") == 0,
          "inherited state: %s", out);

    o.sigmask = &empty;
    o.sigdefault = &pipeset;
    CHECK(run_output(&o, out, sizeof out, &c) == 0, "sigstate child");
    CHECK(strcmp(out, "usr1_blocked=0 pipe=dfl usr2=dfl\n") == 0,
          "restored state: %s", out);

    sigset_t now;
    pthread_sigmask(SIG_SETMASK, NULL, &now);
    CHECK(sigismember(&now, SIGUSR1) == 1 && sigismember(&now, SIGTERM) == 0,
          "the caller's mask is back as it was");
    sigaction(SIGUSR2, &old_usr2, NULL);
    sigaction(SIGPIPE, &old_pipe, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Two threads spawning at once: each gets its own children's statuses and
 * output (no shared state in the helper; TSan checks the rest). */
static void *spawn_loop(void *arg)
{
    const char *code = arg;
    for (int i = 0; i < 10; i++) {
        const char *argv[8];
        rf_spawn_opts o = self_opts(argv, (const char *[]){"exit", code, NULL});
        rf_child c;
        char out[8];
        CHECK(run_output(&o, out, sizeof out, &c) == atoi(code),
              "thread child %s", code);
    }
    return NULL;
}

static void test_threads(void)
{
    pthread_t t[2];
    char *codes[2] = {"11", "12"};
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&t[i], NULL, spawn_loop, codes[i]) == 0,
              "pthread_create");
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    check_no_child_left("threads");
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "--child") == 0)
        return run_child(argv + 2);
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* Orphaned grandchildren come back here, to be waited for. */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
        perror(PROG ": PR_SET_CHILD_SUBREAPER");
        return 1;
    }
    test_exit_status();
    test_exec_failure();
    test_invalid_options();
    test_pipes();
    test_ready_fd();
    test_wait_and_stop();
    test_process_group();
    test_die_with_parent();
    test_env();
    test_signal_state();
    test_threads();
    printf("%s: all checks passed\n", PROG);
    return 0;
}
