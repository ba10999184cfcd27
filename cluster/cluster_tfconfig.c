/* cluster/cluster_tfconfig.c: parsing the TF_CONFIG environment variable
 * (json-c) into job lists and the task's type and index, with messages that
 * give the JSON path ("TF_CONFIG: cluster.ps[1]") or json-c's error and the
 * position of invalid JSON. */
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cluster/cluster_internal.h"
#include "core/json_check.h"
#include "rdmaflow/status.h"

/* "a list", "the integer 3", "the string \"x\"" ... for "not ..." messages. */
static const char *describe(struct json_object *o, char *buf, size_t len)
{
    char q[80];
    switch (json_object_get_type(o)) {
    case json_type_null:
        return "null";
    case json_type_boolean:
        snprintf(buf, len, "the boolean %s",
                 json_object_get_boolean(o) ? "true" : "false");
        return buf;
    case json_type_double:
        snprintf(buf, len, "the number %s", json_object_to_json_string(o));
        return buf;
    case json_type_int:
        snprintf(buf, len, "the integer %s", json_object_to_json_string(o));
        return buf;
    case json_type_object:
        return "an object";
    case json_type_array:
        return "a list";
    case json_type_string:
        snprintf(buf, len, "the string \"%s\"",
                 cl_quote(json_object_get_string(o),
                          (size_t)json_object_get_string_len(o), q));
        return buf;
    }
    return "an unknown JSON value";
}

/* The error at `off`: what (NULL: end of input), with the text there. */
static rf_status syntax_error(const char *text, size_t len, size_t off,
                              const char *what)
{
    if (off > len)
        off = len;
    size_t line = 1, col = 1;
    for (size_t i = 0; i < off; i++) {
        if (text[i] == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    if (!what || off == len)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "TF_CONFIG: invalid JSON at offset %zu (line %zu, "
                            "column %zu): unexpected end of input (is a "
                            "brace, bracket or quote not closed?)",
                            off, line, col);
    char q[80];
    size_t n = len - off < 20 ? len - off : 20;
    return rf_error_set(RF_ERR_INVALID_ARG,
                        "TF_CONFIG: invalid JSON at offset %zu (line %zu, "
                        "column %zu): %s; text there: \"%s%s\"",
                        off, line, col, what, cl_quote(text + off, n, q),
                        off + n < len ? "..." : "");
}

/* json-c's error, or text after the value (Python's "Extra data"). */
static rf_status check_syntax(const char *text, size_t len,
                              struct json_tokener *tok)
{
    enum json_tokener_error e = json_tokener_get_error(tok);
    size_t off = json_tokener_get_parse_end(tok);
    if (e == json_tokener_continue || e == json_tokener_error_parse_eof)
        return syntax_error(text, len, off, NULL);
    if (e != json_tokener_success)
        return syntax_error(text, len, off, json_tokener_error_desc(e));
    off += strspn(text + off, " \t\r\n");
    if (off < len)
        return syntax_error(text, len, off,
                            "text after the end of the JSON value");
    return RF_OK;
}

/* One job's list; top is "cluster" or "sparseCluster" (for messages). */
static rf_status parse_job(const char *top, const char *name,
                           struct json_object *list, cl_tfconfig *out)
{
    char where[48], d[96];
    int job = cl_job_lookup(name);
    if (job < 0)
        return cl_unknown_job("TF_CONFIG: cluster", name);
    snprintf(where, sizeof where, "TF_CONFIG: %s.%s", top, name);
    cl_job_begin(&out->jobs, job, where, true);
    if (!json_object_is_type(list, json_type_array))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s must be a list of \"host:port\" strings, not "
                            "%s%s",
                            where, describe(list, d, sizeof d),
                            json_object_is_type(list, json_type_object)
                                ? " (sparse task maps are not supported)"
                                : "");
    size_t n = json_object_array_length(list);
    if (n == 0)
        return rf_error_set(RF_ERR_INVALID_ARG, "%s is an empty list", where);
    for (size_t i = 0; i < n; i++) {
        struct json_object *e = json_object_array_get_idx(list, i);
        if (!json_object_is_type(e, json_type_string))
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "%s[%zu] must be a \"host:port\" string, not "
                                "%s",
                                where, i, describe(e, d, sizeof d));
        rf_status st =
            cl_job_add(&out->jobs.job[job], json_object_get_string(e),
                       (size_t)json_object_get_string_len(e));
        if (st != RF_OK)
            return st;
    }
    return RF_OK;
}

