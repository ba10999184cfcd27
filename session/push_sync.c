/* session/push_sync.c: the sync-replicas push strategy (TensorFlow 1.x's
 * SyncReplicasOptimizer; docs/DESIGN.md section 4, "Sync replicas"). Each
 * training run is tagged with this worker's local step G, the global_step
 * it last saw published:
 *   push     every gradient goes to its shard's accumulator on the ps
 *            (rf_ps_push_sync: a WRITE of the tag G, then the gradient's
 *            WRITE_WITH_IMM) from the executor thread that produced it;
 *            an embedding table's, its deduplicated rows, with
 *            rf_ps_push_sparse_sync into the table's per-row accumulator
 *            (the ps averages each row over the gradients that touched
 *            it, TF's SparseConditionalAccumulator);
 *   wait     every push is acknowledged: taken, or dropped as stale;
 *   advance  until global_step > G: a READ of global_step, else READs of
 *            every shard's step word (tables' too); once every shard
 *            applied step G
 *            (step > G), CMP_AND_SWP global_step G -> G + 1, which exactly
 *            one worker of the cluster wins (the others see it by READ).
 *            Back-to-back polls for 2 ms, then 1 ms sleeps (5 ms after
 *            100 ms), bounded by op_timeout_ms (RF_ERR_TIMEOUT naming the
 *            shards still behind). The value reached is the run's step and
 *            the next local step. A global_step below G can only be a
 *            restore by the chief (the shards' steps go back with it, so
 *            step G would never be applied): the run fails at once with
 *            RF_ERR_ABORTED and the monitored session recovers, rather
 *            than waiting out op_timeout_ms; so does a changed chief
 *            epoch (ps task 0, read every 250 ms of a wait: the chief
 *            set the shards' steps again, a restore to this very step).
 *            In the same rhythm ps task 0's members bitmap: fewer than N
 *            training workers connected suspends op_timeout_ms for
 *            sync_max_wait_ms; a worker back resumes the step, else the
 *            run fails for good (RF_ERR_UNAVAILABLE naming the missing
 *            workers, rf_session_sync_stuck).
 * A run that failed before advancing re-reads global_step at the next run,
 * so a recovered worker tags with the step the cluster is at. The chief
 * sets every shard's sync step to the global_step it starts from (after a
 * restore) before the init flags. Refused unless apply=ps (the average is
 * applied on the ps); replicas_to_aggregate N and total_num_replicas M
 * default to the training workers, 1 <= N <= M, M = the training workers;
 * M - N backup workers may be missing at the chief's finish. */
#include <stdio.h>
#include <stdlib.h>

#include "session/push_sync_internal.h"

/* Polling the publication: back-to-back at first, then sleeping. */
#define SPIN_MS       2
#define SLEEP_MS      1
#define LONG_WAIT_MS  100
#define LONG_SLEEP_MS 5

static rf_status configure(rf_session *s)
{
    const rf_session_options *o = &s->opt;
    int workers = s->task.num_workers;
    if (o->apply != RF_PS_APPLY_PS)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "sync_replicas: the averaged gradient is applied "
                            "on the ps (as TensorFlow's SyncReplicasOptimizer "
                            "does); apply=worker cannot be combined with it");
    if (o->replicas_to_aggregate < 0 || o->total_num_replicas < 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "sync_replicas: replicas_to_aggregate %d, "
                            "total_num_replicas %d: negative (0 means every "
                            "training worker)",
                            o->replicas_to_aggregate, o->total_num_replicas);
    int n = o->replicas_to_aggregate ? o->replicas_to_aggregate : workers;
    int m = o->total_num_replicas ? o->total_num_replicas : workers;
    if (m > workers)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "sync_replicas: total_num_replicas=%d but the "
                            "cluster has %d training worker%s",
                            m, workers, workers == 1 ? "" : "s");
    if (m < workers)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "sync_replicas: total_num_replicas=%d but all %d "
                            "training workers of the cluster push "
                            "gradients; give %d (or 0)",
                            m, workers, workers);
    if (n > m)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "sync_replicas: replicas_to_aggregate=%d exceeds "
                            "total_num_replicas=%d: no step could gather its "
                            "gradients",
                            n, m);
    if (n < 1 || m > RF_PS_MAX_SYNC_REPLICAS)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "sync_replicas: replicas_to_aggregate=%d of "
                            "total_num_replicas=%d (1..%d)",
                            n, m, RF_PS_MAX_SYNC_REPLICAS);
    sync_state *st = calloc(1, sizeof *st);
    if (!st)
        return rf_error_set(RF_ERR_NO_MEMORY, "sync_replicas: out of memory");
    st->n = (uint32_t)n;
    st->m = (uint32_t)m;
    st->optional = m - n;
    s->push_state = st;
    return RF_OK;
}

