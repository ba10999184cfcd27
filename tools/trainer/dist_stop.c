/* tools/trainer/dist_stop.c: a worker's end before the job's end, shared
 * by the softmax/mlp and wide_deep workers: the chief's checkpoint saved
 * now (SIGTERM), and the exit status of a sync job with fewer workers
 * connected than a step needs (rf_session_sync_stuck: the monitored
 * session's chief saved and shut the ps tasks down; every worker exits
 * 138). */
#include <stdio.h>

#include "dist.h"
#include "exit_status.h"
#include "rdmaflow/escape.h"

void tr_save_now(rf_monitored_session *ms, const tr_flags *f, bool chief,
                 const char *after, char *saved, size_t len)
{
    saved[0] = '\0';
    if (!chief || !f->checkpoint_dir)
        return;
    char path[4096];
    if (rf_session_save(rf_monitored_session_session(ms), f->checkpoint_dir,
                        (int)f->max_to_keep, path, sizeof path) == RF_OK) {
        printf("chief: saved checkpoint %s after %s\n", rf_esc(path), after);
        snprintf(saved, len, "; saved %s", rf_esc(path));
    } else {
        snprintf(saved, len, "; no checkpoint saved: %s", rf_error_message());
    }
    fflush(stdout);
}

int tr_training_failed(rf_monitored_session *ms, int rc, const char *err)
{
    if (rf_session_sync_stuck(rf_monitored_session_session(ms)))
        rc = TR_EXIT_RETRYABLE;
    return tr_exit_fail(rc, "training", err);
}
