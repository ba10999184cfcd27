/* tools/trainer/explain_local.c: --explain in local mode: everything is in
 * this process, so the explanation is the model's variables (with their
 * optimizer slots), the graph's ops by kind, the compute threads and what
 * one step runs: the whole graph, then one optimizer apply per variable.
 * Text, or one JSON document ({"explain": {"mode": "local", ...}}) with
 * --explain=json, from the same json-c object. */
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "dist.h"

static void add_str(json_object *o, const char *k, const char *v)
{
    json_object_object_add(o, k, json_object_new_string(v ? v : ""));
}

static void add_int(json_object *o, const char *k, int64_t v)
{
    json_object_object_add(o, k, json_object_new_int64(v));
}

static json_object *var_json(const rf_apply_info *a)
{
    json_object *o = json_object_new_object();
    rf_shape sh = rf_node_shape(a->var);
    json_object *shape = json_object_new_array();
    int64_t n = 1;
    for (int i = 0; i < sh.rank; i++) {
        json_object_array_add(shape, json_object_new_int64(sh.dims[i]));
        n *= sh.dims[i];
    }
    add_str(o, "name", rf_node_name(a->var));
    add_str(o, "dtype", rf_dtype_name(rf_node_dtype(a->var)));
    json_object_object_add(o, "shape", shape);
    add_int(o, "bytes", n * (int64_t)rf_dtype_size(rf_node_dtype(a->var)));
    json_object *slots = json_object_new_array();
    for (unsigned k = 0; k < a->num_slots; k++)
        json_object_array_add(
            slots, json_object_new_string(rf_node_name(a->slots[k])));
    json_object_object_add(o, "slots", slots);
    add_str(o, "optimizer", rf_optim_kind_name(a->cfg->kind));
    return o;
}

static json_object *build(const tr_flags *f, const tr_session *s)
{
    json_object *ex = json_object_new_object();
    add_str(ex, "mode", "local");
    add_int(ex, "compute_threads", rf_executor_threads(s->ex));
    add_str(ex, "optimizer", rf_optim_kind_name(f->optim.kind));
    json_object *vars = json_object_new_array();
    size_t n = rf_graph_num_nodes(s->g), applies = 0;
    for (size_t i = 0; i < n; i++) {
        rf_node *node = rf_graph_node(s->g, i);
        rf_apply_info a;
        if ((rf_node_op(node) != RF_OP_APPLY_OPTIMIZER &&
             rf_node_op(node) != RF_OP_SPARSE_APPLY_OPTIMIZER) ||
            rf_node_apply_info(node, &a) != RF_OK)
            continue;
        json_object_array_add(vars, var_json(&a));
        applies++;
    }
    json_object_object_add(ex, "variables", vars);
    add_int(ex, "graph_nodes", (int64_t)n);
    json_object *step = json_object_new_array();
    json_object *c = json_object_new_object();
    add_str(c, "op", "COMPUTE");
    add_str(c, "what", "forward + backward in this process");
    json_object_array_add(step, c);
    json_object *ap = json_object_new_object();
    add_str(ap, "op", "APPLY");
    add_int(ap, "variables", (int64_t)applies);
    add_str(ap, "what",
            "the optimizer's update of each variable and its "
            "slots, in this process, then global_step += 1");
    json_object_array_add(step, ap);
    json_object_object_add(ex, "step", step);
    return ex;
}

int tr_explain_local(const tr_flags *f, const tr_session *s, FILE *out,
                     char *err, size_t errlen)
{
    json_object *ex = build(f, s);
    json_object *root = json_object_new_object();
    if (!ex || !root) {
        json_object_put(ex);
        json_object_put(root);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    json_object_object_add(root, "explain", ex);
    if (f->explain == TR_EXPLAIN_JSON) {
        fprintf(
            out, "%s\n",
            json_object_to_json_string_ext(
                root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    } else {
        json_object *vars = json_object_object_get(ex, "variables");
        int64_t total = 0;
        for (size_t i = 0; i < json_object_array_length(vars); i++)
            total += json_object_get_int64(json_object_object_get(
                json_object_array_get_idx(vars, i), "bytes"));
        fprintf(out,
                "explain: local run: every variable and op in this process, "
                "no fabric (give --ps_hosts/--worker_hosts/--job_name/"
                "--task_index for a cluster); %d compute threads\n",
                rf_executor_threads(s->ex));
        char opt[64];
        if (f->model.kind == TR_MODEL_WIDE_DEEP && !f->optimizer_given)
            snprintf(opt, sizeof opt, "optimizers %s (wide) and %s (deep)",
                     rf_optim_kind_name(f->optim.kind),
                     rf_optim_kind_name(f->optim_deep.kind));
        else
            snprintf(opt, sizeof opt, "optimizer %s",
                     rf_optim_kind_name(f->optim.kind));
        fprintf(out, "explain: %zu trained variables (%lld B), %s:\n",
                json_object_array_length(vars), (long long)total, opt);
        for (size_t i = 0; i < json_object_array_length(vars); i++) {
            json_object *v = json_object_array_get_idx(vars, i);
            fprintf(
                out, "  %-24s %-8s %-16s %10lld B",
                json_object_get_string(json_object_object_get(v, "name")),
                json_object_get_string(json_object_object_get(v, "dtype")),
                json_object_to_json_string_ext(
                    json_object_object_get(v, "shape"), JSON_C_TO_STRING_PLAIN),
                (long long)json_object_get_int64(
                    json_object_object_get(v, "bytes")));
            json_object *slots = json_object_object_get(v, "slots");
            for (size_t k = 0; k < json_object_array_length(slots); k++)
                fprintf(out, "%s%s", k ? ", " : "  with slots ",
                        json_object_get_string(
                            json_object_array_get_idx(slots, k)));
            if (f->model.kind == TR_MODEL_WIDE_DEEP) /* two optimizers */
                fprintf(out, "  (%s)",
                        json_object_get_string(
                            json_object_object_get(v, "optimizer")));
            fputc('\n', out);
        }
        fprintf(out,
                "explain: each step: the graph's %zu nodes (forward and "
                "backward), then %zu optimizer applies and global_step += "
                "1, all here\n",
                rf_graph_num_nodes(s->g), json_object_array_length(vars));
    }
    fflush(out);
    json_object_put(root);
    return 0;
}
