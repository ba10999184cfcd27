/* bench/emblookup/el_ps.c: the ps task role of rf-bench-emb and the
 * worker's side of it (el_ps.h). */
#include "el_ps.h"

#include "bench_ps_task.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rdmaflow/clock.h"
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

/* Starts the query thread once the server listens. */
static int start_queries(rf_ps_server *s, void *arg)
{
    const el_opts *o = arg;
    pthread_t t;
    if (pthread_create(&t, NULL, query_loop, s) != 0) {
        fprintf(stderr, "rf-bench-emb: ps task %d: no query thread\n",
                o->ps_index);
        return 1;
    }
    pthread_detach(t);
    return 0;
}

int el_ps_serve(const el_opts *o)
{
    /* The port and then the counters go up the stdout pipe. */
    return bench_ps_task_serve("rf-bench-emb", o->provider, o->host,
                               o->ps_index, STDOUT_FILENO, start_queries,
                               (void *)o);
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

uint64_t el_ps_cpu_us(const rf_child *child)
{
    return bench_proc_cpu_us(child->pid);
}

uint64_t el_ps_minflt(const rf_child *child)
{
    return bench_proc_minflt(child->pid);
}

int el_ps_reap(rf_child *child, bool terminate, int timeout_s)
{
    return bench_ps_task_reap("rf-bench-emb", child, terminate, timeout_s);
}
