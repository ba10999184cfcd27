/* bench/emblookup/el_bench.c: the measuring worker of rf-bench-emb
 * (el_bench.h). Four ways: row READs, whole-shard READs, the ps-side
 * gather, and auto (each shard by the cheaper way of its cost model,
 * rf_ps_lookup_cost_measure before auto's steps, as the session does). The
 * table is two shards, "emb" part 0 on ps 0 and part 1 on ps 1 (TensorFlow's
 * mod partitioning: id i is row i / 2 of part i % 2, part 0 holding the extra
 * row of an odd count), sgd with learning rate 1 so that a sparse push of
 * -pattern into the zero rows writes the pattern exactly. Before measuring,
 * every row any step will look up is written that way (the union of all steps'
 * ids: a table of 10^8 rows is not written whole); every lookup of every way is
 * then compared with the pattern, outside the timed part. Step s's ids are
 * rf_ctr_batch's step s (Zipf over the table, spread by its bijection), the
 * same for every way. A step is timed from the first post to the rows being in
 * the worker's buffer (and, with --push, the push acknowledged); the batch
 * generation, mapping and deduplication before it are not timed. */
#include "el_bench.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench_quantile.h"
#include "el_ps.h"
#include "el_report.h"
#include "rdmaflow/clock.h"
#include "rdmaflow/ctr_data.h"
#include "rdmaflow/fabric.h"
#include "rdmaflow/optim.h"
#include "rdmaflow/ps.h"

typedef struct el_ctx {
    const el_opts *o;
    rf_fabric *f;
    rf_ps_client *c;
    rf_child *ps;
    uint16_t ports[EL_PS_TASKS];
    rf_ps_var *var[EL_PS_TASKS];
    int64_t part_rows[EL_PS_TASKS];
    uint64_t values_bytes[EL_PS_TASKS];
    size_t width, rb, maxu;
    rf_ctr_spec spec;
    int64_t *ids, *tmp;
    float *labels;
    void *scratch;
    /* registered: per part maxu indices then maxu zero gradient rows */
    unsigned char *pushbuf;
    rf_mr *push_mr;
    int64_t *rows[EL_PS_TASKS];
    float *grad[EL_PS_TASKS];
    size_t n[EL_PS_TASKS];
    float *rowbuf, *gbuf; /* [2][maxu] rows each: rows/dense, gather */
    rf_mr *row_mr, *g_mr;
    unsigned char *dense;
    rf_mr *dense_mr;
    uint64_t checked;
    bool bad_data;
    /* auto: each shard's cost model, and this step's choice per shard */
    rf_ps_lookup_cost cost[EL_PS_TASKS];
    bool gathers[EL_PS_TASKS];
    double part_unique[EL_PS_TASKS]; /* per step, measured by rows */
    uint64_t auto_gathered, auto_lookups, gather_asked;
} el_ctx;

static int fail(const char *what)
{
    fprintf(stderr, "rf-bench-emb: %s: %s\n", what, rf_error_message());
    return 1;
}

static float pattern(int64_t id, size_t j)
{
    return 1.0f + (float)(((uint64_t)id * 7u + j * 13u) % 1024u) / 4.0f;
}

/* Step s's ids, mapped to rows per part and deduplicated into k->rows. */
static int make_step(el_ctx *k, uint64_t s)
{
    size_t nids = (size_t)k->o->batch * k->o->features;
    if (rf_ctr_batch(&k->spec, RF_DATA_TRAIN, 0, 1, s, k->o->batch, k->ids,
                     NULL, k->labels, NULL) != RF_OK)
        return fail("rf_ctr_batch");
    for (int p = 0; p < EL_PS_TASKS; p++) {
        size_t m = 0;
        for (size_t i = 0; i < nids; i++)
            if ((k->ids[i] & 1) == p)
                k->tmp[m++] = k->ids[i] >> 1;
        if (rf_optim_dedup(k->tmp, m, NULL, 0, k->scratch, k->rows[p], NULL,
                           &k->n[p]) != RF_OK)
            return fail("rf_optim_dedup");
    }
    return 0;
}

