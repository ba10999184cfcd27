/* bench/bench_stats.h: perftest's statistics, computed from raw
 * timestamps. Latency follows perftest's print_report_lat: the samples are
 * the iters-1 intervals between consecutive posts, sorted; the
 * LAT_MEASURE_TAIL (2) largest are dropped; t_typical is the median of the
 * rest; t_max, 99% and 99.9% index the sorted array exactly as perftest
 * does. Bandwidth follows print_report_bw (MiB = 2^20 bytes). */
#ifndef RF_BENCH_STATS_H
#define RF_BENCH_STATS_H

#include <stdbool.h>
#include <stdint.h>

#define BENCH_LAT_MEASURE_TAIL 2 /* perftest's LAT_MEASURE_TAIL */
#define BENCH_MIN_ITERS        5 /* perftest's MIN_ITER */

typedef struct bench_lat_stats {
    double t_min, t_max, t_typical, t_avg, t_stdev, p99, p99_9; /* usec */
} bench_lat_stats;

typedef struct bench_bw_stats {
    double bw_peak;  /* MiB/s; 0 when the peak was not computed */
    double bw_avg;   /* MiB/s */
    double msg_rate; /* Mpps */
} bench_bw_stats;

/* tposted[0..iters) are the post times in ticks of ns_per_tick
 * nanoseconds. rtt_factor is 1 for round trips (read, atomics) and 2 for
 * ping-pong tests (write, write_imm), whose interval is two one-way trips.
 * Returns 0, or -1 if iters < BENCH_MIN_ITERS or memory is short. */
int bench_lat_compute(const uint64_t *tposted, uint32_t iters, int rtt_factor,
                      double ns_per_tick, bench_lat_stats *out);

/* tposted[i] is when operation i was posted; tcompleted[j] when the
 * completion of signaled operation j was seen (operation j is signaled when
 * j % cq_mod == cq_mod - 1 or j == iters - 1). With peak, the peak is the
 * best (completion j - post i) / (j - i + 1) over every i and every
 * signaled j >= i, as perftest. Times are in ticks of ns_per_tick ns.
 * Returns 0, or -1 on bad arguments. */
int bench_bw_compute(const uint64_t *tposted, const uint64_t *tcompleted,
                     uint32_t iters, uint32_t cq_mod, uint64_t size, bool peak,
                     double ns_per_tick, bench_bw_stats *out);

#endif
