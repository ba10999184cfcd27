/* ps/ps_client_push.c: the dense pushes.
 *
 * rf_ps_push_inbox: one WRITE_WITH_IMM per shard of the gradient into this
 * client's inbox on the ps (immediate = shard id | 8-bit sequence), all of one
 * ps in one rf_post; a push is finished when both its send completion and the
 * ps's ack (a write_imm into the ack ring echoing the immediate; the ring
 * word is the new version or an error) arrived. At most one push per shard
 * is in flight (the inbox is reused) and fewer than the ps's receive depth
 * per ps. A sync-replicas push (rf_ps_push_sync, ps_client_sync.c) is the
 * same with a WRITE of its tag into the inbox's first 8 bytes posted just
 * before the gradient's WRITE_WITH_IMM, which goes after the tag; its ack
 * says accepted or stale.
 *
 * rf_ps_update_rmw (and _locked, which takes the lock word): every shard
 * runs a small state machine, all of them
 * advancing together, their work batched per ps at each round:
 *   [LOCK: CMP_AND_SWP lock 0 -> token; held elsewhere: retry after an
 *    exponential backoff (jittered, 20 us .. 2 ms) until lock_timeout]
 *   READ: (locking: FETCH_AND_ADD version +1, making it odd) READ of the
 *         record from the beta powers to its end into local scratch;
 *   apply rf_optim_apply on the scratch copy, advance its beta powers;
 *   WRITE: WRITE the same range back, FETCH_AND_ADD version (+1 locking,
 *          +2 otherwise), (locking: fenced CMP_AND_SWP token -> 0 of the
 *          lock word; finding another value there fails the push).
 * The lock is released with an atomic, not a WRITE: the verbs
 * specification makes atomics atomic only with respect to other atomics,
 * so a WRITE of 0 racing another worker's CMP_AND_SWP is not defined on
 * every NIC.
 * No shard's lock is held while waiting for another's, so two workers can
 * never deadlock. */
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "ps/ps_client_internal.h"
#include "rdmaflow/byteorder.h"
#include "rdmaflow/status.h"

/* ---- into the inbox ------------------------------------------------------ */

static void push_finish(rf_ps_var *v)
{
    rf_ps_client *c = v->client;
    if (v->push_busy && v->push_sent && v->push_acked) {
        v->push_busy = false;
        c->pushes_busy--;
        ps_cli_conn *p = &c->conns[v->ps];
        if (p->pushes_inflight)
            p->pushes_inflight--;
    }
}

static void push_error(rf_ps_var *v, rf_status st, const char *what)
{
    rf_ps_client *c = v->client;
    if (v->push_gather) {
        cli_gather_failed(v, st);
        return;
    }
    if (c->push_status != RF_OK)
        return;
    char name[340];
    c->push_status = st;
    snprintf(c->push_err, sizeof c->push_err,
             "push to '%s' part %u on %s: %s (%s)", v->spec.name, v->spec.part,
             cli_ps_name(&c->conns[v->ps], name, sizeof name), what,
             rf_status_string(st));
}

void cli_push_on_send(rf_ps_var *v, rf_status st)
{
    if (!v->push_busy)
        return;
    if (st != RF_OK) {
        push_error(v, st, "the gradient write failed");
        cli_conn_fail(&v->client->conns[v->ps], "a push failed: %s",
                      rf_status_string(st));
        /* No ack will come. */
        v->push_acked = true;
    }
    v->push_sent = true;
    push_finish(v);
}

