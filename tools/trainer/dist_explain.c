/* tools/trainer/dist_explain.c: --explain and --explain=json, printed by a
 * worker before its first step: the cluster and this task, the fabric and
 * NUMA binding, each variable's placement (device, ps task, bytes, the
 * record with its optimizer slots), and the operations one step issues, in
 * order (the READs, the compute, one push per gradient in the order the
 * plan produces them, the ack wait, the global_step FETCH_AND_ADD, or with
 * --sync_replicas the wait for global_step's publication). All of
 * it comes from the session (rf_session_describe: the same list the
 * session executes and names its trace spans from); the text and the JSON
 * are built from the same json-c document. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist.h"
#include "wide_deep.h"

/* RF_BIND's mode, as the variable spells it. */
static const char *bind_name(const rf_binding *b)
{
    return b->mode == RF_BIND_NONE   ? "none"
           : b->mode == RF_BIND_NODE ? "node"
                                     : "nic";
}

static json_object *shape_json(rf_shape s)
{
    json_object *a = json_object_new_array();
    for (int i = 0; i < s.rank; i++)
        json_object_array_add(a, json_object_new_int64(s.dims[i]));
    return a;
}

static void add_str(json_object *o, const char *k, const char *v)
{
    json_object_object_add(o, k, json_object_new_string(v));
}

static void add_int(json_object *o, const char *k, int64_t v)
{
    json_object_object_add(o, k, json_object_new_int64(v));
}

static json_object *var_json(const rf_session_var_desc *v)
{
    json_object *o = json_object_new_object();
    add_str(o, "name", v->name);
    add_str(o, "device", v->device);
    add_int(o, "ps_task", (int64_t)v->ps_task);
    add_str(o, "dtype", rf_dtype_name(v->dtype));
    json_object_object_add(o, "shape", shape_json(v->shape));
    add_int(o, "bytes", (int64_t)v->bytes);
    if (v->where[0]) {
        add_str(o, "where", v->where);
        return o;
    }
    json_object *slots = json_object_new_array();
    for (unsigned k = 0; k < v->num_slots; k++)
        json_object_array_add(slots, json_object_new_string(v->slots[k]));
    json_object_object_add(o, "slots", slots);
    add_int(o, "record_bytes", (int64_t)v->record_bytes);
    if (v->max_push_rows > 0) { /* an embedding table shard */
        json_object *t = json_object_new_object();
        add_int(t, "rows", (int64_t)v->rows);
        add_int(t, "row_bytes", (int64_t)v->row_bytes);
        add_int(t, "max_push_rows", (int64_t)v->max_push_rows);
        json_object_object_add(o, "table", t);
    }
    return o;
}

static json_object *op_json(const rf_step_op *op)
{
    json_object *o = json_object_new_object();
    add_str(o, "op", op->op);
    switch (op->kind) {
    case RF_STEP_COMPUTE:
        add_str(o, "what",
                "forward + backward on this worker; an op waits only "
                "for the READs of the variables it consumes");
        add_int(o, "ops", (int64_t)op->num_ops);
        break;
    case RF_STEP_WAIT:
        break;
    case RF_STEP_WAIT_STEP:
        add_str(o, "what",
                "wait until every shard applied this step's averaged "
                "gradients (READ of each shard's step word), then publish "
                "global_step by CMP_AND_SWP (once in the cluster)");
        /* fall through */
    case RF_STEP_CLOCKS_READ:
    case RF_STEP_CLOCK_ADD:
        if (op->kind == RF_STEP_CLOCKS_READ)
            add_str(o, "what",
                    "stale synchronous parallel: READ every training "
                    "worker's clock word on ps 0; while this worker is more "
                    "than staleness steps ahead of the slowest, wait and "
                    "READ again (bounded backoff)");
        else if (op->kind == RF_STEP_CLOCK_ADD)
            add_str(o, "what",
                    "stale synchronous parallel: this worker's clock word "
                    "+= 1 on ps 0 (one more training step completed)");
        /* fall through */
    case RF_STEP_READ:
    case RF_STEP_PUSH:
    case RF_STEP_FETCH_AND_ADD:
        add_str(o, "var", op->var);
        add_int(o, "ps_task", (int64_t)op->ps_task);
        add_int(o, "bytes", (int64_t)op->bytes);
        add_int(o, "wire_bytes", (int64_t)op->wire_bytes);
        if (op->bound) /* a table's rows: varies per step, at most this */
            json_object_object_add(o, "bound", json_object_new_boolean(true));
        if (op->kind == RF_STEP_PUSH && !strcmp(op->op, "APPLY_WORKER"))
            json_object_object_add(o, "locking",
                                   json_object_new_boolean(op->locking));
        break;
    }
    return o;
}

