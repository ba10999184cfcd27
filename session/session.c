/* session/session.c: the worker's session (rdmaflow/session.h): creating it
 * over a placed graph, one step (READs posted, the plan run with its hooks,
 * the push strategy drained and waited for, global_step advanced by the
 * strategy: FETCH_AND_ADD, or sync's wait for publication), tracing,
 * shutting the cluster down, and the description of a step (the end of
 * the job is session_finish.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "session/session_internal.h"

void rf_session_options_init(rf_session_options *o)
{
    memset(o, 0, sizeof *o);
    o->apply = RF_PS_APPLY_PS;
    o->staleness = -1;
}

static rf_status describe_vars(rf_session *s)
{
    s->report.var_desc = calloc(1 + s->nv, sizeof *s->report.var_desc);
    if (!s->report.var_desc)
        return rf_error_set(RF_ERR_NO_MEMORY, "session: out of memory");
    s->report.var_desc[0] = (rf_session_var_desc){
        .name = rf_node_name(s->nodes.global_step_var),
        .device = rf_node_requested_device(s->nodes.global_step_var),
        .ps_task = 0,
        .dtype = RF_I64,
        .shape = rf_shape_make(0, NULL),
        .bytes = 8,
        .where = "ps 0 globals block, word 0",
    };
    for (size_t i = 0; i < s->nv; i++) {
        const sess_var *v = &s->v[i];
        s->report.var_desc[1 + i] = (rf_session_var_desc){
            .name = rf_node_name(v->var),
            .device = v->device,
            .ps_task = v->ps_task,
            .dtype = rf_node_dtype(v->var),
            .shape = rf_node_shape(v->var),
            .bytes = v->info.values_bytes,
            .record_bytes = v->info.record_bytes,
            .slots = v->slot_names,
            .num_slots = v->apply.num_slots,
            .where = "",
            .rows = v->table ? v->rows : 0,
            .row_bytes = v->table ? v->row_bytes : 0,
            .max_push_rows = v->max_push_rows,
        };
    }
    return RF_OK;
}

rf_status rf_session_create(rf_server *server, rf_graph *g, rf_executor *ex,
                            const rf_session_options *options, rf_session **out)
{
    return rf_session_create_attempt(server, g, ex, options, NULL, out, NULL,
                                     0);
}

/* The push strategy the options choose (after rf_session_create's checks). */
static const sess_push_ops *push_of(const rf_session_options *o)
{
    return o->sync_replicas                 ? &sess_push_sync
           : o->apply == RF_PS_APPLY_WORKER ? &sess_push_apply_worker
                                            : &sess_push_apply_ps;
}

/* Elastic jobs train asynchronously: SyncReplicasOptimizer aggregates a
 * fixed number of replicas, and stale synchronous parallel waits for a
 * fixed set of clocks. */
static rf_status check_elastic(bool elastic, const rf_session_options *o)
{
    if (elastic && o->sync_replicas)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "elastic workers (--elastic, or a TF_CONFIG "
                            "sparseCluster) train asynchronously only: "
                            "sync_replicas needs a fixed number of "
                            "replicas, which workers joining and leaving "
                            "would change");
    if (elastic && o->staleness >= 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "elastic workers (--elastic, or a TF_CONFIG "
                            "sparseCluster): staleness %d needs a fixed "
                            "set of workers; use -1 (off)",
                            o->staleness);
    return RF_OK;
}

static rf_status check_options(const rf_session_options *options)
{
    if (options->apply != RF_PS_APPLY_PS &&
        options->apply != RF_PS_APPLY_WORKER)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_session_create: unknown apply mode %d",
                            (int)options->apply);
    if (!rf_lookup_way_name(options->embedding_lookup))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_session_create: unknown embedding_lookup %d "
                            "(auto, rows or gather)",
                            (int)options->embedding_lookup);
    return sess_ssp_check(options);
}

/* Offline: each variable's shard sizes from its spec, as the ps will
 * make it (the same spec create_or_look_up sends). */
