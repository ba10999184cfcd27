/* optim/check.c: the argument checks of the update entry points (see
 * optim/check.h). */
#include <stdint.h>

#include "optim/check.h"

static bool overlaps(const rf_optim_array *a, const rf_optim_array *b)
{
    uintptr_t x = (uintptr_t)a->ptr, y = (uintptr_t)b->ptr;
    return x < y + b->bytes && y < x + a->bytes;
}

rf_status rf_optim_check_arrays(const char *fn, const char *opt,
                                const rf_optim_array *arrays, unsigned count)
{
    for (unsigned i = 0; i < count; i++) {
        if (arrays[i].bytes == 0)
            continue;
        if (!arrays[i].ptr)
            return rf_error_set(RF_ERR_INVALID_ARG, "%s: %s: %s is NULL", fn,
                                opt, arrays[i].name);
        for (unsigned j = 0; j < i; j++)
            if (arrays[j].bytes > 0 && overlaps(&arrays[i], &arrays[j]))
                return rf_error_set(RF_ERR_INVALID_ARG,
                                    "%s: %s: %s and %s overlap", fn, opt,
                                    arrays[j].name, arrays[i].name);
    }
    return RF_OK;
}

rf_status rf_optim_check_slots(const char *fn, const rf_optim_layout *layout,
                               const char *opt, float *const *slots)
{
    if (layout->num_slots > 0 && !slots)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: %s needs %u slot(s), slots NULL", fn, opt,
                            layout->num_slots);
    return RF_OK;
}

static rf_status check_beta_powers(const char *fn, const rf_optim_scalars *s)
{
    if (!s)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: adam needs the beta powers (scalars NULL)",
                            fn);
    if (!(s->beta1_power >= 0.0f && s->beta1_power < 1.0f) ||
        !(s->beta2_power >= 0.0f && s->beta2_power < 1.0f))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: adam beta1_power = %g and beta2_power = %g "
                            "must be in [0, 1)",
                            fn, (double)s->beta1_power, (double)s->beta2_power);
    return RF_OK;
}

rf_status rf_optim_check_config(const char *fn, const rf_optim_config *cfg,
                                const rf_optim_scalars *scalars,
                                rf_optim_layout *layout)
{
    rf_status st = rf_optim_layout_get(cfg, layout); /* validates cfg */
    if (st == RF_OK && cfg->kind == RF_OPTIM_ADAM)
        st = check_beta_powers(fn, scalars);
    return st;
}
