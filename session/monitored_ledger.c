/* session/monitored_ledger.c: the shard ledger of ps task 0 through a
 * monitored session (rdmaflow/monitored_session.h): a request lost with
 * its ps recovers the session as a run does and asks again, so an elastic
 * worker's report between two steps survives a ps restart like the step
 * itself. */
#include "rdmaflow/monitored_session.h"
#include "rdmaflow/session.h"
#include "session/monitored_internal.h"

rf_status rf_monitored_session_shard_next(rf_monitored_session *ms,
                                          const rf_ps_shard_geometry *geom,
                                          const rf_ps_shard_grant *done,
                                          rf_ps_shard_grant *next, bool *stale,
                                          bool *job_ended)
{
    if (job_ended)
        *job_ended = false;
    if (!ms || !geom || !next)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_monitored_session_shard_next: NULL");
    /* after a stop was requested the last batch is still reported */
    if ((ms->state != MS_RUNNING && ms->state != MS_STOPPING) || !ms->s)
        return rf_error_set(
            RF_ERR_INVALID_ARG, "rf_monitored_session_shard_next: %s",
            ms->state == MS_CLOSED ? "the session was closed"
                                   : "the session was lost and could not be "
                                     "recovered");
    for (;;) {
        rf_status st = rf_session_shard_next(ms->s, geom, done, next, stale);
        if (st == RF_OK)
            return st;
        bool ended = false;
        if ((st = ms_retry_after_loss(ms, st, &ended)) != RF_OK)
            return st;
        if (ended) {
            if (job_ended)
                *job_ended = true;
            return RF_OK;
        }
    }
}
