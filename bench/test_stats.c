/* bench/test_stats.c: unit test of rf-bench's pure parts: perftest's
 * latency and bandwidth statistics on hand-computed data, the wire
 * encoding of hello/welcome/control messages, and command-line checks;
 * also the quantiles the other benchmark programs share (bench/common). A
 * test program, so it uses the tests' harness (tests/common/check.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_opts.h"
#include "bench_proto.h"
#include "bench_quantile.h"
#include "bench_stats.h"
#include "tests/common/check.h"

/* perftest's figures to 1e-6, relative and absolute. */
#define NEAR(a, b)                                                             \
    CHECK(fabs((a) - (b)) < 1e-6 * (1 + fabs(b)), "%s = %.9g, expected %.9g",  \
          #a, (double)(a), (double)(b))

/* Post times whose consecutive differences are deltas[] (ns). */
static void posts_from(const uint64_t *deltas, size_t n, uint64_t *t)
{
    t[0] = 1000000;
    for (size_t i = 0; i < n; i++)
        t[i + 1] = t[i] + deltas[i];
}

static void test_lat_odd(void)
{
    /* 10 iterations: 9 intervals, the 2 largest (100, 200 us) dropped. */
    const uint64_t d[9] = {5000,   1000, 4000, 2000,  3000,
                           100000, 7000, 6000, 200000};
    uint64_t t[10];
    posts_from(d, 9, t);
    bench_lat_stats s;
    CHECK_TRUE(bench_lat_compute(t, 10, 1, 1.0, &s) == 0);
    NEAR(s.t_min, 1.0);
    NEAR(s.t_max, 100.0); /* perftest: delta[measure_cnt], 2nd largest */
    NEAR(s.t_typical, 4.0);
    NEAR(s.t_avg, 4.0);
    NEAR(s.t_stdev, 2.0);
    NEAR(s.p99, 100.0); /* ceil(7 * 0.99) = 7 */
    NEAR(s.p99_9, 100.0);
    CHECK_TRUE(bench_lat_compute(t, 10, 2, 1.0, &s) ==
               0); /* ping-pong: RTT / 2 */
    NEAR(s.t_typical, 2.0);
    NEAR(s.t_min, 0.5);
    CHECK_TRUE(bench_lat_compute(t, 10, 1, 0.5, &s) == 0); /* 2 GHz ticks */
    NEAR(s.t_typical, 2.0);
}

static void test_lat_even(void)
{
    /* 11 iterations: 10 intervals, 8 kept, median of the middle two. */
    const uint64_t d[10] = {1000, 2000, 3000, 4000, 5000,
                            6000, 7000, 8000, 9000, 10000};
    uint64_t t[11];
    posts_from(d, 10, t);
    bench_lat_stats s;
    CHECK_TRUE(bench_lat_compute(t, 11, 1, 1.0, &s) == 0);
    NEAR(s.t_typical, 4.5);
    NEAR(s.t_avg, 4.5);
    NEAR(s.t_max, 9.0);
    NEAR(s.p99, 9.0); /* ceil(8 * 0.99) = 8 */
}

static void test_lat_1000(void)
{
    /* perftest's default run: 999 intervals, 997 kept; 99% is index 988. */
    static uint64_t t[1000];
    static uint64_t d[999];
    for (size_t i = 0; i < 999; i++)
        d[i] = 1000 * (i + 1);
    posts_from(d, 999, t);
    bench_lat_stats s;
    CHECK_TRUE(bench_lat_compute(t, 1000, 1, 1.0, &s) == 0);
    NEAR(s.t_min, 1.0);
    NEAR(s.t_typical, 499.0);                              /* d[498] */
    NEAR(s.t_max, 998.0);                                  /* d[997] */
    NEAR(s.p99, 989.0);                                    /* d[988] */
    NEAR(s.p99_9, 998.0);                                  /* d[997] */
    CHECK_TRUE(bench_lat_compute(t, 4, 1, 1.0, &s) == -1); /* below MIN_ITER */
}

static void test_bw(void)
{
    /* 4 x 1 MiB, every 2nd signaled: completions seen for 1 and 3. */
    const uint64_t posted[4] = {0, 1000, 2000, 3000};
    const uint64_t done[4] = {0, 5000, 0, 11000};
    bench_bw_stats s;
    CHECK_TRUE(bench_bw_compute(posted, done, 4, 2, 1 << 20, true, 1.0, &s) ==
               0);
    NEAR(s.bw_avg, 4.0 / 11e-6); /* 4 MiB in 11 us */
    NEAR(s.msg_rate, 4.0 / 11e-6 / 1e6);
    NEAR(s.bw_peak, 1.0 / 2.5e-6); /* best window: post 0 .. done 1 */
    CHECK_TRUE(bench_bw_compute(posted, done, 4, 2, 1 << 20, false, 1.0, &s) ==
               0);
    NEAR(s.bw_peak, 0.0);

    /* 5 operations with cq_mod 2: signaled 1, 3 and the last, 4. */
    const uint64_t p5[5] = {0, 100, 200, 300, 400};
    const uint64_t d5[5] = {0, 1000, 0, 2000, 2100};
    CHECK_TRUE(bench_bw_compute(p5, d5, 5, 2, 1000, true, 1.0, &s) == 0);
    NEAR(s.bw_peak, 1000.0 / 420e-9 / 1048576.0); /* (2100-0)/5 = 420 ns */
    CHECK_TRUE(bench_bw_compute(p5, d5, 5, 2, 1000, true, 2.0, &s) == 0);
    NEAR(s.bw_peak, 1000.0 / 840e-9 / 1048576.0); /* 2 ns per tick */
}

static void test_proto(void)
{
    bench_hello h = {.test = 7,
                     .iters = 5000,
                     .tx_depth = 128,
                     .max_size = 1 << 23,
                     .region = {0x7f0012345000ull, 1 << 24, 0xabcdef01u},
                     .qps = 300,
                     .qp_index = 299,
                     .token = 0x89abcdefu};
    unsigned char buf[BENCH_HELLO_SIZE];
    bench_hello_pack(&h, buf);
    CHECK_TRUE(BENCH_HELLO_SIZE <= RF_MAX_PRIVATE_DATA);
    bench_hello g;
    CHECK_TRUE(bench_hello_unpack(buf, sizeof buf, &g) == 0);
    CHECK_TRUE(g.test == 7 && g.iters == 5000 && g.tx_depth == 128 &&
               g.max_size == 1 << 23 && g.region.addr == h.region.addr &&
               g.region.len == h.region.len && g.region.rkey == h.region.rkey);
    CHECK_TRUE(g.qps == 300 && g.qp_index == 299 && g.token == 0x89abcdefu);
    CHECK_TRUE(bench_hello_unpack(buf, sizeof buf - 1, &g) == -1);
    buf[4] = 1; /* a version 1 hello (no endpoint count) is refused */
    CHECK_TRUE(bench_hello_unpack(buf, sizeof buf, &g) == -1);
    buf[4] = BENCH_PROTO_VERSION;
    buf[0] ^= 1;
    CHECK_TRUE(bench_hello_unpack(buf, sizeof buf, &g) == -1);

    bench_welcome w = {.status = BENCH_WELCOME_TOO_MANY,
                       .region = {0x1000, 4096, 42},
                       .max_qps = 16},
                  w2;
    unsigned char wb[BENCH_WELCOME_SIZE];
    bench_welcome_pack(&w, wb);
    CHECK_TRUE(BENCH_WELCOME_SIZE <= RF_MAX_PRIVATE_DATA);
    CHECK_TRUE(bench_welcome_unpack(wb, sizeof wb, &w2) == 0);
    CHECK_TRUE(w2.region.rkey == 42 && w2.region.addr == 0x1000);
    CHECK_TRUE(w2.status == BENCH_WELCOME_TOO_MANY && w2.max_qps == 16);
    CHECK_TRUE(bench_hello_unpack(wb, sizeof wb, &g) == -1); /* wrong magic */

    bench_msg m = {.type = BENCH_MSG_RESULT,
                   .status = BENCH_CHECK_DATA,
                   .iters = 9,
                   .size = 1ull << 33,
                   .value = 0x0123456789abcdefull},
              m2;
    unsigned char mb[BENCH_MSG_SIZE];
    bench_msg_pack(&m, mb);
    CHECK_TRUE(bench_msg_unpack(mb, sizeof mb, &m2) == 0);
    CHECK_TRUE(m2.type == m.type && m2.status == m.status && m2.iters == 9 &&
               m2.size == m.size && m2.value == m.value);
    mb[4] = 99;
    CHECK_TRUE(bench_msg_unpack(mb, sizeof mb, &m2) == -1);
}

static int parse(const char *line, bench_opts *o)
{
    static char copy[512]; /* the options point into it, as into argv */
    char *argv[32];
    int argc = 0;
    snprintf(copy, sizeof copy, "%s", line);
    for (char *tok = strtok(copy, " "); tok && argc < 31;
         tok = strtok(NULL, " "))
        argv[argc++] = tok;
    argv[argc] = NULL;
    return bench_opts_parse(argc, argv, o);
}

static void test_opts(void)
{
    bench_opts o;
    CHECK_TRUE(parse("rf-bench --loopback read_lat", &o) == 0);
    CHECK_TRUE(o.mode == BENCH_MODE_LOOPBACK && o.test == BENCH_READ_LAT);
    CHECK_TRUE(strcmp(o.host, "127.0.0.1") == 0);
    CHECK_TRUE(parse("rf-bench --connect 10.0.0.2:7000 -s 64K -n 10 write_bw",
                     &o) == 0);
    CHECK_TRUE(o.port == 7000 && o.size == 65536 && o.iters == 10);
    CHECK_TRUE(strcmp(o.host, "10.0.0.2") == 0);
    CHECK_TRUE(bench_opts_iters(&o) == 10);
    CHECK_TRUE(parse("rf-bench --connect [::1]:9 read_lat", &o) == 0);
    CHECK_TRUE(strcmp(o.host, "::1") == 0 && o.port == 9);
    CHECK_TRUE(parse("rf-bench --serve", &o) == 0);
    CHECK_TRUE(strcmp(o.host, "0.0.0.0") == 0 && o.port == BENCH_DEFAULT_PORT);

    uint64_t sizes[BENCH_MAX_SIZES];
    CHECK_TRUE(parse("rf-bench --loopback -a write_lat", &o) == 0);
    CHECK_TRUE(bench_opts_sizes(&o, sizes) == 23 && sizes[0] == 2 &&
               sizes[22] == 8u << 20);
    CHECK_TRUE(bench_opts_inline(&o) == BENCH_DEFAULT_INLINE);
    CHECK_TRUE(parse("rf-bench --loopback write_bw", &o) == 0);
    CHECK_TRUE(bench_opts_iters(&o) == 5000 && bench_opts_inline(&o) == 0);
    CHECK_TRUE(bench_opts_sizes(&o, sizes) == 1 && sizes[0] == 65536);

    fprintf(stderr, "(usage errors expected below)\n");
    CHECK_TRUE(parse("rf-bench --loopback", &o) == 2); /* no TEST */
    CHECK_TRUE(parse("rf-bench --loopback nosuch", &o) == 2);
    CHECK_TRUE(parse("rf-bench --loopback -n 4 read_lat", &o) == 2); /* < 5 */
    CHECK_TRUE(parse("rf-bench --loopback -s 12x read_lat", &o) == 2);
    CHECK_TRUE(parse("rf-bench --loopback -s 0 read_lat", &o) == 2);
    CHECK_TRUE(parse("rf-bench --loopback -a fetch_add_lat", &o) == 2);
    CHECK_TRUE(parse("rf-bench --loopback -t 4 read_lat", &o) == 2);
    CHECK_TRUE(parse("rf-bench --serve -s 8", &o) == 2);
    CHECK_TRUE(parse("rf-bench --serve --connect x read_lat", &o) == 2);
    CHECK_TRUE(parse("rf-bench --connect h:1 -p 2 read_lat", &o) == 2);
    CHECK_TRUE(parse("rf-bench --loopback --bogus read_lat", &o) == 2);
    CHECK_TRUE(parse("rf-bench --loopback read_lat -n", &o) == 2);
    CHECK_TRUE(parse("rf-bench read_lat", &o) == 2); /* no mode */
    CHECK_TRUE(parse("rf-bench --connect a --host b read_lat", &o) == 2);
    CHECK_TRUE(parse("rf-bench --loopback --timer sundial read_lat", &o) == 2);
    CHECK_TRUE(parse("rf-bench --loopback --timer clock read_lat", &o) == 0);
    CHECK_TRUE(!o.timer_tsc);
}

/* perftest's -d -i -x -D -f -q --report_gbits. */
static void test_perftest_opts(void)
{
    bench_opts o;
    unsetenv("RF_FABRIC");
    CHECK_TRUE(parse("rf-bench --loopback read_lat", &o) == 0);
    CHECK_TRUE(!o.ib_dev && o.ib_port == 0 && o.gid_index == -1);
    CHECK_TRUE(o.qps == 1 && o.duration_s == 0 && !o.report_gbits);
    CHECK_TRUE(parse("rf-bench --loopback --provider verbs -d rxe0 -i 1 -x 3 "
                     "read_lat",
                     &o) == 0);
    CHECK_TRUE(strcmp(o.ib_dev, "rxe0") == 0 && o.ib_port == 1 &&
               o.gid_index == 3);
    CHECK_TRUE(parse("rf-bench --connect h --ib-dev mlx5_0 --ib-port 2 "
                     "--gid-index 0 read_lat",
                     &o) == 0); /* auto: may use verbs */
    CHECK_TRUE(strcmp(o.ib_dev, "mlx5_0") == 0 && o.ib_port == 2 &&
               o.gid_index == 0);
    /* the flags reach the verbs provider through its variables, winning
     * over the environment */
    setenv("RF_VERBS_PORT", "9", 1);
    unsetenv("RF_VERBS_DEVICE");
    unsetenv("RF_VERBS_GID_INDEX");
    bench_opts_apply_env(&o);
    CHECK_TRUE(strcmp(getenv("RF_VERBS_DEVICE"), "mlx5_0") == 0);
    CHECK_TRUE(strcmp(getenv("RF_VERBS_PORT"), "2") == 0);
    CHECK_TRUE(strcmp(getenv("RF_VERBS_GID_INDEX"), "0") == 0);
    unsetenv("RF_VERBS_DEVICE");
    unsetenv("RF_VERBS_PORT");
    unsetenv("RF_VERBS_GID_INDEX");
    CHECK_TRUE(parse("rf-bench --serve -d rxe0", &o) == 0); /* its device */

    CHECK_TRUE(parse("rf-bench --loopback -D 5 write_bw", &o) == 0);
    CHECK_TRUE(o.duration_s == 5 && o.margin_s == 0);
    CHECK_TRUE(parse("rf-bench --loopback --duration 3 -f 1 read_lat", &o) ==
               0);
    CHECK_TRUE(o.duration_s == 3 && o.margin_s == 1);
    CHECK_TRUE(parse("rf-bench --loopback -D 3 --margin 1 fetch_add_bw", &o) ==
               0);
    CHECK_TRUE(parse("rf-bench --loopback --report_gbits read_bw", &o) == 0);
    CHECK_TRUE(o.report_gbits);
    CHECK_TRUE(parse("rf-bench --loopback -q 1 read_bw", &o) == 0);
    CHECK_TRUE(parse("rf-bench --loopback --qp 1 read_lat", &o) == 0);
    CHECK_TRUE(parse("rf-bench --loopback -q 4 -t 8 write_bw", &o) == 0);
    CHECK_TRUE(o.qps == 4 && o.tx_depth == 8);
    CHECK_TRUE(parse("rf-bench --loopback -q 1024 -n 5 read_bw", &o) == 0);
    CHECK_TRUE(parse("rf-bench --serve", &o) == 0);
    CHECK_TRUE(o.max_qps == BENCH_DEFAULT_MAX_QPS);
    CHECK_TRUE(parse("rf-bench --serve --max-qps 2", &o) == 0);
    CHECK_TRUE(o.max_qps == 2);
    CHECK_TRUE(parse("rf-bench --loopback -D 5 write_lat", &o) == 0);
    CHECK_TRUE(parse("rf-bench --loopback -D 3 -f 1 write_imm_lat", &o) == 0);
    CHECK_TRUE(o.duration_s == 3 && o.margin_s == 1);

    fprintf(stderr, "(usage errors expected below)\n");
    CHECK_TRUE(
        parse("rf-bench --loopback --provider sock -d rxe0 read_lat", &o) == 2);
    setenv("RF_FABRIC", "shm", 1);
    CHECK_TRUE(parse("rf-bench --loopback -x 1 read_lat", &o) == 2);
    /* --provider auto is RF_FABRIC's provider */
    CHECK_TRUE(parse("rf-bench --loopback --provider auto -x 1 read_lat", &o) ==
               2);
    unsetenv("RF_FABRIC");
    CHECK_TRUE(parse("rf-bench --loopback -i 0 read_lat", &o) == 2);
    CHECK_TRUE(parse("rf-bench --loopback -i 256 read_lat", &o) == 2);
    CHECK_TRUE(parse("rf-bench --loopback -x -1 read_lat", &o) == 2);
    CHECK_TRUE(parse("rf-bench --loopback -q 2 read_lat", &o) == 2);
    CHECK_TRUE(parse("rf-bench --loopback -q 2 write_lat", &o) == 2);
    CHECK_TRUE(parse("rf-bench --loopback -q 0 write_bw", &o) == 2);
    CHECK_TRUE(parse("rf-bench --loopback -q 1025 write_bw", &o) == 2);
    CHECK_TRUE(parse("rf-bench --loopback -q 1000 -n 200000 write_bw", &o) ==
               2); /* 2 x 10^8 operations */
    CHECK_TRUE(parse("rf-bench --serve -q 2", &o) == 2);
    CHECK_TRUE(parse("rf-bench --serve --max-qps 0", &o) == 2);
    CHECK_TRUE(parse("rf-bench --loopback --max-qps 2 write_bw", &o) == 2);
    CHECK_TRUE(parse("rf-bench --loopback -D 0 write_bw", &o) == 2);
    CHECK_TRUE(parse("rf-bench --loopback -D 4 write_bw", &o) == 2); /* 2x2 */
    CHECK_TRUE(parse("rf-bench --loopback -D 2 -f 1 write_bw", &o) == 2);
    CHECK_TRUE(parse("rf-bench --loopback -D 5 -a write_bw", &o) == 2);
    CHECK_TRUE(parse("rf-bench --loopback -D 5 -n 100 write_bw", &o) == 2);
    CHECK_TRUE(parse("rf-bench --loopback -D 5 -e write_bw", &o) == 2);
    CHECK_TRUE(parse("rf-bench --loopback -D 4 write_lat", &o) == 2); /* 2x2 */
    CHECK_TRUE(parse("rf-bench --loopback -D 5 -n 100 write_lat", &o) == 2);
    CHECK_TRUE(parse("rf-bench --loopback -f 1 write_bw", &o) == 2);
    CHECK_TRUE(parse("rf-bench --loopback --report_gbits read_lat", &o) == 2);
    CHECK_TRUE(parse("rf-bench --serve -D 5", &o) == 2);
    CHECK_TRUE(parse("rf-bench --serve --report_gbits", &o) == 2);
}

/* bench_quantile: numpy's linear interpolation, the input untouched, and
 * every sample used however many there are. */
static void test_quantile(void)
{
    const double v[4] = {3, 1, 4, 2};
    NEAR(bench_quantile(v, 4, 0.5), 2.5);
    NEAR(bench_quantile(v, 4, 0.0), 1.0);
    NEAR(bench_quantile(v, 4, 1.0), 4.0);
    NEAR(bench_quantile(v, 4, 0.1), 1.3);
    NEAR(bench_quantile(v, 1, 0.9), 3.0);
    CHECK_TRUE(v[0] == 3 && v[1] == 1 && v[2] == 4 && v[3] == 2);
    CHECK_TRUE(isnan(bench_quantile(v, 0, 0.5)));
    enum { N = 5001 };
    double *big = malloc(N * sizeof *big);
    CHECK_TRUE(big != NULL);
    for (size_t i = 0; i < N; i++)
        big[i] = (double)((i * 2003) % N); /* a permutation of 0..N-1 */
    NEAR(bench_quantile(big, N, 0.5), 2500.0);
    NEAR(bench_quantile(big, N, 0.99), 4950.0);
    free(big);
}

int main(void)
{
    test_lat_odd();
    test_lat_even();
    test_lat_1000();
    test_bw();
    test_proto();
    test_opts();
    test_perftest_opts();
    test_quantile();
    printf("bench_test_stats: all checks passed\n");
    return 0;
}
