/* tests/integration/ps/case_rows.c: embedding tables (rf_ps_read_rows,
 * the sparse pushes): rows read from two ps tasks in one call equal the
 * ps's contents, bad indices are refused before anything is posted, and k
 * sparse pushes leave bitwise what rf_optim_apply_sparse gives locally on a
 * copy, in both apply modes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/integration/ps/cases.h"

typedef struct table {
    rf_ps_shard_spec spec;
    char name[32];
    rf_ps_var *v;
    size_t rows, width, numel;
    float *local, *slots[RF_OPTIM_MAX_SLOTS];
    unsigned num_slots;
    rf_optim_scalars sc;
} table;

static void table_make(table *t, rf_ps_client *c, size_t ps, const char *name,
                       size_t rows, size_t width, uint32_t max_push_rows,
                       const rf_optim_config *cfg, uint64_t seed)
{
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->rows = rows;
    t->width = width;
    t->numel = rows * width;
    t->spec = (rf_ps_shard_spec){
        .name = t->name,
        .dtype = RF_F32,
        .shape = {.rank = 2, .dims = {(int64_t)rows, (int64_t)width}},
        .trainable = true,
        .optim = *cfg,
        .max_push_rows = max_push_rows};
    t->local = malloc(t->numel * sizeof(float));
    CHECK(t->local, "out of memory");
    t->v = pt_make_var(c, ps, &t->spec, seed, t->local);
    rf_optim_layout ol;
    CHECK_OK(rf_optim_layout_get(cfg, &ol));
    t->num_slots = ol.num_slots;
    for (unsigned i = 0; i < t->num_slots; i++) {
        t->slots[i] = malloc(t->numel * sizeof(float));
        CHECK(t->slots[i], "out of memory");
        rf_optim_slot_init(cfg, i, t->slots[i], t->numel);
    }
    rf_optim_scalars_init(cfg, &t->sc);
    rf_ps_var_info info;
    rf_ps_var_get_info(t->v, &info);
    CHECK_EQ_U64(info.rows, rows);
    CHECK_EQ_U64(info.row_bytes, width * sizeof(float));
    CHECK_EQ_U64(info.max_push_rows, max_push_rows);
}

static void table_free(table *t)
{
    free(t->local);
    for (unsigned i = 0; i < t->num_slots; i++)
        free(t->slots[i]);
}

/* The table's values and slots on the ps equal the local copy bitwise. */
static void table_check(rf_ps_client *c, table *t, const char *when)
{
    for (unsigned f = 0; f <= t->num_slots; f++) {
        float *want = f == 0 ? t->local : t->slots[f - 1];
        float *got = pt_read_field(c, t->v, (rf_ps_field)f, t->numel);
        if (memcmp(got, want, t->numel * sizeof(float)) != 0)
            for (size_t i = 0; i < t->numel; i++)
                CHECK(memcmp(&got[i], &want[i], 4) == 0,
                      "%s: field %u of %s differs at row %zu col %zu: ps "
                      "%.9g, local %.9g",
                      when, f, t->name, i / t->width, i % t->width, got[i],
                      want[i]);
        free(got);
    }
}

/* n distinct random rows of [0, rows) (n <= rows). */
static void pick_rows(int64_t *out, size_t n, size_t rows, uint64_t seed)
{
    for (size_t i = 0; i < n;) {
        float r = pt_rand(seed, i * 7919 + 13);
        int64_t x = (int64_t)((r + 1.0f) * 0.5f * (float)rows) % (int64_t)rows;
        bool dup = false;
        for (size_t j = 0; j < i; j++)
            dup |= out[j] == x;
        if (dup) {
            seed++;
            continue;
        }
        out[i++] = x;
    }
}

static rf_optim_config config(rf_optimizer_kind k)
{
    rf_optim_config c;
    rf_optim_defaults(k, &c);
    switch (k) {
    case RF_OPTIM_SGD:
        c.learning_rate = 0.1f;
        break;
    case RF_OPTIM_MOMENTUM:
        c.learning_rate = 0.05f;
        c.momentum = 0.9f;
        c.use_nesterov = true;
        break;
    case RF_OPTIM_ADAGRAD:
        c.learning_rate = 0.1f;
        break;
    case RF_OPTIM_ADAM:
        c.learning_rate = 0.01f;
        break;
    case RF_OPTIM_FTRL:
        c.learning_rate = 0.1f;
        c.learning_rate_power = -0.6f;
        c.initial_accumulator_value = 0.2f;
        c.l1_regularization_strength = 0.001f;
        c.l2_regularization_strength = 0.5f;
        c.l2_shrinkage_regularization_strength = 0.05f;
        break;
    default:
        break;
    }
    return c;
}

