/* tests/integration/attack/attack_ps.c: the attacks at the ps protocol
 * level (ps/proto.h, docs/DESIGN.md "Authentication and role binding"):
 * no secret, a wrong secret, claiming the chief, a duplicate client id,
 * and the insider who holds the secret and reads the ps's regions (what a
 * compromised worker knows). */
#include <stdio.h>
#include <string.h>

#include "ps/proto.h"
#include "ps/ps_auth.h"
#include "rdmaflow/secret.h"
#include "tests/integration/attack/attack.h"

static unsigned char reply[PS_MSG_MAX];
static size_t reply_len;

/* Sends a ps message; then the ps's next message into reply. */
static rs_result rpc(const at_opts *o, rsock *s, const void *msg, size_t len)
{
    return at_rpc(o, s, msg, len, reply, sizeof reply, &reply_len);
}

/* The type of the message in reply (0 if it does not parse). */
static uint16_t reply_type(void)
{
    ps_msg_hdr h;
    return ps_dec_hdr(reply, reply_len, &h) == RF_OK ? h.type : 0;
}

static void send_empty(const at_opts *o, rsock *s, uint16_t type)
{
    unsigned char m[64];
    size_t n;
    ps_enc_empty(m, sizeof m, type, 1, &n);
    rs_ps_send(s, m, n, o->timeout_ms);
}

static void send_range(const at_opts *o, rsock *s, uint16_t type)
{
    unsigned char m[64];
    size_t n;
    ps_range_req q = {.start = 0};
    ps_enc_range_req(m, sizeof m, type, 7, &q, &n);
    rs_ps_send(s, m, n, o->timeout_ms);
}

size_t at_hello(uint32_t id, uint32_t fl, unsigned char *m)
{
    ps_hello h = {.client_id = id,
                  .flags = fl & PS_CONN_FLAG_CHIEF,
                  .recv_depth = 8,
                  .ring_slots = 8,
                  .ring = {.addr = 0x10000, .len = 64, .rkey = 0x1234}};
    size_t n = 0;
    ps_enc_hello(m, PS_REQ_MAX, 2, &h, &n);
    return n;
}

static void send_hello(const at_opts *o, rsock *s, uint32_t id, uint32_t fl)
{
    unsigned char m[PS_REQ_MAX];
    size_t n = at_hello(id, fl, m);
    rs_ps_send(s, m, n, o->timeout_ms);
}

/* AUTH_REQ, the challenge, and a proof made with key (a random one if
 * NULL); leaves the ps's answer to the proof in reply. */
static rs_result authenticate(const at_opts *o, rsock *s, uint32_t id,
                              uint32_t flags, const rf_cluster_secret *key)
{
    ps_conn_welcome w;
    if (ps_conn_welcome_decode(s->priv, s->priv_len, &w) != RF_OK)
        return RS_BAD;
    ps_auth_transcript t = {.client_id = id,
                            .flags = flags,
                            .ps_index = w.ps_index,
                            .incarnation = w.incarnation};
    ps_auth_req q = {.client_id = id, .flags = flags};
    ps_auth_nonce(q.nonce);
    memcpy(t.client_nonce, q.nonce, PS_AUTH_NONCE);
    unsigned char m[PS_REQ_MAX];
    size_t n;
    ps_enc_auth_req(m, sizeof m, 1, &q, &n);
    rs_result r = rpc(o, s, m, n);
    if (r != RS_OK)
        return r;
    ps_auth_challenge ch;
    if (ps_dec_auth_challenge(reply, reply_len, &ch) != RF_OK)
        return RS_BAD;
    memcpy(t.ps_nonce, ch.nonce, PS_AUTH_NONCE);
    ps_auth_proof p;
    if (key)
        ps_auth_mac(key, PS_AUTH_BY_WORKER, &t, p.mac);
    else
        ps_auth_nonce(p.mac); /* random bytes */
    ps_enc_auth_proof(m, sizeof m, 2, &p, &n);
    return rpc(o, s, m, n);
}

static rf_cluster_secret *load_secret(const at_opts *o)
{
    rf_cluster_secret *k = NULL;
    if (!o->secret)
        return NULL;
    if (rf_secret_load(o->secret, &k) != RF_OK) {
        fprintf(stderr, "attack_peer: %s\n", rf_error_message());
        return NULL;
    }
    return k;
}

/* Connect without offering authentication: the ps must reject it. */
static void expect_rejected(const at_opts *o, uint32_t id, uint32_t flags,
                            const char *what)
{
    rsock s;
    rs_result r = at_open(o, &s, id, flags);
    if (r == RS_REJECTED)
        at_refused("%s: rejected at connect ('%.*s')", what, (int)s.priv_len,
                   (const char *)s.priv);
    else if (r == RS_OK)
        at_succeeded("%s: accepted", what);
    else
        at_refused("%s: not accepted (%s)", what, rs_result_name(r));
    rs_close(&s);
}

