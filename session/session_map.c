/* session/session_map.c: from the placed worker graph to remote variables.
 * replica_device_setter put every variable on a ps task; each ApplyX node
 * of the graph (in creation order, which is the variables' order) names a
 * trained variable with its gradient, optimizer and slots; global_step
 * must be on ps task 0 (the cluster's word). Any other variable on /job:ps
 * is refused rather than silently kept local. A variable trained by a
 * sparse apply (the graph read it only through lookups) becomes an
 * embedding table shard (map_table); one read densely too has a dense
 * gradient and stays a dense shard (READ whole each step). Each variable's
 * transfer kind (dense or rows) is chosen here, once: its push goes by the
 * strategy's transfer of that kind (sess_var.xfer). */
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/device.h"
#include "session/session_internal.h"

/* The ps task of a node placed by replica_device_setter. */
static rf_status ps_task_of(const rf_session *s, const rf_node *n, int *task)
{
    const char *dev = rf_node_requested_device(n);
    rf_device_spec spec;
    if (rf_device_spec_parse(dev, &spec) != RF_OK || strcmp(spec.job, "ps") ||
        spec.task < 0 || spec.task >= s->task.num_ps)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "variable '%s' is placed on '%s', not on one of "
                            "the %d ps tasks",
                            rf_node_name(n), dev, s->task.num_ps);
    *task = spec.task;
    return RF_OK;
}

static bool is_part_of(const rf_session *s, const rf_node *var)
{
    if (var == s->nodes.global_step_var)
        return true;
    for (size_t i = 0; i < s->nv; i++) {
        const rf_apply_info *a = &s->v[i].apply;
        if (var == s->v[i].var || var == a->beta1_power ||
            var == a->beta2_power)
            return true;
        for (unsigned k = 0; k < a->num_slots; k++)
            if (var == a->slots[k])
                return true;
    }
    return false;
}

static rf_status map_global_step(rf_session *s)
{
    rf_node *gs = s->opt.global_step ? s->opt.global_step
                                     : rf_graph_find(s->g, "global_step");
    if (!gs || rf_node_op(gs) != RF_OP_VARIABLE)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "the graph has no global_step variable (create it "
                            "with rf_global_step first)");
    s->nodes.global_step_var = gs;
    int task = -1;
    rf_status st = ps_task_of(s, gs, &task);
    if (st != RF_OK)
        return st;
    if (task != 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "global_step was placed on ps task %d; the "
                            "cluster's global_step is on ps task 0",
                            task);
    return RF_OK;
}

/* A variable trained by a sparse apply (its gradient an IndexedSlices: the
 * graph read it only through Gather and embedding lookups) becomes an
 * embedding table shard: rows, row bytes and max_push_rows, the most rows
 * one step pushes (the gradient's static number of indices, else
 * rf_session_options.max_lookup_ids). */
static rf_status map_table(rf_session *s, sess_var *v)
{
    rf_shape sh = rf_node_shape(v->var);
    const char *name = rf_node_name(v->var);
    if (sh.rank < 1 || sh.dims[0] < 1 || rf_node_dtype(v->var) != RF_F32)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "'%s' is trained by sparse updates but is not a "
                            "float32 table of rank >= 1",
                            name);
    rf_status st = sess_push_check_rows(s, v);
    if (st != RF_OK)
        return st;
    rf_shape ix = rf_node_shape(v->apply.indices);
    int64_t bound =
        ix.rank == 1 && ix.dims[0] >= 0 ? ix.dims[0] : s->opt.max_lookup_ids;
    if (bound <= 0 || bound > (int64_t)UINT32_MAX)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "embedding table '%s': its gradient's number of "
                            "rows has no static bound; set "
                            "rf_session_options.max_lookup_ids",
                            name);
    v->table = true;
    v->max_push_rows = (uint32_t)bound;
    v->rows = (size_t)sh.dims[0];
    v->width = (size_t)(rf_shape_numel(&sh) / sh.dims[0]);
    v->row_bytes = v->width * sizeof(float);
    /* deduplicated unless sgd (whose updates apply once per occurrence)
     * and the strategy takes repeats */
    if (v->apply.cfg->kind != RF_OPTIM_SGD || s->push->rows_dedup) {
        v->dedup_scratch = malloc(rf_optim_dedup_scratch_bytes(bound));
        if (!v->dedup_scratch)
            return rf_error_set(RF_ERR_NO_MEMORY, "session: out of memory");
    }
    return RF_OK;
}

