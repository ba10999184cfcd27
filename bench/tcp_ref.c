/* bench/tcp_ref.c: rf-bench-tcp-ref, the TCP reference of bench/sock-vs-tcp:
 * a plain TCP ping-pong of SIZE bytes (default 8) on loopback between two
 * processes, the least a sock provider round trip can cost. The server (this
 * program again, --serve) blocks in read and answers each message; the
 * client writes a message and reads the answer, blocking (--poll block, as
 * rf_cq_wait ends up doing) or spinning on non-blocking reads (--poll busy,
 * as rf-bench --poll busy does). Round trips get rf-bench's statistics
 * (bench_stats.c: perftest's t_typical and t_avg), printed as one JSON
 * object: {"t_typical_usec":..., "t_avg_usec":..., ...}.
 * Usage: rf-bench-tcp-ref [--iters N] [--size S] [--poll block|busy] */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_stats.h"
#include "bench_tcp.h"
#include "rdmaflow/clock.h"
#include "rdmaflow/spawn.h"
#include "rdmaflow/status.h"

#define WHO      "rf-bench-tcp-ref"
#define MAX_SIZE 65536

static int usage(const char *why)
{
    fprintf(stderr,
            WHO ": %s\nusage: " WHO " [--iters N] [--size BYTES] "
                "[--poll block|busy]\n",
            why);
    return 2;
}

/* Moves exactly len bytes; busy: spin on non-blocking calls. */
static int xfer(int fd, unsigned char *p, size_t len, int send_it, int busy)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n =
            send_it ? send(fd, p + done, len - done, MSG_NOSIGNAL)
                    : recv(fd, p + done, len - done, busy ? MSG_DONTWAIT : 0);
        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if (n == 0)
            return -1; /* EOF */
        if (errno == EINTR || (busy && errno == EAGAIN))
            continue;
        return -1;
    }
    return 0;
}

static int serve(int ready_fd, size_t size)
{
    int fd = bench_tcp_accept_one(WHO, ready_fd);
    if (fd < 0)
        return 1;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    unsigned char buf[MAX_SIZE];
    while (xfer(fd, buf, size, 0, 0) == 0)
        if (xfer(fd, buf, size, 1, 0) != 0)
            break;
    close(fd);
    return 0;
}

int main(int argc, char **argv)
{
    long iters = 10000, size = 8;
    int busy = 0, server = 0, ready_fd = -1;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!strcmp(argv[i], "--serve")) {
            server = 1;
        } else if (!strcmp(argv[i], "--ready-fd") && v) {
            ready_fd = (int)strtol(v, &end, 10);
            i++;
        } else if (!strcmp(argv[i], "--iters") && v) {
            iters = strtol(v, &end, 10);
            if (*end || iters < BENCH_MIN_ITERS || iters > 100000000)
                return usage("--iters: not a number in [5, 100000000]");
            i++;
        } else if (!strcmp(argv[i], "--size") && v) {
            size = strtol(v, &end, 10);
            if (*end || size < 1 || size > MAX_SIZE)
                return usage("--size: not a number in [1, 65536]");
            i++;
        } else if (!strcmp(argv[i], "--poll") && v) {
            if (strcmp(v, "busy") && strcmp(v, "block"))
                return usage("--poll: not block or busy");
            busy = !strcmp(v, "busy");
            i++;
        } else {
            return usage("unknown or incomplete option");
        }
    }
    if (server)
        return serve(ready_fd >= 0 ? ready_fd : 1, (size_t)size);

    char sz[16];
    snprintf(sz, sizeof sz, "%ld", size);
    const char *cargv[] = {WHO,      "--serve", "--ready-fd", "3",
                           "--size", sz,        NULL};
    rf_child child;
    int fd = bench_tcp_spawn_connect(WHO, cargv, &child);
    if (fd < 0)
        return 1;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    uint64_t *t = calloc((size_t)iters, sizeof *t);
    unsigned char buf[MAX_SIZE];
    memset(buf, 0x5a, sizeof buf);
    int rc = t ? 0 : 1;
    for (long i = 0; i < iters && rc == 0; i++) {
        t[i] = rf_now_ns();
        if (xfer(fd, buf, (size_t)size, 1, 0) ||
            xfer(fd, buf, (size_t)size, 0, busy)) {
            fprintf(stderr, WHO ": ping-pong %ld failed: %s\n", i,
                    strerror(errno));
            rc = 1;
        }
    }
    close(fd);
    int status = 0;
    bool killed = false;
    rf_child_stop(&child, 0, 10000, &status, &killed);
    bench_lat_stats s;
    if (rc == 0 && bench_lat_compute(t, (uint32_t)iters, 1, 1.0, &s) == 0)
        printf("{\"test\":\"tcp_pingpong\",\"size\":%ld,\"iters\":%ld,"
               "\"poll\":\"%s\",\"t_min_usec\":%.3f,\"t_typical_usec\":%.3f,"
               "\"t_avg_usec\":%.3f,\"t_p99_usec\":%.3f}\n",
               size, iters, busy ? "busy" : "block", s.t_min, s.t_typical,
               s.t_avg, s.p99);
    else
        rc = 1;
    free(t);
    return rc;
}
