/* tests/unit/optim/optim_ref.h: what the dense (test_kernels.c) and sparse
 * (test_sparse.c) kernel tests share: the optimizer configurations both loop
 * over, and the double-precision reference of one element's step for the
 * kinds whose dense and sparse formulas are the same (Nesterov momentum and
 * Adam differ: each test writes its own), with the slots by meaning:
 * a = momentum accumulator (momentum), accumulator (adagrad), m (adam),
 * rms (rmsprop), accum (ftrl); b = v (adam), mom (rmsprop), linear (ftrl);
 * c = mg (centered rmsprop). */
#ifndef RF_TESTS_UNIT_OPTIM_OPTIM_REF_H
#define RF_TESTS_UNIT_OPTIM_OPTIM_REF_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "rdmaflow/optim.h"
#include "tests/common/check.h"

static inline rf_optim_config ref_config(rf_optimizer_kind kind, float lr)
{
    rf_optim_config cfg;
    CHECK_OK(rf_optim_defaults(kind, &cfg));
    cfg.learning_rate = lr;
    return cfg;
}

/* Every kind and variant the tests loop over (at most 16). */
static inline size_t ref_all_configs(rf_optim_config *cfgs)
{
    size_t nc = 0;
    cfgs[nc++] = ref_config(RF_OPTIM_SGD, 0.1f);
    cfgs[nc] = ref_config(RF_OPTIM_MOMENTUM, 0.05f);
    cfgs[nc++].momentum = 0.9f;
    cfgs[nc] = ref_config(RF_OPTIM_MOMENTUM, 0.05f);
    cfgs[nc].momentum = 0.9f;
    cfgs[nc++].use_nesterov = true;
    cfgs[nc++] = ref_config(RF_OPTIM_ADAGRAD, 0.3f);
    cfgs[nc] = ref_config(RF_OPTIM_ADAGRAD, 0.3f);
    cfgs[nc++].initial_accumulator_value = 0.5f;
    cfgs[nc++] = ref_config(RF_OPTIM_ADAM, 0.001f); /* all TF defaults */
    cfgs[nc] = ref_config(RF_OPTIM_ADAM, 0.02f);
    cfgs[nc].beta1 = 0.5f;
    cfgs[nc].beta2 = 0.9f;
    cfgs[nc++].epsilon = 1e-3f;
    cfgs[nc++] = ref_config(RF_OPTIM_RMSPROP, 0.01f);
    cfgs[nc] = ref_config(RF_OPTIM_RMSPROP, 0.01f);
    cfgs[nc++].momentum = 0.5f;
    cfgs[nc] = ref_config(RF_OPTIM_RMSPROP, 0.01f);
    cfgs[nc++].centered = true;
    cfgs[nc] = ref_config(RF_OPTIM_RMSPROP, 0.01f);
    cfgs[nc].centered = true;
    cfgs[nc].momentum = 0.9f;
    cfgs[nc++].decay = 0.95f;
    cfgs[nc++] = ref_config(RF_OPTIM_FTRL, 0.3f);
    cfgs[nc] = ref_config(RF_OPTIM_FTRL, 0.3f);
    cfgs[nc].l1_regularization_strength = 0.01f;
    cfgs[nc++].l2_regularization_strength = 0.5f;
    cfgs[nc] = ref_config(RF_OPTIM_FTRL, 0.3f);
    cfgs[nc].learning_rate_power = -0.7f; /* through powf */
    cfgs[nc].l1_regularization_strength = 0.001f;
    cfgs[nc++].l2_shrinkage_regularization_strength = 0.1f; /* V2 */
    cfgs[nc] = ref_config(RF_OPTIM_FTRL, 0.3f);
    cfgs[nc].learning_rate_power = 0.0f; /* fixed learning rate */
    cfgs[nc++].initial_accumulator_value = 0.5f;
    return nc;
}

/* The initial value of an element's slot a (b and c start at 0). */
static inline double ref_initial_a(const rf_optim_config *cfg)
{
    if (cfg->kind == RF_OPTIM_ADAGRAD || cfg->kind == RF_OPTIM_FTRL)
        return cfg->initial_accumulator_value;
    return cfg->kind == RF_OPTIM_RMSPROP ? 1.0 : 0.0;
}

/* Which of a, b, c holds the slot called name (NULL: not one of cfg's). */
static inline const double *ref_slot(const rf_optim_config *cfg,
                                     const char *name, const double *a,
                                     const double *b, const double *c)
{
    if (!strcmp(name, "momentum"))
        return cfg->kind == RF_OPTIM_RMSPROP ? b : a;
    if (!strcmp(name, "accumulator") || !strcmp(name, "m") ||
        !strcmp(name, "rms") || !strcmp(name, "accum"))
        return a;
    if (!strcmp(name, "v") || !strcmp(name, "linear"))
        return b;
    if (!strcmp(name, "mg"))
        return c;
    return NULL;
}

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

/* One element's step for SGD, plain momentum, Adagrad, RMSProp (centered
 * or not) and FTRL: the textbook / numpy forms of TF's tests
 * (rmsprop_test.py _rmsprop_update_numpy). False for the kinds each test
 * writes itself (Nesterov momentum, Adam). */
static inline bool ref_step_element(const rf_optim_config *cfg, double *var,
                                    double *a, double *b, double *c, double g)
{
    const double lr = cfg->learning_rate, mu = cfg->momentum;
    switch (cfg->kind) {
    case RF_OPTIM_SGD:
        *var -= lr * g;
        return true;
    case RF_OPTIM_MOMENTUM:
        if (cfg->use_nesterov)
            return false;
        *a = mu * *a + g;
        *var -= lr * *a;
        return true;
    case RF_OPTIM_ADAGRAD:
        *a += g * g;
        *var -= lr * g / sqrt(*a);
        return true;
    case RF_OPTIM_RMSPROP: {
        const double d = cfg->decay;
        *a = d * *a + (1.0 - d) * g * g;
        double denom = *a + cfg->epsilon;
        if (cfg->centered) {
            *c = d * *c + (1.0 - d) * g;
            denom -= *c * *c;
        }
        *b = mu * *b + lr * g / sqrt(denom);
        *var -= *b;
        return true;
    }
    case RF_OPTIM_FTRL:
        ref_ftrl(cfg, var, a, b, g);
        return true;
    default:
        return false;
    }
}

#endif
