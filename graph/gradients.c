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
        rf_node **v = grealloc(p->v, cap * sizeof *v);
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
    rf_node **ix = gmalloc(n * sizeof *ix);
    if (!ix)
        return graph_fail(g, RF_ERR_NO_MEMORY, "gradients: no memory");
    for (size_t i = 0; i < n; i++)
        ix[i] = rf_indexed_slices_indices(v[i]);
    rf_shape dense = rf_indexed_slices_dense_shape(v[0]);
    rf_node *ci = rf_concat(g, ix, n, 0, "concat");
    rf_node *cv = rf_concat(g, v, n, 0, "concat_1");
    gfree(ix);
    return rf_indexed_slices(g, ci, cv, dense, NULL);
}

static bool is_float(const rf_node *n)
{
    return n->dtype == RF_F32;
}

static rf_status check_gradient_args(rf_graph *g, rf_node *loss,
                                     rf_node *const *xs, size_t n,
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
    return RF_OK;
}

/* The state of one rf_gradients call, indexed by graph id up to the loss. */
typedef struct backprop {
    rf_graph *g;
    bool *anc;          /* an ancestor of the loss through float data edges */
    bool *reach;        /* a descendant of some x */
    partials *pg;       /* the partial gradients flowing into each node */
    rf_node **result;   /* each node's summed gradient */
    rf_node **dx;       /* the input gradients of the node at hand */
    const char *gscope; /* the "gradients" name scope */
} backprop;

/* Ancestors of the loss (graph id `last`) through float data edges. */
static void mark_ancestors(rf_graph *g, bool *anc, size_t last)
{
    anc[last] = true;
    for (size_t id = last + 1; id-- > 0;) {
        if (!anc[id])
            continue;
        rf_node *node = g->nodes[id];
        for (size_t i = 0; i < node->n_inputs; i++)
            if (is_float(node->inputs[i]))
                anc[node->inputs[i]->id] = true;
    }
}

/* Descendants of xs up to graph id `last`; returns the smallest x id. */
static size_t mark_reached(rf_graph *g, rf_node *const *xs, size_t n,
                           bool *reach, size_t last)
{
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
    return first;
}

/* Does a gradient flow from the loss into `in`, and is it wanted? */
static bool needs_grad(const backprop *bp, const rf_node *in)
{
    return bp->reach[in->id] && bp->anc[in->id] && is_float(in);
}

/* Node id's step in "<gradients>/<name>_grad/": sums the partials flowing
 * into it (its gradient, kept in result) and, when an input needs a
 * gradient, builds the op's gradient and passes the input gradients on as
 * partials of the inputs. Any failure is returned as a status. */
static rf_status backprop_node(backprop *bp, size_t id)
{
    rf_graph *g = bp->g;
    rf_node *node = g->nodes[id];
    char sc[sizeof g->scope + 8];
    if (snprintf(sc, sizeof sc, "%s/%s_grad/", bp->gscope, node->name) >=
        (int)sizeof sc)
        return rf_error_set(RF_ERR_INVALID_ARG, "gradients: name too long");
    rf_status st = rf_name_scope_push(g, sc);
    if (st != RF_OK)
        return st;
    rf_node *total = aggregate(g, bp->pg[id].v, bp->pg[id].n);
    bp->result[id] = total;
    const rf_op_def *def = op_def_get(node->op);
    bool any = false;
    for (size_t i = 0; i < node->n_inputs; i++)
        if (needs_grad(bp, node->inputs[i]))
            any = true;
    if (total && any && def->grad && rf_node_is_indexed_slices(total))
        total = rf_indexed_slices_to_dense(g, total, NULL);
    if (total && any && def->grad) {
        gfree(bp->dx);
        bp->dx = gcalloc(node->n_inputs, sizeof *bp->dx);
        if (!bp->dx) {
            rf_name_scope_pop(g);
            return rf_error_set(RF_ERR_NO_MEMORY, "gradients: no memory");
        }
        st = def->grad(g, node, total, bp->dx);
        for (size_t i = 0; st == RF_OK && i < node->n_inputs; i++) {
            rf_node *in = node->inputs[i];
            if (bp->dx[i] && needs_grad(bp, in))
                st = push_partial(&bp->pg[in->id], bp->dx[i]);
        }
    }
    rf_name_scope_pop(g);
    if (st == RF_OK && (!total || g->err != RF_OK))
        st = g->err != RF_OK ? g->err : RF_ERR_INVALID_ARG;
    return st;
}

rf_status rf_gradients(rf_graph *g, rf_node *loss, rf_node *const *xs, size_t n,
                       rf_node **grads_out)
{
    rf_status st = check_gradient_args(g, loss, xs, n, grads_out);
    if (st != RF_OK)
        return st;
    size_t last = loss->id, count = last + 1;
    backprop bp = {.g = g};
    bp.anc = gcalloc(count, sizeof *bp.anc);
    bp.reach = gcalloc(count, sizeof *bp.reach);
    bp.pg = gcalloc(count, sizeof *bp.pg);
    bp.result = gcalloc(count, sizeof *bp.result);
    bool scoped = false;
    if (!bp.anc || !bp.reach || !bp.pg || !bp.result) {
        st = rf_error_set(RF_ERR_NO_MEMORY, "gradients: no memory");
        goto out;
    }
    mark_ancestors(g, bp.anc, last);
    size_t first = mark_reached(g, xs, n, bp.reach, last);
    if (!bp.reach[last])
        goto out; /* nothing depends: every gradient is None */

    st = rf_name_scope_push(g, "gradients");
    if (st != RF_OK)
        goto out;
    scoped = true;
    char gscope[sizeof g->scope];
    memcpy(gscope, g->scope, sizeof gscope);
    bp.gscope = gscope;

    rf_node *seed = rf_ones_like(g, loss, "grad_ys_0");
    if (!seed || (st = push_partial(&bp.pg[last], seed)) != RF_OK)
        goto fail;
    for (size_t id = last + 1; id-- > first;) {
        if (!bp.reach[id] || !bp.anc[id] || bp.pg[id].n == 0)
            continue;
        if ((st = backprop_node(&bp, id)) != RF_OK)
            goto fail;
    }
    for (size_t i = 0; i < n; i++)
        if (xs[i]->id <= last)
            grads_out[i] = bp.result[xs[i]->id];
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
    if (bp.pg)
        for (size_t i = 0; i < count; i++)
            gfree(bp.pg[i].v);
    gfree(bp.dx);
    gfree(bp.pg);
    gfree(bp.result);
    gfree(bp.anc);
    gfree(bp.reach);
    return st;
}
