/* tests/integration/ps/case_rows_sync.c: sync replicas with an embedding
 * table (rf_ps_push_sparse_sync; ps/ps_server_sparse_sync.c). Two clients
 * push overlapping row sets for the table's step; after both, the table
 * (values and Adagrad's slot) equals bitwise rf_optim_apply_sparse applied
 * locally to each touched row's mean (its sum divided by the gradients that
 * touched it, TF's SparseConditionalAccumulator); a stale push is counted
 * stale and changes nothing; a push past the ps's accumulator bound
 * (RF_PS_MAX_ACCUM_MB=1 in the ps helper's environment) is refused with an
 * error ack, the table untouched and nothing held; rf_ps_push_sparse_inbox
 * to a sync table and rf_ps_push_sparse_sync to an async one are refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/integration/ps/cases.h"

/* Room in a push buffer: MPR_MAX indices and rows of WIDTH_MAX. */
enum { MPR_MAX = 4096, WIDTH_MAX = 64 };

typedef struct stable {
    rf_ps_shard_spec spec;
    rf_optim_config cfg;
    size_t rows, width;
    float *local, *slot;
    rf_optim_scalars sc;
    rf_ps_var *v[2]; /* the chief's handle, the worker's */
} stable;

static void stable_make(stable *t, pt_cluster *cl, rf_ps_client *w,
                        const char *name, size_t rows, size_t width,
                        uint32_t mpr, uint32_t n, uint32_t m)
{
    memset(t, 0, sizeof *t);
    rf_optim_defaults(RF_OPTIM_ADAGRAD, &t->cfg);
    t->cfg.learning_rate = 0.25f;
    t->rows = rows;
    t->width = width;
    t->spec = (rf_ps_shard_spec){
        .name = name,
        .dtype = RF_F32,
        .shape = {.rank = 2, .dims = {(int64_t)rows, (int64_t)width}},
        .trainable = true,
        .optim = t->cfg,
        .replicas_to_aggregate = n,
        .total_num_replicas = m,
        .max_push_rows = mpr};
    t->local = malloc(rows * width * sizeof(float));
    t->slot = malloc(rows * width * sizeof(float));
    CHECK(t->local && t->slot, "out of memory");
    t->v[0] = pt_make_var(cl->chief, 0, &t->spec, rows, t->local);
    rf_optim_slot_init(&t->cfg, 0, t->slot, rows * width);
    rf_optim_scalars_init(&t->cfg, &t->sc);
    CHECK_OK(rf_ps_lookup(w, 0, &t->spec, &t->v[1]));
}

/* Values and slot on the ps equal the local copy bitwise; step and stale
 * words as given. */
static void stable_check(stable *t, int who, rf_ps_client *c, int64_t step,
                         uint64_t stale, const char *when)
{
    rf_ps_var *v = t->v[who];
    size_t numel = t->rows * t->width;
    for (int f = 0; f < 2; f++) {
        float *want = f ? t->slot : t->local;
        float *got = pt_read_field(c, v, (rf_ps_field)f, numel);
        for (size_t i = 0; i < numel; i++)
            CHECK(memcmp(&got[i], &want[i], 4) == 0,
                  "%s: field %d of %s differs at row %zu col %zu: ps %.9g, "
                  "local %.9g",
                  when, f, t->spec.name, i / t->width, i % t->width, got[i],
                  want[i]);
        free(got);
    }
    int64_t s = -1;
    uint64_t n = 0;
    CHECK_OK(rf_ps_sync_read(c, &v, 1, &s, &n));
    CHECK(s == step && n == stale, "%s: step %lld, %llu stale; want %lld, %llu",
          when, (long long)s, (unsigned long long)n, (long long)step,
          (unsigned long long)stale);
}

