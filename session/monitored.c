/* session/monitored.c: the monitored session (rdmaflow/monitored_session.h,
 * tf.train.MonitoredTrainingSession): the readiness wait around session
 * creation, the hooks around every run, recovery from a lost session (drop
 * it, create it again, run the step again), and the bounded end of a job
 * (the chief waits stop_grace_secs for the other workers, pulls every
 * variable back, runs the hooks' end). */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/clock.h"
#include "rdmaflow/monitored_session.h"
#include "rdmaflow/session.h"
#include "session/monitored_internal.h"

#define DEFAULT_MAX_WAIT_SECS    7200
#define DEFAULT_STOP_GRACE_SECS  120
#define DEFAULT_SAVE_SECS        600.0
#define DEFAULT_MAX_FAILED_SAVES 3
#define DEFAULT_LOG_STEPS        100
#define DEFAULT_SUMMARY_STEPS    100
/* One attempt to create the session, and the interval between "still
 * waiting" lines. */
#define ATTEMPT_MS   10000
#define WAIT_NOTE_MS 10000
/* Between failed attempts that failed at once (connection refused). */
#define RETRY_MS 500
/* The chief reads the workers-done bitmap about this often. */
#define DONE_READ_MS 1000

void rf_monitored_session_options_init(rf_monitored_session_options *o)
{
    memset(o, 0, sizeof *o);
    rf_session_options_init(&o->session);
    o->save_checkpoint_secs = DEFAULT_SAVE_SECS;
    o->max_to_keep = 5;
    o->max_failed_saves = DEFAULT_MAX_FAILED_SAVES;
    o->log_step_count_steps = DEFAULT_LOG_STEPS;
    o->save_summaries_steps = DEFAULT_SUMMARY_STEPS;
    o->max_wait_secs = DEFAULT_MAX_WAIT_SECS;
    o->stop_grace_secs = DEFAULT_STOP_GRACE_SECS;
}

void ms_note(rf_monitored_session *ms, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(ms->log, "%s: ", ms->me);
    vfprintf(ms->log, fmt, ap);
    fputc('\n', ms->log);
    fflush(ms->log);
    va_end(ap);
}

/* Errors after which the session is dropped and created again. */
static bool recoverable(rf_status st)
{
    return st == RF_ERR_DISCONNECTED || st == RF_ERR_UNAVAILABLE ||
           st == RF_ERR_ABORTED || st == RF_ERR_TIMEOUT;
}

static rf_status hooks_after_create(rf_monitored_session *ms)
{
    for (size_t i = 0; i < ms->nhooks; i++) {
        const rf_hook *h = ms->hooks[i];
        if (!h->ops->after_create_session)
            continue;
        rf_status st =
            h->ops->after_create_session(h->ctx, ms, ms->global_step);
        if (st != RF_OK)
            return rf_error_set(st, "hook %s: %s", h->ops->name,
                                rf_error_message());
    }
    return RF_OK;
}

/* Creates ms->s, retrying while the cluster is not ready (ps tasks down,
 * the chief not done initialising) for at most max_wait_secs, with a "still
 * waiting" line every 10 s; then the hooks' after_create_session. A
 * recovery keeps the shards that survived (prefer_adopt). */
static rf_status create_session(rf_monitored_session *ms, bool recovering)
{
    int64_t deadline = rf_deadline_ms((int64_t)ms->opt.max_wait_secs * 1000);
    int64_t next_note = rf_now_ms() + WAIT_NOTE_MS;
    char last[1024] = "", what[64] = "";
    for (;;) {
        int64_t left = rf_deadline_left_ms(deadline);
        int attempt =
            (int)(left < ATTEMPT_MS ? (left > 0 ? left : 1) : ATTEMPT_MS);
        char waiting[64];
        int64_t t0 = rf_now_ms();
        rf_session_readiness ready = {.attempt_ms = attempt,
                                      .prefer_adopt = recovering};
        rf_status st = rf_session_create_attempt(
            ms->server, ms->g, ms->ex, &ms->opt.session, &ready, &ms->s,
            waiting, sizeof waiting);
        if (st == RF_OK)
            break;
        if (!recoverable(st))
            return st;
        snprintf(last, sizeof last, "%s", rf_error_message());
        snprintf(what, sizeof what, "%s",
                 waiting[0] ? waiting : "the ps tasks");
        if (rf_now_ms() >= next_note) {
            ms_note(ms, "still waiting for %s: %s", what, last);
            next_note = rf_now_ms() + WAIT_NOTE_MS;
        }
        if (rf_deadline_passed(deadline))
            return rf_error_set(RF_ERR_TIMEOUT,
                                "gave up after max_wait_secs=%d waiting for "
                                "%s: %s",
                                ms->opt.max_wait_secs, what, last);
        if (rf_now_ms() - t0 < RETRY_MS)
            rf_sleep_ms(RETRY_MS);
    }
    rf_status st = rf_session_global_step(ms->s, &ms->global_step);
    if (st != RF_OK)
        return st;
    return hooks_after_create(ms);
}

