/* ps/ps_client_progress.c: the client's completion handling (one
 * queue for every endpoint; each completion's context is a cli_op saying
 * what it finishes), bounded waits, posting within the send-queue room and
 * the control RPC (one request at a time per ps, answered by a reply with
 * the same request id). A wait that times out closes the connections that
 * still have work posted, so no completion can outlive the caller's state. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "ps/ps_client_internal.h"
#include "rdmaflow/status.h"

void cli_group_fail(cli_group *g, rf_status st, const char *fmt, ...)
{
    if (g->status != RF_OK)
        return;
    g->status = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->err, sizeof g->err, fmt, ap);
    va_end(ap);
}

static const char *op_name(rf_op op)
{
    switch (op) {
    case RF_OP_READ:
        return "READ";
    case RF_OP_WRITE:
        return "WRITE";
    case RF_OP_WRITE_IMM:
        return "WRITE_WITH_IMM";
    case RF_OP_FETCH_ADD:
        return "FETCH_AND_ADD";
    case RF_OP_CMP_SWAP:
        return "CMP_AND_SWP";
    case RF_OP_SEND:
        return "SEND";
    default:
        return "receive";
    }
}

static void on_recv(ps_cli_conn *p, const cli_op *op, const rf_completion *x)
{
    if (x->ep != p->ep || !p->ep)
        return; /* flushed from an endpoint already closed */
    if (x->status != RF_OK) {
        cli_conn_fail(p, "a receive failed: %s", rf_status_string(x->status));
        return;
    }
    if (x->op == RF_OP_RECV_WRITE_IMM) {
        cli_push_on_ack(p, x->imm);
        if (!cli_conn_usable(p))
            return;
        unsigned char *buf = p->mem + (size_t)op->index * PS_MSG_MAX;
        rf_status st =
            rf_post_recv(p->ep, buf, PS_MSG_MAX, p->mr, &p->rop[op->index]);
        if (st != RF_OK)
            cli_conn_fail(p, "reposting a receive: %s", rf_error_message());
        return;
    }
    if (p->reply_ready) {
        cli_conn_fail(p, "protocol error: a second message arrived before "
                         "the reply was consumed");
        return;
    }
    p->reply_ready = true;
    p->reply_index = op->index;
    p->reply_len = x->len;
}

static void dispatch(rf_ps_client *c, const rf_completion *x)
{
    (void)c;
    cli_op *op = x->context;
    ps_cli_conn *p = op->conn;
    if (op->kind == CLI_OP_RECV) {
        on_recv(p, op, x);
        return;
    }
    if (p->sq_used)
        p->sq_used--;
    char name[340];
    switch (op->kind) {
    case CLI_OP_CTRL:
        if (x->status != RF_OK)
            cli_conn_fail(p, "a control SEND failed: %s",
                          rf_status_string(x->status));
        break;
    case CLI_OP_GROUP:
        if (op->group->pending)
            op->group->pending--;
        if (x->status != RF_OK) {
            cli_ps_name(p, name, sizeof name);
            if (op->var)
                cli_group_fail(
                    op->group, x->status, "%s of '%s' part %u on %s failed: %s",
                    op_name(x->op), op->var->spec.name, op->var->spec.part,
                    name, rf_status_string(x->status));
            else
                cli_group_fail(op->group, x->status, "%s on %s failed: %s",
                               op_name(x->op), name,
                               rf_status_string(x->status));
            cli_conn_fail(p, "%s failed: %s", op_name(x->op),
                          rf_status_string(x->status));
        }
        break;
    case CLI_OP_PUSH:
        cli_push_on_send(op->var, x->status);
        break;
    case CLI_OP_WM:
        cli_wm_on_completion(op->var, x->status);
        break;
    case CLI_OP_TAG: /* its write_imm, behind it, reports the push */
        if (x->status != RF_OK)
            cli_conn_fail(p,
                          "a push's WRITE before its write_imm (sync tag, "
                          "sparse indices or rows) failed: %s",
                          rf_status_string(x->status));
        break;
    default:
        break;
    }
}

/* Read-set waiters sleep on progress_cv between their turns at handling
 * completions: whoever handled some wakes them to look at their transfers. */
static void wake_waiters(rf_ps_client *c)
{
    if (c->rs_waiters)
        pthread_cond_broadcast(&c->progress_cv);
}

void cli_drain(rf_ps_client *c)
{
    rf_completion comps[64];
    for (;;) {
        int n = rf_cq_poll(c->cq, comps, 64);
        if (n <= 0)
            return;
        for (int i = 0; i < n; i++)
            dispatch(c, &comps[i]);
        wake_waiters(c);
    }
}