int at_nosecret(const at_opts *o)
{
    expect_rejected(o, o->id, 0, "connect without the secret");
    /* Offer authentication, then skip it. */
    rsock s;
    if (at_open_accepted(o, &s, o->id, PS_CONN_FLAG_AUTH, "HELLO unauth")) {
        send_hello(o, &s, o->id, 0);
        at_expect_dropped(o, &s, 0, "HELLO without AUTH");
    }
    if (at_open_accepted(o, &s, o->id, PS_CONN_FLAG_AUTH, "REGIONS unauth")) {
        send_range(o, &s, PS_MSG_REGIONS_REQ);
        at_expect_dropped(o, &s, 0, "REGIONS_REQ without AUTH");
    }
    if (at_open_accepted(o, &s, o->id, PS_CONN_FLAG_AUTH, "DIR unauth")) {
        send_range(o, &s, PS_MSG_DIR_REQ);
        at_expect_dropped(o, &s, 0, "DIR_REQ without AUTH");
    }
    return 0;
}

int at_wrongsecret(const at_opts *o)
{
    rf_cluster_secret *wrong = load_secret(o);
    if (o->secret && !wrong)
        return 2;
    for (int k = 0; k < (wrong ? 2 : 1); k++) {
        const char *what = k ? "proof with a wrong secret" : "random proof";
        rsock s;
        if (!at_open_accepted(o, &s, o->id, PS_CONN_FLAG_AUTH, what))
            continue;
        rs_result r =
            authenticate(o, &s, o->id, PS_CONN_FLAG_AUTH, k ? wrong : NULL);
        ps_error_reply e;
        if (r == RS_OK && reply_type() == PS_MSG_AUTH_OK) {
            at_succeeded("%s: AUTH_OK", what);
            rs_close(&s);
            continue;
        }
        if (r == RS_OK && ps_dec_error_reply(reply, reply_len, &e) == RF_OK &&
            e.status == RF_ERR_AUTH)
            at_refused("%s: '%s'", what, e.text);
        else if (r == RS_OK)
            at_succeeded("%s: answered with a %s", what,
                         ps_msg_type_name(reply_type()));
        else
            at_refused("%s: %s", what, rs_result_name(r));
        /* nothing more may come out of this connection */
        uint32_t had = s.ps_msgs;
        send_range(o, &s, PS_MSG_REGIONS_REQ);
        at_expect_dropped(o, &s, had, "REGIONS_REQ after it");
    }
    rf_secret_free(wrong);
    return 0;
}

int at_chief(const at_opts *o)
{
    expect_rejected(o, 0, PS_CONN_FLAG_CHIEF, "chief without the secret");
    expect_rejected(o, o->id, PS_CONN_FLAG_CHIEF | PS_CONN_FLAG_AUTH,
                    "chief flag from another id");
    uint32_t fl = PS_CONN_FLAG_CHIEF | PS_CONN_FLAG_AUTH;
    rsock s;
    if (at_open_accepted(o, &s, 0, fl, "SHUTDOWN as the chief")) {
        send_empty(o, &s, PS_MSG_SHUTDOWN_REQ);
        at_expect_dropped(o, &s, 0, "SHUTDOWN_REQ as the chief, unauth");
    }
    if (at_open_accepted(o, &s, 0, fl, "CREATE as the chief")) {
        static ps_spec spec = {.name = "attack", .dtype = RF_F32};
        spec.shape.rank = 1;
        spec.shape.dims[0] = 4;
        unsigned char m[PS_REQ_MAX];
        size_t n;
        ps_enc_create_req(m, sizeof m, 3, &spec, &n);
        rs_ps_send(&s, m, n, o->timeout_ms);
        at_expect_dropped(o, &s, 0, "CREATE_REQ as the chief, unauth");
    }
    if (at_open_accepted(o, &s, 0, fl, "random proof as the chief")) {
        rs_result r = authenticate(o, &s, 0, fl, NULL);
        if (r == RS_OK && reply_type() == PS_MSG_AUTH_OK)
            at_succeeded("chief with a random proof: AUTH_OK");
        else
            at_refused("chief with a random proof: %s",
                       r == RS_OK ? ps_msg_type_name(reply_type())
                                  : rs_result_name(r));
        uint32_t had = s.ps_msgs;
        send_empty(o, &s, PS_MSG_SHUTDOWN_REQ);
        at_expect_dropped(o, &s, had, "SHUTDOWN_REQ after it");
    }
    if (o->have_globals) {
        /* The chief's one-sided writes of global_step: an add of 0 and a
         * compare-and-swap that cannot change it, so that a target that
         * executes them does not disturb the job. */
        rf_sock_hdr fa = {.op = RF_SOCK_FADD_REQ,
                          .key = o->globals.rkey,
                          .addr = o->globals.addr};
        at_one_sided(o, 0, fl, &fa, NULL,
                     "FETCH_AND_ADD on global_step as the chief");
        rf_sock_hdr cs = {.op = RF_SOCK_CSWAP_REQ,
                          .key = o->globals.rkey,
                          .addr = o->globals.addr,
                          .arg0 = 0x5a5a5a5a5a5a5a5aull,
                          .arg1 = 0x5a5a5a5a5a5a5a5aull};
        at_one_sided(o, 0, fl, &cs, NULL,
                     "CMP_AND_SWP on global_step as the chief");
    }
    return 0;
}

