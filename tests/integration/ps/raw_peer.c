/* tests/integration/ps/raw_peer.c: the hand-driven ps peer (see
 * raw_peer.h). */
#include "tests/integration/ps/raw_peer.h"

#include <stdlib.h>
#include <string.h>

#include "ps/proto.h"
#include "tests/integration/ps/fixture.h"

#define MEM   (128u * 1024u)
#define SENDS (64u * 1024u)
#define NRECV 8u
#define RSIZE (PS_MSG_MAX)

static void post_recvs(raw_peer *r)
{
    for (uint32_t i = 0; i < NRECV; i++)
        CHECK_OK(rf_post_recv(r->ep, r->mem + i * RSIZE, RSIZE, r->mr,
                              (void *)(uintptr_t)(i + 1)));
}

rf_status raw_connect(raw_peer *r, rf_fabric *f, uint16_t port,
                      const void *priv, size_t len)
{
    memset(r, 0, sizeof *r);
    r->f = f;
    CHECK_OK(rf_cq_create(f, 256, &r->cq));
    r->mem = aligned_alloc(4096, MEM);
    CHECK(r->mem, "out of memory");
    memset(r->mem, 0, MEM);
    CHECK_OK(rf_mr_reg(f, r->mem, MEM,
                       RF_ACCESS_LOCAL_WRITE | RF_ACCESS_REMOTE_WRITE, &r->mr));
    rf_ep_attr attr = {
        .send_cq = r->cq, .max_send_wr = 64, .max_recv_wr = NRECV};
    rf_status st =
        rf_connect(f, pt_host(), port, &attr, priv, len, rft_ms(5000), &r->ep);
    if (st == RF_OK)
        post_recvs(r);
    return st;
}

void raw_connect_ok(raw_peer *r, rf_fabric *f, uint16_t port, uint32_t id,
                    bool chief)
{
    unsigned char priv[PS_CONN_HELLO_SIZE];
    ps_conn_hello h = {.client_id = id,
                       .flags = chief ? PS_CONN_FLAG_CHIEF : 0};
    ps_conn_hello_encode(&h, priv);
    CHECK_OK(raw_connect(r, f, port, priv, sizeof priv));
}

static rf_completion next(raw_peer *r, int timeout_ms)
{
    rf_completion c;
    int n = rf_cq_wait(r->cq, &c, 1, timeout_ms);
    CHECK(n == 1, "no completion within %d ms (%d)", timeout_ms, n);
    return c;
}

rf_status raw_send_status(raw_peer *r, const void *buf, size_t len)
{
    CHECK(len <= MEM - SENDS, "too long");
    memcpy(r->mem + SENDS, buf, len);
    CHECK_OK(rf_send(r->ep, r->mem + SENDS, len, r->mr, NULL));
    for (;;) {
        rf_completion c = next(r, rft_ms(10000));
        if (c.op == RF_OP_SEND)
            return c.status;
        CHECK(r->nheld < sizeof r->held / sizeof r->held[0],
              "more than %zu receives completed before a send",
              sizeof r->held / sizeof r->held[0]);
        r->held[r->nheld++] = c;
    }
}

void raw_send(raw_peer *r, const void *buf, size_t len)
{
    rf_status st = raw_send_status(r, buf, len);
    CHECK(st == RF_OK, "send: %s", rf_status_string(st));
}

size_t raw_recv(raw_peer *r, void *buf, size_t cap, int timeout_ms)
{
    rf_completion c;
    if (r->nheld) {
        c = r->held[0];
        memmove(r->held, r->held + 1, --r->nheld * sizeof r->held[0]);
    } else {
        c = next(r, timeout_ms);
    }
    CHECK(c.op == RF_OP_RECV && c.status == RF_OK, "receive: op %d, %s",
          (int)c.op, rf_status_string(c.status));
    uint32_t i = (uint32_t)(uintptr_t)c.context - 1;
    size_t n = c.len < cap ? c.len : cap;
    memcpy(buf, r->mem + i * RSIZE, n);
    /* the ps may have closed the connection right after this reply (a
     * refusal): then the receive is not needed, and later calls see it */
    rf_status st =
        rf_post_recv(r->ep, r->mem + i * RSIZE, RSIZE, r->mr, c.context);
    CHECK(st == RF_OK || st == RF_ERR_DISCONNECTED, "rf_post_recv: %s",
          rf_status_string(st));
    return c.len;
}

size_t raw_rpc(raw_peer *r, const void *msg, size_t len,
               const unsigned char **reply)
{
    static unsigned char buf[PS_MSG_MAX];
    raw_send(r, msg, len);
    *reply = buf;
    return raw_recv(r, buf, sizeof buf, rft_ms(10000));
}

void raw_hello(raw_peer *r, uint32_t id, bool chief)
{
    rf_mr_desc all;
    rf_mr_describe(r->mr, &all);
    ps_hello h = {.client_id = id,
                  .flags = chief ? PS_CONN_FLAG_CHIEF : 0,
                  .recv_depth = NRECV,
                  .ring_slots = NRECV,
                  .ring = {.addr = all.addr + MEM - 4096,
                           .len = 8 * NRECV,
                           .rkey = all.rkey}};
    unsigned char msg[PS_REQ_MAX];
    size_t len;
    CHECK_OK(ps_enc_hello(msg, sizeof msg, ++r->req, &h, &len));
    const unsigned char *reply;
    size_t n = raw_rpc(r, msg, len, &reply);
    ps_hello_reply hr;
    CHECK_OK(ps_dec_hello_reply(reply, n, &hr));
}

