/* tests/fabric/case_sizes.c: every data-moving operation (read, write,
 * write_imm, send/recv) at sizes from 1 B to 16 MiB, at offset 0 and at odd
 * offsets on both sides, verified byte for byte with a seeded pattern; the
 * bytes around the transferred range must be untouched. */
#include <stdio.h>
#include <string.h>

#include "tests/common/budget.h"
#include "tests/common/check.h"
#include "tests/fabric/cases.h"
#include "tests/fabric/conn.h"
#include "tests/fabric/pattern.h"
#include "tests/fabric/target.h"

#define MIB    (1024u * 1024u)
#define REGION (16 * MIB + 8192)

static const size_t sizes[] = {0,  1,    2,    3,     7,       8,       63,
                               64, 4095, 4096, 65537, 1 * MIB, 16 * MIB};
static const struct {
    size_t local, remote;
} offsets[] = {{0, 0}, {13, 4093}};

typedef enum { K_READ, K_WRITE, K_WRITE_IMM, K_SEND } kind;

typedef struct recv_result {
    int op, status;
    unsigned len, imm;
    unsigned long long ctx;
} recv_result;

static recv_result wait_recv(rt_target *t, const char *token)
{
    char r[256];
    tgt_cmd(t, r, sizeof r, "waitrecv %s %d", token, rft_ms(20000));
    recv_result x;
    CHECK(sscanf(r, "%d %d %u %u %llu", &x.op, &x.status, &x.len, &x.imm,
                 &x.ctx) == 5,
          "bad waitrecv reply '%s'", r);
    return x;
}

/* Local bytes around [off, off+len) keep the filler pattern after a read. */
static void check_local_margins(const rt_buf *b, size_t off, size_t len,
                                uint64_t filler)
{
    size_t lo = off > 64 ? off - 64 : 0;
    size_t hi = off + len + 64 < b->len ? off + len + 64 : b->len;
    size_t bad = pat_check(b->p + lo, off - lo, filler, lo);
    CHECK(bad == PAT_OK, "read wrote local byte %zu, before its buffer at %zu",
          lo + bad, off);
    bad = pat_check(b->p + off + len, hi - off - len, filler, off + len);
    CHECK(bad == PAT_OK, "read wrote local byte %zu, after its buffer end %zu",
          off + len + bad, off + len);
}