void case_rows_read(void)
{
    pt_cluster cl;
    pt_cluster_start(&cl, 2);
    rf_ps_client *c = cl.chief;
    rf_optim_config ada = config(RF_OPTIM_ADAGRAD);
    rf_optim_config mom = config(RF_OPTIM_MOMENTUM);
    table a, b;
    table_make(&a, c, 0, "emb_a", 1000, 8, 64, &ada, 11);
    table_make(&b, c, 1, "emb_b", 300, 5, 32, &mom, 12);
    enum { NA = 40, NB = 25 };
    pt_buf buf;
    pt_buf_alloc(c, &buf, NA * 8 + NA * 8 + NB * 5);
    int64_t ra[NA], rb[NB];
    pick_rows(ra, NA, a.rows, 5);
    pick_rows(rb, NB, b.rows, 6);
    float *va = buf.p, *sa = buf.p + NA * 8, *vb = buf.p + 2 * NA * 8;
    memset(buf.p, 0xff, (2 * NA * 8 + NB * 5) * sizeof(float));
    rf_ps_rows sets[3] = {
        {.var = a.v,
         .field = RF_PS_FIELD_VALUES,
         .rows = ra,
         .n = NA,
         .buf = va,
         .mr = buf.mr},
        {.var = a.v,
         .field = RF_PS_FIELD_SLOT0,
         .rows = ra,
         .n = NA,
         .buf = sa,
         .mr = buf.mr},
        {.var = b.v,
         .field = RF_PS_FIELD_VALUES,
         .rows = rb,
         .n = NB,
         .buf = vb,
         .mr = buf.mr},
    };
    CHECK_OK(rf_ps_read_rows(c, sets, 3));
    for (size_t i = 0; i < NA; i++) {
        CHECK(memcmp(va + i * 8, a.local + ra[i] * 8, 32) == 0,
              "row %lld of emb_a (position %zu) differs", (long long)ra[i], i);
        CHECK(memcmp(sa + i * 8, a.slots[0] + ra[i] * 8, 32) == 0,
              "slot row %lld of emb_a differs", (long long)ra[i]);
    }
    for (size_t i = 0; i < NB; i++)
        CHECK(memcmp(vb + i * 5, b.local + rb[i] * 5, 20) == 0,
              "row %lld of emb_b (position %zu) differs", (long long)rb[i], i);

    /* Bad indices: refused naming the shard, the position and the index,
     * before anything is posted (the buffer stays untouched). */
    memset(buf.p, 0xab, NA * 8 * sizeof(float));
    float mark;
    memcpy(&mark, buf.p, 4);
    int64_t bad[3] = {3, 1000, 7};
    rf_ps_rows one = {.var = a.v,
                      .field = RF_PS_FIELD_VALUES,
                      .rows = bad,
                      .n = 3,
                      .buf = va,
                      .mr = buf.mr};
    CHECK_ST(rf_ps_read_rows(c, &one, 1), RF_ERR_INVALID_ARG);
    CHECK_MSG("index 1000 at position 1");
    CHECK_MSG("emb_a");
    bad[1] = -1;
    CHECK_ST(rf_ps_read_rows(c, &one, 1), RF_ERR_INVALID_ARG);
    CHECK_MSG("index -1 at position 1");
    CHECK(memcmp(&mark, va, 4) == 0 && memcmp(&mark, va + 8, 4) == 0,
          "a refused read wrote the buffer");
    /* A bad set after a good one: nothing of the good one is read either. */
    rf_ps_rows two[2] = {sets[0], one};
    CHECK_ST(rf_ps_read_rows(c, two, 2), RF_ERR_INVALID_ARG);
    CHECK_MSG("set 1");
    CHECK(memcmp(&mark, va, 4) == 0, "a refused read wrote the first set");
    /* A buffer outside its region, a field the table lacks. */
    rf_ps_rows out = sets[2];
    out.buf = (unsigned char *)rf_mr_addr(buf.mr) + rf_mr_len(buf.mr) -
              NB * 5 * sizeof(float) + 4;
    CHECK_ST(rf_ps_read_rows(c, &out, 1), RF_ERR_INVALID_ARG);
    out = sets[2];
    out.field = RF_PS_FIELD_SLOT0 + 1;
    CHECK_ST(rf_ps_read_rows(c, &out, 1), RF_ERR_INVALID_ARG);
    /* n = 0, no sets. */
    one.n = 0;
    CHECK_OK(rf_ps_read_rows(c, &one, 1));
    CHECK_OK(rf_ps_read_rows(c, NULL, 0));
    table_free(&a);
    table_free(&b);
    pt_cluster_stop(&cl);
}

