/* bench/common/bench_quantile.h: the quantiles the benchmark programs
 * below bench/ report (median, p10, p90, p99 of their rounds or steps). */
#ifndef RF_BENCH_QUANTILE_H
#define RF_BENCH_QUANTILE_H

#include <stddef.h>

/* The q-quantile (0 <= q <= 1) of v[0..n), n >= 1, by linear interpolation
 * between the order statistics at q*(n-1) (numpy's default): q = 0.5 is
 * the median (the mean of the two middle values for an even n). v is left
 * as it was (the values are sorted in a copy); NaN when there is no memory
 * for the copy or n is 0. */
double bench_quantile(const double *v, size_t n, double q);

#endif
