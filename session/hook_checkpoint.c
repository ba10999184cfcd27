/* session/hook_checkpoint.c: CheckpointSaverHook
 * (rdmaflow/monitored_session.h), the chief's: saves a checkpoint after the
 * session is created, every N global steps or every N seconds, and at the end,
 * through rf_session_save. A save that fails (a full disk, a read-only or
 * vanished directory) is logged once and training goes on: the next one is
 * tried at its time, a line says when one is saved again, and the chief
 * stops only after max_failed_saves failed in a row. The final save is
 * retried once after a pause; its failure fails the job. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/checkpoint.h"
#include "rdmaflow/clock.h"
#include "session/monitored_internal.h"

#define DEFAULT_MAX_FAILED_SAVES 3
/* Between the final save's failure and its one retry. */
#define FINAL_RETRY_MS 5000

typedef struct saver {
    char dir[4096];
    double secs;
    int64_t steps;
    int max_to_keep;
    int max_failed; /* 0: failed saves never stop the chief */
    FILE *out;
    int64_t last_step;   /* saved; -1: none saved yet */
    int64_t tried_step;  /* the last save tried, saved or not; -1: none */
    double t_last;       /* when it was tried */
    int failed;          /* saves failed in a row */
    int64_t failed_from; /* global_step of the first of them */
    char err[512];       /* the last one's reason */
} saver;

static bool session_lost(rf_status st)
{
    return st == RF_ERR_DISCONNECTED || st == RF_ERR_UNAVAILABLE ||
           st == RF_ERR_ABORTED || st == RF_ERR_TIMEOUT;
}

/* A save that failed for want of a place to write (st): logged the first
 * time of a run of failures, counted; the next is tried at its time. An
 * error once max_failed in a row have failed. */
static rf_status save_failed(saver *h, rf_monitored_session *ms, int64_t seen)
{
    snprintf(h->err, sizeof h->err, "%s", rf_error_message());
    if (h->failed++ == 0) {
        h->failed_from = seen;
        char stop[96] = "";
        if (h->max_failed > 0)
            snprintf(stop, sizeof stop,
                     "; the chief stops after max_failed_saves=%d in a row",
                     h->max_failed);
        ms_note(ms,
                "checkpoint not saved at global_step %lld: %s (training goes "
                "on, the next save is tried at its time and a line says when "
                "one is saved again%s)",
                (long long)seen, h->err, stop);
    }
    if (h->max_failed > 0 && h->failed >= h->max_failed)
        return rf_error_set(RF_ERR_IO,
                            "%d checkpoint save%s in a row into %s failed "
                            "(max_failed_saves=%d, the first at global_step "
                            "%lld); the last: %s",
                            h->failed, h->failed == 1 ? "" : "s", h->dir,
                            h->max_failed, (long long)h->failed_from, h->err);
    return RF_OK;
}

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
    if (!final && session_lost(st)) {
        /* the session is lost: the next run recovers, then this saves */
        ms_note(ms, "checkpoint not saved: %s", rf_error_message());
        return RF_OK;
    }
    h->tried_step = seen;
    h->t_last = rf_now_s();
    if (st != RF_OK && final)
        return rf_error_set(st, "saving a checkpoint into %s: %s", h->dir,
                            rf_error_message());
    if (st != RF_OK)
        return save_failed(h, ms, seen);
    rf_session_checkpoint_info info;
    rf_session_checkpoint_info_get(s, &info);
    int64_t step = info.saved_step; /* global_step as the save read it */
    h->last_step = step;
    h->tried_step = step > seen ? step : seen;
    fprintf(h->out,
            "saved checkpoint %s (global_step %lld, %.2f s; this task was "
            "at %lld)\n",
            path, (long long)step, h->t_last - t0, (long long)seen);
    fflush(h->out);
    if (h->failed)
        ms_note(ms,
                "checkpoint saved again at global_step %lld, after %d failed "
                "save%s from global_step %lld on",
                (long long)step, h->failed, h->failed == 1 ? "" : "s",
                (long long)h->failed_from);
    h->failed = 0;
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
        h->tried_step = h->last_step;
        h->t_last = rf_now_s();
        return RF_OK;
    }
    return save(h, ms, global_step, false);
}

/* Counted from the last save tried: a failed one waits its interval too. */
static bool due(const saver *h, int64_t step)
{
    if (step <= h->tried_step)
        return false;
    if (h->steps > 0)
        return step >= h->tried_step + h->steps;
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

/* The final save, retried once after FINAL_RETRY_MS: no run follows to
 * try it again, and a job must not end "saved" without it. The status
 * stays the session's when that was lost (a restart can cure it), else
 * RF_ERR_IO: a permanent failure whatever the file system said. */
static rf_status saver_end(void *ctx, rf_monitored_session *ms)
{
    saver *h = ctx;
    int64_t gs = rf_monitored_session_global_step(ms);
    if (gs == h->last_step)
        return RF_OK;
    rf_status st = save(h, ms, gs, true);
    if (st == RF_OK)
        return RF_OK;
    ms_note(ms,
            "the final checkpoint (global_step %lld) was not saved: %s; "
            "trying once more in %.0f s",
            (long long)gs, rf_error_message(), FINAL_RETRY_MS / 1000.0);
    rf_sleep_ms(FINAL_RETRY_MS);
    if ((st = save(h, ms, gs, true)) == RF_OK)
        return RF_OK;
    return rf_error_set(session_lost(st) ? st : RF_ERR_IO,
                        "the final checkpoint (global_step %lld) was not "
                        "saved, retried once: %s",
                        (long long)gs, rf_error_message());
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
    return rf_checkpoint_saver_hook_create_ex(
        dir, save_secs, save_steps, max_to_keep, DEFAULT_MAX_FAILED_SAVES, out,
        out_hook);
}

rf_status rf_checkpoint_saver_hook_create_ex(const char *dir, double save_secs,
                                             int64_t save_steps,
                                             int max_to_keep,
                                             int max_failed_saves, FILE *out,
                                             rf_hook **out_hook)
{
    if (!out_hook)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_checkpoint_saver_hook_create: out NULL");
    *out_hook = NULL;
    if (!dir || !*dir || strlen(dir) >= 4096)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "CheckpointSaverHook: a directory is required");
    if (save_steps < 0 || !(save_secs >= 0) || max_to_keep < 0 ||
        max_failed_saves < 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "CheckpointSaverHook: save_steps %lld, save_secs "
                            "%g, max_to_keep %d and max_failed_saves %d must "
                            "be >= 0",
                            (long long)save_steps, save_secs, max_to_keep,
                            max_failed_saves);
    saver *h = calloc(1, sizeof *h);
    if (h) {
        snprintf(h->dir, sizeof h->dir, "%s", dir);
        h->secs = save_secs;
        h->steps = save_steps;
        h->max_to_keep = max_to_keep;
        h->max_failed = max_failed_saves;
        h->out = out ? out : stdout;
        h->last_step = h->tried_step = -1;
    }
    return ms_hook_of(&saver_ops, h, out_hook);
}

rf_status ms_save_now(rf_monitored_session *ms, bool *has_saver, char *path,
                      size_t len)
{
    *has_saver = false;
    for (size_t i = 0; i < ms->nhooks; i++) {
        const rf_hook *hook = ms->hooks[i];
        if (hook->ops != &saver_ops)
            continue;
        const saver *h = hook->ctx;
        *has_saver = true;
        return rf_session_save(rf_monitored_session_session(ms), h->dir,
                               h->max_to_keep, path, len);
    }
    return RF_OK;
}