static rf_status offline_infos(rf_session *s)
{
    for (size_t i = 0; i < s->nv; i++) {
        sess_var *v = &s->v[i];
        rf_ps_shard_spec spec = sess_spec(s, v);
        rf_status st = rf_ps_shard_spec_info(&spec, v->ps_task, &v->info);
        if (st != RF_OK)
            return rf_error_set(st, "'%s': %s", rf_node_name(v->var),
                                rf_error_message());
    }
    return RF_OK;
}

rf_status rf_session_create_offline(const rf_cluster *cluster,
                                    const rf_cluster_task *as, rf_graph *g,
                                    rf_executor *ex,
                                    const rf_session_options *options,
                                    rf_session **out)
{
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_session_create_offline: out NULL");
    *out = NULL;
    if (!cluster || !as || !g || !ex || !options || !options->train_op)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_session_create_offline: cluster, task, "
                            "graph, executor and options with a train_op "
                            "are required");
    if (strcmp(as->job, "worker") != 0 && strcmp(as->job, "chief") != 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_session_create_offline: /job:%s/task:%d "
                            "does not run a session (only chief and worker "
                            "tasks train)",
                            as->job, as->index);
    rf_status st = check_options(options);
    if (st != RF_OK)
        return st;
    rf_session *s = calloc(1, sizeof *s);
    if (!s)
        return rf_error_set(RF_ERR_NO_MEMORY, "session: out of memory");
    s->offline = true;
    s->g = g;
    s->ex = ex;
    s->opt = *options;
    s->nodes.train_op = options->train_op;
    s->task.self = as;
    s->task.chief = as->is_chief;
    s->task.num_ps = rf_cluster_num_ps(cluster);
    s->task.num_workers = rf_cluster_num_workers(cluster);
    s->task.elastic = rf_cluster_is_sparse(cluster);
    s->push = push_of(options);
    s->ckpt.restored_step = s->ckpt.saved_step = -1;
    s->ready.unreachable_ps = -1;
    st = s->task.num_ps > 0
             ? RF_OK
             : rf_error_set(RF_ERR_INVALID_ARG, "the cluster has no ps task");
    if (st == RF_OK)
        st = check_elastic(s->task.elastic, options);
    if (st == RF_OK)
        st = sess_push_configure(s);
    if (st == RF_OK)
        st = sess_map(s);
    if (st == RF_OK)
        st = offline_infos(s);
    if (st == RF_OK)
        st = sess_lookup_ways_choose(s); /* measures nothing offline */
    if (st == RF_OK)
        st = describe_vars(s);
    if (st != RF_OK) {
        char msg[1200];
        snprintf(msg, sizeof msg, "%s", rf_error_message());
        rf_session_destroy(s);
        return rf_error_set(st, "%s", msg);
    }
    *out = s;
    return RF_OK;
}

/* What an offline session answers to everything but describe. */
rf_status sess_refuse_offline(const char *what)
{
    return rf_error_set(RF_ERR_INVALID_ARG,
                        "%s: this session was made by "
                        "rf_session_create_offline and only describes",
                        what);
}

