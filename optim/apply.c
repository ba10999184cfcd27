/* optim/apply.c: rf_optim_apply(), the checked entry point of the update
 * kernels: validates the config, the arrays (present, non-overlapping) and
 * Adam's beta powers, then dispatches to the optimizer's loop. */
#include <stdint.h>

#include "core/fpenv.h"
#include "optim/kernels.h"
#include "rdmaflow/optim.h"
#include "rdmaflow/status.h"

/* The arrays of one apply: var, grad and the slots. */
#define MAX_ARRAYS (RF_OPTIM_MAX_SLOTS + 2)

static bool overlaps(const void *a, const void *b, size_t bytes)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return x < y + bytes && y < x + bytes;
}

static rf_status check_arrays(const rf_optim_config *cfg,
                              const rf_optim_layout *layout, const float *var,
                              float *const *slots, const float *grad, size_t n)
{
    const char *opt = rf_optim_kind_name(cfg->kind);
    if (n > SIZE_MAX / sizeof(float) / 2)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_optim_apply: %s: n = %zu is too large", opt, n);
    if (layout->num_slots > 0 && !slots)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_optim_apply: %s needs %u slot(s), slots NULL",
                            opt, layout->num_slots);
    const void *arrays[MAX_ARRAYS] = {var, grad};
    const char *names[MAX_ARRAYS] = {"var", "grad"};
    unsigned count = 2;
    for (unsigned i = 0; i < layout->num_slots; i++) {
        arrays[count] = slots[i];
        names[count++] = layout->slots[i].name;
    }
    for (unsigned i = 0; i < count; i++) {
        if (!arrays[i])
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "rf_optim_apply: %s: %s is NULL", opt,
                                names[i]);
        for (unsigned j = 0; j < i; j++)
            if (overlaps(arrays[i], arrays[j], n * sizeof(float)))
                return rf_error_set(RF_ERR_INVALID_ARG,
                                    "rf_optim_apply: %s: %s and %s overlap",
                                    opt, names[j], names[i]);
    }
    return RF_OK;
}

static rf_status check_beta_powers(const rf_optim_scalars *s)
{
    if (!s)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_optim_apply: adam needs the beta powers "
                            "(scalars NULL)");
    if (!(s->beta1_power >= 0.0f && s->beta1_power < 1.0f) ||
        !(s->beta2_power >= 0.0f && s->beta2_power < 1.0f))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_optim_apply: adam beta1_power = %g and "
                            "beta2_power = %g must be in [0, 1)",
                            (double)s->beta1_power, (double)s->beta2_power);
    return RF_OK;
}

rf_status rf_optim_apply(const rf_optim_config *cfg, float *var,
                         float *const *slots, const float *grad, size_t n,
                         const rf_optim_scalars *scalars)
{
    rf_optim_layout layout; /* also validates cfg */
    rf_status st = rf_optim_layout_get(cfg, &layout);
    if (st)
        return st;
    if (cfg->kind == RF_OPTIM_ADAM && (st = check_beta_powers(scalars)))
        return st;
    if (n == 0)
        return RF_OK;
    if ((st = check_arrays(cfg, &layout, var, slots, grad, n)))
        return st;

    rf_fpenv fp = rf_flush_denormals_begin(); /* core/fpenv.h */
    switch (cfg->kind) {
    case RF_OPTIM_SGD:
        rf_kernel_sgd(var, grad, n, cfg->learning_rate);
        break;
    case RF_OPTIM_MOMENTUM:
        rf_kernel_momentum(var, slots[0], grad, n, cfg->learning_rate,
                           cfg->momentum, cfg->use_nesterov);
        break;
    case RF_OPTIM_ADAGRAD:
        rf_kernel_adagrad(var, slots[0], grad, n, cfg->learning_rate);
        break;
    case RF_OPTIM_ADAM:
        rf_kernel_adam(var, slots[0], slots[1], grad, n, cfg->learning_rate,
                       cfg->beta1, cfg->beta2, cfg->epsilon,
                       scalars->beta1_power, scalars->beta2_power);
        break;
    case RF_OPTIM_RMSPROP:
        /* slot order (TF's creation order): rms, [mg,] momentum */
        if (cfg->centered)
            rf_kernel_centered_rmsprop(var, slots[1], slots[0], slots[2], grad,
                                       n, cfg->learning_rate, cfg->decay,
                                       cfg->momentum, cfg->epsilon);
        else
            rf_kernel_rmsprop(var, slots[0], slots[1], grad, n,
                              cfg->learning_rate, cfg->decay, cfg->momentum,
                              cfg->epsilon);
        break;
    }
    rf_flush_denormals_end(fp);
    return RF_OK;
}
