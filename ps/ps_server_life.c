/* ps/ps_server_life.c: a ps task's life is bounded without its chief
 * (issue 25 item 2). The service thread counts the chief's live
 * connections; once a chief has been seen, a ps with none for
 * chief_gone_exit_ms stops by itself, and with idle_exit_ms a ps that never
 * saw a chief stops that long after its start. Either stop is
 * RF_ERR_TIMEOUT (rf-trainer exits 138, retryable), its reason logged
 * (with how many workers had said they were done) and kept for
 * rf_ps_server_join's message. A SHUTDOWN is the only way to stop with
 * RF_OK. */
#include <stdio.h>

#include "core/log.h"
#include "ps/ps_server_internal.h"
#include "rdmaflow/clock.h"

void ps_life_chief(rf_ps_server *s, bool live)
{
    if (live) {
        s->chiefs_live++;
        s->chief_seen = true;
        s->chief_gone_ms = 0;
    } else if (s->chiefs_live && --s->chiefs_live == 0) {
        s->chief_gone_ms = rf_now_ms();
    }
}

/* Client ids whose done bit is set in the globals block (ps task 0's is the
 * one workers write). */
static uint32_t workers_done(rf_ps_server *s)
{
    const uint64_t *w = (const uint64_t *)ps_arena_ptr(
        &s->arena, (ps_loc){.region = 0, .offset = PS_WORKERS_DONE_OFF});
    uint32_t n = 0;
    for (uint32_t i = 0; i < RF_PS_DONE_WORDS; i++)
        n += (uint32_t)__builtin_popcountll(
            __atomic_load_n(&w[i], __ATOMIC_ACQUIRE));
    return n;
}

static rf_status stop(rf_ps_server *s, const char *why)
{
    RF_LOG_ERRORF("ps %d: stopping: %s", s->opt.task_index, why);
    pthread_mutex_lock(&s->mu);
    snprintf(s->stop_why, sizeof s->stop_why, "%s", why);
    pthread_mutex_unlock(&s->mu);
    return RF_ERR_TIMEOUT;
}

rf_status ps_life_check(rf_ps_server *s)
{
    long long now = rf_now_ms();
    char why[400];
    if (s->chief_seen && !s->chiefs_live && s->opt.chief_gone_exit_ms &&
        now - s->chief_gone_ms >= s->opt.chief_gone_exit_ms) {
        uint32_t done = workers_done(s);
        char workers[96] = "";
        if (s->opt.bind_roles)
            snprintf(workers, sizeof workers, "; %u of %u workers said done",
                     done, s->opt.num_workers);
        else
            snprintf(workers, sizeof workers, "; %u workers said done", done);
        snprintf(why, sizeof why,
                 "no chief connection for %.1f s (the chief, client %u, was "
                 "last connected from %s%s); a ps outlives its job by no more "
                 "than that (--max_wait_secs)",
                 (double)(now - s->chief_gone_ms) / 1000, s->chief.id,
                 s->chief.peer, workers);
        return stop(s, why);
    }
    if (!s->chief_seen && s->opt.idle_exit_ms &&
        now - s->started_ms >= s->opt.idle_exit_ms) {
        snprintf(why, sizeof why,
                 "no chief connected within %.1f s of the start "
                 "(--ps_idle_exit_secs)",
                 (double)(now - s->started_ms) / 1000);
        return stop(s, why);
    }
    return RF_OK;
}
