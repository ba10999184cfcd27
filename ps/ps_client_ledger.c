/* ps/ps_client_ledger.c: the chief's side of LEDGER_REQ (rdmaflow/ps.h):
 * reading ps task 0's shard ledger in its saved form, a page per request,
 * for a checkpoint, and loading a saved one into a restarted ps task 0. */
#include <stdlib.h>
#include <string.h>

#include "ps/ps_client_internal.h"

/* One LEDGER_REQ on ps 0's connection (the caller holds the lock); *r's
 * data is copied to dst (room for r->count bytes) when dst is not NULL. */
static rf_status rpc(rf_ps_client *c, const ps_ledger_req *q,
                     ps_ledger_reply *r, unsigned char **dst, size_t cap)
{
    ps_cli_conn *p = &c->conns[0];
    size_t len, rlen;
    const unsigned char *reply;
    rf_status st = ps_enc_ledger_req(cli_req_buf(p), PS_REQ_MAX,
                                     cli_next_req_id(p), q, &len);
    if (st == RF_OK)
        st = cli_rpc(p, len, PS_MSG_LEDGER_REPLY, &reply, &rlen);
    if (st != RF_OK)
        return st;
    st = ps_dec_ledger_reply(reply, rlen, r);
    if (st == RF_OK && dst) {
        if (!*dst && r->total) {
            *dst = malloc(r->total);
            if (!*dst)
                st = rf_error_set(RF_ERR_NO_MEMORY, "%u bytes", r->total);
        } else if (r->total != cap)
            st = rf_error_set(RF_ERR_CORRUPT,
                              "the ledger's size went from %zu to %u bytes "
                              "while it was read",
                              cap, r->total);
        if (st == RF_OK && r->count)
            memcpy(*dst + r->offset, r->data, r->count);
    }
    cli_rpc_done(p);
    return st;
}

rf_status rf_ps_ledger_read(rf_ps_client *c, unsigned char **buf, size_t *len)
{
    if (!c || !buf || !len)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_ps_ledger_read: NULL");
    *buf = NULL;
    *len = 0;
    unsigned char *out = NULL;
    size_t total = 0, got = 0;
    rf_status st = RF_OK;
    cli_lock(c);
    do {
        ps_ledger_req q = {.op = PS_LEDGER_OP_READ, .offset = (uint32_t)got};
        ps_ledger_reply r;
        st = rpc(c, &q, &r, &out, total);
        if (st == RF_OK && r.offset != got)
            st = rf_error_set(RF_ERR_CORRUPT, "a page at %u, asked for %zu",
                              r.offset, got);
        if (st == RF_OK && r.total && !r.count)
            st = rf_error_set(RF_ERR_CORRUPT, "an empty page at %zu of %u", got,
                              r.total);
        total = r.total;
        got += r.count;
    } while (st == RF_OK && got < total);
    cli_unlock(c);
    if (st != RF_OK) {
        free(out);
        return rf_error_set(st,
                            "reading the shard ledger (LEDGER_REQ to ps "
                            "task 0): %s",
                            rf_error_message());
    }
    *buf = out;
    *len = total;
    return RF_OK;
}

rf_status rf_ps_ledger_load(rf_ps_client *c, const unsigned char *buf,
                            size_t len)
{
    if (!c || !buf || !len || len > UINT32_MAX)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_ps_ledger_load: %zu bytes",
                            len);
    rf_status st = RF_OK;
    bool loaded = false;
    cli_lock(c);
    for (size_t off = 0; st == RF_OK && off < len;) {
        size_t n =
            len - off < PS_LEDGER_LOAD_PAGE ? len - off : PS_LEDGER_LOAD_PAGE;
        ps_ledger_req q = {.op = PS_LEDGER_OP_LOAD,
                           .offset = (uint32_t)off,
                           .total = (uint32_t)len,
                           .count = (uint32_t)n,
                           .data = buf + off};
        ps_ledger_reply r;
        st = rpc(c, &q, &r, NULL, 0);
        off += n;
        loaded = st == RF_OK && r.loaded;
    }
    cli_unlock(c);
    if (st == RF_OK && !loaded)
        st = rf_error_set(RF_ERR_CORRUPT, "ps task 0 took every page but "
                                          "did not say it loaded them");
    if (st != RF_OK)
        return rf_error_set(st,
                            "loading the shard ledger (LEDGER_REQ to ps "
                            "task 0): %s",
                            rf_error_message());
    return RF_OK;
}
