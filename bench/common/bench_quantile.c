/* bench/common/bench_quantile.c: quantiles of a benchmark's samples
 * (bench_quantile.h). */
#include "bench_quantile.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_quantile(const double *v, size_t n, double q)
{
    double *s = n ? malloc(n * sizeof *s) : NULL;
    if (!s)
        return NAN;
    memcpy(s, v, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_double);
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)pos;
    double r = lo + 1 >= n ? s[n - 1]
                           : s[lo] + (pos - (double)lo) * (s[lo + 1] - s[lo]);
    free(s);
    return r;
}
