/* session/prom_ps.c: a ps task's Prometheus metrics (rf_prom_ps_attach,
 * rdmaflow/prometheus.h): at each scrape the registry's collect callback
 * reads the ps server's counters (rf_server_ps_counters: a copy under the
 * server's counter lock, and atomics) into the metrics. It reads counts
 * only, never a shard's bytes. */
#include <stdlib.h>

#include "rdmaflow/prometheus.h"
#include "rdmaflow/ps.h"

/* The metrics, in the order of the table below. */
enum {
    PS_CONNECTIONS,
    PS_PUSHES,
    PS_SPARSE_PUSHES,
    PS_STALE,
    PS_ARENA,
    PS_AUTH,
    PS_REFUSED,
    PS_DROPPED,
    PS_NUM_METRICS
};

static const struct {
    rf_prom_type type;
    const char *name, *help;
} ps_metrics[PS_NUM_METRICS] = {
    {RF_PROM_GAUGE, "rdmaflow_ps_connections",
     "Worker connections this ps task serves now (clients that said HELLO)."},
    {RF_PROM_COUNTER, "rdmaflow_ps_pushes_applied_total",
     "Dense gradient pushes applied (apply=ps) or taken into a sync "
     "accumulator."},
    {RF_PROM_COUNTER, "rdmaflow_ps_sparse_pushes_applied_total",
     "Embedding-table (sparse) pushes applied."},
    {RF_PROM_COUNTER, "rdmaflow_ps_stale_gradients_dropped_total",
     "Sync gradients dropped as stale (tagged with a step behind the "
     "shard's)."},
    {RF_PROM_GAUGE, "rdmaflow_ps_arena_bytes",
     "Bytes of this ps task's registered arena (shards, inboxes, globals)."},
    {RF_PROM_COUNTER, "rdmaflow_ps_auth_failures_total",
     "Connections refused for a missing or wrong cluster secret or role."},
    {RF_PROM_COUNTER, "rdmaflow_ps_connections_refused_total",
     "Connections refused: authentication, busy, full or duplicate id."},
    {RF_PROM_COUNTER, "rdmaflow_ps_connections_dropped_total",
     "Connections dropped: not a client in time, or a protocol violation."},
};

struct rf_prom_ps {
    rf_prom_registry *r;
    rf_server *server;
    rf_prom_metric *m[PS_NUM_METRICS];
};

static void collect_ps(void *ctx, rf_prom_registry *r)
{
    (void)r;
    rf_prom_ps *p = ctx;
    rf_ps_server_counters k;
    rf_server_ps_counters(p->server, &k);
    rf_prom_set(p->m[PS_CONNECTIONS], (double)k.clients);
    rf_prom_set(p->m[PS_PUSHES], (double)k.dense_applies);
    rf_prom_set(p->m[PS_SPARSE_PUSHES], (double)k.sparse_applies);
    rf_prom_set(p->m[PS_STALE], (double)k.stale_dropped);
    rf_prom_set(p->m[PS_ARENA], (double)k.arena_bytes);
    rf_prom_set(p->m[PS_AUTH], (double)k.refused_auth);
    rf_prom_set(p->m[PS_REFUSED],
                (double)(k.refused_auth + k.refused_busy + k.refused_full +
                         k.refused_duplicate));
    rf_prom_set(p->m[PS_DROPPED],
                (double)(k.dropped_idle + k.dropped_protocol));
}

rf_status rf_prom_ps_attach(rf_prom_registry *r, rf_server *server,
                            rf_prom_ps **out)
{
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_prom_ps_attach: out NULL");
    *out = NULL;
    if (!r || !server)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_prom_ps_attach: a registry and a ps task's "
                            "server are required");
    rf_prom_ps *p = calloc(1, sizeof *p);
    if (!p)
        return rf_error_set(RF_ERR_NO_MEMORY, "prometheus: out of memory");
    p->r = r;
    p->server = server;
    for (int i = 0; i < PS_NUM_METRICS; i++) {
        rf_status st =
            rf_prom_metric_add(r, ps_metrics[i].type, ps_metrics[i].name,
                               ps_metrics[i].help, NULL, NULL, &p->m[i]);
        if (st != RF_OK) {
            free(p);
            return st;
        }
    }
    rf_prom_registry_set_collect(r, collect_ps, p);
    *out = p;
    return RF_OK;
}

void rf_prom_ps_detach(rf_prom_ps *p)
{
    if (!p)
        return;
    rf_prom_registry_set_collect(p->r, NULL, NULL); /* waits for a scrape */
    free(p);
}