typedef struct explain_ctx {
    const tr_flags *f;
    const rf_server *server; /* NULL: --explain_only, nothing opened */
    const rf_session_desc *desc;
    const rf_cluster *cluster;
    const rf_cluster_task *self;
} explain_ctx;

/* The provider a server would open: RF_FABRIC, else auto (fabric.h). */
static const char *configured_provider(void)
{
    const char *p = getenv("RF_FABRIC");
    return p && p[0] ? p : "auto";
}

static json_object *fabric_json(const explain_ctx *e)
{
    json_object *fab = json_object_new_object();
    add_str(fab, "address", e->self->address);
    if (e->server) {
        const rf_binding *b = rf_server_binding(e->server);
        add_str(fab, "provider",
                rf_fabric_provider(rf_server_fabric(e->server)));
        add_str(fab, "bind", bind_name(b));
        add_int(fab, "numa_node", b->numa_node);
        add_str(fab, "cpus", b->cpus);
        add_str(fab, "numa_why", b->why);
    } else {
        add_str(fab, "provider", configured_provider());
        add_str(fab, "numa_why",
                "not bound: --explain_only opens no fabric; the task binds "
                "at start (RF_BIND)");
    }
    add_int(fab, "compute_threads", e->desc->compute_threads);
    /* the provider carrying each connection (auto chooses per peer) */
    json_object *peers = json_object_new_array();
    for (size_t p = 0; p < e->desc->num_ps; p++) {
        json_object *peer = json_object_new_object();
        add_int(peer, "ps_task", (int64_t)p);
        const char *a = rf_cluster_task_address(e->cluster, "ps", (int)p);
        add_str(peer, "address", a ? a : "");
        add_str(peer, "provider", e->desc->ps_providers[p]);
        json_object_array_add(peers, peer);
    }
    json_object_object_add(fab, "peers", peers);
    return fab;
}

