/* tools/fabric-demo/demo_initiator.c: the initiator side of rf-fabric-demo.
 * Connects, learns the target's region from the accept private data, then
 * read -> write -> read back -> fetch_add -> cmp_swap -> write_imm, checking
 * each result, and finally receives the target's verdict. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo.h"
#include "rdmaflow/clock.h"

#define ROLE "initiator"
/* The context of the verdict's receive. */
#define VERDICT_CONTEXT ((void *)9)

typedef struct demo {
    rf_ep *ep;
    rf_cq *cq;
    rf_mr *mr;
    unsigned char *buf; /* local region */
    rf_mr_desc d;       /* the target's region */
    /* The verdict's receive completion when it arrived while a step was
     * still waiting for its own: a receive may complete before the send
     * completion of the write that caused the peer to answer (RC orders
     * neither queue against the other). */
    rf_completion verdict;
    int have_verdict;
} demo;

/* Waits for the completion of the work request with `context`, setting
 * aside the verdict's receive completion if it comes first. */
static rf_status wait_for(demo *s, void *context, rf_completion *c)
{
    for (;;) {
        rf_status st = demo_wait(s->cq, c);
        if (st != RF_OK)
            return st;
        if (c->context == VERDICT_CONTEXT && context != VERDICT_CONTEXT &&
            !s->have_verdict) {
            s->verdict = *c;
            s->have_verdict = 1;
            continue;
        }
        if (c->context != context) {
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "completion for context %p (op %d) while "
                                "waiting for %p",
                                c->context, (int)c->op, context);
        }
        return RF_OK;
    }
}

/* Posts one work request, waits for it, prints the step. Returns 0 on
 * success. */
static int step(demo *s, rf_wr wr, const char *label, uint64_t *us)
{
    uint64_t t0 = rf_now_us();
    rf_completion c;
    rf_status st = rf_post(s->ep, &wr, 1, NULL);
    if (st == RF_OK)
        st = wait_for(s, wr.context, &c);
    if (st == RF_OK)
        st = c.status;
    *us = rf_now_us() - t0;
    if (st != RF_OK) {
        demo_say(ROLE, "%-10s FAILED: %s (%s)", label, rf_status_string(st),
                 rf_error_message());
        return -1;
    }
    return 0;
}

static rf_wr wr_of(demo *s, rf_op op, size_t local_off, size_t len,
                   uint64_t remote_off)
{
    return (rf_wr){.op = op,
                   .context = (void *)(uintptr_t)(op + 1),
                   .local = s->buf + local_off,
                   .len = len,
                   .local_mr = s->mr,
                   .remote_addr = s->d.addr + remote_off,
                   .rkey = s->d.rkey};
}

static int read_counter(demo *s, uint64_t *value)
{
    uint64_t us;
    if (step(s, wr_of(s, RF_OP_READ, 2040, 8, DEMO_COUNTER_OFF), "read", &us))
        return -1;
    memcpy(value, s->buf + 2040, 8);
    return 0;
}

