/* ps/ps_server_ledger.c: LEDGER_REQ on ps task 0 (proto.h), the shard
 * ledger in the chief's checkpoints (docs/DESIGN.md "The shard ledger").
 * Chief only. A read at offset 0 takes a snapshot of the ledger's saved form
 * (ps_ledger_save) and the chief reads it page by page (total 0: the
 * ledger is unset); a load, only into an unset
 * ledger, gathers its pages and loads the whole at the last one
 * (ps_ledger_load: a form that does not parse or check is refused, and
 * the ledger stays unset). Refusals are ERROR_REPLYs; the connection
 * stays. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "ps/ps_server_internal.h"

static bool send_reply(ps_server_conn *c, uint32_t req_id,
                       const ps_ledger_reply *r)
{
    unsigned char *buf = ps_ctrl_reply_buf(c);
    size_t n;
    if (ps_enc_ledger_reply(buf, PS_MSG_MAX, req_id, r, &n) != RF_OK)
        return false;
    return ps_ctrl_send(c, buf, n);
}

static bool on_read(ps_server_conn *c, uint32_t req_id, const ps_ledger_req *q)
{
    rf_ps_server *s = c->srv;
    if (q->offset == 0) {
        free(s->ledger_snap);
        s->ledger_snap = NULL;
        s->ledger_snap_len = 0;
        if (s->ledger.set) {
            size_t n;
            rf_status st = ps_ledger_save(&s->ledger, &s->ledger_snap, &n);
            if (st != RF_OK)
                return ps_ctrl_reply_error(c, req_id, st, rf_error_message());
            s->ledger_snap_len = (uint32_t)n;
        }
    } else if (q->offset > s->ledger_snap_len) {
        char text[200];
        snprintf(text, sizeof text,
                 "LEDGER_REQ reads at %u, past the %u bytes of the ledger's "
                 "snapshot (read from offset 0 first)",
                 q->offset, s->ledger_snap_len);
        return ps_ctrl_reply_error(c, req_id, RF_ERR_INVALID_ARG, text);
    }
    uint32_t left = s->ledger_snap_len - q->offset;
    ps_ledger_reply r = {
        .total = s->ledger_snap_len,
        .offset = q->offset,
        .count = left < PS_LEDGER_READ_PAGE ? left : PS_LEDGER_READ_PAGE,
        .data = s->ledger_snap ? s->ledger_snap + q->offset : NULL};
    return send_reply(c, req_id, &r);
}

static void stage_free(rf_ps_server *s)
{
    free(s->ledger_stage);
    s->ledger_stage = NULL;
    s->ledger_stage_len = s->ledger_stage_total = 0;
}

static bool on_load(ps_server_conn *c, uint32_t req_id, const ps_ledger_req *q)
{
    rf_ps_server *s = c->srv;
    char text[PS_ERR_TEXT_MAX];
    if (s->ledger.set) {
        snprintf(text, sizeof text,
                 "ps task 0's shard ledger is set already (epoch %u, %u of "
                 "%u shards dealt): a saved one loads only into a ledger "
                 "no worker has asked yet",
                 s->ledger.epoch, s->ledger.cursor, s->ledger.num_shards);
        return ps_ctrl_reply_error(c, req_id, RF_ERR_INVALID_ARG, text);
    }
    if (q->total > PS_LEDGER_SAVE_MAX) {
        snprintf(text, sizeof text,
                 "a saved shard ledger of %u bytes (at most %u)", q->total,
                 (unsigned)PS_LEDGER_SAVE_MAX);
        return ps_ctrl_reply_error(c, req_id, RF_ERR_INVALID_ARG, text);
    }
    if (q->offset == 0) {
        stage_free(s);
        s->ledger_stage = malloc(q->total);
        if (!s->ledger_stage)
            return ps_ctrl_reply_error(c, req_id, RF_ERR_NO_MEMORY,
                                       "no memory for the shard ledger");
        s->ledger_stage_total = q->total;
    } else if (!s->ledger_stage || q->offset != s->ledger_stage_len ||
               q->total != s->ledger_stage_total) {
        snprintf(text, sizeof text,
                 "a shard ledger page at %u of %u, expected one at %u of %u",
                 q->offset, q->total, s->ledger_stage_len,
                 s->ledger_stage_total);
        stage_free(s);
        return ps_ctrl_reply_error(c, req_id, RF_ERR_INVALID_ARG, text);
    }
    memcpy(s->ledger_stage + q->offset, q->data, q->count);
    s->ledger_stage_len += q->count;
    ps_ledger_reply r = {.total = q->total, .offset = q->offset};
    if (s->ledger_stage_len == s->ledger_stage_total) {
        rf_status st =
            ps_ledger_load(&s->ledger, s->ledger_stage, s->ledger_stage_len);
        stage_free(s);
        if (st != RF_OK)
            return ps_ctrl_reply_error(c, req_id, st, rf_error_message());
        const ps_ledger *l = &s->ledger;
        RF_LOG_INFO("ps 0: shard ledger loaded by the chief: dealing epoch "
                    "%u (%u of %u shards dealt), %u shards returned to deal "
                    "again, %" PRIu64 " batches recorded trained",
                    l->epoch, l->cursor, l->num_shards, l->ntasks,
                    l->batches_done);
        r.loaded = true;
    }
    return send_reply(c, req_id, &r);
}

bool ps_ctrl_ledger(ps_server_conn *c, uint32_t req_id,
                    const unsigned char *msg, size_t len)
{
    ps_ledger_req q;
    if (ps_dec_ledger_req(msg, len, &q) != RF_OK) {
        ps_conn_drop(c, rf_error_message());
        return false;
    }
    if (c->srv->opt.task_index != 0)
        return ps_ctrl_reply_error(c, req_id, RF_ERR_INVALID_ARG,
                                   "the shard ledger is on ps task 0");
    if (!c->chief) {
        char text[200];
        snprintf(text, sizeof text,
                 "client %u is not the chief: only the chief reads or loads "
                 "the shard ledger",
                 c->client_id);
        return ps_ctrl_reply_error(c, req_id, RF_ERR_INVALID_ARG, text);
    }
    return q.op == PS_LEDGER_OP_READ ? on_read(c, req_id, &q)
                                     : on_load(c, req_id, &q);
}