/* How the session just created got its variables and at which
 * global_step, for the log: "restored PATH, global_step N" names the
 * checkpoint's step, and the step read after it when other workers have
 * moved it on since ("(now M)"). */
static void describe_start(rf_monitored_session *ms, char *buf, size_t len)
{
    rf_session_checkpoint_info info;
    rf_session_checkpoint_info_get(ms->s, &info);
    const char *from = info.restored_from, *note = info.restore_note;
    long long gs = (long long)ms->global_step;
    if (!ms->chief)
        snprintf(buf, len, "joined, global_step %lld", gs);
    else if (from && info.restored_step != ms->global_step)
        snprintf(buf, len, "restored %s%s%s, global_step %lld (now %lld)", from,
                 note && *note ? "; " : "", note ? note : "",
                 (long long)info.restored_step, gs);
    else if (from)
        snprintf(buf, len, "restored %s%s%s, global_step %lld", from,
                 note && *note ? "; " : "", note ? note : "", gs);
    else
        snprintf(buf, len, "%s the variables, global_step %lld",
                 info.init_how ? info.init_how : "initialised", gs);
}

/* The session was lost (err): drop it and create it again. */
static rf_status recover(rf_monitored_session *ms, rf_status why,
                         const char *err)
{
    ms_note(ms, "session lost (%s: %s); recovering", rf_status_string(why),
            err);
    double t0 = rf_now_s();
    rf_session_destroy(ms->s);
    ms->s = NULL;
    rf_status st = create_session(ms, true);
    if (st != RF_OK) {
        if (!ms->s && ms->state != MS_CLOSED)
            ms->state = MS_LOST;
        return rf_error_set(st, "recovering from \"%s\": %s", err,
                            rf_error_message());
    }
    ms->recoveries++;
    /* a restarted ps 0 forgot who finished; if this fails the session is
     * lost again, and the next run recovers and writes them then */
    if (ms->chief &&
        rf_session_workers_done_merge(ms->s, ms->done_seen) != RF_OK)
        ms_note(ms, "the workers-done bits were not written back: %s",
                rf_error_message());
    /* closing: a restarted ps 0 forgot this worker's finished clock too */
    if (ms->state == MS_CLOSED && rf_session_finish_clock(ms->s) != RF_OK)
        ms_note(ms, "the SSP clock was not marked finished again: %s",
                rf_error_message());
    char how[1400];
    describe_start(ms, how, sizeof how);
    ms_note(ms, "recovered in %.1f s: %s (recovery %d)", rf_now_s() - t0, how,
            ms->recoveries);
    return RF_OK;
}

static rf_status add_hook(rf_monitored_session *ms, rf_hook *h)
{
    if (!h)
        return RF_OK;
    rf_hook **n = realloc(ms->hooks, (ms->nhooks + 1) * sizeof *n);
    if (!n) {
        rf_hook_destroy(h);
        return rf_error_set(RF_ERR_NO_MEMORY, "monitored session: no memory");
    }
    ms->hooks = n;
    ms->hooks[ms->nhooks++] = h;
    return RF_OK;
}

/* The caller's hooks (every one is taken over, even on failure) and the
 * chief-only ones on the chief. */
