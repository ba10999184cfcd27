/* session/session_plan.c: the session's plans. One per distinct (feeds,
 * fetches) the caller runs, made the first time: a training plan (fetches
 * include train_op) fetches the caller's other fetches and every gradient
 * instead of running the local ApplyX ops and train_op. Executor hooks make
 * the cut between this worker and the ps tasks: before an op that reads a
 * remote variable, wait for that variable's READ only; after a gradient
 * node, copy the gradient to registered staging and hand it to the push
 * strategy. Each training plan also builds its step description, the one
 * list of operations that execution names its trace spans from and that
 * rf_session_describe returns (--explain). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/session_internal.h"

void sess_span(rf_session *s, const char *name, const char *args, uint64_t t0,
               int tid)
{
    if (s->report.trace)
        rf_trace_add_span(s->report.trace, name, "fabric", args, t0,
                          rf_now_ns() - t0, tid, s->run.step);
}

/* ---- hooks ---------------------------------------------------------------
 */

static rf_status before_op(void *ctx, rf_node *node, const rf_tensor *value,
                           int tid)
{
    (void)value;
    sess_plan *p = ctx;
    rf_session *s = p->session;
    size_t id = rf_node_id(node);
    for (uint32_t e = p->wait_off[id]; e < p->wait_off[id + 1]; e++) {
        size_t i = p->wait_var[e];
        sess_var *v = &s->v[i];
        uint64_t t0 = rf_now_ns();
        rf_status st = rf_ps_read_set_wait(s->block.reads, v->read_ix);
        if (st != RF_OK)
            return st;
        if (s->report.trace) {
            const char *read_span = p->ops[p->read_op[i]].name;
            uint64_t t1 = rf_now_ns();
            if (t1 - t0 > 2000) { /* this op really waited */
                char name[RF_PS_MAX_NAME + 32];
                snprintf(name, sizeof name, "wait %s", read_span);
                rf_trace_add_span(s->report.trace, name, "fabric", v->args, t0,
                                  t1 - t0, tid, s->run.step);
            }
            if (atomic_exchange(&v->read_traced, 1) == 0)
                rf_trace_add_span(s->report.trace, read_span, "fabric", v->args,
                                  v->t_post, t1 - v->t_post, tid, s->run.step);
        }
    }
    return RF_OK;
}

static rf_status after_op(void *ctx, rf_node *node, const rf_tensor *value,
                          int tid)
{
    sess_plan *p = ctx;
    rf_session *s = p->session;
    int32_t i = p->grad_var[rf_node_id(node)];
    bool is_idx = i < 0;
    if (is_idx)
        i = p->idx_var[rf_node_id(node)];
    if (i < 0)
        return RF_OK;
    sess_var *v = &s->v[i];
    if (v->table)
        return sess_rows_gradient(s, (size_t)i, is_idx, value,
                                  p->ops[p->push_op[i]].name, tid);
    size_t bytes = rf_tensor_bytes(value);
    if (bytes != v->info.values_bytes || value->dtype != RF_F32) {
        char b1[64];
        rf_shape_format(&value->shape, b1, sizeof b1);
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "gradient '%s' of '%s' is %s%s (%zu bytes); the "
                            "shard has %zu",
                            rf_node_name(node), rf_node_name(v->var),
                            rf_dtype_name(value->dtype), b1, bytes,
                            v->info.values_bytes);
    }
    memcpy(v->grad_buf, value->data, bytes);
    return sess_push_gradient(s, (size_t)i, p->ops[p->push_op[i]].name, tid);
}

/* ---- making a plan -------------------------------------------------------
 */

static bool same_nodes(rf_node *const *a, size_t na, rf_node *const *b,
                       size_t nb)
{
    return na == nb && (na == 0 || memcmp(a, b, na * sizeof *a) == 0);
}

static void plan_free(sess_plan *p)
{
    if (!p)
        return;
    rf_plan_destroy(p->plan);
    free(p->feeds);
    free(p->fetches);
    free(p->fetch_map);
    free(p->out);
    free(p->wait_off);
    free(p->wait_var);
    free(p->grad_var);
    free(p->idx_var);
    for (size_t k = 0; k < p->nops; k++)
        free((char *)p->ops[k].name);
    free(p->ops);
    free(p->read_op);
    free(p->push_op);
    free(p);
}

