/* graph/partitioned_vars.c: variable_scope(partitioner=...) for model code.
 * rf_get_variable creates a variable, or under the graph's partitioner its
 * parts "<name>/part_<i>" (rf_partition_variable's slicing), each a
 * variable that knows its slice of the whole (TF's SaveSliceInfo), and
 * returns their ConcatV2 along the sliced axis: what a PartitionedVariable
 * is as a tensor, so the gradient reaches each part through ConcatV2's.
 * Checkpoints store a partitioned variable whole under its own name, as
 * TF's Saver does (rf_variable_checkpoint_name, rf_save_slice_copy), so
 * they restore into any partitioning. */
#include <stdio.h>
#include <string.h>

#include "graph/graph_internal.h"

rf_status rf_graph_set_partitioner(rf_graph *g, const rf_partitioner *p)
{
    if (!g)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_graph_set_partitioner: NULL graph");
    if (!p) {
        gfree(g->partitioner);
        g->partitioner = NULL;
        return RF_OK;
    }
    if (!g->partitioner && !(g->partitioner = gmalloc(sizeof *p)))
        return rf_error_set(RF_ERR_NO_MEMORY,
                            "rf_graph_set_partitioner: no memory");
    *g->partitioner = *p;
    return RF_OK;
}

/* "<full>/part_<i>" -> full, for the part's own (scoped, unique) name. */
static bool whole_name(const char *part, int i, char *out, size_t len)
{
    char suffix[32];
    snprintf(suffix, sizeof suffix, "/part_%d", i);
    size_t n = strlen(part), k = strlen(suffix);
    if (n <= k || strcmp(part + n - k, suffix) != 0 || n - k >= len)
        return false;
    memcpy(out, part, n - k);
    out[n - k] = '\0';
    return true;
}

rf_node *rf_get_variable(rf_graph *g, rf_dtype dtype, rf_shape shape,
                         rf_initializer init, const char *name)
{
    if (!g)
        return NULL;
    if (!g->partitioner || shape.rank == 0)
        return rf_variable(g, dtype, shape, init, name);
    if (!name || !*name)
        return graph_fail(g, RF_ERR_INVALID_ARG,
                          "get_variable: a partitioned variable needs a "
                          "name");
    if (!rf_shape_is_known(&shape))
        return graph_fail(g, RF_ERR_INVALID_ARG,
                          "get_variable %s: shape %s must be fully known", name,
                          SHAPE_STR(&shape));
    rf_partitioned_var pv;
    if (rf_partition_variable(g->partitioner, name, "VariableV2", shape.dims,
                              shape.rank, rf_dtype_size(dtype), false, NULL,
                              &pv) != RF_OK)
        return graph_fail(g, RF_ERR_INVALID_ARG, "get_variable %s: %s", name,
                          rf_error_message());
    if (!pv.partitioned) {
        rf_partitioned_var_free(&pv);
        return rf_variable(g, dtype, shape, init, name);
    }
    rf_node **parts = gcalloc((size_t)pv.num_parts, sizeof *parts);
    if (!parts) {
        rf_partitioned_var_free(&pv);
        return graph_fail(g, RF_ERR_NO_MEMORY, "get_variable: no memory");
    }
    rf_node *fail = NULL;
    bool failed = false;
    for (int i = 0; i < pv.num_parts && !failed; i++) {
        const rf_var_part *q = &pv.parts[i];
        rf_shape ps = rf_shape_make(pv.rank, q->shape);
        rf_node *v = rf_variable(g, dtype, ps, init, q->name);
        rf_save_slice *sl = v ? gcalloc(1, sizeof *sl) : NULL;
        if (!v || !sl) {
            fail =
                v ? graph_fail(g, RF_ERR_NO_MEMORY, "get_variable: no memory")
                  : NULL;
            failed = true;
            break;
        }
        /* initialised later (rf_variable_initialize): with the whole's fans */
        v->var->slice = sl;
        sl->full_shape = shape;
        sl->shape = ps;
        memcpy(sl->offset, q->offset, (size_t)pv.rank * sizeof q->offset[0]);
        if (!whole_name(rf_node_name(v), i, sl->full_name,
                        sizeof sl->full_name)) {
            fail = graph_fail(g, RF_ERR_INVALID_ARG,
                              "get_variable %s: part %d is named '%s' "
                              "(another node has its name)",
                              name, i, rf_node_name(v));
            failed = true;
            break;
        }
        parts[i] = v;
    }
    if (failed) {
        gfree(parts);
        rf_partitioned_var_free(&pv);
        return fail;
    }
    int n = pv.num_parts, axis = pv.slice_dim;
    rf_partitioned_var_free(&pv);
    rf_node *out =
        n == 1 ? parts[0] : rf_concat(g, parts, (size_t)n, axis, NULL);
    gfree(parts);
    return out;
}

bool rf_variable_save_slice(const rf_node *var, rf_save_slice *out)
{
    if (!var || !var->var)
        return false;
    const rf_node *primary = var->var->slot_primary;
    if (var->var->slice) {
        if (out)
            *out = *var->var->slice;
        return true;
    }
    if (!primary || !primary->var || !primary->var->slice)
        return false;
    /* a slot of a part: the primary's slice, named after the whole */
    const rf_save_slice *ps = primary->var->slice;
    size_t pn = strlen(primary->name);
    const char *own = var->name;
    if (strncmp(own, primary->name, pn) == 0 && own[pn] == '/')
        own += pn + 1;
    size_t fn = strlen(ps->full_name), on = strlen(own);
    if (fn + 1 + on >= sizeof out->full_name)
        return false; /* cannot be named: saved under its own name */
    if (out) {
        *out = *ps;
        out->full_name[fn] = '/';
        memcpy(out->full_name + fn + 1, own, on + 1);
    }
    return true;
}

const char *rf_variable_checkpoint_name(const rf_node *var, char *buf,
                                        size_t len)
{
    rf_save_slice s;
    if (!rf_variable_save_slice(var, &s))
        return var ? var->name : NULL;
    snprintf(buf, len, "%s", s.full_name);
    return buf;
}

void rf_save_slice_copy(const rf_save_slice *s, size_t elem_size, void *whole,
                        void *part, bool to_whole)
{
    /* the part is one block per index of the axes before the sliced one:
     * find the sliced axis (where the shapes differ; none: a whole copy) */
    int rank = s->full_shape.rank, d = 0;
    while (d < rank && s->shape.dims[d] == s->full_shape.dims[d])
        d++;
    if (d == rank) {
        size_t bytes = (size_t)rf_shape_numel(&s->shape) * elem_size;
        if (to_whole)
            memcpy(whole, part, bytes);
        else
            memcpy(part, whole, bytes);
        return;
    }
    size_t outer = 1, inner = elem_size;
    for (int i = 0; i < d; i++)
        outer *= (size_t)s->full_shape.dims[i];
    for (int i = d + 1; i < rank; i++)
        inner *= (size_t)s->full_shape.dims[i];
    size_t run = (size_t)s->shape.dims[d] * inner;
    size_t wstride = (size_t)s->full_shape.dims[d] * inner;
    size_t at = (size_t)s->offset[d] * inner;
    for (size_t o = 0; o < outer; o++) {
        char *w = (char *)whole + o * wstride + at;
        char *p = (char *)part + o * run;
        if (to_whole)
            memcpy(w, p, run);
        else
            memcpy(p, w, run);
    }
}
