/* session/session_finish.c: the end of a worker's job (rdmaflow/
 * session.h): rf_session_finish, and its steps on their own for a caller
 * that recovers between them (the monitored session's close): this
 * worker's SSP clock marked finished, a worker's "done" announced, the
 * chief's wait for the others (the workers-done bitmap on ps task 0: the
 * cluster's training workers, or in an elastic job the members ps task 0
 * knows now), and every variable pulled back into the graph. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "session/session_internal.h"

/* How long the chief waits for the other workers to finish by default. */
#define DEFAULT_FINISH_TIMEOUT_MS (30 * 60 * 1000)
#define FINISH_POLL_MS            100

/* The tasks of the ids not in bits, comma-separated; how many. */
static size_t name_missing(const rf_session *s, const uint32_t *ids, size_t n,
                           const uint64_t *bits, char *list, size_t len)
{
    size_t k = 0;
    if (len)
        list[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (rf_ps_worker_is_done(bits, ids[i]))
            continue;
        char name[64];
        sess_task_of_id(s, ids[i], name, sizeof name);
        size_t used = strlen(list);
        if (used + 1 < len)
            snprintf(list + used, len - used, "%s%s", k ? ", " : "", name);
        k++;
    }
    return k;
}

/* The other workers to wait for: the cluster's training workers, or in an
 * elastic job the members ps task 0 has now (joined, neither left nor
 * gone past its bound). ids holds RF_PS_MAX_DONE_WORKERS. */
static rf_status others(rf_session *s, uint32_t *ids, size_t *n)
{
    *n = 0;
    if (!s->task.elastic) {
        for (int id = 0; id < s->task.num_workers; id++)
            if (id != s->task.self->worker_id)
                ids[(*n)++] = (uint32_t)id;
        return RF_OK;
    }
    uint64_t members[RF_PS_DONE_WORDS];
    rf_status st = rf_ps_members_read(s->client, members);
    if (st != RF_OK)
        return st;
    for (uint32_t id = 0; id < RF_PS_MAX_DONE_WORKERS; id++)
        if (rf_ps_worker_is_done(members, id) &&
            (int)id != s->task.self->worker_id)
            ids[(*n)++] = id;
    return RF_OK;
}

rf_status rf_session_wait_workers(rf_session *s, int timeout_ms, char *missing,
                                  size_t len, uint64_t *bits_out)
{
    if (s->offline)
        return sess_refuse_offline("rf_session_wait_workers");
    char list[1024] = "";
    uint32_t *ids = calloc(RF_PS_MAX_DONE_WORKERS, sizeof *ids);
    if (!ids)
        return rf_error_set(RF_ERR_NO_MEMORY, "session: out of memory");
    size_t n = 0;
    uint64_t bits[RF_PS_DONE_WORDS];
    int64_t deadline = rf_deadline_ms(timeout_ms > 0 ? timeout_ms : 0);
    rf_status st;
    for (;;) {
        st = others(s, ids, &n);
        if (st == RF_OK)
            st = rf_ps_workers_done_read(s->client, bits);
        if (st != RF_OK) {
            st = rf_error_set(st, "waiting for the other workers: %s",
                              rf_error_message());
            break;
        }
        size_t k = name_missing(s, ids, n, bits, list, sizeof list);
        if (k == 0)
            break;
        /* sync replicas' backup workers (the strategy knows them) */
        if (sess_push_may_skip_missing(s, ids, n, bits, k)) {
            RF_LOG_WARN("session: not waiting for %s (backup worker%s of "
                        "sync replicas)",
                        list, k == 1 ? "" : "s");
            list[0] = '\0';
            break;
        }
        if (rf_deadline_passed(deadline)) {
            st = rf_error_set(RF_ERR_TIMEOUT,
                              "%zu of %zu other worker%s did not finish "
                              "within %g s: %s",
                              k, n, n == 1 ? "" : "s",
                              (timeout_ms > 0 ? timeout_ms : 0) / 1000.0, list);
            break;
        }
        int64_t left = rf_deadline_left_ms(deadline);
        rf_sleep_ms(left < FINISH_POLL_MS ? left : FINISH_POLL_MS);
    }
    if (missing && len)
        snprintf(missing, len, "%s", st == RF_ERR_TIMEOUT ? list : "");
    if (bits_out && (st == RF_OK || st == RF_ERR_TIMEOUT))
        memcpy(bits_out, bits, sizeof bits);
    free(ids);
    return st;
}

rf_status rf_session_finish_clock(rf_session *s)
{
    if (s->offline)
        return sess_refuse_offline("rf_session_finish_clock");
    return sess_ssp_finish(s);
}

rf_status rf_session_announce_done(rf_session *s)
{
    if (s->offline)
        return sess_refuse_offline("rf_session_announce_done");
    rf_status st = rf_ps_worker_done(s->client);
    if (st != RF_OK)
        return rf_error_set(st, "announcing that this worker finished: %s",
                            rf_error_message());
    return RF_OK;
}

rf_status rf_session_leave(rf_session *s)
{
    if (s->offline)
        return sess_refuse_offline("rf_session_leave");
    if (s->task.chief)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_session_leave: the chief cannot leave the job "
                            "(it ends it)");
    return rf_ps_leave(s->client);
}

rf_status rf_session_shard_next(rf_session *s, const rf_ps_shard_geometry *geom,
                                const rf_ps_shard_grant *done,
                                rf_ps_shard_grant *next, bool *stale)
{
    if (s->offline)
        return sess_refuse_offline("rf_session_shard_next");
    return rf_ps_shard_next(s->client, geom, done, next, stale);
}

rf_status rf_session_pull_all(rf_session *s)
{
    if (s->offline)
        return sess_refuse_offline("rf_session_pull_all");
    return sess_pull_all(s, true);
}

rf_status rf_session_workers_done_read(rf_session *s,
                                       uint64_t bits[RF_PS_DONE_WORDS])
{
    if (s->offline)
        return sess_refuse_offline("rf_session_workers_done_read");
    return rf_ps_workers_done_read(s->client, bits);
}

rf_status rf_session_workers_done_merge(rf_session *s,
                                        const uint64_t bits[RF_PS_DONE_WORDS])
{
    if (s->offline)
        return sess_refuse_offline("rf_session_workers_done_merge");
    return rf_ps_workers_done_merge(s->client, bits);
}

rf_status rf_session_finish(rf_session *s, int timeout_ms)
{
    if (s->offline)
        return sess_refuse_offline("rf_session_finish");
    /* first, so no one waits for this worker's clock any more */
    rf_status st = sess_ssp_finish(s);
    if (st != RF_OK)
        return st;
    if (!s->task.chief)
        return rf_session_announce_done(s);
    if (s->task.elastic || s->task.num_workers > 1) {
        st = rf_session_wait_workers(
            s, timeout_ms > 0 ? timeout_ms : DEFAULT_FINISH_TIMEOUT_MS, NULL, 0,
            NULL);
        if (st != RF_OK)
            return st;
    }
    return sess_pull_all(s, true);
}
