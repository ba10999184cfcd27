/* ps/ps_server_ctrl.c: the ps side of the control plane. Decodes one
 * request, answers it (HELLO, REGIONS, DIR, CREATE, SHUTDOWN, LEAVE,
 * SHARD: the shard ledger on ps task 0; LEDGER: ps_server_ledger.c) or
 * with an
 * ERROR_REPLY for a request that is well formed but refused; a malformed
 * message or one the connection's state does not accept (the table in
 * ps_server_conn_state.c, asked before dispatch) drops the connection with
 * a log line naming the peer, its state and the fault. */
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "ps/ps_server_internal.h"
#include "rdmaflow/status.h"

unsigned char *ps_ctrl_reply_buf(ps_server_conn *c)
{
    uint32_t i = c->next_reply++ % PS_SRV_REPLY_BUFS;
    return c->mem + (size_t)PS_SRV_RECV_DEPTH * PS_REQ_MAX +
           (size_t)i * PS_MSG_MAX;
}

bool ps_ctrl_send(ps_server_conn *c, const unsigned char *buf, size_t len)
{
    rf_status st = rf_send(c->ep, buf, len, c->mr, &c->stag);
    if (st == RF_OK)
        c->sends_posted++;
    if (st != RF_OK) {
        char why[300];
        snprintf(why, sizeof why, "sending a reply: %s", rf_error_message());
        ps_conn_drop(c, why);
        return false;
    }
    return true;
}

bool ps_ctrl_reply_error(ps_server_conn *c, uint32_t req_id, rf_status status,
                         const char *text)
{
    unsigned char *buf = ps_ctrl_reply_buf(c);
    size_t len;
    if (ps_enc_error_reply(buf, PS_MSG_MAX, req_id, status, text, &len) !=
        RF_OK)
        return false;
    char who[160];
    ps_conn_label(c, who, sizeof who);
    RF_LOG_INFO("ps %d: refusing a request of %s: %s", c->srv->opt.task_index,
                who, text);
    return ps_ctrl_send(c, buf, len);
}

void ps_ctrl_refuse(ps_server_conn *c, uint32_t req_id, rf_status status,
                    const char *text)
{
    if (ps_ctrl_reply_error(c, req_id, status, text))
        ps_conn_set_state(c, PS_CONN_CLOSING, "refused");
}

#define reply_error ps_ctrl_reply_error

static bool on_hello(ps_server_conn *c, uint32_t req_id,
                     const unsigned char *msg, size_t len)
{
    rf_ps_server *s = c->srv;
    ps_hello h;
    if (ps_dec_hello(msg, len, &h) != RF_OK) {
        ps_conn_drop(c, rf_error_message());
        return false;
    }
    bool chief = h.flags & PS_CONN_FLAG_CHIEF;
    if (h.client_id != c->client_id || chief != c->chief) {
        ps_conn_drop(c, "HELLO disagrees with the connect data");
        return false;
    }
    /* Never evict on a duplicate id: the connected one keeps its inboxes
     * until its endpoint reports it dead (then it is closed and the id is
     * free). The newcomer is told to retry (RF_ERR_UNAVAILABLE): it may
     * be a restarted worker whose predecessor's death is not noticed
     * yet. */
    for (ps_server_conn *o = s->conns; o; o = o->next) {
        if (o != c && o->state == PS_CONN_LIVE &&
            o->client_id == c->client_id) {
            char text[PS_ERR_TEXT_MAX];
            snprintf(text, sizeof text,
                     "client id %u is connected already from %s; refusing "
                     "the new connection from %s",
                     c->client_id, o->peer, c->peer);
            RF_LOG_WARN("ps %d: %s", s->opt.task_index, text);
            PS_COUNT(s, refused_duplicate);
            ps_ctrl_refuse(c, req_id, RF_ERR_UNAVAILABLE, text);
            return false;
        }
    }
    /* the id (and the chief's role) is this task's: its token binds it
     * or matches its binding (ps_server_token.c) */
    char why[PS_ERR_TEXT_MAX];
    if (ps_token_bind(c, why, sizeof why)) {
        PS_COUNT(s, refused_auth);
        ps_ctrl_refuse(c, req_id, RF_ERR_AUTH, why);
        return false;
    }
    /* without a secret, one-sided access starts here: the task is known */
    if (!s->opt.secret && rf_ep_enable_remote_access(c->ep) != RF_OK) {
        ps_conn_drop(c, rf_error_message());
        return false;
    }
    if (!ps_admit_client(c)) {
        char text[PS_ERR_TEXT_MAX];
        snprintf(text, sizeof text, "ps task %d is full (%d clients)",
                 s->opt.task_index, s->opt.max_workers);
        RF_LOG_WARN("ps %d: refusing %s: %s", s->opt.task_index, c->peer, text);
        ps_ctrl_refuse(c, req_id, RF_ERR_UNAVAILABLE, text);
        return false;
    }
    ps_conn_set_state(c, PS_CONN_LIVE, "HELLO taken, a client slot held");
    ps_members_join(s, c->client_id);
    c->ring = h.ring;
    c->ring_slots = h.ring_slots;
    ps_hello_reply r = {.ps_index = s->opt.task_index,
                        .incarnation = s->incarnation,
                        .recv_depth = PS_SRV_RECV_DEPTH,
                        .num_regions = s->arena.n,
                        .num_shards = s->num_shards,
                        .globals = {.region = 0, .offset = 0}};
    unsigned char *buf = ps_ctrl_reply_buf(c);
    size_t n;
    if (ps_enc_hello_reply(buf, PS_MSG_MAX, req_id, &r, &n) != RF_OK)
        return false;
    return ps_ctrl_send(c, buf, n);
}