void cli_push_on_ack(ps_cli_conn *p, uint32_t imm)
{
    uint32_t id = ps_imm_shard(imm);
    uint64_t word =
        ((volatile uint64_t *)(void *)(cli_req_buf(p) +
                                       PS_REQ_MAX))[p->acks_seen %
                                                    PS_CLI_RECV_DEPTH];
    p->acks_seen++;
    rf_ps_var *v = id < p->num_dir ? p->by_shard[id] : NULL;
    if (!v || !v->push_busy || v->push_acked ||
        ps_imm_seq(imm) != v->push_seq) {
        cli_conn_fail(p,
                      "protocol error: an ack for shard %u sequence %u "
                      "that has no push outstanding",
                      id, ps_imm_seq(imm));
        return;
    }
    if (v->push_gather) {
        cli_gather_on_ack(v, word);
    } else if (word & PS_ACK_ERROR) {
        rf_status st = (rf_status)(-(int32_t)(uint32_t)word);
        push_error(v, st, "the ps could not apply it");
    } else if (v->push_sync) {
        if (word & PS_ACK_STALE)
            p->client->sync_stale++;
        else
            p->client->sync_accepted++;
        v->version = word & ~PS_ACK_STALE;
    } else {
        v->version = word;
    }
    v->push_acked = true;
    push_finish(v);
}

static bool var_idle(rf_ps_client *c, const void *v)
{
    (void)c;
    return !((const rf_ps_var *)v)->push_busy;
}

static bool ps_has_room(rf_ps_client *c, const void *pp)
{
    (void)c;
    const ps_cli_conn *p = pp;
    uint32_t limit = p->ps_recv_depth < PS_CLI_RECV_DEPTH ? p->ps_recv_depth
                                                          : PS_CLI_RECV_DEPTH;
    return !cli_conn_usable(p) || p->pushes_inflight + 2 < limit;
}

rf_status cli_push_wait_var(rf_ps_client *c, rf_ps_var *v, const char *what)
{
    rf_status st = RF_OK;
    if (v->push_busy)
        st = cli_wait_op(c, var_idle, v, what);
    if (st == RF_OK)
        st = cli_wait_op(c, ps_has_room, &c->conns[v->ps], what);
    return st;
}

static bool all_idle(rf_ps_client *c, const void *arg)
{
    (void)arg;
    return c->pushes_busy == 0;
}

/* The tag of a sync push: the var's registered word. */
static rf_status tag_word(rf_ps_var *v)
{
    if (v->sync_tag)
        return RF_OK;
    return cli_pool_alloc(v->client, PS_SPARSE_SYNC_HDR_BYTES, &v->sync_tag,
                          &v->sync_tag_mr);
}

void cli_push_begin(rf_ps_var *v, bool sync, bool gather)
{
    rf_ps_client *c = v->client;
    v->push_busy = true;
    v->push_sent = v->push_acked = false;
    v->push_sync = sync;
    v->push_gather = gather;
    v->push_seq++;
    c->pushes_busy++;
    c->conns[v->ps].pushes_inflight++;
}

/* Appends v's push of x (sync: the tag WRITE first) to wrs and counts it
 * in flight. */
static void push_start(rf_ps_var *v, const rf_ps_xfer *x, bool sync,
                       int64_t step, rf_wr *wrs, size_t *nw)
{
    cli_push_begin(v, sync, false);
    if (sync) {
        rf_put_le64(v->sync_tag, (uint64_t)step);
        wrs[(*nw)++] = (rf_wr){.op = RF_OP_WRITE,
                               .context = &v->tag_op,
                               .local = v->sync_tag,
                               .len = 8,
                               .local_mr = v->sync_tag_mr,
                               .remote_addr = v->inbox_addr,
                               .rkey = v->inbox_rkey};
    }
    wrs[(*nw)++] =
        (rf_wr){.op = RF_OP_WRITE_IMM,
                .context = &v->push_op,
                .local = x->buf,
                .len = x->len,
                .local_mr = x->mr,
                .remote_addr = v->inbox_addr + (sync ? PS_SYNC_TAG_BYTES : 0),
                .rkey = v->inbox_rkey,
                .imm = ps_imm_make(v->e.shard_id, v->push_seq)};
}

/* The pushes of g that go to ps, in the order given, batched in one post
 * as far as the shards are idle and the ps has room, waiting otherwise. */