/* A push of n rows of seeded gradient, acknowledged with want. */
static void push(const stable *t, int who, pt_buf *b, rf_ps_client *c,
                 const int64_t *rows, size_t n, uint64_t seed, int64_t tag,
                 rf_status want)
{
    int64_t *idx = (int64_t *)(void *)b->p;
    float *grad = b->p + 2 * MPR_MAX;
    memcpy(idx, rows, n * sizeof *idx);
    pt_fill(grad, n * t->width, seed);
    rf_ps_var *v = t->v[who];
    CHECK_OK(rf_ps_push_sparse_sync(c, v, idx, n, grad, b->mr, tag));
    CHECK_ST(rf_ps_push_wait(c), want);
}

/* The reference: each touched row's mean of the two pushes (a's rows,
 * then b's new ones, in order of first touch), applied locally. */
static void reference(stable *t, const int64_t *ra, size_t na, uint64_t sa,
                      const int64_t *rb, size_t nb, uint64_t sb)
{
    size_t w = t->width, cap = na + nb, n = 0;
    int64_t *idx = malloc(cap * sizeof *idx);
    unsigned *count = malloc(cap * sizeof *count);
    float *sum = malloc(cap * w * sizeof *sum);
    float *ga = malloc(na * w * sizeof *ga), *gb = malloc(nb * w * sizeof *gb);
    CHECK(idx && count && sum && ga && gb, "out of memory");
    pt_fill(ga, na * w, sa);
    pt_fill(gb, nb * w, sb);
    for (size_t i = 0; i < na + nb; i++) {
        int64_t r = i < na ? ra[i] : rb[i - na];
        const float *g = i < na ? &ga[i * w] : &gb[(i - na) * w];
        size_t e = 0;
        while (e < n && idx[e] != r)
            e++;
        if (e == n) {
            idx[n] = r;
            count[n] = 1;
            memcpy(&sum[n * w], g, sizeof(float) * w);
            n++;
            continue;
        }
        for (size_t k = 0; k < w; k++)
            sum[e * w + k] += g[k];
        count[e]++;
    }
    for (size_t e = 0; e < n; e++)
        for (size_t k = 0; k < w; k++)
            sum[e * w + k] /= (float)count[e];
    float *slots[RF_OPTIM_MAX_SLOTS] = {t->slot};
    CHECK_OK(rf_optim_apply_sparse(&t->cfg, t->local, slots, t->rows, w, idx, n,
                                   sum, &t->sc));
    rf_optim_finish_step(&t->cfg, &t->sc);
    free(idx);
    free(count);
    free(sum);
    free(ga);
    free(gb);
}

static void counts(rf_ps_client *c, uint64_t accepted, uint64_t stale,
                   const char *who)
{
    uint64_t a = 0, s = 0;
    rf_ps_sync_counts(c, &a, &s);
    CHECK(a == accepted && s == stale,
          "%s: %llu accepted, %llu stale acks; want %llu, %llu", who,
          (unsigned long long)a, (unsigned long long)s,
          (unsigned long long)accepted, (unsigned long long)stale);
}

