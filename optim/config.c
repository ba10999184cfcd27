/* optim/config.c: optimizer descriptions: TensorFlow 1.x defaults
 * (tensorflow/python/training/{gradient_descent,momentum,adagrad,adam,
 * rmsprop,ftrl}.py), range checks, names, --optimizer parsing and formatting.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rdmaflow/env.h"
#include "rdmaflow/optim.h"
#include "rdmaflow/status.h"

static const char *const kind_names[RF_OPTIM_KIND_COUNT] = {
    [RF_OPTIM_SGD] = "sgd",         [RF_OPTIM_MOMENTUM] = "momentum",
    [RF_OPTIM_ADAGRAD] = "adagrad", [RF_OPTIM_ADAM] = "adam",
    [RF_OPTIM_RMSPROP] = "rmsprop", [RF_OPTIM_FTRL] = "ftrl",
};

static bool kind_valid(rf_optimizer_kind kind)
{
    return (int)kind >= 0 && (int)kind < RF_OPTIM_KIND_COUNT;
}

const char *rf_optim_kind_name(rf_optimizer_kind kind)
{
    return kind_valid(kind) ? kind_names[kind] : "unknown";
}

rf_status rf_optim_defaults(rf_optimizer_kind kind, rf_optim_config *cfg)
{
    if (!cfg)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_optim_defaults: cfg NULL");
    if (!kind_valid(kind))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_optim_defaults: unknown optimizer kind %d",
                            (int)kind);
    /* Fields a kind does not use still get sensible values so that a config
     * switched to another kind later reads as that kind's defaults would. */
    *cfg = (rf_optim_config){
        .kind = kind,
        .learning_rate = NAN, /* required by every TF 1.x optimizer but Adam */
        .momentum = 0.0f,
        .use_nesterov = false,
        .initial_accumulator_value = 0.1f,
        .beta1 = 0.9f,
        .beta2 = 0.999f,
        .epsilon = 1e-8f,
        .decay = 0.9f,
        .centered = false,
        .learning_rate_power = -0.5f,
        .l1_regularization_strength = 0.0f,
        .l2_regularization_strength = 0.0f,
        .l2_shrinkage_regularization_strength = 0.0f,
    };
    switch (kind) {
    case RF_OPTIM_MOMENTUM:
        cfg->momentum = NAN; /* MomentumOptimizer(learning_rate, momentum) */
        break;
    case RF_OPTIM_ADAM:
        cfg->learning_rate = 0.001f;
        break;
    case RF_OPTIM_RMSPROP:
        cfg->epsilon = 1e-10f;
        break;
    default:
        break;
    }
    return RF_OK;
}

/* Each check names the optimizer and the field; "missing" when NaN (the
 * defaults' marker for a value TensorFlow requires). */
static rf_status check_range(const rf_optim_config *cfg, const char *field,
                             float v, float lo, bool lo_open, float hi,
                             bool hi_open)
{
    const char *opt = rf_optim_kind_name(cfg->kind);
    if (isnan(v))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s optimizer: %s is required (TensorFlow has no "
                            "default for it)",
                            opt, field);
    bool below = lo_open ? !(v > lo) : !(v >= lo);
    bool above = hi_open ? !(v < hi) : !(v <= hi);
    if (below || above) {
        if (isinf(hi))
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "%s optimizer: %s = %g must be %s %g and "
                                "finite",
                                opt, field, (double)v,
                                lo_open ? ">" : ">=", (double)lo);
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s optimizer: %s = %g must be in %c%g, %g%c", opt,
                            field, (double)v, lo_open ? '(' : '[', (double)lo,
                            (double)hi, hi_open ? ')' : ']');
    }
    return RF_OK;
}

