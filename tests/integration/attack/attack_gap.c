/* tests/integration/attack/attack_gap.c: the stranger in a task's restart
 * gap on a cluster without a secret (issue 26 item 1), as the issue
 * reproduced it: a raw client claims the restarting task's id (--id, with
 * --chief the chief's role), once without a task token and once with a
 * token of its own, and if a ps lets it in it does what the issue saw
 * done: sets global_step to --step, zeroes the first variable's values
 * and (as the chief) sends SHUTDOWN. Each attempt that gets anywhere is a
 * "GOT"; the ps must reject both connects. */
#include <stdio.h>
#include <string.h>

#include "ps/proto.h"
#include "tests/integration/attack/attack.h"

static unsigned char msg[PS_MSG_MAX];
static size_t msg_len;
static ps_entry first;
static bool have_first;

static rs_result rpc(const at_opts *o, rsock *s, const void *m, size_t len)
{
    return at_rpc(o, s, m, len, msg, sizeof msg, &msg_len);
}

static rf_status take_first(void *ctx, const ps_entry *e)
{
    (void)ctx;
    if (!have_first && e->values_bytes) {
        first = *e;
        have_first = true;
    }
    return RF_OK;
}

/* One request frame on s (said HELLO) and the verdict on its reply. */
static void one_sided(const at_opts *o, rsock *s, const rf_sock_hdr *req,
                      const void *payload, const char *what)
{
    rs_result r = rs_frame(s, req, payload);
    rf_sock_hdr h = {0};
    size_t n = 0;
    unsigned char data[8];
    while (r == RS_OK) {
        r = rs_next(s, &h, data, sizeof data, &n, o->timeout_ms);
        if (r != RS_OK || h.op != RF_SOCK_SEND_REQ)
            break;
    }
    if (r != RS_OK)
        at_refused("%s: %s", what, rs_result_name(r));
    else if (h.op == RF_SOCK_ERROR || rf_sock_hdr_status(&h) != 0)
        at_refused("%s: %s", what, rf_status_string(rf_sock_hdr_status(&h)));
    else
        at_succeeded("%s: executed", what);
}

static void attempt(const at_opts *o, bool token, const char *kind)
{
    uint32_t flags =
        (o->chief ? PS_CONN_FLAG_CHIEF : 0) | (token ? PS_CONN_FLAG_TOKEN : 0);
    ps_conn_hello ch = {.client_id = o->id, .flags = flags};
    memset(ch.token, 0x5a, sizeof ch.token); /* a token of its own */
    unsigned char priv[PS_CONN_HELLO_MAX];
    ps_conn_hello_encode(&ch, priv);
    rsock s;
    char what[160];
    snprintf(what, sizeof what, "client %u%s %s", o->id,
             o->chief ? " (chief)" : "", kind);
    rs_result r = rs_tcp(&s, o->host, o->port, o->timeout_ms);
    at_conn(&s);
    if (r == RS_OK)
        r = rs_handshake(&s, priv, ps_conn_hello_size(&ch), o->timeout_ms);
    if (r != RS_OK) {
        at_refused("%s: not accepted (%s%s%.*s)", what, rs_result_name(r),
                   s.priv_len ? ": " : "", (int)s.priv_len,
                   (const char *)s.priv);
        rs_close(&s);
        return;
    }
    unsigned char m[PS_REQ_MAX];
    size_t n = at_hello(o->id, flags, m);
    ps_hello_reply hr;
    if (rpc(o, &s, m, n) != RS_OK ||
        ps_dec_hello_reply(msg, msg_len, &hr) != RF_OK) {
        at_refused("%s: accepted, but its HELLO was not", what);
        rs_close(&s);
        return;
    }
    at_succeeded("%s: HELLO answered", what);
    static ps_regions_reply rr;
    ps_range_req q = {.start = 0};
    ps_enc_range_req(m, sizeof m, PS_MSG_REGIONS_REQ, 2, &q, &n);
    if (rpc(o, &s, m, n) == RS_OK &&
        ps_dec_regions_reply(msg, msg_len, &rr) == RF_OK &&
        hr.globals.region < rr.count) {
        const rf_mr_desc *g = &rr.regions[hr.globals.region];
        uint64_t step = (uint64_t)o->count;
        rf_sock_hdr w = {.op = RF_SOCK_WRITE_REQ,
                         .key = g->rkey,
                         .len = 8,
                         .addr = g->addr + hr.globals.offset};
        char gw[200];
        snprintf(gw, sizeof gw, "%s: WRITE global_step = %llu", what,
                 (unsigned long long)step);
        one_sided(o, &s, &w, &step, gw);
        ps_enc_range_req(m, sizeof m, PS_MSG_DIR_REQ, 3, &q, &n);
        ps_dir_reply dr;
        have_first = false;
        if (rpc(o, &s, m, n) == RS_OK &&
            ps_dec_dir_reply(msg, msg_len, &dr, take_first, NULL) == RF_OK &&
            have_first && first.record.region < rr.count) {
            static unsigned char zeros[4096];
            const rf_mr_desc *d = &rr.regions[first.record.region];
            uint64_t len = first.values_bytes < sizeof zeros
                               ? first.values_bytes
                               : sizeof zeros;
            rf_sock_hdr z = {.op = RF_SOCK_WRITE_REQ,
                             .key = d->rkey,
                             .len = (uint32_t)len,
                             .addr = d->addr + first.record.offset +
                                     first.values_off};
            char vw[700];
            snprintf(vw, sizeof vw, "%s: WRITE zeros over '%s'", what,
                     first.spec.name);
            one_sided(o, &s, &z, zeros, vw);
        }
    }
    if (o->chief) {
        ps_enc_empty(m, sizeof m, PS_MSG_SHUTDOWN_REQ, 4, &n);
        ps_msg_hdr mh;
        if (rpc(o, &s, m, n) == RS_OK &&
            ps_dec_hdr(msg, msg_len, &mh) == RF_OK &&
            mh.type == PS_MSG_SHUTDOWN_REPLY)
            at_succeeded("%s: SHUTDOWN accepted", what);
        else
            at_refused("%s: SHUTDOWN refused", what);
    }
    rs_close(&s);
}

int at_gap(const at_opts *o)
{
    attempt(o, false, "without a task token");
    attempt(o, true, "with a task token of its own");
    return 0;
}
