/* ps/ps_client_members.c: the client's side of membership (elastic
 * workers, rdmaflow/ps.h): reading ps task 0's members bitmap with plain
 * READs (the ps's CPU writes it; no atomics on it), the LEAVE request a
 * worker sends when it stops early, and the shard ledger's SHARD_REQ
 * (progress and the next batch, ps_ledger.h). */
#include <stdio.h>

#include "ps/ps_client_internal.h"
#include "ps/ps_layout.h"

rf_status rf_ps_members_read(rf_ps_client *c, uint64_t bits[RF_PS_DONE_WORDS])
{
    if (!c || !bits)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_ps_members_read: NULL");
    for (uint32_t w = 0; w < RF_PS_DONE_WORDS; w++) {
        rf_status st = cli_globals_read(c, PS_MEMBERS_OFF + 8u * w, &bits[w],
                                        "members READ on ps task 0");
        if (st != RF_OK)
            return st;
    }
    return RF_OK;
}

rf_status rf_ps_leave(rf_ps_client *c)
{
    if (!c)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_ps_leave: NULL");
    cli_lock(c);
    ps_cli_conn *p = &c->conns[0];
    size_t len;
    const unsigned char *reply;
    size_t rlen;
    rf_status st = ps_enc_empty(cli_req_buf(p), PS_REQ_MAX, PS_MSG_LEAVE_REQ,
                                cli_next_req_id(p), &len);
    if (st == RF_OK)
        st = cli_rpc(p, len, PS_MSG_LEAVE_REPLY, &reply, &rlen);
    if (st == RF_OK) {
        st = ps_dec_empty(reply, rlen, PS_MSG_LEAVE_REPLY);
        cli_rpc_done(p);
    }
    cli_unlock(c);
    if (st != RF_OK)
        return rf_error_set(st, "leaving the job (LEAVE to ps task 0): %s",
                            rf_error_message());
    return RF_OK;
}

rf_status rf_ps_shard_next(rf_ps_client *c, const rf_ps_shard_geometry *geom,
                           const rf_ps_shard_grant *done,
                           rf_ps_shard_grant *next, bool *stale)
{
    if (!c || !geom || !next)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_ps_shard_next: NULL");
    if (!geom->batch_size || !geom->shard_batches)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_shard_next: batch_size %u, "
                            "shard_batches %u",
                            geom->batch_size, geom->shard_batches);
    ps_shard_req q = {.geom = *geom, .has_done = done != NULL};
    if (done)
        q.done = *done;
    ps_shard_reply r;
    cli_lock(c);
    ps_cli_conn *p = &c->conns[0];
    size_t len;
    const unsigned char *reply;
    size_t rlen;
    rf_status st = ps_enc_shard_req(cli_req_buf(p), PS_REQ_MAX,
                                    cli_next_req_id(p), &q, &len);
    if (st == RF_OK)
        st = cli_rpc(p, len, PS_MSG_SHARD_REPLY, &reply, &rlen);
    if (st == RF_OK) {
        st = ps_dec_shard_reply(reply, rlen, &r, geom->batch_size,
                                geom->shard_batches);
        cli_rpc_done(p);
    }
    cli_unlock(c);
    if (st != RF_OK)
        return rf_error_set(st,
                            "the shard ledger (SHARD_REQ to ps task 0): "
                            "%s",
                            rf_error_message());
    *next = r.next;
    if (stale)
        *stale = r.stale;
    return RF_OK;
}