static void stop(rf_session *s)
{
    sync_state *st = s->push_state;
    if (!st)
        return;
    free(st->shards);
    free(st->steps);
    free(st->stale);
    free(st);
    s->push_state = NULL;
}

static rf_status read_step(rf_session *s, int64_t *step)
{
    rf_status st = rf_ps_global_step_read(s->client, step);
    if (st != RF_OK)
        return rf_error_set(st, "sync_replicas: reading global_step: %s",
                            rf_error_message());
    return RF_OK;
}

/* The shard handles (kept current: the session may look them up again). */
static void collect_shards(rf_session *s, sync_state *st)
{
    for (size_t i = 0; i < s->nv; i++)
        st->shards[i] = s->v[i].shard;
}

static rf_status start(rf_session *s)
{
    sync_state *st = s->push_state;
    size_t n = s->nv ? s->nv : 1;
    st->shards = calloc(n, sizeof *st->shards);
    st->steps = calloc(n, sizeof *st->steps);
    st->stale = calloc(n, sizeof *st->stale);
    if (!st->shards || !st->steps || !st->stale)
        return rf_error_set(RF_ERR_NO_MEMORY, "sync_replicas: out of memory");
    rf_status rst = rf_ps_sync_epoch_read(s->client, &st->epoch);
    if (rst != RF_OK)
        return rf_error_set(rst, "sync_replicas: %s", rf_error_message());
    return read_step(s, &st->local_step);
}

/* The chief: every shard starts at the global_step training starts from
 * (restored, or what ps 0 holds). Runs before start: its own array. */
static rf_status init_shards(rf_session *s)
{
    int64_t step = 0;
    rf_status st = read_step(s, &step);
    if (st != RF_OK)
        return st;
    rf_ps_var **vars = calloc(s->nv ? s->nv : 1, sizeof *vars);
    if (!vars)
        return rf_error_set(RF_ERR_NO_MEMORY, "sync_replicas: out of memory");
    for (size_t i = 0; i < s->nv; i++)
        vars[i] = s->v[i].shard;
    st = rf_ps_sync_set_step(s->client, vars, s->nv, step);
    free(vars);
    /* a worker waiting for a step learns at once that it was set again */
    if (st == RF_OK)
        st = rf_ps_sync_epoch_bump(s->client, NULL);
    if (st != RF_OK)
        return rf_error_set(st,
                            "sync_replicas: setting the shards' step to "
                            "global_step %lld: %s",
                            (long long)step, rf_error_message());
    return RF_OK;
}

static rf_status begin(rf_session *s)
{
    sync_state *st = s->push_state;
    if (st->stepping) { /* the last run failed before it advanced */
        rf_status rst = read_step(s, &st->local_step);
        if (rst != RF_OK)
            return rst;
    }
    st->stepping = true;
    return RF_OK;
}

/* Each gradient into its accumulator, tagged with the local step. */
static rf_status push_dense(rf_session *s, const size_t *vars, size_t n)
{
    sync_state *st = s->push_state;
    rf_status rst = RF_OK;
    for (size_t k = 0; k < n && rst == RF_OK; k++) {
        rf_ps_xfer x = sess_grad_xfer(s, vars[k]);
        rst = rf_ps_push_sync(s->client, &x, 1, st->local_step);
        if (rst == RF_OK && k == 0)
            sync_test_stop_after_push(s, st);
    }
    return rst;
}

