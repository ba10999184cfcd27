/* tests/fabric/conn.c: fabric, buffer, endpoint and completion helpers. */
#include "tests/fabric/conn.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/common/budget.h"
#include "tests/common/check.h"
#include "tests/fabric/opts.h"
#include "tests/fabric/pattern.h"

rf_fabric *rt_fabric_open(void)
{
    rf_fabric_attr attr = {.bind_addr = rt_opts.host};
    rf_fabric *f = NULL;
    CHECK_OK(rf_fabric_open(rt_opts.provider, &attr, &f));
    CHECK(f != NULL, "rf_fabric_open gave RF_OK but no fabric");
    return f;
}

void rt_buf_alloc(rf_fabric *fabric, rt_buf *b, size_t len, uint32_t access)
{
    size_t alloc = (len + 4095) & ~(size_t)4095;
    b->p = aligned_alloc(4096, alloc);
    CHECK(b->p != NULL, "out of memory for %zu bytes", len);
    memset(b->p, 0, alloc);
    b->len = len;
    CHECK_OK(rf_mr_reg(fabric, b->p, len, access, &b->mr));
    CHECK(rf_mr_addr(b->mr) == b->p && rf_mr_len(b->mr) == len,
          "rf_mr_addr/len %p/%zu != registered %p/%zu", rf_mr_addr(b->mr),
          rf_mr_len(b->mr), (void *)b->p, len);
}

void rt_buf_free(rt_buf *b)
{
    if (b->mr)
        CHECK_OK(rf_mr_dereg(b->mr));
    free(b->p);
    memset(b, 0, sizeof *b);
}

rf_status rt_try_connect(rf_fabric *fabric, uint16_t port, const void *priv,
                         size_t priv_len, int timeout_ms, rt_conn *c)
{
    return rt_try_connect_cq(fabric, port, priv, priv_len, timeout_ms, 0, c);
}

rf_status rt_try_connect_cq(rf_fabric *fabric, uint16_t port, const void *priv,
                            size_t priv_len, int timeout_ms, uint32_t cq_flags,
                            rt_conn *c)
{
    memset(c, 0, sizeof *c);
    CHECK_OK(rf_cq_create_ex(
        fabric, &(rf_cq_attr){.depth = RT_CQ_DEPTH, .flags = cq_flags},
        &c->cq));
    rf_ep_attr attr = {.send_cq = c->cq,
                       .recv_cq = c->cq,
                       .max_send_wr = RT_SEND_WR,
                       .max_recv_wr = RT_RECV_WR};
    c->ep = (rf_ep *)(uintptr_t)1; /* must be overwritten */
    rf_status st = rf_connect(fabric, rt_opts.host, port, &attr, priv, priv_len,
                              timeout_ms, &c->ep);
    if (st == RF_OK)
        CHECK(c->ep != NULL, "rf_connect returned RF_OK but no endpoint");
    static atomic_int told; /* which provider auto chose, for the log */
    if (st == RF_OK && strcmp(rf_fabric_provider(fabric), "auto") == 0 &&
        !atomic_exchange(&told, 1)) {
        /* stderr: a role's stdout is its line protocol */
        fprintf(stderr, "note: auto carries the first endpoint with %s\n",
                rf_ep_provider(c->ep));
    }
    if (st != RF_OK)
        CHECK(c->ep == NULL, "failed rf_connect (%s) left *out = %p",
              rf_status_string(st), (void *)c->ep);
    return st;
}

void rt_connect(rf_fabric *fabric, uint16_t port, const char *token, rt_conn *c)
{
    rf_status st =
        rt_try_connect(fabric, port, token, strlen(token), rft_ms(10000), c);
    CHECK(st == RF_OK, "connect to %s:%u (token %s): %s", rt_opts.host,
          (unsigned)port, token, rf_status_string(st));
    CHECK_OK(rf_ep_state(c->ep));
}

void rt_conn_close(rt_conn *c)
{
    if (c->ep)
        rf_ep_close(c->ep);
    if (c->cq)
        rf_cq_destroy(c->cq);
    memset(c, 0, sizeof *c);
}

void rt_wait_n(rf_cq *cq, rf_completion *out, int n, int timeout_ms)
{
    uint64_t deadline = rf_now_us() + (uint64_t)timeout_ms * 1000;
    int got = 0;
    while (got < n) {
        uint64_t now = rf_now_us();
        CHECK(now < deadline, "only %d of %d completions arrived within %d ms",
              got, n, timeout_ms);
        int r = rf_cq_wait(cq, out + got, n - got,
                           (int)((deadline - now + 999) / 1000));
        if (r == RF_ERR_TIMEOUT)
            continue;
        CHECK(r > 0 && r <= n - got, "rf_cq_wait returned %d (%s)", r,
              r < 0 ? rf_status_string((rf_status)r) : "count");
        got += r;
    }
}

rf_completion rt_wait_one(rf_cq *cq, int timeout_ms)
{
    rf_completion c;
    rt_wait_n(cq, &c, 1, timeout_ms);
    return c;
}

