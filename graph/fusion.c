/* graph/fusion.c: which nodes of a plan the executor runs fused (the
 * compute is kernels_fused.c). Two patterns, as the layer builders and
 * autodiff produce them:
 *
 *   forward   MatMul|Conv2D -> BiasAdd [-> Relu]: the head runs the bias
 *             add (and Relu) on each output block after its sgemm; BiasAdd
 *             and Relu run no kernel and alias the head's buffer.
 *   backward  ReluGrad -> BiasAddGrad: ReluGrad also computes
 *             BiasAddGrad's partial sums; BiasAddGrad adds them up.
 *
 * A forward group forms only when nothing else can see the values it
 * skips: the head's output and the BiasAdd's output (when a Relu follows)
 * have exactly one consumer and are not fetched, the folded nodes have no
 * after-hook and the head none either (the executor runs folded nodes'
 * before-hooks ahead of the head's kernel), the bias is a source value
 * (variable, constant or feed) and nothing but the previous node of the
 * group must run before a folded node. The decision depends only on the
 * plan and its hooks, never on the thread count. RF_FUSION=0 turns it off
 * (tests compare the two). */
#include <string.h>

#include "graph/graph_internal.h"
#include "rdmaflow/env.h"

rf_status fusion_enabled(bool *on)
{
    int64_t v = 1;
    rf_status st = rf_setting_int("RF_FUSION", &v);
    *on = v != 0;
    return st;
}

#define MANY UINT32_MAX
#define NONE (UINT32_MAX - 1)

static bool is_fetched(const rf_fuse_view *v, uint32_t k)
{
    for (size_t i = 0; i < v->nfetch; i++)
        if (v->fetch_p[i] == k)
            return true;
    return false;
}

static unsigned hooks_of(const rf_fuse_view *v, uint32_t k)
{
    return v->hook ? v->hook[k] : 0;
}

static bool is_f32(const rf_fuse_view *v, uint32_t k)
{
    return v->vals[k].dtype == RF_F32 && v->vals[k].shape.rank >= 1;
}

/* is `from` the only non-source node that must run before k? */
static bool only_pred(const rf_fuse_view *v, uint32_t k, uint32_t from)
{
    for (size_t u = 0; u < v->n; u++) {
        if (v->source[u] || u == from)
            continue;
        for (size_t e = v->succ_off[u]; e < v->succ_off[u + 1]; e++)
            if (v->succ[e] == k)
                return false;
    }
    return true;
}

/* cons[k]: the only data consumer of k (NONE, or MANY if several) */
static void try_forward(const rf_fuse_view *v, const uint32_t *cons,
                        rf_fuse *out, uint32_t h)
{
    rf_op_type op = v->nodes[h]->op;
    if ((op != RF_OP_MATMUL && op != RF_OP_CONV2D) || !is_f32(v, h) ||
        is_fetched(v, h) || (hooks_of(v, h) & (RF_HOOK_AFTER | RF_HOOK_INPUTS)))
        return;
    uint32_t b = cons[h];
    if (b == NONE || b == MANY || v->nodes[b]->op != RF_OP_BIAS_ADD ||
        v->in_idx[v->in_off[b]] != h || !is_f32(v, b) ||
        (hooks_of(v, b) & (RF_HOOK_AFTER | RF_HOOK_INPUTS)) ||
        !only_pred(v, b, h))
        return;
    uint32_t bias = v->in_idx[v->in_off[b] + 1];
    if (!v->source[bias])
        return;
    out[h] = (rf_fuse){.role = RF_FUSE_HEAD, .peer = b, .relu = UINT32_MAX};
    out[b] = (rf_fuse){.role = RF_FUSE_FOLDED, .peer = h, .relu = UINT32_MAX};
    uint32_t r = cons[b];
    if (r == NONE || r == MANY || v->nodes[r]->op != RF_OP_RELU ||
        is_fetched(v, b) || !is_f32(v, r) ||
        (hooks_of(v, r) & (RF_HOOK_AFTER | RF_HOOK_INPUTS)) ||
        !only_pred(v, r, b))
        return;
    out[h].relu = r;
    out[r] = (rf_fuse){.role = RF_FUSE_FOLDED, .peer = h, .relu = UINT32_MAX};
}

static void try_backward(const rf_fuse_view *v, rf_fuse *out, uint32_t t)
{
    if (v->nodes[t]->op != RF_OP_BIAS_ADD_GRAD || !is_f32(v, t))
        return;
    uint32_t r = v->in_idx[v->in_off[t]];
    if (v->source[r] || v->nodes[r]->op != RF_OP_RELU_GRAD || !is_f32(v, r) ||
        out[r].role != RF_FUSE_NONE)
        return;
    out[r] =
        (rf_fuse){.role = RF_FUSE_GRAD_HEAD, .peer = t, .relu = UINT32_MAX};
    out[t] =
        (rf_fuse){.role = RF_FUSE_GRAD_TAIL, .peer = r, .relu = UINT32_MAX};
}

void fuse_plan(const rf_fuse_view *v, rf_fuse *out, uint32_t *cons)
{
    memset(out, 0, v->n * sizeof *out);
    for (size_t k = 0; k < v->n; k++)
        cons[k] = NONE;
    for (size_t k = 0; k < v->n; k++) {
        if (v->source[k])
            continue;
        for (size_t i = v->in_off[k]; i < v->in_off[k + 1]; i++) {
            uint32_t s = v->in_idx[i];
            cons[s] = cons[s] == NONE ? (uint32_t)k : MANY;
        }
    }
    for (uint32_t k = 0; k < v->n; k++) {
        if (v->source[k])
            continue;
        try_forward(v, cons, out, k);
        try_backward(v, out, k);
    }
}
