/* ps/ps_client_readset.c: prepared read sets, the per-step pull with
 * per-variable waits. rf_ps_read_set_create checks every transfer once
 * (cli_check_xfer) and builds its READ work requests, grouped by ps; every
 * post refreshes each request's remote address and key from its handle (a
 * handle rf_ps_create / rf_ps_lookup refreshed after a ps restart moves),
 * posts each ps's requests in one rf_post batch and returns. Each transfer
 * has its own cli_group (pending 1 while in flight), so a wait is for one
 * transfer: a cli_wait (ps_client_wait.c) until that transfer's group is
 * done or op_timeout_ms passed; then the connection to that ps is closed,
 * which flushes every request still posted to it, so no completion can
 * outlive the set. Several threads may wait at once, and while another
 * thread's call runs: a wait takes the client's mutex but not the call
 * token, and lets go of the mutex while it sleeps, so a thread whose
 * transfer arrived returns while a transfer another thread waits for is
 * still in flight. Posting and waiting allocate
 * nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "ps/ps_client_internal.h"
#include "rdmaflow/status.h"

struct rf_ps_read_set {
    rf_ps_client *client;
    size_t n;
    rf_ps_xfer *x;   /* the transfers as given */
    uint64_t *off;   /* each transfer's field offset in its record */
    cli_group *g;    /* each transfer's completion: pending 1 in flight */
    bool *waited;    /* a wait saw transfer i of the last post finished */
    size_t unwaited; /* transfers of the last post no wait has seen done */
    bool posted;     /* a post happened */
    /* The work requests, grouped by ps: ps p's are wrs[first[p]] ..
     * wrs[first[p] + count[p] - 1]; request k is transfer order[k]. Empty
     * transfers (len 0) have none and complete at once. */
    rf_wr *wrs;
    cli_op *ops;
    size_t *order;
    size_t *first, *count;
};

static void set_free(rf_ps_read_set *s)
{
    if (!s)
        return;
    free(s->x), free(s->off), free(s->g), free(s->waited);
    free(s->wrs), free(s->ops), free(s->order);
    free(s->first), free(s->count);
    free(s);
}

rf_status rf_ps_read_set_create(rf_ps_client *c, const rf_ps_xfer *x, size_t n,
                                rf_ps_read_set **out)
{
    if (!c || (n && !x) || !out)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_read_set_create: NULL argument");
    *out = NULL;
    rf_ps_read_set *s = calloc(1, sizeof *s);
    size_t m = n ? n : 1, nps = c->num_ps;
    if (s) {
        s->client = c;
        s->n = n;
        s->x = calloc(m, sizeof *s->x);
        s->off = calloc(m, sizeof *s->off);
        s->g = calloc(m, sizeof *s->g);
        s->waited = calloc(m, sizeof *s->waited);
        s->wrs = calloc(m, sizeof *s->wrs);
        s->ops = calloc(m, sizeof *s->ops);
        s->order = calloc(m, sizeof *s->order);
        s->first = calloc(nps, sizeof *s->first);
        s->count = calloc(nps, sizeof *s->count);
    }
    if (!s || !s->x || !s->off || !s->g || !s->waited || !s->wrs || !s->ops ||
        !s->order || !s->first || !s->count) {
        set_free(s);
        return rf_error_set(RF_ERR_NO_MEMORY, "ps client: out of memory");
    }
    if (n)
        memcpy(s->x, x, n * sizeof *x);
    cli_lock(c);
    rf_status st = RF_OK;
    for (size_t i = 0; i < n; i++) {
        uint64_t remote = 0;
        if ((st = cli_check_xfer(c, &x[i], false, &remote)) == RF_OK &&
            x[i].var->lay.max_push_rows && x[i].field != RF_PS_FIELD_SCALARS)
            st = rf_error_set(RF_ERR_INVALID_ARG,
                              "'%s' part %u is an embedding table, whose rows "
                              "are row records: read them with "
                              "rf_ps_read_rows or rf_ps_read_row_range",
                              x[i].var->spec.name, x[i].var->spec.part);
        if (st != RF_OK) {
            st = rf_error_prefix(st, "rf_ps_read_set_create: transfer %zu", i);
            break;
        }
        s->off[i] = remote - x[i].var->rec_addr;
        s->waited[i] = true;
    }
    size_t used = 0;
    for (size_t ps = 0; st == RF_OK && ps < nps; ps++) {
        s->first[ps] = used;
        for (size_t i = 0; i < n; i++) {
            rf_ps_var *v = x[i].var;
            if (v->ps != ps || x[i].len == 0)
                continue;
            s->order[used] = i;
            s->ops[used] = (cli_op){.kind = CLI_OP_GROUP,
                                    .group = &s->g[i],
                                    .var = v,
                                    .conn = &c->conns[ps]};
            s->wrs[used] = (rf_wr){.op = RF_OP_READ,
                                   .context = &s->ops[used],
                                   .local = x[i].buf,
                                   .len = x[i].len,
                                   .local_mr = x[i].mr,
                                   .remote_addr = v->rec_addr + s->off[i],
                                   .rkey = v->rkey};
            used++;
        }
        s->count[ps] = used - s->first[ps];
    }
    cli_unlock(c);
    if (st != RF_OK) {
        set_free(s);
        return st;
    }
    *out = s;
    return RF_OK;
}