static int check_rows(el_ctx *k, const float *buf, const char *way, uint64_t s)
{
    for (int p = 0; p < EL_PS_TASKS; p++) {
        const float *b = buf + (size_t)p * k->maxu * k->width;
        for (size_t i = 0; i < k->n[p]; i++) {
            int64_t id = k->rows[p][i] * 2 + p;
            for (size_t j = 0; j < k->width; j++)
                if (b[i * k->width + j] != pattern(id, j)) {
                    if (!k->bad_data)
                        fprintf(stderr,
                                "rf-bench-emb: %s, step %" PRIu64
                                ": id %" PRId64 " (part %d row %" PRId64
                                ") element %zu is %g, the table has %g\n",
                                way, s, id, p, k->rows[p][i], j,
                                (double)b[i * k->width + j],
                                (double)pattern(id, j));
                    k->bad_data = true;
                    return -1;
                }
        }
        k->checked += k->n[p];
    }
    return 0;
}

/* Writes the pattern into every row that steps [0, total) look up. */
static int init_rows(el_ctx *k, int total)
{
    size_t per = (size_t)k->o->batch * k->o->features;
    size_t cap = per * (size_t)total;
    int64_t *all[EL_PS_TASKS];
    size_t nall[EL_PS_TASKS] = {0};
    void *scratch = malloc(rf_optim_dedup_scratch_bytes(cap));
    all[0] = malloc(cap * sizeof(int64_t));
    all[1] = malloc(cap * sizeof(int64_t));
    if (!scratch || !all[0] || !all[1]) {
        fprintf(stderr, "rf-bench-emb: out of memory\n");
        free(scratch), free(all[0]), free(all[1]);
        return 1;
    }
    int rc = 0;
    for (int s = 0; s < total && rc == 0; s++) {
        rc = make_step(k, (uint64_t)s);
        for (int p = 0; p < EL_PS_TASKS && rc == 0; p++) {
            memcpy(all[p] + nall[p], k->rows[p], k->n[p] * sizeof(int64_t));
            nall[p] += k->n[p];
        }
    }
    for (int p = 0; p < EL_PS_TASKS && rc == 0; p++) {
        if (rf_optim_dedup(all[p], nall[p], NULL, 0, scratch, all[p], NULL,
                           &nall[p]) != RF_OK) {
            rc = fail("rf_optim_dedup");
            break;
        }
        for (size_t at = 0; at < nall[p] && rc == 0; at += k->maxu) {
            size_t m = nall[p] - at < k->maxu ? nall[p] - at : k->maxu;
            for (size_t i = 0; i < m; i++) {
                k->rows[p][i] = all[p][at + i];
                int64_t id = all[p][at + i] * 2 + p;
                for (size_t j = 0; j < k->width; j++)
                    k->grad[p][i * k->width + j] = -pattern(id, j);
            }
            if (rf_ps_push_sparse_inbox(k->c, k->var[p], k->rows[p], m,
                                        k->grad[p], k->push_mr) != RF_OK ||
                rf_ps_push_wait(k->c) != RF_OK)
                rc = fail("writing the table pattern");
        }
        memset(k->grad[p], 0, k->maxu * k->rb);
    }
    free(scratch), free(all[0]), free(all[1]);
    if (rc == 0 && k->o->inject_stale_row) {
        /* +1 into the first row of the first measured step's part 0 */
        rc = make_step(k, (uint64_t)k->o->warmup);
        int p = k->n[0] ? 0 : 1;
        for (size_t j = 0; rc == 0 && j < k->width; j++)
            k->grad[p][j] = -1.0f;
        if (rc == 0 &&
            (rf_ps_push_sparse_inbox(k->c, k->var[p], k->rows[p], 1, k->grad[p],
                                     k->push_mr) != RF_OK ||
             rf_ps_push_wait(k->c) != RF_OK))
            rc = fail("--inject-stale-row");
        memset(k->grad[p], 0, k->rb);
    }
    return rc;
}

static double wire_bytes(const el_ctx *k, int way)
{
    double b = 0;
    for (int p = 0; p < EL_PS_TASKS; p++) {
        double n = (double)k->n[p], rb = (double)k->rb;
        bool rows = way == EL_ROWS || (way == EL_AUTO && !k->gathers[p]);
        if (rows) /* the row's record: version, CRC32C, row */
            b += n * (rb + 16);
        else if (way == EL_DENSE) /* every row's record (16-byte aligned) */
            b += (double)k->part_rows[p] * (double)((16 + k->rb + 15) & ~15ul);
        else if (n > 0) /* indices, request, rows, ack */
            b += 8 * n + 64 + n * rb + 8;
        if (k->o->push) /* indices, rows, count, ack */
            b += 8 * n + n * rb + 16;
    }
    return b;
}

/* auto: each shard by the cheaper way for its rows this step (read sets
 * first, then the gathers, as the session's lookups), into gbuf. */