rf_status rf_session_create_attempt(rf_server *server, rf_graph *g,
                                    rf_executor *ex,
                                    const rf_session_options *options,
                                    const rf_session_readiness *readiness,
                                    rf_session **out, char *waiting_for,
                                    size_t len)
{
    if (waiting_for && len)
        waiting_for[0] = '\0';
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_session_create: out NULL");
    *out = NULL;
    if (!server || !g || !ex || !options || !options->train_op)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_session_create: server, graph, executor and "
                            "options with a train_op are required");
    if (server->ps)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_session_create: this is a ps task's server; "
                            "a ps task serves (rf_server_join)");
    rf_status st0 = check_options(options);
    if (st0 != RF_OK)
        return st0;
    rf_session *s = calloc(1, sizeof *s);
    if (!s)
        return rf_error_set(RF_ERR_NO_MEMORY, "session: out of memory");
    s->server = server;
    s->g = g;
    s->ex = ex;
    s->opt = *options;
    s->nodes.train_op = options->train_op;
    s->task.self = server->self;
    s->task.chief = s->task.self->is_chief;
    s->task.num_ps = rf_cluster_num_ps(server->cluster);
    s->task.num_workers = rf_cluster_num_workers(server->cluster);
    s->task.elastic = rf_server_elastic(server);
    s->push = push_of(options);
    s->ready.attempt_ms = readiness ? readiness->attempt_ms : 0;
    s->ready.prefer_adopt = readiness && readiness->prefer_adopt;
    s->ckpt.restored_step = s->ckpt.saved_step = -1;
    s->ready.unreachable_ps = -1;
    rf_status st =
        s->task.num_ps > 0
            ? RF_OK
            : rf_error_set(RF_ERR_INVALID_ARG, "the cluster has no ps task");
    if (st == RF_OK)
        st = check_elastic(s->task.elastic, options);
    if (st == RF_OK &&
        !(s->report.ps_bytes =
              calloc((size_t)s->task.num_ps, sizeof *s->report.ps_bytes)))
        st = rf_error_set(RF_ERR_NO_MEMORY, "session: out of memory");
    if (st == RF_OK)
        st = sess_push_configure(s);
    if (st == RF_OK)
        st = sess_map(s);
    if (st == RF_OK)
        st = sess_connect(s);
    if (st == RF_OK)
        st = describe_vars(s);
    if (st == RF_OK)
        st = sess_ssp_start(s);
    if (st == RF_OK)
        st = sess_push_start(s);
    if (st != RF_OK) {
        if (waiting_for && len)
            snprintf(waiting_for, len, "%s", s->ready.waiting_for);
        char msg[1200];
        snprintf(msg, sizeof msg, "%s", rf_error_message());
        rf_session_destroy(s); /* may log: keep the message */
        return rf_error_set(st, "%s", msg);
    }
    *out = s;
    return RF_OK;
}

void rf_session_destroy(rf_session *s)
{
    if (!s)
        return;
    if (s->report.trace)
        rf_executor_set_trace(s->ex, NULL);
    sess_push_stop(s);
    sess_plans_destroy(s); /* before the read set their hooks wait on */
    sess_snapshot_free(s);
    sess_disconnect(s);
    sess_rows_free(s);
    sess_ssp_free(s);
    free(s->v);
    free(s->ps_providers);
    free(s->nodes.var_of_node);
    free(s->report.var_desc);
    free(s->report.ps_bytes);
    free(s);
}

void rf_session_set_trace(rf_session *s, rf_trace *t)
{
    s->report.trace = t;
    rf_executor_set_trace(s->ex, t);
    if (t)
        sess_push_name_threads(s, t);
}

/* The fetched values for the caller: the plan's, and for train_op the new
 * global step (a scalar int64, as TensorFlow's train op from minimize with
 * global_step gives after the update). */
static void give_fetches(rf_session *s, const sess_plan *p, rf_tensor *out)
{
    for (size_t j = 0; j < p->nfetches; j++)
        out[j] = p->fetch_map[j] >= 0
                     ? p->out[p->fetch_map[j]]
                     : rf_tensor_make(RF_I64, rf_shape_make(0, NULL),
                                      &s->run.step_value);
}

static rf_status advance_global_step(rf_session *s, const sess_plan *p)
{
    int64_t step = 0;
    uint64_t t0 = rf_now_ns();
    rf_status st = sess_push_advance(s, &step);
    if (st != RF_OK)
        return st;
    sess_span(s, p->ops[p->advance_op].name, "\"bytes\":8,\"ps_task\":0", t0,
              0);
    s->run.global_step = s->run.step_value = step;
    *(int64_t *)rf_variable_data(s->nodes.global_step_var) = step;
    return RF_OK;
}

/* A successful run's bytes, from its step description (the same list it
 * executed). */