rf_mr_desc raw_region0(raw_peer *r)
{
    unsigned char msg[64];
    size_t len;
    ps_range_req q = {.start = 0};
    CHECK_OK(ps_enc_range_req(msg, sizeof msg, PS_MSG_REGIONS_REQ, ++r->req, &q,
                              &len));
    const unsigned char *reply;
    size_t n = raw_rpc(r, msg, len, &reply);
    static ps_regions_reply rr;
    CHECK_OK(ps_dec_regions_reply(reply, n, &rr));
    CHECK(rr.count >= 1, "no regions");
    return rr.regions[0];
}

typedef struct find_ctx {
    const char *name;
    ps_entry e;
    bool found;
} find_ctx;

static rf_status find_entry(void *ctx, const ps_entry *e)
{
    find_ctx *f = ctx;
    if (strcmp(e->spec.name, f->name) == 0) {
        f->e = *e;
        f->found = true;
    }
    return RF_OK;
}

ps_entry raw_dir_entry(raw_peer *r, const char *name)
{
    unsigned char msg[64];
    size_t len;
    ps_range_req q = {.start = 0};
    CHECK_OK(
        ps_enc_range_req(msg, sizeof msg, PS_MSG_DIR_REQ, ++r->req, &q, &len));
    const unsigned char *reply;
    size_t n = raw_rpc(r, msg, len, &reply);
    ps_dir_reply dr;
    find_ctx f = {.name = name};
    CHECK_OK(ps_dec_dir_reply(reply, n, &dr, find_entry, &f));
    CHECK(f.found, "no directory entry '%s'", name);
    return f.e;
}

rf_status raw_do(raw_peer *r, rf_wr wr)
{
    CHECK_OK(rf_post(r->ep, &wr, 1, NULL));
    for (;;) {
        rf_completion c = next(r, rft_ms(10000));
        if (c.op == RF_OP_RECV_WRITE_IMM && c.status == RF_OK &&
            r->nheld < sizeof r->held / sizeof r->held[0]) {
            r->held[r->nheld++] = c; /* an ack, for raw_wait_imm */
            continue;
        }
        if (c.op == RF_OP_RECV || c.op == RF_OP_RECV_WRITE_IMM)
            continue; /* receives flushed by the error state */
        return c.status;
    }
}

uint64_t raw_wait_imm(raw_peer *r, int timeout_ms, uint32_t *imm)
{
    rf_completion c;
    if (r->nheld) {
        c = r->held[0];
        memmove(r->held, r->held + 1, --r->nheld * sizeof r->held[0]);
    } else {
        c = next(r, timeout_ms);
    }
    CHECK(c.op == RF_OP_RECV_WRITE_IMM && c.status == RF_OK,
          "write_imm receive: op %d, %s", (int)c.op,
          rf_status_string(c.status));
    if (imm)
        *imm = c.imm;
    uint64_t word;
    memcpy(&word, r->mem + MEM - 4096 + 8 * (r->acks++ % NRECV), 8);
    uint32_t i = (uint32_t)(uintptr_t)c.context - 1;
    CHECK_OK(rf_post_recv(r->ep, r->mem + i * RSIZE, RSIZE, r->mr, c.context));
    return word;
}

uint64_t raw_write_imm_acked(raw_peer *r, const void *local, size_t len,
                             uint64_t remote_addr, uint32_t rkey, uint32_t imm)
{
    CHECK_OK(raw_do(r, (rf_wr){.op = RF_OP_WRITE_IMM,
                               .local = (void *)local,
                               .len = len,
                               .local_mr = r->mr,
                               .remote_addr = remote_addr,
                               .rkey = rkey,
                               .imm = imm}));
    uint32_t got = 0;
    uint64_t word = raw_wait_imm(r, rft_ms(10000), &got);
    CHECK(got == imm, "ack imm %x, sent %x", got, imm);
    return word;
}

void raw_expect_dropped(raw_peer *r, int timeout_ms)
{
    long long deadline = rf_now_ms() + timeout_ms;
    for (uint32_t i = 0; i < r->nheld; i++)
        if (r->held[i].status != RF_OK)
            return;
    while (rf_ep_state(r->ep) == RF_OK) {
        CHECK(rf_now_ms() < deadline,
              "the ps did not drop the connection within %d ms", timeout_ms);
        rf_completion c;
        int n = rf_cq_wait(r->cq, &c, 1, 50);
        if (n == 1 && c.status != RF_OK)
            return;
    }
}

void raw_do_dropped(raw_peer *r, rf_wr wr, int timeout_ms)
{
    rf_status st = raw_do(r, wr);
    CHECK(st == RF_OK || st == RF_ERR_DISCONNECTED,
          "a request the ps drops the connection for completed with %s",
          rf_status_string(st));
    raw_expect_dropped(r, timeout_ms);
}

void raw_close(raw_peer *r)
{
    if (r->ep)
        rf_ep_close(r->ep);
    if (r->cq)
        rf_cq_destroy(r->cq);
    if (r->mr)
        rf_mr_dereg(r->mr);
    free(r->mem);
    memset(r, 0, sizeof *r);
}
