/* tests/integration/ps/specs.h: shard specs shared by the test driver and
 * the helper processes (both sides must describe a variable identically). */
#ifndef RF_TESTS_INTEGRATION_PS_SPECS_H
#define RF_TESTS_INTEGRATION_PS_SPECS_H

#include <string.h>

#include "rdmaflow/ps.h"

/* A float32 counter of n elements updated by SGD with learning rate 1: a
 * gradient of -1 adds exactly 1 to every element. */
static inline rf_ps_shard_spec pt_counter_spec(const char *name, int64_t n)
{
    rf_ps_shard_spec s = {.name = name,
                          .dtype = RF_F32,
                          .shape = rf_shape_make(1, &n),
                          .trainable = true};
    rf_optim_defaults(RF_OPTIM_SGD, &s.optim);
    s.optim.learning_rate = 1.0f;
    return s;
}

/* "w" [4,3] float32, SGD 0.5: the init-flag tests' variable. */
static inline rf_ps_shard_spec pt_w_spec(void)
{
    int64_t dims[2] = {4, 3};
    rf_ps_shard_spec s = {.name = "w",
                          .dtype = RF_F32,
                          .shape = rf_shape_make(2, dims),
                          .trainable = true};
    rf_optim_defaults(RF_OPTIM_SGD, &s.optim);
    s.optim.learning_rate = 0.5f;
    return s;
}

#endif
