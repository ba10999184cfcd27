/* bench/pullpush/pp_stats.c: quantiles of the rounds (pp_stats.h). */
#include "pp_stats.h"

#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double pp_quantile(const double *v, size_t n, double q)
{
    enum { MAX = 1024 };
    double s[MAX];
    if (n == 0)
        return 0;
    if (n > MAX)
        n = MAX;
    memcpy(s, v, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp);
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)pos;
    if (lo + 1 >= n)
        return s[n - 1];
    return s[lo] + (pos - (double)lo) * (s[lo + 1] - s[lo]);
}