static rf_status take_hooks(rf_monitored_session *ms,
                            const rf_monitored_session_options *o)
{
    rf_status st = RF_OK;
    for (size_t i = 0; i < o->num_hooks; i++) {
        rf_status hs = add_hook(ms, o->hooks[i]);
        st = st == RF_OK ? hs : st;
    }
    for (size_t i = 0; i < o->num_chief_only_hooks; i++) {
        rf_status hs = ms->chief
                           ? add_hook(ms, o->chief_only_hooks[i])
                           : (rf_hook_destroy(o->chief_only_hooks[i]), RF_OK);
        st = st == RF_OK ? hs : st;
    }
    return st;
}

/* The chief's built-in hooks: StepCounter, SummarySaver (both writing
 * into the event file of summary_dir, else checkpoint_dir) and
 * CheckpointSaver, after the caller's. The options were checked. */
static rf_status add_builtin_hooks(rf_monitored_session *ms,
                                   const rf_monitored_session_options *o)
{
    rf_status st = RF_OK;
    if (!ms->chief)
        return st;
    const char *sdir = o->summary_dir ? o->summary_dir : o->checkpoint_dir;
    bool summaries = o->num_summaries > 0 && (o->save_summaries_steps > 0 ||
                                              o->save_summaries_secs > 0);
    if (sdir && (summaries || o->log_step_count_steps > 0)) {
        st = ms_summary_writer_deferred(sdir, &ms->summary);
        if (st != RF_OK)
            return rf_error_prefix(st, "summary_dir");
    }
    rf_hook *h = NULL;
    if (o->log_step_count_steps > 0) {
        st = rf_step_counter_hook_create(o->log_step_count_steps,
                                         o->examples_per_step, ms->log,
                                         ms->summary, &h);
        if (st == RF_OK)
            st = add_hook(ms, h);
    }
    if (st == RF_OK && ms->summary && summaries) {
        st = rf_summary_saver_hook_create(
            ms->summary, o->save_summaries_steps,
            o->save_summaries_steps > 0 ? 0 : o->save_summaries_secs,
            o->summary_nodes, o->summary_tags, o->num_summaries, &h);
        if (st == RF_OK)
            st = add_hook(ms, h);
    }
    bool saving = o->save_checkpoint_steps > 0 || o->save_checkpoint_secs > 0;
    if (st == RF_OK && o->checkpoint_dir && saving) {
        st = rf_checkpoint_saver_hook_create_ex(
            o->checkpoint_dir,
            o->save_checkpoint_steps > 0 ? 0 : o->save_checkpoint_secs,
            o->save_checkpoint_steps, o->max_to_keep, o->max_failed_saves,
            ms->log, &h);
        if (st == RF_OK)
            st = add_hook(ms, h);
    }
    return st;
}

static rf_status check_options(const rf_monitored_session_options *o)
{
    if (o->save_checkpoint_steps < 0 || !(o->save_checkpoint_secs >= 0) ||
        isinf(o->save_checkpoint_secs))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "save_checkpoint_steps %lld and "
                            "save_checkpoint_secs %g must be >= 0",
                            (long long)o->save_checkpoint_steps,
                            o->save_checkpoint_secs);
    if (o->max_to_keep < 0 || o->max_failed_saves < 0 ||
        o->log_step_count_steps < 0 || o->examples_per_step < 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "max_to_keep %d, max_failed_saves %d, "
                            "log_step_count_steps %lld and examples_per_step "
                            "%lld must be >= 0",
                            o->max_to_keep, o->max_failed_saves,
                            (long long)o->log_step_count_steps,
                            (long long)o->examples_per_step);
    if (o->save_summaries_steps < 0 || !(o->save_summaries_secs >= 0) ||
        isinf(o->save_summaries_secs))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "save_summaries_steps %lld and "
                            "save_summaries_secs %g must be >= 0",
                            (long long)o->save_summaries_steps,
                            o->save_summaries_secs);
    if (o->num_summaries > 0 && (!o->summary_nodes || !o->summary_tags))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%zu summaries without their nodes or tags",
                            o->num_summaries);
    if (o->max_wait_secs <= 0 || o->stop_grace_secs < 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "max_wait_secs %d must be > 0 and "
                            "stop_grace_secs %d >= 0",
                            o->max_wait_secs, o->stop_grace_secs);
    return RF_OK;
}