void sess_plans_destroy(rf_session *s)
{
    while (s->run.plans) {
        sess_plan *p = s->run.plans;
        s->run.plans = p->next;
        plan_free(p);
    }
}

/* The executor plan: the caller's fetches without train_op, then (train)
 * every gradient. */
static rf_status make_exec_plan(rf_session *s, sess_plan *p)
{
    size_t ntables = 0;
    for (size_t i = 0; i < s->nv; i++)
        ntables += s->v[i].table;
    size_t n = p->nfetches + (p->train ? s->nv + ntables : 0);
    rf_node **f = calloc(n ? n : 1, sizeof *f);
    p->fetch_map = calloc(p->nfetches ? p->nfetches : 1, sizeof *p->fetch_map);
    p->out = calloc(n ? n : 1, sizeof *p->out);
    if (!f || !p->fetch_map || !p->out) {
        free(f);
        return rf_error_set(RF_ERR_NO_MEMORY, "session: out of memory");
    }
    size_t k = 0;
    for (size_t j = 0; j < p->nfetches; j++) {
        if (p->fetches[j] == s->nodes.train_op) {
            p->fetch_map[j] = -1;
            continue;
        }
        p->fetch_map[j] = (int32_t)k;
        f[k++] = p->fetches[j];
    }
    if (p->train)
        for (size_t i = 0; i < s->nv; i++)
            f[k++] = s->v[i].grad;
    if (p->train) /* a table's gradient: its indices too */
        for (size_t i = 0; i < s->nv; i++)
            if (s->v[i].table)
                f[k++] = s->v[i].apply.indices;
    p->plan_nfetch = k;
    rf_status st = rf_plan_create(s->ex, s->g, f, k, p->feeds, p->nfeeds, NULL,
                                  0, &p->plan);
    free(f);
    if (st != RF_OK)
        return rf_error_set(st, "creating the %s plan: %s",
                            p->train ? "training" : "session's",
                            rf_error_message());
    return RF_OK;
}

/* The dense shard n is (waited for before its readers), or -1. */
static int32_t remote_var(const rf_session *s, const rf_node *n)
{
    size_t id = rf_node_id(n);
    int32_t i = id < s->nodes.nnodes ? s->nodes.var_of_node[id] : -1;
    return i >= 0 && !s->v[i].table ? i : -1;
}

/* Only lookups read a table shard, and only as a part: the worker holds
 * none of it. */
static rf_status check_table_readers(const rf_session *s, rf_node *n)
{
    size_t id = rf_node_id(n);
    bool lookup =
        id < s->rows.nlookups_of_node && s->rows.lookup_of_node[id] >= 0;
    size_t ids_in = rf_node_op(n) == RF_OP_GATHER ? 1 : 0;
    for (size_t j = 0; j < rf_node_num_inputs(n); j++) {
        rf_node *in = rf_node_input(n, j);
        size_t iid = rf_node_id(in);
        int32_t i = iid < s->nodes.nnodes ? s->nodes.var_of_node[iid] : -1;
        if (i < 0 || !s->v[i].table || (lookup && j != ids_in))
            continue;
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "'%s' (%s) reads the embedding table shard '%s' "
                            "whole; only lookups (Gather, embedding_lookup) "
                            "may read a table, which the worker never holds",
                            rf_node_name(n), rf_node_op_name(n),
                            rf_node_name(in));
    }
    return RF_OK;
}

/* CSR by node id of the remote variables each plan node reads, the
 * gradient map, and the hooks. */