static rf_status push_to_ps(rf_ps_client *c, size_t ps, const rf_ps_xfer *g,
                            size_t n, bool sync, int64_t step)
{
    ps_cli_conn *p = &c->conns[ps];
    rf_wr *wrs = c->rs_wrs;
    size_t i = 0;
    for (;;) {
        size_t nw = 0;
        for (; i < n; i++) {
            rf_ps_var *v = g[i].var;
            if (v->ps != ps)
                continue;
            if (v->push_busy || !ps_has_room(c, p))
                break;
            push_start(v, &g[i], sync, step, wrs, &nw);
        }
        if (nw) {
            size_t done = 0;
            rf_status st = cli_post_n(p, wrs, nw, &done);
            /* A var whose write_imm was not posted is not in flight (a tag
             * WRITE posted alone just completes). */
            for (size_t j = done; st != RF_OK && j < nw; j++) {
                const cli_op *op = wrs[j].context;
                if (op->kind != CLI_OP_PUSH)
                    continue;
                op->var->push_busy = false;
                c->pushes_busy--;
                p->pushes_inflight--;
            }
            if (st != RF_OK)
                return st;
            continue;
        }
        if (i == n)
            return RF_OK;
        /* The next shard is busy or the ps is full: wait. */
        rf_ps_var *v = g[i].var;
        const char *what = sync ? "rf_ps_push_sync" : "rf_ps_push_inbox";
        rf_status st = v->push_busy ? cli_wait_op(c, var_idle, v, what)
                                    : cli_wait_op(c, ps_has_room, p, what);
        if (st == RF_OK)
            st = cli_conn_check(p);
        if (st != RF_OK)
            return st;
    }
}

rf_status cli_push_ps(rf_ps_client *c, const rf_ps_xfer *g, size_t n, bool sync,
                      int64_t step)
{
    /* per var: (sync: the tag WRITE,) the gradient's WRITE_WITH_IMM, in
     * the client's work-request list (kept between calls) */
    rf_status st = cli_rows_scratch(c, (sync ? 2 : 1) * n + 1, 0);
    for (size_t i = 0; st == RF_OK && sync && i < n; i++)
        st = tag_word(g[i].var);
    for (size_t ps = 0; ps < c->num_ps && st == RF_OK; ps++)
        st = push_to_ps(c, ps, g, n, sync, step);
    return st;
}

rf_status rf_ps_push_wait(rf_ps_client *c)
{
    if (!c)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_ps_push_wait: NULL");
    cli_lock(c);
    rf_status st = cli_wait_op(c, all_idle, NULL, "rf_ps_push_wait");
    if (st == RF_OK && c->push_status != RF_OK)
        st = rf_error_set(c->push_status, "%s", c->push_err);
    c->push_status = RF_OK;
    cli_unlock(c);
    return st;
}

/* ---- read-modify-write --------------------------------------------------- */

enum {
    WM_IDLE = 0,
    WM_LOCK,      /* cmp_swap posted */
    WM_LOCK_WAIT, /* held elsewhere; retry at wm_retry_at */
    WM_READ,      /* (fetch_add +) read posted */
    WM_WRITE,     /* write (+ fetch_add + unlock) posted */
    WM_DONE,
    WM_FAILED,
};

/* Scratch words in the record copy's header (never read into). */
#define W_LOCK_OLD   0u
#define W_VER_OLD1   8u
#define W_VER_OLD2   16u
#define W_UNLOCK_OLD 24u

static uint64_t *scratch_word(rf_ps_var *v, uint32_t off)
{
    return (uint64_t *)(void *)(v->scratch + off);
}

rf_status cli_var_scratch(rf_ps_var *v)
{
    if (v->scratch)
        return RF_OK;
    return cli_pool_alloc(v->client, (size_t)v->e.record_bytes, &v->scratch,
                          &v->scratch_mr);
}

void cli_wm_on_completion(rf_ps_var *v, rf_status st)
{
    if (v->wm_pending)
        v->wm_pending--;
    if (st != RF_OK && v->wm_status == RF_OK)
        v->wm_status = st;
    if (st != RF_OK)
        cli_conn_fail(&v->client->conns[v->ps],
                      "an apply=worker update "
                      "failed: %s",
                      rf_status_string(st));
}

