/* graph/data/zipf.c: Zipf rejection-inversion (zipf.h). With 1-based ranks
 * k, h(x) = x^-s is the unnormalised pmf extended to reals and
 *   H(x) = integral from 1 to x of h = (x^(1-s) - 1) / (1 - s)  (ln x at
 * s = 1), increasing. A uniform u over [H(1.5) - h(1), H(n + 0.5)) inverts
 * to x = H^-1(u); k = round(x) is the candidate whose cell [H(k - 0.5),
 * H(k + 0.5)) holds u, and it is accepted when u >= H(k + 0.5) - h(k), a
 * sub-interval of length h(k). Since h is convex, h(k) is at most the
 * integral of h over [k - 0.5, k + 0.5], so the sub-interval lies in the
 * cell and P(k) is proportional to h(k); the cell of k = 1 starts at the
 * range's start and is always accepted, so acceptance is high. */
#include "graph/data/zipf.h"

#include <math.h>

/* expm1(t) / t and log1p(t) / t, continuous at t = 0 (value 1). */
static double expm1_over(double t)
{
    return fabs(t) < 1e-8 ? 1.0 + t / 2.0 : expm1(t) / t;
}

static double log1p_over(double t)
{
    return fabs(t) < 1e-8 ? 1.0 - t / 2.0 : log1p(t) / t;
}

static double h(double s, double x)
{
    return exp(-s * log(x));
}

static double H(double s, double x)
{
    double lx = log(x);
    return lx * expm1_over((1.0 - s) * lx);
}

static double H_inv(double s, double y)
{
    return exp(y * log1p_over((1.0 - s) * y));
}

rf_status zipf_init(rf_zipf *z, int64_t n, double s)
{
    if (n < 1 || n > (1LL << 53))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "zipf: %lld ranks is outside [1, 2^53]",
                            (long long)n);
    if (!(s > 0.0 && s <= 10.0))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "zipf: exponent %g is outside (0, 10]", s);
    z->n = n;
    z->s = s;
    z->area_lo = H(s, 1.5) - 1.0;
    z->area_hi = H(s, (double)n + 0.5);
    return RF_OK;
}

int64_t zipf_draw(const rf_zipf *z, rf_rng *r)
{
    for (;;) {
        double u = z->area_lo + rng_unit(r) * (z->area_hi - z->area_lo);
        double x = H_inv(z->s, u);
        double kd = floor(x + 0.5);
        if (!(kd >= 1.0)) /* also NaN */
            kd = 1.0;
        if (kd > (double)z->n)
            kd = (double)z->n;
        if (kd == 1.0 || u >= H(z->s, kd + 0.5) - h(z->s, kd))
            return (int64_t)kd - 1;
    }
}