void case_rows_sync(void)
{
    /* the ps helper inherits it: a 1 MiB bound on its accumulators */
    CHECK(setenv("RF_PS_MAX_ACCUM_MB", "1", 1) == 0, "setenv");
    pt_cluster cl;
    pt_cluster_start(&cl, 1);
    rf_ps_client *c = cl.chief;
    rf_ps_client *w = pt_client(cl.f, cl.addrs, 1, 1, false);
    pt_buf bc, bw;
    pt_buf_alloc(c, &bc, 2 * MPR_MAX + MPR_MAX * WIDTH_MAX);
    pt_buf_alloc(w, &bw, 2 * MPR_MAX + MPR_MAX * WIDTH_MAX);

    stable t;
    stable_make(&t, &cl, w, "emb_sync", 64, 4, 8, 2, 2);
    CHECK_OK(rf_ps_sync_set_step(c, &t.v[0], 1, 3));
    stable_check(&t, 0, c, 3, 0, "the chief set step 3");
    const int64_t ra[] = {1, 5, 9}, rb[] = {5, 9, 20, 33, 63};
    push(&t, 0, &bc, c, ra, 3, 11, 3, RF_OK);
    stable_check(&t, 1, w, 3, 0, "one gradient of 2: nothing applied");
    push(&t, 1, &bw, w, rb, 5, 12, 3, RF_OK);
    reference(&t, ra, 3, 11, rb, 5, 12);
    stable_check(&t, 1, w, 4, 0, "step 3's row means applied");
    counts(c, 1, 0, "the chief");
    counts(w, 1, 0, "the worker");

    /* a stale gradient (tag 3 at step 4): counted, nothing changed */
    push(&t, 1, &bw, w, rb, 5, 13, 3, RF_OK);
    stable_check(&t, 0, c, 4, 1, "a stale gradient");
    counts(w, 1, 1, "the worker after the stale push");

    /* step 4: a second gradient of the chief is dropped, its first kept */
    const int64_t rc[] = {0, 1}, rd[] = {1, 2, 3};
    push(&t, 0, &bc, c, rc, 2, 21, 4, RF_OK);
    push(&t, 0, &bc, c, rd, 3, 99, 4, RF_OK);
    push(&t, 1, &bw, w, rd, 3, 22, 4, RF_OK);
    reference(&t, rc, 2, 21, rd, 3, 22);
    stable_check(&t, 0, c, 5, 1, "step 4: the chief's first gradient kept");

    /* the wrong push for the table's kind is refused by the client */
    int64_t *idx = (int64_t *)(void *)bc.p;
    float *grad = bc.p + 2 * MPR_MAX;
    CHECK_ST(rf_ps_push_sparse_inbox(c, t.v[0], idx, 1, grad, bc.mr),
             RF_ERR_INVALID_ARG);
    CHECK_MSG("use rf_ps_push_sparse_sync");
    CHECK_ST(rf_ps_push_sparse_sync(c, t.v[0], idx, 9, grad, bc.mr, 5),
             RF_ERR_INVALID_ARG);
    CHECK_MSG("max_push_rows");
    idx[0] = 64;
    CHECK_ST(rf_ps_push_sparse_sync(c, t.v[0], idx, 1, grad, bc.mr, 5),
             RF_ERR_INVALID_ARG);
    CHECK_MSG("index 64");
    rf_ps_shard_spec async = t.spec;
    async.name = "emb_async";
    async.replicas_to_aggregate = async.total_num_replicas = 0;
    rf_ps_var *av = pt_make_var(c, 0, &async, 7, NULL);
    idx[0] = 0;
    CHECK_ST(rf_ps_push_sparse_sync(c, av, idx, 1, grad, bc.mr, 0),
             RF_ERR_INVALID_ARG);
    CHECK_MSG("not a sync-replicas shard");
    stable_check(&t, 0, c, 5, 1, "after the refused pushes");

    /* the accumulator bound (1 MiB): rows of 256 bytes cost 268 bytes
     * each, and the table's row map 32 KiB; 3000 rows fit, 1000 more do
     * not: refused, the table and the accumulator untouched */
    stable big;
    stable_make(&big, &cl, w, "emb_big", 8192, 64, MPR_MAX, 2, 2);
    int64_t *many = malloc(4000 * sizeof *many);
    CHECK(many, "out of memory");
    for (int64_t i = 0; i < 4000; i++)
        many[i] = 2 * i;
    push(&big, 0, &bc, c, many, 3000, 31, 0, RF_OK);
    push(&big, 1, &bw, w, many + 3000, 1000, 32, 0, RF_ERR_NO_MEMORY);
    CHECK_MSG("the ps could not apply it");
    stable_check(&big, 0, c, 0, 0, "a push past the accumulator bound");
    /* the worker's step-0 gradient was not taken: its next one is */
    push(&big, 1, &bw, w, many + 100, 10, 33, 0, RF_OK);
    reference(&big, many, 3000, 31, many + 100, 10, 33);
    stable_check(&big, 0, c, 1, 0, "the bound: the means of the two taken");
    counts(w, 3, 1, "the worker at the end");
    free(many);
    free(big.local);
    free(big.slot);
    free(t.local);
    free(t.slot);
    rf_ps_client_close(w);
    pt_cluster_stop(&cl);
}
