/* optim/apply.c: rf_optim_apply(), the checked entry point of the update
 * kernels: validates the config, the arrays (present, non-overlapping) and
 * Adam's beta powers (optim/check.h), then dispatches to the optimizer's
 * loop. */
#include <stdint.h>

#include "core/fpenv.h"
#include "optim/check.h"
#include "optim/kernels.h"
#include "rdmaflow/optim.h"
#include "rdmaflow/status.h"

static const char FN[] = "rf_optim_apply";

/* var, grad and the slots: present, non-overlapping. */
static rf_status check_arrays(const rf_optim_config *cfg,
                              const rf_optim_layout *layout, const float *var,
                              float *const *slots, const float *grad, size_t n)
{
    const char *opt = rf_optim_kind_name(cfg->kind);
    if (n > SIZE_MAX / sizeof(float) / 2)
        return rf_error_set(RF_ERR_INVALID_ARG, "%s: %s: n = %zu is too large",
                            FN, opt, n);
    rf_status st = rf_optim_check_slots(FN, layout, opt, slots);
    if (st)
        return st;
    const size_t bytes = n * sizeof(float);
    rf_optim_array arrays[RF_OPTIM_MAX_ARRAYS] = {{var, bytes, "var"},
                                                  {grad, bytes, "grad"}};
    unsigned count = 2;
    for (unsigned i = 0; i < layout->num_slots; i++)
        arrays[count++] =
            (rf_optim_array){slots[i], bytes, layout->slots[i].name};
    return rf_optim_check_arrays(FN, opt, arrays, count);
}

rf_status rf_optim_apply(const rf_optim_config *cfg, float *var,
                         float *const *slots, const float *grad, size_t n,
                         const rf_optim_scalars *scalars)
{
    rf_optim_layout layout;
    rf_status st = rf_optim_check_config(FN, cfg, scalars, &layout);
    if (st)
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
    case RF_OPTIM_FTRL:
        /* slot order (TF's creation order): accum, linear */
        rf_kernel_ftrl(var, slots[0], slots[1], grad, n, cfg->learning_rate,
                       cfg->learning_rate_power,
                       cfg->l1_regularization_strength,
                       cfg->l2_regularization_strength,
                       cfg->l2_shrinkage_regularization_strength);
        break;
    }
    rf_flush_denormals_end(fp);
    return RF_OK;
}