/* The "explain" member: this task's whole description. */
static json_object *build_explain(const explain_ctx *e)
{
    json_object *ex = json_object_new_object();

    char *cj = rf_cluster_to_json(e->cluster, false);
    json_object *cluster = cj ? json_tokener_parse(cj) : NULL;
    free(cj);
    json_object *member = NULL;
    if (cluster && json_object_object_get_ex(cluster, "cluster", &member))
        json_object_object_add(ex, "cluster", json_object_get(member));
    json_object *task = json_object_new_object();
    add_str(task, "job", e->self->job);
    add_int(task, "index", e->self->index);
    json_object_object_add(task, "chief",
                           json_object_new_boolean(e->self->is_chief));
    add_int(task, "worker_id", e->self->worker_id);
    json_object_object_add(ex, "task", task);
    if (cluster && json_object_object_get_ex(cluster, "source", &member))
        json_object_object_add(ex, "source", json_object_get(member));
    json_object_put(cluster);

    json_object_object_add(ex, "fabric", fabric_json(e));
    add_str(ex, "apply", e->desc->apply);
    json_object_object_add(ex, "use_locking",
                           json_object_new_boolean(e->desc->use_locking));
    if (e->desc->staleness >= 0)
        add_int(ex, "staleness", e->desc->staleness);
    if (e->desc->replicas_to_aggregate) {
        add_int(ex, "replicas_to_aggregate", e->desc->replicas_to_aggregate);
        add_int(ex, "total_num_replicas", e->desc->total_num_replicas);
    }

    /* creation order: global_step first (the session creates it first),
     * then the trainable variables in the order of their applies */
    json_object *vars = json_object_new_array();
    for (size_t i = 0; i < e->desc->num_vars; i++)
        json_object_array_add(vars, var_json(&e->desc->vars[i]));
    json_object_object_add(ex, "variables", vars);

    /* how they were placed, and the bytes each ps task holds */
    int num_ps = rf_cluster_num_ps(e->cluster);
    json_object *pl = json_object_new_object();
    add_str(pl, "ps_strategy", e->f->ps_strategy);
    if (e->f->model.kind == TR_MODEL_WIDE_DEEP) /* the tables' partitioner */
        add_int(pl, "embedding_partitions", tr_wd_partitions(e->f, num_ps));
    else
        add_int(pl, "partition_min_slice_bytes",
                e->f->partition_min_slice_bytes);
    json_object *per_ps = json_object_new_array();
    for (int p = 0; p < num_ps; p++) {
        int64_t sum = 0;
        for (size_t i = 0; i < e->desc->num_vars; i++)
            if ((int)e->desc->vars[i].ps_task == p)
                sum += (int64_t)e->desc->vars[i].record_bytes;
        json_object_array_add(per_ps, json_object_new_int64(sum));
    }
    json_object_object_add(pl, "ps_record_bytes", per_ps);
    json_object_object_add(ex, "placement", pl);

    /* what one step moves: in all, and with each ps task */
    json_object *wire = json_object_new_object();
    int64_t total = 0;
    json_object *wire_ps = json_object_new_array();
    for (int p = 0; p < num_ps; p++) {
        int64_t sum = 0;
        for (size_t i = 0; i < e->desc->num_step_ops; i++)
            if (e->desc->step[i].var && (int)e->desc->step[i].ps_task == p)
                sum += (int64_t)e->desc->step[i].wire_bytes;
        json_object_array_add(wire_ps, json_object_new_int64(sum));
        total += sum;
    }
    add_int(wire, "total", total);
    bool bound = false; /* embedding tables: the per-step bound */
    for (size_t i = 0; i < e->desc->num_step_ops; i++)
        bound |= e->desc->step[i].bound;
    if (bound)
        json_object_object_add(wire, "at_most", json_object_new_boolean(true));
    json_object_object_add(wire, "per_ps", wire_ps);
    json_object_object_add(ex, "step_wire_bytes", wire);

    json_object *step = json_object_new_array();
    for (size_t i = 0; i < e->desc->num_step_ops; i++)
        json_object_array_add(step, op_json(&e->desc->step[i]));
    json_object_object_add(ex, "step", step);
    return ex;
}

static const char *str_of(json_object *o, const char *k)
{
    json_object *v = NULL;
    return json_object_object_get_ex(o, k, &v) ? json_object_get_string(v) : "";
}

static int64_t int_of(json_object *o, const char *k)
{
    json_object *v = NULL;
    return json_object_object_get_ex(o, k, &v) ? json_object_get_int64(v) : -1;
}

/* The cluster on one line (rf_cluster_format without its newline). */
void tr_explain_cluster_line(const rf_cluster *c, const char *pfx, FILE *out)
{
    char *cl = rf_cluster_format(c);
    size_t cl_len = cl ? strlen(cl) : 0;
    while (cl_len > 0 && cl[cl_len - 1] == '\n')
        cl[--cl_len] = '\0';
    fprintf(out, "%s%s\n", pfx, cl ? cl : "(cluster)");
    free(cl);
}

/* The text form of one worker's "explain" member, each header line
 * starting with pfx. */