static bool on_regions(ps_server_conn *c, uint32_t req_id,
                       const ps_range_req *q)
{
    rf_ps_server *s = c->srv;
    if (q->start > s->arena.n)
        return reply_error(c, req_id, RF_ERR_INVALID_ARG,
                           "REGIONS_REQ starts past the last region");
    static __thread ps_regions_reply r;
    r.total = s->arena.n;
    r.start = q->start;
    r.count = s->arena.n - q->start;
    if (r.count > PS_REGIONS_PER_MSG)
        r.count = PS_REGIONS_PER_MSG;
    for (uint32_t i = 0; i < r.count; i++)
        r.regions[i] = s->arena.chunks[q->start + i].desc;
    unsigned char *buf = ps_ctrl_reply_buf(c);
    size_t n;
    if (ps_enc_regions_reply(buf, PS_MSG_MAX, req_id, &r, &n) != RF_OK)
        return false;
    return ps_ctrl_send(c, buf, n);
}

static bool on_dir(ps_server_conn *c, uint32_t req_id, const ps_range_req *q)
{
    rf_ps_server *s = c->srv;
    if (q->start > s->num_shards)
        return reply_error(c, req_id, RF_ERR_INVALID_ARG,
                           "DIR_REQ starts past the last shard");
    unsigned char *buf = ps_ctrl_reply_buf(c);
    ps_dir_writer w;
    ps_dir_begin(&w, buf, PS_MSG_MAX, req_id, s->incarnation, s->num_shards,
                 q->start);
    for (uint32_t i = q->start; i < s->num_shards; i++) {
        ps_entry e;
        rf_status st = ps_shard_entry(s, &s->shards[i], c->client_id, &e);
        if (st != RF_OK)
            return reply_error(c, req_id, st, rf_error_message());
        if (!ps_dir_add(&w, &e))
            break;
    }
    return ps_ctrl_send(c, buf, ps_dir_finish(&w));
}

