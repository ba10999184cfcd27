/* tools/trainer/dist_setup.c: from the placed worker graph to remote
 * variables: NUMA binding and fabric, the variable-to-shard map, the ps
 * connections, registered storage, shard creation or lookup, the chief's
 * initialisation or the others' wait, the prepared per-step reads, and the
 * final fetch of everything (evaluation, --variables_out). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist.h"
#include "rdmaflow/device.h"

#define ALIGN64(x) (((x) + 63u) & ~(size_t)63u)

int tr_dist_open(tr_dist *d, char *err, size_t errlen)
{
    const char *host = d->self->host;
    if (rf_topology_open(&d->topo) != RF_OK ||
        rf_topology_choose(d->topo, host, &d->binding) != RF_OK) {
        snprintf(err, errlen, "NUMA binding for %s: %s", host,
                 rf_error_message());
        return -1;
    }
    /* Threads created from now on (executor pool, fabric progress)
     * inherit this binding. */
    if (rf_topology_bind_thread(d->topo, &d->binding) != RF_OK) {
        snprintf(err, errlen, "binding to NUMA node %d: %s",
                 d->binding.numa_node, rf_error_message());
        return -1;
    }
    rf_fabric_attr fa = {.bind_addr = host};
    if (rf_fabric_open(NULL, &fa, &d->fabric) != RF_OK) {
        snprintf(err, errlen, "opening the fabric on %s: %s", host,
                 rf_error_message());
        return -1;
    }
    return 0;
}

/* The ps task of a node placed by replica_device_setter; -1 with err if it
 * is not on /job:ps. */
static int ps_task_of(const tr_dist *d, const rf_node *n, char *err,
                      size_t errlen)
{
    const char *dev = rf_node_requested_device(n);
    rf_device_spec spec;
    if (rf_device_spec_parse(dev, &spec) != RF_OK || strcmp(spec.job, "ps") ||
        spec.task < 0 || spec.task >= d->num_ps) {
        snprintf(err, errlen,
                 "variable '%s' is placed on '%s', not on one of the %d ps "
                 "tasks",
                 rf_node_name(n), dev, d->num_ps);
        return -1;
    }
    return spec.task;
}

static bool is_part_of(const tr_dist *d, const rf_node *var)
{
    if (var == d->global_step_var)
        return true;
    for (size_t i = 0; i < d->nv; i++) {
        const rf_apply_info *a = &d->v[i].apply;
        if (var == d->v[i].var || var == a->beta1_power ||
            var == a->beta2_power)
            return true;
        for (unsigned k = 0; k < a->num_slots; k++)
            if (var == a->slots[k])
                return true;
    }
    return false;
}

int tr_dist_map(tr_dist *d, char *err, size_t errlen)
{
    rf_graph *g = d->s->g;
    d->global_step_var = d->s->global_step;
    snprintf(d->global_step_device, sizeof d->global_step_device, "%s",
             rf_node_requested_device(d->global_step_var));
    int gs_task = ps_task_of(d, d->global_step_var, err, errlen);
    if (gs_task < 0)
        return -1;
    if (gs_task != 0) {
        snprintf(err, errlen,
                 "global_step was placed on ps task %d; the cluster's "
                 "global_step is on ps task 0",
                 gs_task);
        return -1;
    }
    size_t n = rf_graph_num_nodes(g), cap = 0;
    for (size_t i = 0; i < n; i++)
        cap += rf_node_op(rf_graph_node(g, i)) == RF_OP_APPLY_OPTIMIZER;
    d->v = calloc(cap ? cap : 1, sizeof *d->v);
    if (!d->v) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* applies are created in variable creation order */
    for (size_t i = 0; i < n; i++) {
        rf_node *node = rf_graph_node(g, i);
        if (rf_node_op(node) != RF_OP_APPLY_OPTIMIZER)
            continue;
        tr_rvar *v = &d->v[d->nv];
        if (rf_node_apply_info(node, &v->apply) != RF_OK) {
            snprintf(err, errlen, "%s: %s", rf_node_name(node),
                     rf_error_message());
            return -1;
        }
        v->var = v->apply.var;
        v->grad = v->apply.grad;
        int t = ps_task_of(d, v->var, err, errlen);
        if (t < 0)
            return -1;
        v->ps_task = (size_t)t;
        snprintf(v->device, sizeof v->device, "%s",
                 rf_node_requested_device(v->var));
        d->nv++;
    }
    if (d->nv == 0) {
        snprintf(err, errlen, "the model has no trainable variable");
        return -1;
    }
    for (size_t i = 0; i < rf_graph_num_variables(g); i++) {
        rf_node *var = rf_graph_variable(g, i);
        rf_device_spec spec;
        if (rf_device_spec_parse(rf_node_requested_device(var), &spec) ==
                RF_OK &&
            !strcmp(spec.job, "ps") && !is_part_of(d, var)) {
            snprintf(err, errlen,
                     "variable '%s' on %s is neither trainable nor an "
                     "optimizer slot: not supported in distributed mode",
                     rf_node_name(var), rf_node_requested_device(var));
            return -1;
        }
    }
    return 0;
}

