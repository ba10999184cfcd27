/* tools/trainer/dist_ps.c: the ps job, TensorFlow's server.join(): start
 * this task's server (rf_server_start: the ps server on its address with
 * an empty arena), serve until the chief says SHUTDOWN, exit 0 (else the
 * status of the failure, exit_status.h: a host that never resolved is
 * retryable, a missing secret a configuration error; no chief connection
 * for --max_wait_secs after one came, or none within --ps_idle_exit_secs
 * of the start, 138). Knows nothing about the
 * model: the model flags are accepted and ignored, so the same command line
 * works for every task. With --trace, the apply thread's optimizer updates
 * (apply=ps) of the first --trace_steps steps of each worker are written as a
 * Chrome trace when the ps stops. With --metrics_out, its file gets the summary
 * line only (a ps trains no steps). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "dist.h"
#include "metrics.h"
#include "prom.h"
#include "report.h"

static int secs_ms(int64_t secs)
{
    return secs > INT_MAX / 1000 ? INT_MAX : (int)(secs * 1000);
}

int tr_run_ps(const tr_flags *f, rf_cluster *cluster)
{
    const rf_cluster_task *self = rf_cluster_self(cluster);
    rf_server *server = NULL;
    rf_trace *trace = NULL;
    rf_metrics_writer *metrics = NULL;
    char err[1024], task[64], who[64];
    tr_metrics_task(self, task, sizeof task);
    if (tr_metrics_open(f, task, 0, &metrics, err, sizeof err) != 0)
        return tr_exit_fail(TR_EXIT_FAILED, "--metrics_out", err);
    if (f->trace_path) {
        char label[96];
        snprintf(label, sizeof label, "rf-trainer /job:ps/task:%d",
                 self->index);
        if (rf_trace_create(&trace) != RF_OK) {
            int rc =
                tr_exit_fail(TR_EXIT_FAILED, "--trace", rf_error_message());
            rf_metrics_writer_close(metrics);
            return rc;
        }
        rf_trace_set_process(trace, 0, label);
        rf_trace_set_thread_name(trace, 0, "apply thread");
    }
    rf_server_options o = {
        .trace = trace,
        .cluster_secret_file = f->cluster_secret_file,
        .require_secret = f->require_secret,
        .bind_addr = f->bind_addr,
        .resolve_wait_secs = (int)f->max_wait_secs,
        .trace_updates = (uint64_t)f->trace_steps *
                         (uint64_t)(rf_cluster_num_workers(cluster) > 0
                                        ? rf_cluster_num_workers(cluster)
                                        : 1),
        .elastic = f->elastic,
        .member_timeout_ms = (int)f->member_timeout_secs * 1000,
        /* a job ends: a ps outlives its chief by --max_wait_secs */
        .chief_gone_exit_ms = secs_ms(f->max_wait_secs),
        .idle_exit_ms = secs_ms(f->ps_idle_exit_secs)};
    rf_status sst = rf_server_start(cluster, &o, &server);
    if (sst != RF_OK) {
        snprintf(who, sizeof who, "ps task %d", self->index);
        int rc = tr_exit_fail_status(sst, who, rf_error_message());
        rf_trace_destroy(trace);
        rf_metrics_writer_close(metrics);
        return rc;
    }
    rf_prom_ps *prom = NULL; /* --metrics_port: read at each scrape */
    if (tr_prom_registry() &&
        rf_prom_ps_attach(tr_prom_registry(), server, &prom) != RF_OK) {
        fprintf(stderr, "rf-trainer: --metrics_port: %s\n", rf_error_message());
        rf_server_stop(server);
        rf_trace_destroy(trace);
        rf_metrics_writer_close(metrics);
        return 1;
    }
    const char *why = "";
    int node = rf_server_numa_node(server, &why);
    const char *bind = f->bind_addr ? f->bind_addr : getenv("RF_BIND_ADDR");
    char listening[RF_HOST_MAX + 32] = "";
    if (bind && *bind)
        snprintf(listening, sizeof listening, ", listening on %s", bind);
    printf("ps task %d: serving on %s%s (fabric %s, NUMA node %d: %s)\n",
           self->index, self->address, listening,
           rf_fabric_provider(rf_server_fabric(server)), node, why);
    fflush(stdout);
    tr_prom_ready();
    rf_status st = rf_server_join(server);
    rf_ps_server_counters k;
    rf_server_ps_counters(server, &k);
    uint64_t refused = k.refused_auth + k.refused_busy + k.refused_full +
                       k.refused_duplicate,
             dropped = k.dropped_idle + k.dropped_protocol;
    if (refused || dropped)
        printf("ps task %d: refused %llu connections (authentication or "
               "role %llu, busy %llu, full %llu, duplicate id %llu) and "
               "dropped %llu (not a client in time %llu, protocol %llu)\n",
               self->index, (unsigned long long)refused,
               (unsigned long long)k.refused_auth,
               (unsigned long long)k.refused_busy,
               (unsigned long long)k.refused_full,
               (unsigned long long)k.refused_duplicate,
               (unsigned long long)dropped, (unsigned long long)k.dropped_idle,
               (unsigned long long)k.dropped_protocol);
    int rc = 0;
    snprintf(who, sizeof who, "ps task %d", self->index);
    if (st == RF_OK) {
        printf("ps task %d: shut down by the chief\n", self->index);
        tr_exit_reason("ps task %d shut down by the chief", self->index);
    } else {
        rc = tr_exit_fail_status(st, who, rf_error_message());
    }
    fflush(stdout);
    rf_prom_ps_detach(prom); /* before the counters it reads go */
    rf_server_stop(server);
    if (trace && tr_write_trace(trace, f->trace_path, err, sizeof err) != 0) {
        rc = tr_exit_fail(TR_EXIT_FAILED, "--trace", err);
    }
    rf_trace_destroy(trace);
    /* a ps trains nothing: its file has the summary line only */
    if (tr_metrics_finish(metrics, NAN, NULL, err, sizeof err) != 0)
        rc = tr_exit_fail(TR_EXIT_FAILED, "--metrics_out", err);
    rf_metrics_writer_close(metrics);
    return rc;
}
