/* bench/tcp_rr.c: rf-bench-tcp-rr, the plain TCP reference of bench/sock-loss:
 * a training step's message pattern replayed over one TCP connection on
 * loopback between two processes, with nothing of rdmaflow in between. A step
 * is a list of dependent exchanges REQ:REPLY (the client sends REQ bytes,
 * the server answers with REPLY bytes once it has them all, and the client
 * starts the next exchange once it has the answer), which is what a
 * parameter-server worker does: push the gradients (a large request, small
 * acknowledgements), bump the global step (small both ways), pull the
 * variables (small requests, a large reply). Prints one JSON object: steps,
 * seconds, per-step median / p99 / max and the exchanged bytes per step.
 * --rto-min-us and --delack-max-us set TCP_RTO_MIN_US / TCP_DELACK_MAX_US on
 * both ends (Linux >= 6.15), as the sock provider does (RF_SOCK_RTO_MIN_US).
 * Usage: rf-bench-tcp-rr [--steps N] [--pattern REQ:REPLY[,REQ:REPLY...]]
 *                        [--rto-min-us US] [--delack-max-us US] */
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench_stats.h"
#include "bench_tcp.h"
#include "rdmaflow/clock.h"
#include "rdmaflow/spawn.h"
#include "rdmaflow/status.h"

#define WHO       "rf-bench-tcp-rr"
#define MAX_XCHG  16
#define MAX_BYTES (64u << 20)
#ifndef TCP_RTO_MIN_US
#define TCP_RTO_MIN_US 45
#endif
#ifndef TCP_DELACK_MAX_US
#define TCP_DELACK_MAX_US 46
#endif

typedef struct xchg {
    uint32_t req, reply;
} xchg;

static int usage(const char *why)
{
    fprintf(stderr,
            WHO ": %s\nusage: " WHO " [--steps N] [--pattern "
                "REQ:REPLY[,REQ:REPLY...]] [--rto-min-us US] "
                "[--delack-max-us US]\n",
            why);
    return 2;
}

/* Moves exactly len bytes (blocking). */
static int xfer(int fd, unsigned char *p, size_t len, int send_it)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = send_it ? send(fd, p + done, len - done, MSG_NOSIGNAL)
                            : recv(fd, p + done, len - done, 0);
        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        return -1;
    }
    return 0;
}

/* TCP_NODELAY, and the two floors when asked; -1 with a message if the
 * kernel refuses one (less than two ticks, more than 200 ms, or a kernel
 * before Linux 6.15). */
static int tune(int fd, long rto_min_us, long delack_max_us)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    const struct {
        const char *name;
        int opt;
        long v;
    } o[] = {{"TCP_RTO_MIN_US", TCP_RTO_MIN_US, rto_min_us},
             {"TCP_DELACK_MAX_US", TCP_DELACK_MAX_US, delack_max_us}};
    for (int i = 0; i < 2; i++) {
        int v = (int)o[i].v;
        if (v > 0 && setsockopt(fd, IPPROTO_TCP, o[i].opt, &v, sizeof v)) {
            fprintf(stderr,
                    WHO ": %s %d: %s (the kernel takes two ticks to 200 ms, "
                        "from Linux 6.15)\n",
                    o[i].name, v, strerror(errno));
            return -1;
        }
    }
    return 0;
}

/* Parses "REQ:REPLY,..." into x; returns the count or -1. */
static int parse_pattern(const char *s, xchg *x)
{
    int n = 0;
    while (*s) {
        char *end;
        unsigned long a = strtoul(s, &end, 10);
        if (end == s || *end != ':' || n == MAX_XCHG)
            return -1;
        s = end + 1;
        unsigned long b = strtoul(s, &end, 10);
        if (end == s || (*end && *end != ','))
            return -1;
        if (a < 8 || b < 1 || a > MAX_BYTES || b > MAX_BYTES)
            return -1;
        x[n++] = (xchg){(uint32_t)a, (uint32_t)b};
        s = *end ? end + 1 : end;
    }
    return n;
}

/* The server: each request starts with its own length and the reply's
 * (two little-endian u32), the rest is payload. */
static int serve(int ready_fd, long rto_min_us, long delack_max_us)
{
    int fd = bench_tcp_accept_one(WHO, ready_fd);
    if (fd < 0 || tune(fd, rto_min_us, delack_max_us))
        return 1;
    unsigned char *buf = calloc(MAX_BYTES, 1);
    if (!buf)
        return 1;
    uint32_t h[2];
    while (xfer(fd, (unsigned char *)h, sizeof h, 0) == 0) {
        uint32_t req = le32toh(h[0]), reply = le32toh(h[1]);
        if (req < sizeof h || req > MAX_BYTES || reply > MAX_BYTES ||
            xfer(fd, buf, req - sizeof h, 0) || xfer(fd, buf, reply, 1))
            break;
    }
    free(buf);
    close(fd);
    return 0;
}

