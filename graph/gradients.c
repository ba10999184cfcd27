/* graph/gradients.c: reverse-mode autodiff (tf.gradients). Finds the nodes
 * on a data path from xs to loss, walks them in reverse creation order
 * (creation order is topological), sums each node's partial gradients with
 * AddN in the order they were produced, and calls the op's gradient
 * builder. Names follow TF: "gradients/<op>_grad/...". Sparse partials
 * (IndexedSlices, from Gather/EmbeddingLookup) of one node are aggregated
 * as TF's _AggregatedGrads does: all sparse, one IndexedSlices of the
 * concatenated indices and values; mixed with dense ones, here densified
 * and added with AddN (TF instead turns the dense ones into IndexedSlices
 * over every row: the same sum, rounded in another order). A sparse total
 * reaching an op's gradient builder is densified first (TF's
 * convert_to_tensor of an IndexedSlices); a variable keeps it sparse. */
#include <stdio.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "rdmaflow/status.h"

typedef struct partials {
    rf_node **v;
    size_t n, cap;
} partials;

static rf_status push_partial(partials *p, rf_node *dy)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 2;
        rf_node **v = rf_grealloc(p->v, cap * sizeof *v);
        if (!v)
            return rf_error_set(RF_ERR_NO_MEMORY, "gradients: no memory");
        p->v = v;
        p->cap = cap;
    }
    p->v[p->n++] = dy;
    return RF_OK;
}

/* The sum of a node's partial gradients (v[0..n), n >= 1; v is scratch). */
static rf_node *aggregate(rf_graph *g, rf_node **v, size_t n)
{
    if (n == 1)
        return v[0];
    size_t ns = 0;
    for (size_t i = 0; i < n; i++)
        ns += rf_node_is_indexed_slices(v[i]);
    if (ns == 0)
        return rf_add_n(g, v, n, "AddN");
    if (ns < n) {
        for (size_t i = 0; i < n; i++)
            if (rf_node_is_indexed_slices(v[i]))
                v[i] = rf_indexed_slices_to_dense(g, v[i], NULL);
        return rf_add_n(g, v, n, "AddN");
    }
    rf_node **ix = rf_gmalloc(n * sizeof *ix);
    if (!ix)
        return rf_graph_fail(g, RF_ERR_NO_MEMORY, "gradients: no memory");
    for (size_t i = 0; i < n; i++)
        ix[i] = rf_indexed_slices_indices(v[i]);
    rf_shape dense = rf_indexed_slices_dense_shape(v[0]);
    rf_node *ci = rf_concat(g, ix, n, 0, "concat");
    rf_node *cv = rf_concat(g, v, n, 0, "concat_1");
    rf_gfree(ix);
    return rf_indexed_slices(g, ci, cv, dense, NULL);
}

static bool is_float(const rf_node *n)
{
    return n->dtype == RF_F32;
}

