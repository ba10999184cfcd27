/* tools/trainer/dist_ps.c: the ps job, TensorFlow's server.join(): start
 * the ps server on this task's address with an empty arena, serve until the
 * chief says SHUTDOWN, exit 0 (1 if serving failed). Knows nothing about
 * the model: the model flags are accepted and ignored, so the same command
 * line works for every task. With --trace, the apply thread's optimizer
 * updates (apply=ps) of the first --trace_steps steps of each worker are
 * written as a Chrome trace when the ps stops. */
#include <stdio.h>

#include "dist.h"
#include "report.h"

/* The ps's apply=ps updates as spans of this task's trace. */
static void apply_span(void *ctx, const char *name, const char *args,
                       uint64_t t0_ns, uint64_t dur_ns, uint64_t update)
{
    rf_trace_add_span(ctx, name, "ps", args, t0_ns, dur_ns, 0, update);
}

int tr_run_ps(const tr_flags *f, rf_cluster *cluster)
{
    const rf_cluster_task *self = rf_cluster_self(cluster);
    rf_fabric *fabric = NULL;
    rf_ps_server *server = NULL;
    rf_trace *trace = NULL;
    char err[1024];
    if (f->trace_path) {
        char label[96];
        snprintf(label, sizeof label, "rf-trainer /job:ps/task:%d",
                 self->index);
        if (tr_check_trace_path(f->trace_path) != 0)
            return 1;
        if (rf_trace_create(&trace) != RF_OK) {
            fprintf(stderr, "rf-trainer: --trace: %s\n", rf_error_message());
            return 1;
        }
        rf_trace_set_process(trace, 0, label);
        rf_trace_set_thread_name(trace, 0, "apply thread");
    }
    rf_fabric_attr fa = {.bind_addr = self->host};
    if (rf_fabric_open(NULL, &fa, &fabric) != RF_OK) {
        fprintf(stderr,
                "rf-trainer: ps task %d: opening the fabric on %s: %s\n",
                self->index, self->host, rf_error_message());
        return 1;
    }
    rf_ps_server_options o = {.task_index = self->index,
                              .on_apply = trace ? apply_span : NULL,
                              .on_apply_ctx = trace,
                              .trace_updates =
                                  (uint64_t)f->trace_steps *
                                  (uint64_t)rf_cluster_num_workers(cluster)};
    if (rf_ps_server_start(fabric, self->host, self->port, &o, &server) !=
        RF_OK) {
        fprintf(stderr, "rf-trainer: ps task %d: %s\n", self->index,
                rf_error_message());
        rf_fabric_close(fabric);
        rf_trace_destroy(trace);
        return 1;
    }
    const char *why = "";
    int node = rf_ps_server_numa_node(server, &why);
    printf("ps task %d: serving on %s (fabric %s, NUMA node %d: %s)\n",
           self->index, self->address, rf_fabric_provider(fabric), node, why);
    fflush(stdout);
    rf_status st = rf_ps_server_join(server);
    int rc = 0;
    if (st == RF_OK) {
        printf("ps task %d: shut down by the chief\n", self->index);
    } else {
        fprintf(stderr, "rf-trainer: ps task %d: %s\n", self->index,
                rf_error_message());
        rc = 1;
    }
    fflush(stdout);
    rf_ps_server_stop(server);
    rf_fabric_close(fabric);
    if (trace && tr_write_trace(trace, f->trace_path, err, sizeof err) != 0) {
        fprintf(stderr, "rf-trainer: --trace: %s\n", err);
        rc = 1;
    }
    rf_trace_destroy(trace);
    return rc;
}
