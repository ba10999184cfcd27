/* optim/check.h: the argument checks shared by the checked entry points
 * rf_optim_apply() and rf_optim_apply_sparse() (internal to optim/): arrays
 * present and non-overlapping, Adam's beta powers in range. */
#ifndef RF_OPTIM_CHECK_H
#define RF_OPTIM_CHECK_H

#include <stddef.h>

#include "rdmaflow/optim.h"
#include "rdmaflow/status.h"

/* One array an apply reads or writes. */
typedef struct rf_optim_array {
    const void *ptr;
    size_t bytes;
    const char *name; /* "var", "grad", a slot's name, ... */
} rf_optim_array;

/* The most arrays one apply takes: var, grad, indices and the slots. */
#define RF_OPTIM_MAX_ARRAYS (RF_OPTIM_MAX_SLOTS + 3)

/* Every array with bytes > 0 must be non-NULL and overlap no other one.
 * RF_ERR_INVALID_ARG "fn: opt: var is NULL" / "fn: opt: m and v overlap"
 * otherwise. */
rf_status rf_optim_check_arrays(const char *fn, const char *opt,
                                const rf_optim_array *arrays, unsigned count);

/* The slots pointer itself (needed when the layout has slots). */
rf_status rf_optim_check_slots(const char *fn, const rf_optim_layout *layout,
                               const char *opt, float *const *slots);

/* The config valid (its layout into *layout) and, for Adam, the beta
 * powers present and in [0, 1). */
rf_status rf_optim_check_config(const char *fn, const rf_optim_config *cfg,
                                const rf_optim_scalars *scalars,
                                rf_optim_layout *layout);

#endif