static void shard_spec(const tr_dist *d, const tr_rvar *v, rf_ps_shard_spec *s)
{
    *s = (rf_ps_shard_spec){.name = rf_node_name(v->var),
                            .part = 0,
                            .dtype = rf_node_dtype(v->var),
                            .shape = rf_node_shape(v->var),
                            .trainable = true,
                            .optim = *v->apply.cfg};
    (void)d;
}

static rf_ps_xfer values_xfer(const tr_dist *d, const tr_rvar *v)
{
    return (rf_ps_xfer){.var = v->shard,
                        .field = RF_PS_FIELD_VALUES,
                        .buf = rf_variable_data(v->var),
                        .len = rf_variable_bytes(v->var),
                        .mr = d->mem_mr};
}

/* One registered block: each variable's values, then each gradient's
 * staging buffer, 64-byte aligned. */
static int register_storage(tr_dist *d, char *err, size_t errlen)
{
    size_t len = 0;
    for (size_t i = 0; i < d->nv; i++)
        len += 2 * ALIGN64(rf_variable_bytes(d->v[i].var));
    d->mem_len = len;
    if (rf_topology_alloc(d->topo, &d->binding, len, (void **)&d->mem) !=
        RF_OK) {
        snprintf(err, errlen, "allocating %zu bytes of variable storage: %s",
                 len, rf_error_message());
        return -1;
    }
    if (rf_ps_client_register(d->client, d->mem, len, &d->mem_mr) != RF_OK) {
        snprintf(err, errlen, "registering %zu bytes of variable storage: %s",
                 len, rf_error_message());
        return -1;
    }
    size_t off = 0;
    for (size_t i = 0; i < d->nv; i++) {
        tr_rvar *v = &d->v[i];
        size_t bytes = rf_variable_bytes(v->var);
        /* keeps the initial value (the chief writes it to the ps) */
        if (rf_variable_set_storage(v->var, d->mem + off, bytes, true) !=
            RF_OK) {
            snprintf(err, errlen, "%s: %s", rf_node_name(v->var),
                     rf_error_message());
            return -1;
        }
        off += ALIGN64(bytes);
        v->grad_buf = (float *)(void *)(d->mem + off);
        off += ALIGN64(bytes);
    }
    return 0;
}

static int init_or_wait(tr_dist *d, char *err, size_t errlen)
{
    rf_ps_xfer *x = calloc(d->nv, sizeof *x);
    rf_ps_var **vars = calloc(d->nv, sizeof *vars);
    int rc = -1;
    if (!x || !vars) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < d->nv; i++) {
        x[i] = values_xfer(d, &d->v[i]);
        vars[i] = d->v[i].shard;
    }
    if (d->chief) {
        if (rf_ps_init_values(d->client, x, d->nv) != RF_OK) {
            snprintf(err, errlen, "initialising the variables: %s",
                     rf_error_message());
            goto out;
        }
    } else if (rf_ps_wait_initialized(d->client, vars, d->nv, 100, 120000) !=
               RF_OK) {
        snprintf(err, errlen, "waiting for the chief to initialise: %s",
                 rf_error_message());
        goto out;
    }
    if (rf_ps_read_set_create(d->client, x, d->nv, &d->reads) != RF_OK) {
        snprintf(err, errlen, "preparing the reads: %s", rf_error_message());
        goto out;
    }
    rc = 0;
out:
    free(x);
    free(vars);
    return rc;
}

int tr_dist_connect(tr_dist *d, char *err, size_t errlen)
{
    size_t n = (size_t)d->num_ps;
    const char **addrs = calloc(n, sizeof *addrs);
    if (!addrs) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        addrs[i] = rf_cluster_task_address(d->cluster, "ps", (int)i);
    rf_ps_client_options o = {.client_id = (uint32_t)d->worker_id,
                              .is_chief = d->chief};
    rf_status st = rf_ps_client_connect(d->fabric, addrs, n, &o, &d->client);
    free(addrs);
    if (st != RF_OK) {
        snprintf(err, errlen, "%s", rf_error_message());
        return -1;
    }
    if (register_storage(d, err, errlen) != 0)
        return -1;
    for (size_t i = 0; i < d->nv; i++) {
        tr_rvar *v = &d->v[i];
        rf_ps_shard_spec spec;
        shard_spec(d, v, &spec);
        st = d->chief ? rf_ps_create(d->client, v->ps_task, &spec, &v->shard)
                      : rf_ps_lookup(d->client, v->ps_task, &spec, &v->shard);
        if (st != RF_OK) {
            snprintf(err, errlen, "%s '%s' on ps task %zu: %s",
                     d->chief ? "creating" : "looking up", rf_node_name(v->var),
                     v->ps_task, rf_error_message());
            return -1;
        }
        rf_ps_var_get_info(v->shard, &v->info);
        snprintf(v->read_span, sizeof v->read_span, "READ %s",
                 rf_node_name(v->var));
        snprintf(v->push_span, sizeof v->push_span, "%s %s",
                 d->f->apply_mode == RF_PS_APPLY_PS ? "WRITE_WITH_IMM"
                                                    : "APPLY_WORKER",
                 rf_node_name(v->var));
        snprintf(v->args, sizeof v->args, "\"bytes\":%zu,\"ps_task\":%zu",
                 v->info.values_bytes, v->ps_task);
    }
    return init_or_wait(d, err, errlen);
}

