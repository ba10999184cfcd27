/* session/push_sync_internal.h: the sync-replicas push strategy's state
 * (push_sync.c) and the checks its wait makes every SYNC_WATCH_MS
 * (push_sync_watch.c: the chief epoch, the workers connected). */
#ifndef RF_SESSION_PUSH_SYNC_INTERNAL_H
#define RF_SESSION_PUSH_SYNC_INTERNAL_H

#include "session/session_internal.h"

/* How often a waiting worker reads ps task 0's chief epoch and members. */
#define SYNC_WATCH_MS 250

typedef struct sync_state {
    /* the shards' replicas_to_aggregate and total_num_replicas, and how
     * many of the other workers the chief's finish may go without */
    uint32_t n, m;
    int64_t optional;
    /* when the finish's wait for only those (backup) workers ends; 0: not
     * yet */
    int64_t optional_deadline;
    rf_ps_var **shards; /* every variable's shard, in s->v order */
    int64_t *steps;     /* their step words, as last read */
    uint64_t *stale;
    int64_t local_step;
    /* since when fewer than n workers are members of ps task 0 (0: not);
     * stuck: that lasted sync_max_wait_ms, no step can complete */
    int64_t lost_since;
    bool stuck;
    /* the chief epoch (ps task 0) this session started under */
    uint64_t epoch;
    bool stepping;      /* a run began and has not advanced */
    uint64_t published; /* CMP_AND_SWPs this worker won */
} sync_state;

/* The chief epoch changed since the session started: RF_ERR_ABORTED (the
 * step runs again). */
rf_status sync_check_epoch(rf_session *s, sync_state *st);
/* Fewer than n workers connected for sync_max_wait_ms: RF_ERR_UNAVAILABLE
 * and st->stuck; meanwhile st->lost_since, and *deadline (op_timeout_ms)
 * renewed once enough are back. */
rf_status sync_check_quorum(rf_session *s, sync_state *st, int64_t *deadline,
                            int timeout);
/* Logs that enough workers are back, clears st->lost_since. */
void sync_quorum_back(sync_state *st);
/* The test hook RF_TEST_SYNC_STOP_AFTER_PUSH (a worker stops itself). */
void sync_test_stop_after_push(rf_session *s, const sync_state *st);

#endif
