/* ps/ps_client_auth.c: the worker side of cluster authentication, run on a
 * fresh connection before HELLO (which carries the ack ring's rkey):
 * AUTH_REQ with this client's nonce and identity; the ps's AUTH_CHALLENGE
 * must carry its task index and incarnation as the welcome did and a proof
 * that verifies with this task's key, else the connect fails with
 * RF_ERR_AUTH (the worker still sends its own proof first, so the ps logs
 * the wrong secret too); then AUTH_PROOF, answered by AUTH_OK. Also the
 * connector's reading of an authentication refusal at connect time. */
#include <stdio.h>
#include <string.h>

#include "ps/ps_auth.h"
#include "ps/ps_client_internal.h"

rf_status cli_auth_refused(const ps_cli_conn *p, const char *data, size_t len)
{
    const rf_ps_client *c = p->client;
    size_t plen = strlen(PS_REJECT_AUTH);
    char name[340];
    cli_ps_name(p, name, sizeof name);
    const char *why = data + plen;
    int wlen = (int)(len - plen);
    if (c->opt.secret && strstr(why, "has no cluster secret"))
        return rf_error_set(RF_ERR_AUTH,
                            "%s has no cluster secret but this task has one",
                            name);
    if (!c->opt.secret && strstr(why, "requires a cluster secret"))
        return rf_error_set(RF_ERR_AUTH,
                            "%s requires a cluster secret but this task has "
                            "none (--cluster_secret_file, "
                            "RF_CLUSTER_SECRET_FILE)",
                            name);
    return rf_error_set(
        RF_ERR_AUTH, "%s refused this task (client id %u%s): %.*s", name,
        c->opt.client_id, c->opt.is_chief ? ", chief" : "", wlen, why);
}

rf_status cli_authenticate(ps_cli_conn *p, const ps_conn_welcome *w)
{
    rf_ps_client *c = p->client;
    char name[340];
    cli_ps_name(p, name, sizeof name);
    ps_auth_transcript t = {.client_id = c->opt.client_id,
                            .flags = PS_CONN_FLAG_AUTH |
                                     (c->opt.is_chief ? PS_CONN_FLAG_CHIEF : 0),
                            .ps_index = w->ps_index,
                            .incarnation = w->incarnation};
    ps_auth_req q = {.client_id = t.client_id, .flags = t.flags};
    ps_auth_nonce(q.nonce);
    memcpy(t.client_nonce, q.nonce, PS_AUTH_NONCE);
    size_t len;
    rf_status st = ps_enc_auth_req(cli_req_buf(p), PS_REQ_MAX,
                                   cli_next_req_id(p), &q, &len);
    if (st != RF_OK)
        return st;
    const unsigned char *reply;
    size_t rlen;
    if ((st = cli_rpc(p, len, PS_MSG_AUTH_CHALLENGE, &reply, &rlen)) != RF_OK)
        return st;
    ps_auth_challenge ch;
    st = ps_dec_auth_challenge(reply, rlen, &ch);
    cli_rpc_done(p);
    if (st != RF_OK) {
        char why[400];
        snprintf(why, sizeof why, "%s", rf_error_message());
        cli_conn_fail(p, "protocol error: %s", why);
        return rf_error_set(RF_ERR_CORRUPT, "%s: protocol error: %s", name,
                            why);
    }
    if (ch.ps_index != w->ps_index || ch.incarnation != w->incarnation) {
        cli_conn_fail(p, "AUTH_CHALLENGE names another ps");
        return rf_error_set(
            RF_ERR_AUTH,
            "%s: its AUTH_CHALLENGE names ps task %d "
            "incarnation 0x%016llx, the welcome ps task %d "
            "0x%016llx",
            name, (int)ch.ps_index, (unsigned long long)ch.incarnation,
            (int)w->ps_index, (unsigned long long)w->incarnation);
    }
    memcpy(t.ps_nonce, ch.nonce, PS_AUTH_NONCE);
    bool ps_ok = ps_auth_verify(c->opt.secret, PS_AUTH_BY_PS, &t, ch.mac);
    /* Our proof goes out either way: with a wrong secret on either side
     * the ps then logs the failure as well. */
    ps_auth_proof proof;
    ps_auth_mac(c->opt.secret, PS_AUTH_BY_WORKER, &t, proof.mac);
    if ((st = ps_enc_auth_proof(cli_req_buf(p), PS_REQ_MAX, cli_next_req_id(p),
                                &proof, &len)) != RF_OK)
        return st;
    st = cli_rpc(p, len, PS_MSG_AUTH_OK, &reply, &rlen);
    if (!ps_ok) {
        /* The ps refuses the proof in turn (ERROR_REPLY RF_ERR_AUTH). */
        if (st == RF_OK)
            cli_rpc_done(p);
        cli_conn_fail(p, "the ps's authentication proof does not verify");
        return rf_error_set(RF_ERR_AUTH,
                            "%s failed authentication: its proof does not "
                            "match this task's cluster secret (the tasks have "
                            "different secrets)",
                            name);
    }
    if (st != RF_OK)
        return st;
    cli_rpc_done(p);
    if ((st = rf_ep_enable_remote_access(p->ep)) != RF_OK) {
        cli_conn_fail(p, "%s", rf_error_message());
        return st;
    }
    return RF_OK;
}
