/* tools/trainer/dist_explain.c: --explain and --explain=json, printed by a
 * worker before its first step: the cluster and this task, the fabric and
 * NUMA binding, each variable's placement (device, ps task, bytes, the
 * record with its optimizer slots), and the operations one step issues, in
 * order (the READs, the compute, one push per gradient in the order the
 * plan produces them, the ack wait, the global_step FETCH_AND_ADD). The
 * text and the JSON are built from the same json-c document. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist.h"

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

static json_object *var_json(const tr_rvar *v)
{
    json_object *o = json_object_new_object();
    add_str(o, "name", rf_node_name(v->var));
    add_str(o, "device", v->device);
    add_int(o, "ps_task", (int64_t)v->ps_task);
    add_str(o, "dtype", rf_dtype_name(rf_node_dtype(v->var)));
    json_object_object_add(o, "shape", shape_json(rf_node_shape(v->var)));
    add_int(o, "bytes", (int64_t)v->info.values_bytes);
    json_object *slots = json_object_new_array();
    for (unsigned k = 0; k < v->apply.num_slots; k++)
        json_object_array_add(
            slots, json_object_new_string(rf_node_name(v->apply.slots[k])));
    json_object_object_add(o, "slots", slots);
    add_int(o, "record_bytes", (int64_t)v->info.record_bytes);
    return o;
}

static json_object *op_json(const char *op, const tr_rvar *v)
{
    json_object *o = json_object_new_object();
    add_str(o, "op", op);
    add_str(o, "var", rf_node_name(v->var));
    add_int(o, "ps_task", (int64_t)v->ps_task);
    add_int(o, "bytes", (int64_t)v->info.values_bytes);
    return o;
}

/* The variables in the order the plan produces their gradients. */
static size_t push_order(const tr_dist *d, size_t *order)
{
    size_t n = 0;
    for (size_t k = 0; k < rf_plan_num_nodes(d->plan); k++) {
        rf_node *node = rf_plan_node(d->plan, k);
        int32_t i = d->grad_var[rf_node_id(node)];
        if (i >= 0)
            order[n++] = (size_t)i;
    }
    return n;
}