/* k sparse pushes of rows (sgd: with repeats; others deduplicated) to a
 * table on each of 2 ps, against rf_optim_apply_sparse locally. */
static void run_push(rf_ps_apply_mode mode, bool locking)
{
    pt_cluster cl;
    pt_cluster_start(&cl, 2);
    rf_ps_client *c = cl.chief;
    rf_optimizer_kind kinds[] = {RF_OPTIM_SGD, RF_OPTIM_ADAGRAD,
                                 RF_OPTIM_MOMENTUM, RF_OPTIM_FTRL,
                                 RF_OPTIM_ADAM};
    size_t nk = sizeof kinds / sizeof kinds[0];
    enum { ROWS = 200, WIDTH = 6, MPR = 16, K = 4 };
    pt_buf buf;
    pt_buf_alloc(c, &buf, 2 * MPR + MPR * WIDTH);
    int64_t *idx = (int64_t *)(void *)buf.p;
    float *grad = buf.p + 2 * MPR;
    for (size_t k = 0; k < nk; k++) {
        rf_optim_config cfg = config(kinds[k]);
        table t;
        char name[32];
        snprintf(name, sizeof name, "emb_%zu", k);
        table_make(&t, c, k % 2, name, ROWS, WIDTH, MPR, &cfg, 100 + k);
        if (mode == RF_PS_APPLY_WORKER && kinds[k] == RF_OPTIM_ADAM) {
            CHECK_ST(
                pt_push_sparse(c, t.v, idx, 1, grad, buf.mr, mode, locking),
                RF_ERR_INVALID_ARG);
            CHECK_MSG("apply=ps");
            table_free(&t);
            continue;
        }
        for (int step = 0; step < K; step++) {
            size_t n = MPR - (size_t)step; /* step 3 also pushes row 199 */
            pick_rows(idx, n, ROWS, 1000 * k + (uint64_t)step);
            if (kinds[k] == RF_OPTIM_SGD)
                idx[1] = idx[0]; /* a repeat: applied twice */
            if (step == K - 1)
                idx[n - 1] = ROWS - 1;
            pt_fill(grad, n * WIDTH, 77 * k + (uint64_t)step);
            CHECK_OK(
                pt_push_sparse(c, t.v, idx, n, grad, buf.mr, mode, locking));
            CHECK_OK(rf_ps_push_wait(c));
            CHECK_OK(rf_optim_apply_sparse(&cfg, t.local, t.slots, ROWS, WIDTH,
                                           idx, n, grad, &t.sc));
            rf_optim_finish_step(&cfg, &t.sc);
            char when[64];
            snprintf(when, sizeof when, "%s after push %d",
                     mode == RF_PS_APPLY_PS ? "apply=ps" : "apply=worker",
                     step);
            table_check(c, &t, when);
        }
        /* n = 0 (Adam still moves every row), n > max_push_rows and a bad
         * index refused by the client, table unchanged. */
        CHECK_OK(pt_push_sparse(c, t.v, idx, 0, grad, buf.mr, mode, locking));
        CHECK_OK(rf_ps_push_wait(c));
        CHECK_OK(rf_optim_apply_sparse(&cfg, t.local, t.slots, ROWS, WIDTH, idx,
                                       0, grad, &t.sc));
        rf_optim_finish_step(&cfg, &t.sc);
        CHECK_ST(
            pt_push_sparse(c, t.v, idx, MPR + 1, grad, buf.mr, mode, locking),
            RF_ERR_INVALID_ARG);
        CHECK_MSG("max_push_rows");
        idx[2] = ROWS;
        CHECK_ST(pt_push_sparse(c, t.v, idx, 3, grad, buf.mr, mode, locking),
                 RF_ERR_INVALID_ARG);
        CHECK_MSG("index 200 at position 2");
        /* A dense push to a table is refused (its inbox holds a sparse
         * push), in either mode. */
        pt_buf dense;
        pt_buf_alloc(c, &dense, ROWS * WIDTH);
        rf_ps_xfer dx = {.var = t.v,
                         .field = RF_PS_FIELD_VALUES,
                         .buf = dense.p,
                         .len = ROWS * WIDTH * sizeof(float),
                         .mr = dense.mr};
        CHECK_ST(pt_push(c, &dx, 1, mode, locking), RF_ERR_INVALID_ARG);
        CHECK_MSG("rf_ps_push_sparse");
        table_check(c, &t, "after the refused pushes");
        table_free(&t);
    }
    pt_cluster_stop(&cl);
}