rf_status rf_gradients(rf_graph *g, rf_node *loss, rf_node *const *xs, size_t n,
                       rf_node **grads_out)
{
    if (!g || !loss || loss->graph != g || (n && (!xs || !grads_out)))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_gradients: NULL argument or foreign loss");
    if (g->err != RF_OK)
        return rf_error_set(g->err,
                            "rf_gradients: the graph has an earlier error: %s",
                            g->errmsg);
    if (!is_float(loss))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_gradients: loss '%s' is %s, not float32",
                            loss->name, rf_dtype_name(loss->dtype));
    for (size_t i = 0; i < n; i++) {
        grads_out[i] = NULL;
        if (!xs[i] || xs[i]->graph != g)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "rf_gradients: xs[%zu] is NULL or foreign", i);
    }
    size_t last = loss->id, count = last + 1;
    bool *anc = rf_gcalloc(count, sizeof *anc);
    bool *reach = rf_gcalloc(count, sizeof *reach);
    partials *pg = rf_gcalloc(count, sizeof *pg);
    rf_node **result = rf_gcalloc(count, sizeof *result);
    rf_node **dx = NULL;
    rf_status st = RF_OK;
    bool scoped = false;
    if (!anc || !reach || !pg || !result) {
        st = rf_error_set(RF_ERR_NO_MEMORY, "gradients: no memory");
        goto out;
    }
    /* ancestors of loss through float data edges */
    anc[last] = true;
    for (size_t id = last + 1; id-- > 0;) {
        if (!anc[id])
            continue;
        rf_node *node = g->nodes[id];
        for (size_t i = 0; i < node->n_inputs; i++)
            if (is_float(node->inputs[i]))
                anc[node->inputs[i]->id] = true;
    }
    /* descendants of xs */
    size_t first = last;
    for (size_t i = 0; i < n; i++)
        if (xs[i]->id <= last) {
            reach[xs[i]->id] = true;
            if (xs[i]->id < first)
                first = xs[i]->id;
        }
    for (size_t id = first; id <= last; id++) {
        rf_node *node = g->nodes[id];
        for (size_t i = 0; !reach[id] && i < node->n_inputs; i++)
            if (reach[node->inputs[i]->id])
                reach[id] = true;
    }
    if (!reach[last])
        goto out; /* nothing depends: every gradient is None */

    st = rf_name_scope_push(g, "gradients");
    if (st != RF_OK)
        goto out;
    scoped = true;
    char gscope[sizeof g->scope];
    memcpy(gscope, g->scope, sizeof gscope);

    rf_node *seed = rf_ones_like(g, loss, "grad_ys_0");
    if (!seed || (st = push_partial(&pg[last], seed)) != RF_OK)
        goto fail;
    for (size_t id = last + 1; id-- > first;) {
        if (!reach[id] || !anc[id] || pg[id].n == 0)
            continue;
        rf_node *node = g->nodes[id];
        char sc[sizeof g->scope + 8];
        if (snprintf(sc, sizeof sc, "%s/%s_grad/", gscope, node->name) >=
            (int)sizeof sc) {
            st = rf_error_set(RF_ERR_INVALID_ARG, "gradients: name too long");
            goto fail;
        }
        if ((st = rf_name_scope_push(g, sc)) != RF_OK)
            goto fail;
        rf_node *total = aggregate(g, pg[id].v, pg[id].n);
        result[id] = total;
        const rf_op_def *def = rf_op_def_get(node->op);
        bool any = false;
        for (size_t i = 0; i < node->n_inputs; i++) {
            rf_node *in = node->inputs[i];
            if (reach[in->id] && anc[in->id] && is_float(in))
                any = true;
        }
        if (total && any && def->grad && rf_node_is_indexed_slices(total))
            total = rf_indexed_slices_to_dense(g, total, NULL);
        if (total && any && def->grad) {
            rf_gfree(dx);
            dx = rf_gcalloc(node->n_inputs, sizeof *dx);
            if (!dx) {
                rf_name_scope_pop(g);
                st = rf_error_set(RF_ERR_NO_MEMORY, "gradients: no memory");
                goto fail;
            }
            st = def->grad(g, node, total, dx);
            for (size_t i = 0; st == RF_OK && i < node->n_inputs; i++) {
                rf_node *in = node->inputs[i];
                if (dx[i] && reach[in->id] && anc[in->id] && is_float(in))
                    st = push_partial(&pg[in->id], dx[i]);
            }
        }
        rf_name_scope_pop(g);
        if (!total || st != RF_OK || g->err != RF_OK)
            goto fail;
    }
    for (size_t i = 0; i < n; i++)
        if (xs[i]->id <= last)
            grads_out[i] = result[xs[i]->id];
    goto out;
fail:
    if (st == RF_OK)
        st = g->err != RF_OK ? g->err : RF_ERR_INVALID_ARG;
    if (g->err != RF_OK)
        rf_error_set(st, "rf_gradients: %s", g->errmsg);
    for (size_t i = 0; i < n; i++)
        grads_out[i] = NULL;
out:
    if (scoped)
        rf_name_scope_pop(g);
    if (pg)
        for (size_t i = 0; i < count; i++)
            rf_gfree(pg[i].v);
    rf_gfree(dx);
    rf_gfree(pg);
    rf_gfree(result);
    rf_gfree(anc);
    rf_gfree(reach);
    return st;
}
