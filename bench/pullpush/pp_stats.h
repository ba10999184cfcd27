/* bench/pullpush/pp_stats.h: the quantiles rf-bench-pullpush reports
 * (median, p10, p90 of the rounds). */
#ifndef RF_BENCH_PP_STATS_H
#define RF_BENCH_PP_STATS_H

#include <stddef.h>

/* The q-quantile (0 <= q <= 1) of v[0..n), n >= 1, by linear interpolation
 * between the order statistics at q*(n-1) (numpy's default): q = 0.5 is
 * the median (the mean of the two middle values for an even n). v is left
 * as it was. */
double pp_quantile(const double *v, size_t n, double q);

#endif
