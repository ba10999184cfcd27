/* tools/trainer/dist_ps.c: the ps job, TensorFlow's server.join(): start
 * the ps server on this task's address with an empty arena, serve until the
 * chief says SHUTDOWN, exit 0 (1 if serving failed). Knows nothing about
 * the model: the model flags are accepted and ignored, so the same command
 * line works for every task. */
#include <stdio.h>

#include "dist.h"

int tr_run_ps(const tr_flags *f, rf_cluster *cluster)
{
    (void)f;
    const rf_cluster_task *self = rf_cluster_self(cluster);
    rf_fabric *fabric = NULL;
    rf_ps_server *server = NULL;
    rf_fabric_attr fa = {.bind_addr = self->host};
    if (rf_fabric_open(NULL, &fa, &fabric) != RF_OK) {
        fprintf(stderr,
                "rf-trainer: ps task %d: opening the fabric on %s: %s\n",
                self->index, self->host, rf_error_message());
        return 1;
    }
    rf_ps_server_options o = {.task_index = self->index};
    if (rf_ps_server_start(fabric, self->host, self->port, &o, &server) !=
        RF_OK) {
        fprintf(stderr, "rf-trainer: ps task %d: %s\n", self->index,
                rf_error_message());
        rf_fabric_close(fabric);
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
    return rc;
}