static rf_status hook_plan(rf_session *s, sess_plan *p)
{
    size_t nn = rf_graph_num_nodes(s->g);
    size_t nplan = rf_plan_num_nodes(p->plan), edges = 0;
    for (size_t k = 0; k < nplan; k++) {
        rf_node *n = rf_plan_node(p->plan, k);
        for (size_t j = 0; j < rf_node_num_inputs(n); j++)
            edges += remote_var(s, rf_node_input(n, j)) >= 0;
    }
    p->wait_off = calloc(nn + 1, sizeof *p->wait_off);
    p->grad_var = malloc((nn ? nn : 1) * sizeof *p->grad_var);
    p->idx_var = malloc((nn ? nn : 1) * sizeof *p->idx_var);
    p->wait_var = malloc((edges ? edges : 1) * sizeof *p->wait_var);
    uint32_t *fill = calloc(nn ? nn : 1, sizeof *fill);
    rf_status st = RF_OK;
    if (!p->wait_off || !p->grad_var || !p->idx_var || !p->wait_var || !fill) {
        st = rf_error_set(RF_ERR_NO_MEMORY, "session: out of memory");
        goto out;
    }
    for (size_t i = 0; i < nn; i++)
        p->grad_var[i] = p->idx_var[i] = -1;
    if (p->train)
        for (size_t i = 0; i < s->nv; i++) {
            p->grad_var[rf_node_id(s->v[i].grad)] = (int32_t)i;
            if (s->v[i].table)
                p->idx_var[rf_node_id(s->v[i].apply.indices)] = (int32_t)i;
        }
    for (size_t k = 0; k < nplan; k++)
        if ((st = check_table_readers(s, rf_plan_node(p->plan, k))) != RF_OK)
            goto out;
    for (size_t j = 0; j < p->nfetches; j++) {
        size_t fid = rf_node_id(p->fetches[j]);
        int32_t i = fid < s->nodes.nnodes ? s->nodes.var_of_node[fid] : -1;
        if (i >= 0 && s->v[i].table) {
            st = rf_error_set(RF_ERR_INVALID_ARG,
                              "fetching the embedding table shard '%s': the "
                              "worker never holds a table (fetch a lookup "
                              "of it)",
                              rf_node_name(p->fetches[j]));
            goto out;
        }
    }
    for (size_t k = 0; k < nplan; k++) {
        rf_node *n = rf_plan_node(p->plan, k);
        for (size_t j = 0; j < rf_node_num_inputs(n); j++)
            if (remote_var(s, rf_node_input(n, j)) >= 0)
                p->wait_off[rf_node_id(n) + 1]++;
    }
    for (size_t i = 0; i < nn; i++)
        p->wait_off[i + 1] += p->wait_off[i];
    for (size_t k = 0; k < nplan; k++) {
        rf_node *n = rf_plan_node(p->plan, k);
        size_t id = rf_node_id(n);
        for (size_t j = 0; j < rf_node_num_inputs(n); j++) {
            int32_t vi = remote_var(s, rf_node_input(n, j));
            if (vi >= 0)
                p->wait_var[p->wait_off[id] + fill[id]++] = (uint32_t)vi;
        }
        bool lookup =
            id < s->rows.nlookups_of_node && s->rows.lookup_of_node[id] >= 0;
        unsigned when =
            (p->wait_off[id + 1] > p->wait_off[id] ? RF_HOOK_BEFORE : 0) |
            (p->grad_var[id] >= 0 || p->idx_var[id] >= 0 ? RF_HOOK_AFTER : 0) |
            (lookup ? RF_HOOK_INPUTS : 0);
        if (when && (st = rf_plan_hook_node(p->plan, n, when)) != RF_OK) {
            rf_error_set(st, "hooking %s: %s", rf_node_name(n),
                         rf_error_message());
            goto out;
        }
    }
    rf_plan_set_hooks(p->plan, before_op, after_op, p);
    rf_plan_set_input_hook(p->plan, sess_rows_inputs, p);
out:
    free(fill);
    return st;
}

/* ---- the step description ------------------------------------------------
 */

/* Appends op, named "<what> <var>" (just what when var is NULL). */
static rf_status add_op(sess_plan *p, size_t cap, rf_step_op op,
                        const char *what, const char *var)
{
    char name[RF_PS_MAX_NAME + 64];
    snprintf(name, sizeof name, "%s%s%s", what, var ? " " : "", var ? var : "");
    if (p->nops >= cap || !(op.name = strdup(name)))
        return rf_error_set(RF_ERR_NO_MEMORY, "session: out of memory");
    p->ops[p->nops++] = op;
    return RF_OK;
}