static void count_bytes(rf_session *s, const sess_plan *p)
{
    rf_session_counters *c = &s->report.counters;
    c->runs++;
    c->train_runs += p->train;
    for (size_t i = 0; i < p->nops; i++) {
        if (p->ops[i].bound)
            continue; /* a table's: session_rows.c counts what moved */
        if (p->ops[i].kind == RF_STEP_READ)
            sess_count_bytes(s, p->ops[i].ps_task, p->ops[i].wire_bytes, 0);
        else if (p->train)
            sess_count_bytes(s, p->ops[i].ps_task, 0, p->ops[i].wire_bytes);
    }
}

void sess_count_bytes(rf_session *s, size_t ps, uint64_t read, uint64_t pushed)
{
    s->report.counters.bytes_read += read;
    s->report.counters.bytes_pushed += pushed;
    if (s->report.ps_bytes && ps < (size_t)s->task.num_ps) {
        s->report.ps_bytes[ps].bytes_read += read;
        s->report.ps_bytes[ps].bytes_pushed += pushed;
    }
}

size_t rf_session_ps_bytes_get(const rf_session *s, rf_session_ps_bytes *out,
                               size_t max)
{
    if (!s || !s->report.ps_bytes)
        return 0;
    size_t n = (size_t)s->task.num_ps;
    for (size_t i = 0; i < n && i < max && out; i++)
        out[i] = s->report.ps_bytes[i];
    return n;
}

void rf_session_counters_get(const rf_session *s, rf_session_counters *out)
{
    if (!out)
        return;
    *out = s ? s->report.counters : (rf_session_counters){0};
    if (s && s->client) {
        rf_ps_row_counters rc;
        rf_ps_client_row_counters(s->client, &rc);
        out->table_rows_torn = rc.torn;
        out->table_rows_busy = rc.busy;
        out->table_row_conflicts = rc.conflicts;
    }
}

/* A plan that reads global_step sees ps 0's value now, not this worker's
 * last one (the session's own s->run.global_step, which tags sync gradients,
 * is left as the step's push strategy took it). */
static rf_status read_global_step_var(rf_session *s)
{
    int64_t v;
    rf_status st = rf_ps_global_step_read(s->client, &v);
    if (st != RF_OK)
        return rf_error_set(st, "reading global_step: %s", rf_error_message());
    *(int64_t *)rf_variable_data(s->nodes.global_step_var) = v;
    return RF_OK;
}

rf_status rf_session_run(rf_session *s, rf_node *const *feeds,
                         const rf_tensor *values, size_t num_feeds,
                         rf_node *const *fetches, size_t num_fetches,
                         rf_tensor *fetched, int64_t *global_step)
{
    if (s->offline)
        return sess_refuse_offline("rf_session_run");
    if (!s || (num_feeds && (!feeds || !values)) ||
        (num_fetches && (!fetches || !fetched)))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_session_run: NULL session, feeds or fetches");
    sess_plan *p = NULL;
    rf_status st = sess_plan_get(s, feeds, num_feeds, fetches, num_fetches, &p);
    if (st != RF_OK)
        return st;
    /* stale synchronous parallel: before anything of the step is posted,
     * so a failed wait leaves nothing outstanding */
    if (p->train && (st = sess_ssp_wait(s, p)) != RF_OK) {
        s->run.step++;
        return st;
    }
    uint64_t t0 = rf_now_ns();
    for (size_t i = 0; i < s->nv; i++) {
        s->v[i].t_post = t0;
        atomic_store(&s->v[i].read_traced, 0);
    }
    st = p->train ? sess_push_begin(s) : RF_OK;
    if (st == RF_OK && p->reads_global_step)
        st = read_global_step_var(s);
    if (st == RF_OK)
        st = rf_ps_read_set_post(s->block.reads);
    if (st == RF_OK)
        st = rf_plan_run(p->plan, values, p->out);
    char err[600] = "";
    if (st != RF_OK)
        snprintf(err, sizeof err, "%s", rf_error_message());
    /* every read and push is accounted for before anything else, even on
     * failure, so no completion outlives the step */
    rf_status rst = rf_ps_read_set_wait_all(s->block.reads);
    if (st == RF_OK && rst != RF_OK) {
        st = rst;
        snprintf(err, sizeof err, "reading the variables: %s",
                 rf_error_message());
    }
    if (p->train) {
        uint64_t tw = rf_now_ns();
        rf_status dst = sess_push_drain(s);
        if (st == RF_OK && dst != RF_OK) {
            st = dst;
            snprintf(err, sizeof err, "%s", rf_error_message());
        }
        rf_status wst = sess_push_wait(s);
        sess_span(s, p->ops[p->wait_op].name, "", tw, 0);
        if (st == RF_OK && wst != RF_OK) {
            st = wst;
            snprintf(err, sizeof err, "%s", rf_error_message());
        }
    }
    if (st == RF_OK && p->train) {
        st = advance_global_step(s, p);
        if (st == RF_OK) /* after global_step: a clock never runs ahead */
            st = sess_ssp_advance(s, p);
    } else if (st != RF_OK)
        rf_error_set(st, "%s", err);
    s->run.step++;
    if (st != RF_OK)
        return st;
    count_bytes(s, p);
    give_fetches(s, p, fetched);
    if (global_step)
        *global_step = s->run.global_step;
    return RF_OK;
}