rf_status rf_monitored_session_create(rf_server *server, rf_graph *g,
                                      rf_executor *ex,
                                      const rf_monitored_session_options *o,
                                      rf_monitored_session **out)
{
    if (!out || !o)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_monitored_session_create: NULL options or "
                            "out");
    *out = NULL;
    rf_monitored_session *ms = calloc(1, sizeof *ms);
    if (!ms) {
        for (size_t i = 0; i < o->num_hooks; i++)
            rf_hook_destroy(o->hooks[i]);
        for (size_t i = 0; i < o->num_chief_only_hooks; i++)
            rf_hook_destroy(o->chief_only_hooks[i]);
        return rf_error_set(RF_ERR_NO_MEMORY, "monitored session: no memory");
    }
    ms->server = server;
    ms->g = g;
    ms->ex = ex;
    ms->opt = *o;
    ms->opt.hooks = ms->opt.chief_only_hooks = NULL;
    ms->opt.num_hooks = ms->opt.num_chief_only_hooks = 0;
    ms->opt.session.checkpoint_dir = o->checkpoint_dir;
    /* sync replicas: a step waits max_wait_secs for missing workers */
    if (ms->opt.session.sync_max_wait_ms <= 0)
        ms->opt.session.sync_max_wait_ms =
            o->max_wait_secs > 0 && o->max_wait_secs < INT_MAX / 1000
                ? o->max_wait_secs * 1000
                : INT_MAX;
    ms->log = o->log ? o->log : stdout;
    const rf_cluster_task *self =
        server ? rf_cluster_self(rf_server_cluster(server)) : NULL;
    ms->chief = self && self->is_chief;
    if (self)
        snprintf(ms->me, sizeof ms->me, "/job:%s/task:%d", self->job,
                 self->index);
    rf_status st = take_hooks(ms, o);
    if (st == RF_OK)
        st = check_options(o);
    if (st == RF_OK)
        st = add_builtin_hooks(ms, o);
    ms->opt.summary_nodes = NULL; /* the hooks keep what they need */
    ms->opt.summary_tags = NULL;
    if (st == RF_OK && (!server || !g || !ex))
        st = rf_error_set(RF_ERR_INVALID_ARG,
                          "rf_monitored_session_create: server, graph and "
                          "executor are required");
    for (size_t i = 0; st == RF_OK && i < ms->nhooks; i++) {
        const rf_hook *h = ms->hooks[i];
        if (h->ops->begin && (st = h->ops->begin(h->ctx, ms)) != RF_OK)
            st = rf_error_set(st, "hook %s: %s", h->ops->name,
                              rf_error_message());
    }
    if (st == RF_OK)
        st = create_session(ms, false);
    if (st != RF_OK) {
        char msg[1200];
        snprintf(msg, sizeof msg, "%s", rf_error_message());
        rf_monitored_session_destroy(ms);
        return rf_error_set(st, "%s", msg);
    }
    char how[1400];
    describe_start(ms, how, sizeof how);
    ms_note(ms, "session ready: %s", how);
    *out = ms;
    return RF_OK;
}

/* Room for num_fetches of the caller's and every hook's. */
static rf_status reserve(rf_monitored_session *ms, size_t num_fetches)
{
    size_t need = num_fetches + ms->nhooks * RF_HOOK_MAX_FETCHES;
    if (need <= ms->cap && ms->hook_first)
        return RF_OK;
    free(ms->fetch), free(ms->out), free(ms->hook_idx), free(ms->hook_vals);
    free(ms->hook_first), free(ms->hook_n);
    ms->fetch = calloc(need + 1, sizeof *ms->fetch);
    ms->out = calloc(need + 1, sizeof *ms->out);
    ms->hook_idx = calloc(need + 1, sizeof *ms->hook_idx);
    ms->hook_vals = calloc(RF_HOOK_MAX_FETCHES, sizeof *ms->hook_vals);
    ms->hook_first = calloc(ms->nhooks + 1, sizeof *ms->hook_first);
    ms->hook_n = calloc(ms->nhooks + 1, sizeof *ms->hook_n);
    if (!ms->fetch || !ms->out || !ms->hook_idx || !ms->hook_vals ||
        !ms->hook_first || !ms->hook_n) {
        ms->cap = 0;
        return rf_error_set(RF_ERR_NO_MEMORY, "monitored session: no memory");
    }
    ms->cap = need;
    return RF_OK;
}