rf_status rf_optim_validate(const rf_optim_config *cfg)
{
    if (!cfg)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_optim_validate: cfg NULL");
    if (!kind_valid(cfg->kind))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_optim_validate: unknown optimizer kind %d",
                            (int)cfg->kind);
    rf_status st;
    if ((st = check_range(cfg, "learning_rate", cfg->learning_rate, 0.0f, false,
                          INFINITY, true)))
        return st;
    switch (cfg->kind) {
    case RF_OPTIM_SGD:
        return RF_OK;
    case RF_OPTIM_MOMENTUM:
        return check_range(cfg, "momentum", cfg->momentum, 0.0f, false, 1.0f,
                           false);
    case RF_OPTIM_ADAGRAD:
        return check_range(cfg, "initial_accumulator_value",
                           cfg->initial_accumulator_value, 0.0f, true, INFINITY,
                           true);
    case RF_OPTIM_ADAM:
        if ((st = check_range(cfg, "beta1", cfg->beta1, 0.0f, false, 1.0f,
                              true)) ||
            (st = check_range(cfg, "beta2", cfg->beta2, 0.0f, false, 1.0f,
                              true)))
            return st;
        return check_range(cfg, "epsilon", cfg->epsilon, 0.0f, false, INFINITY,
                           true);
    case RF_OPTIM_RMSPROP:
        if ((st = check_range(cfg, "decay", cfg->decay, 0.0f, false, 1.0f,
                              false)) ||
            (st = check_range(cfg, "momentum", cfg->momentum, 0.0f, false, 1.0f,
                              false)))
            return st;
        return check_range(cfg, "epsilon", cfg->epsilon, 0.0f, false, INFINITY,
                           true);
    case RF_OPTIM_FTRL:
        /* the kernels' "lr is not a positive scalar", then FtrlOptimizer's
         * ValueErrors */
        if ((st = check_range(cfg, "learning_rate", cfg->learning_rate, 0.0f,
                              true, INFINITY, true)) ||
            (st = check_range(cfg, "learning_rate_power",
                              cfg->learning_rate_power, -INFINITY, true, 0.0f,
                              false)) ||
            (st = check_range(cfg, "initial_accumulator_value",
                              cfg->initial_accumulator_value, 0.0f, true,
                              INFINITY, true)) ||
            (st = check_range(cfg, "l1_regularization_strength",
                              cfg->l1_regularization_strength, 0.0f, false,
                              INFINITY, true)) ||
            (st = check_range(cfg, "l2_regularization_strength",
                              cfg->l2_regularization_strength, 0.0f, false,
                              INFINITY, true)))
            return st;
        return check_range(cfg, "l2_shrinkage_regularization_strength",
                           cfg->l2_shrinkage_regularization_strength, 0.0f,
                           false, INFINITY, true);
    }
    return RF_OK;
}

rf_status rf_optim_parse(const char *name, rf_optim_config *cfg)
{
    if (!name || !cfg)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_optim_parse: %s NULL",
                            name ? "cfg" : "name");
    for (int k = 0; k < RF_OPTIM_KIND_COUNT; k++)
        if (strcmp(name, kind_names[k]) == 0)
            return rf_optim_defaults((rf_optimizer_kind)k, cfg);
    return rf_error_set(RF_ERR_INVALID_ARG,
                        "unknown optimizer '%s': expected one of "
                        "sgd|momentum|adagrad|adam|rmsprop|ftrl",
                        RF_ECHO(name));
}

int rf_optim_format(const rf_optim_config *cfg, char *buf, size_t len)
{
    if (!cfg)
        return snprintf(buf, len, "(null)");
    const char *name = rf_optim_kind_name(cfg->kind);
    double lr = cfg->learning_rate;
    switch (cfg->kind) {
    case RF_OPTIM_SGD:
        return snprintf(buf, len, "%s(learning_rate=%g)", name, lr);
    case RF_OPTIM_MOMENTUM:
        return snprintf(buf, len,
                        "%s(learning_rate=%g, momentum=%g, use_nesterov=%s)",
                        name, lr, (double)cfg->momentum,
                        cfg->use_nesterov ? "true" : "false");
    case RF_OPTIM_ADAGRAD:
        return snprintf(buf, len,
                        "%s(learning_rate=%g, initial_accumulator_value=%g)",
                        name, lr, (double)cfg->initial_accumulator_value);
    case RF_OPTIM_ADAM:
        return snprintf(buf, len,
                        "%s(learning_rate=%g, beta1=%g, beta2=%g, epsilon=%g)",
                        name, lr, (double)cfg->beta1, (double)cfg->beta2,
                        (double)cfg->epsilon);
    case RF_OPTIM_RMSPROP:
        return snprintf(buf, len,
                        "%s(learning_rate=%g, decay=%g, momentum=%g, "
                        "epsilon=%g, centered=%s)",
                        name, lr, (double)cfg->decay, (double)cfg->momentum,
                        (double)cfg->epsilon, cfg->centered ? "true" : "false");
    case RF_OPTIM_FTRL:
        return snprintf(buf, len,
                        "%s(learning_rate=%g, learning_rate_power=%g, "
                        "initial_accumulator_value=%g, "
                        "l1_regularization_strength=%g, "
                        "l2_regularization_strength=%g, "
                        "l2_shrinkage_regularization_strength=%g)",
                        name, lr, (double)cfg->learning_rate_power,
                        (double)cfg->initial_accumulator_value,
                        (double)cfg->l1_regularization_strength,
                        (double)cfg->l2_regularization_strength,
                        (double)cfg->l2_shrinkage_regularization_strength);
    }
    return snprintf(buf, len, "unknown(kind=%d)", (int)cfg->kind);
}