static rf_status lookup_auto(el_ctx *k, rf_ps_rows *sets)
{
    rf_ps_rows order[EL_PS_TASKS];
    size_t nread = 0, n = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int p = 0; p < EL_PS_TASKS; p++) {
            k->gathers[p] = k->n[p] > 0 && rf_ps_lookup_cost_gather_cheaper(
                                               &k->cost[p], (double)k->n[p]);
            if (k->n[p] && k->gathers[p] == (pass == 1))
                order[n++] = sets[p];
            if (pass == 0)
                nread = n;
        }
    rf_status st = nread ? rf_ps_read_rows(k->c, order, nread) : RF_OK;
    if (st == RF_OK && n > nread)
        st = rf_ps_gather_rows(k->c, order + nread, n - nread);
    for (int p = 0; p < EL_PS_TASKS && st == RF_OK; p++) {
        k->auto_lookups += k->n[p] > 0;
        k->auto_gathered += k->gathers[p];
        k->gather_asked += k->gathers[p] ? k->n[p] : 0;
    }
    return st;
}

static rf_status lookup(el_ctx *k, int way)
{
    rf_ps_rows sets[EL_PS_TASKS];
    bool reply = way == EL_GATHER || way == EL_AUTO;
    float *out = reply ? k->gbuf : k->rowbuf;
    rf_mr *mr = reply ? k->g_mr : k->row_mr;
    for (int p = 0; p < EL_PS_TASKS; p++)
        sets[p] = (rf_ps_rows){.var = k->var[p],
                               .field = RF_PS_FIELD_VALUES,
                               .rows = k->rows[p],
                               .n = k->n[p],
                               .buf = out + (size_t)p * k->maxu * k->width,
                               .mr = mr};
    rf_status st = RF_OK;
    if (way == EL_ROWS) {
        st = rf_ps_read_rows(k->c, sets, EL_PS_TASKS);
    } else if (way == EL_GATHER) {
        st = rf_ps_gather_rows(k->c, sets, EL_PS_TASKS);
        k->gather_asked += k->n[0] + k->n[1];
    } else if (way == EL_AUTO) {
        st = lookup_auto(k, sets);
    } else {
        /* the whole shard into the one buffer, then its rows copied out */
        for (int p = 0; p < EL_PS_TASKS && st == RF_OK; p++) {
            rf_ps_xfer x = {.var = k->var[p],
                            .field = RF_PS_FIELD_VALUES,
                            .buf = k->dense,
                            .len = (size_t)k->values_bytes[p],
                            .mr = k->dense_mr};
            st = rf_ps_read(k->c, &x, 1);
            for (size_t i = 0; st == RF_OK && i < k->n[p]; i++)
                memcpy((unsigned char *)sets[p].buf + i * k->rb,
                       k->dense + (size_t)k->rows[p][i] * k->rb, k->rb);
        }
    }
    for (int p = 0; k->o->push && p < EL_PS_TASKS && st == RF_OK; p++)
        st = rf_ps_push_sparse_inbox(k->c, k->var[p], k->rows[p], k->n[p],
                                     k->grad[p], k->push_mr);
    if (k->o->push && st == RF_OK)
        st = rf_ps_push_wait(k->c);
    return st;
}

static int counters(el_ctx *k, el_ps_counters *sum)
{
    *sum = (el_ps_counters){0};
    for (int p = 0; p < EL_PS_TASKS; p++) {
        el_ps_counters c;
        if (el_ps_counters_get(&k->ps[p], k->o->timeout_s, &c) != 0)
            return -1;
        sum->gather += c.gather;
        sum->gather_rows += c.gather_rows;
        sum->gather_refused += c.gather_refused;
        sum->sparse += c.sparse;
        sum->sparse_rows += c.sparse_rows;
    }
    return 0;
}

static uint64_t ps_cpu(const el_ctx *k)
{
    uint64_t t = 0;
    for (int p = 0; p < EL_PS_TASKS; p++)
        t += el_ps_cpu_us(&k->ps[p]);
    return t;
}

static uint64_t ps_faults(const el_ctx *k)
{
    uint64_t t = 0;
    for (int p = 0; p < EL_PS_TASKS; p++)
        t += el_ps_minflt(&k->ps[p]);
    return t;
}

static uint64_t worker_faults(void)
{
    struct rusage u;
    return getrusage(RUSAGE_SELF, &u) == 0 ? (uint64_t)u.ru_minflt : 0;
}