static void add_wr(rf_wr *list, size_t *n, rf_wr wr)
{
    list[(*n)++] = wr;
}

/* Appends the next stage's work of v to list (at most 3 requests). */
static void stage_post(rf_ps_var *v, rf_wr *list, size_t *n)
{
    uint64_t rmw_len = v->e.record_bytes - PS_REC_RMW_OFF;
    rf_wr base = {
        .context = &v->wm_op, .local_mr = v->scratch_mr, .rkey = v->rkey};
    rf_wr w;
    switch (v->wm_state) {
    case WM_LOCK:
        w = base;
        w.op = RF_OP_CMP_SWAP;
        w.local = scratch_word(v, W_LOCK_OLD);
        w.len = 8;
        w.remote_addr = v->rec_addr + PS_REC_LOCK_OFF;
        w.compare_add = 0;
        w.swap = v->client->lock_token;
        add_wr(list, n, w);
        break;
    case WM_READ:
        if (v->wm_locking) {
            w = base;
            w.op = RF_OP_FETCH_ADD;
            w.local = scratch_word(v, W_VER_OLD1);
            w.len = 8;
            w.remote_addr = v->rec_addr + PS_REC_VERSION_OFF;
            w.compare_add = 1;
            add_wr(list, n, w);
        }
        w = base;
        w.op = RF_OP_READ;
        w.local = v->scratch + PS_REC_RMW_OFF;
        w.len = (size_t)rmw_len;
        w.remote_addr = v->rec_addr + PS_REC_RMW_OFF;
        add_wr(list, n, w);
        break;
    case WM_WRITE:
        w = base;
        w.op = RF_OP_WRITE;
        w.local = v->scratch + PS_REC_RMW_OFF;
        w.len = (size_t)rmw_len;
        w.remote_addr = v->rec_addr + PS_REC_RMW_OFF;
        add_wr(list, n, w);
        w = base;
        w.op = RF_OP_FETCH_ADD;
        w.local = scratch_word(v, W_VER_OLD2);
        w.len = 8;
        w.remote_addr = v->rec_addr + PS_REC_VERSION_OFF;
        w.compare_add = v->wm_locking ? 1 : 2;
        add_wr(list, n, w);
        if (v->wm_locking) { /* release: CMP_AND_SWP token -> 0 */
            w = base;
            w.op = RF_OP_CMP_SWAP;
            w.local = scratch_word(v, W_UNLOCK_OLD);
            w.len = 8;
            w.remote_addr = v->rec_addr + PS_REC_LOCK_OFF;
            w.flags = RF_WR_FENCE;
            w.compare_add = v->client->lock_token;
            w.swap = 0;
            add_wr(list, n, w);
        }
        break;
    default:
        break;
    }
}

/* The local update on the scratch copy. */
static rf_status apply_local(rf_ps_var *v)
{
    unsigned char *rec = v->scratch;
    float *slots[RF_OPTIM_MAX_SLOTS] = {0};
    for (uint32_t i = 0; i < v->e.num_slots; i++)
        slots[i] = (float *)(void *)(rec + v->e.slot_off[i]);
    float *values = (float *)(void *)(rec + v->e.values_off);
    rf_optim_scalars sc;
    ps_rec_scalars_load(rec, &sc);
    size_t n = (size_t)(v->e.values_bytes / sizeof(float));
    rf_status st =
        rf_optim_apply(&v->spec.optim, values, slots, v->wm_grad, n, &sc);
    if (st != RF_OK)
        return st;
    rf_optim_finish_step(&v->spec.optim, &sc);
    ps_rec_scalars_store(rec, &sc);
    uint64_t updates;
    memcpy(&updates, rec + PS_REC_UPDATES_OFF, 8);
    updates++;
    memcpy(rec + PS_REC_UPDATES_OFF, &updates, 8);
    return RF_OK;
}

static uint32_t jitter(uint32_t us)
{
    static __thread uint64_t s = 0x9e3779b97f4a7c15ull;
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return us / 2 + (uint32_t)(s % (us / 2 + 1));
}

/* Advances v after its stage's completions all arrived; returns true if it
 * has new work to post. */
