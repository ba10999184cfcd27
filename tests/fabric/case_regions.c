/* tests/fabric/case_regions.c: many regions of the target coming and going
 * while an initiator reads them. 24 regions exist before the connection
 * (the handshake's grants), 24 more are registered while connected; each is
 * read back with its own pattern. Then every third is deregistered and 8
 * new ones registered: the survivors and the new ones still read right,
 * and a read with a deregistered region's rkey fails with
 * RF_ERR_REMOTE_ACCESS. On shm each region is a segment of its own, found
 * through the endpoint's segment index, which grows and is rebuilt here. */
#include <stdio.h>
#include <string.h>

#include "tests/common/check.h"
#include "tests/fabric/cases.h"
#include "tests/fabric/conn.h"
#include "tests/fabric/pattern.h"
#include "tests/fabric/target.h"

#define FIRST  24
#define SECOND 24
#define LATE   8
#define NREG   (FIRST + SECOND + LATE)
#define RSIZE  8192u
#define PROBE  512u

static uint64_t seed_of(int r)
{
    return 91000 + (uint64_t)r;
}

static void add_region(rt_target *t, int r, rf_mr_desc *d)
{
    tgt_region(t, r, RSIZE, RF_ACCESS_ALL, 4096, d);
    tgt_fill(t, r, seed_of(r));
}

/* Reads PROBE bytes at an offset of region r and checks them. */
static void read_region(rt_conn *c, rt_buf *b, int r, const rf_mr_desc *d)
{
    uint64_t off = ((uint64_t)r * 97u) % (RSIZE - PROBE);
    memset(b->p, 0, PROBE);
    rt_do(c, rt_wr(RF_OP_READ, b->p, PROBE, b->mr, d->addr + off, d->rkey),
          "read of a region");
    size_t bad = pat_check(b->p, PROBE, seed_of(r), off);
    CHECK(bad == PAT_OK, "region %d: byte %zu of %u read wrong", r, bad, PROBE);
}

void case_regions_churn(void)
{
    rt_target t;
    tgt_start(&t);
    rf_mr_desc d[NREG];
    int alive[NREG] = {0};
    for (int r = 0; r < FIRST; r++) {
        add_region(&t, r, &d[r]);
        alive[r] = 1;
    }
    rf_fabric *f = rt_fabric_open();
    rt_conn c;
    rt_connect(f, t.port, "regions", &c);
    rt_buf b;
    rt_buf_alloc(f, &b, PROBE, RF_ACCESS_LOCAL_WRITE);
    for (int r = FIRST; r < FIRST + SECOND; r++) {
        add_region(&t, r, &d[r]);
        alive[r] = 1;
    }
    for (int r = 0; r < FIRST + SECOND; r++)
        read_region(&c, &b, r, &d[r]);
    char reply[16];
    for (int r = 0; r < FIRST + SECOND; r += 3) {
        tgt_cmd(&t, reply, sizeof reply, "dereg %d", r);
        alive[r] = 0;
    }
    for (int r = FIRST + SECOND; r < NREG; r++) {
        add_region(&t, r, &d[r]);
        alive[r] = 1;
    }
    /* Twice, in two orders: a lookup must not depend on the last one. */
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < NREG; k++) {
            int r = pass ? NREG - 1 - k : k;
            if (alive[r])
                read_region(&c, &b, r, &d[r]);
        }
    /* A deregistered region's rkey: refused, and the endpoint fails. */
    rf_wr wr = rt_wr(RF_OP_READ, b.p, PROBE, b.mr, d[3].addr, d[3].rkey);
    wr.context = &wr;
    CHECK_OK(rf_post(c.ep, &wr, 1, NULL));
    rf_completion comp = rt_wait_one(c.cq, 10000);
    rt_expect_comp(&comp, "read of a deregistered region", &wr, RF_OP_READ,
                   RF_ERR_REMOTE_ACCESS, -1);
    rt_buf_free(&b);
    rt_conn_close(&c);
    rf_fabric_close(f);
    tgt_stop(&t);
}
