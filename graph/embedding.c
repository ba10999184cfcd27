/* graph/embedding.c: the builders of tf.gather (axis 0),
 * tf.nn.embedding_lookup over a table's parts (TF 1.x embedding_ops.py:
 * one part is a Gather colocated with it, several are one fused
 * EmbeddingLookup node doing the mod/div mapping, the gather and the
 * stitch), and TF's IndexedSlices (a sparse gradient) with its accessors
 * and densification. The kernels are in kernels_sparse.c. */
#include <string.h>

#include "graph/graph_internal.h"

rf_node *rf_gather(rf_graph *g, rf_node *params, rf_node *indices,
                   const char *name)
{
    rf_node *in[2] = {params, indices};
    return node_create(g, RF_OP_GATHER, name, in, 2, NULL);
}

static rf_status parse_strategy(rf_graph *g, const char *s, bool *div)
{
    if (!s || !strcmp(s, "mod")) {
        *div = false;
        return RF_OK;
    }
    if (!strcmp(s, "div")) {
        *div = true;
        return RF_OK;
    }
    graph_fail(g, RF_ERR_INVALID_ARG,
               "embedding_lookup: partition_strategy '%s' is not \"mod\" "
               "or \"div\"",
               s);
    return RF_ERR_INVALID_ARG;
}

rf_node *rf_embedding_lookup(rf_graph *g, rf_node *const *params,
                             size_t nparams, rf_node *ids,
                             const char *partition_strategy, const char *name)
{
    if (!g)
        return NULL;
    if (!params || nparams == 0)
        return graph_fail(g, RF_ERR_INVALID_ARG, "embedding_lookup: no params");
    if (nparams > (size_t)INT32_MAX)
        return graph_fail(g, RF_ERR_INVALID_ARG, "embedding_lookup: %zu parts",
                          nparams);
    bool div = false;
    if (parse_strategy(g, partition_strategy, &div) != RF_OK)
        return NULL;
    const char *nm = name ? name : "embedding_lookup";
    if (nparams == 1) {
        /* TF: `with ops.colocate_with(params[0]): array_ops.gather(...)` */
        if (!params[0])
            return rf_gather(g, params[0], ids, nm);
        if (rf_colocation_push(g, params[0]) != RF_OK)
            return graph_fail(g, RF_ERR_INVALID_ARG, "embedding_lookup: %s",
                              rf_error_message());
        rf_node *out = rf_gather(g, params[0], ids, nm);
        rf_colocation_pop(g);
        return out;
    }
    rf_node *small[9],
        **in = nparams + 1 <= 9 ? small : gmalloc((nparams + 1) * sizeof *in);
    if (!in)
        return graph_fail(g, RF_ERR_NO_MEMORY, "embedding_lookup: no memory");
    in[0] = ids;
    memcpy(in + 1, params, nparams * sizeof *in);
    rf_attrs a;
    memset(&a, 0, sizeof a);
    a.div_strategy = div;
    a.num_parts = (int)nparams;
    rf_node *out =
        node_create(g, RF_OP_EMBEDDING_LOOKUP, nm, in, nparams + 1, &a);
    if (in != small)
        gfree(in);
    return out;
}

rf_node *rf_embedding_lookup_partitioned(rf_graph *g, rf_node *table,
                                         rf_node *ids,
                                         const char *partition_strategy,
                                         const char *name)
{
    if (!g)
        return NULL;
    /* rf_get_variable's PartitionedVariable: ConcatV2 of variables along
     * axis 0, each a part (a save slice) */
    bool parts = table && table->op == RF_OP_CONCAT && table->attr.axis == 0;
    for (size_t i = 0; parts && i < table->n_inputs; i++)
        parts = table->inputs[i]->op == RF_OP_VARIABLE &&
                table->inputs[i]->var->slice;
    if (parts)
        return rf_embedding_lookup(g, table->inputs, table->n_inputs, ids,
                                   partition_strategy, name);
    return rf_embedding_lookup(g, &table, 1, ids, partition_strategy, name);
}

rf_node *rf_indexed_slices(rf_graph *g, rf_node *indices, rf_node *values,
                           rf_shape dense_shape, const char *name)
{
    rf_node *in[2] = {indices, values};
    rf_attrs a;
    memset(&a, 0, sizeof a);
    a.shape = dense_shape;
    return node_create(g, RF_OP_INDEXED_SLICES, name, in, 2, &a);
}

bool rf_node_is_indexed_slices(const rf_node *n)
{
    return n && n->op == RF_OP_INDEXED_SLICES;
}

rf_node *rf_indexed_slices_indices(const rf_node *slices)
{
    return rf_node_is_indexed_slices(slices) ? slices->inputs[0] : NULL;
}

rf_node *rf_indexed_slices_values(const rf_node *slices)
{
    return rf_node_is_indexed_slices(slices) ? slices->inputs[1] : NULL;
}

rf_shape rf_indexed_slices_dense_shape(const rf_node *slices)
{
    return rf_node_is_indexed_slices(slices) ? slices->attr.shape : RF_SCALAR;
}

rf_node *rf_indexed_slices_to_dense(rf_graph *g, rf_node *slices,
                                    const char *name)
{
    if (!g || !slices)
        return NULL;
    if (!rf_node_is_indexed_slices(slices))
        return graph_fail(g, RF_ERR_INVALID_ARG,
                          "indexed_slices_to_dense: '%s' is a %s, not an "
                          "IndexedSlices",
                          slices->name, rf_op_name(slices->op));
    rf_node *in[2] = {slices->inputs[0], slices};
    rf_attrs a;
    memset(&a, 0, sizeof a);
    a.shape = slices->attr.shape;
    return node_create(g, RF_OP_INDEXED_SLICES_TO_DENSE, name, in, 2, &a);
}
