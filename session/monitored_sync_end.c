/* session/monitored_sync_end.c: the end of a sync replicas job that can no
 * longer complete a step (rf_session_sync_stuck: fewer workers connected
 * than replicas_to_aggregate, not back within max_wait_secs). A recovery
 * cannot help, so the monitored session does not recover: the chief saves
 * a checkpoint (when it has a CheckpointSaverHook: the built-in one of
 * checkpoint_dir and a save interval, or one the caller added) and shuts
 * the ps tasks down, and the run fails with the reason and what was done;
 * another worker's run fails with the reason. Either way the session is
 * lost: runs and close are refused. The status stays the step's (a
 * recoverable one), so a program maps it to the retryable exit status 138
 * (rf_status_exit_code). */
#include <stdbool.h>
#include <stdio.h>

#include "rdmaflow/escape.h"
#include "rdmaflow/session.h"
#include "rdmaflow/status.h"
#include "session/monitored_internal.h"

rf_status ms_end_stuck_sync(rf_monitored_session *ms, rf_status st,
                            const char *err)
{
    ms_note(ms, "not recovering: %s", err);
    ms->state = MS_LOST;
    ms->sync_ended = true;
    if (!ms->chief)
        return rf_error_set(st, "%s", err);
    char saved[4400] = "", path[4096];
    bool has_saver;
    if (ms_save_now(ms, &has_saver, path, sizeof path) != RF_OK) {
        snprintf(saved, sizeof saved, "; no checkpoint saved: %s",
                 rf_error_message());
        ms_note(ms, "%s", saved + 2);
    } else if (has_saver) {
        ms_note(ms, "saved checkpoint %s after the sync step stopped",
                rf_esc(path));
        snprintf(saved, sizeof saved, "; saved %s", rf_esc(path));
    }
    char down[1200];
    if (rf_session_shutdown_cluster(ms->s) == RF_OK) {
        ms_note(ms, "shut the ps tasks down after the sync step stopped");
        snprintf(down, sizeof down, "; the ps tasks shut down");
    } else {
        snprintf(down, sizeof down, "; the ps tasks not shut down: %s",
                 rf_error_message());
    }
    return rf_error_set(st, "%s%s%s", err, saved, down);
}