void case_rows_push_ps(void)
{
    run_push(RF_PS_APPLY_PS, false);
}

void case_rows_push_worker(void)
{
    run_push(RF_PS_APPLY_WORKER, false);
}

void case_rows_push_worker_locking(void)
{
    run_push(RF_PS_APPLY_WORKER, true);
}

void case_rows_inbox_bound(void)
{
    pt_cluster cl;
    pt_cluster_start(&cl, 1);
    rf_ps_client *c = cl.chief;
    rf_optim_config cfg = config(RF_OPTIM_ADAGRAD);
    /* 20000 rows of 4 KiB per push: an 80 MB inbox per worker, above the
     * default 64 MiB. */
    rf_ps_shard_spec spec = {.name = "emb_big_inbox",
                             .dtype = RF_F32,
                             .shape = {.rank = 2, .dims = {100, 1024}},
                             .trainable = true,
                             .optim = cfg,
                             .max_push_rows = 20000};
    rf_ps_var *v = NULL;
    CHECK_ST(rf_ps_create(c, 0, &spec, &v), RF_ERR_INVALID_ARG);
    CHECK_MSG("max_inbox_bytes");
    /* What a spec cannot be: not trainable, sync replicas 2 of 1, rank 0. */
    rf_ps_shard_spec bad = spec;
    bad.max_push_rows = 8;
    bad.trainable = false;
    CHECK_ST(rf_ps_create(c, 0, &bad, &v), RF_ERR_INVALID_ARG);
    bad = spec;
    bad.max_push_rows = 8;
    bad.replicas_to_aggregate = 2;
    bad.total_num_replicas = 1;
    CHECK_ST(rf_ps_create(c, 0, &bad, &v), RF_ERR_INVALID_ARG);
    bad = spec;
    bad.max_push_rows = 8;
    bad.shape = (rf_shape){.rank = 0};
    CHECK_ST(rf_ps_create(c, 0, &bad, &v), RF_ERR_INVALID_ARG);
    rf_ps_var_info info;
    CHECK_ST(rf_ps_shard_spec_info(&bad, 0, &info), RF_ERR_INVALID_ARG);
    /* Within the bound it is created; a lookup with another max_push_rows
     * is refused like another shape, naming both. */
    spec.max_push_rows = 1000;
    CHECK_OK(rf_ps_create(c, 0, &spec, &v));
    rf_ps_var_get_info(v, &info);
    CHECK(info.inbox_bytes >= 1000 * 4096 + 8000 && info.inbox_bytes < 64 << 20,
          "inbox of %zu bytes", info.inbox_bytes);
    rf_ps_client *w = pt_client(cl.f, cl.addrs, 1, 1, false);
    rf_ps_shard_spec other = spec;
    other.max_push_rows = 999;
    rf_ps_var *wv = NULL;
    CHECK_ST(rf_ps_lookup(w, 0, &other, &wv), RF_ERR_INVALID_ARG);
    CHECK_MSG("max_push_rows=1000");
    CHECK_OK(rf_ps_lookup(w, 0, &spec, &wv));
    rf_ps_client_close(w);
    pt_cluster_stop(&cl);
}
