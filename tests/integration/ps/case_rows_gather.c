/* tests/integration/ps/case_rows_gather.c: the ps-side gather
 * (rf_ps_gather_rows). rows_gather: values and a slot of two tables on 2
 * ps, in sets larger than max_push_rows (several requests) and with a
 * repeated row, are bitwise what rf_ps_read_rows returns and what the
 * table holds, also right behind an apply=ps push to the same table; bad
 * indices, a buffer not registered for replies and a missing field are
 * refused before anything is posted; the ps counts exactly the requests
 * and rows served. rows_gather_bad: requests crafted below the client by a
 * raw peer (indices past the end, -1, a count above max_push_rows, a reply
 * too short for its rows, a bad field, a reserved byte) get error acks
 * carrying the bad position, the table and the reply buffer untouched; a
 * good crafted request gets its rows WRITten into the raw peer's memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ps/proto.h"
#include "ps/ps_layout.h"
#include "rdmaflow/byteorder.h"
#include "tests/integration/ps/cases.h"
#include "tests/integration/ps/raw_peer.h"

/* A float buffer registered for replies (freed by the caller after the
 * client is closed). */
static float *reply_buf(rf_ps_client *c, size_t n, rf_mr **mr)
{
    size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
    float *p = aligned_alloc(64, bytes);
    CHECK(p, "out of memory");
    memset(p, 0xee, bytes);
    CHECK_OK(rf_ps_client_register_reply(c, p, bytes, mr));
    return p;
}

/* Shuts the cluster down; each ps's gather counters go into req, rows,
 * refused (arrays of cl->n). */
static void stop_counting(pt_cluster *cl, unsigned long long *req,
                          unsigned long long *rows, unsigned long long *refused)
{
    CHECK_OK(rf_ps_shutdown(cl->chief));
    for (size_t i = 0; i < cl->n; i++) {
        char rest[512];
        rft_expect(&cl->ps[i].child, "COUNTERS ", rest, sizeof rest,
                   rft_ms(10000));
        const char *g = strstr(rest, "gather=");
        CHECK(g && sscanf(g, "gather=%llu gather_rows=%llu gather_refused=%llu",
                          &req[i], &rows[i], &refused[i]) == 3,
              "ps %zu COUNTERS %s", i, rest);
        rft_expect(&cl->ps[i].child, "EXIT ", rest, sizeof rest, rft_ms(10000));
        CHECK(strcmp(rest, "RF_OK") == 0, "ps %zu exited with %s", i, rest);
        rft_wait_ok(&cl->ps[i].child, rft_ms(10000));
    }
    rf_ps_client_close(cl->chief);
    rf_fabric_close(cl->f);
}

static rf_ps_shard_spec table_spec(const char *name, int64_t rows,
                                   int64_t width, uint32_t mpr,
                                   rf_optimizer_kind kind)
{
    rf_optim_config cfg;
    rf_optim_defaults(kind, &cfg);
    cfg.learning_rate = 0.25f;
    if (kind == RF_OPTIM_MOMENTUM)
        cfg.momentum = 0.9f;
    return (rf_ps_shard_spec){.name = name,
                              .dtype = RF_F32,
                              .shape = {.rank = 2, .dims = {rows, width}},
                              .trainable = true,
                              .optim = cfg,
                              .max_push_rows = mpr};
}

enum {
    AR = 1000,
    AW = 8,
    AM = 16,
    BR = 300,
    BW = 5,
    BM = 64,
    NA = 40,
    NB = 25
};

static void gather_equals_read(rf_ps_client *c, rf_ps_rows *g, rf_ps_rows *r,
                               size_t n, const char *when)
{
    CHECK_OK(rf_ps_gather_rows(c, g, n));
    CHECK_OK(rf_ps_read_rows(c, r, n));
    for (size_t i = 0; i < n; i++) {
        rf_ps_var_info info;
        rf_ps_var_get_info(g[i].var, &info);
        CHECK(memcmp(g[i].buf, r[i].buf, g[i].n * info.row_bytes) == 0,
              "%s: set %zu: gathered rows differ from rf_ps_read_rows'", when,
              i);
    }
}

