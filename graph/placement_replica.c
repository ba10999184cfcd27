/* graph/placement_replica.c: tf.train.replica_device_setter: ps ops (by op
 * type) go to a ps task chosen by a strategy (round-robin, greedy by load as
 * contrib's GreedyLoadBalancingStrategy, or a user callback), every other op
 * to the worker device, merged with the op's current device as TF's
 * _ReplicaDeviceChooser.device_function does. */
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/device.h"
#include "rdmaflow/status.h"

/* device_setter.STANDARD_PS_OPS, in TensorFlow's order. */
const char *const rf_standard_ps_ops[] = {
    "Variable",
    "VariableV2",
    "AutoReloadVariable",
    "MutableHashTable",
    "MutableHashTableV2",
    "MutableHashTableOfTensors",
    "MutableHashTableOfTensorsV2",
    "MutableDenseHashTable",
    "MutableDenseHashTableV2",
    "VarHandleOp",
    "BoostedTreesEnsembleResourceHandleOp",
    "BoostedTreesQuantileStreamResourceHandleOp",
    "ResourceConditionalAccumulator",
    "DecisionTreeResource",
};
const size_t rf_standard_ps_ops_count =
    sizeof rf_standard_ps_ops / sizeof rf_standard_ps_ops[0];

struct rf_replica_device_setter {
    int ps_tasks;
    bool ps_device_set; /* ps_device was a non-empty string */
    rf_device_spec ps_spec;
    rf_device_spec worker_spec;
    bool merge_devices;
    char **ps_ops;
    size_t num_ps_ops;
    rf_ps_strategy_kind strategy;
    rf_ps_load_fn load_fn;
    void *load_ctx;
    rf_ps_strategy_fn strategy_fn;
    void *strategy_ctx;
    int next_task; /* round-robin */
    double *loads; /* greedy: load per ps task */
};

void rf_replica_device_setter_options_init(rf_replica_device_setter_options *o)
{
    memset(o, 0, sizeof *o);
    o->ps_device = "/job:ps";
    o->worker_device = "/job:worker";
    o->merge_devices = true;
    o->strategy = RF_PS_ROUND_ROBIN;
}

void rf_replica_device_setter_destroy(rf_replica_device_setter *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->num_ps_ops; i++)
        free(s->ps_ops[i]);
    free(s->ps_ops);
    free(s->loads);
    free(s);
}

/* The number of ps tasks as replica_device_setter derives it; 0 means TF
 * would return None. */
static rf_status count_ps_tasks(const rf_replica_device_setter_options *o,
                                const rf_device_spec *ps_spec, int *tasks)
{
    *tasks = 0;
    if (!o->cluster) {
        if (o->ps_tasks < 0)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "replica_device_setter: ps_tasks %d is "
                                "negative",
                                o->ps_tasks);
        *tasks = o->ps_tasks;
        return RF_OK;
    }
    const rf_cluster_desc *c = o->cluster;
    if (c->num_jobs && !c->jobs)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "replica_device_setter: cluster has %zu jobs and "
                            "no job array",
                            c->num_jobs);
    if (!ps_spec->job[0])
        return RF_OK; /* ps_job_name None is never in the cluster */
    for (size_t i = 0; i < c->num_jobs; i++) {
        const rf_cluster_job *j = &c->jobs[i];
        if (!j->name || strcmp(j->name, ps_spec->job) != 0)
            continue;
        if (j->num_tasks < 0)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "replica_device_setter: cluster job \"%s\" "
                                "has %d tasks",
                                j->name, j->num_tasks);
        *tasks = j->num_tasks;
        return RF_OK;
    }
    return RF_OK;
}

static rf_status parse_option(const char *what, const char *str,
                              rf_device_spec *spec)
{
    rf_status st = rf_device_spec_parse(str, spec);
    if (st != RF_OK) {
        char why[256];
        strncpy(why, rf_error_message(), sizeof why - 1);
        why[sizeof why - 1] = '\0';
        return rf_error_set(st, "replica_device_setter: %s: %s", what, why);
    }
    return RF_OK;
}

static rf_status copy_ps_ops(rf_replica_device_setter *s,
                             const char *const *ops, size_t n)
{
    if (n && !ops)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "replica_device_setter: num_ps_ops %zu with no "
                            "ps_ops array",
                            n);
    if (n == 0)
        return RF_OK;
    s->ps_ops = calloc(n, sizeof *s->ps_ops);
    if (!s->ps_ops)
        return rf_error_set(RF_ERR_NO_MEMORY, "replica_device_setter");
    for (size_t i = 0; i < n; i++) {
        if (!ops[i])
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "replica_device_setter: ps_ops[%zu] is NULL",
                                i);
        s->ps_ops[i] = strdup(ops[i]);
        if (!s->ps_ops[i])
            return rf_error_set(RF_ERR_NO_MEMORY, "replica_device_setter");
        s->num_ps_ops = i + 1;
    }
    return RF_OK;
}