/* The caller's fetches, then each hook's before_run nodes not fetched
 * already, *out the number of nodes to fetch; a before_run's failure. */
static rf_status gather_fetches(rf_monitored_session *ms,
                                rf_node *const *fetches, size_t num_fetches,
                                size_t *out)
{
    size_t n = num_fetches, used = 0;
    if (num_fetches)
        memcpy(ms->fetch, fetches, num_fetches * sizeof *fetches);
    for (size_t i = 0; i < ms->nhooks; i++) {
        const rf_hook *h = ms->hooks[i];
        rf_node *want[RF_HOOK_MAX_FETCHES];
        size_t k = h->ops->before_run ? h->ops->before_run(h->ctx, ms, want,
                                                           RF_HOOK_MAX_FETCHES)
                                      : 0;
        if (k == RF_HOOK_FAILED)
            return rf_error_set(RF_ERR_INVALID_ARG, "hook %s: %s", h->ops->name,
                                rf_error_message());
        if (k > RF_HOOK_MAX_FETCHES)
            k = RF_HOOK_MAX_FETCHES;
        ms->hook_first[i] = used;
        ms->hook_n[i] = k;
        for (size_t j = 0; j < k; j++) {
            size_t at = 0;
            while (at < n && ms->fetch[at] != want[j])
                at++;
            if (at == n)
                ms->fetch[n++] = want[j];
            ms->hook_idx[used++] = at;
        }
    }
    *out = n;
    return RF_OK;
}

/* The chief, while training: remembers which workers finished. */
static void note_done_workers(rf_monitored_session *ms)
{
    int64_t now = rf_now_ms();
    if (!ms->chief || now - ms->done_read_at < DONE_READ_MS)
        return;
    ms->done_read_at = now;
    uint64_t bits[RF_PS_DONE_WORDS];
    /* a failure here shows up in the next run, which recovers */
    if (rf_session_workers_done_read(ms->s, bits) == RF_OK)
        for (int w = 0; w < RF_PS_DONE_WORDS; w++)
            ms->done_seen[w] |= bits[w];
}

static rf_status hooks_after_run(rf_monitored_session *ms, bool train)
{
    for (size_t i = 0; i < ms->nhooks; i++) {
        const rf_hook *h = ms->hooks[i];
        if (!h->ops->after_run)
            continue;
        for (size_t j = 0; j < ms->hook_n[i]; j++)
            ms->hook_vals[j] = ms->out[ms->hook_idx[ms->hook_first[i] + j]];
        rf_run_values v = {.global_step = ms->global_step,
                           .train = train,
                           .results = ms->hook_vals,
                           .num_results = ms->hook_n[i]};
        rf_status st = h->ops->after_run(h->ctx, ms, &v);
        if (st != RF_OK)
            return rf_error_set(st, "hook %s: %s", h->ops->name,
                                rf_error_message());
    }
    return RF_OK;
}

rf_status ms_retry_after_loss(rf_monitored_session *ms, rf_status st,
                              bool *ended)
{
    *ended = false;
    if (!recoverable(st))
        return st;
    char err[1024];
    snprintf(err, sizeof err, "%s", rf_error_message());
    if (rf_session_sync_stuck(ms->s)) /* a recovery cannot help */
        return ms_end_stuck_sync(ms, st, err);
    bool stopping = ms->state == MS_STOPPING;
    if ((st = recover(ms, st, err)) != RF_OK)
        return st;
    *ended = !stopping && ms->state == MS_STOPPING;
    return RF_OK;
}