static int run(demo *s)
{
    uint64_t us, before, after;
    const uint64_t raddr = s->d.addr;
    /* 1. read the target's data */
    if (step(s, wr_of(s, RF_OP_READ, 0, DEMO_DATA_LEN, 0), "read", &us))
        return -1;
    size_t bad = demo_mismatch(s->buf, DEMO_DATA_LEN, 0);
    demo_say(ROLE,
             "%-10s %5d B from 0x%llx rkey 0x%08x %6llu us  \"%.24s...\" "
             "%s",
             "read", DEMO_DATA_LEN, (unsigned long long)raddr, s->d.rkey,
             (unsigned long long)us, (const char *)s->buf,
             bad == DEMO_DATA_LEN ? "ok" : "WRONG");
    if (bad != DEMO_DATA_LEN)
        return -1;
    /* 2. overwrite it, 3. read it back */
    demo_content(s->buf, DEMO_DATA_LEN, 1);
    if (step(s, wr_of(s, RF_OP_WRITE, 0, DEMO_DATA_LEN, 0), "write", &us))
        return -1;
    demo_say(ROLE, "%-10s %5d B to   0x%llx rkey 0x%08x %6llu us  \"%.24s...\"",
             "write", DEMO_DATA_LEN, (unsigned long long)raddr, s->d.rkey,
             (unsigned long long)us, (const char *)s->buf);
    memset(s->buf + DEMO_DATA_LEN, 0, DEMO_DATA_LEN);
    if (step(s, wr_of(s, RF_OP_READ, DEMO_DATA_LEN, DEMO_DATA_LEN, 0), "read",
             &us))
        return -1;
    bad = demo_mismatch(s->buf + DEMO_DATA_LEN, DEMO_DATA_LEN, 1);
    demo_say(ROLE,
             "%-10s %5d B from 0x%llx rkey 0x%08x %6llu us  read back "
             "what was written: %s",
             "read", DEMO_DATA_LEN, (unsigned long long)raddr, s->d.rkey,
             (unsigned long long)us, bad == DEMO_DATA_LEN ? "ok" : "WRONG");
    if (bad != DEMO_DATA_LEN)
        return -1;
    /* 4. fetch_add +1 */
    const uint64_t caddr = raddr + DEMO_COUNTER_OFF;
    rf_wr fa = wr_of(s, RF_OP_FETCH_ADD, 2048, 8, DEMO_COUNTER_OFF);
    fa.compare_add = 1;
    if (step(s, fa, "fetch_add", &us))
        return -1;
    memcpy(&before, s->buf + 2048, 8);
    if (read_counter(s, &after))
        return -1;
    int ok = before == DEMO_COUNTER_INIT && after == DEMO_COUNTER_INIT + 1;
    demo_say(ROLE,
             "%-10s    +1 at   0x%llx rkey 0x%08x %6llu us  before %llu "
             "after %llu: %s",
             "fetch_add", (unsigned long long)caddr, s->d.rkey,
             (unsigned long long)us, (unsigned long long)before,
             (unsigned long long)after, ok ? "ok" : "WRONG");
    if (!ok)
        return -1;
    /* 5. cmp_swap INIT+1 -> SWAP_TO */
    rf_wr cs = wr_of(s, RF_OP_CMP_SWAP, 2056, 8, DEMO_COUNTER_OFF);
    cs.compare_add = DEMO_COUNTER_INIT + 1;
    cs.swap = DEMO_SWAP_TO;
    if (step(s, cs, "cmp_swap", &us))
        return -1;
    memcpy(&before, s->buf + 2056, 8);
    if (read_counter(s, &after))
        return -1;
    ok = before == DEMO_COUNTER_INIT + 1 && after == DEMO_SWAP_TO;
    demo_say(ROLE,
             "%-10s %d->%d at 0x%llx rkey 0x%08x %6llu us  before %llu "
             "after %llu: %s",
             "cmp_swap", DEMO_COUNTER_INIT + 1, DEMO_SWAP_TO,
             (unsigned long long)caddr, s->d.rkey, (unsigned long long)us,
             (unsigned long long)before, (unsigned long long)after,
             ok ? "ok" : "WRONG");
    if (!ok)
        return -1;
    /* 6. write_imm */
    memcpy(s->buf + 2560, DEMO_IMM_PAYLOAD, sizeof DEMO_IMM_PAYLOAD);
    rf_wr wi =
        wr_of(s, RF_OP_WRITE_IMM, 2560, sizeof DEMO_IMM_PAYLOAD, DEMO_IMM_OFF);
    wi.imm = DEMO_IMM_VALUE;
    if (step(s, wi, "write_imm", &us))
        return -1;
    demo_say(ROLE,
             "%-10s %5zu B to   0x%llx rkey 0x%08x %6llu us  imm "
             "0x%08x",
             "write_imm", sizeof DEMO_IMM_PAYLOAD,
             (unsigned long long)(raddr + DEMO_IMM_OFF), s->d.rkey,
             (unsigned long long)us, DEMO_IMM_VALUE);
    /* 7. the target's verdict */
    rf_completion c = s->verdict;
    rf_status st = s->have_verdict ? RF_OK : wait_for(s, VERDICT_CONTEXT, &c);
    if (st == RF_OK)
        st = c.status;
    if (st != RF_OK || c.op != RF_OP_RECV) {
        demo_say(ROLE, "no verdict from the target: %s", rf_status_string(st));
        return -1;
    }
    const char *verdict = (const char *)s->buf + 3072;
    demo_say(ROLE, "target's verdict (%u B): %s", c.len, verdict);
    return strncmp(verdict, "OK", 2) == 0 ? 0 : -1;
}

