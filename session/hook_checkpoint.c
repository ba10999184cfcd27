/* session/hook_checkpoint.c: CheckpointSaverHook
 * (rdmaflow/monitored_session.h), the chief's: saves a checkpoint after the
 * session is created, every N global steps or every N seconds, and at the end,
 * through rf_session_save. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/checkpoint.h"
#include "rdmaflow/clock.h"
#include "session/monitored_internal.h"

typedef struct saver {
    char dir[4096];
    double secs;
    int64_t steps;
    int max_to_keep;
    FILE *out;
    int64_t last_step; /* -1: none saved yet */
    double t_last;
} saver;

/* Saves now; seen is the global_step the caller last saw (the run's, or
 * the session's at creation and at the end): the checkpoint's own step,
 * read first by rf_session_save, is >= it when other workers go on. A
 * save that found the session lost is left to the next run, which
 * recovers first; the final one (no run follows) fails with that status,
 * so the chief does not end the job without its last checkpoint. */
static rf_status save(saver *h, rf_monitored_session *ms, int64_t seen,
                      bool final)
{
    char path[4096 + 64];
    double t0 = rf_now_s();
    rf_session *s = rf_monitored_session_session(ms);
    rf_status st =
        rf_session_save(s, h->dir, h->max_to_keep, path, sizeof path);
    if (!final && (st == RF_ERR_DISCONNECTED || st == RF_ERR_UNAVAILABLE ||
                   st == RF_ERR_ABORTED || st == RF_ERR_TIMEOUT)) {
        /* the session is lost: the next run recovers, then this saves */
        ms_note(ms, "checkpoint not saved: %s", rf_error_message());
        return RF_OK;
    }
    if (st != RF_OK)
        return rf_error_set(st, "saving a checkpoint into %s: %s", h->dir,
                            rf_error_message());
    rf_session_checkpoint_info info;
    rf_session_checkpoint_info_get(s, &info);
    int64_t step = info.saved_step; /* global_step as the save read it */
    h->last_step = step;
    h->t_last = rf_now_s();
    fprintf(h->out,
            "saved checkpoint %s (global_step %lld, %.2f s; this task was "
            "at %lld)\n",
            path, (long long)step, h->t_last - t0, (long long)seen);
    fflush(h->out);
    return RF_OK;
}

/* A session that has just restored a checkpoint is not saved again at
 * creation: that checkpoint exists (other workers may have moved
 * global_step on by a step or two since, which is no reason for another).
 * The next save is counted from it. */
static rf_status saver_after_create(void *ctx, rf_monitored_session *ms,
                                    int64_t global_step)
{
    saver *h = ctx;
    rf_session_checkpoint_info info;
    rf_session_checkpoint_info_get(rf_monitored_session_session(ms), &info);
    int64_t restored = info.restored_step;
    if (restored >= 0 || h->last_step == global_step) {
        h->last_step = restored >= 0 ? restored : global_step;
        h->t_last = rf_now_s();
        return RF_OK;
    }
    return save(h, ms, global_step, false);
}

static bool due(const saver *h, int64_t step)
{
    if (step <= h->last_step)
        return false;
    if (h->steps > 0)
        return step >= h->last_step + h->steps;
    return h->secs > 0 && rf_now_s() - h->t_last >= h->secs;
}

static rf_status saver_after_run(void *ctx, rf_monitored_session *ms,
                                 const rf_run_values *v)
{
    saver *h = ctx;
    if (!v->train || !due(h, v->global_step))
        return RF_OK;
    return save(h, ms, v->global_step, false);
}

static rf_status saver_end(void *ctx, rf_monitored_session *ms)
{
    saver *h = ctx;
    if (rf_monitored_session_global_step(ms) == h->last_step)
        return RF_OK;
    return save(h, ms, rf_monitored_session_global_step(ms), true);
}

/* The directory is made when the job begins, not at the first save. */
static rf_status saver_begin(void *ctx, rf_monitored_session *ms)
{
    (void)ms;
    const saver *h = ctx;
    return rf_ckpt_dir_create(h->dir);
}

static const rf_hook_ops saver_ops = {
    .name = "CheckpointSaverHook",
    .begin = saver_begin,
    .after_create_session = saver_after_create,
    .after_run = saver_after_run,
    .end = saver_end,
    .destroy = free,
};

rf_status rf_checkpoint_saver_hook_create(const char *dir, double save_secs,
                                          int64_t save_steps, int max_to_keep,
                                          FILE *out, rf_hook **out_hook)
{
    if (!out_hook)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_checkpoint_saver_hook_create: out NULL");
    *out_hook = NULL;
    if (!dir || !*dir || strlen(dir) >= 4096)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "CheckpointSaverHook: a directory is required");
    if (save_steps < 0 || !(save_secs >= 0) || max_to_keep < 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "CheckpointSaverHook: save_steps %lld, save_secs "
                            "%g and max_to_keep %d must be >= 0",
                            (long long)save_steps, save_secs, max_to_keep);
    saver *h = calloc(1, sizeof *h);
    if (h) {
        snprintf(h->dir, sizeof h->dir, "%s", dir);
        h->secs = save_secs;
        h->steps = save_steps;
        h->max_to_keep = max_to_keep;
        h->out = out ? out : stdout;
        h->last_step = -1;
    }
    return ms_hook_of(&saver_ops, h, out_hook);
}
