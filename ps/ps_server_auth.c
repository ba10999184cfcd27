/* ps/ps_server_auth.c: the ps side of cluster authentication and role
 * binding. At connect (listener thread): a client must offer
 * authentication exactly when this ps has a secret, and with bind_roles its
 * id must be a training worker's and only the chief's id may claim the
 * chief flag; a refusal is a reject whose text starts with PS_REJECT_AUTH.
 * On the connection (service thread), before anything else: AUTH_REQ ->
 * AUTH_CHALLENGE (the ps's nonce and proof), AUTH_PROOF -> AUTH_OK or an
 * ERROR_REPLY RF_ERR_AUTH and the connection closed. Any other message
 * before AUTH_OK drops the connection (the state table,
 * ps_server_conn_state.c, sees to it). Every refusal is logged with the
 * peer's address. */
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "ps/ps_auth.h"
#include "ps/ps_server_internal.h"

const char *ps_auth_admit(rf_ps_server *s, const ps_conn_hello *h,
                          const char *peer, char *text, size_t len)
{
    const rf_ps_server_options *o = &s->opt;
    bool offers = h->flags & PS_CONN_FLAG_AUTH;
    bool chief = h->flags & PS_CONN_FLAG_CHIEF;
    const char *reason = NULL;
    char why[200];
    if (o->secret && !offers) {
        reason = PS_REJECT_AUTH "this ps task requires a cluster secret";
        snprintf(why, sizeof why,
                 "this ps task requires a cluster secret and the client has "
                 "none");
    } else if (!o->secret && offers) {
        reason = PS_REJECT_AUTH "this ps task has no cluster secret";
        snprintf(why, sizeof why,
                 "the client has a cluster secret but this ps task has none");
    } else if (o->bind_roles && h->client_id >= o->num_workers) {
        snprintf(text, len, PS_REJECT_AUTH "client id %u is not a worker's",
                 h->client_id);
        reason = text;
        snprintf(why, sizeof why,
                 "client id %u is not a training worker's (the cluster has "
                 "%u: ids 0..%u)",
                 h->client_id, o->num_workers, o->num_workers - 1);
    } else if (o->bind_roles && chief && h->client_id != o->chief_id) {
        snprintf(text, len, PS_REJECT_AUTH "client id %u is not the chief",
                 h->client_id);
        reason = text;
        snprintf(why, sizeof why,
                 "client id %u claims the chief's role but the cluster's "
                 "chief is client id %u",
                 h->client_id, o->chief_id);
    }
    if (reason)
        RF_LOG_WARN("ps %d: refusing client %u from %s: %s", o->task_index,
                    h->client_id, peer, why);
    return reason;
}

static void transcript(const ps_server_conn *c, ps_auth_transcript *t)
{
    memcpy(t->client_nonce, c->client_nonce, PS_AUTH_NONCE);
    memcpy(t->ps_nonce, c->ps_nonce, PS_AUTH_NONCE);
    t->client_id = c->client_id;
    t->flags = PS_CONN_FLAG_AUTH | (c->chief ? PS_CONN_FLAG_CHIEF : 0);
    t->ps_index = c->srv->opt.task_index;
    t->incarnation = c->srv->incarnation;
}

bool ps_auth_on_req(ps_server_conn *c, uint32_t req_id,
                    const unsigned char *msg, size_t len)
{
    ps_auth_req q;
    if (ps_dec_auth_req(msg, len, &q) != RF_OK) {
        ps_conn_drop(c, rf_error_message());
        return false;
    }
    uint32_t flags = PS_CONN_FLAG_AUTH | (c->chief ? PS_CONN_FLAG_CHIEF : 0);
    if (q.client_id != c->client_id || q.flags != flags) {
        ps_conn_drop(c, "AUTH_REQ disagrees with the connect data");
        return false;
    }
    memcpy(c->client_nonce, q.nonce, PS_AUTH_NONCE);
    ps_auth_nonce(c->ps_nonce);
    ps_auth_transcript t;
    transcript(c, &t);
    ps_auth_challenge ch = {.ps_index = c->srv->opt.task_index,
                            .incarnation = c->srv->incarnation};
    memcpy(ch.nonce, c->ps_nonce, PS_AUTH_NONCE);
    ps_auth_mac(c->srv->opt.secret, PS_AUTH_BY_PS, &t, ch.mac);
    unsigned char *buf = ps_ctrl_reply_buf(c);
    size_t n;
    if (ps_enc_auth_challenge(buf, PS_MSG_MAX, req_id, &ch, &n) != RF_OK)
        return false;
    ps_conn_set_state(c, PS_CONN_WAIT_PROOF, "AUTH_CHALLENGE sent");
    return ps_ctrl_send(c, buf, n);
}

bool ps_auth_on_proof(ps_server_conn *c, uint32_t req_id,
                      const unsigned char *msg, size_t len)
{
    rf_ps_server *s = c->srv;
    ps_auth_proof p;
    if (ps_dec_auth_proof(msg, len, &p) != RF_OK) {
        ps_conn_drop(c, rf_error_message());
        return false;
    }
    ps_auth_transcript t;
    transcript(c, &t);
    char who[160];
    ps_conn_label(c, who, sizeof who);
    if (!ps_auth_verify(s->opt.secret, PS_AUTH_BY_WORKER, &t, p.mac)) {
        RF_LOG_WARN("ps %d: authentication of %s failed: its proof does not "
                    "match this ps task's cluster secret (a wrong secret)",
                    s->opt.task_index, who);
        PS_COUNT(s, refused_auth);
        ps_ctrl_refuse(c, req_id, RF_ERR_AUTH,
                       "authentication failed: the proof does not match this "
                       "ps task's cluster secret");
        return false;
    }
    /* only now may the peer use an rkey on this connection */
    if (rf_ep_enable_remote_access(c->ep) != RF_OK) {
        ps_conn_drop(c, rf_error_message());
        return false;
    }
    ps_conn_set_state(c, PS_CONN_WAIT_HELLO, "its proof verified");
    RF_LOG_INFO("ps %d: %s authenticated", s->opt.task_index, who);
    unsigned char *buf = ps_ctrl_reply_buf(c);
    size_t n;
    if (ps_enc_empty(buf, PS_MSG_MAX, PS_MSG_AUTH_OK, req_id, &n) != RF_OK)
        return false;
    return ps_ctrl_send(c, buf, n);
}