static rf_status parse_cluster(struct json_object *cluster, cl_tfconfig *out)
{
    char d[96];
    if (!json_object_is_type(cluster, json_type_object))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "TF_CONFIG: cluster must be an object (job name "
                            "-> list of \"host:port\"), not %s",
                            describe(cluster, d, sizeof d));
    json_object_object_foreach(cluster, name, list)
    {
        rf_status st = parse_job("cluster", name, list, out);
        if (st != RF_OK)
            return st;
    }
    if (json_object_object_length(cluster) == 0)
        return RF_OK; /* ClusterSpec({}): no cluster, as TF */
    out->has_cluster = true;
    return cl_jobs_check(&out->jobs, "TF_CONFIG: cluster");
}

/* Most worker indices a sparseCluster may name (a sparse job's slots). */
#define SPARSE_MAX_INDEX 65535

/* sparseCluster.worker: {"<index>": "host:port", ...}. */
static rf_status parse_sparse_workers(struct json_object *map, cl_tfconfig *out)
{
    char d[96], q[80];
    const char *where = "TF_CONFIG: sparseCluster.worker";
    cl_job_begin(&out->jobs, CL_WORKER, where, true);
    cl_job *jb = &out->jobs.job[CL_WORKER];
    jb->sparse = true;
    if (!json_object_is_type(map, json_type_object))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s must be an object {\"<task index>\": "
                            "\"host:port\"}, not %s",
                            where, describe(map, d, sizeof d));
    json_object_object_foreach(map, key, addr)
    {
        int index;
        char kw[120];
        snprintf(kw, sizeof kw, "%s key \"%s\"", where,
                 cl_quote(key, strlen(key), q));
        rf_status st = cl_parse_index(key, kw, &index);
        if (st != RF_OK)
            return st;
        if (index > SPARSE_MAX_INDEX)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "%s: task index %d is above the limit of %d",
                                kw, index, SPARSE_MAX_INDEX);
        if (cl_job_find(jb, index))
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "%s: task %d is given twice", kw, index);
        if (!json_object_is_type(addr, json_type_string))
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "%s[\"%d\"] must be a \"host:port\" string, "
                                "not %s",
                                where, index, describe(addr, d, sizeof d));
        st = cl_job_add_at(jb, index, json_object_get_string(addr),
                           (size_t)json_object_get_string_len(addr));
        if (st != RF_OK)
            return st;
    }
    return RF_OK;
}

/* TFJob's enableDynamicWorker form (training-operator's SparseTFConfig):
 * {"ps": [...], "worker": {"<index>": "host:port"}}; a worker gets every ps
 * and itself, a ps only itself and an empty worker map. Which job is
 * sparse for this task is settled by the resolver (cluster.c). */
static rf_status parse_sparse_cluster(struct json_object *cluster,
                                      cl_tfconfig *out)
{
    char d[96];
    if (!json_object_is_type(cluster, json_type_object))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "TF_CONFIG: sparseCluster must be an object "
                            "({\"ps\": [...], \"worker\": {\"<index>\": "
                            "\"host:port\"}}), not %s",
                            describe(cluster, d, sizeof d));
    json_object_object_foreach(cluster, name, val)
    {
        rf_status st;
        if (strcmp(name, "ps") == 0) {
            if (json_object_is_type(val, json_type_array) &&
                json_object_array_length(val) == 0) {
                /* what training-operator gives a chief: nothing to reach */
                cl_job_begin(&out->jobs, CL_PS, "TF_CONFIG: sparseCluster.ps",
                             true);
                continue;
            }
            st = parse_job("sparseCluster", "ps", val, out);
        } else if (strcmp(name, "worker") == 0) {
            st = parse_sparse_workers(val, out);
        } else {
            st = rf_error_set(
                RF_ERR_INVALID_ARG,
                "TF_CONFIG: sparseCluster.%s: only \"ps\" and \"worker\" "
                "are allowed in a sparseCluster (TFJob enableDynamicWorker "
                "has no chief or evaluator replicas here; worker 0 is the "
                "chief)",
                name);
        }
        if (st != RF_OK)
            return st;
    }
    if (!out->jobs.job[CL_PS].present)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "TF_CONFIG: sparseCluster has no \"ps\" list");
    if (!out->jobs.job[CL_WORKER].present) {
        cl_job_begin(&out->jobs, CL_WORKER, "TF_CONFIG: sparseCluster.worker",
                     true);
        out->jobs.job[CL_WORKER].sparse = true;
    }
    out->has_cluster = true;
    out->sparse = true;
    return cl_jobs_check(&out->jobs, "TF_CONFIG: sparseCluster");
}