/* Transfer i failed without being posted (or gave up waiting). */
static void fail_transfer(rf_ps_read_set *s, size_t i, rf_status st,
                          const char *why)
{
    rf_ps_client *c = s->client;
    const rf_ps_var *v = s->x[i].var;
    char name[340];
    s->g[i].pending = 0;
    cli_group_fail(&s->g[i], st, "READ of '%s' part %u from %s: %s",
                   v->spec.name, v->spec.part,
                   cli_ps_name(&c->conns[v->ps], name, sizeof name), why);
}

rf_status rf_ps_read_set_post(rf_ps_read_set *s)
{
    if (!s)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_ps_read_set_post: NULL");
    rf_ps_client *c = s->client;
    cli_lock(c);
    if (s->unwaited) {
        size_t left = s->unwaited;
        cli_unlock(c);
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_read_set_post: %zu transfer%s of the "
                            "previous post %s not been waited for "
                            "(rf_ps_read_set_wait_all first)",
                            left, left == 1 ? "" : "s",
                            left == 1 ? "has" : "have");
    }
    for (size_t i = 0; i < s->n; i++) {
        s->g[i].pending = 0;
        s->g[i].status = RF_OK;
        s->g[i].err[0] = '\0';
        s->waited[i] = false;
    }
    s->unwaited = s->n;
    s->posted = true;

    /* As rf_ps_read: a stale handle or a ps not connected fails the post
     * before anything is posted. */
    rf_status st = RF_OK;
    char why[600] = "";
    for (size_t i = 0; i < s->n && st == RF_OK; i++) {
        rf_ps_var *v = s->x[i].var;
        char name[340];
        if (v->stale)
            st = rf_error_set(RF_ERR_ABORTED,
                              "'%s' part %u is gone: %s restarted; the chief "
                              "must recreate and restore it (rf_ps_create / "
                              "rf_ps_lookup refresh the handle)",
                              v->spec.name, v->spec.part,
                              cli_ps_name(&c->conns[v->ps], name, sizeof name));
        else
            st = cli_conn_check(&c->conns[v->ps]);
    }
    if (st != RF_OK) {
        snprintf(why, sizeof why, "%s", rf_error_message());
        char text[700];
        snprintf(text, sizeof text, "not posted (the post was refused: %s)",
                 why);
        for (size_t i = 0; i < s->n; i++)
            fail_transfer(s, i, st, text);
        cli_unlock(c);
        return rf_error_set(st, "rf_ps_read_set_post: nothing posted: %s", why);
    }

    rf_status first = RF_OK;
    for (size_t ps = 0; ps < c->num_ps; ps++) {
        size_t k0 = s->first[ps], cnt = s->count[ps];
        if (!cnt)
            continue;
        /* Every request counts as in flight before any is posted: posting
         * may handle completions (a full send queue). */
        for (size_t k = k0; k < k0 + cnt; k++) {
            size_t i = s->order[k];
            const rf_ps_var *v = s->x[i].var;
            s->g[i].pending = 1;
            s->wrs[k].remote_addr = v->rec_addr + s->off[i];
            s->wrs[k].rkey = v->rkey;
        }
        size_t done = 0;
        st = cli_post_n(&c->conns[ps], s->wrs + k0, cnt, &done);
        if (st == RF_OK)
            continue;
        char text[600];
        snprintf(text, sizeof text, "not posted: %s", rf_error_message());
        for (size_t k = k0 + done; k < k0 + cnt; k++)
            fail_transfer(s, s->order[k], st, text);
        if (first == RF_OK) {
            first = st;
            snprintf(why, sizeof why, "%s", text + strlen("not posted: "));
        }
    }
    cli_unlock(c);
    if (first != RF_OK)
        return rf_error_set(first,
                            "rf_ps_read_set_post: some transfers were not "
                            "posted: %s",
                            why);
    return RF_OK;
}

/* One transfer of a set, waited for. */
typedef struct rs_wait {
    rf_ps_read_set *s;
    size_t i;
} rs_wait;

static bool transfer_done(rf_ps_client *c, const void *arg)
{
    (void)c;
    const rs_wait *r = arg;
    return !r->s->g[r->i].pending;
}

/* Transfer i did not complete by the deadline: it fails with
 * RF_ERR_TIMEOUT (before the engine closes the connection to its ps,
 * flushing every request still posted to it, this set's and any other
 * caller's). */
