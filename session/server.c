/* session/server.c: rf_server, what every task starts (tf.train.Server):
 * the cluster's host names resolved (retried, server_resolve.c), the NUMA
 * binding of the calling thread and the fabric on the task's
 * cluster address, the cluster secret if any (server_secret.c: without
 * one a warning, or an error when one is required), and for a ps task the ps
 * server that serves until the chief's SHUTDOWN, its roles bound to the
 * cluster spec. Knows nothing of the model. */
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/env.h"
#include "session/server_resolve.h"
#include "session/server_secret.h"
#include "session/session_internal.h"

/* The ps's apply=ps updates as spans of the server's trace. */
static void apply_span(void *ctx, const char *name, const char *args,
                       uint64_t t0_ns, uint64_t dur_ns, uint64_t update)
{
    rf_trace_add_span(ctx, name, "ps", args, t0_ns, dur_ns, 0, update);
}

/* The chief's worker id (id_in_cluster: 0). */
static int chief_id(const rf_cluster *cluster)
{
    const rf_cluster_task *t = rf_cluster_chief(cluster);
    return t && t->worker_id >= 0 ? t->worker_id : 0;
}

static bool is_ps(const rf_server *sv)
{
    return strcmp(sv->self->job, "ps") == 0;
}

rf_status rf_server_start(const rf_cluster *cluster,
                          const rf_server_options *options, rf_server **out)
{
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_server_start: out NULL");
    *out = NULL;
    const rf_cluster_task *self = cluster ? rf_cluster_self(cluster) : NULL;
    if (!self || !self->host)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_server_start: the cluster names no task with "
                            "an address for this process");
    bool elastic =
        (options && options->elastic) || rf_cluster_is_sparse(cluster);
    if (elastic && self->worker_id >= RF_PS_MAX_DONE_WORKERS)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "/job:%s/task:%d: worker id %d; an elastic job "
                            "admits worker ids below %d (the ps tasks' "
                            "members and done bitmaps)",
                            self->job, self->index, self->worker_id,
                            RF_PS_MAX_DONE_WORKERS);
    rf_server *sv = calloc(1, sizeof *sv);
    if (!sv)
        return rf_error_set(RF_ERR_NO_MEMORY, "rf_server_start: no memory");
    sv->cluster = cluster;
    sv->self = self;
    if (options)
        sv->opt = *options;
    /* A worker binds itself (threads created from now on, the executor's
     * pool and the fabric's progress thread, inherit it); a ps task's
     * server binds its arena and service threads itself. */
    rf_status st = sess_server_secret(sv->opt.cluster_secret_file,
                                      sv->opt.require_secret, &sv->secret);
    if (st != RF_OK) {
        free(sv);
        return st;
    }
    sv->opt.cluster_secret_file = NULL; /* not kept: the caller's string */
    const char *bind = sv->opt.bind_addr && *sv->opt.bind_addr
                           ? sv->opt.bind_addr
                           : rf_setting_str("RF_BIND_ADDR");
    sv->opt.bind_addr = NULL; /* not kept either */
    st = sess_resolve_hosts(cluster, sv->opt.resolve_wait_secs);
    if (st != RF_OK)
        goto err_topo;
    if (!is_ps(sv)) {
        st = rf_topology_open(&sv->topo);
        if (st == RF_OK)
            st = rf_topology_choose(sv->topo, self->host, &sv->binding);
        if (st != RF_OK) {
            st = rf_error_set(st, "NUMA binding for %s: %s", self->host,
                              rf_error_message());
            goto err_topo;
        }
        st = rf_topology_bind_thread(sv->topo, &sv->binding);
        if (st != RF_OK) {
            st = rf_error_set(st, "binding to NUMA node %d: %s",
                              sv->binding.numa_node, rf_error_message());
            goto err_topo;
        }
    }
    rf_fabric_attr fa = {.bind_addr = self->host};
    st = rf_fabric_open(NULL, &fa, &sv->fabric);
    if (st != RF_OK) {
        st = rf_error_set(st, "opening the fabric on %s: %s", self->host,
                          rf_error_message());
        goto err_topo;
    }
    if (is_ps(sv)) {
        rf_ps_server_options o = {
            .task_index = self->index,
            .on_apply = sv->opt.trace ? apply_span : NULL,
            .on_apply_ctx = sv->opt.trace,
            .trace_updates = sv->opt.trace_updates,
            .secret = sv->secret,
            .bind_roles = true,
            .chief_id = (uint32_t)chief_id(cluster),
            .num_workers = rf_server_elastic(sv)
                               ? RF_PS_MAX_DONE_WORKERS
                               : (uint32_t)rf_cluster_num_workers(cluster),
            .member_timeout_ms = sv->opt.member_timeout_ms,
            .chief_gone_exit_ms = sv->opt.chief_gone_exit_ms,
            .idle_exit_ms = sv->opt.idle_exit_ms,
            .listen_host = bind,
        };
        st =
            rf_ps_server_start(sv->fabric, self->host, self->port, &o, &sv->ps);
        if (st != RF_OK)
            goto err_fabric;
    }
    *out = sv;
    return RF_OK;

err_fabric:
    rf_fabric_close(sv->fabric);
err_topo:
    if (sv->topo)
        rf_topology_close(sv->topo);
    rf_secret_free(sv->secret);
    free(sv);
    return st;
}

bool rf_server_elastic(const rf_server *sv)
{
    return sv && (sv->opt.elastic || rf_cluster_is_sparse(sv->cluster));
}

rf_status rf_server_join(rf_server *sv)
{
    if (!sv || !sv->ps)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_server_join: only a ps task's server serves");
    return rf_ps_server_join(sv->ps);
}

void rf_server_stop(rf_server *sv)
{
    if (!sv)
        return;
    if (sv->ps)
        rf_ps_server_stop(sv->ps);
    rf_fabric_close(sv->fabric);
    if (sv->topo)
        rf_topology_close(sv->topo);
    rf_secret_free(sv->secret);
    free(sv);
}

rf_fabric *rf_server_fabric(const rf_server *sv)
{
    return sv ? sv->fabric : NULL;
}

const rf_cluster *rf_server_cluster(const rf_server *sv)
{
    return sv ? sv->cluster : NULL;
}

const rf_binding *rf_server_binding(const rf_server *sv)
{
    return sv ? &sv->binding : NULL;
}

uint16_t rf_server_port(const rf_server *sv)
{
    return sv && sv->ps ? rf_ps_server_port(sv->ps) : 0;
}

void rf_server_ps_counters(rf_server *sv, rf_ps_server_counters *out)
{
    *out = (rf_ps_server_counters){0};
    if (sv && sv->ps)
        rf_ps_server_get_counters(sv->ps, out);
}

int rf_server_numa_node(const rf_server *sv, const char **why)
{
    if (!sv || !sv->ps) {
        if (why)
            *why = "";
        return -1;
    }
    return rf_ps_server_numa_node(sv->ps, why);
}