static rf_status parse_index(struct json_object *idx, cl_tfconfig *out)
{
    char d[96];
    const char *where = "TF_CONFIG: task.index";
    if (json_object_is_type(idx, json_type_string)) {
        /* TF reads int(task['index']), so "1" is accepted too. */
        out->has_index = true;
        return cl_parse_index(json_object_get_string(idx), where,
                              &out->task_index);
    }
    if (!json_object_is_type(idx, json_type_int))
        return rf_error_set(RF_ERR_INVALID_ARG, "%s must be an integer, not %s",
                            where, describe(idx, d, sizeof d));
    int64_t v = json_object_get_int64(idx);
    if (v < 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: %lld is negative (task indices start at 0)",
                            where, (long long)v);
    if (v > INT_MAX)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: %s is above the limit of %d", where,
                            json_object_to_json_string(idx), INT_MAX);
    out->has_index = true;
    out->task_index = (int)v;
    return RF_OK;
}

static rf_status parse_task(struct json_object *task, cl_tfconfig *out)
{
    char d[96];
    if (!json_object_is_type(task, json_type_object))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "TF_CONFIG: task must be an object ({\"type\": "
                            "..., \"index\": ...}), not %s",
                            describe(task, d, sizeof d));
    out->has_task = true;
    struct json_object *type, *idx;
    if (json_object_object_get_ex(task, "type", &type)) {
        if (!json_object_is_type(type, json_type_string))
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "TF_CONFIG: task.type must be a string, not "
                                "%s",
                                describe(type, d, sizeof d));
        const char *name = json_object_get_string(type);
        if (!*name)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "TF_CONFIG: task.type is empty");
        if ((size_t)json_object_get_string_len(type) != strlen(name) ||
            (out->task_job = cl_job_lookup(name)) < 0)
            return cl_unknown_job("TF_CONFIG: task.type", name);
    }
    if (json_object_object_get_ex(task, "index", &idx))
        return parse_index(idx, out);
    return RF_OK;
}

static rf_status parse_root(struct json_object *root, cl_tfconfig *out)
{
    char d[96];
    if (!json_object_is_type(root, json_type_object))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "TF_CONFIG: must be a JSON object ({\"cluster\": "
                            "..., \"task\": ...}), not %s",
                            describe(root, d, sizeof d));
    struct json_object *cluster, *task, *sparse;
    bool has_cluster = json_object_object_get_ex(root, "cluster", &cluster);
    bool has_sparse = json_object_object_get_ex(root, "sparseCluster", &sparse);
    if (has_cluster && has_sparse)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "TF_CONFIG: has both \"cluster\" and "
                            "\"sparseCluster\" (TFJob enableDynamicWorker "
                            "writes only \"sparseCluster\"): give one");
    rf_status st = RF_OK;
    if (has_cluster)
        st = parse_cluster(cluster, out);
    else if (has_sparse)
        st = parse_sparse_cluster(sparse, out);
    if (st != RF_OK)
        return st;
    if (json_object_object_get_ex(root, "task", &task))
        return parse_task(task, out);
    return RF_OK;
}

rf_status cl_parse_tfconfig(const char *text, cl_tfconfig *out)
{
    memset(out, 0, sizeof *out);
    out->task_job = -1;
    out->set = true;
    size_t len = strlen(text);
    if (len >= INT_MAX)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "TF_CONFIG: %zu bytes, above the limit of %d", len,
                            INT_MAX - 1);
    struct json_tokener *tok = json_tokener_new();
    if (!tok)
        return rf_error_set(RF_ERR_NO_MEMORY, "TF_CONFIG: out of memory");
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
                                    JSON_TOKENER_ALLOW_TRAILING_CHARS |
                                    JSON_TOKENER_VALIDATE_UTF8);
    /* The terminating NUL is passed too: it ends a final literal ("null",
     * "12"), else json-c waits for more input. */
    struct json_object *root = json_tokener_parse_ex(tok, text, (int)len + 1);
    /* JSON null parses to NULL with success. */
    rf_status st = check_syntax(text, len, tok);
    /* what json-c lets through and another reader may read otherwise (a
     * duplicate key: json-c keeps the last; which one another reader
     * keeps, if it takes the text at all, is its own choice) */
    if (st == RF_OK)
        st = rf_json_check(text, len, RF_ERR_INVALID_ARG, "TF_CONFIG");
    if (st == RF_OK)
        st = parse_root(root, out);
    json_object_put(root);
    json_tokener_free(tok);
    if (st != RF_OK)
        cl_jobs_free(&out->jobs);
    return st;
}