static bool on_create(ps_server_conn *c, uint32_t req_id,
                      const unsigned char *msg, size_t len)
{
    rf_ps_server *s = c->srv;
    static __thread ps_spec spec;
    if (ps_dec_create_req(msg, len, &spec) != RF_OK) {
        ps_conn_drop(c, rf_error_message());
        return false;
    }
    if (spec.trainable)
        ps_spec_canonical_optim(&spec.optim);
    char text[PS_ERR_TEXT_MAX];
    if (!c->chief) {
        snprintf(text, sizeof text,
                 "client %u is not the chief: only the chief creates shards "
                 "(creating '%s' part %u)",
                 c->client_id, spec.name, spec.part);
        PS_COUNT(c->srv, refused_auth);
        return reply_error(c, req_id, RF_ERR_INVALID_ARG, text);
    }
    if (spec.trainable && rf_optim_validate(&spec.optim) != RF_OK) {
        snprintf(text, sizeof text, "creating '%s' part %u: %s", spec.name,
                 spec.part, rf_error_message());
        return reply_error(c, req_id, RF_ERR_INVALID_ARG, text);
    }
    ps_shard *sh = ps_shard_find(s, spec.name, spec.part);
    bool created = false;
    if (sh && !ps_spec_same(&sh->spec, &spec)) {
        char have[320], want[320];
        ps_spec_describe(&sh->spec, have, sizeof have);
        ps_spec_describe(&spec, want, sizeof want);
        snprintf(text, sizeof text,
                 "variable '%s' part %u exists on ps task %d with %s; "
                 "requested %s",
                 spec.name, spec.part, s->opt.task_index, have, want);
        return reply_error(c, req_id, RF_ERR_INVALID_ARG, text);
    }
    if (!sh) {
        rf_status st = ps_shard_create(s, &spec, &sh);
        if (st != RF_OK) {
            snprintf(text, sizeof text, "creating '%s' part %u: %s", spec.name,
                     spec.part, rf_error_message());
            return reply_error(c, req_id, st, text);
        }
        created = true;
        char desc[256];
        ps_spec_describe(&spec, desc, sizeof desc);
        RF_LOG_INFO("ps %d: created shard %u '%s' part %u: %s (%llu bytes)",
                    s->opt.task_index, sh->id, spec.name, spec.part, desc,
                    (unsigned long long)sh->layout.record_bytes);
    }
    static __thread ps_create_reply r;
    r.created = created;
    rf_status st = ps_shard_entry(s, sh, c->client_id, &r.entry);
    if (st != RF_OK)
        return reply_error(c, req_id, st, rf_error_message());
    unsigned char *buf = ps_ctrl_reply_buf(c);
    size_t n;
    if (ps_enc_create_reply(buf, PS_MSG_MAX, req_id, &r, &n) != RF_OK)
        return false;
    return ps_ctrl_send(c, buf, n);
}

static bool on_shutdown(ps_server_conn *c, uint32_t req_id)
{
    /* c->chief: the chief's role is bound to the task that first said
     * HELLO as the chief (ps_server_token.c), so this is that chief or its
     * proven restart; anyone else is refused (reply_error logs the peer) */
    if (!c->chief) {
        char who[160];
        ps_conn_label(c, who, sizeof who);
        RF_LOG_WARN("ps %d: refusing SHUTDOWN from %s: not the chief",
                    c->srv->opt.task_index, who);
        PS_COUNT(c->srv, refused_auth);
        return reply_error(c, req_id, RF_ERR_INVALID_ARG,
                           "only the chief may shut a ps task down");
    }
    unsigned char *buf = ps_ctrl_reply_buf(c);
    size_t n;
    if (ps_enc_empty(buf, PS_MSG_MAX, PS_MSG_SHUTDOWN_REPLY, req_id, &n) !=
        RF_OK)
        return false;
    char who[160];
    ps_conn_label(c, who, sizeof who);
    RF_LOG_INFO("ps %d: SHUTDOWN from %s", c->srv->opt.task_index, who);
    ps_sync_log_stats(c->srv);
    const ps_ledger *l = &c->srv->ledger;
    if (l->set)
        RF_LOG_INFO("ps %d: shard ledger: %u epochs done, dealing epoch %u "
                    "(%u of %u shards dealt), %llu shards and %llu batches "
                    "recorded trained, %llu shards returned",
                    c->srv->opt.task_index, ps_ledger_epochs_done(l), l->epoch,
                    l->cursor, l->num_shards,
                    (unsigned long long)l->shards_done,
                    (unsigned long long)l->batches_done,
                    (unsigned long long)l->returned);
    c->srv->shutdown = true;
    return ps_ctrl_send(c, buf, n);
}