void case_rows_gather(void)
{
    pt_cluster cl;
    pt_cluster_start(&cl, 2);
    rf_ps_client *c = cl.chief;
    rf_ps_shard_spec sa = table_spec("emb_ga", AR, AW, AM, RF_OPTIM_ADAGRAD);
    rf_ps_shard_spec sb = table_spec("emb_gb", BR, BW, BM, RF_OPTIM_MOMENTUM);
    float *la = malloc(AR * AW * sizeof(float));
    float *lb = malloc(BR * BW * sizeof(float));
    float *slot = malloc(AR * AW * sizeof(float));
    CHECK(la && lb && slot, "out of memory");
    rf_ps_var *a = pt_make_var(c, 0, &sa, 21, la);
    rf_ps_var *b = pt_make_var(c, 1, &sb, 22, lb);
    rf_optim_slot_init(&sa.optim, 0, slot, AR * AW);

    int64_t ra[NA], rb[NB];
    for (size_t i = 0; i < NA; i++)
        ra[i] = (int64_t)((i * 7919 + 13) % AR);
    ra[NA - 1] = AR - 1;
    ra[5] = ra[0]; /* a repeated row is gathered twice */
    for (size_t i = 0; i < NB; i++)
        rb[i] = (int64_t)((i * 104729 + 7) % BR);
    size_t total = 2 * NA * AW + NB * BW;
    rf_mr *gmr;
    float *gbuf = reply_buf(c, total, &gmr);
    pt_buf rbuf;
    pt_buf_alloc(c, &rbuf, total);
    const size_t off[3] = {0, NA * AW, 2 * NA * AW}; /* floats */
    rf_ps_rows g[3] = {
        {.var = a, .field = RF_PS_FIELD_VALUES, .rows = ra, .n = NA},
        {.var = a, .field = RF_PS_FIELD_SLOT0, .rows = ra, .n = NA},
        {.var = b, .field = RF_PS_FIELD_VALUES, .rows = rb, .n = NB},
    };
    rf_ps_rows r[3];
    for (size_t i = 0; i < 3; i++) {
        size_t o = off[i];
        g[i].buf = gbuf + o;
        g[i].mr = gmr;
        r[i] = g[i];
        r[i].buf = rbuf.p + o;
        r[i].mr = rbuf.mr;
    }
    gather_equals_read(c, g, r, 3, "first gather");
    for (size_t i = 0; i < NA; i++) {
        CHECK(memcmp((float *)g[0].buf + i * AW, la + ra[i] * AW,
                     AW * sizeof(float)) == 0,
              "gathered row %lld of emb_ga (position %zu) differs from the "
              "table",
              (long long)ra[i], i);
        CHECK(memcmp((float *)g[1].buf + i * AW, slot + ra[i] * AW,
                     AW * sizeof(float)) == 0,
              "gathered slot row %lld of emb_ga differs", (long long)ra[i]);
    }
    for (size_t i = 0; i < NB; i++)
        CHECK(memcmp((float *)g[2].buf + i * BW, lb + rb[i] * BW,
                     BW * sizeof(float)) == 0,
              "gathered row %lld of emb_gb (position %zu) differs",
              (long long)rb[i], i);

    /* Right behind an apply=ps push to the same table: the gather waits
     * for its ack and sees the update; the push's own wait still works. */
    pt_buf pb;
    pt_buf_alloc(c, &pb, 2 + 2 * AW);
    int64_t *pidx = (int64_t *)(void *)pb.p;
    pidx[0] = ra[0];
    pidx[1] = ra[1];
    for (size_t i = 0; i < 2 * AW; i++)
        pb.p[4 + i] = 0.5f;
    CHECK_OK(rf_ps_push_sparse_inbox(c, a, pidx, 2, pb.p + 4, pb.mr));
    CHECK_OK(rf_ps_gather_rows(c, g, 1));
    CHECK_OK(rf_ps_push_wait(c));
    CHECK(memcmp(g[0].buf, la + ra[0] * AW, AW * sizeof(float)) != 0,
          "the gather behind the push returned the row before it");
    CHECK_OK(rf_ps_read_rows(c, r, 1));
    CHECK(memcmp(g[0].buf, r[0].buf, NA * AW * sizeof(float)) == 0,
          "the gather behind the push differs from rf_ps_read_rows");
    gather_equals_read(c, g, r, 3, "after the push");

    /* Refused before anything is posted (the buffer untouched, the ps's
     * counters unchanged: checked at the end). */
    memset(gbuf, 0xab, NA * AW * sizeof(float));
    float mark;
    memcpy(&mark, gbuf, 4);
    int64_t bad[3] = {3, AR, 7};
    rf_ps_rows one = g[0];
    one.rows = bad;
    one.n = 3;
    CHECK_ST(rf_ps_gather_rows(c, &one, 1), RF_ERR_INVALID_ARG);
    CHECK_MSG("index 1000 at position 1");
    CHECK_MSG("emb_ga");
    bad[1] = -1;
    rf_ps_rows two[2] = {g[2], one};
    CHECK_ST(rf_ps_gather_rows(c, two, 2), RF_ERR_INVALID_ARG);
    CHECK_MSG("index -1 at position 1 of set 1");
    CHECK(memcmp(&mark, gbuf, 4) == 0 && memcmp(&mark, gbuf + AW, 4) == 0,
          "a refused gather wrote the buffer");
    rf_ps_rows plain = r[2]; /* registered with rf_ps_client_register */
    CHECK_ST(rf_ps_gather_rows(c, &plain, 1), RF_ERR_INVALID_ARG);
    CHECK_MSG("rf_ps_client_register_reply");
    rf_ps_rows nofield = g[2];
    nofield.field = RF_PS_FIELD_SLOT0 + 1;
    CHECK_ST(rf_ps_gather_rows(c, &nofield, 1), RF_ERR_INVALID_ARG);
    one.n = 0;
    CHECK_OK(rf_ps_gather_rows(c, &one, 1));
    CHECK_OK(rf_ps_gather_rows(c, NULL, 0));

    /* Requests: set 0 and set 1 of 40 rows at 16 per request are 3 each,
     * gathered in three rounds (the first, the one behind the push, after
     * it: 3 + 3, 3, 3 + 3); set 2 (25 rows, 64 per request) once in the
     * first and in the last round. */
    unsigned long long req[2], rows[2], refused[2];
    stop_counting(&cl, req, rows, refused);
    CHECK(req[0] == 15 && rows[0] == 5 * NA && refused[0] == 0,
          "ps 0 gathers: %llu requests, %llu rows, %llu refused (want 15, "
          "%d, 0)",
          req[0], rows[0], refused[0], 5 * NA);
    CHECK(req[1] == 2 && rows[1] == 2 * NB && refused[1] == 0,
          "ps 1 gathers: %llu requests, %llu rows, %llu refused (want 2, %d, "
          "0)",
          req[1], rows[1], refused[1], 2 * NB);
    free(gbuf);
    free(la);
    free(lb);
    free(slot);
}

