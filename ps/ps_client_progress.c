/* ps/ps_client_progress.c: what the client's completions mean (one queue
 * for every endpoint; each completion's context is a cli_op naming the
 * owner it finishes: a group, a control send, a push, an apply=worker
 * stage, a receive), posting within the send-queue room, waiting for a
 * group, and the control RPC (one request at a time per ps, answered by a
 * reply with the same request id). Every wait here is a cli_wait
 * (ps_client_wait.c), which finds the completions and applies the one
 * timeout policy. */
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

static void dispatch_one(const rf_completion *x)
{
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

void cli_dispatch(rf_ps_client *c, const rf_completion *x, int n)
{
    for (int i = 0; i < n; i++)
        dispatch_one(&x[i]);
    c->reaped += (uint64_t)n;
    /* Waiters sleeping on progress_cv look at what they wait for. */
    if (n > 0 && c->cv_sleepers)
        pthread_cond_broadcast(&c->progress_cv);
}

/* ---- posting ------------------------------------------------------------ */

/* A wait for room in p's send queue, or (the provider was out of
 * resources) for any completion or 1 ms, whichever comes first. */
typedef struct room_wait {
    ps_cli_conn *conn;
    uint64_t reaped;   /* 0: room; else c->reaped + 1 when it began */
    long long wake_us; /* with reaped: try again by then anyway */
} room_wait;

static bool has_room(rf_ps_client *c, const void *arg)
{
    const room_wait *r = arg;
    if (!cli_conn_usable(r->conn))
        return true;
    if (r->reaped)
        return c->reaped + 1 != r->reaped ||
               (long long)rf_now_us() >= r->wake_us;
    return r->conn->sq_used < PS_CLI_SQ_DEPTH;
}

static rf_status wait_room(ps_cli_conn *p, bool any, long long deadline)
{
    rf_ps_client *c = p->client;
    char what[80];
    snprintf(what, sizeof what, "posting to ps task %zu (send queue full)",
             p->index);
    room_wait r = {.conn = p,
                   .reaped = any ? c->reaped + 1 : 0,
                   .wake_us = any ? (long long)rf_now_us() + 1000 : 0};
    cli_wait_for w = {.done = has_room,
                      .arg = &r,
                      .deadline_ms = deadline,
                      .limit_ms = c->opt.op_timeout_ms,
                      .wake_us = r.wake_us,
                      .what = what,
                      .conn = p};
    rf_status st = cli_wait(c, &w);
    return st != RF_OK ? st : cli_conn_check(p);
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
            if ((st = wait_room(p, false, deadline)) != RF_OK)
                return st;
            continue;
        }
        size_t k = n - done < room ? n - done : room, posted = 0;
        st = rf_post(p->ep, wrs + done, k, &posted);
        p->sq_used += (uint32_t)posted;
        done += posted;
        *done_out = done;
        if (st == RF_ERR_NO_RESOURCE) {
            if ((st = wait_room(p, true, deadline)) != RF_OK)
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

static bool group_done(rf_ps_client *c, const void *g)
{
    (void)c;
    return !((const cli_group *)g)->pending;
}

rf_status cli_group_wait(rf_ps_client *c, cli_group *g, const char *what)
{
    rf_status st = cli_wait_op(c, group_done, g, what);
    if (st == RF_ERR_TIMEOUT)
        g->pending = 0; /* the closes flushed it all; defensive */
    if (st != RF_OK)
        return st;
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

static bool reply_in(rf_ps_client *c, const void *arg)
{
    (void)c;
    const ps_cli_conn *p = arg;
    return p->reply_ready || !cli_conn_usable(p);
}

/* Waits for p's reply, p alone involved if it times out. */
static rf_status cli_wait_op_conn(ps_cli_conn *p,
                                  bool (*done)(rf_ps_client *, const void *),
                                  const char *what)
{
    rf_ps_client *c = p->client;
    int limit = c->opt.op_timeout_ms;
    cli_wait_for w = {.done = done,
                      .arg = p,
                      .deadline_ms = rf_now_ms() + limit,
                      .limit_ms = limit,
                      .what = what,
                      .conn = p};
    return cli_wait(c, &w);
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
    if (p->sq_used >= PS_CLI_SQ_DEPTH &&
        (st = wait_room(p, false, rf_now_ms() + c->opt.op_timeout_ms)) != RF_OK)
        return st;
    p->ctrl_op = (cli_op){.kind = CLI_OP_CTRL, .conn = p};
    st = rf_send(p->ep, cli_req_buf(p), len, p->mr, &p->ctrl_op);
    if (st != RF_OK) {
        cli_conn_fail(p, "sending %s: %s", ps_msg_type_name(req.type),
                      rf_error_message());
        return cli_conn_check(p);
    }
    p->sq_used++;
    char what[400];
    snprintf(what, sizeof what, "%s answering %s", name,
             ps_msg_type_name(req.type));
    if ((st = cli_wait_op_conn(p, reply_in, what)) != RF_OK)
        return st;
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