/* The gradient, the ack, the tag. */
static size_t dense_wire(const rf_session *s, const sess_var *v, size_t rows)
{
    (void)s;
    (void)rows;
    return v->info.values_bytes + 8 + 8;
}

/* A table's rows (staged deduplicated by session_rows.c) into its per-row
 * accumulator, tagged with the local step. */
static rf_status push_rows(rf_session *s, const size_t *vars, size_t n)
{
    sync_state *st = s->push_state;
    rf_status rst = RF_OK;
    for (size_t k = 0; k < n && rst == RF_OK; k++) {
        sess_var *v = &s->v[vars[k]];
        pthread_mutex_lock(&s->rows.mu);
        rst = rf_ps_push_sparse_sync(s->client, v->shard, v->push_rows,
                                     v->push_n, v->grad_buf, s->block.mem_mr,
                                     st->local_step);
        rst = sess_rows_pushed(s, v, rst);
        pthread_mutex_unlock(&s->rows.mu);
    }
    return rst;
}

static rf_status timed_out(rf_session *s, const sync_state *st, int64_t gs,
                           int timeout)
{
    size_t behind = 0, first = 0;
    for (size_t i = 0; i < s->nv; i++)
        if (st->steps[i] <= st->local_step && behind++ == 0)
            first = i;
    if (!behind)
        return rf_error_set(RF_ERR_TIMEOUT,
                            "sync_replicas: global_step still %lld after "
                            "%d ms waiting for it to pass step %lld",
                            (long long)gs, timeout, (long long)st->local_step);
    return rf_error_set(
        RF_ERR_TIMEOUT,
        "sync_replicas: global_step still %lld after %d ms: %zu of %zu "
        "shards have not applied step %lld ('%s' on ps task %zu is at step "
        "%lld); each needs replicas_to_aggregate=%u gradients of that step "
        "(are %u workers running?)",
        (long long)gs, timeout, behind, s->nv, (long long)st->local_step,
        rf_node_name(s->v[first].var), s->v[first].ps_task,
        (long long)st->steps[first], st->n, st->n);
}

/* Until global_step > local_step: its new value in *step. */
static rf_status advance(rf_session *s, int64_t *step)
{
    sync_state *st = s->push_state;
    int64_t g = st->local_step, gs = g;
    int timeout = s->opt.op_timeout_ms > 0 ? s->opt.op_timeout_ms : 30000;
    int64_t t0 = rf_now_ms(), deadline = rf_deadline_ms(timeout);
    int64_t next_quorum = t0 + SYNC_WATCH_MS;
    st->lost_since = 0;
    collect_shards(s, st);
    for (;;) {
        rf_status rst = read_step(s, &gs);
        if (rst != RF_OK)
            return rst;
        if (gs > g)
            break;
        if (gs < g) /* only a restore moves global_step back */
            return rf_error_set(RF_ERR_ABORTED,
                                "sync_replicas: global_step went back to "
                                "%lld while this worker waited for step %lld "
                                "to be applied (the chief restored a "
                                "checkpoint): the step runs again from it",
                                (long long)gs, (long long)g);
        rst = rf_ps_sync_read(s->client, st->shards, s->nv, st->steps, NULL);
        if (rst != RF_OK)
            return rf_error_set(rst, "sync_replicas: %s", rf_error_message());
        size_t behind = 0;
        for (size_t i = 0; i < s->nv; i++)
            behind += st->steps[i] <= g;
        if (!behind) { /* every shard applied step g: publish it */
            int64_t old = 0;
            rst = rf_ps_global_step_cas(s->client, g, g + 1, &old);
            if (rst != RF_OK)
                return rf_error_set(rst,
                                    "sync_replicas: publishing global_step "
                                    "%lld: %s",
                                    (long long)(g + 1), rf_error_message());
            if (old == g) {
                st->published++;
                gs = g + 1;
                break;
            }
            gs = old;
            if (gs > g)
                break;
            return rf_error_set(RF_ERR_ABORTED,
                                "sync_replicas: global_step is %lld, below "
                                "this worker's step %lld, while every shard "
                                "passed it (was a checkpoint restored?)",
                                (long long)gs, (long long)g);
        }
        if (rf_now_ms() >= next_quorum) {
            next_quorum = rf_now_ms() + SYNC_WATCH_MS;
            rst = sync_check_epoch(s, st);
            if (rst == RF_OK)
                rst = sync_check_quorum(s, st, &deadline, timeout);
            if (rst != RF_OK)
                return rst;
        }
        if (!st->lost_since && rf_deadline_passed(deadline))
            return timed_out(s, st, gs, timeout);
        int64_t waited = rf_now_ms() - t0;
        if (waited >= SPIN_MS)
            rf_sleep_ms(waited < LONG_WAIT_MS ? SLEEP_MS : LONG_SLEEP_MS);
    }
    if (st->lost_since)
        sync_quorum_back(st);
    st->local_step = gs;
    st->stepping = false;
    *step = gs;
    return RF_OK;
}

