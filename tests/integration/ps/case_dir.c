/* tests/integration/ps/case_dir.c: shard creation and lookup across two ps
 * tasks (directory round trip, partitioned parts, idempotent create, lookup
 * waiting for the chief) and the refusal of mismatched specs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/integration/ps/cases.h"
#include "tests/integration/ps/specs.h"

static rf_ps_shard_spec spec2(const char *name, uint32_t part, int64_t a,
                              int64_t b, rf_optimizer_kind kind)
{
    int64_t dims[2] = {a, b};
    rf_ps_shard_spec s = {.name = name,
                          .part = part,
                          .dtype = RF_F32,
                          .shape = rf_shape_make(2, dims),
                          .trainable = true};
    rf_optim_defaults(kind, &s.optim);
    if (kind != RF_OPTIM_ADAM)
        s.optim.learning_rate = 0.1f;
    if (kind == RF_OPTIM_MOMENTUM || kind == RF_OPTIM_RMSPROP)
        s.optim.momentum = 0.9f;
    return s;
}

void case_directory(void)
{
    pt_cluster cl;
    pt_cluster_start(&cl, 2);
    /* A partitioned variable (two parts on different ps), an Adam variable,
     * a non-trainable int64 one. */
    rf_ps_shard_spec p0 = spec2("layer/w", 0, 50, 8, RF_OPTIM_MOMENTUM);
    rf_ps_shard_spec p1 = spec2("layer/w", 1, 30, 8, RF_OPTIM_MOMENTUM);
    rf_ps_shard_spec ad = spec2("layer/b", 0, 1, 8, RF_OPTIM_ADAM);
    int64_t n3 = 3;
    rf_ps_shard_spec cnt = {
        .name = "counts", .dtype = RF_I64, .shape = rf_shape_make(1, &n3)};
    rf_ps_var *v0, *v1, *va, *vc, *again;
    CHECK_OK(rf_ps_create(cl.chief, 0, &p0, &v0));
    CHECK_OK(rf_ps_create(cl.chief, 1, &p1, &v1));
    CHECK_OK(rf_ps_create(cl.chief, 1, &ad, &va));
    CHECK_OK(rf_ps_create(cl.chief, 0, &cnt, &vc));
    CHECK_OK(rf_ps_create(cl.chief, 0, &p0, &again));
    CHECK(again == v0, "creating the same shard twice gave a new handle");

    rf_ps_var_info i0, i1, ia, ic;
    rf_ps_var_get_info(v0, &i0);
    rf_ps_var_get_info(v1, &i1);
    rf_ps_var_get_info(va, &ia);
    rf_ps_var_get_info(vc, &ic);
    CHECK(i0.ps_task == 0 && i1.ps_task == 1 && i0.part == 0 && i1.part == 1,
          "placement");
    CHECK(i0.values_bytes == 50 * 8 * 4 && i0.num_slots == 1, "w part 0");
    CHECK(ia.num_slots == 2 && ia.values_bytes == 32, "adam slots");
    CHECK(ic.num_slots == 0 && ic.values_bytes == 24, "int64 counts");
    CHECK(i0.remote_addr % 64 == 0 && ia.remote_addr % 64 == 0,
          "records are 64-byte aligned");
    /* values + one slot, each 64-aligned, plus the 64-byte header */
    CHECK(i0.record_bytes == 64 + 1600 + 1600, "record of w: %zu",
          i0.record_bytes);

    /* Another worker (started later) finds them in the directories. */
    rf_ps_client *w = pt_client(cl.f, cl.addrs, 2, 1, false);
    rf_ps_var *l0, *l1, *la, *lc;
    CHECK_OK(rf_ps_lookup(w, 0, &p0, &l0));
    CHECK_OK(rf_ps_lookup(w, 1, &p1, &l1));
    CHECK_OK(rf_ps_lookup(w, 1, &ad, &la));
    CHECK_OK(rf_ps_lookup(w, 0, &cnt, &lc));
    rf_ps_var_info j0, ja;
    rf_ps_var_get_info(l0, &j0);
    rf_ps_var_get_info(la, &ja);
    CHECK(j0.remote_addr == i0.remote_addr && j0.rkey == i0.rkey &&
              ja.remote_addr == ia.remote_addr,
          "both workers see the same records");
    CHECK(rf_ps_client_incarnation(w, 0) == cl.ps[0].incarnation &&
              rf_ps_client_incarnation(w, 1) == cl.ps[1].incarnation,
          "incarnations");

    /* Values written by the chief are read by the other worker. */
    pt_buf b;
    pt_buf_alloc(cl.chief, &b, 400);
    pt_fill(b.p, 400, 7);
    rf_ps_xfer x = {.var = v0,
                    .field = RF_PS_FIELD_VALUES,
                    .buf = b.p,
                    .len = 1600,
                    .mr = b.mr};
    CHECK_OK(rf_ps_init_values(cl.chief, &x, 1));
    float *got = pt_read_field(w, l0, RF_PS_FIELD_VALUES, 400);
    CHECK(memcmp(got, b.p, 1600) == 0, "values differ");
    free(got);
    /* Momentum's accumulator starts at 0; Adam's m, v at 0. */
    float *slot = pt_read_field(w, l0, RF_PS_FIELD_SLOT0, 400);
    for (int i = 0; i < 400; i++)
        CHECK(slot[i] == 0.0f, "momentum slot %d = %g", i, slot[i]);
    free(slot);

    /* A lookup of a shard the chief creates a little later waits for it. */
    rf_ps_shard_spec late = spec2("late", 0, 2, 2, RF_OPTIM_SGD);
    rf_ps_var *lv;
    CHECK_OK(rf_ps_create(cl.chief, 1, &late, &lv));
    CHECK_OK(rf_ps_lookup(w, 1, &late, &lv));

    /* A shard that is never created: bounded wait and a clear error. */
    rf_ps_client_options o = {.client_id = 2,
                              .connect_timeout_ms = rft_ms(20000),
                              .lookup_timeout_ms = 300};
    rf_ps_client *w2;
    CHECK_OK(rf_ps_client_connect(cl.f, cl.addrs, 2, &o, &w2));
    rf_ps_shard_spec never = spec2("never", 3, 2, 2, RF_OPTIM_SGD);
    long long t0 = rf_now_ms();
    CHECK_ST(rf_ps_lookup(w2, 0, &never, &lv), RF_ERR_TIMEOUT);
    CHECK_MSG("'never' part 3 was not created on ps task 0");
    CHECK(rf_now_ms() - t0 < rft_ms(5000), "lookup wait not bounded");
    /* Only the chief creates. */
    CHECK_ST(rf_ps_create(w2, 0, &never, &lv), RF_ERR_INVALID_ARG);
    CHECK_MSG("only the chief");
    rf_ps_client_close(w2);
    rf_ps_client_close(w);
    pt_cluster_stop(&cl);
}

