/* optim/layout.c: the slots each optimizer keeps beside a variable (names,
 * order and initial values of TensorFlow's _create_slots) and the shared
 * non-slot scalars (Adam's beta1_power/beta2_power, advanced in _finish). */
#include <limits.h>
#include <stdbool.h>
#include <string.h>

#include "core/fpenv.h"
#include "rdmaflow/optim.h"
#include "rdmaflow/status.h"

/* The layout of kind (centered and the accumulator's initial value are the
 * only hyper-parameters it depends on); false for an unknown kind. The one
 * place that knows each optimizer's slots. */
static bool fill_layout(rf_optimizer_kind kind, bool centered,
                        float initial_accumulator, rf_optim_layout *out)
{
    memset(out, 0, sizeof *out);
    switch (kind) {
    case RF_OPTIM_SGD:
        out->tf_name = "GradientDescent";
        return true;
    case RF_OPTIM_MOMENTUM:
        out->tf_name = "Momentum";
        out->slots[out->num_slots++] = (rf_optim_slot_info){"momentum", 0.0f};
        return true;
    case RF_OPTIM_ADAGRAD:
        out->tf_name = "Adagrad";
        out->slots[out->num_slots++] =
            (rf_optim_slot_info){"accumulator", initial_accumulator};
        return true;
    case RF_OPTIM_ADAM:
        out->tf_name = "Adam";
        out->slots[out->num_slots++] = (rf_optim_slot_info){"m", 0.0f};
        out->slots[out->num_slots++] = (rf_optim_slot_info){"v", 0.0f};
        out->num_scalars = 2;
        return true;
    case RF_OPTIM_RMSPROP:
        /* rmsprop.py initialises "rms" with ones_initializer, not zeros. */
        out->tf_name = "RMSProp";
        out->slots[out->num_slots++] = (rf_optim_slot_info){"rms", 1.0f};
        if (centered)
            out->slots[out->num_slots++] = (rf_optim_slot_info){"mg", 0.0f};
        out->slots[out->num_slots++] = (rf_optim_slot_info){"momentum", 0.0f};
        return true;
    case RF_OPTIM_FTRL:
        /* ftrl.py: "accum" (a constant of initial_accumulator_value), then
         * "linear" (zeros), both named after the optimizer: V/Ftrl, V/Ftrl_1 */
        out->tf_name = "Ftrl";
        out->slots[out->num_slots++] =
            (rf_optim_slot_info){"accum", initial_accumulator};
        out->slots[out->num_slots++] = (rf_optim_slot_info){"linear", 0.0f};
        return true;
    }
    return false;
}

rf_status rf_optim_layout_get(const rf_optim_config *cfg, rf_optim_layout *out)
{
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_optim_layout_get: out NULL");
    rf_status st = rf_optim_validate(cfg);
    if (st)
        return st;
    fill_layout(cfg->kind, cfg->centered, cfg->initial_accumulator_value, out);
    return RF_OK;
}

unsigned rf_optim_num_slots(rf_optimizer_kind kind, bool centered)
{
    rf_optim_layout l;
    return fill_layout(kind, centered, 0.0f, &l) ? l.num_slots : UINT_MAX;
}

rf_status rf_optim_slot_init(const rf_optim_config *cfg, unsigned slot_index,
                             float *slot, size_t n)
{
    rf_optim_layout layout;
    rf_status st = rf_optim_layout_get(cfg, &layout);
    if (st)
        return st;
    if (slot_index >= layout.num_slots)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_optim_slot_init: %s has %u slot(s), no slot %u",
                            rf_optim_kind_name(cfg->kind), layout.num_slots,
                            slot_index);
    if (n > 0 && !slot)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_optim_slot_init: slot NULL with n = %zu", n);
    float v = layout.slots[slot_index].initial_value;
    for (size_t i = 0; i < n; i++)
        slot[i] = v;
    return RF_OK;
}

rf_status rf_optim_scalars_init(const rf_optim_config *cfg, rf_optim_scalars *s)
{
    if (!s)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_optim_scalars_init: scalars NULL");
    rf_status st = rf_optim_validate(cfg);
    if (st)
        return st;
    if (cfg->kind == RF_OPTIM_ADAM) {
        /* _create_non_slot_variable(initial_value=beta1 / beta2) */
        s->beta1_power = cfg->beta1;
        s->beta2_power = cfg->beta2;
    } else {
        s->beta1_power = 0.0f;
        s->beta2_power = 0.0f;
    }
    return RF_OK;
}

rf_status rf_optim_finish_step(const rf_optim_config *cfg, rf_optim_scalars *s)
{
    if (!s)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_optim_finish_step: scalars NULL");
    rf_status st = rf_optim_validate(cfg);
    if (st)
        return st;
    if (cfg->kind == RF_OPTIM_ADAM) {
        /* beta1_power.assign(beta1_power * beta1_t), likewise beta2 */
        /* under flush-to-zero like every kernel; the volatile temporaries
         * keep the multiplies between the mode switches */
        rf_fpenv fp = rf_flush_denormals_begin();
        volatile float b1 = s->beta1_power, b2 = s->beta2_power;
        volatile float p1 = b1 * cfg->beta1, p2 = b2 * cfg->beta2;
        rf_flush_denormals_end(fp);
        s->beta1_power = p1;
        s->beta2_power = p2;
    }
    return RF_OK;
}
