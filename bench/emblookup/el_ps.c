/* bench/emblookup/el_ps.c: the ps task role of rf-bench-emb and the
 * worker's side of it (el_ps.h). */
#include "el_ps.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rdmaflow/clock.h"
#include "rdmaflow/fabric.h"
#include "rdmaflow/ps.h"

static void print_counters(rf_ps_server *s)
{
    rf_ps_server_counters k;
    rf_ps_server_get_counters(s, &k);
    printf("COUNTERS gather=%" PRIu64 " gather_rows=%" PRIu64
           " gather_refused=%" PRIu64 " sparse=%" PRIu64 " sparse_rows=%" PRIu64
           "\n",
           k.gather_requests, k.gather_rows, k.gather_refused, k.sparse_applies,
           k.sparse_rows);
    fflush(stdout);
}

/* Answers "counters" lines on stdin until it ends. */
static void *query_loop(void *arg)
{
    rf_ps_server *s = arg;
    char line[64];
    while (fgets(line, sizeof line, stdin))
        if (strncmp(line, "counters", 8) == 0)
            print_counters(s);
    return NULL;
}

int el_ps_serve(const el_opts *o)
{
    rf_fabric_attr attr = {.bind_addr = o->host};
    rf_fabric *f = NULL;
    rf_ps_server *s = NULL;
    rf_status st = rf_fabric_open(o->provider, &attr, &f);
    if (st == RF_OK) {
        rf_ps_server_options so = {.task_index = o->ps_index};
        st = rf_ps_server_start(f, o->host, 0, &so, &s);
    }
    if (st != RF_OK) {
        fprintf(stderr, "rf-bench-emb: ps task %d: %s\n", o->ps_index,
                rf_error_message());
        if (f)
            rf_fabric_close(f);
        return 1;
    }
    printf("port %u\n", rf_ps_server_port(s));
    fflush(stdout);
    pthread_t t;
    int rc = 0;
    if (pthread_create(&t, NULL, query_loop, s) != 0) {
        fprintf(stderr, "rf-bench-emb: ps task %d: no query thread\n",
                o->ps_index);
        rc = 1;
    } else {
        pthread_detach(t);
        st = rf_ps_server_join(s);
        if (st != RF_OK) {
            fprintf(stderr, "rf-bench-emb: ps task %d: %s\n", o->ps_index,
                    rf_error_message());
            rc = 1;
        }
    }
    rf_ps_server_stop(s);
    rf_fabric_close(f);
    return rc;
}

int el_ps_spawn(const el_opts *o, int index, rf_child *child, uint16_t *port)
{
    char idx[16];
    snprintf(idx, sizeof idx, "%d", index);
    const char *argv[] = {
        "rf-bench-emb", "--serve-ps", "--index", idx, "--provider",
        o->provider,    "--host",     o->host,   NULL};
    rf_spawn_opts so = {
        .argv = argv,
        .path = RF_SPAWN_SELF,
        .die_with_parent = true,
        .stdio = {RF_SPAWN_PIPE, RF_SPAWN_PIPE, RF_SPAWN_INHERIT}};
    rf_status st = rf_spawn(&so, child);
    if (st != RF_OK) {
        fprintf(stderr, "rf-bench-emb: cannot start ps task %d: %s\n", index,
                rf_error_message());
        return -1;
    }
    st = rf_spawn_read_port(child->stdio_fd[1], "port ",
                            (int64_t)o->timeout_s * 1000, port);
    if (st != RF_OK) {
        fprintf(stderr,
                "rf-bench-emb: ps task %d did not start listening: %s\n", index,
                rf_error_message());
        el_ps_reap(child, true, 5);
        return -1;
    }
    return 0;
}

/* One line from fd (byte by byte) within the deadline. */
static int read_line(int fd, char *buf, size_t cap, long long deadline_ms)
{
    size_t n = 0;
    while (n + 1 < cap) {
        long long left = deadline_ms - rf_now_ms();
        if (left <= 0)
            return -1;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, (int)left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        char ch;
        ssize_t k = read(fd, &ch, 1);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        if (ch == '\n') {
            buf[n] = 0;
            return 0;
        }
        buf[n++] = ch;
    }
    return -1;
}

int el_ps_counters_get(rf_child *child, int timeout_s, el_ps_counters *out)
{
    static const char q[] = "counters\n";
    if (write(child->stdio_fd[0], q, sizeof q - 1) != (ssize_t)(sizeof q - 1)) {
        fprintf(stderr, "rf-bench-emb: asking a ps task: %s\n",
                strerror(errno));
        return -1;
    }
    char line[256];
    if (read_line(child->stdio_fd[1], line, sizeof line,
                  rf_now_ms() + 1000ll * timeout_s) != 0 ||
        sscanf(line,
               "COUNTERS gather=%" SCNu64 " gather_rows=%" SCNu64
               " gather_refused=%" SCNu64 " sparse=%" SCNu64
               " sparse_rows=%" SCNu64,
               &out->gather, &out->gather_rows, &out->gather_refused,
               &out->sparse, &out->sparse_rows) != 5) {
        fprintf(stderr, "rf-bench-emb: a ps task did not report its "
                        "counters\n");
        return -1;
    }
    return 0;
}

/* The sum of the first field of /proc/PID/task/<tid>/schedstat (ns on a
 * CPU, every thread alive now; a thread that exited is not counted, and the
 * ps's threads live as long as it): 0 when there is none. */
static uint64_t schedstat_ns(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return 0;
    uint64_t sum = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char p[320];
        snprintf(p, sizeof p, "/proc/%d/task/%s/schedstat", (int)pid,
                 e->d_name);
        FILE *f = fopen(p, "r");
        unsigned long long ns = 0;
        if (f && fscanf(f, "%llu", &ns) == 1)
            sum += ns;
        if (f)
            fclose(f);
    }
    closedir(d);
    return sum;
}

uint64_t el_ps_cpu_us(const rf_child *child)
{
    uint64_t ns = schedstat_ns(child->pid);
    if (ns)
        return ns / 1000;
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)child->pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    /* fields after the command's closing parenthesis: 3 state ... 14
     * utime 15 stime (clock ticks) */
    const char *p = strrchr(buf, ')');
    unsigned long long ut = 0, stt = 0;
    if (!p ||
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
               &ut, &stt) != 2)
        return 0;
    long hz = sysconf(_SC_CLK_TCK);
    return hz > 0 ? (ut + stt) * 1000000ull / (unsigned long long)hz : 0;
}

uint64_t el_ps_minflt(const rf_child *child)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)child->pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')');
    unsigned long long minflt = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %llu", &minflt) != 1)
        return 0;
    return minflt;
}

int el_ps_reap(rf_child *child, bool terminate, int timeout_s)
{
    int status = 0;
    bool killed = false;
    rf_child_close(child);
    rf_status st = rf_child_stop(child, terminate ? SIGTERM : 0,
                                 (int64_t)timeout_s * 1000, &status, &killed);
    if (st != RF_OK) {
        fprintf(stderr, "rf-bench-emb: %s\n", rf_error_message());
        return -1;
    }
    return !killed && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