rf_status rf_monitored_session_run(rf_monitored_session *ms,
                                   rf_node *const *feeds,
                                   const rf_tensor *values, size_t num_feeds,
                                   rf_node *const *fetches, size_t num_fetches,
                                   rf_tensor *fetched, int64_t *global_step,
                                   bool *job_ended)
{
    if (job_ended)
        *job_ended = false;
    if (!ms || (num_fetches && (!fetches || !fetched)))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_monitored_session_run: NULL session or "
                            "fetches");
    if (ms->state != MS_RUNNING || !ms->s)
        return rf_error_set(
            RF_ERR_INVALID_ARG, "rf_monitored_session_run: %s",
            ms->state == MS_CLOSED ? "the session was closed"
            : ms->state == MS_STOPPING && ms->s
                ? "a stop was requested (rf_monitored_session_should_stop)"
                : "the session was lost and could not be recovered");
    rf_status st = reserve(ms, num_fetches);
    if (st != RF_OK)
        return st;
    size_t n = 0;
    if ((st = gather_fetches(ms, fetches, num_fetches, &n)) != RF_OK)
        return st;
    bool train = false;
    for (size_t j = 0; j < n; j++)
        train |= ms->fetch[j] == ms->opt.session.train_op;
    for (;;) {
        int64_t gs = ms->global_step;
        st = rf_session_run(ms->s, feeds, values, num_feeds, ms->fetch, n,
                            ms->out, &gs);
        if (st == RF_OK) {
            ms->global_step = gs;
            break;
        }
        bool ended = false;
        if ((st = ms_retry_after_loss(ms, st, &ended)) != RF_OK)
            return st;
        if (ended) {
            if (job_ended)
                *job_ended = true;
            if (global_step)
                *global_step = ms->global_step;
            return RF_OK;
        }
    }
    note_done_workers(ms);
    st = hooks_after_run(ms, train);
    if (st != RF_OK)
        return st;
    if (num_fetches)
        memcpy(fetched, ms->out, num_fetches * sizeof *fetched);
    if (global_step)
        *global_step = ms->global_step;
    return RF_OK;
}

bool rf_monitored_session_should_stop(const rf_monitored_session *ms)
{
    return !ms || ms->state == MS_STOPPING || ms->state == MS_CLOSED;
}

void rf_monitored_session_request_stop(rf_monitored_session *ms)
{
    if (ms && (ms->state == MS_RUNNING || ms->state == MS_LOST))
        ms->state = MS_STOPPING;
}

rf_session *rf_monitored_session_session(rf_monitored_session *ms)
{
    return ms ? ms->s : NULL;
}

bool rf_monitored_session_is_chief(const rf_monitored_session *ms)
{
    return ms && ms->chief;
}

int64_t rf_monitored_session_global_step(const rf_monitored_session *ms)
{
    return ms ? ms->global_step : 0;
}

int rf_monitored_session_recoveries(const rf_monitored_session *ms)
{
    return ms ? ms->recoveries : 0;
}

FILE *rf_monitored_session_log(const rf_monitored_session *ms)
{
    return ms ? ms->log : stdout;
}

/* The chief's wait for the others at close: stop_grace_secs in all, in
 * slices of a second so the bits seen are kept (done_seen) even if ps 0
 * restarts meanwhile, recovering (and going on waiting) if the session is
 * lost. */
static rf_status wait_for_workers(rf_monitored_session *ms, char *missing,
                                  size_t len)
{
    int others = rf_cluster_num_workers(rf_server_cluster(ms->server)) - 1;
    if (rf_server_elastic(ms->server))
        ms_note(ms,
                "waiting at most %d s for the other workers that are "
                "members of the job (elastic: joined, not left, not gone "
                "past the ps's bound) to finish",
                ms->opt.stop_grace_secs);
    else if (others <= 0)
        return RF_OK;
    else
        ms_note(ms, "waiting at most %d s for %d other worker%s to finish",
                ms->opt.stop_grace_secs, others, others == 1 ? "" : "s");
    int64_t deadline = rf_deadline_ms((int64_t)ms->opt.stop_grace_secs * 1000);
    for (;;) {
        int64_t left = rf_deadline_left_ms(deadline);
        uint64_t bits[RF_PS_DONE_WORDS];
        rf_status st = rf_session_wait_workers(
            ms->s, (int)(left < DONE_READ_MS ? left : DONE_READ_MS), missing,
            len, bits);
        if (st == RF_OK || st == RF_ERR_TIMEOUT)
            for (int w = 0; w < RF_PS_DONE_WORDS; w++)
                ms->done_seen[w] |= bits[w];
        if (st == RF_ERR_TIMEOUT && rf_deadline_passed(deadline))
            return rf_error_set(st,
                                "%s did not finish within "
                                "stop_grace_secs=%d",
                                missing, ms->opt.stop_grace_secs);
        if (st == RF_OK || (st != RF_ERR_TIMEOUT && !recoverable(st)))
            return st;
        if (st == RF_ERR_TIMEOUT)
            continue;
        char err[1024];
        snprintf(err, sizeof err, "%s", rf_error_message());
        if ((st = recover(ms, st, err)) != RF_OK)
            return st;
    }
}