static bool wm_advance(rf_ps_var *v, char *err, size_t err_len, rf_status *fail)
{
    rf_ps_client *c = v->client;
    char name[340];
    if (v->wm_status != RF_OK) {
        snprintf(err, err_len,
                 "apply=worker update of '%s' part %u on %s "
                 "failed: %s",
                 v->spec.name, v->spec.part,
                 cli_ps_name(&c->conns[v->ps], name, sizeof name),
                 rf_status_string(v->wm_status));
        *fail = v->wm_status;
        v->wm_state = WM_FAILED;
        return false;
    }
    switch (v->wm_state) {
    case WM_LOCK: {
        uint64_t old = *scratch_word(v, W_LOCK_OLD);
        if (old == 0) {
            v->wm_state = WM_READ;
            return true;
        }
        long long now = rf_now_ms();
        if (now >= v->wm_deadline) {
            snprintf(err, err_len,
                     "apply=worker: the lock of '%s' part %u on %s is still "
                     "held by client %u after %d ms (a worker that died "
                     "holding it?)",
                     v->spec.name, v->spec.part,
                     cli_ps_name(&c->conns[v->ps], name, sizeof name),
                     (unsigned)(old & 0xffffffffu), c->opt.lock_timeout_ms);
            *fail = RF_ERR_TIMEOUT;
            v->wm_state = WM_FAILED;
            return false;
        }
        uint32_t us = jitter(v->wm_backoff_us);
        v->wm_retry_at = (long long)rf_now_us() + us;
        v->wm_backoff_us =
            v->wm_backoff_us * 2 > 2000 ? 2000 : v->wm_backoff_us * 2;
        v->wm_state = WM_LOCK_WAIT;
        return false;
    }
    case WM_READ: {
        rf_status st = apply_local(v);
        if (st != RF_OK) {
            snprintf(err, err_len, "apply=worker update of '%s' part %u: %s",
                     v->spec.name, v->spec.part, rf_error_message());
            *fail = st;
            /* Still release the lock: write back the unchanged copy. */
        }
        v->wm_state = WM_WRITE;
        return true;
    }
    case WM_WRITE:
        if (v->wm_locking &&
            *scratch_word(v, W_UNLOCK_OLD) != v->client->lock_token) {
            snprintf(err, err_len,
                     "apply=worker: releasing the lock of '%s' part %u on %s "
                     "found 0x%llx in it, not this client's 0x%llx: the lock "
                     "was not held while the update was written",
                     v->spec.name, v->spec.part,
                     cli_ps_name(&c->conns[v->ps], name, sizeof name),
                     (unsigned long long)*scratch_word(v, W_UNLOCK_OLD),
                     (unsigned long long)v->client->lock_token);
            *fail = RF_ERR_CORRUPT;
            v->wm_state = WM_FAILED;
            return false;
        }
        v->wm_state = WM_DONE;
        return false;
    default:
        return false;
    }
}

/* Every var of g starts its update (scratch, first stage to post). */
static rf_status wm_start(rf_ps_client *c, const rf_ps_xfer *g, size_t n,
                          bool locking)
{
    for (size_t i = 0; i < n; i++) {
        rf_ps_var *v = g[i].var;
        rf_status st = cli_var_scratch(v);
        if (st != RF_OK)
            return st;
        v->wm_state = locking ? WM_LOCK : WM_READ;
        v->wm_pending = 0;
        v->wm_status = RF_OK;
        v->wm_grad = g[i].buf;
        v->wm_locking = locking;
        v->wm_backoff_us = 20;
        v->wm_deadline = rf_now_ms() + c->opt.lock_timeout_ms;
        v->wm_fresh = true;
    }
    /* at most 3 requests per var and stage (stage_post) */
    return cli_rows_scratch(c, 3 * n + 1, 0);
}

static bool wm_finished(const rf_ps_var *v)
{
    return v->wm_state == WM_DONE || v->wm_state == WM_FAILED;
}

/* Posts every var's next stage (a lock retry whose time came too), one
 * batch per ps; work that could not be posted fails its var. */