rf_status
rf_replica_device_setter_create(const rf_replica_device_setter_options *opts,
                                rf_replica_device_setter **out)
{
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "replica_device_setter: out is NULL");
    *out = NULL;
    rf_replica_device_setter_options o;
    if (opts)
        o = *opts;
    else
        rf_replica_device_setter_options_init(&o);
    if (!o.ps_device)
        o.ps_device = "/job:ps";
    if (!o.worker_device)
        o.worker_device = "/job:worker";

    rf_device_spec ps_spec, worker_spec;
    rf_status st = parse_option("ps_device", o.ps_device, &ps_spec);
    if (st == RF_OK)
        st = parse_option("worker_device", o.worker_device, &worker_spec);
    if (st != RF_OK)
        return st;
    switch (o.strategy) {
    case RF_PS_ROUND_ROBIN:
    case RF_PS_GREEDY:
        break;
    case RF_PS_CUSTOM:
        if (!o.strategy_fn)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "replica_device_setter: ps_strategy must be "
                                "callable (RF_PS_CUSTOM without strategy_fn)");
        break;
    default:
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "replica_device_setter: unknown strategy %d",
                            (int)o.strategy);
    }
    int ps_tasks;
    st = count_ps_tasks(&o, &ps_spec, &ps_tasks);
    if (st != RF_OK || ps_tasks == 0)
        return st; /* TF returns None */

    rf_replica_device_setter *s = calloc(1, sizeof *s);
    if (!s)
        return rf_error_set(RF_ERR_NO_MEMORY, "replica_device_setter");
    s->ps_tasks = ps_tasks;
    s->ps_device_set = o.ps_device[0] != '\0';
    s->ps_spec = ps_spec;
    s->worker_spec = worker_spec;
    s->merge_devices = o.merge_devices;
    s->strategy = o.strategy;
    s->load_fn = o.load_fn;
    s->load_ctx = o.load_ctx;
    s->strategy_fn = o.strategy_fn;
    s->strategy_ctx = o.strategy_ctx;
    if (o.ps_ops)
        st = copy_ps_ops(s, o.ps_ops, o.num_ps_ops);
    else
        st = copy_ps_ops(s, rf_standard_ps_ops, rf_standard_ps_ops_count);
    if (st == RF_OK && s->strategy == RF_PS_GREEDY) {
        s->loads = calloc((size_t)ps_tasks, sizeof *s->loads);
        if (!s->loads)
            st = rf_error_set(RF_ERR_NO_MEMORY, "replica_device_setter");
    }
    if (st != RF_OK) {
        rf_replica_device_setter_destroy(s);
        return st;
    }
    *out = s;
    return RF_OK;
}

static bool is_ps_op(const rf_replica_device_setter *s, const char *type)
{
    if (!type)
        return false;
    for (size_t i = 0; i < s->num_ps_ops; i++)
        if (strcmp(s->ps_ops[i], type) == 0)
            return true;
    return false;
}

/* Runs the strategy for a ps op: the ps task index it returns. */
static rf_status choose_task(rf_replica_device_setter *s, const rf_op_desc *op,
                             int *task)
{
    switch (s->strategy) {
    case RF_PS_ROUND_ROBIN:
        *task = s->next_task;
        s->next_task = (s->next_task + 1) % s->ps_tasks;
        return RF_OK;
    case RF_PS_GREEDY: {
        int best = 0; /* np.argmin: the first minimum */
        for (int i = 1; i < s->ps_tasks; i++)
            if (s->loads[i] < s->loads[best])
                best = i;
        s->loads[best] +=
            s->load_fn ? s->load_fn(s->load_ctx, op) : (double)op->bytes;
        *task = best;
        return RF_OK;
    }
    case RF_PS_CUSTOM: {
        int t = -1;
        rf_status st = s->strategy_fn(s->strategy_ctx, op, s->ps_tasks, &t);
        if (st != RF_OK)
            return st;
        if (t < 0 || t >= s->ps_tasks)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "replica_device_setter: ps_strategy chose task "
                                "%d for op \"%s\"; there are %d ps tasks",
                                t, op->name ? op->name : "", s->ps_tasks);
        *task = t;
        return RF_OK;
    }
    }
    return rf_error_set(RF_ERR_INVALID_ARG, "replica_device_setter: strategy");
}

rf_status rf_replica_device_setter_fn(void *setter, const rf_op_desc *op,
                                      char *out, size_t out_len)
{
    rf_replica_device_setter *s = setter;
    if (!s || !op || !out || out_len == 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_replica_device_setter_fn: bad arguments");
    out[0] = '\0';
    rf_device_spec cur;
    rf_status st = rf_device_spec_parse(op->device, &cur);
    if (st != RF_OK)
        return st;
    /* merge_devices=False keeps any device already requested. */
    if (!s->merge_devices && op->device && op->device[0])
        return rf_device_spec_to_string(&cur, out, out_len);

    rf_device_spec spec;
    if (s->ps_tasks && s->ps_device_set && is_ps_op(s, op->type)) {
        spec = s->ps_spec;
        /* The task is only chosen (and the strategy only consulted) when the
         * ps job will not be replaced by the op's own job. */
        if (spec.job[0] && (!cur.job[0] || strcmp(cur.job, spec.job) == 0)) {
            int task = 0;
            st = choose_task(s, op, &task);
            if (st != RF_OK)
                return st;
            spec.task = task;
        }
    } else {
        spec = s->worker_spec;
    }
    rf_device_spec_merge(&spec, &cur);
    return rf_device_spec_to_string(&spec, out, out_len);
}

rf_status rf_device_stack_push_setter(rf_device_stack *stack,
                                      rf_replica_device_setter *setter)
{
    return rf_device_stack_push_fn(
        stack, setter ? rf_replica_device_setter_fn : NULL, setter);
}

int rf_replica_device_setter_ps_tasks(const rf_replica_device_setter *setter)
{
    return setter ? setter->ps_tasks : 0;
}

double rf_replica_device_setter_load(const rf_replica_device_setter *setter,
                                     int task)
{
    if (!setter || !setter->loads || task < 0 || task >= setter->ps_tasks)
        return 0.0;
    return setter->loads[task];
}