rf_status cli_progress(rf_ps_client *c, int timeout_ms)
{
    rf_completion comps[64];
    int n = timeout_ms > 0 ? rf_cq_wait(c->cq, comps, 64, timeout_ms)
                           : rf_cq_poll(c->cq, comps, 64);
    if (n == RF_ERR_TIMEOUT)
        return RF_OK;
    if (n < 0) {
        char why[400];
        snprintf(why, sizeof why, "%s", rf_error_message());
        return rf_error_set((rf_status)n, "ps client: completion queue: %s",
                            why);
    }
    for (int i = 0; i < n; i++)
        dispatch(c, &comps[i]);
    if (n > 0)
        wake_waiters(c);
    return RF_OK;
}

static rf_status post_some(ps_cli_conn *p, rf_wr *wrs, size_t n,
                           size_t *done_out)
{
    rf_ps_client *c = p->client;
    size_t done = 0;
    *done_out = 0;
    long long deadline = rf_now_ms() + c->opt.op_timeout_ms;
    while (done < n) {
        rf_status st = cli_conn_check(p);
        if (st != RF_OK)
            return st;
        uint32_t room = PS_CLI_SQ_DEPTH - p->sq_used;
        if (room == 0) {
            if (rf_now_ms() > deadline)
                return rf_error_set(RF_ERR_TIMEOUT,
                                    "ps client: send queue to ps task %zu "
                                    "stayed full",
                                    p->index);
            if ((st = cli_progress(c, 5)) != RF_OK)
                return st;
            continue;
        }
        size_t k = n - done < room ? n - done : room, posted = 0;
        st = rf_post(p->ep, wrs + done, k, &posted);
        p->sq_used += (uint32_t)posted;
        done += posted;
        *done_out = done;
        if (st == RF_ERR_NO_RESOURCE) {
            if ((st = cli_progress(c, 1)) != RF_OK)
                return st;
            continue;
        }
        if (st != RF_OK) {
            cli_conn_fail(p, "posting: %s", rf_error_message());
            return cli_conn_check(p);
        }
    }
    return RF_OK;
}

rf_status cli_post(ps_cli_conn *p, rf_wr *wrs, size_t n)
{
    size_t done;
    return post_some(p, wrs, n, &done);
}

rf_status cli_post_n(ps_cli_conn *p, rf_wr *wrs, size_t n, size_t *done)
{
    return post_some(p, wrs, n, done);
}

rf_status cli_post_group(ps_cli_conn *p, cli_group *g, rf_wr *wrs, size_t n)
{
    size_t done;
    g->pending += (uint32_t)n;
    rf_status st = post_some(p, wrs, n, &done);
    if (st != RF_OK) {
        g->pending -= (uint32_t)(n - done);
        cli_group_fail(g, st, "%s", rf_error_message());
    }
    return st;
}

/* Closes every connection with work still posted (after a timeout). */
static void close_busy(rf_ps_client *c, const char *what, int ms)
{
    for (size_t i = 0; i < c->num_ps; i++) {
        ps_cli_conn *p = &c->conns[i];
        if (p->ep && p->sq_used) {
            cli_conn_fail(p, "%s timed out after %d ms", what, ms);
            cli_conn_close(p);
        }
    }
}

rf_status cli_group_wait(rf_ps_client *c, cli_group *g, const char *what)
{
    int limit = c->opt.op_timeout_ms;
    long long deadline = rf_now_ms() + limit;
    while (g->pending) {
        long long left = deadline - rf_now_ms();
        if (left <= 0) {
            close_busy(c, what, limit);
            while (g->pending) /* flushed by the closes; defensive */
                if (cli_progress(c, 0) != RF_OK)
                    break;
            if (g->pending)
                g->pending = 0;
            return rf_error_set(RF_ERR_TIMEOUT,
                                "%s: no completion within %d ms; the "
                                "connections involved were closed",
                                what, limit);
        }
        rf_status st = cli_progress(c, left > 100 ? 100 : (int)left);
        if (st != RF_OK)
            return st;
    }
    if (g->status != RF_OK)
        return rf_error_set(g->status, "%s: %s", what, g->err);
    return RF_OK;
}

/* ---- control RPC ------------------------------------------------------- */

unsigned char *cli_req_buf(ps_cli_conn *p)
{
    return p->mem + (size_t)PS_CLI_RECV_DEPTH * PS_MSG_MAX;
}

uint32_t cli_next_req_id(ps_cli_conn *p)
{
    return ++p->next_req;
}