static void wm_post(rf_ps_client *c, const rf_ps_xfer *g, size_t n)
{
    rf_wr *list = c->rs_wrs;
    for (size_t ps = 0; ps < c->num_ps; ps++) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            rf_ps_var *v = g[i].var;
            if (v->ps != ps)
                continue;
            if (v->wm_state == WM_LOCK_WAIT &&
                (long long)rf_now_us() >= v->wm_retry_at) {
                v->wm_state = WM_LOCK;
                v->wm_fresh = true;
            }
            if (v->wm_fresh) {
                size_t before = m;
                stage_post(v, list, &m);
                v->wm_pending = (uint32_t)(m - before);
                v->wm_fresh = false;
            }
        }
        if (!m)
            continue;
        size_t done = 0;
        rf_status st = cli_post_n(&c->conns[ps], list, m, &done);
        /* Work not posted will not complete: take it off. */
        for (size_t j = done; st != RF_OK && j < m; j++) {
            rf_ps_var *v = ((const cli_op *)list[j].context)->var;
            v->wm_pending--;
            if (v->wm_status == RF_OK)
                v->wm_status = st;
        }
    }
}

typedef struct wm_batch {
    const rf_ps_xfer *g;
    size_t n;
} wm_batch;

/* Some var can move on: its stage completed, or its lock retry is due;
 * or every var finished. */
static bool wm_ready(rf_ps_client *c, const void *arg)
{
    (void)c;
    const wm_batch *b = arg;
    bool active = false;
    for (size_t i = 0; i < b->n; i++) {
        const rf_ps_var *v = b->g[i].var;
        if (wm_finished(v))
            continue;
        active = true;
        if (v->wm_state == WM_LOCK_WAIT) {
            if ((long long)rf_now_us() >= v->wm_retry_at)
                return true;
        } else if (!v->wm_pending) {
            return true;
        }
    }
    return !active;
}

/* The earliest lock retry (0: none). */
static long long wm_wake_us(const rf_ps_xfer *g, size_t n)
{
    long long wake = 0;
    for (size_t i = 0; i < n; i++) {
        const rf_ps_var *v = g[i].var;
        if (v->wm_state == WM_LOCK_WAIT && (!wake || v->wm_retry_at < wake))
            wake = v->wm_retry_at;
    }
    return wake;
}

static rf_status push_worker(rf_ps_client *c, const rf_ps_xfer *g, size_t n,
                             bool locking, const char *what)
{
    rf_status st = wm_start(c, g, n, locking), result = RF_OK;
    if (st != RF_OK)
        return st;
    char err[400] = "";
    int limit = c->opt.op_timeout_ms + (locking ? c->opt.lock_timeout_ms : 0);
    long long deadline = rf_now_ms() + limit;
    wm_batch b = {.g = g, .n = n};
    for (;;) {
        wm_post(c, g, n);
        bool active = false;
        for (size_t i = 0; i < n; i++)
            active |= !wm_finished(g[i].var);
        if (!active)
            break;
        cli_wait_for w = {.done = wm_ready,
                          .arg = &b,
                          .deadline_ms = deadline,
                          .limit_ms = limit,
                          .wake_us = wm_wake_us(g, n),
                          .what = what};
        if ((st = cli_wait(c, &w)) == RF_ERR_TIMEOUT) {
            for (size_t i = 0; i < n; i++)
                g[i].var->wm_pending = 0;
            return st;
        }
        if (st != RF_OK) {
            result = st;
            break;
        }
        for (size_t i = 0; i < n; i++) {
            rf_ps_var *v = g[i].var;
            if (v->wm_pending || v->wm_state == WM_LOCK_WAIT || wm_finished(v))
                continue;
            rf_status fail = RF_OK;
            char e[400] = "";
            v->wm_fresh = wm_advance(v, e, sizeof e, &fail);
            if (fail != RF_OK && result == RF_OK) {
                result = fail;
                snprintf(err, sizeof err, "%s", e);
            }
        }
    }
    if (result != RF_OK)
        return err[0] ? rf_error_set(result, "%s", err) : result;
    return RF_OK;
}