static int run_way(el_ctx *k, int way, el_way_result *r, double *uniq)
{
    static const char *names[EL_WAYS] = {"rows", "dense", "gather", "auto"};
    const el_opts *o = k->o;
    r->name = names[way];
    int steps = way == EL_DENSE ? o->dense_steps : o->steps;
    int warm = way == EL_DENSE ? (o->warmup > 0 ? 1 : 0) : o->warmup;
    r->steps = steps;
    double *t = calloc((size_t)steps, sizeof *t);
    if (!t)
        return fail("out of memory");
    uint64_t checked0 = k->checked;
    for (int s = 0; s < warm; s++) {
        if (make_step(k, (uint64_t)s) || lookup(k, way) != RF_OK ||
            check_rows(k, way >= EL_GATHER ? k->gbuf : k->rowbuf, r->name,
                       (uint64_t)s)) {
            free(t);
            return k->bad_data ? 1 : fail(r->name);
        }
    }
    el_ps_counters c0, c1;
    if (counters(k, &c0)) {
        free(t);
        return 1;
    }
    k->gather_asked = k->auto_gathered = k->auto_lookups = 0;
    double wire = 0, asked = 0, nuniq = 0;
    uint64_t cpu0 = ps_cpu(k), pf0 = ps_faults(k), wf0 = worker_faults();
    rf_fabric_counters fc0, fc1;
    rf_fabric_counters_get(k->f, &fc0);
    for (int i = 0; i < steps; i++) {
        uint64_t s = (uint64_t)(o->warmup + i);
        if (make_step(k, s)) {
            free(t);
            return 1;
        }
        uint64_t t0 = rf_now_ns();
        rf_status st = lookup(k, way);
        t[i] = (double)(rf_now_ns() - t0) / 1000.0;
        if (st != RF_OK) {
            free(t);
            return fail(r->name);
        }
        wire += wire_bytes(k, way);
        nuniq += (double)(k->n[0] + k->n[1]);
        for (int p = 0; way == EL_ROWS && p < EL_PS_TASKS; p++)
            k->part_unique[p] += (double)k->n[p] / steps;
        if (check_rows(k, way >= EL_GATHER ? k->gbuf : k->rowbuf, r->name, s)) {
            free(t);
            return 1;
        }
    }
    uint64_t cpu1 = ps_cpu(k), pf1 = ps_faults(k), wf1 = worker_faults();
    rf_fabric_counters_get(k->f, &fc1);
    uint64_t wrs = 0;
    for (int i = 0; i < RF_FABRIC_OPS; i++)
        wrs += fc1.posted[i] - fc0.posted[i];
    if (counters(k, &c1)) {
        free(t);
        return 1;
    }
    r->median_us = bench_quantile(t, (size_t)steps, 0.5);
    r->p99_us = bench_quantile(t, (size_t)steps, 0.99);
    r->examples_per_s = o->batch / (r->median_us * 1e-6);
    r->wire_bytes = wire / steps;
    r->ps_cpu_us = (double)(cpu1 - cpu0) / steps;
    r->ps_faults = (double)(pf1 - pf0) / steps;
    r->worker_faults = (double)(wf1 - wf0) / steps;
    r->gather_rows = (double)(c1.gather_rows - c0.gather_rows) / steps;
    r->gather_reqs = (double)(c1.gather - c0.gather) / steps;
    r->rows_checked = (double)(k->checked - checked0);
    r->unique_total = (uint64_t)nuniq;
    r->wire_total = (uint64_t)wire;
    r->gathered_total = c1.gather_rows - c0.gather_rows;
    r->wrs_total = wrs;
    r->gather_asked_total = k->gather_asked;
    r->auto_gathered = k->auto_gathered;
    r->auto_lookups = k->auto_lookups;
    asked = (double)k->gather_asked;
    r->wrs_per_row = nuniq > 0 ? (double)wrs / nuniq : 0;
    r->rows_per_s = nuniq / steps / (r->median_us * 1e-6);
    *uniq = nuniq / steps;
    free(t);
    /* The ps's own account: a gather's rows are exactly those asked (auto:
     * those of the shards it gathered); row READs and whole-shard READs
     * never reach its service thread. */
    double want = asked;
    if ((double)(c1.gather_rows - c0.gather_rows) != want ||
        c1.gather_refused != c0.gather_refused) {
        fprintf(stderr,
                "rf-bench-emb: %s: the ps tasks gathered %" PRIu64
                " rows (%" PRIu64 " refused), the worker asked %.0f\n",
                r->name, c1.gather_rows - c0.gather_rows,
                c1.gather_refused - c0.gather_refused, want);
        k->bad_data = true;
        return 1;
    }
    return 0;
}

