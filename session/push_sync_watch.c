/* session/push_sync_watch.c: what a sync-replicas worker checks while it
 * waits for a step (push_sync.c's advance, every SYNC_WATCH_MS after the
 * first): the chief epoch on ps task 0 (the chief set the shards' steps
 * again: the step runs again at once instead of waiting out
 * op_timeout_ms), and ps task 0's members bitmap (fewer training workers
 * connected than replicas_to_aggregate for sync_max_wait_ms: no step can
 * complete, the run fails for good); and the fault tests' hook that stops
 * a worker after its first push of a step. docs/DESIGN.md, "Sync
 * replicas". */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "rdmaflow/env.h"
#include "session/push_sync_internal.h"

/* Test hook (tests/integration/fault's sync_chief_epoch and
 * sync_backup_gone): when RF_TEST_SYNC_STOP_AFTER_PUSH names a marker
 * file whose first line is "STEP" (the chief) or "STEP ID" (the training
 * worker of that worker_id), that worker removes the marker at its first
 * local step >= STEP (a backup worker may skip steps) and, once the first
 * gradient of that step was acknowledged, stops itself (SIGSTOP) with the
 * rest unpushed, so a test can kill it having pushed to some shards only,
 * or before it could finish. */
void sync_test_stop_after_push(rf_session *s, const sync_state *st)
{
    const char *marker = rf_setting_str("RF_TEST_SYNC_STOP_AFTER_PUSH");
    if (!marker || !*marker)
        return;
    FILE *f = fopen(marker, "r");
    if (!f)
        return;
    long long want = -1;
    int id = -1;
    int got = fscanf(f, "%lld %d", &want, &id);
    fclose(f);
    bool me =
        got == 2 ? id == s->task.self->worker_id : got == 1 && s->task.chief;
    if (me && st->local_step >= want && unlink(marker) == 0 &&
        rf_ps_push_wait(s->client) == RF_OK)
        raise(SIGSTOP);
}

/* How long a step waits with fewer than n workers connected. */
static int quorum_wait_ms(const rf_session *s)
{
    if (s->opt.sync_max_wait_ms > 0)
        return s->opt.sync_max_wait_ms;
    return s->opt.op_timeout_ms > 0 ? s->opt.op_timeout_ms : 30000;
}

/* The training workers that are members of ps task 0 now (its members
 * bitmap: a worker's bit clears once its connection has been closed for
 * the ps's member_timeout_ms without a new one); this worker counts.
 * Their number in *live, the others' names in missing. */
static rf_status members(rf_session *s, uint32_t *live, char *missing,
                         size_t len)
{
    uint64_t bits[RF_PS_DONE_WORDS];
    rf_status rst = rf_ps_members_read(s->client, bits);
    if (rst != RF_OK)
        return rf_error_set(rst, "sync_replicas: reading the members: %s",
                            rf_error_message());
    int self = s->task.self->worker_id;
    *live = 0;
    missing[0] = '\0';
    for (int id = 0; id < s->task.num_workers; id++) {
        if (id == self || rf_ps_worker_is_done(bits, (uint32_t)id)) {
            (*live)++;
            continue;
        }
        char name[64];
        sess_task_of_id(s, (uint32_t)id, name, sizeof name);
        size_t used = strlen(missing);
        if (used + 1 < len)
            snprintf(missing + used, len - used, "%s%s", used ? ", " : "",
                     name);
    }
    return RF_OK;
}

/* Enough workers are connected again (or the step completed). */
void sync_quorum_back(sync_state *st)
{
    RF_LOG_WARN("sync_replicas: workers connected again after %.1f s: step "
                "%lld goes on",
                (double)(rf_now_ms() - st->lost_since) / 1000.0,
                (long long)st->local_step);
    st->lost_since = 0;
}

/* While a step waits: fewer than n workers connected for
 * sync_max_wait_ms means no step can complete (RF_ERR_UNAVAILABLE,
 * st->stuck: not recovered from); meanwhile op_timeout_ms does not count,
 * and once enough are back it counts again from now (*deadline). */
rf_status sync_check_quorum(rf_session *s, sync_state *st, int64_t *deadline,
                            int timeout)
{
    uint32_t live = 0;
    char missing[1024];
    rf_status rst = members(s, &live, missing, sizeof missing);
    if (rst != RF_OK)
        return rst;
    int64_t now = rf_now_ms();
    if (live >= st->n) {
        if (st->lost_since) {
            sync_quorum_back(st);
            *deadline = rf_deadline_ms(timeout);
        }
        return RF_OK;
    }
    int wait = quorum_wait_ms(s);
    if (!st->lost_since) {
        st->lost_since = now;
        RF_LOG_WARN("sync_replicas: only %u of %d workers connected "
                    "(missing: %s); step %lld needs replicas_to_aggregate=%u: "
                    "waiting at most %.0f s for them",
                    live, s->task.num_workers, missing,
                    (long long)st->local_step, st->n, wait / 1000.0);
    }
    if (now - st->lost_since < wait)
        return RF_OK;
    st->stuck = true;
    return rf_error_set(RF_ERR_UNAVAILABLE,
                        "sync_replicas: no step can complete: %u of %d "
                        "workers connected, step %lld needs "
                        "replicas_to_aggregate=%u; missing %s (not back "
                        "within %.0f s)",
                        live, s->task.num_workers, (long long)st->local_step,
                        st->n, missing, wait / 1000.0);
}

bool rf_session_sync_stuck(const rf_session *s)
{
    const sync_state *st =
        s && s->push == &sess_push_sync ? s->push_state : NULL;
    return st && st->stuck;
}

/* While a step waits: the chief set the shards' steps again since this
 * session started (it restarted, restored a checkpoint): the gradient
 * this worker pushed may be gone, so the run fails at once (ABORTED: the
 * monitored session recovers and runs the step again) rather than waiting
 * out op_timeout_ms. A restore to a step below the one waited for shows
 * in global_step too; one to this very step only here. */
rf_status sync_check_epoch(rf_session *s, sync_state *st)
{
    uint64_t now = 0;
    rf_status rst = rf_ps_sync_epoch_read(s->client, &now);
    if (rst != RF_OK)
        return rf_error_set(rst, "sync_replicas: %s", rf_error_message());
    if (now == st->epoch)
        return RF_OK;
    uint64_t was = st->epoch;
    st->epoch = now;
    return rf_error_set(RF_ERR_ABORTED,
                        "sync_replicas: the chief set the shards' steps again "
                        "(chief epoch %llu, was %llu: it restarted or restored "
                        "a checkpoint) while this worker waited for step "
                        "%lld: the step runs again",
                        (unsigned long long)now, (unsigned long long)was,
                        (long long)st->local_step);
}