rf_status rf_session_sync_stats_get(rf_session *s, rf_session_sync_stats *out)
{
    if (!s || !out)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_session_sync_stats_get: NULL argument");
    if (s->offline)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_session_sync_stats_get: an offline session "
                            "only describes");
    if (s->push != &sess_push_sync)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_session_sync_stats_get: the session has no "
                            "sync_replicas");
    sync_state *st = s->push_state;
    *out = (rf_session_sync_stats){.replicas_to_aggregate = (int)st->n,
                                   .total_num_replicas = (int)st->m,
                                   .local_step = st->local_step,
                                   .published = st->published};
    rf_ps_sync_counts(s->client, &out->accepted, &out->stale);
    collect_shards(s, st);
    rf_status rst =
        rf_ps_sync_read(s->client, st->shards, s->nv, st->steps, st->stale);
    if (rst != RF_OK)
        return rf_error_set(rst, "sync_replicas: %s", rf_error_message());
    for (size_t i = 0; i < s->nv; i++)
        out->stale_on_ps += st->stale[i];
    return RF_OK;
}

static void replicas(const rf_session *s, uint32_t *n, uint32_t *m)
{
    const sync_state *st = s->push_state;
    *n = st ? st->n : 0;
    *m = st ? st->m : 0;
}

/* Backup workers: once only they are missing, those whose connection to
 * ps task 0 is gone (no longer members: killed, not restarted) are not
 * waited for at all; connected ones get op_timeout_ms more, not the whole
 * wait. */
static bool may_skip_missing(rf_session *s, const uint32_t *ids, size_t n,
                             const uint64_t *done, size_t k)
{
    sync_state *st = s->push_state;
    if (!st || (int64_t)k > st->optional)
        return false;
    uint64_t bits[RF_PS_DONE_WORDS];
    if (rf_ps_members_read(s->client, bits) == RF_OK) {
        size_t connected = 0;
        for (size_t i = 0; i < n; i++)
            connected += !rf_ps_worker_is_done(done, ids[i]) &&
                         rf_ps_worker_is_done(bits, ids[i]);
        if (!connected)
            return true;
    }
    if (st->optional_deadline == 0)
        st->optional_deadline = rf_deadline_ms(
            s->opt.op_timeout_ms > 0 ? s->opt.op_timeout_ms : 30000);
    return rf_deadline_passed(st->optional_deadline);
}

const sess_push_ops sess_push_sync = {
    .name = "sync",
    .push_op = "WRITE_WITH_IMM",
    .wait_op = "WAIT_ACKS",
    .wait_span = "wait accumulator acks",
    .advance_kind = RF_STEP_WAIT_STEP,
    .advance_op = "WAIT_GLOBAL_STEP",
    .rows_dedup = true,
    .dense = {.push = push_dense, .wire_bytes = dense_wire},
    .rows = {.push = push_rows, .wire_bytes = sess_rows_inbox_wire},
    .configure = configure,
    .start = start,
    .stop = stop,
    .init_shards = init_shards,
    .begin = begin,
    /* no on_gradient: each push is posted by the executor thread that
     * staged it */
    .wait = sess_push_wait_acks,
    .advance = advance,
    .replicas = replicas,
    .may_skip_missing = may_skip_missing,
};