void rt_expect_quiet(rf_cq *cq, int ms, const char *why)
{
    rf_completion c;
    int r = rf_cq_wait(cq, &c, 1, ms);
    CHECK(r == RF_ERR_TIMEOUT,
          "%s: expected no completion, rf_cq_wait returned %d (op %s, "
          "status %s, context %p)",
          why, r, r > 0 ? rf_wr_op_name(c.op) : "-",
          r > 0 ? rf_status_string(c.status) : "-", r > 0 ? c.context : NULL);
    rf_error_clear(); /* the timeout was the expected outcome */
}

void rt_expect_comp(const rf_completion *c, const char *what, void *context,
                    rf_op op, rf_status status, long long len)
{
    CHECK(c->context == context && c->op == op && c->status == status,
          "%s: completion {context %p, op %s, status %s} expected {context "
          "%p, op %s, status %s}",
          what, c->context, rf_wr_op_name(c->op), rf_status_string(c->status),
          context, rf_wr_op_name(op), rf_status_string(status));
    if (len >= 0)
        CHECK(c->len == (uint64_t)len, "%s: completion len %u, expected %lld",
              what, c->len, len);
}

rf_wr rt_wr(rf_op op, void *local, size_t len, rf_mr *mr, uint64_t raddr,
            uint32_t rkey)
{
    return (rf_wr){.op = op,
                   .context = local,
                   .local = local,
                   .len = len,
                   .local_mr = mr,
                   .remote_addr = raddr,
                   .rkey = rkey};
}

uint64_t rt_atomic(rt_conn *c, rf_op op, uint64_t *res, rf_mr *mr,
                   uint64_t raddr, uint32_t rkey, uint64_t add, uint64_t swap,
                   const char *what)
{
    rf_wr wr = rt_wr(op, res, 8, mr, raddr, rkey);
    wr.compare_add = add;
    wr.swap = swap;
    rt_do(c, wr, what);
    return *res;
}

void rt_do(rt_conn *c, rf_wr wr, const char *what)
{
    wr.flags &= ~(uint32_t)RF_WR_UNSIGNALED;
    size_t posted = 99;
    rf_status st = rf_post(c->ep, &wr, 1, &posted);
    CHECK(st == RF_OK && posted == 1, "%s: rf_post: %s, posted %zu", what,
          rf_status_string(st), posted);
    rf_completion comp = rt_wait_one(c->cq, rft_ms(20000));
    rt_expect_comp(&comp, what, wr.context, wr.op, RF_OK, (long long)wr.len);
    CHECK(comp.ep == c->ep, "%s: completion ep %p, expected %p", what,
          (void *)comp.ep, (void *)c->ep);
}

void rt_expect_dead(rt_conn *c, void *local, rf_mr *mr, uint64_t raddr,
                    uint32_t rkey)
{
    CHECK_ST(rf_ep_state(c->ep), RF_ERR_DISCONNECTED);
    static const uint32_t flags[2] = {0, RF_WR_UNSIGNALED};
    for (int i = 0; i < 2; i++) {
        rf_wr wr = {.op = RF_OP_WRITE,
                    .flags = flags[i],
                    .context = (void *)(uintptr_t)(0xdead0 + i),
                    .local = local,
                    .len = 8,
                    .local_mr = mr,
                    .remote_addr = raddr,
                    .rkey = rkey};
        size_t posted = 99;
        rf_status st = rf_post(c->ep, &wr, 1, &posted);
        if (st == RF_ERR_DISCONNECTED) {
            CHECK(posted == 0, "refused post reports %zu posted", posted);
            rf_error_clear();
            continue;
        }
        CHECK(st == RF_OK && posted == 1,
              "post on a dead endpoint: %s (posted %zu), expected "
              "RF_ERR_DISCONNECTED or an RF_ERR_DISCONNECTED completion",
              rf_status_string(st), posted);
        rf_completion comp = rt_wait_one(c->cq, rft_ms(10000));
        rt_expect_comp(&comp,
                       i ? "unsignaled write on a dead endpoint"
                         : "write on a dead endpoint",
                       wr.context, RF_OP_WRITE, RF_ERR_DISCONNECTED, -1);
    }
    rt_expect_quiet(c->cq, 50, "after probing a dead endpoint");
}

void rt_roundtrip(rt_conn *c, rt_buf *local, const rf_mr_desc *remote,
                  uint64_t off, size_t len, uint64_t seed)
{
    CHECK(2 * len <= local->len && off + len <= remote->len,
          "roundtrip of %zu bytes does not fit", len);
    unsigned char *src = local->p, *dst = local->p + len;
    pat_fill(src, len, seed, off);
    memset(dst, 0, len);
    rt_do(c,
          rt_wr(RF_OP_WRITE, src, len, local->mr, remote->addr + off,
                remote->rkey),
          "roundtrip write");
    rt_do(c,
          rt_wr(RF_OP_READ, dst, len, local->mr, remote->addr + off,
                remote->rkey),
          "roundtrip read");
    size_t bad = pat_check(dst, len, seed, off);
    CHECK(bad == PAT_OK,
          "roundtrip: byte %zu of %zu read back as 0x%02x, "
          "wrote 0x%02x",
          bad, len, dst[bad], pat_byte(seed, off + bad));
}