static int setup(el_ctx *k)
{
    const el_opts *o = k->o;
    rf_fabric_attr fa = {0};
    if (rf_fabric_open(o->provider, &fa, &k->f) != RF_OK)
        return fail("rf_fabric_open");
    char a0[300], a1[300];
    snprintf(a0, sizeof a0, "%s:%u", o->host, k->ports[0]);
    snprintf(a1, sizeof a1, "%s:%u", o->host, k->ports[1]);
    const char *addrs[EL_PS_TASKS] = {a0, a1};
    rf_ps_client_options co = {.client_id = 0,
                               .is_chief = true,
                               .connect_timeout_ms = o->timeout_s * 1000,
                               .op_timeout_ms = o->timeout_s * 1000};
    if (rf_ps_client_connect(k->f, addrs, EL_PS_TASKS, &co, &k->c) != RF_OK)
        return fail("connecting to the ps tasks");
    k->width = o->dim;
    k->rb = o->dim * sizeof(float);
    k->maxu = (size_t)o->batch * o->features;
    rf_optim_config cfg;
    rf_optim_defaults(RF_OPTIM_SGD, &cfg);
    cfg.learning_rate = 1.0f;
    for (int p = 0; p < EL_PS_TASKS; p++) {
        k->part_rows[p] = (o->rows + 1 - p) / 2;
        rf_ps_shard_spec spec = {
            .name = "emb",
            .part = (uint32_t)p,
            .dtype = RF_F32,
            .shape = {.rank = 2, .dims = {k->part_rows[p], (int64_t)o->dim}},
            .trainable = true,
            .optim = cfg,
            .max_push_rows = (uint32_t)k->maxu};
        if (rf_ps_create(k->c, (size_t)p, &spec, &k->var[p]) != RF_OK)
            return fail("creating the table");
        rf_ps_var_info info;
        rf_ps_var_get_info(k->var[p], &info);
        k->values_bytes[p] = info.values_bytes;
    }
    rf_ctr_spec_default(&k->spec);
    k->spec.seed = o->seed;
    k->spec.num_cat = o->features;
    k->spec.num_dense = 0;
    k->spec.train_size = 1ull << 40;
    for (uint32_t f = 0; f < o->features; f++) {
        k->spec.vocab[f] = o->rows;
        k->spec.zipf[f] = o->zipf;
    }
    if (o->rows > RF_CTR_MAX_VOCAB) {
        rf_error_set(RF_ERR_INVALID_ARG,
                     "ids over %" PRId64 " rows: the "
                     "data set's vocabularies stop at 10^9",
                     o->rows);
        return fail("--rows");
    }
    size_t nids = k->maxu;
    k->ids = malloc(nids * sizeof *k->ids);
    k->tmp = malloc(nids * sizeof *k->tmp);
    k->labels = malloc(o->batch * sizeof *k->labels);
    k->scratch = malloc(rf_optim_dedup_scratch_bytes(nids));
    size_t part = k->maxu * (8 + k->rb);
    size_t rows_len = EL_PS_TASKS * k->maxu * k->rb;
    k->pushbuf = aligned_alloc(64, (EL_PS_TASKS * part + 63) / 64 * 64);
    k->rowbuf = aligned_alloc(64, (rows_len + 63) / 64 * 64);
    k->gbuf = aligned_alloc(64, (rows_len + 63) / 64 * 64);
    if (!k->ids || !k->tmp || !k->labels || !k->scratch || !k->pushbuf ||
        !k->rowbuf || !k->gbuf) {
        fprintf(stderr, "rf-bench-emb: out of memory\n");
        return 1;
    }
    memset(k->pushbuf, 0, EL_PS_TASKS * part);
    for (int p = 0; p < EL_PS_TASKS; p++) {
        k->rows[p] = (int64_t *)(void *)(k->pushbuf + (size_t)p * part);
        k->grad[p] =
            (float *)(void *)(k->pushbuf + (size_t)p * part + 8 * k->maxu);
    }
    if (rf_ps_client_register(k->c, k->pushbuf,
                              (EL_PS_TASKS * part + 63) / 64 * 64,
                              &k->push_mr) != RF_OK ||
        rf_ps_client_register(k->c, k->rowbuf, (rows_len + 63) / 64 * 64,
                              &k->row_mr) != RF_OK ||
        rf_ps_client_register_reply(k->c, k->gbuf, (rows_len + 63) / 64 * 64,
                                    &k->g_mr) != RF_OK)
        return fail("registering the buffers");
    return 0;
}

