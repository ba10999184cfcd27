/* bench/bench_stats.c: latency and bandwidth statistics with perftest's
 * definitions (see bench_stats.h). One deliberate difference: perftest
 * accumulates each squared deviation through a C int, truncating it to
 * whole microseconds, so its t_stdev is 0 whenever the jitter is below
 * 1 usec; here the deviations are kept in double. */
#include "bench_stats.h"

#include <math.h>
#include <stdlib.h>

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

int bench_lat_compute(const uint64_t *tposted, uint32_t iters, int rtt_factor,
                      double ns_per_tick, bench_lat_stats *out)
{
    if (!tposted || !out || iters < BENCH_MIN_ITERS || rtt_factor < 1 ||
        !(ns_per_tick > 0))
        return -1;
    size_t n = (size_t)iters - 1;
    uint64_t *d = malloc(n * sizeof *d);
    if (!d)
        return -1;
    for (size_t i = 0; i < n; i++)
        d[i] = tposted[i + 1] - tposted[i];
    qsort(d, n, sizeof *d, cmp_u64);

    /* The two largest samples are dropped from median, average, stdev. */
    size_t m = n - BENCH_LAT_MEASURE_TAIL;
    /* ticks per usec, times the rtt factor */
    double q = 1000.0 / ns_per_tick * rtt_factor;
    double median;
    if ((m - 1) % 2) /* even count: mean of the two middle samples */
        median = ((double)d[m / 2] + (double)d[m / 2 - 1]) / 2.0;
    else
        median = (double)d[m / 2];

    double sum = 0;
    for (size_t i = 0; i < m; i++)
        sum += (double)d[i] / q;
    double avg = sum / (double)m;
    double var = 0;
    for (size_t i = 0; i < m; i++) {
        double dev = avg - (double)d[i] / q;
        var += dev * dev;
    }
    /* perftest: iters_99 = ceil(measure_cnt * 0.99), index into the whole
     * sorted array (so it may land on a dropped sample); t_max is
     * delta[measure_cnt], the second largest sample. */
    size_t i99 = (size_t)ceil((double)m * 0.99);
    size_t i999 = (size_t)ceil((double)m * 0.999);

    out->t_min = (double)d[0] / q;
    out->t_max = (double)d[m] / q;
    out->t_typical = median / q;
    out->t_avg = avg;
    out->t_stdev = sqrt(var / (double)m);
    out->p99 = (double)d[i99] / q;
    out->p99_9 = (double)d[i999] / q;
    free(d);
    return 0;
}

static double best_window(const uint64_t *tposted, const uint64_t *tcompleted,
                          uint32_t iters, uint32_t cq_mod)
{
    double best = INFINITY;
    for (uint32_t i = 0; i < iters; i++) {
        /* first signaled index >= i: ROUND_UP(i + 1, cq_mod) - 1 */
        uint64_t first = ((uint64_t)i / cq_mod + 1) * cq_mod - 1;
        for (uint64_t j = first; j < iters; j += cq_mod) {
            double t =
                (double)(tcompleted[j] - tposted[i]) / (double)(j - i + 1);
            if (t < best)
                best = t;
        }
        if (iters % cq_mod) { /* the last operation is always signaled */
            uint32_t j = iters - 1;
            double t =
                (double)(tcompleted[j] - tposted[i]) / (double)(j - i + 1);
            if (t < best)
                best = t;
        }
    }
    return best;
}

int bench_bw_compute(const uint64_t *tposted, const uint64_t *tcompleted,
                     uint32_t iters, uint32_t cq_mod, uint64_t size, bool peak,
                     double ns_per_tick, bench_bw_stats *out)
{
    if (!tposted || !tcompleted || !out || iters == 0 || cq_mod == 0 ||
        !(ns_per_tick > 0))
        return -1;
    const double mib = 1048576.0;
    double total_s =
        (double)(tcompleted[iters - 1] - tposted[0]) * ns_per_tick / 1e9;
    if (total_s <= 0)
        total_s = 1e-9; /* clock granularity; never divide by zero */
    out->bw_avg = (double)size * iters / total_s / mib;
    out->msg_rate = (double)iters / total_s / 1e6;
    out->bw_peak = 0;
    if (peak) {
        double ns =
            best_window(tposted, tcompleted, iters, cq_mod) * ns_per_tick;
        if (ns <= 0)
            ns = 1;
        out->bw_peak = (double)size / (ns / 1e9) / mib;
    }
    return 0;
}