/* ---- the entry points ----------------------------------------------------
 */

rf_status cli_push_check(rf_ps_client *c, const rf_ps_xfer *grads, size_t n,
                         bool sync, bool inbox, const char *what)
{
    rf_status st = RF_OK;
    for (size_t i = 0; i < n && st == RF_OK; i++) {
        uint64_t remote;
        const rf_ps_xfer *x = &grads[i];
        st = cli_check_xfer(c, x, true, &remote);
        if (st != RF_OK)
            break;
        rf_ps_var *v = x->var;
        bool sync_shard = v->e.spec.sync_n > 0;
        if (x->field != RF_PS_FIELD_VALUES || !v->spec.trainable)
            st = rf_error_set(RF_ERR_INVALID_ARG, "%s: '%s' part %u: %s", what,
                              v->spec.name, v->spec.part,
                              v->spec.trainable ? "gradients go to field VALUES"
                                                : "not trainable");
        else if (v->lay.max_push_rows)
            /* its inbox holds a sparse push, not a dense gradient */
            st = rf_error_set(RF_ERR_INVALID_ARG,
                              "%s: '%s' part %u is an embedding table: push "
                              "its rows with rf_ps_push_sparse_inbox or "
                              "rf_ps_update_sparse_rmw",
                              what, v->spec.name, v->spec.part);
        else if (sync_shard != sync)
            st = rf_error_set(
                RF_ERR_INVALID_ARG, "%s: '%s' part %u is %s shard%s", what,
                v->spec.name, v->spec.part,
                sync_shard ? "a sync-replicas" : "an async",
                sync_shard ? ": its gradients go to its accumulator "
                             "(rf_ps_push_sync)"
                           : ", without an accumulator (rf_ps_push_inbox)");
        else if (inbox && !v->inbox_rkey && !v->inbox_addr)
            st = rf_error_set(RF_ERR_INVALID_ARG,
                              "%s: '%s' part %u has no inbox on its ps", what,
                              v->spec.name, v->spec.part);
        else if ((uintptr_t)x->buf % sizeof(float))
            st = rf_error_set(RF_ERR_INVALID_ARG,
                              "%s: '%s' part %u: gradient buffer not float "
                              "aligned",
                              what, v->spec.name, v->spec.part);
        for (size_t j = 0; j < i && st == RF_OK; j++)
            if (grads[j].var == v)
                st = rf_error_set(RF_ERR_INVALID_ARG,
                                  "%s: '%s' part %u appears twice", what,
                                  v->spec.name, v->spec.part);
    }
    return st;
}

rf_status rf_ps_push_inbox(rf_ps_client *c, const rf_ps_xfer *grads, size_t n)
{
    if (!c || (n && !grads))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_push_inbox: NULL argument");
    cli_lock(c);
    rf_status st = cli_push_check(c, grads, n, false, true, "rf_ps_push_inbox");
    if (st == RF_OK && n)
        st = cli_push_ps(c, grads, n, false, 0);
    cli_unlock(c);
    return st;
}

static rf_status update_rmw(rf_ps_client *c, const rf_ps_xfer *grads, size_t n,
                            bool locking, const char *what)
{
    if (!c || (n && !grads))
        return rf_error_set(RF_ERR_INVALID_ARG, "%s: NULL argument", what);
    cli_lock(c);
    rf_status st = cli_push_check(c, grads, n, false, false, what);
    if (st == RF_OK && n)
        st = push_worker(c, grads, n, locking, what);
    cli_unlock(c);
    return st;
}

rf_status rf_ps_update_rmw(rf_ps_client *c, const rf_ps_xfer *grads, size_t n)
{
    return update_rmw(c, grads, n, false, "rf_ps_update_rmw");
}

rf_status rf_ps_update_rmw_locked(rf_ps_client *c, const rf_ps_xfer *grads,
                                  size_t n)
{
    return update_rmw(c, grads, n, true, "rf_ps_update_rmw_locked");
}