void case_mismatch(void)
{
    pt_cluster cl;
    pt_cluster_start(&cl, 1);
    rf_ps_shard_spec s = spec2("dense/kernel", 0, 784, 256, RF_OPTIM_SGD);
    rf_ps_var *v;
    CHECK_OK(rf_ps_create(cl.chief, 0, &s, &v));

    /* The chief re-creating with another shape: refused by the ps. */
    rf_ps_shard_spec other = spec2("dense/kernel", 0, 784, 128, RF_OPTIM_SGD);
    CHECK_ST(rf_ps_create(cl.chief, 0, &other, &v), RF_ERR_INVALID_ARG);
    CHECK_MSG("'dense/kernel' part 0 exists on ps task 0");
    CHECK_MSG("[784,256]");
    CHECK_MSG("[784,128]");

    /* Another worker whose graph disagrees: shape, dtype, optimizer. */
    rf_ps_client *w = pt_client(cl.f, cl.addrs, 1, 1, false);
    CHECK_ST(rf_ps_lookup(w, 0, &other, &v), RF_ERR_INVALID_ARG);
    CHECK_MSG("'dense/kernel' part 0 on ps task 0");
    CHECK_MSG("has shape [784,256] float32");
    CHECK_MSG("graph has shape [784,128] float32");

    int64_t n = 5;
    rf_ps_shard_spec i32 = {
        .name = "ids", .dtype = RF_I32, .shape = rf_shape_make(1, &n)};
    CHECK_OK(rf_ps_create(cl.chief, 0, &i32, &v));
    rf_ps_shard_spec i64 = i32;
    i64.dtype = RF_I64;
    CHECK_ST(rf_ps_lookup(w, 0, &i64, &v), RF_ERR_INVALID_ARG);
    CHECK_MSG("int32");
    CHECK_MSG("int64");

    rf_ps_shard_spec adam = spec2("dense/kernel", 0, 784, 256, RF_OPTIM_ADAM);
    CHECK_ST(rf_ps_lookup(w, 0, &adam, &v), RF_ERR_INVALID_ARG);
    CHECK_MSG("sgd");
    CHECK_MSG("adam");

    /* Specs refused locally before anything is sent. */
    rf_ps_shard_spec bad = s;
    bad.dtype = RF_I32; /* trainable int32 */
    CHECK_ST(rf_ps_create(cl.chief, 0, &bad, &v), RF_ERR_INVALID_ARG);
    bad = s;
    bad.optim.learning_rate = -1.0f;
    CHECK_ST(rf_ps_create(cl.chief, 0, &bad, &v), RF_ERR_INVALID_ARG);
    CHECK_MSG("learning_rate");
    char longname[300];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    bad = s;
    bad.name = longname;
    CHECK_ST(rf_ps_create(cl.chief, 0, &bad, &v), RF_ERR_INVALID_ARG);
    CHECK_ST(rf_ps_create(cl.chief, 5, &s, &v), RF_ERR_INVALID_ARG);
    CHECK_MSG("ps task 5");

    /* The matching lookup still works. */
    CHECK_OK(rf_ps_lookup(w, 0, &s, &v));
    rf_ps_client_close(w);
    pt_cluster_stop(&cl);
}