static void print_text(const explain_ctx *e, json_object *ex, const char *pfx,
                       FILE *out)
{
    json_object *vars = NULL, *step = NULL;
    json_object_object_get_ex(ex, "variables", &vars);
    json_object_object_get_ex(ex, "step", &step);
    int num_ps = rf_cluster_num_ps(e->cluster);
    if (e->server) {
        const rf_binding *b = rf_server_binding(e->server);
        tr_explain_cluster_line(e->cluster, pfx, out);
        fprintf(out,
                "%sfabric %s on %s; RF_BIND=%s: NUMA node %d, CPUs %s "
                "(%s); %d compute threads bound there\n",
                pfx, rf_fabric_provider(rf_server_fabric(e->server)),
                e->self->address, bind_name(b), b->numa_node,
                b->cpus[0] ? b->cpus : "-", b->why, e->desc->compute_threads);
        fprintf(out, "%sconnections:", pfx);
        for (size_t p = 0; p < e->desc->num_ps; p++) {
            const char *a = rf_cluster_task_address(e->cluster, "ps", (int)p);
            fprintf(out, "%s ps %zu (%s) over %s", p ? "," : "", p, a ? a : "?",
                    e->desc->ps_providers[p][0] ? e->desc->ps_providers[p]
                                                : "(not connected)");
        }
        fputc('\n', out);
    } else {
        fprintf(out,
                "%sfabric %s on %s, connecting to every ps task at start; "
                "%d compute threads, bound at start (RF_BIND)\n",
                pfx, configured_provider(), e->self->address,
                e->desc->compute_threads);
    }
    if (e->f->model.kind == TR_MODEL_WIDE_DEEP)
        fprintf(out,
                "%splacement (replica_device_setter, ps_strategy %s "
                "over %d ps tasks; embedding tables: fixed_size_partitioner("
                "%d), ids to parts by \"mod\"):\n",
                pfx, e->f->ps_strategy, num_ps, tr_wd_partitions(e->f, num_ps));
    else if (e->f->partition_min_slice_bytes > 0)
        fprintf(out,
                "%splacement (replica_device_setter, ps_strategy %s "
                "over %d ps tasks; min_max_variable_partitioner("
                "max_partitions=%d, min_slice_size=%lld)):\n",
                pfx, e->f->ps_strategy, num_ps, num_ps,
                (long long)e->f->partition_min_slice_bytes);
    else
        fprintf(out,
                "%splacement (replica_device_setter, ps_strategy %s "
                "over %d ps tasks, no partitioner):\n",
                pfx, e->f->ps_strategy, num_ps);
    for (size_t i = 0; i < json_object_array_length(vars); i++) {
        json_object *v = json_object_array_get_idx(vars, i);
        fprintf(out, "  %-24s %-8s %-16s %10lld B  %s", str_of(v, "name"),
                str_of(v, "dtype"),
                json_object_to_json_string_ext(
                    json_object_object_get(v, "shape"), JSON_C_TO_STRING_PLAIN),
                (long long)int_of(v, "bytes"), str_of(v, "device"));
        if (int_of(v, "record_bytes") > 0) {
            fprintf(out, "  record %lld B",
                    (long long)int_of(v, "record_bytes"));
            json_object *slots = json_object_object_get(v, "slots");
            for (size_t k = 0; slots && k < json_object_array_length(slots);
                 k++)
                fprintf(out, "%s%s", k ? ", " : " with slots ",
                        json_object_get_string(
                            json_object_array_get_idx(slots, k)));
            json_object *t = json_object_object_get(v, "table");
            if (t)
                fprintf(out,
                        "; embedding table: %lld rows of %lld B, at most "
                        "%lld rows read and pushed per step",
                        (long long)int_of(t, "rows"),
                        (long long)int_of(t, "row_bytes"),
                        (long long)int_of(t, "max_push_rows"));
        } else {
            fprintf(out, "  (%s)", str_of(v, "where"));
        }
        fputc('\n', out);
    }
    json_object *pl = json_object_object_get(ex, "placement");
    json_object *per_ps = json_object_object_get(pl, "ps_record_bytes");
    for (size_t p = 0; per_ps && p < json_object_array_length(per_ps); p++)
        fprintf(out, "  ps task %zu holds %lld B of shard records\n", p,
                (long long)json_object_get_int64(
                    json_object_array_get_idx(per_ps, p)));
    json_object *wire = json_object_object_get(ex, "step_wire_bytes");
    json_object *wire_ps = json_object_object_get(wire, "per_ps");
    fprintf(out,
            "%sbytes on the wire per step (payload, both ways): "
            "%s%lld B",
            pfx,
            json_object_object_get(wire, "at_most")
                ? "at most (embedding table rows vary per step) "
                : "",
            (long long)int_of(wire, "total"));
    for (size_t p = 0; wire_ps && p < json_object_array_length(wire_ps); p++)
        fprintf(out, "%s ps %zu %lld B", p ? "," : ";", p,
                (long long)json_object_get_int64(
                    json_object_array_get_idx(wire_ps, p)));
    fputc('\n', out);
    if (e->desc->replicas_to_aggregate)
        fprintf(out,
                "%seach step of this worker (sync replicas: the mean "
                "of %d of %d workers' gradients applied on the ps):\n",
                pfx, e->desc->replicas_to_aggregate,
                e->desc->total_num_replicas);
    else
        fprintf(out, "%seach step of this worker (apply=%s%s):\n", pfx,
                e->f->apply, e->f->use_locking ? ", use_locking" : "");
    if (e->desc->staleness >= 0)
        fprintf(out,
                "%sstale synchronous parallel, staleness %d: before a step "
                "this worker waits while it is more than %d steps ahead of "
                "the slowest training worker\n",
                pfx, e->desc->staleness, e->desc->staleness);
    for (size_t i = 0; i < json_object_array_length(step); i++) {
        json_object *o = json_object_array_get_idx(step, i);
        const char *op = str_of(o, "op");
        if (!strcmp(op, "COMPUTE"))
            fprintf(out, "  %2zu. COMPUTE %lld ops: %s\n", i + 1,
                    (long long)int_of(o, "ops"), str_of(o, "what"));
        else if (!strcmp(op, "WAIT_ACKS") && e->desc->replicas_to_aggregate)
            fprintf(out,
                    "  %2zu. wait for every accumulator's acknowledgement "
                    "(taken, or dropped as stale)\n",
                    i + 1);
        else if (!strcmp(op, "WAIT_ACKS"))
            fprintf(out, "  %2zu. wait for every ps's apply acknowledgement\n",
                    i + 1);
        else if (!strcmp(op, "WAIT_GLOBAL_STEP"))
            fprintf(out, "  %2zu. %s: %s\n", i + 1, op, str_of(o, "what"));
        else if (!strcmp(op, "READ_CLOCKS"))
            fprintf(out, "  %2zu. %-15s %-24s ps %lld  %lld B  (%s)\n", i + 1,
                    op, str_of(o, "var"), (long long)int_of(o, "ps_task"),
                    (long long)int_of(o, "bytes"),
                    "every training worker's clock; wait while more than "
                    "staleness ahead of the slowest");
        else if (!strcmp(op, "WAIT_APPLIES"))
            fprintf(out, "  %2zu. wait for every read-apply-write to finish\n",
                    i + 1);
        else
            fprintf(out, "  %2zu. %-15s %-24s ps %lld  %lld B%s\n", i + 1, op,
                    str_of(o, "var"), (long long)int_of(o, "ps_task"),
                    (long long)int_of(o, "bytes"),
                    !strcmp(op, "READ") ? "  (all READs posted at once)"
                    : !strcmp(op, "WRITE_WITH_IMM") &&
                            e->desc->replicas_to_aggregate
                        ? "  (WRITE of the step tag, then the gradient into "
                          "the accumulator)"
                    : !strcmp(op, "WRITE_WITH_IMM")
                        ? "  (gradient, as soon as backprop made it)"
                    : !strcmp(op, "APPLY_WORKER")
                        ? "  (READ record, apply here, WRITE back)"
                    : !strcmp(str_of(o, "var"), "ssp_clock")
                        ? "  (this worker's clock += 1)"
                        : "");
    }
}