static json_object *build(const tr_dist *d)
{
    const tr_flags *f = d->f;
    json_object *root = json_object_new_object();
    json_object *ex = json_object_new_object();
    json_object_object_add(root, "explain", ex);

    char *cj = rf_cluster_to_json(d->cluster, false);
    json_object *cluster = cj ? json_tokener_parse(cj) : NULL;
    free(cj);
    json_object *member = NULL;
    if (cluster && json_object_object_get_ex(cluster, "cluster", &member))
        json_object_object_add(ex, "cluster", json_object_get(member));
    json_object *task = json_object_new_object();
    add_str(task, "job", d->self->job);
    add_int(task, "index", d->self->index);
    json_object_object_add(task, "chief", json_object_new_boolean(d->chief));
    add_int(task, "worker_id", d->worker_id);
    json_object_object_add(ex, "task", task);
    if (cluster && json_object_object_get_ex(cluster, "source", &member))
        json_object_object_add(ex, "source", json_object_get(member));
    json_object_put(cluster);

    json_object *fab = json_object_new_object();
    add_str(fab, "provider", rf_fabric_provider(d->fabric));
    add_str(fab, "address", d->self->address);
    add_str(fab, "bind", bind_name(&d->binding));
    add_int(fab, "numa_node", d->binding.numa_node);
    add_str(fab, "cpus", d->binding.cpus);
    add_str(fab, "numa_why", d->binding.why);
    add_int(fab, "compute_threads", rf_executor_threads(d->s->ex));
    json_object_object_add(ex, "fabric", fab);
    add_str(ex, "apply", f->apply);
    json_object_object_add(ex, "use_locking",
                           json_object_new_boolean(f->use_locking));

    json_object *vars = json_object_new_array();
    json_object *gs = json_object_new_object();
    add_str(gs, "name", rf_node_name(d->global_step_var));
    add_str(gs, "device", d->global_step_device);
    add_int(gs, "ps_task", 0);
    add_str(gs, "dtype", "int64");
    json_object_object_add(gs, "shape", json_object_new_array());
    add_int(gs, "bytes", 8);
    add_str(gs, "where", "ps 0 globals block, word 0");
    json_object_array_add(vars, gs);
    /* creation order: global_step first (the session creates it first),
     * then the trainable variables in the order of their applies */
    for (size_t i = 0; i < d->nv; i++)
        json_object_array_add(vars, var_json(&d->v[i]));
    json_object_object_add(ex, "variables", vars);

    json_object *step = json_object_new_array();
    for (size_t i = 0; i < d->nv; i++)
        json_object_array_add(step, op_json("READ", &d->v[i]));
    json_object *c = json_object_new_object();
    add_str(c, "op", "COMPUTE");
    add_str(c, "what",
            "forward + backward on this worker; an op waits only "
            "for the READs of the variables it consumes");
    add_int(c, "ops", (int64_t)rf_plan_num_nodes(d->plan));
    json_object_array_add(step, c);
    size_t *order = calloc(d->nv, sizeof *order);
    size_t n = order ? push_order(d, order) : 0;
    for (size_t k = 0; k < n; k++) {
        const tr_rvar *v = &d->v[order[k]];
        json_object *o = op_json(
            f->apply_mode == RF_PS_APPLY_PS ? "WRITE_WITH_IMM" : "APPLY_WORKER",
            v);
        if (f->apply_mode == RF_PS_APPLY_WORKER)
            json_object_object_add(o, "locking",
                                   json_object_new_boolean(f->use_locking));
        json_object_array_add(step, o);
    }
    free(order);
    json_object *w = json_object_new_object();
    add_str(w, "op",
            f->apply_mode == RF_PS_APPLY_PS ? "WAIT_ACKS" : "WAIT_APPLIES");
    json_object_array_add(step, w);
    json_object *faa = json_object_new_object();
    add_str(faa, "op", "FETCH_AND_ADD");
    add_str(faa, "var", rf_node_name(d->global_step_var));
    add_int(faa, "ps_task", 0);
    add_int(faa, "bytes", 8);
    json_object_array_add(step, faa);
    json_object_object_add(ex, "step", step);
    return root;
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

static void print_text(const tr_dist *d, json_object *root, FILE *out)
{
    json_object *ex = NULL, *vars = NULL, *step = NULL;
    json_object_object_get_ex(root, "explain", &ex);
    json_object_object_get_ex(ex, "variables", &vars);
    json_object_object_get_ex(ex, "step", &step);
    char *cl = rf_cluster_format(d->cluster);
    size_t cl_len = cl ? strlen(cl) : 0;
    while (cl_len > 0 && cl[cl_len - 1] == '\n')
        cl[--cl_len] = '\0';
    fprintf(out, "explain: %s\n", cl ? cl : "(cluster)");
    free(cl);
    fprintf(out,
            "explain: fabric %s on %s; RF_BIND=%s: NUMA node %d, CPUs %s "
            "(%s); %d compute threads bound there\n",
            rf_fabric_provider(d->fabric), d->self->address,
            bind_name(&d->binding), d->binding.numa_node,
            d->binding.cpus[0] ? d->binding.cpus : "-", d->binding.why,
            rf_executor_threads(d->s->ex));
    fprintf(out,
            "explain: placement (replica_device_setter, round-robin over %d "
            "ps tasks in creation order):\n",
            d->num_ps);
    int64_t *per_ps = calloc((size_t)d->num_ps, sizeof *per_ps);
    for (size_t i = 0; i < json_object_array_length(vars); i++) {
        json_object *v = json_object_array_get_idx(vars, i);
        int64_t ps = int_of(v, "ps_task");
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
            if (per_ps && ps >= 0 && ps < d->num_ps)
                per_ps[ps] += int_of(v, "record_bytes");
        } else {
            fprintf(out, "  (%s)", str_of(v, "where"));
        }
        fputc('\n', out);
    }
    for (int p = 0; per_ps && p < d->num_ps; p++)
        fprintf(out, "  ps task %d holds %lld B of shard records\n", p,
                (long long)per_ps[p]);
    free(per_ps);
    fprintf(out, "explain: each step of this worker (apply=%s%s):\n",
            d->f->apply, d->f->use_locking ? ", use_locking" : "");
    for (size_t i = 0; i < json_object_array_length(step); i++) {
        json_object *o = json_object_array_get_idx(step, i);
        const char *op = str_of(o, "op");
        if (!strcmp(op, "COMPUTE"))
            fprintf(out, "  %2zu. COMPUTE %lld ops: %s\n", i + 1,
                    (long long)int_of(o, "ops"), str_of(o, "what"));
        else if (!strcmp(op, "WAIT_ACKS"))
            fprintf(out, "  %2zu. wait for every ps's apply acknowledgement\n",
                    i + 1);
        else if (!strcmp(op, "WAIT_APPLIES"))
            fprintf(out, "  %2zu. wait for every read-apply-write to finish\n",
                    i + 1);
        else
            fprintf(out, "  %2zu. %-15s %-24s ps %lld  %lld B%s\n", i + 1, op,
                    str_of(o, "var"), (long long)int_of(o, "ps_task"),
                    (long long)int_of(o, "bytes"),
                    !strcmp(op, "READ") ? "  (all READs posted at once)"
                    : !strcmp(op, "WRITE_WITH_IMM")
                        ? "  (gradient, as soon as backprop made it)"
                    : !strcmp(op, "APPLY_WORKER")
                        ? "  (READ record, apply here, WRITE back)"
                        : "");
    }
}

int tr_dist_explain(const tr_dist *d, FILE *out, char *err, size_t errlen)
{
    json_object *root = build(d);
    if (!root) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (d->f->explain == TR_EXPLAIN_JSON)
        fprintf(
            out, "%s\n",
            json_object_to_json_string_ext(
                root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    else
        print_text(d, root, out);
    fflush(out);
    json_object_put(root);
    return 0;
}
