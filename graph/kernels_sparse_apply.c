/* graph/kernels_sparse_apply.c: SparseApplyOptimizer, the apply op
 * rf_apply_gradients builds for an IndexedSlices gradient. Inputs (var,
 * indices, values, slots..., [beta1_power, beta2_power]), ApplyOptimizer's
 * layout with the gradient in two. As TF 1.x's Optimizer.apply_gradients:
 * _apply_sparse_duplicate_indices sums repeated indices first
 * (_deduplicate_indexed_slices: rf_optim_dedup into the op's scratch), except
 * GradientDescent's, which scatter-subtracts every entry; then the rows are
 * updated by rf_optim_apply_sparse (ScatterSub, SparseApply*, Adam's
 * _apply_sparse_shared). Entries with index -1 (ids of other parts of the
 * table) are skipped. */
#include <inttypes.h>

#include "graph/graph_internal.h"
#include "rdmaflow/optim.h"

#define SHAPE_FN(fn)                                                           \
    rf_status fn(const rf_node *n, const rf_shape *in, const rf_dtype *dt,     \
                 rf_shape *out, rf_dtype *odt)

static bool dims_fit(int64_t a, int64_t b)
{
    return a < 0 || b < 0 || a == b;
}

SHAPE_FN(shape_sparse_apply)
{
    unsigned ns = n->attr.num_slots;
    if (!n->optim)
        return node_error(n, RF_ERR_INVALID_ARG, "no optimizer config");
    size_t expect = 3 + ns + (n->optim->kind == RF_OPTIM_ADAM ? 2 : 0);
    if (n->n_inputs != expect)
        return node_error(n, RF_ERR_INVALID_ARG, "%zu inputs, expected %zu",
                          n->n_inputs, expect);
    if (dt[1] != RF_I64 || in[1].rank != 1)
        return node_error(n, RF_ERR_INVALID_ARG,
                          "indices must be int64 of rank 1, got %s%s",
                          rf_dtype_name(dt[1]), SHAPE_STR(&in[1]));
    bool fits = in[0].rank >= 1 && in[2].rank == in[0].rank &&
                dims_fit(in[2].dims[0], in[1].dims[0]);
    for (int d = 1; fits && d < in[0].rank; d++)
        fits = dims_fit(in[2].dims[d], in[0].dims[d]);
    if (!fits)
        return node_error(n, RF_ERR_INVALID_ARG,
                          "values %s (for indices %s) do not fit rows of "
                          "the variable %s",
                          SHAPE_STR(&in[2]), SHAPE_STR(&in[1]),
                          SHAPE_STR(&in[0]));
    for (size_t i = 0; i < n->n_inputs; i++) {
        if (i == 1)
            continue;
        if (dt[i] != RF_F32)
            return node_error(n, RF_ERR_INVALID_ARG,
                              "input %zu must be float32, got %s", i,
                              rf_dtype_name(dt[i]));
        if (i != 2 && n->inputs[i]->op != RF_OP_VARIABLE)
            return node_error(n, RF_ERR_INVALID_ARG,
                              "input %zu ('%s') must be a variable", i,
                              n->inputs[i]->name);
        if (i >= 3 && i < 3 + ns && !rf_shape_equal(&in[i], &in[0]))
            return node_error(n, RF_ERR_INVALID_ARG,
                              "slot %zu has shape %s, the variable %s", i - 3,
                              SHAPE_STR(&in[i]), SHAPE_STR(&in[0]));
        if (i >= 3 + ns && in[i].rank != 0)
            return node_error(n, RF_ERR_INVALID_ARG,
                              "beta power %s must be a scalar",
                              SHAPE_STR(&in[i]));
    }
    *out = in[0];
    *odt = RF_F32;
    return RF_OK;
}

/* the dedup table, then the unique indices and their summed rows */
static void scratch_layout(const rf_node *n, size_t entries, size_t width,
                           size_t *table, size_t *idx, size_t *total)
{
    if (n->optim->kind == RF_OPTIM_SGD) {
        *table = *idx = *total = 0;
        return;
    }
    *table = rf_align_up(rf_optim_dedup_scratch_bytes(entries), RF_ALIGN);
    *idx = rf_align_up(entries * sizeof(int64_t), RF_ALIGN);
    *total = *table + *idx + entries * width * sizeof(float);
}

static size_t row_width(const rf_shape *var)
{
    size_t w = 1;
    for (int d = 1; d < var->rank; d++)
        w *= (size_t)var->dims[d];
    return w;
}

size_t scratch_sparse_apply(const rf_node *n, const rf_shape *in,
                            const rf_shape *out, int nthreads)
{
    (void)out;
    (void)nthreads;
    size_t table, idx, total;
    scratch_layout(n, (size_t)in[1].dims[0], row_width(&in[0]), &table, &idx,
                   &total);
    return total;
}

RF_KERNEL(k_sparse_apply)
{
    const rf_node *n = k->node;
    const rf_optim_config *cfg = n->optim;
    unsigned ns = n->attr.num_slots;
    float *var = k->out->data;
    float *slots[RF_OPTIM_MAX_SLOTS] = {NULL};
    for (unsigned i = 0; i < ns; i++)
        slots[i] = k->in[3 + i]->data;
    rf_optim_scalars sc = {0};
    if (cfg->kind == RF_OPTIM_ADAM) {
        sc.beta1_power = *(const float *)k->in[3 + ns]->data;
        sc.beta2_power = *(const float *)k->in[4 + ns]->data;
    }
    size_t rows = (size_t)k->out->shape.dims[0];
    size_t width = row_width(&k->out->shape);
    const int64_t *idx = k->in[1]->data;
    const float *grad = k->in[2]->data;
    size_t m = (size_t)k->in[1]->shape.dims[0];
    rf_status st = RF_OK;
    if (cfg->kind != RF_OPTIM_SGD) {
        size_t table, ioff, total;
        scratch_layout(n, m, width, &table, &ioff, &total);
        int64_t *uidx = (int64_t *)((char *)k->scratch + table);
        float *ugrad = (float *)((char *)k->scratch + table + ioff);
        size_t un = 0;
        st = rf_optim_dedup(idx, m, grad, width, k->scratch, uidx, ugrad, &un);
        idx = uidx;
        grad = ugrad;
        m = un;
    }
    if (st == RF_OK)
        st = rf_optim_apply_sparse(cfg, var, slots, rows, width, idx, m, grad,
                                   cfg->kind == RF_OPTIM_ADAM ? &sc : NULL);
    if (st != RF_OK)
        return node_error(n, st, "%s sparse update failed: %s",
                          rf_optim_kind_name(cfg->kind), rf_error_message());
    return RF_OK;
}