rf_ps_shard_spec sess_spec(const rf_session *s, const sess_var *v)
{
    uint32_t n, m;
    sess_push_replicas(s, &n, &m);
    return (rf_ps_shard_spec){.name = rf_node_name(v->var),
                              .part = 0,
                              .dtype = rf_node_dtype(v->var),
                              .shape = rf_node_shape(v->var),
                              .trainable = true,
                              .optim = *v->apply.cfg,
                              .replicas_to_aggregate = n,
                              .total_num_replicas = m,
                              .max_push_rows = v->max_push_rows};
}

static bool is_apply(const rf_node *n)
{
    return rf_node_op(n) == RF_OP_APPLY_OPTIMIZER ||
           rf_node_op(n) == RF_OP_SPARSE_APPLY_OPTIMIZER;
}

rf_status sess_map(rf_session *s)
{
    rf_status st = map_global_step(s);
    if (st != RF_OK)
        return st;
    rf_graph *g = s->g;
    size_t n = rf_graph_num_nodes(g), cap = 0;
    for (size_t i = 0; i < n; i++)
        cap += is_apply(rf_graph_node(g, i));
    s->v = calloc(cap ? cap : 1, sizeof *s->v);
    s->nodes.nnodes = n;
    s->nodes.var_of_node = malloc((n ? n : 1) * sizeof *s->nodes.var_of_node);
    if (!s->v || !s->nodes.var_of_node)
        return rf_error_set(RF_ERR_NO_MEMORY, "session: out of memory");
    for (size_t i = 0; i < n; i++)
        s->nodes.var_of_node[i] = -1;
    for (size_t i = 0; i < n; i++) {
        rf_node *node = rf_graph_node(g, i);
        if (!is_apply(node))
            continue;
        sess_var *v = &s->v[s->nv];
        if (rf_node_apply_info(node, &v->apply) != RF_OK)
            return rf_error_set(RF_ERR_INVALID_ARG, "%s: %s",
                                rf_node_name(node), rf_error_message());
        v->var = v->apply.var;
        v->grad = v->apply.grad;
        int task = -1;
        st = ps_task_of(s, v->var, &task);
        if (st != RF_OK)
            return st;
        v->ps_task = (size_t)task;
        v->device = rf_node_requested_device(v->var);
        for (unsigned k = 0; k < v->apply.num_slots; k++)
            v->slot_names[k] = rf_node_name(v->apply.slots[k]);
        s->nodes.var_of_node[rf_node_id(v->var)] = (int32_t)s->nv;
        s->nv++;
        if (v->apply.sparse && (st = map_table(s, v)) != RF_OK)
            return st;
        /* the transfer kind, chosen once: every push of v goes by it */
        v->xfer = v->table ? &s->push->rows : &s->push->dense;
    }
    if (s->nv == 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "the model has no trainable variable");
    for (size_t i = 0; i < rf_graph_num_variables(g); i++) {
        rf_node *var = rf_graph_variable(g, i);
        rf_device_spec spec;
        if (rf_device_spec_parse(rf_node_requested_device(var), &spec) ==
                RF_OK &&
            !strcmp(spec.job, "ps") && !is_part_of(s, var))
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "variable '%s' on %s is neither trainable nor "
                                "an optimizer slot: not supported in "
                                "distributed mode",
                                rf_node_name(var),
                                rf_node_requested_device(var));
    }
    return sess_rows_map(s);
}