/* The whole-shard buffer, or why there is none. */
static bool dense_buffer(el_ctx *k, char *why, size_t len)
{
    uint64_t need = k->values_bytes[0] > k->values_bytes[1]
                        ? k->values_bytes[0]
                        : k->values_bytes[1];
    if (need > k->o->dense_cap) {
        snprintf(why, len,
                 "a shard is %.2f GiB, above --dense-cap %.2f GiB (rf_ps_read "
                 "moves a whole field; no ranged READ)",
                 (double)need / (1 << 30), (double)k->o->dense_cap / (1 << 30));
        return false;
    }
    k->dense = aligned_alloc(4096, (need + 4095) / 4096 * 4096);
    if (!k->dense) {
        snprintf(why, len, "cannot allocate the %.2f GiB shard buffer",
                 (double)need / (1 << 30));
        return false;
    }
    if (rf_ps_client_register(k->c, k->dense, (need + 4095) / 4096 * 4096,
                              &k->dense_mr) != RF_OK) {
        snprintf(why, len, "cannot register the %.2f GiB shard buffer: %s",
                 (double)need / (1 << 30), rf_error_message());
        free(k->dense);
        k->dense = NULL;
        return false;
    }
    return true;
}

int el_bench_run(const el_opts *o, rf_child *ps, const uint16_t *ports)
{
    el_ctx k = {.o = o, .ps = ps};
    memcpy(k.ports, ports, sizeof k.ports);
    el_way_result res[EL_WAYS] = {{0}};
    el_run_info info = {.o = o};
    int rc = setup(&k);
    if (rc == 0)
        rc = init_rows(&k, o->warmup + o->steps);
    double uniq = 0;
    if (rc == 0)
        rc = run_way(&k, EL_ROWS, &res[EL_ROWS], &uniq);
    if (rc == 0) {
        double u;
        if (dense_buffer(&k, res[EL_DENSE].why, sizeof res[EL_DENSE].why)) {
            rc = run_way(&k, EL_DENSE, &res[EL_DENSE], &u);
            rf_ps_client_deregister(k.c, k.dense_mr);
            free(k.dense);
        } else {
            res[EL_DENSE].name = "dense";
            res[EL_DENSE].skipped = true;
        }
    }
    if (rc == 0) {
        double u;
        rc = run_way(&k, EL_GATHER, &res[EL_GATHER], &u);
    }
    for (int p = 0; rc == 0 && p < EL_PS_TASKS; p++)
        if (rf_ps_lookup_cost_measure(k.c, k.var[p],
                                      k.gbuf + (size_t)p * k.maxu * k.width,
                                      k.g_mr, k.maxu, &k.cost[p]) != RF_OK)
            rc = fail("measuring the cost model");
    if (rc == 0) {
        double u;
        rc = run_way(&k, EL_AUTO, &res[EL_AUTO], &u);
    }
    if (rc == 0) {
        info.provider = rf_ps_client_provider(k.c, 0);
        info.part_rows[0] = k.part_rows[0];
        info.part_rows[1] = k.part_rows[1];
        info.row_bytes = k.rb;
        info.unique_rows = uniq;
        info.ids = (double)k.maxu;
        for (int p = 0; p < EL_PS_TASKS; p++) {
            info.cost[p] = k.cost[p];
            info.part_unique[p] = k.part_unique[p];
        }
        el_cpu_model(info.cpu, sizeof info.cpu);
        el_report_text(&info, res);
        printf("check: ok (%" PRIu64 " looked-up rows equal the table's "
               "pattern; the ps gathered exactly the rows asked, and none "
               "for rows or dense)\n",
               k.checked);
        if (o->json && el_report_json(&info, res, o->json))
            rc = 1;
    } else if (k.bad_data) {
        printf("check: FAILED\n");
    }
    if (k.c) {
        if (rc == 0 && rf_ps_shutdown(k.c) != RF_OK)
            rc = fail("rf_ps_shutdown");
        rf_ps_client_close(k.c);
    }
    if (k.f)
        rf_fabric_close(k.f);
    free(k.ids), free(k.tmp), free(k.labels), free(k.scratch);
    free(k.pushbuf), free(k.rowbuf), free(k.gbuf);
    return rc;
}