enum { ROWS = 100, WIDTH = 4, MPR = 8 };

/* Raw peer memory: the request at 96K, the reply at 100K. */
#define REQ_AT   (96u * 1024)
#define REPLY_AT (100u * 1024)

typedef struct crafted_req {
    uint64_t count;
    uint32_t field;
    uint64_t reply_len;
    unsigned char reserved; /* written into byte 40 */
} crafted_req;

/* One crafted gather; returns the ack word. */
static uint64_t crafted(raw_peer *r, rf_mr_desc reg, const ps_entry *e,
                        crafted_req q, const int64_t *idx, size_t n,
                        uint8_t seq)
{
    ps_layout lay;
    CHECK_OK(ps_layout_full(ROWS * WIDTH * 4, 0, ROWS, MPR, false, &lay));
    uint64_t area =
        reg.addr + e->inbox.offset + ps_gather_off(MPR, lay.row_bytes);
    unsigned char *p = r->mem + REQ_AT;
    rf_mr_desc mine;
    rf_mr_describe(r->mr, &mine);
    memset(p, 0, PS_GATHER_REQ_BYTES);
    rf_put_le64(p, q.count);
    rf_put_le32(p + 8, q.field);
    rf_put_le32(p + 12, mine.rkey);
    rf_put_le64(p + 16, mine.addr + REPLY_AT);
    rf_put_le64(p + 24, q.reply_len);
    p[40] = q.reserved;
    for (size_t i = 0; i < n; i++)
        rf_put_le64(p + PS_GATHER_REQ_BYTES + 8 * i, (uint64_t)idx[i]);
    if (n)
        CHECK_OK(raw_do(r, (rf_wr){.op = RF_OP_WRITE,
                                   .local = p + PS_GATHER_REQ_BYTES,
                                   .len = 8 * n,
                                   .local_mr = r->mr,
                                   .remote_addr = area + PS_GATHER_REQ_BYTES,
                                   .rkey = reg.rkey}));
    return raw_write_imm_acked(r, p, PS_GATHER_REQ_BYTES, area, reg.rkey,
                               ps_imm_make(e->shard_id, seq));
}

