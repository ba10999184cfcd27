/* optim/apply_sparse.c: rf_optim_apply_sparse(), the checked entry point of
 * the sparse update kernels (optim/kernels_sparse.c): validates the config,
 * the shapes, the arrays and every index (TF's SparseApply* kernels refuse an
 * index outside the variable before updating anything), then dispatches. */
#include <inttypes.h>
#include <stdint.h>

#include "core/fpenv.h"
#include "optim/check.h"
#include "optim/kernels.h"
#include "rdmaflow/optim.h"
#include "rdmaflow/status.h"

static const char FN[] = "rf_optim_apply_sparse";

/* var and the slots ([rows, width]), grad ([n, width]) and indices ([n]):
 * sizes representable, arrays present and non-overlapping. */
static rf_status check_arrays(const rf_optim_config *cfg,
                              const rf_optim_layout *layout, const float *var,
                              float *const *slots, size_t rows, size_t width,
                              const int64_t *indices, size_t n,
                              const float *grad)
{
    const char *opt = rf_optim_kind_name(cfg->kind);
    if (width == 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: %s: width 0 (the inner dimension must be "
                            "greater than zero)",
                            FN, opt);
    const size_t limit = SIZE_MAX / sizeof(float) / 2 / width;
    if (rows > limit || n > limit)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: %s: rows = %zu or n = %zu times width = %zu "
                            "is too large",
                            FN, opt, rows, n, width);
    rf_status st = rf_optim_check_slots(FN, layout, opt, slots);
    if (st)
        return st;
    const size_t var_bytes = rows * width * sizeof(float);
    rf_optim_array arrays[RF_OPTIM_MAX_ARRAYS] = {
        {var, var_bytes, "var"},
        {grad, n * width * sizeof(float), "grad"},
        {indices, n * sizeof(int64_t), "indices"},
    };
    unsigned count = 3;
    for (unsigned i = 0; i < layout->num_slots; i++)
        arrays[count++] =
            (rf_optim_array){slots[i], var_bytes, layout->slots[i].name};
    return rf_optim_check_arrays(FN, opt, arrays, count);
}

/* Every index is -1 (skipped) or in [0, rows). */
static rf_status check_indices(const rf_optim_config *cfg,
                               const int64_t *indices, size_t n, size_t rows)
{
    for (size_t i = 0; i < n; i++) {
        int64_t idx = indices[i];
        if (idx == -1)
            continue;
        if (idx < 0 || (uint64_t)idx >= rows)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "%s: %s: index %" PRId64 " at offset %zu in "
                                "indices is out of range [0, %zu)",
                                FN, rf_optim_kind_name(cfg->kind), idx, i,
                                rows);
    }
    return RF_OK;
}

rf_status rf_optim_apply_sparse(const rf_optim_config *cfg, float *var,
                                float *const *slots, size_t rows, size_t width,
                                const int64_t *indices, size_t n,
                                const float *grad,
                                const rf_optim_scalars *scalars)
{
    rf_optim_layout layout;
    rf_status st = rf_optim_check_config(FN, cfg, scalars, &layout);
    if (st)
        return st;
    if ((st = check_arrays(cfg, &layout, var, slots, rows, width, indices, n,
                           grad)) ||
        (st = check_indices(cfg, indices, n, rows)))
        return st;
    /* Nothing to do without entries, except for Adam, whose decay and step
     * cover every row whatever the gradient holds. */
    if (n == 0 && cfg->kind != RF_OPTIM_ADAM)
        return RF_OK;

    const float lr = cfg->learning_rate;
    rf_fpenv fp = rf_flush_denormals_begin(); /* core/fpenv.h */
    switch (cfg->kind) {
    case RF_OPTIM_SGD:
        rf_sparse_sgd(var, width, indices, n, grad, lr);
        break;
    case RF_OPTIM_MOMENTUM:
        rf_sparse_momentum(var, slots[0], width, indices, n, grad, lr,
                           cfg->momentum, cfg->use_nesterov);
        break;
    case RF_OPTIM_ADAGRAD:
        rf_sparse_adagrad(var, slots[0], width, indices, n, grad, lr);
        break;
    case RF_OPTIM_ADAM:
        rf_sparse_adam(var, slots[0], slots[1], rows, width, indices, n, grad,
                       lr, cfg->beta1, cfg->beta2, cfg->epsilon,
                       scalars->beta1_power, scalars->beta2_power);
        break;
    case RF_OPTIM_RMSPROP:
        /* slot order (TF's creation order): rms, [mg,] momentum */
        if (cfg->centered)
            rf_sparse_centered_rmsprop(var, slots[1], slots[0], slots[2], width,
                                       indices, n, grad, lr, cfg->decay,
                                       cfg->momentum, cfg->epsilon);
        else
            rf_sparse_rmsprop(var, slots[0], slots[1], width, indices, n, grad,
                              lr, cfg->decay, cfg->momentum, cfg->epsilon);
        break;
    case RF_OPTIM_FTRL:
        /* slot order (TF's creation order): accum, linear */
        rf_sparse_ftrl(var, slots[0], slots[1], width, indices, n, grad, lr,
                       cfg->learning_rate_power,
                       cfg->l1_regularization_strength,
                       cfg->l2_regularization_strength,
                       cfg->l2_shrinkage_regularization_strength);
        break;
    }
    rf_flush_denormals_end(fp);
    return RF_OK;
}
