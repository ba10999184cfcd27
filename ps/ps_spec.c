/* ps/ps_spec.c: shard spec conversion, canonical optimizer
 * configs, comparison and description (see ps_spec.h). */
#include "ps/ps_spec.h"

#include <stdio.h>
#include <string.h>

#include "ps/ps_layout.h"
#include "rdmaflow/status.h"

void ps_spec_canonical_optim(rf_optim_config *cfg)
{
    rf_optim_config c = {.kind = cfg->kind,
                         .learning_rate = cfg->learning_rate};
    switch (cfg->kind) {
    case RF_OPTIM_SGD:
        break;
    case RF_OPTIM_MOMENTUM:
        c.momentum = cfg->momentum;
        c.use_nesterov = cfg->use_nesterov;
        break;
    case RF_OPTIM_ADAGRAD:
        c.initial_accumulator_value = cfg->initial_accumulator_value;
        break;
    case RF_OPTIM_ADAM:
        c.beta1 = cfg->beta1;
        c.beta2 = cfg->beta2;
        c.epsilon = cfg->epsilon;
        break;
    case RF_OPTIM_RMSPROP:
        c.decay = cfg->decay;
        c.momentum = cfg->momentum;
        c.epsilon = cfg->epsilon;
        c.centered = cfg->centered;
        break;
    case RF_OPTIM_FTRL:
        c.learning_rate_power = cfg->learning_rate_power;
        c.initial_accumulator_value = cfg->initial_accumulator_value;
        c.l1_regularization_strength = cfg->l1_regularization_strength;
        c.l2_regularization_strength = cfg->l2_regularization_strength;
        c.l2_shrinkage_regularization_strength =
            cfg->l2_shrinkage_regularization_strength;
        break;
    }
    *cfg = c;
}

rf_status ps_spec_from_public(const rf_ps_shard_spec *in, const char *what,
                              ps_spec *out)
{
    memset(out, 0, sizeof *out);
    if (!in || !in->name)
        return rf_error_set(RF_ERR_INVALID_ARG, "%s: no spec or no name", what);
    size_t n = strlen(in->name);
    if (n == 0 || n > RF_PS_MAX_NAME)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: variable name of %zu bytes (1..%d allowed)",
                            what, n, RF_PS_MAX_NAME);
    memcpy(out->name, in->name, n);
    out->part = in->part;
    out->dtype = in->dtype;
    out->shape = in->shape;
    out->trainable = in->trainable;
    out->sync_n = in->replicas_to_aggregate;
    out->sync_m = in->total_num_replicas;
    out->max_push_rows = in->max_push_rows;
    if (in->trainable) {
        out->optim = in->optim;
        if (rf_optim_validate(&out->optim) != RF_OK) {
            return rf_error_prefix(RF_ERR_INVALID_ARG, "%s: '%s' part %u", what,
                                   out->name, out->part);
        }
        ps_spec_canonical_optim(&out->optim);
    }
    if (ps_spec_check(out) != RF_OK) {
        return rf_error_prefix(RF_ERR_INVALID_ARG, "%s", what);
    }
    return RF_OK;
}

void ps_spec_describe(const ps_spec *spec, char *buf, size_t len)
{
    char shape[200];
    rf_shape_format(&spec->shape, shape, sizeof shape);
    char opt[256] = "not trainable", sync[160] = "";
    if (spec->trainable)
        rf_optim_format(&spec->optim, opt, sizeof opt);
    if (spec->sync_n)
        snprintf(sync, sizeof sync,
                 ", sync replicas (replicas_to_aggregate=%u, "
                 "total_num_replicas=%u)%s",
                 spec->sync_n, spec->sync_m,
                 spec->max_push_rows ? ", embedding table" : "");
    else if (spec->max_push_rows)
        snprintf(sync, sizeof sync,
                 ", embedding table (max_push_rows=%u), no sync replicas",
                 spec->max_push_rows);
    else if (spec->trainable)
        snprintf(sync, sizeof sync, ", no sync replicas");
    snprintf(buf, len, "shape %s %s, %s%s", shape, rf_dtype_name(spec->dtype),
             opt, sync);
}

static bool feq(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

bool ps_spec_same(const ps_spec *a, const ps_spec *b)
{
    if (a->dtype != b->dtype || !rf_shape_equal(&a->shape, &b->shape) ||
        a->trainable != b->trainable || a->sync_n != b->sync_n ||
        a->sync_m != b->sync_m || a->max_push_rows != b->max_push_rows)
        return false;
    if (!a->trainable)
        return true;
    rf_optim_config x = a->optim, y = b->optim;
    ps_spec_canonical_optim(&x);
    ps_spec_canonical_optim(&y);
    return x.kind == y.kind && x.use_nesterov == y.use_nesterov &&
           x.centered == y.centered && feq(x.learning_rate, y.learning_rate) &&
           feq(x.momentum, y.momentum) &&
           feq(x.initial_accumulator_value, y.initial_accumulator_value) &&
           feq(x.beta1, y.beta1) && feq(x.beta2, y.beta2) &&
           feq(x.epsilon, y.epsilon) && feq(x.decay, y.decay) &&
           feq(x.learning_rate_power, y.learning_rate_power) &&
           feq(x.l1_regularization_strength, y.l1_regularization_strength) &&
           feq(x.l2_regularization_strength, y.l2_regularization_strength) &&
           feq(x.l2_shrinkage_regularization_strength,
               y.l2_shrinkage_regularization_strength);
}