/* Runs an operation of the current session, recovering once. */
static rf_status with_recovery(rf_monitored_session *ms,
                               rf_status (*op)(rf_session *s))
{
    rf_status st = op(ms->s);
    if (st == RF_OK || !recoverable(st))
        return st;
    char err[1024];
    snprintf(err, sizeof err, "%s", rf_error_message());
    if ((st = recover(ms, st, err)) != RF_OK)
        return st;
    return op(ms->s);
}

static rf_status announce_done(rf_session *s)
{
    return rf_session_finish(s, 0);
}

rf_status rf_monitored_session_close(rf_monitored_session *ms)
{
    if (!ms || ms->state == MS_CLOSED || ms->state == MS_LOST || !ms->s ||
        ms->sync_ended)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_monitored_session_close: %s",
                            !ms              ? "NULL"
                            : ms->sync_ended ? "the sync job ended (no step "
                                               "could complete)"
                                             : "closed already or lost");
    ms->state = MS_CLOSED;
    char missing[1024] = "";
    rf_status wst = RF_OK, st;
    if (!ms->chief) {
        st = with_recovery(ms, announce_done);
    } else {
        /* stale synchronous parallel: the chief's clock must not hold the
         * workers it now waits for */
        st = with_recovery(ms, rf_session_finish_clock);
        if (st != RF_OK)
            return st;
        wst = wait_for_workers(ms, missing, sizeof missing);
        if (wst != RF_OK && wst != RF_ERR_TIMEOUT)
            return wst;
        char werr[1200];
        snprintf(werr, sizeof werr, "%s", rf_error_message());
        st = with_recovery(ms, rf_session_pull_all);
        if (st == RF_OK)
            ms->global_step = rf_session_last_global_step(ms->s);
        if (wst == RF_ERR_TIMEOUT)
            ms_note(ms, "%s", werr);
    }
    if (st != RF_OK)
        return st;
    for (size_t i = 0; i < ms->nhooks; i++) {
        const rf_hook *h = ms->hooks[i];
        if (h->ops->end && (st = h->ops->end(h->ctx, ms)) != RF_OK)
            return rf_error_set(st, "hook %s: %s", h->ops->name,
                                rf_error_message());
    }
    if (wst != RF_OK)
        return rf_error_set(wst,
                            "the chief stopped waiting after "
                            "stop_grace_secs=%d: %s did not finish",
                            ms->opt.stop_grace_secs, missing);
    return RF_OK;
}

rf_status rf_monitored_session_shutdown_cluster(rf_monitored_session *ms)
{
    if (!ms || !ms->s)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_monitored_session_shutdown_cluster: no "
                            "session");
    return rf_session_shutdown_cluster(ms->s);
}

void rf_monitored_session_destroy(rf_monitored_session *ms)
{
    if (!ms)
        return;
    rf_session_destroy(ms->s);
    for (size_t i = 0; i < ms->nhooks; i++)
        rf_hook_destroy(ms->hooks[i]);
    free(ms->hooks);
    if (rf_summary_writer_close(ms->summary) != RF_OK)
        ms_note(ms, "closing the summaries: %s", rf_error_message());
    free(ms->fetch), free(ms->out), free(ms->hook_idx), free(ms->hook_vals);
    free(ms->hook_first), free(ms->hook_n);
    free(ms);
}