/* A table's lookup at max_push_rows rows: by its forced way, or (auto)
 * by the costlier of the two. */
static size_t lookup_wire_bound(const sess_var *v)
{
    size_t rows = sess_rows_read_wire(v, v->max_push_rows),
           gather = sess_rows_gather_wire(v, v->max_push_rows);
    switch (v->way.configured) {
    case RF_LOOKUP_ROWS:
        return rows;
    case RF_LOOKUP_GATHER:
        return gather;
    case RF_LOOKUP_AUTO:
        break;
    }
    return rows > gather ? rows : gather;
}

static rf_step_op var_op(const sess_var *v, rf_step_op_kind kind,
                         const char *op)
{
    if (v->table) /* the bound: max_push_rows rows (by either way) */
        return (rf_step_op){.kind = kind,
                            .op = op,
                            .var = rf_node_name(v->var),
                            .ps_task = v->ps_task,
                            .bytes = (size_t)v->max_push_rows * v->row_bytes,
                            .wire_bytes = lookup_wire_bound(v),
                            .bound = true};
    return (rf_step_op){.kind = kind,
                        .op = op,
                        .var = rf_node_name(v->var),
                        .ps_task = v->ps_task,
                        .bytes = v->info.values_bytes,
                        .wire_bytes = v->info.values_bytes};
}

/* [SSP: READ_CLOCKS,] READs (all posted at once), COMPUTE, one push per
 * gradient in the order the plan makes them, the wait, the strategy's
 * advance of global_step (FETCH_AND_ADD, or sync's WAIT_GLOBAL_STEP)[, SSP:
 * the clock's FETCH_AND_ADD]. */
static rf_status describe_plan(rf_session *s, sess_plan *p)
{
    size_t cap = 2 * s->nv + 5;
    p->ops = calloc(cap, sizeof *p->ops);
    p->read_op = calloc(s->nv, sizeof *p->read_op);
    p->push_op = calloc(s->nv, sizeof *p->push_op);
    if (!p->ops || !p->read_op || !p->push_op)
        return rf_error_set(RF_ERR_NO_MEMORY, "session: out of memory");
    rf_status st = RF_OK;
    bool ssp = p->train && sess_ssp_on(s);
    if (ssp) {
        size_t b = 8 * (size_t)s->task.num_workers;
        p->ssp_read_op = p->nops;
        st = add_op(p, cap,
                    (rf_step_op){.kind = RF_STEP_CLOCKS_READ,
                                 .op = "READ_CLOCKS",
                                 .var = "ssp_clocks",
                                 .ps_task = 0,
                                 .bytes = b,
                                 .wire_bytes = b},
                    "READ", "ssp_clocks");
    }
    for (size_t i = 0; i < s->nv && st == RF_OK; i++) {
        const char *what = s->v[i].table ? "READ_ROWS" : "READ";
        p->read_op[i] = p->nops;
        st = add_op(p, cap, var_op(&s->v[i], RF_STEP_READ, what), what,
                    rf_node_name(s->v[i].var));
    }
    if (st == RF_OK)
        st = add_op(p, cap,
                    (rf_step_op){.kind = RF_STEP_COMPUTE,
                                 .op = "COMPUTE",
                                 .num_ops = rf_plan_num_nodes(p->plan)},
                    "COMPUTE", NULL);
    for (size_t k = 0; p->train && k < rf_plan_num_nodes(p->plan); k++) {
        int32_t i = p->grad_var[rf_node_id(rf_plan_node(p->plan, k))];
        if (i < 0 || st != RF_OK)
            continue;
        rf_step_op op = var_op(&s->v[i], RF_STEP_PUSH, s->push->push_op);
        op.locking = s->push->locks && s->opt.use_locking;
        op.wire_bytes =
            s->v[i].xfer->wire_bytes(s, &s->v[i], s->v[i].max_push_rows);
        p->push_op[i] = p->nops;
        st = add_op(p, cap, op, s->push->push_op, rf_node_name(s->v[i].var));
    }
    if (p->train && st == RF_OK) {
        p->wait_op = p->nops;
        st = add_op(p, cap,
                    (rf_step_op){.kind = RF_STEP_WAIT, .op = s->push->wait_op},
                    s->push->wait_span, NULL);
    }
    if (p->train && st == RF_OK) {
        p->advance_op = p->nops;
        rf_step_op adv = {.kind = s->push->advance_kind,
                          .op = s->push->advance_op,
                          .var = rf_node_name(s->nodes.global_step_var),
                          .ps_task = 0,
                          .bytes = 8,
                          .wire_bytes = 8};
        st = add_op(p, cap, adv, s->push->advance_op,
                    rf_node_name(s->nodes.global_step_var));
    }
    if (ssp && st == RF_OK) {
        p->ssp_add_op = p->nops;
        st = add_op(p, cap,
                    (rf_step_op){.kind = RF_STEP_CLOCK_ADD,
                                 .op = "FETCH_AND_ADD",
                                 .var = "ssp_clock",
                                 .ps_task = 0,
                                 .bytes = 8,
                                 .wire_bytes = 8},
                    "FETCH_AND_ADD", "ssp_clock");
    }
    if (st != RF_OK)
        return st;
    uint32_t n, m;
    sess_push_replicas(s, &n, &m);
    p->desc = (rf_session_desc){.apply = s->push->name,
                                .use_locking = s->opt.use_locking,
                                .replicas_to_aggregate = (int)n,
                                .total_num_replicas = (int)m,
                                .staleness = s->opt.staleness,
                                .compute_threads = rf_executor_threads(s->ex),
                                .vars = s->report.var_desc,
                                .num_vars = 1 + s->nv,
                                .step = p->ops,
                                .num_step_ops = p->nops};
    return RF_OK;
}