/* An elastic worker leaves the job: no longer a member (ps task 0's chief
 * stops waiting for it at the end). */
static bool on_leave(ps_server_conn *c, uint32_t req_id)
{
    unsigned char *buf = ps_ctrl_reply_buf(c);
    size_t n;
    if (ps_enc_empty(buf, PS_MSG_MAX, PS_MSG_LEAVE_REPLY, req_id, &n) != RF_OK)
        return false;
    ps_members_leave(c->srv, c->client_id);
    ps_token_forget(c->srv, c->client_id); /* a new task may take its id */
    return ps_ctrl_send(c, buf, n);
}

/* The shard ledger (ps task 0): progress recorded, the next batch dealt.
 * A geometry that differs from the ledger's is refused (an ERROR_REPLY
 * naming both; the connection stays). */
static bool on_shard(ps_server_conn *c, uint32_t req_id,
                     const unsigned char *msg, size_t len)
{
    rf_ps_server *s = c->srv;
    ps_shard_req q;
    if (ps_dec_shard_req(msg, len, &q) != RF_OK) {
        ps_conn_drop(c, rf_error_message());
        return false;
    }
    if (s->opt.task_index != 0)
        return reply_error(c, req_id, RF_ERR_INVALID_ARG,
                           "the shard ledger is on ps task 0");
    ps_shard_reply r;
    rf_status st =
        ps_ledger_request(&s->ledger, c->client_id, &q.geom,
                          q.has_done ? &q.done : NULL, &r.next, &r.stale);
    if (st != RF_OK)
        return reply_error(c, req_id, st, rf_error_message());
    if (r.stale)
        RF_LOG_WARN("ps 0: client %u reported shard %u of epoch %u, which "
                    "was returned to the ledger while it was away",
                    c->client_id, q.done.shard, q.done.epoch);
    unsigned char *buf = ps_ctrl_reply_buf(c);
    size_t n;
    if (ps_enc_shard_reply(buf, PS_MSG_MAX, req_id, &r, &n) != RF_OK)
        return false;
    return ps_ctrl_send(c, buf, n);
}

bool ps_ctrl_handle(ps_server_conn *c, const unsigned char *msg, size_t len)
{
    ps_msg_hdr h;
    if (ps_dec_hdr(msg, len, &h) != RF_OK) {
        ps_conn_drop(c, rf_error_message());
        return false;
    }
    /* the state table decides what this phase of the connection handles */
    if (!ps_conn_accepts(c, h.type))
        return false;
    ps_range_req q;
    switch (h.type) {
    case PS_MSG_AUTH_REQ:
        return ps_auth_on_req(c, h.req_id, msg, len);
    case PS_MSG_AUTH_PROOF:
        return ps_auth_on_proof(c, h.req_id, msg, len);
    case PS_MSG_HELLO:
        return on_hello(c, h.req_id, msg, len);
    case PS_MSG_REGIONS_REQ:
    case PS_MSG_DIR_REQ:
        if (ps_dec_range_req(msg, len, h.type, &q) != RF_OK)
            break;
        return h.type == PS_MSG_DIR_REQ ? on_dir(c, h.req_id, &q)
                                        : on_regions(c, h.req_id, &q);
    case PS_MSG_CREATE_REQ:
        return on_create(c, h.req_id, msg, len);
    case PS_MSG_SHUTDOWN_REQ:
        if (ps_dec_empty(msg, len, PS_MSG_SHUTDOWN_REQ) != RF_OK)
            break;
        return on_shutdown(c, h.req_id);
    case PS_MSG_LEAVE_REQ:
        if (ps_dec_empty(msg, len, PS_MSG_LEAVE_REQ) != RF_OK)
            break;
        return on_leave(c, h.req_id);
    case PS_MSG_SHARD_REQ:
        return on_shard(c, h.req_id, msg, len);
    case PS_MSG_LEDGER_REQ:
        return ps_ctrl_ledger(c, h.req_id, msg, len);
    default: /* the table accepts nothing else */
        ps_conn_drop(c, "a message the state table accepts has no handler");
        return false;
    }
    ps_conn_drop(c, rf_error_message());
    return false;
}