int main(int argc, char **argv)
{
    long steps = 300, rto_min_us = 0, delack_max_us = 0;
    int server = 0, ready_fd = -1;
    xchg x[MAX_XCHG];
    int nx = parse_pattern("940824:240,40:40,240:940824", x);
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!strcmp(argv[i], "--serve")) {
            server = 1;
            continue;
        }
        if (!v)
            return usage("unknown or incomplete option");
        if (!strcmp(argv[i], "--ready-fd")) {
            ready_fd = (int)strtol(v, &end, 10);
        } else if (!strcmp(argv[i], "--steps")) {
            steps = strtol(v, &end, 10);
            if (*end || steps < BENCH_MIN_ITERS || steps > 100000000)
                return usage("--steps: not a number in [5, 100000000]");
        } else if (!strcmp(argv[i], "--pattern")) {
            nx = parse_pattern(v, x);
            if (nx <= 0)
                return usage(
                    "--pattern: not REQ:REPLY[,...] (at most 16 "
                    "exchanges, REQ >= 8, 1 <= REPLY, each <= 64 MiB)");
            end = "";
        } else if (!strcmp(argv[i], "--rto-min-us")) {
            rto_min_us = strtol(v, &end, 10);
            if (*end || rto_min_us < 0 || rto_min_us > 1000000)
                return usage("--rto-min-us: not a number in [0, 1000000]");
        } else if (!strcmp(argv[i], "--delack-max-us")) {
            delack_max_us = strtol(v, &end, 10);
            if (*end || delack_max_us < 0 || delack_max_us > 1000000)
                return usage("--delack-max-us: not a number in [0, 1000000]");
        } else {
            return usage("unknown or incomplete option");
        }
        if (*end)
            return usage("not a number");
        i++;
    }
    if (server)
        return serve(ready_fd >= 0 ? ready_fd : 1, rto_min_us, delack_max_us);

    char r[24], d[24];
    snprintf(r, sizeof r, "%ld", rto_min_us);
    snprintf(d, sizeof d, "%ld", delack_max_us);
    const char *cargv[] = {
        WHO, "--serve", "--ready-fd", "3", "--rto-min-us", r, "--delack-max-us",
        d,   NULL};
    rf_child child;
    int fd = bench_tcp_spawn_connect(WHO, cargv, &child);
    if (fd < 0)
        return 1;
    if (tune(fd, rto_min_us, delack_max_us)) {
        close(fd);
        rf_child_stop(&child, 0, 10000, &(int){0}, &(bool){false});
        return 1;
    }
    uint64_t *t = calloc((size_t)steps + 1, sizeof *t);
    unsigned char *buf = calloc(MAX_BYTES, 1);
    int rc = t && buf ? 0 : 1;
    uint64_t bytes = 0;
    for (int k = 0; k < nx; k++)
        bytes += x[k].req + x[k].reply;
    uint64_t t0 = rf_now_ns();
    for (long i = 0; i < steps && rc == 0; i++) {
        t[i] = rf_now_ns();
        for (int k = 0; k < nx && rc == 0; k++) {
            uint32_t h[2] = {htole32(x[k].req), htole32(x[k].reply)};
            memcpy(buf, h, sizeof h);
            if (xfer(fd, buf, x[k].req, 1) || xfer(fd, buf, x[k].reply, 0)) {
                fprintf(stderr, WHO ": step %ld exchange %d failed: %s\n", i, k,
                        strerror(errno));
                rc = 1;
            }
        }
    }
    t[steps] = rf_now_ns();
    close(fd);
    int status = 0;
    bool killed = false;
    rf_child_stop(&child, 0, 10000, &status, &killed);
    bench_lat_stats s;
    if (rc == 0 && bench_lat_compute(t, (uint32_t)steps + 1, 1, 1.0, &s) == 0)
        printf("{\"test\":\"tcp_rr\",\"steps\":%ld,\"exchanges\":%d,"
               "\"bytes_per_step\":%" PRIu64 ",\"seconds\":%.3f,"
               "\"step_median_ms\":%.3f,\"step_p99_ms\":%.3f,"
               "\"step_max_ms\":%.3f}\n",
               steps, nx, bytes, (double)(t[steps] - t0) / 1e9,
               s.t_typical / 1e3, s.p99 / 1e3, s.t_max / 1e3);
    else
        rc = 1;
    free(buf);
    free(t);
    return rc;
}
