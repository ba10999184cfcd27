/* tools/trainer/elastic.c: an elastic worker's way out (--elastic, or a
 * TF_CONFIG sparseCluster; async training). SIGTERM (Kubernetes' scale
 * down) is caught by preempt.c as for every task: the training stops at
 * the end of a step. A non-elastic task then exits 138 (retry me); an
 * elastic worker that is not the chief instead leaves the job for good:
 * LEAVE to ps task 0 (so the chief does not wait for it at the end), its
 * final line, exit 0. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "dist.h"
#include "exit_status.h"
#include "metrics.h"

int tr_elastic_leave(rf_monitored_session *ms, rf_metrics_writer *metrics,
                     const rf_cluster_task *self, int64_t steps)
{
    char who[64], err[1024];
    snprintf(who, sizeof who, "worker %d", self->index);
    rf_status st = rf_session_leave(rf_monitored_session_session(ms));
    if (st != RF_OK)
        return tr_exit_fail_status(st, who, rf_error_message());
    if (tr_metrics_finish(metrics, NAN, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "rf-trainer: --metrics_out: %s\n", err);
        return TR_EXIT_FAILED;
    }
    printf("worker %d: left the job after %" PRId64 " steps (SIGTERM; "
           "elastic)\n",
           self->index, steps);
    return 0;
}
