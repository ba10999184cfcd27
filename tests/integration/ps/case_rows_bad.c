/* tests/integration/ps/case_rows_bad.c: sparse pushes that reach the ps
 * below the client's checks (a raw peer WRITEs its own inbox and
 * WRITE_WITH_IMMs the count, as a compromised worker could): a count above
 * max_push_rows and indices outside the table (past the end, -1, huge) are
 * refused with an error ack and change nothing; a wrong length drops only
 * that connection; the ps keeps serving and counts what it applied and
 * refused. And the row check seen from a reader: a record's version made
 * odd by hand, or changed to an even one its CRC was not sealed at, holds
 * rf_ps_read_rows back until its timeout; restored, the row is read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ps/proto.h"
#include "ps/ps_layout.h"
#include "rdmaflow/byteorder.h"
#include "tests/integration/ps/cases.h"
#include "tests/integration/ps/raw_peer.h"

enum { ROWS = 100, WIDTH = 4, MPR = 8 };

/* One crafted push: count, then n indices and rows; returns the ack. */
static uint64_t crafted(raw_peer *r, rf_mr_desc reg, const ps_entry *e,
                        uint64_t count, const int64_t *idx, size_t n,
                        uint8_t seq)
{
    unsigned char *p = r->mem + 96 * 1024;
    uint64_t inbox = reg.addr + e->inbox.offset;
    rf_put_le64(p, count);
    for (size_t i = 0; i < n; i++)
        rf_put_le64(p + 64 + 8 * i, (uint64_t)idx[i]);
    float *g = (float *)(void *)(p + 1024);
    for (size_t i = 0; i < n * WIDTH; i++)
        g[i] = 1.0f;
    if (n) {
        CHECK_OK(raw_do(r, (rf_wr){.op = RF_OP_WRITE,
                                   .local = p + 64,
                                   .len = 8 * n,
                                   .local_mr = r->mr,
                                   .remote_addr = inbox + PS_SPARSE_IDX_OFF,
                                   .rkey = reg.rkey}));
        CHECK_OK(
            raw_do(r, (rf_wr){.op = RF_OP_WRITE,
                              .local = g,
                              .len = n * WIDTH * sizeof(float),
                              .local_mr = r->mr,
                              .remote_addr = inbox + ps_sparse_rows_off(MPR),
                              .rkey = reg.rkey}));
    }
    return raw_write_imm_acked(r, p, 8, inbox, reg.rkey,
                               ps_imm_make(e->shard_id, seq));
}

static void expect_refused(uint64_t word, const char *what)
{
    CHECK((word & PS_ACK_ERROR) &&
              (rf_status)(-(int32_t)(uint32_t)word) == RF_ERR_INVALID_ARG,
          "%s: ack word %llx, expected an RF_ERR_INVALID_ARG error ack", what,
          (unsigned long long)word);
}

