/* tests/fabric/case_local.c: local argument validation. A batch whose last
 * work request has a local buffer outside its region (before, after,
 * straddling, wrong region), an atomic length other than 8, a missing local
 * region, or a read/atomic into a region without LOCAL_WRITE makes rf_post
 * return RF_ERR_INVALID_ARG with nothing posted: no completion appears, the
 * good write earlier in the batch never reaches the target, and the endpoint
 * stays usable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/common/budget.h"
#include "tests/common/check.h"
#include "tests/fabric/cases.h"
#include "tests/fabric/conn.h"
#include "tests/fabric/pattern.h"
#include "tests/fabric/target.h"

void case_local_args(void)
{
    rt_target t;
    tgt_start(&t);
    rf_mr_desc d;
    tgt_region(&t, 0, 65536, RF_ACCESS_ALL, 4096, &d);
    tgt_fill(&t, 0, 11);
    rf_fabric *f = rt_fabric_open();
    /* A 3-page allocation of which only the middle page is registered. */
    unsigned char *pages = aligned_alloc(4096, 3 * 4096);
    CHECK(pages != NULL, "out of memory");
    memset(pages, 0, 3 * 4096);
    unsigned char *buf = pages + 4096;
    rf_mr *mr = NULL, *ro = NULL;
    CHECK_OK(rf_mr_reg(f, buf, 4096, RF_ACCESS_LOCAL_WRITE, &mr));
    /* A region without LOCAL_WRITE: fine as a write source only. */
    CHECK_OK(rf_mr_reg(f, pages, 4096, RF_ACCESS_REMOTE_READ, &ro));
    rt_conn c;
    rt_connect(f, t.port, "la", &c);
    pat_fill(buf, 64, 12, 128); /* destined for remote offset 128 */

    struct {
        const char *name;
        rf_wr wr;
    } bad[] = {
        {"write from 1 byte before the region",
         {.op = RF_OP_WRITE, .local = buf - 1, .len = 8, .local_mr = mr}},
        {"write straddling the region end",
         {.op = RF_OP_WRITE, .local = buf + 4092, .len = 8, .local_mr = mr}},
        {"write from just past the region",
         {.op = RF_OP_WRITE, .local = buf + 4096, .len = 1, .local_mr = mr}},
        {"read of 4097 bytes into a 4096-byte region",
         {.op = RF_OP_READ, .local = buf, .len = 4097, .local_mr = mr}},
        {"write from a buffer in another region",
         {.op = RF_OP_WRITE, .local = pages + 8192, .len = 8, .local_mr = mr}},
        {"write of 8 bytes without a local region",
         {.op = RF_OP_WRITE, .local = buf, .len = 8, .local_mr = NULL}},
        {"fetch_add of length 4",
         {.op = RF_OP_FETCH_ADD, .local = buf, .len = 4, .local_mr = mr}},
        {"fetch_add of length 16",
         {.op = RF_OP_FETCH_ADD, .local = buf, .len = 16, .local_mr = mr}},
        {"cmp_swap of length 0",
         {.op = RF_OP_CMP_SWAP, .local = buf, .len = 0, .local_mr = mr}},
        {"cmp_swap result straddling the region end",
         {.op = RF_OP_CMP_SWAP,
          .local = buf + 4096 - 4,
          .len = 8,
          .local_mr = mr}},
        {"read into a region without LOCAL_WRITE",
         {.op = RF_OP_READ, .local = pages, .len = 8, .local_mr = ro}},
        {"fetch_add into a region without LOCAL_WRITE",
         {.op = RF_OP_FETCH_ADD, .local = pages, .len = 8, .local_mr = ro}},
        {"receive completion op posted as work",
         {.op = RF_OP_RECV, .local = buf, .len = 8, .local_mr = mr}},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rf_wr wrs[2] = {
            {.op = RF_OP_WRITE,
             .context = (void *)1,
             .local = buf,
             .len = 64,
             .local_mr = mr,
             .remote_addr = d.addr + 128,
             .rkey = d.rkey},
            bad[i].wr,
        };
        wrs[1].context = (void *)2;
        wrs[1].remote_addr = d.addr + 256;
        wrs[1].rkey = d.rkey;
        size_t posted = 77;
        rf_status st = rf_post(c.ep, wrs, 2, &posted);
        CHECK(st == RF_ERR_INVALID_ARG && posted == 0,
              "[good write, %s]: rf_post returned %s with %zu posted, "
              "expected RF_ERR_INVALID_ARG with 0 posted",
              bad[i].name, rf_status_string(st), posted);
        posted = 77;
        st = rf_post(c.ep, &wrs[1], 1, &posted);
        CHECK(st == RF_ERR_INVALID_ARG && posted == 0,
              "%s alone: rf_post returned %s with %zu posted", bad[i].name,
              rf_status_string(st), posted);
    }
    CHECK_ST(rf_post_recv(c.ep, buf + 4000, 200, mr, NULL), RF_ERR_INVALID_ARG);
    CHECK_ST(rf_post_recv(c.ep, pages, 8, ro, NULL), RF_ERR_INVALID_ARG);
    rt_expect_quiet(c.cq, rft_ms(300), "after refused posts");
    tgt_verify(&t, 0, 0, 0, 0, 11); /* no good write landed */
    CHECK_OK(rf_ep_state(c.ep));

    /* The endpoint still works. */
    rt_do(&c, rt_wr(RF_OP_WRITE, buf, 64, mr, d.addr + 128, d.rkey),
          "write after refused posts");
    tgt_verify(&t, 0, 128, 64, 12, 11);

    rt_conn_close(&c);
    CHECK_OK(rf_mr_dereg(mr));
    CHECK_OK(rf_mr_dereg(ro));
    free(pages);
    rf_fabric_close(f);
    tgt_stop(&t);
}