int tr_dist_fetch_all(tr_dist *d, bool slots, char *err, size_t errlen)
{
    if (rf_ps_read_set_post(d->reads) != RF_OK ||
        rf_ps_read_set_wait_all(d->reads) != RF_OK) {
        snprintf(err, errlen, "reading the variables: %s", rf_error_message());
        return -1;
    }
    int64_t gs = 0;
    if (rf_ps_global_step_read(d->client, &gs) != RF_OK) {
        snprintf(err, errlen, "reading global_step: %s", rf_error_message());
        return -1;
    }
    *(int64_t *)rf_variable_data(d->global_step_var) = gs;
    if (!slots)
        return 0;
    /* Slots and beta powers go through a registered block, then into the
     * graph's own slot variables. */
    size_t len = 64;
    for (size_t i = 0; i < d->nv; i++)
        len += d->v[i].apply.num_slots * ALIGN64(d->v[i].info.values_bytes);
    unsigned char *buf = NULL;
    rf_mr *mr = NULL;
    rf_ps_xfer *x = calloc(d->nv * (RF_OPTIM_MAX_SLOTS + 1) + 1, sizeof *x);
    int rc = -1;
    if (!x || posix_memalign((void **)&buf, 64, len) != 0) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (rf_ps_client_register(d->client, buf, len, &mr) != RF_OK) {
        snprintf(err, errlen, "registering %zu bytes: %s", len,
                 rf_error_message());
        goto out;
    }
    size_t nx = 0, off = 64;
    for (size_t i = 0; i < d->nv; i++) {
        tr_rvar *v = &d->v[i];
        for (unsigned k = 0; k < v->apply.num_slots; k++) {
            x[nx++] = (rf_ps_xfer){.var = v->shard,
                                   .field = RF_PS_FIELD_SLOT0 + (int)k,
                                   .buf = buf + off,
                                   .len = v->info.values_bytes,
                                   .mr = mr};
            off += ALIGN64(v->info.values_bytes);
        }
    }
    /* Adam: TensorFlow keeps one pair of beta powers, colocated with the
     * first variable; rdmaflow keeps one per shard (docs/DESIGN.md,
     * Departures) and exports the first variable's. */
    bool powers = d->v[0].apply.beta1_power != NULL;
    if (powers)
        x[nx++] = (rf_ps_xfer){.var = d->v[0].shard,
                               .field = RF_PS_FIELD_SCALARS,
                               .buf = buf,
                               .len = 8,
                               .mr = mr};
    if (rf_ps_read(d->client, x, nx) != RF_OK) {
        snprintf(err, errlen, "reading the optimizer slots: %s",
                 rf_error_message());
        goto out;
    }
    off = 64;
    for (size_t i = 0; i < d->nv; i++) {
        tr_rvar *v = &d->v[i];
        for (unsigned k = 0; k < v->apply.num_slots; k++) {
            memcpy(rf_variable_data(v->apply.slots[k]), buf + off,
                   v->info.values_bytes);
            off += ALIGN64(v->info.values_bytes);
        }
    }
    if (powers) {
        memcpy(rf_variable_data(d->v[0].apply.beta1_power), buf, 4);
        memcpy(rf_variable_data(d->v[0].apply.beta2_power), buf + 4, 4);
    }
    rc = 0;
out:
    if (mr)
        rf_ps_client_deregister(d->client, mr);
    free(buf);
    free(x);
    return rc;
}

void tr_dist_close(tr_dist *d)
{
    rf_plan_destroy(d->plan);
    d->plan = NULL;
    rf_ps_read_set_destroy(d->reads);
    d->reads = NULL;
    rf_ps_client_close(d->client); /* deregisters mem_mr */
    d->client = NULL;
    if (d->fabric)
        rf_fabric_close(d->fabric);
    d->fabric = NULL;
    if (d->mem)
        rf_topology_free(d->topo, d->mem, d->mem_len);
    d->mem = NULL;
    if (d->topo)
        rf_topology_close(d->topo);
    d->topo = NULL;
    free(d->v);
    d->v = NULL;
    free(d->fetched);
    d->fetched = NULL;
    free(d->wait_off);
    free(d->wait_var);
    free(d->grad_var);
    d->wait_off = d->wait_var = NULL;
    d->grad_var = NULL;
}