static void expire_transfer(rf_ps_client *c, const void *arg)
{
    const rs_wait *r = arg;
    char text[200];
    snprintf(text, sizeof text,
             "no completion within %d ms; the connection was closed",
             c->opt.op_timeout_ms);
    fail_transfer(r->s, r->i, RF_ERR_TIMEOUT, text);
}

/* Waits (c->mu held, released while sleeping) until transfer i is done or
 * deadline; returns its status with its message (prefixed by what). */
static rf_status wait_locked(rf_ps_read_set *s, size_t i, long long deadline,
                             const char *what)
{
    rf_ps_client *c = s->client;
    cli_group *g = &s->g[i];
    size_t ps = s->x[i].var->ps;
    rs_wait r = {.s = s, .i = i};
    cli_wait_for w = {.done = transfer_done,
                      .arg = &r,
                      .deadline_ms = deadline,
                      .limit_ms = c->opt.op_timeout_ms,
                      .what = "a read set wait",
                      .conn = &c->conns[ps],
                      .expire = expire_transfer};
    rf_status st = cli_wait(c, &w);
    if (st == RF_ERR_TIMEOUT) {
        /* Defensive: the close flushed them all. */
        for (size_t j = 0; j < s->n; j++)
            if (s->g[j].pending && s->x[j].var->ps == ps)
                fail_transfer(s, j, RF_ERR_DISCONNECTED,
                              "the connection was closed after a timeout");
        st = RF_OK; /* the transfer's status says it */
    }
    if (st != RF_OK)
        return st; /* the completion queue failed: its message is set */
    if (!s->waited[i]) {
        s->waited[i] = true;
        s->unwaited--;
    }
    if (g->status != RF_OK)
        return rf_error_set(g->status, "%s: transfer %zu: %s", what, i, g->err);
    return RF_OK;
}

rf_status rf_ps_read_set_wait(rf_ps_read_set *s, size_t i)
{
    if (!s)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_ps_read_set_wait: NULL");
    if (i >= s->n)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_read_set_wait: transfer %zu of a set of %zu",
                            i, s->n);
    rf_ps_client *c = s->client;
    pthread_mutex_lock(&c->mu);
    rf_status st;
    if (!s->posted)
        st = rf_error_set(RF_ERR_INVALID_ARG,
                          "rf_ps_read_set_wait: nothing was posted "
                          "(rf_ps_read_set_post)");
    else
        st = wait_locked(s, i, rf_now_ms() + c->opt.op_timeout_ms,
                         "rf_ps_read_set_wait");
    pthread_mutex_unlock(&c->mu);
    return st;
}

/* Waits for every transfer (client held) with one deadline; the first
 * failure by index, its message set. */
static rf_status wait_all_locked(rf_ps_read_set *s, const char *what)
{
    rf_ps_client *c = s->client;
    if (!s->posted)
        return RF_OK;
    long long deadline = rf_now_ms() + c->opt.op_timeout_ms;
    rf_status first = RF_OK;
    char err[700] = "";
    for (size_t i = 0; i < s->n; i++) {
        rf_status st = wait_locked(s, i, deadline, what);
        if (st != RF_OK && first == RF_OK) {
            first = st;
            snprintf(err, sizeof err, "%s", rf_error_message());
        }
        if (st != RF_OK && s->g[i].pending)
            break; /* the completion queue failed */
    }
    if (first != RF_OK)
        return rf_error_set(first, "%s", err);
    return RF_OK;
}

rf_status rf_ps_read_set_wait_all(rf_ps_read_set *s)
{
    if (!s)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_read_set_wait_all: NULL");
    rf_ps_client *c = s->client;
    pthread_mutex_lock(&c->mu);
    rf_status st = wait_all_locked(s, "rf_ps_read_set_wait_all");
    pthread_mutex_unlock(&c->mu);
    return st;
}

void rf_ps_read_set_destroy(rf_ps_read_set *s)
{
    if (!s)
        return;
    rf_ps_client *c = s->client;
    pthread_mutex_lock(&c->mu);
    bool busy = false;
    for (size_t i = 0; i < s->n; i++)
        busy |= s->g[i].pending != 0;
    if (busy && wait_all_locked(s, "rf_ps_read_set_destroy") != RF_OK)
        RF_LOG_DEBUG("rf_ps_read_set_destroy: %s", rf_error_message());
    /* A failed completion queue is the only way something is still pending:
     * close what it was posted to, so nothing completes into freed memory. */
    for (size_t i = 0; i < s->n; i++)
        if (s->g[i].pending) {
            ps_cli_conn *p = &c->conns[s->x[i].var->ps];
            cli_conn_fail(p, "a read set was destroyed with reads in flight");
            cli_conn_close(p);
        }
    pthread_mutex_unlock(&c->mu);
    set_free(s);
}
