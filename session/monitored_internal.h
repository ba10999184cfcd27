/* session/monitored_internal.h: the monitored session's insides (the
 * rf_monitored_session and rf_hook structs), shared by monitored.c and the
 * built-in hooks (hook.c, hook_log.c, hook_checkpoint.c, hook_summary.c)
 * only. */
#ifndef RF_SESSION_MONITORED_INTERNAL_H
#define RF_SESSION_MONITORED_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rdmaflow/monitored_session.h"
#include "rdmaflow/summary.h"

struct rf_hook {
    const rf_hook_ops *ops;
    void *ctx;
};

/* Where the monitored session is in its life:
 *   running --request_stop--> stopping --close--> closed
 *   running --a recovery that failed (ms->s NULL)--> lost
 *   running --a sync step no quorum can complete--> lost, sync_ended
 *     (ms->s kept for rf_session_sync_stuck; close refused even after a
 *     request_stop: the chief has shut the ps tasks down)
 *   lost --request_stop--> stopping (still without a session)
 *   running --close--> closed
 * A recovery inside close keeps it closed (a failed one leaves ms->s
 * NULL); a stop requested while stopping or closed changes nothing. */
typedef enum ms_state {
    MS_RUNNING,  /* runs are accepted */
    MS_STOPPING, /* a stop was requested: should_stop, runs refused */
    MS_LOST,     /* the session was lost and could not be recovered */
    MS_CLOSED,   /* close was called */
} ms_state;

struct rf_monitored_session {
    rf_server *server;
    rf_graph *g;
    rf_executor *ex;
    rf_monitored_session_options opt; /* hooks arrays not kept */
    rf_session *s;                    /* NULL between a loss and recovery */
    bool chief;
    ms_state state;
    bool sync_ended; /* ms_end_stuck_sync ended the job */
    int64_t global_step;
    int recoveries;
    FILE *log;
    char me[64]; /* "/job:worker/task:1" */
    /* The chief: the workers-done bits it has seen (read about once a
     * second while training, and while waiting at the end), written back
     * after a recovery, when ps task 0 may have restarted empty. */
    uint64_t done_seen[RF_PS_DONE_WORDS];
    int64_t done_read_at; /* rf_now_ms of the last read */

    /* The chief's event file in summary_dir (NULL: none), written by
     * the built-in StepCounter and SummarySaver; closed by destroy. */
    rf_summary_writer *summary;

    rf_hook **hooks; /* the caller's, chief-only (chief), built-ins */
    size_t nhooks;

    /* one run's fetches: the caller's, then the hooks' (deduplicated) */
    rf_node **fetch;
    rf_tensor *out;
    size_t cap;
    size_t *hook_first; /* per hook: its first entry in hook_idx */
    size_t *hook_n;
    size_t *hook_idx;     /* index into fetch/out of each hook node */
    rf_tensor *hook_vals; /* gathered per hook for after_run */
};

/* A built-in hook over ctx, a calloc'ed block freed with free (NULL:
 * RF_ERR_NO_MEMORY); ctx is freed on failure. */
rf_status ms_hook_of(const rf_hook_ops *ops, void *ctx, rf_hook **out);

/* The outcome st of a summary write at step by a hook whose *failing says
 * whether its last one failed: the first failure of a run of them is
 * logged with its reason, the first success after them too. */
void ms_summary_outcome(rf_monitored_session *ms, bool *failing, rf_status st,
                        int64_t step);

/* A summary writer (session/summary_writer.c) whose event file in logdir
 * is made by its first write, so a session that never trains (a refused
 * checkpoint directory, a readiness wait that times out) leaves none. */
rf_status ms_summary_writer_deferred(const char *logdir,
                                     rf_summary_writer **out);

/* The session's CheckpointSaverHook (hook_checkpoint.c), if it has one
 * (*has_saver), saves now, outside its schedule, into path (rf_session_save's
 * status and message); RF_OK without one. */
rf_status ms_save_now(rf_monitored_session *ms, bool *has_saver, char *path,
                      size_t len);

/* A sync replicas job that no step can complete (rf_session_sync_stuck)
 * after a run failed with st and err: the chief saves and shuts the ps
 * tasks down (monitored_sync_end.c); the session becomes lost. Returns st
 * with the message. */
rf_status ms_end_stuck_sync(rf_monitored_session *ms, rf_status st,
                            const char *err);

/* After an operation of the session failed with st (rf_error_message
 * saying why; recoverable: RF_ERR_DISCONNECTED, _UNAVAILABLE, _ABORTED,
 * _TIMEOUT): RF_OK once the session was recovered (monitored.c), to try the
 * operation again, unless *ended: a hook's after_create_session requested a
 * stop (the job ended meanwhile). Else the status to return: st when it is not
 * recoverable, ms_end_stuck_sync's, or the failed recovery's. */
rf_status ms_retry_after_loss(rf_monitored_session *ms, rf_status st,
                              bool *ended);

/* One line to the session's log, prefixed with the task's name. */
void ms_note(rf_monitored_session *ms, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