int at_dup(const at_opts *o)
{
    uint32_t fl = PS_CONN_FLAG_AUTH | (o->chief ? PS_CONN_FLAG_CHIEF : 0);
    if (!o->secret) {
        expect_rejected(o, o->id, fl & PS_CONN_FLAG_CHIEF,
                        "duplicate id without the secret");
        return 0;
    }
    rf_cluster_secret *key = load_secret(o);
    if (!key)
        return 2;
    rsock s;
    if (at_open_accepted(o, &s, o->id, fl, "duplicate id")) {
        rs_result r = authenticate(o, &s, o->id, fl, key);
        ps_error_reply e;
        if (r != RS_OK || reply_type() != PS_MSG_AUTH_OK) {
            at_refused("duplicate id with the secret: not authenticated "
                       "(%s): the test's secret is wrong?",
                       rs_result_name(r));
            rf_secret_free(key);
            rs_close(&s);
            return 2;
        }
        send_hello(o, &s, o->id, fl);
        r = rs_ps_recv(&s, reply, sizeof reply, &reply_len, o->timeout_ms);
        if (r == RS_OK && reply_type() == PS_MSG_HELLO_REPLY)
            at_succeeded("HELLO as client id %u%s with the secret accepted "
                         "while that id is connected",
                         o->id, o->chief ? " (chief)" : "");
        else if (r == RS_OK &&
                 ps_dec_error_reply(reply, reply_len, &e) == RF_OK)
            at_refused("HELLO as client id %u with the secret: '%s'", o->id,
                       e.text);
        else
            at_refused("HELLO as client id %u with the secret: %s", o->id,
                       rs_result_name(r));
        rs_close(&s);
    }
    rf_secret_free(key);
    return 0;
}

int at_insider(const at_opts *o)
{
    rf_cluster_secret *key = load_secret(o);
    if (!key)
        return 2;
    uint32_t fl = PS_CONN_FLAG_AUTH | (o->chief ? PS_CONN_FLAG_CHIEF : 0);
    rsock s;
    int rc = 2;
    rs_result r = at_open(o, &s, o->id, fl);
    if (r == RS_OK)
        r = authenticate(o, &s, o->id, fl, key);
    ps_hello_reply hr;
    static ps_regions_reply rr;
    if (r == RS_OK && reply_type() == PS_MSG_AUTH_OK) {
        send_hello(o, &s, o->id, fl);
        r = rs_ps_recv(&s, reply, sizeof reply, &reply_len, o->timeout_ms);
    }
    if (r == RS_OK && ps_dec_hello_reply(reply, reply_len, &hr) == RF_OK) {
        unsigned char m[64];
        size_t n;
        ps_range_req q = {.start = 0};
        ps_enc_range_req(m, sizeof m, PS_MSG_REGIONS_REQ, 3, &q, &n);
        r = rpc(o, &s, m, n);
        if (r == RS_OK &&
            ps_dec_regions_reply(reply, reply_len, &rr) == RF_OK &&
            hr.globals.region < rr.count) {
            const rf_mr_desc *g = &rr.regions[hr.globals.region];
            printf("target %x:%llx:%llu\n", g->rkey,
                   (unsigned long long)g->addr, (unsigned long long)g->len);
            printf("globals %x:%llx\n", g->rkey,
                   (unsigned long long)(g->addr + hr.globals.offset));
            printf("regions %u, ps %d incarnation %llx\n", rr.total,
                   hr.ps_index, (unsigned long long)hr.incarnation);
            rc = 0;
        }
    }
    if (rc)
        fprintf(stderr, "attack_peer insider: %s (%s)\n", rs_result_name(r),
                reply_len ? ps_msg_type_name(reply_type()) : "no reply");
    fflush(stdout);
    rs_close(&s);
    rf_secret_free(key);
    return rc;
}