rf_status rf_session_global_step(rf_session *s, int64_t *value)
{
    if (s->offline)
        return sess_refuse_offline("rf_session_global_step");
    rf_status st = rf_ps_global_step_read(s->client, value);
    if (st != RF_OK)
        return rf_error_set(st, "reading global_step: %s", rf_error_message());
    s->run.global_step = *value;
    return RF_OK;
}

int64_t rf_session_last_global_step(const rf_session *s)
{
    return s ? s->run.global_step : 0;
}

void sess_task_of_id(const rf_session *s, uint32_t id, char *buf, size_t len)
{
    const rf_cluster *c = s->server->cluster;
    const char *jobs[] = {"chief", "worker"};
    for (size_t j = 0; j < 2; j++)
        for (int i = 0; i < rf_cluster_num_tasks(c, jobs[j]); i++) {
            const rf_cluster_task *t = rf_cluster_task_at(c, jobs[j], i);
            if (t && t->worker_id == (int)id) {
                snprintf(buf, len, "/job:%s/task:%d", t->job, t->index);
                return;
            }
        }
    if (rf_cluster_is_sparse(c)) /* no chief job: worker i has id i */
        snprintf(buf, len, "/job:worker/task:%u", id);
    else
        snprintf(buf, len, "client %u", id);
}

rf_status rf_session_shutdown_cluster(rf_session *s)
{
    if (s->offline)
        return sess_refuse_offline("rf_session_shutdown_cluster");
    if (!s->task.chief)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "only the chief shuts the cluster down");
    rf_status st = rf_ps_shutdown(s->client);
    if (st != RF_OK)
        return rf_error_set(st, "shutting the ps tasks down: %s",
                            rf_error_message());
    return RF_OK;
}

rf_status rf_session_describe(rf_session *s, rf_node *const *feeds,
                              size_t num_feeds, rf_node *const *fetches,
                              size_t num_fetches, const rf_session_desc **out)
{
    sess_plan *p = NULL;
    rf_status st = sess_plan_get(s, feeds, num_feeds, fetches, num_fetches, &p);
    if (st != RF_OK)
        return st;
    if (!s->ps_providers && s->task.num_ps > 0) {
        s->ps_providers =
            calloc((size_t)s->task.num_ps, sizeof *s->ps_providers);
        if (!s->ps_providers)
            return rf_error_set(RF_ERR_NO_MEMORY,
                                "rf_session_describe: out of memory");
    }
    for (int i = 0; i < s->task.num_ps; i++)
        s->ps_providers[i] =
            s->offline ? "" : rf_ps_client_provider(s->client, (size_t)i);
    p->desc.ps_providers = s->ps_providers;
    p->desc.num_ps = (size_t)s->task.num_ps;
    *out = &p->desc;
    return RF_OK;
}