int demo_initiator(const demo_opts *o)
{
    demo s = {0};
    rf_fabric_attr attr = {.bind_addr = o->host};
    rf_fabric *f = NULL;
    int rc = 1;
    rf_status st = rf_fabric_open(o->provider, &attr, &f);
    if (st != RF_OK) {
        demo_say(ROLE, "FAILED: rf_fabric_open: %s (%s)", rf_status_string(st),
                 rf_error_message());
        return 1;
    }
    s.buf = aligned_alloc(4096, 4096);
    if (!s.buf)
        goto out;
    memset(s.buf, 0, 4096);
    if ((st = rf_mr_reg(f, s.buf, 4096, RF_ACCESS_LOCAL_WRITE, &s.mr)) ||
        (st = rf_cq_create(f, 64, &s.cq))) {
        demo_say(ROLE, "FAILED: setup: %s (%s)", rf_status_string(st),
                 rf_error_message());
        goto out;
    }
    rf_ep_attr ea = {.send_cq = s.cq};
    static const char hello[] = "rf-fabric-demo initiator";
    uint64_t t0 = rf_now_us();
    st = rf_connect(f, o->host, o->port, &ea, hello, sizeof hello - 1,
                    DEMO_TIMEOUT_MS, &s.ep);
    if (st != RF_OK) {
        demo_say(ROLE, "FAILED: rf_connect %s:%u: %s (%s)", o->host,
                 (unsigned)o->port, rf_status_string(st), rf_error_message());
        goto out;
    }
    size_t plen = 0;
    const unsigned char *priv = rf_ep_peer_private_data(s.ep, &plen);
    if (plen < RF_MR_DESC_PACKED_SIZE || !priv) {
        demo_say(ROLE, "FAILED: accept carried %zu B, not a region descriptor",
                 plen);
        goto out;
    }
    rf_mr_desc_unpack(priv, &s.d);
    demo_say(ROLE,
             "provider %s, connected to %s:%u in %llu us; target region "
             "%llu B at 0x%llx, rkey 0x%08x",
             rf_fabric_provider(f), o->host, (unsigned)o->port,
             (unsigned long long)(rf_now_us() - t0),
             (unsigned long long)s.d.len, (unsigned long long)s.d.addr,
             s.d.rkey);
    if (s.d.len < DEMO_REGION_LEN) {
        demo_say(ROLE, "FAILED: region too small");
        goto out;
    }
    /* The receive for the verdict, posted before anything can trigger it. */
    if ((st = rf_post_recv(s.ep, s.buf + 3072, DEMO_REPORT_LEN, s.mr,
                           VERDICT_CONTEXT)) != RF_OK) {
        demo_say(ROLE, "FAILED: rf_post_recv: %s", rf_status_string(st));
        goto out;
    }
    if (run(&s) == 0) {
        demo_say(ROLE, "all steps checked out");
        rc = 0;
    }
out:
    rf_ep_close(s.ep);
    rf_cq_destroy(s.cq);
    if (s.mr)
        rf_mr_dereg(s.mr);
    free(s.buf);
    rf_fabric_close(f);
    return rc;
}