rf_status sess_plan_get(rf_session *s, rf_node *const *feeds, size_t nfeeds,
                        rf_node *const *fetches, size_t nfetches,
                        sess_plan **out)
{
    for (sess_plan *p = s->run.plans; p; p = p->next)
        if (same_nodes(p->feeds, p->nfeeds, feeds, nfeeds) &&
            same_nodes(p->fetches, p->nfetches, fetches, nfetches)) {
            *out = p;
            return RF_OK;
        }
    sess_plan *p = calloc(1, sizeof *p);
    if (!p)
        return rf_error_set(RF_ERR_NO_MEMORY, "session: out of memory");
    p->session = s;
    p->nfeeds = nfeeds;
    p->nfetches = nfetches;
    p->feeds = calloc(nfeeds ? nfeeds : 1, sizeof *p->feeds);
    p->fetches = calloc(nfetches ? nfetches : 1, sizeof *p->fetches);
    rf_status st = RF_OK;
    if (!p->feeds || !p->fetches) {
        st = rf_error_set(RF_ERR_NO_MEMORY, "session: out of memory");
        goto err;
    }
    if (nfeeds)
        memcpy(p->feeds, feeds, nfeeds * sizeof *feeds);
    if (nfetches)
        memcpy(p->fetches, fetches, nfetches * sizeof *fetches);
    for (size_t j = 0; j < nfetches; j++) {
        if (!fetches[j]) {
            st = rf_error_set(RF_ERR_INVALID_ARG,
                              "rf_session_run: fetch %zu is NULL", j);
            goto err;
        }
        if (fetches[j] == s->nodes.train_op)
            p->train = true;
    }
    st = make_exec_plan(s, p);
    if (st == RF_OK)
        p->reads_global_step =
            rf_plan_contains(p->plan, s->nodes.global_step_var);
    if (st == RF_OK)
        st = hook_plan(s, p);
    if (st == RF_OK)
        st = describe_plan(s, p);
    if (st != RF_OK)
        goto err;
    p->next = s->run.plans;
    s->run.plans = p;
    *out = p;
    return RF_OK;
err:
    plan_free(p);
    return st;
}