/* Many small shards and one bigger than an arena chunk (its own chunk, a new
 * region the workers learn about): directories and regions arrive in
 * several chunks, reads are posted in several rf_post calls (more than the
 * send queue), pushes wait for room below the ps's receive depth. Checked
 * against SGD computed here. */
void case_many(void)
{
    enum { NSMALL = 700, SMALL = 10, BIG = 600 * 1024 };
    pt_cluster cl;
    pt_cluster_start(&cl, 2);
    static rf_ps_var *vars[NSMALL + 1];
    static char names[NSMALL + 1][32];
    static rf_ps_xfer inits[NSMALL + 1], pulls[NSMALL + 1];
    pt_buf vals, g, want;
    size_t total = (size_t)NSMALL * SMALL + BIG;
    pt_buf_alloc(cl.chief, &vals, total);
    pt_buf_alloc(cl.chief, &g, total);
    pt_buf_alloc(cl.chief, &want, total);
    pt_fill(want.p, total, 5);
    pt_fill(g.p, total, 6);
    size_t off = 0;
    for (int i = 0; i <= NSMALL; i++) {
        int64_t n = i < NSMALL ? SMALL : BIG;
        snprintf(names[i], sizeof names[i], "many/v%d", i);
        rf_ps_shard_spec s = {.name = names[i],
                              .dtype = RF_F32,
                              .shape = rf_shape_make(1, &n),
                              .trainable = true};
        rf_optim_defaults(RF_OPTIM_SGD, &s.optim);
        s.optim.learning_rate = 0.25f;
        CHECK_OK(rf_ps_create(cl.chief, (size_t)i % 2, &s, &vars[i]));
        size_t bytes = (size_t)n * sizeof(float);
        pulls[i] = (rf_ps_xfer){.var = vars[i],
                                .field = RF_PS_FIELD_VALUES,
                                .buf = vals.p + off,
                                .len = bytes,
                                .mr = vals.mr};
        inits[i] = pulls[i];
        inits[i].buf = want.p + off;
        inits[i].mr = want.mr;
        off += (size_t)n;
    }
    /* Initial values in one call, then a second worker looks everything up
     * (fetching the chunked directories and regions) and pulls. */
    CHECK_OK(rf_ps_init_values(cl.chief, inits, NSMALL + 1));
    rf_ps_client *w = pt_client(cl.f, cl.addrs, 2, 1, false);
    static rf_ps_xfer wp[NSMALL + 1], wg[NSMALL + 1];
    pt_buf wv, wgb;
    pt_buf_alloc(w, &wv, total);
    pt_buf_alloc(w, &wgb, total);
    memcpy(wgb.p, g.p, total * sizeof(float));
    off = 0;
    for (int i = 0; i <= NSMALL; i++) {
        int64_t n = i < NSMALL ? SMALL : BIG;
        rf_ps_shard_spec s = {.name = names[i],
                              .dtype = RF_F32,
                              .shape = rf_shape_make(1, &n),
                              .trainable = true};
        rf_optim_defaults(RF_OPTIM_SGD, &s.optim);
        s.optim.learning_rate = 0.25f;
        rf_ps_var *v;
        CHECK_OK(rf_ps_lookup(w, (size_t)i % 2, &s, &v));
        wp[i] = (rf_ps_xfer){.var = v,
                             .field = RF_PS_FIELD_VALUES,
                             .buf = wv.p + off,
                             .len = (size_t)n * 4,
                             .mr = wv.mr};
        wg[i] = wp[i];
        wg[i].buf = wgb.p + off;
        wg[i].mr = wgb.mr;
        off += (size_t)n;
    }
    static rf_ps_var *wvars[NSMALL + 1];
    for (int i = 0; i <= NSMALL; i++)
        wvars[i] = wp[i].var;
    CHECK_OK(rf_ps_wait_initialized(w, wvars, NSMALL + 1, 10, rft_ms(5000)));
    CHECK_OK(rf_ps_read(w, wp, NSMALL + 1));
    CHECK(memcmp(wv.p, want.p, total * 4) == 0, "pulled values differ");
    /* One apply=ps push and one apply=worker push of every shard. */
    CHECK_OK(rf_ps_push_inbox(w, wg, NSMALL + 1));
    CHECK_OK(rf_ps_push_wait(w));
    CHECK_OK(rf_ps_update_rmw_locked(w, wg, NSMALL + 1));
    for (size_t i = 0; i < total; i++) {
        want.p[i] -= g.p[i] * 0.25f;
        want.p[i] -= g.p[i] * 0.25f;
    }
    CHECK_OK(rf_ps_read(cl.chief, pulls, NSMALL + 1));
    for (size_t i = 0; i < total; i++)
        CHECK(memcmp(&want.p[i], &vals.p[i], 4) == 0,
              "element %zu: %.9g, want %.9g", i, vals.p[i], want.p[i]);
    rf_ps_client_close(w);
    pt_cluster_stop(&cl);
}
