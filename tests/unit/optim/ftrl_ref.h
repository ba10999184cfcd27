/* tests/unit/optim/ftrl_ref.h: the double-precision FTRL reference step the
 * dense (test_kernels.c) and sparse (test_sparse.c) kernel tests share. */
#ifndef RF_TESTS_UNIT_OPTIM_FTRL_REF_H
#define RF_TESTS_UNIT_OPTIM_FTRL_REF_H

#include <math.h>

#include "rdmaflow/optim.h"

/* FTRL-Proximal (McMahan et al. 2013, Algorithm 1, as ftrl.py documents it,
 * with learning_rate_power p and the shrinkage gradient g + 2 * s * w):
 *   n' = n + g^2; sigma = (n'^-p - n^-p) / lr; z += g_s - sigma * w;
 *   w = |z| <= l1 ? 0 : (sign(z) * l1 - z) / (n'^-p / lr + 2 * l2); n = n' */
static inline void ref_ftrl(const rf_optim_config *cfg, double *w, double *n,
                            double *z, double g)
{
    const double lr = cfg->learning_rate, p = -cfg->learning_rate_power;
    const double l1 = cfg->l1_regularization_strength;
    const double l2 = cfg->l2_regularization_strength;
    const double gs = g + 2.0 * cfg->l2_shrinkage_regularization_strength * *w;
    const double n_new = *n + g * g;
    const double sigma = (pow(n_new, p) - pow(*n, p)) / lr;
    *z += gs - sigma * *w;
    if (fabs(*z) <= l1)
        *w = 0.0;
    else
        *w = ((*z > 0 ? l1 : -l1) - *z) / (pow(n_new, p) / lr + 2.0 * l2);
    *n = n_new;
}

#endif