static void one(rt_target *t, rt_conn *c, rt_buf *local, const rf_mr_desc *data,
                kind k, size_t len, size_t loff, size_t roff, uint64_t seed)
{
    const uint64_t seed_in = pat_mix(seed), seed_out = pat_mix(seed + 1);
    const uint32_t imm = (uint32_t)pat_mix(seed + 2);
    void *ctx = (void *)(uintptr_t)(seed + 3);
    char what[96], r[64];
    static const char *const names[] = {"read", "write", "write_imm", "send"};
    snprintf(what, sizeof what,
             "%s of %zu B, local offset %zu, remote offset "
             "%zu",
             names[k], len, loff, roff);
    rf_wr wr = {.context = ctx,
                .local = len ? local->p + loff : NULL,
                .len = len,
                .local_mr = len ? local->mr : NULL,
                .remote_addr = data->addr + roff,
                .rkey = data->rkey,
                .imm = imm};
    switch (k) {
    case K_READ: {
        tgt_fill(t, 0, seed_in);
        size_t lo = loff > 64 ? loff - 64 : 0;
        pat_fill(local->p + lo, len + 128 + loff - lo, seed_out, lo);
        wr.op = RF_OP_READ;
        rt_do(c, wr, what);
        size_t bad = pat_check(local->p + loff, len, seed_in, roff);
        CHECK(bad == PAT_OK, "%s: byte %zu is 0x%02x, expected 0x%02x", what,
              bad, local->p[loff + bad], pat_byte(seed_in, roff + bad));
        check_local_margins(local, loff, len, seed_out);
        break;
    }
    case K_WRITE:
    case K_WRITE_IMM:
        tgt_fill(t, 0, seed_out);
        pat_fill(local->p + loff, len, seed_in, roff);
        if (k == K_WRITE_IMM)
            tgt_cmd(t, r, sizeof r, "postrecv sz 1 0 0 %llu",
                    (unsigned long long)(seed + 4));
        wr.op = k == K_WRITE ? RF_OP_WRITE : RF_OP_WRITE_IMM;
        rt_do(c, wr, what);
        if (k == K_WRITE_IMM) {
            recv_result x = wait_recv(t, "sz");
            CHECK(x.op == RF_OP_RECV_WRITE_IMM && x.status == RF_OK &&
                      x.imm == imm && x.len == len && x.ctx == seed + 4,
                  "%s: target completion {op %s, status %s, imm 0x%x, len %u, "
                  "context %llu}, expected {recv_write_imm, RF_OK, 0x%x, "
                  "%zu, %llu}",
                  what, rf_wr_op_name((rf_op)x.op),
                  rf_status_string((rf_status)x.status), x.imm, x.len, x.ctx,
                  imm, len, (unsigned long long)(seed + 4));
        }
        tgt_verify(t, 0, roff, len, seed_in, seed_out);
        break;
    case K_SEND: {
        /* The receive buffer (region 1) is larger than the message. */
        size_t room = len + 100 < REGION - roff ? len + 100 : REGION - roff;
        tgt_fill(t, 1, seed_out);
        tgt_cmd(t, r, sizeof r, "postrecv sz 1 %zu %zu %llu", roff, room,
                (unsigned long long)(seed + 4));
        pat_fill(local->p + loff, len, seed_in, roff);
        wr.op = RF_OP_SEND;
        rt_do(c, wr, what);
        recv_result x = wait_recv(t, "sz");
        CHECK(x.op == RF_OP_RECV && x.status == RF_OK && x.len == len &&
                  x.ctx == seed + 4,
              "%s: target completion {op %s, status %s, len %u, context "
              "%llu}, expected {recv, RF_OK, %zu, %llu}",
              what, rf_wr_op_name((rf_op)x.op),
              rf_status_string((rf_status)x.status), x.len, x.ctx, len,
              (unsigned long long)(seed + 4));
        tgt_verify(t, 1, roff, len, seed_in, seed_out);
        break;
    }
    }
}

static void run(kind k)
{
    rt_target t;
    tgt_start(&t);
    rf_mr_desc data, recvbuf;
    tgt_region(&t, 0, REGION, RF_ACCESS_ALL, 4096, &data);
    tgt_region(&t, 1, REGION, RF_ACCESS_LOCAL_WRITE, 4096, &recvbuf);
    rf_fabric *f = rt_fabric_open();
    rt_buf local;
    rt_buf_alloc(f, &local, REGION, RF_ACCESS_LOCAL_WRITE);
    rt_conn c;
    rt_connect(f, t.port, "sz", &c);
    uint64_t seed = 1000 * (uint64_t)k;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        if (sizes[s] == 0 && k != K_WRITE_IMM)
            continue; /* only write_imm is defined with 0 bytes */
        for (size_t o = 0; o < sizeof offsets / sizeof offsets[0]; o++) {
            one(&t, &c, &local, &data, k, sizes[s], offsets[o].local,
                offsets[o].remote, seed);
            seed += 8;
        }
    }
    rt_expect_quiet(c.cq, 20, "after the size sweep");
    rt_conn_close(&c);
    rt_buf_free(&local);
    rf_fabric_close(f);
    tgt_stop(&t);
}

void case_sizes_read(void)
{
    run(K_READ);
}
void case_sizes_write(void)
{
    run(K_WRITE);
}
void case_sizes_write_imm(void)
{
    run(K_WRITE_IMM);
}
void case_sizes_send_recv(void)
{
    run(K_SEND);
}