void case_rows_bad_push(void)
{
    pt_cluster cl;
    pt_cluster_start(&cl, 1);
    rf_ps_client *c = cl.chief;
    rf_optim_config cfg;
    rf_optim_defaults(RF_OPTIM_SGD, &cfg);
    cfg.learning_rate = 0.5f;
    rf_ps_shard_spec spec = {.name = "emb_bad",
                             .dtype = RF_F32,
                             .shape = {.rank = 2, .dims = {ROWS, WIDTH}},
                             .trainable = true,
                             .optim = cfg,
                             .max_push_rows = MPR};
    float vals[ROWS * WIDTH];
    rf_ps_var *v = pt_make_var(c, 0, &spec, 3, vals);

    raw_peer r;
    raw_connect_ok(&r, cl.f, cl.ps[0].port, 7, false);
    raw_hello(&r, 7, false);
    rf_mr_desc reg = raw_region0(&r);
    ps_entry e = raw_dir_entry(&r, "emb_bad");
    CHECK(e.inbox.region == 0, "inbox in region %u", e.inbox.region);

    expect_refused(crafted(&r, reg, &e, MPR + 1, NULL, 0, 1),
                   "a count above max_push_rows");
    expect_refused(crafted(&r, reg, &e, 1u << 30, NULL, 0, 2),
                   "a count of 2^30");
    int64_t past[2] = {5, ROWS};
    expect_refused(crafted(&r, reg, &e, 2, past, 2, 3), "index rows");
    int64_t neg[3] = {1, 2, -1};
    expect_refused(crafted(&r, reg, &e, 3, neg, 3, 4), "index -1");
    int64_t huge[1] = {INT64_C(1) << 40};
    expect_refused(crafted(&r, reg, &e, 1, huge, 1, 5), "index 2^40");

    /* The table is unchanged. */
    float *got = pt_read_field(c, v, RF_PS_FIELD_VALUES, ROWS * WIDTH);
    CHECK(memcmp(got, vals, sizeof vals) == 0,
          "a refused sparse push changed the table");
    free(got);

    /* A good crafted push is applied: the check is the ps's, not the
     * client's, and the raw peer is a client like any other. */
    int64_t good[2] = {0, ROWS - 1};
    uint64_t w = crafted(&r, reg, &e, 2, good, 2, 6);
    CHECK(!(w & PS_ACK_ERROR), "a good push was refused: %llx",
          (unsigned long long)w);
    float gr[2 * WIDTH];
    for (size_t i = 0; i < 2 * WIDTH; i++)
        gr[i] = 1.0f;
    CHECK_OK(rf_optim_apply_sparse(&cfg, vals, NULL, ROWS, WIDTH, good, 2, gr,
                                   NULL));

    /* A row whose record's version is odd is owned by a writer:
     * rf_ps_read_rows re-reads it until its timeout and names it (a read
     * without the check would have returned it); so is a record whose CRC
     * is not that of its version and row (an even version it was not
     * sealed at); with its own version back, it is read. */
    ps_layout lay;
    CHECK_OK(ps_layout_full(ROWS * WIDTH * 4, 0, ROWS, MPR, false, &lay));
    uint64_t ver_addr = reg.addr + e.record.offset +
                        ps_row_off(lay.values_off, lay.row_stride, 10) +
                        PS_ROW_VER_OFF;
    unsigned char *word = r.mem + 100 * 1024;
    CHECK_OK(raw_do(&r, (rf_wr){.op = RF_OP_READ,
                                .local = word,
                                .len = 8,
                                .local_mr = r.mr,
                                .remote_addr = ver_addr,
                                .rkey = reg.rkey}));
    uint64_t sealed = rf_get_le64(word);
    CHECK(!(sealed & 1), "row 10's version %llu is odd",
          (unsigned long long)sealed);
    rf_ps_client_options o = {.client_id = 9, .op_timeout_ms = rft_ms(300)};
    rf_ps_client *rc = NULL;
    CHECK_OK(rf_ps_client_connect(cl.f, cl.addrs, 1, &o, &rc));
    rf_ps_var *rv = NULL;
    CHECK_OK(rf_ps_lookup(rc, 0, &spec, &rv));
    pt_buf rowb;
    pt_buf_alloc(rc, &rowb, 2 * WIDTH);
    int64_t ten[2] = {3, 10};
    rf_ps_rows rs = {.var = rv,
                     .field = RF_PS_FIELD_VALUES,
                     .rows = ten,
                     .n = 2,
                     .buf = rowb.p,
                     .mr = rowb.mr};
    uint64_t bad_versions[2] = {sealed + 5, sealed + 6};
    for (int k = 0; k < 3; k++) {
        rf_put_le64(word, k < 2 ? bad_versions[k] : sealed);
        CHECK_OK(raw_do(&r, (rf_wr){.op = RF_OP_WRITE,
                                    .local = word,
                                    .len = 8,
                                    .local_mr = r.mr,
                                    .remote_addr = ver_addr,
                                    .rkey = reg.rkey}));
        if (k < 2) {
            CHECK_ST(rf_ps_read_rows(rc, &rs, 1), RF_ERR_TIMEOUT);
            CHECK_MSG("row 10 of table 'emb_bad'");
        }
    }
    rf_ps_row_counters rcn;
    rf_ps_client_row_counters(rc, &rcn);
    CHECK(rcn.busy > 0 && rcn.torn > 0,
          "the reads saw %llu owned and %llu torn records, want both",
          (unsigned long long)rcn.busy, (unsigned long long)rcn.torn);
    CHECK_OK(rf_ps_read_rows(rc, &rs, 1));
    CHECK(memcmp(rowb.p, vals + 3 * WIDTH, sizeof(float) * WIDTH) == 0 &&
              memcmp(rowb.p + WIDTH, vals + 10 * WIDTH,
                     sizeof(float) * WIDTH) == 0,
          "rows 3 and 10 differ from the table");
    rf_ps_client_close(rc);

    /* A sparse push of another length breaks the protocol: dropped. */
    raw_do_dropped(&r,
                   (rf_wr){.op = RF_OP_WRITE_IMM,
                           .local = r.mem + 96 * 1024,
                           .len = 16,
                           .local_mr = r.mr,
                           .remote_addr = reg.addr + e.inbox.offset,
                           .rkey = reg.rkey,
                           .imm = ps_imm_make(e.shard_id, 7)},
                   rft_ms(10000));
    raw_close(&r);

    /* The ps keeps serving: a real push, then the table equals the local
     * reference. */
    pt_buf b;
    pt_buf_alloc(c, &b, 2 + WIDTH);
    int64_t *idx = (int64_t *)(void *)b.p;
    idx[0] = 42;
    for (size_t i = 0; i < WIDTH; i++)
        b.p[2 + i] = -2.0f;
    CHECK_OK(rf_ps_push_sparse_inbox(c, v, idx, 1, b.p + 2, b.mr));
    CHECK_OK(rf_ps_push_wait(c));
    CHECK_OK(rf_optim_apply_sparse(&cfg, vals, NULL, ROWS, WIDTH, idx, 1,
                                   b.p + 2, NULL));
    got = pt_read_field(c, v, RF_PS_FIELD_VALUES, ROWS * WIDTH);
    CHECK(memcmp(got, vals, sizeof vals) == 0,
          "the table differs from the reference after the good pushes");
    free(got);

    CHECK_OK(rf_ps_shutdown(c));
    char rest[256];
    rft_expect(&cl.ps[0].child, "COUNTERS ", rest, sizeof rest, rft_ms(10000));
    const char *sp = strstr(rest, "protocol=");
    unsigned long long proto = 0, applies = 0, rows = 0, refused = 0;
    CHECK(sp && sscanf(sp,
                       "protocol=%llu sparse=%llu sparse_rows=%llu "
                       "sparse_refused=%llu",
                       &proto, &applies, &rows, &refused) == 4,
          "COUNTERS %s", rest);
    CHECK(proto == 1 && applies == 2 && rows == 3 && refused == 5,
          "ps counters %s (want protocol=1 sparse=2 sparse_rows=3 "
          "sparse_refused=5)",
          rest);
    rft_expect(&cl.ps[0].child, "EXIT ", rest, sizeof rest, rft_ms(10000));
    CHECK(strcmp(rest, "RF_OK") == 0, "ps exited with %s", rest);
    rft_wait_ok(&cl.ps[0].child, rft_ms(10000));
    rf_ps_client_close(c);
    rf_fabric_close(cl.f);
}