json_object *tr_explain_worker_json(const tr_flags *f, const rf_cluster *c,
                                    const rf_cluster_task *self,
                                    const rf_server *server,
                                    const rf_session_desc *desc)
{
    explain_ctx e = {
        .f = f, .server = server, .desc = desc, .cluster = c, .self = self};
    return build_explain(&e);
}

void tr_explain_worker_text(const tr_flags *f, const rf_cluster *c,
                            const rf_cluster_task *self,
                            const rf_server *server,
                            const rf_session_desc *desc, json_object *ex,
                            const char *pfx, FILE *out)
{
    explain_ctx e = {
        .f = f, .server = server, .desc = desc, .cluster = c, .self = self};
    print_text(&e, ex, pfx, out);
}

int tr_dist_explain(const tr_flags *f, const rf_server *server,
                    const rf_session_desc *desc, FILE *out, char *err,
                    size_t errlen)
{
    const rf_cluster *cluster = rf_server_cluster(server);
    const rf_cluster_task *self = rf_cluster_self(cluster);
    json_object *ex = tr_explain_worker_json(f, cluster, self, server, desc);
    json_object *root = json_object_new_object();
    if (!ex || !root) {
        json_object_put(ex);
        json_object_put(root);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    json_object_object_add(root, "explain", ex);
    if (f->explain == TR_EXPLAIN_JSON)
        fprintf(
            out, "%s\n",
            json_object_to_json_string_ext(
                root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    else
        tr_explain_worker_text(f, cluster, self, server, desc, ex,
                               "explain: ", out);
    fflush(out);
    json_object_put(root);
    return 0;
}