static void expect_refused(uint64_t word, uint64_t pos1, const char *what)
{
    CHECK((word & PS_ACK_ERROR) &&
              (rf_status)(-(int32_t)(uint32_t)word) == RF_ERR_INVALID_ARG &&
              ps_ack_err_pos(word) == pos1,
          "%s: ack word %llx, expected an RF_ERR_INVALID_ARG error ack with "
          "position+1 %llu",
          what, (unsigned long long)word, (unsigned long long)pos1);
}

void case_rows_gather_bad(void)
{
    pt_cluster cl;
    pt_cluster_start(&cl, 1);
    rf_ps_client *c = cl.chief;
    rf_ps_shard_spec spec =
        table_spec("emb_gbad", ROWS, WIDTH, MPR, RF_OPTIM_SGD);
    float vals[ROWS * WIDTH];
    rf_ps_var *v = pt_make_var(c, 0, &spec, 5, vals);

    raw_peer r;
    raw_connect_ok(&r, cl.f, cl.ps[0].port, 7, false);
    raw_hello(&r, 7, false);
    rf_mr_desc reg = raw_region0(&r);
    ps_entry e = raw_dir_entry(&r, "emb_gbad");
    CHECK(e.inbox.region == 0, "inbox in region %u", e.inbox.region);

    unsigned char *out = r.mem + REPLY_AT;
    memset(out, 0x5a, 4096);
    const size_t rb = WIDTH * sizeof(float);
    int64_t past[3] = {5, 6, ROWS};
    expect_refused(
        crafted(&r, reg, &e, (crafted_req){3, 0, 3 * rb, 0}, past, 3, 1), 3,
        "index rows at position 2");
    int64_t neg[2] = {-1, 2};
    expect_refused(
        crafted(&r, reg, &e, (crafted_req){2, 0, 2 * rb, 0}, neg, 2, 2), 1,
        "index -1 at position 0");
    int64_t huge[1] = {INT64_C(1) << 40};
    expect_refused(crafted(&r, reg, &e, (crafted_req){1, 0, rb, 0}, huge, 1, 3),
                   1, "index 2^40");
    int64_t good[3] = {0, 42, ROWS - 1};
    expect_refused(crafted(&r, reg, &e,
                           (crafted_req){MPR + 1, 0, (MPR + 1) * rb, 0}, good,
                           3, 4),
                   0, "a count above max_push_rows");
    expect_refused(
        crafted(&r, reg, &e, (crafted_req){3, 0, 3 * rb - 1, 0}, good, 3, 5), 0,
        "a reply one byte short of its rows");
    expect_refused(
        crafted(&r, reg, &e, (crafted_req){3, 1, 3 * rb, 0}, good, 3, 6), 0,
        "a field sgd's table lacks (slot 0)");
    expect_refused(
        crafted(&r, reg, &e, (crafted_req){3, 0, 3 * rb, 1}, good, 3, 7), 0,
        "a reserved byte set");
    for (size_t i = 0; i < 4096; i++)
        CHECK(out[i] == 0x5a, "a refused gather wrote the reply at byte %zu",
              i);
    float *got = pt_read_field(c, v, RF_PS_FIELD_VALUES, ROWS * WIDTH);
    CHECK(memcmp(got, vals, sizeof vals) == 0,
          "a refused gather changed the table");
    free(got);

    /* A good crafted request: exactly its rows land, nothing after them. */
    uint64_t w =
        crafted(&r, reg, &e, (crafted_req){3, 0, 3 * rb, 0}, good, 3, 8);
    CHECK(!(w & PS_ACK_ERROR) && w == 3, "a good gather: ack %llx",
          (unsigned long long)w);
    for (size_t i = 0; i < 3; i++)
        CHECK(memcmp(out + i * rb, vals + good[i] * WIDTH, rb) == 0,
              "crafted gather: row %lld differs", (long long)good[i]);
    for (size_t i = 3 * rb; i < 4096; i++)
        CHECK(out[i] == 0x5a, "the gather wrote past its rows at byte %zu", i);
    raw_close(&r);

    unsigned long long req = 0, rows = 0, refused = 0;
    stop_counting(&cl, &req, &rows, &refused);
    CHECK(req == 1 && rows == 3 && refused == 7,
          "ps gathers: %llu requests, %llu rows, %llu refused (want 1, 3, 7)",
          req, rows, refused);
}