rf_status cli_post_receives(ps_cli_conn *p)
{
    for (uint32_t i = 0; i < PS_CLI_RECV_DEPTH; i++) {
        p->rop[i] = (cli_op){.kind = CLI_OP_RECV, .index = i, .conn = p};
        rf_status st = rf_post_recv(p->ep, p->mem + (size_t)i * PS_MSG_MAX,
                                    PS_MSG_MAX, p->mr, &p->rop[i]);
        if (st != RF_OK)
            return st;
    }
    return RF_OK;
}

void cli_rpc_done(ps_cli_conn *p)
{
    if (!p->reply_ready)
        return;
    p->reply_ready = false;
    if (!cli_conn_usable(p) || !p->ep)
        return;
    uint32_t i = p->reply_index;
    rf_status st = rf_post_recv(p->ep, p->mem + (size_t)i * PS_MSG_MAX,
                                PS_MSG_MAX, p->mr, &p->rop[i]);
    if (st != RF_OK)
        cli_conn_fail(p, "reposting a receive: %s", rf_error_message());
}

static rf_status protocol_error(ps_cli_conn *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static rf_status protocol_error(ps_cli_conn *p, const char *fmt, ...)
{
    char text[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    cli_conn_fail(p, "protocol error: %s", text);
    cli_conn_close(p);
    char name[340];
    return rf_error_set(RF_ERR_CORRUPT, "%s: protocol error: %s",
                        cli_ps_name(p, name, sizeof name), text);
}

rf_status cli_rpc(ps_cli_conn *p, size_t len, uint16_t want,
                  const unsigned char **reply, size_t *reply_len)
{
    rf_ps_client *c = p->client;
    char name[340];
    cli_ps_name(p, name, sizeof name);
    rf_status st = cli_conn_check_request(p, len);
    if (st != RF_OK)
        return st;
    if (p->reply_ready)
        return protocol_error(p, "an unrequested message is pending");
    ps_msg_hdr req;
    if (ps_dec_hdr(cli_req_buf(p), len, &req) != RF_OK)
        return rf_error_set(RF_ERR_INVALID_ARG, "ps client: bad request");
    while (p->sq_used >= PS_CLI_SQ_DEPTH)
        if ((st = cli_progress(c, 5)) != RF_OK)
            return st;
    p->ctrl_op = (cli_op){.kind = CLI_OP_CTRL, .conn = p};
    st = rf_send(p->ep, cli_req_buf(p), len, p->mr, &p->ctrl_op);
    if (st != RF_OK) {
        cli_conn_fail(p, "sending %s: %s", ps_msg_type_name(req.type),
                      rf_error_message());
        return cli_conn_check(p);
    }
    p->sq_used++;
    int limit = c->opt.op_timeout_ms;
    long long deadline = rf_now_ms() + limit;
    while (!p->reply_ready && cli_conn_usable(p)) {
        long long left = deadline - rf_now_ms();
        if (left <= 0) {
            cli_conn_fail(p, "no answer to %s within %d ms",
                          ps_msg_type_name(req.type), limit);
            cli_conn_close(p);
            return rf_error_set(RF_ERR_TIMEOUT,
                                "%s did not answer %s within %d ms", name,
                                ps_msg_type_name(req.type), limit);
        }
        if ((st = cli_progress(c, left > 100 ? 100 : (int)left)) != RF_OK)
            return st;
    }
    if (!p->reply_ready)
        return cli_conn_check(p);
    const unsigned char *buf = p->mem + (size_t)p->reply_index * PS_MSG_MAX;
    ps_msg_hdr h;
    if (ps_dec_hdr(buf, p->reply_len, &h) != RF_OK) {
        char why[400];
        snprintf(why, sizeof why, "%s", rf_error_message());
        return protocol_error(p, "%s", why);
    }
    if (h.req_id != req.req_id)
        return protocol_error(p, "reply to request %u, expected %u", h.req_id,
                              req.req_id);
    if (h.type == PS_MSG_ERROR_REPLY) {
        static __thread ps_error_reply e;
        st = ps_dec_error_reply(buf, p->reply_len, &e);
        cli_rpc_done(p);
        if (st != RF_OK) {
            char why[400];
            snprintf(why, sizeof why, "%s", rf_error_message());
            return protocol_error(p, "%s", why);
        }
        return rf_error_set((rf_status)e.status, "%s: %s", name, e.text);
    }
    if (h.type != want)
        return protocol_error(p, "got %s, expected %s",
                              ps_msg_type_name(h.type), ps_msg_type_name(want));
    *reply = buf;
    *reply_len = p->reply_len;
    return RF_OK;
}
