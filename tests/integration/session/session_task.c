/* tests/integration/session/session_task.c: one task of the session tests,
 * driving rdmaflow/session.h directly on synthetic data (no Fashion-MNIST):
 *
 *   rf_session_task local  OPTIONS            train locally (the oracle)
 *   rf_session_task ps     CLUSTER OPTIONS    rf_server_start + join
 *   rf_session_task worker CLUSTER OPTIONS    a worker's session
 *   rf_session_task compare A B --tolerance=T OPTIONS
 *                                             two --out files of the model
 *                                             OPTIONS describe: int64s equal,
 *                                             floats within T (absolute)
 *
 *   CLUSTER  --ps_hosts=H:P,... --worker_hosts=H:P,... --task_index=I
 *   OPTIONS  --steps=N (last step, StopAtStepHook) --optim=adam|adagrad|sgd|
 *            momentum|rmsprop --apply=ps|worker --use_locking --width=W
 *            --seed=S --out=FILE --threads=T --extra_ps_variable
 *            --checkpoint_dir=D (the chief restores the newest checkpoint
 *            there, if any) --save_every=N (the chief saves every N steps)
 *            --op_timeout_ms=T
 *   tables   --vocab=V (0: none) --emb_dim=E --emb_parts=P: an embedding
 *            table [V, E] partitioned into P parts (mod) looked up by ids
 *            derived in the graph from x (id = (x + 1) * V / 2, so [?, 24]
 *            ids per batch, no static shape: --max_lookup_ids bounds
 *            them), their mean concatenated to x before "hidden";
 *            --bad_id_at=K feeds x[0] = 1.5 at step K (an id past the
 *            vocabulary): the run must fail naming the lookup and the id
 *   sync     --sync_replicas --replicas_to_aggregate=N --total_num_replicas=M
 *            (the session's options); --sync_workers=N (local: each step's
 *            batch is the N workers' batches of that step, one after the
 *            other: SyncReplicasOptimizer's oracle); --push_stale (a worker
 *            waits before each run until global_step passed its local step,
 *            so every gradient it pushes is stale); --stop_at_step=K (a
 *            worker prints "stopping at step K pid P" and SIGSTOPs itself
 *            before its first run at global step >= K)
 *   ssp      --staleness=K --staleness_wait_ms=T (the session's options);
 *            --my_steps=N (train exactly N steps of this worker instead of
 *            up to global step --steps); --sleep_ms=M (sleep M ms before
 *            each run, a slow worker); --record=FILE (one line per step:
 *            "K CALL_NS END_NS", rf_now_ns before the sleep and after the
 *            run); --recreate_at=K (a non-chief destroys its session
 *            after its K-th step and creates a new one, as a restarted
 *            worker would: its clock must continue from its word); prints
 *            "ssp waits W wait_ms X lead L"
 *
 * The model: x [?, 24] -> dense(width, relu) "hidden" -> dense(4) "logits",
 * mean sparse softmax cross-entropy, the optimizer through rf_minimize with
 * global_step created first. The batch of worker w at global step k is a
 * pure function of (seed, w, k): uniform inputs labelled by a fixed hidden
 * linear model, so one worker sees exactly the local run's batches, also
 * when it resumes from a checkpoint. --out writes every
 * variable of the graph (values, slots, beta powers, global_step) as raw
 * bytes in creation order, each after its name, so the driver compares two
 * runs with cmp. A worker also checks, on the session API itself: the step
 * description (rf_session_describe) against the graph, that a run without
 * train_op moves nothing, and the refusals (no train_op, a ps server, a
 * worker server joined). Lines on stdout: "steps N global_step G", "loss
 * FIRST LAST", with sync replicas "sync accepted A stale S published P" (this
 * worker's pushes) and, from the chief after every worker finished, "sync
 * stale_on_ps T" (the shards' stale counters summed). A failed check prints
 * the reason and exits 1; a session the library refused (rf_session_create
 * failing) exits 3 with its message. */
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdmaflow/clock.h"
#include "rdmaflow/cluster.h"
#include "rdmaflow/device.h"
#include "rdmaflow/graph.h"
#include "rdmaflow/session.h"
#include "tests/common/check.h"

#define DIM     24
#define CLASSES 4
#define BATCH   32

typedef struct task_opts {
    const char *role;
    rf_cluster_flags cluster;
    int64_t steps;
    const char *optim, *out, *checkpoint_dir;
    int64_t save_every;
    rf_ps_apply_mode apply;
    bool use_locking, extra_ps_variable;
    int width, threads, op_timeout_ms;
    uint64_t seed;
    /* sync replicas */
    bool sync_replicas, push_stale;
    int replicas_to_aggregate, total_num_replicas, sync_workers;
    int64_t stop_at_step;
    /* stale synchronous parallel */
    int staleness, staleness_wait_ms, sleep_ms;
    int64_t my_steps, recreate_at;
    const char *record;
    /* embedding table */
    int vocab, emb_dim, emb_parts;
    int64_t max_lookup_ids, bad_id_at;
    bool table_uninitialized;
    rf_lookup_way lookup; /* --embedding_lookup */
    /* compare */
    const char *compare_a, *compare_b;
    double tolerance;
} task_opts;

typedef struct model {
    rf_graph *g;
    rf_executor *ex;
    rf_node *gs, *x, *y, *loss, *train_op;
} model;

/* ---- data ----------------------------------------------------------------
 */

static uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [-1, 1) from three keys. */
static float u(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t z = mix(mix(mix(a) ^ b) ^ c);
    return (float)((double)(z >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
}

static void batch(uint64_t seed, int worker, int64_t k, float *x, int32_t *y)
{
    for (int i = 0; i < BATCH; i++) {
        uint64_t row = (uint64_t)k * BATCH + (uint64_t)i;
        for (int d = 0; d < DIM; d++)
            x[i * DIM + d] =
                u(seed ^ ((uint64_t)worker << 32), row, (uint64_t)d);
        int best = 0;
        float best_v = -INFINITY;
        for (int c = 0; c < CLASSES; c++) {
            float v = 0;
            for (int d = 0; d < DIM; d++)
                v += u(4242, (uint64_t)c, (uint64_t)d) * x[i * DIM + d];
            if (v > best_v) {
                best_v = v;
                best = c;
            }
        }
        y[i] = best;
    }
}

/* ---- the model -----------------------------------------------------------
 */

static rf_optim_config optim_of(const char *name)
{
    rf_optim_config c;
    rf_optimizer_kind k = !strcmp(name, "sgd")        ? RF_OPTIM_SGD
                          : !strcmp(name, "momentum") ? RF_OPTIM_MOMENTUM
                          : !strcmp(name, "adagrad")  ? RF_OPTIM_ADAGRAD
                          : !strcmp(name, "rmsprop")  ? RF_OPTIM_RMSPROP
                          : !strcmp(name, "ftrl")     ? RF_OPTIM_FTRL
                                                      : RF_OPTIM_ADAM;
    CHECK_OK(rf_optim_defaults(k, &c));
    if (k != RF_OPTIM_ADAM)
        c.learning_rate = 0.05f;
    if (k == RF_OPTIM_MOMENTUM)
        c.momentum = 0.9f;
    return c;
}

/* Builds the model; with setter under replica_device_setter. */
static void build(const task_opts *o, rf_replica_device_setter *setter,
                  model *m)
{
    CHECK_OK(rf_graph_create(&m->g));
    rf_graph *g = m->g;
    rf_graph_set_seed(g, o->seed);
    if (setter)
        CHECK_OK(rf_graph_push_replica_device_setter(g, setter));
    m->gs = rf_global_step(g);
    m->x = rf_placeholder(g, RF_F32, RF_SHAPE(-1, DIM), "x");
    m->y = rf_placeholder(g, RF_I32, RF_SHAPE(-1), "y");
    rf_node *features = m->x;
    if (o->vocab > 0) {
        rf_partitioner part;
        CHECK_OK(rf_fixed_size_partitioner(o->emb_parts, 0, &part));
        CHECK_OK(rf_graph_set_partitioner(g, &part));
        rf_node *table =
            rf_get_variable(g, RF_F32, RF_SHAPE(o->vocab, o->emb_dim),
                            rf_init_random_uniform(-0.5, 0.5), "emb");
        CHECK_OK(rf_graph_set_partitioner(g, NULL));
        rf_node *scaled =
            rf_mul(g, rf_add(g, m->x, rf_const_f32(g, 1, NULL), NULL),
                   rf_const_f32(g, (float)o->vocab / 2 - 0.01f, NULL), NULL);
        rf_node *ids = rf_cast(g, scaled, RF_I64, "ids");
        rf_node *e =
            rf_embedding_lookup_partitioned(g, table, ids, "mod", "lookup");
        int axis = 1;
        rf_node *xs[2] = {m->x, rf_reduce_mean(g, e, &axis, 1, false, NULL)};
        features = rf_concat(g, xs, 2, 1, "features");
    }
    rf_node *h = rf_dense(g, features, o->width, RF_ACT_RELU, "hidden");
    rf_node *logits = rf_dense(g, h, CLASSES, RF_ACT_NONE, "logits");
    m->loss = rf_reduce_mean(
        g, rf_sparse_softmax_cross_entropy_with_logits(g, m->y, logits, NULL),
        NULL, 0, false, "loss");
    if (o->extra_ps_variable) {
        rf_node *extra =
            rf_variable(g, RF_F32, RF_SHAPE(3), rf_init_zeros(), "not_trained");
        rf_variable_set_trainable(extra, false);
    }
    CHECK(rf_graph_status(g) == RF_OK, "building: %s", rf_graph_error(g));
    rf_optim_config cfg = optim_of(o->optim);
    CHECK_OK(rf_minimize(g, &cfg, m->loss, m->gs, &m->train_op));
    if (setter)
        rf_device_fn_pop(g);
    for (size_t i = 0; i < rf_graph_num_variables(g); i++) {
        rf_node *v = rf_graph_variable(g, i);
        if (!o->table_uninitialized || strncmp(rf_node_name(v), "emb/", 4))
            CHECK_OK(rf_variable_initialize(v));
    }
    rf_executor_options eo = {.threads = o->threads};
    CHECK_OK(rf_executor_create(&eo, &m->ex));
}

static void destroy(model *m)
{
    rf_executor_destroy(m->ex);
    rf_graph_destroy(m->g);
}

/* Every variable, in creation order: name, NUL, its bytes. */
static void write_variables(const model *m, const char *path)
{
    if (!path)
        return;
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL, "cannot write %s", path);
    for (size_t i = 0; i < rf_graph_num_variables(m->g); i++) {
        rf_node *v = rf_graph_variable(m->g, i);
        const char *name = rf_node_name(v);
        fwrite(name, 1, strlen(name) + 1, f);
        fwrite(rf_variable_data(v), 1, rf_variable_bytes(v), f);
    }
    CHECK(fclose(f) == 0, "writing %s", path);
}

/* ---- roles ---------------------------------------------------------------
 */

/* The lines the driver reads: this task's steps, the global_step it ended
 * at, its first and last loss. */
static void print_result(int64_t steps, int64_t global_step, double first,
                         double last)
{
    printf("steps %" PRId64 " global_step %" PRId64 "\n", steps, global_step);
    printf("loss %.6f %.6f\n", first, last);
    fflush(stdout);
}

/* Synchronous replicas' oracle with --sync_workers=N: each step trains on
 * the N workers' batches of that step, worker 0's rows first. */
#define MAX_SYNC_WORKERS 8

static int run_local(const task_opts *o)
{
    model m = {0};
    build(o, NULL, &m);
    rf_node *feeds[] = {m.x, m.y}, *fetches[] = {m.loss, m.train_op};
    rf_plan *plan = NULL;
    CHECK_OK(rf_plan_create(m.ex, m.g, fetches, 2, feeds, 2, NULL, 0, &plan));
    int nw = o->sync_workers > 0 ? o->sync_workers : 1;
    CHECK(nw <= MAX_SYNC_WORKERS, "--sync_workers=%d (at most %d)", nw,
          MAX_SYNC_WORKERS);
    static float x[MAX_SYNC_WORKERS * BATCH * DIM];
    static int32_t y[MAX_SYNC_WORKERS * BATCH];
    rf_tensor in[2] = {rf_tensor_make(RF_F32, RF_SHAPE(nw * BATCH, DIM), x),
                       rf_tensor_make(RF_I32, RF_SHAPE(nw * BATCH), y)};
    int64_t step = 0, k = 0;
    double first = NAN, last = NAN;
    while (step < o->steps) {
        for (int w = 0; w < nw; w++)
            batch(o->seed, w, k, x + w * BATCH * DIM, y + w * BATCH);
        k++;
        rf_tensor out[2];
        CHECK_OK(rf_plan_run(plan, in, out));
        step = *(const int64_t *)out[1].data;
        last = *rf_tensor_f32(&out[0]);
        if (k == 1)
            first = last;
    }
    print_result(k, step, first, last);
    rf_plan_destroy(plan);
    write_variables(&m, o->out);
    destroy(&m);
    return 0;
}

static rf_cluster *resolve(const task_opts *o)
{
    rf_cluster *c = NULL;
    CHECK_OK(rf_cluster_resolve(&o->cluster, NULL, &c));
    CHECK(c != NULL, "no cluster in the flags");
    return c;
}

static int run_ps(const task_opts *o)
{
    rf_cluster *c = resolve(o);
    rf_server *sv = NULL;
    CHECK_OK(rf_server_start(c, NULL, &sv));
    /* a ps task's server has no session */
    model m = {0};
    build(o, NULL, &m);
    rf_session_options so;
    rf_session_options_init(&so);
    so.train_op = m.train_op;
    rf_session *s = NULL;
    CHECK_ST(rf_session_create(sv, m.g, m.ex, &so, &s), RF_ERR_INVALID_ARG);
    CHECK_MSG("ps task's server");
    CHECK(s == NULL, "a refused session was returned");
    destroy(&m);
    printf("ps %d serving on port %u\n", rf_cluster_self(c)->index,
           (unsigned)rf_server_port(sv));
    fflush(stdout);
    rf_status st = rf_server_join(sv);
    CHECK(st == RF_OK, "serving failed: %s", rf_error_message());
    printf("ps %d: shut down by the chief\n", rf_cluster_self(c)->index);
    rf_server_stop(sv);
    rf_cluster_destroy(c);
    return 0;
}

/* Each table shard's lookup way (rf_session_lookup_info), printed as
 * "lookup TABLE below B above A switch N read R gathered G: REASON",
 * against the option and the counters: a forced way is the only one its
 * lookups took; auto took a way for each lookup as its threshold says
 * (the test cannot see a lookup's rows, so: some way, and the ways the
 * rule allows); the per-table rows add up to the session's. */
static void check_lookup_ways(rf_session *s, const task_opts *o,
                              const rf_session_counters *c)
{
    rf_session_lookup_info w[8];
    size_t n = rf_session_lookup_info_get(s, w, 8);
    CHECK(n == (size_t)o->emb_parts && n <= 8, "%zu tables' ways, want %d", n,
          o->emb_parts);
    uint64_t read = 0, gathered = 0, lr = 0, lg = 0;
    for (size_t i = 0; i < n; i++) {
        printf("lookup %s below %s above %s switch %" PRIu64 " read %" PRIu64
               " gathered %" PRIu64 ": %s\n",
               w[i].table, rf_lookup_way_name(w[i].below),
               rf_lookup_way_name(w[i].above), w[i].switch_rows, w[i].rows_read,
               w[i].rows_gathered, w[i].reason);
        CHECK(w[i].configured == o->lookup, "%s: configured %s", w[i].table,
              rf_lookup_way_name(w[i].configured));
        bool says = o->lookup == RF_LOOKUP_AUTO
                        ? strstr(w[i].reason, "auto:") && w[i].probe_rows > 0
                        : strstr(w[i].reason, "as embedding_lookup=") != NULL;
        CHECK(strstr(w[i].reason, w[i].table) && says,
              "%s: the reason does not say why: %s", w[i].table, w[i].reason);
        if (o->lookup != RF_LOOKUP_AUTO)
            CHECK(w[i].below == o->lookup && w[i].above == o->lookup &&
                      (o->lookup == RF_LOOKUP_ROWS ? w[i].rows_gathered == 0
                                                   : w[i].rows_read == 0),
                  "%s: forced %s, but its lookups took the other way",
                  w[i].table, rf_lookup_way_name(o->lookup));
        bool rows_ok = w[i].below == RF_LOOKUP_ROWS ||
                       (w[i].switch_rows && w[i].above == RF_LOOKUP_ROWS);
        bool gather_ok = w[i].below == RF_LOOKUP_GATHER ||
                         (w[i].switch_rows && w[i].above == RF_LOOKUP_GATHER);
        CHECK((rows_ok || w[i].rows_read == 0) &&
                  (gather_ok || w[i].rows_gathered == 0),
              "%s: its lookups took a way its rule excludes", w[i].table);
        read += w[i].rows_read;
        gathered += w[i].rows_gathered;
        lr += w[i].lookups_read;
        lg += w[i].lookups_gathered;
    }
    printf("lookup ways rows_read %" PRIu64 " rows_gathered %" PRIu64
           " lookups_read %" PRIu64 " lookups_gathered %" PRIu64 "\n",
           c->table_rows_read - c->table_rows_gathered, c->table_rows_gathered,
           c->table_lookups_read, c->table_lookups_gathered);
    CHECK(read + gathered == c->table_rows_read &&
              gathered == c->table_rows_gathered &&
              lr == c->table_lookups_read && lg == c->table_lookups_gathered,
          "the tables' rows (%" PRIu64 " read, %" PRIu64
          " gathered) do not add up to the session's (%" PRIu64
          ", of them %" PRIu64 " gathered)",
          read, gathered, c->table_rows_read, c->table_rows_gathered);
}

/* The training step's description against the graph: [SSP: the clocks
 * READ,] a READ of every trained variable, COMPUTE, one push of each, the
 * wait, FETCH_AND_ADD of global_step [, SSP: the clock's FETCH_AND_ADD]
 * last; the span names are "<op> <variable>". */
static void check_description(const task_opts *o, const model *m,
                              const rf_session_desc *d, int num_workers)
{
    rf_node *vars[16];
    size_t nv = rf_graph_trainable_variables(m->g, vars, 16);
    const char *push =
        o->apply == RF_PS_APPLY_PS ? "WRITE_WITH_IMM" : "APPLY_WORKER";
    const char *apply = o->sync_replicas             ? "sync"
                        : o->apply == RF_PS_APPLY_PS ? "ps"
                                                     : "worker";
    CHECK(!strcmp(d->apply, apply), "apply %s, want %s", d->apply, apply);
    CHECK(o->sync_replicas
              ? d->replicas_to_aggregate >= 1 &&
                    d->total_num_replicas >= d->replicas_to_aggregate
              : d->replicas_to_aggregate == 0 && d->total_num_replicas == 0,
          "described sync replicas %d of %d", d->replicas_to_aggregate,
          d->total_num_replicas);
    CHECK(d->num_vars == nv + 1, "%zu variables described, want %zu",
          d->num_vars, nv + 1);
    CHECK(!strcmp(d->vars[0].name, "global_step") && d->vars[0].ps_task == 0 &&
              d->vars[0].dtype == RF_I64 && d->vars[0].where[0],
          "the first variable is %s on ps %zu", d->vars[0].name,
          d->vars[0].ps_task);
    /* stale synchronous parallel: the clocks READ first, the clock's
     * FETCH_AND_ADD last */
    size_t b = o->staleness >= 0;
    CHECK(d->staleness == o->staleness, "described staleness %d, want %d",
          d->staleness, o->staleness);
    CHECK(d->num_step_ops == 2 * nv + 3 + 2 * b, "%zu step ops, want %zu",
          d->num_step_ops, 2 * nv + 3 + 2 * b);
    if (b) {
        const rf_step_op *r = &d->step[0], *a = &d->step[2 * nv + 4];
        CHECK(r->kind == RF_STEP_CLOCKS_READ &&
                  !strcmp(r->name, "READ ssp_clocks") && r->ps_task == 0 &&
                  r->wire_bytes == 8 * (size_t)num_workers,
              "step[0] is %s (%zu wire bytes), want READ ssp_clocks (%zu)",
              r->name, r->wire_bytes, 8 * (size_t)num_workers);
        CHECK(a->kind == RF_STEP_CLOCK_ADD &&
                  !strcmp(a->name, "FETCH_AND_ADD ssp_clock") &&
                  a->ps_task == 0 && a->wire_bytes == 8,
              "the last step op is %s, want FETCH_AND_ADD ssp_clock", a->name);
    }
    for (size_t i = 0; i < nv; i++) {
        const char *name = rf_node_name(vars[i]);
        const rf_session_var_desc *v = &d->vars[1 + i];
        CHECK(!strcmp(v->name, name), "variable %zu is %s, want %s", i + 1,
              v->name, name);
        CHECK(v->bytes == rf_variable_bytes(vars[i]) &&
                  v->record_bytes > v->bytes,
              "%s: %zu bytes, record %zu", name, v->bytes, v->record_bytes);
        bool table = !strncmp(name, "emb/", 4);
        size_t rows = (size_t)rf_node_shape(vars[i]).dims[0];
        CHECK(table ? v->max_push_rows > 0 && v->rows == rows &&
                          v->row_bytes * rows == v->bytes
                    : v->max_push_rows == 0 && v->rows == 0,
              "%s: described as a table of %zu rows of %zu bytes, "
              "max_push_rows %u",
              name, v->rows, v->row_bytes, v->max_push_rows);
        CHECK(!strncmp(v->device, "/job:ps/task:", 13), "%s on %s", name,
              v->device);
        const rf_step_op *r = &d->step[b + i];
        char want[128];
        snprintf(want, sizeof want, "%s %s", table ? "READ_ROWS" : "READ",
                 name);
        size_t bytes = table ? v->max_push_rows * v->row_bytes : v->bytes;
        CHECK(r->kind == RF_STEP_READ && !strcmp(r->name, want) &&
                  r->bytes == bytes && r->ps_task == v->ps_task &&
                  r->bound == table,
              "step[%zu] is %s (%zu bytes), want %s (%zu)", i, r->name,
              r->bytes, want, bytes);
        int pushes = 0;
        snprintf(want, sizeof want, "%s %s", push, name);
        for (size_t k = b + nv + 1; k < b + 2 * nv + 1; k++)
            pushes += !strcmp(d->step[k].name, want) &&
                      d->step[k].kind == RF_STEP_PUSH &&
                      d->step[k].locking ==
                          (o->apply == RF_PS_APPLY_WORKER && o->use_locking);
        CHECK(pushes == 1, "%d pushes named '%s'", pushes, want);
    }
    CHECK(d->step[b + nv].kind == RF_STEP_COMPUTE &&
              d->step[b + nv].num_ops > 0,
          "step[%zu] is %s, want COMPUTE", b + nv, d->step[b + nv].name);
    const rf_step_op *w = &d->step[b + 2 * nv + 1];
    CHECK(w->kind == RF_STEP_WAIT &&
              !strcmp(w->name,
                      o->sync_replicas ? "wait accumulator acks" : w->name),
          "step[%zu] is %s, want the wait", b + 2 * nv + 1, w->name);
    const rf_step_op *adv = &d->step[b + 2 * nv + 2];
    rf_step_op_kind kind =
        o->sync_replicas ? RF_STEP_WAIT_STEP : RF_STEP_FETCH_AND_ADD;
    const char *name = o->sync_replicas ? "WAIT_GLOBAL_STEP global_step"
                                        : "FETCH_AND_ADD global_step";
    CHECK(adv->kind == kind && !strcmp(adv->name, name) && adv->ps_task == 0 &&
              adv->bytes == 8,
          "step[%zu] is %s, want %s", b + 2 * nv + 2, adv->name, name);
}

/* rf_session_create_offline for this task, graph and options describes
 * what the live session does (every variable and step operation the same,
 * no provider per ps task) and refuses everything else. */
static void check_offline(const task_opts *o, const rf_cluster *c,
                          const rf_cluster_task *self, const model *m,
                          const rf_session_options *so,
                          const rf_session_desc *live)
{
    rf_session *off = NULL;
    CHECK_OK(rf_session_create_offline(c, self, m->g, m->ex, so, &off));
    rf_node *feeds[] = {m->x, m->y}, *fetches[] = {m->loss, m->train_op};
    const rf_session_desc *d = NULL;
    CHECK_OK(rf_session_describe(off, feeds, 2, fetches, 2, &d));
    check_description(o, m, d, rf_cluster_num_workers(c));
    CHECK(d->num_vars == live->num_vars &&
              d->num_step_ops == live->num_step_ops &&
              d->num_ps == live->num_ps,
          "offline: %zu variables, %zu ops, %zu ps; live %zu, %zu, %zu",
          d->num_vars, d->num_step_ops, d->num_ps, live->num_vars,
          live->num_step_ops, live->num_ps);
    for (size_t i = 0; i < d->num_vars && i < live->num_vars; i++)
        CHECK(!strcmp(d->vars[i].name, live->vars[i].name) &&
                  d->vars[i].ps_task == live->vars[i].ps_task &&
                  d->vars[i].bytes == live->vars[i].bytes &&
                  d->vars[i].record_bytes == live->vars[i].record_bytes,
              "offline variable %zu: %s on ps %zu, record %zu; live %s on ps "
              "%zu, record %zu",
              i, d->vars[i].name, d->vars[i].ps_task, d->vars[i].record_bytes,
              live->vars[i].name, live->vars[i].ps_task,
              live->vars[i].record_bytes);
    for (size_t i = 0; i < d->num_step_ops && i < live->num_step_ops; i++)
        CHECK(!strcmp(d->step[i].name, live->step[i].name) &&
                  d->step[i].bytes == live->step[i].bytes &&
                  d->step[i].wire_bytes == live->step[i].wire_bytes,
              "offline step op %zu: %s (%zu wire bytes); live %s (%zu)", i,
              d->step[i].name, d->step[i].wire_bytes, live->step[i].name,
              live->step[i].wire_bytes);
    for (size_t p = 0; p < d->num_ps; p++)
        CHECK(d->ps_providers[p][0] == '\0' && live->ps_providers[p][0],
              "ps %zu: offline provider '%s', live '%s'", p, d->ps_providers[p],
              live->ps_providers[p]);
    int64_t gs = 0;
    CHECK_ST(rf_session_global_step(off, &gs), RF_ERR_INVALID_ARG);
    CHECK(strstr(rf_error_message(), "only describes") != NULL,
          "the refusal says why: %s", rf_error_message());
    CHECK_ST(rf_session_finish(off, 1), RF_ERR_INVALID_ARG);
    CHECK_ST(rf_session_shutdown_cluster(off), RF_ERR_INVALID_ARG);
    float x[BATCH * DIM] = {0};
    int32_t y[BATCH] = {0};
    rf_tensor in[2] = {rf_tensor_make(RF_F32, RF_SHAPE(BATCH, DIM), x),
                       rf_tensor_make(RF_I32, RF_SHAPE(BATCH), y)};
    rf_tensor out[2];
    CHECK_ST(rf_session_run(off, feeds, in, 2, fetches, 2, out, NULL),
             RF_ERR_INVALID_ARG);
    rf_session_destroy(off);
    static const rf_cluster_task ps_task = {.job = "ps", .index = 0};
    CHECK_ST(rf_session_create_offline(c, &ps_task, m->g, m->ex, so, &off),
             RF_ERR_INVALID_ARG);
}

/* Stale synchronous parallel: this worker's waits and its last lead. */
static void print_ssp(rf_session *s, const task_opts *o)
{
    rf_session_counters c;
    rf_session_counters_get(s, &c);
    CHECK(o->staleness >= 0 || (c.ssp_waits == 0 && c.ssp_lead == 0),
          "SSP off, yet %" PRIu64 " waits", c.ssp_waits);
    printf("ssp waits %" PRIu64 " wait_ms %.1f lead %" PRId64 "\n", c.ssp_waits,
           c.ssp_wait_ns / 1e6, c.ssp_lead);
    fflush(stdout);
}

/* Sync replicas: this worker's pushes, as the acks said. */
static void print_sync(rf_session *s, const task_opts *o)
{
    if (!o->sync_replicas)
        return;
    rf_session_sync_stats st;
    CHECK_OK(rf_session_sync_stats_get(s, &st));
    printf("sync accepted %" PRIu64 " stale %" PRIu64 " published %" PRIu64
           " local_step %" PRId64 "\n",
           st.accepted, st.stale, st.published, st.local_step);
    fflush(stdout);
}

/* --push_stale: until global_step passed this worker's local step (every
 * shard applied it without this worker), so the next run's gradients are
 * stale. The first run always comes (so the driver sees at least one stale
 * push even if the others finished meanwhile); false for a later one when
 * the job reached its last step. */
static bool wait_until_stale(rf_session *s, const task_opts *o, int64_t runs,
                             int64_t *step)
{
    rf_session_sync_stats st;
    CHECK_OK(rf_session_sync_stats_get(s, &st));
    int64_t deadline = rf_deadline_ms(60000);
    for (;;) {
        int64_t now = 0;
        CHECK_OK(rf_session_global_step(s, &now));
        if (now > st.local_step && runs == 0)
            return true;
        if (now >= o->steps) {
            *step = now;
            return false;
        }
        if (now > st.local_step)
            return true;
        CHECK(!rf_deadline_passed(deadline),
              "global_step stayed at %" PRId64 " for 60 s", now);
        rf_sleep_ms(1);
    }
}

/* A run without train_op reads and computes, and moves nothing. */
static void check_read_only_run(rf_session *s, const model *m, int64_t step)
{
    float x[BATCH * DIM];
    int32_t y[BATCH];
    batch(1, 99, 0, x, y);
    rf_node *feeds[] = {m->x, m->y}, *fetches[] = {m->loss};
    rf_tensor in[2] = {rf_tensor_make(RF_F32, RF_SHAPE(BATCH, DIM), x),
                       rf_tensor_make(RF_I32, RF_SHAPE(BATCH), y)};
    rf_tensor out[1];
    int64_t gs = -1, now = -1;
    CHECK_OK(rf_session_run(s, feeds, in, 2, fetches, 1, out, &gs));
    CHECK(isfinite(*rf_tensor_f32(&out[0])), "loss of the read-only run");
    CHECK_OK(rf_session_global_step(s, &now));
    CHECK(gs == step && now == step,
          "a run without train_op moved global_step: %" PRId64 " -> %" PRId64
          " (read back %" PRId64 ")",
          step, gs, now);
}

static int run_worker(const task_opts *o)
{
    rf_cluster *c = resolve(o);
    const rf_cluster_task *self = rf_cluster_self(c);
    rf_server *sv = NULL;
    CHECK_OK(rf_server_start(c, NULL, &sv));
    CHECK_ST(rf_server_join(sv), RF_ERR_INVALID_ARG);
    rf_cluster_desc cd;
    rf_cluster_device_desc(c, &cd);
    char wdev[64];
    snprintf(wdev, sizeof wdev, "/job:%s/task:%d", self->job, self->index);
    rf_replica_device_setter_options so_set;
    rf_replica_device_setter_options_init(&so_set);
    so_set.cluster = &cd;
    so_set.worker_device = wdev;
    rf_replica_device_setter *setter = NULL;
    CHECK_OK(rf_replica_device_setter_create(&so_set, &setter));
    model m = {0};
    build(o, setter, &m);

    rf_session_options so;
    rf_session_options_init(&so);
    so.apply = o->apply;
    so.use_locking = o->use_locking;
    so.init_timeout_ms = 60000;
    so.op_timeout_ms = o->op_timeout_ms;
    so.checkpoint_dir = o->checkpoint_dir;
    so.sync_replicas = o->sync_replicas;
    so.replicas_to_aggregate = o->replicas_to_aggregate;
    so.total_num_replicas = o->total_num_replicas;
    so.max_lookup_ids = o->max_lookup_ids;
    so.embedding_lookup = o->lookup;
    so.staleness = o->staleness;
    so.staleness_wait_ms = o->staleness_wait_ms;
    rf_session *s = NULL;
    CHECK_ST(rf_session_create(sv, m.g, m.ex, &so, &s), RF_ERR_INVALID_ARG);
    so.train_op = m.train_op;
    if (rf_session_create(sv, m.g, m.ex, &so, &s) != RF_OK) {
        printf("refused: %s\n", rf_error_message());
        fflush(stdout);
        destroy(&m);
        rf_replica_device_setter_destroy(setter);
        rf_server_stop(sv);
        rf_cluster_destroy(c);
        return 3;
    }
    const char *note = "", *from = rf_session_restored_from(s, &note);
    if (from)
        printf("restored from %s%s%s\n", from, *note ? "; " : "", note);
    rf_node *feeds[] = {m.x, m.y}, *fetches[] = {m.loss, m.train_op};
    const rf_session_desc *desc = NULL;
    CHECK_OK(rf_session_describe(s, feeds, 2, fetches, 2, &desc));
    check_description(o, &m, desc, rf_cluster_num_workers(c));
    check_offline(o, c, self, &m, &so, desc);

    float x[BATCH * DIM];
    int32_t y[BATCH];
    rf_tensor in[2] = {rf_tensor_make(RF_F32, RF_SHAPE(BATCH, DIM), x),
                       rf_tensor_make(RF_I32, RF_SHAPE(BATCH), y)};
    int64_t step = 0, k = 0;
    double first = NAN, last = NAN;
    CHECK_OK(rf_session_global_step(s, &step));
    if (o->sync_replicas) {
        printf("sync session ready at global_step %" PRId64 "\n", step);
        fflush(stdout);
    }
    bool stopped = false;
    int64_t bad_at = o->bad_id_at;
    FILE *rec = o->record ? fopen(o->record, "w") : NULL;
    CHECK(!o->record || rec, "cannot write %s", o->record);
    while (o->my_steps > 0 ? k < o->my_steps
                           : step < o->steps || (o->push_stale && k == 0)) {
        uint64_t t_call = rf_now_ns();
        if (o->sleep_ms > 0)
            rf_sleep_ms(o->sleep_ms);
        if (o->stop_at_step > 0 && step >= o->stop_at_step && !stopped) {
            printf("stopping at step %" PRId64 " pid %ld\n", step,
                   (long)getpid());
            fflush(stdout);
            stopped = true;
            raise(SIGSTOP);
        }
        if (o->push_stale && !wait_until_stale(s, o, k, &step))
            break;
        batch(o->seed, self->worker_id, step, x, y);
        k++;
        rf_tensor out[2];
        int64_t before = step;
        if (o->sync_replicas && k == 1) {
            /* the first run is tagged with the step read when the session
             * was created, which the chief may have passed since (TF's
             * local_step_init_op): the run's step is above that tag */
            rf_session_sync_stats ss;
            CHECK_OK(rf_session_sync_stats_get(s, &ss));
            before = ss.local_step;
        }
        if (bad_at > 0 && step >= bad_at) {
            rf_session_counters c0, c1;
            rf_session_counters_get(s, &c0);
            x[5 * DIM + 3] = 1.5f; /* id (2.5 * V / 2) at ids[5,3] */
            rf_status st =
                rf_session_run(s, feeds, in, 2, fetches, 2, out, &step);
            rf_session_counters_get(s, &c1);
            printf("bad id run: %s: %s\n", rf_status_string(st),
                   rf_error_message());
            CHECK(st == RF_ERR_INVALID_ARG, "a bad id ran: %s",
                  rf_status_string(st));
            CHECK(strstr(rf_error_message(), "lookup") &&
                      strstr(rf_error_message(), "ids[5,3]"),
                  "the error names the lookup and the id: %s",
                  rf_error_message());
            CHECK(c1.table_rows_read == c0.table_rows_read,
                  "rows were read for the bad batch");
            fflush(stdout);
            x[5 * DIM + 3] = 0;
            /* then train on: the session still works */
            CHECK_OK(rf_session_run(s, feeds, in, 2, fetches, 2, out, &step));
            printf("trained on after the bad id\n");
            fflush(stdout);
            bad_at = 0;
        } else {
            CHECK_OK(rf_session_run(s, feeds, in, 2, fetches, 2, out, &step));
        }
        if (rec)
            fprintf(rec, "%" PRId64 " %" PRIu64 " %" PRIu64 "\n", k, t_call,
                    rf_now_ns());
        CHECK(out[1].dtype == RF_I64 && *(const int64_t *)out[1].data == step,
              "train_op's value is not the new global_step");
        CHECK(step > before, "global_step went from %" PRId64 " to %" PRId64,
              before, step);
        last = *rf_tensor_f32(&out[0]);
        if (k == 1)
            first = last;
        if (self->is_chief && o->save_every > 0 && step % o->save_every == 0) {
            char path[4096];
            CHECK_OK(
                rf_session_save(s, o->checkpoint_dir, 0, path, sizeof path));
            printf("saved %s\n", path);
        }
        /* last: out[] points into the session */
        if (o->recreate_at > 0 && k == o->recreate_at) {
            CHECK(!self->is_chief, "--recreate_at is for a non-chief");
            print_ssp(s, o); /* this session's waits */
            rf_session_destroy(s);
            s = NULL;
            CHECK_OK(rf_session_create(sv, m.g, m.ex, &so, &s));
            printf("session recreated after step %" PRId64 "\n", k);
            fflush(stdout);
        }
    }
    if (rec)
        CHECK(fclose(rec) == 0, "writing %s", o->record);
    print_result(k, step, first, last);
    print_sync(s, o);
    print_ssp(s, o);
    if (o->table_uninitialized) {
        FILE *f = fopen("/proc/self/status", "r");
        char line[256];
        while (f && fgets(line, sizeof line, f))
            if (!strncmp(line, "VmHWM:", 6))
                printf("peak_rss_kib %ld\n", strtol(line + 6, NULL, 10));
        if (f)
            fclose(f);
    }
    if (o->vocab > 0) {
        rf_session_counters tc;
        rf_session_counters_get(s, &tc);
        printf("table rows_read %" PRIu64 " bytes_read %" PRIu64
               " rows_pushed %" PRIu64 " bytes_pushed %" PRIu64 "\n",
               tc.table_rows_read, tc.table_bytes_read, tc.table_rows_pushed,
               tc.table_bytes_pushed);
        CHECK(tc.table_rows_read > 0 && tc.table_rows_pushed > 0,
              "no table rows moved");
        check_lookup_ways(s, o, &tc);
        fflush(stdout);
    }
    if (rf_cluster_num_workers(c) == 1)
        check_read_only_run(s, &m, step);
    CHECK_OK(rf_session_finish(s, 60000));
    if (self->is_chief) {
        printf("final global_step %" PRId64 "\n",
               *(const int64_t *)rf_variable_data(m.gs));
        if (o->sync_replicas) {
            rf_session_sync_stats st;
            CHECK_OK(rf_session_sync_stats_get(s, &st));
            printf("sync stale_on_ps %" PRIu64 "\n", st.stale_on_ps);
        } else {
            rf_session_sync_stats st;
            CHECK_ST(rf_session_sync_stats_get(s, &st), RF_ERR_INVALID_ARG);
        }
        CHECK_OK(rf_session_shutdown_cluster(s));
    } else {
        CHECK_ST(rf_session_shutdown_cluster(s), RF_ERR_INVALID_ARG);
    }
    rf_session_destroy(s);
    /* the variables outlive the session, with their pulled values */
    if (self->is_chief)
        write_variables(&m, o->out);
    destroy(&m);
    rf_replica_device_setter_destroy(setter);
    rf_server_stop(sv);
    rf_cluster_destroy(c);
    return 0;
}

/* ---- compare -------------------------------------------------------------
 */

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL, "cannot read %s", path);
    CHECK(fseek(f, 0, SEEK_END) == 0, "%s: seek", path);
    long n = ftell(f);
    CHECK(n >= 0 && fseek(f, 0, SEEK_SET) == 0, "%s: size", path);
    unsigned char *b = malloc(n ? (size_t)n : 1);
    CHECK(b != NULL, "out of memory");
    CHECK(fread(b, 1, (size_t)n, f) == (size_t)n, "%s: short read", path);
    fclose(f);
    *len = (size_t)n;
    return b;
}

/* Two --out files of this model (write_variables): every variable in
 * creation order; int64s must be equal, float32s within the tolerance.
 * Prints the largest difference and where it is. */
static int run_compare(const task_opts *o)
{
    CHECK(o->compare_a && o->compare_b && o->tolerance >= 0,
          "usage: compare A B --tolerance=T");
    model m = {0};
    build(o, NULL, &m);
    size_t la, lb;
    unsigned char *a = slurp(o->compare_a, &la), *b = slurp(o->compare_b, &lb);
    CHECK(la == lb, "%s has %zu bytes, %s %zu", o->compare_a, la, o->compare_b,
          lb);
    size_t off = 0;
    double worst = 0;
    char where[128] = "nowhere";
    for (size_t i = 0; i < rf_graph_num_variables(m.g); i++) {
        rf_node *v = rf_graph_variable(m.g, i);
        const char *name = rf_node_name(v);
        size_t nl = strlen(name) + 1, bytes = rf_variable_bytes(v);
        CHECK(off + nl + bytes <= la && !memcmp(a + off, name, nl) &&
                  !memcmp(b + off, name, nl),
              "variable %zu (%s) is not where this model puts it", i, name);
        off += nl;
        if (rf_node_dtype(v) != RF_F32) {
            CHECK(!memcmp(a + off, b + off, bytes), "%s differs", name);
        } else {
            for (size_t k = 0; k < bytes / 4; k++) {
                float x, y;
                memcpy(&x, a + off + 4 * k, 4);
                memcpy(&y, b + off + 4 * k, 4);
                double d = fabs((double)x - (double)y);
                CHECK(isfinite(x) && isfinite(y), "%s[%zu]: %g vs %g", name, k,
                      x, y);
                if (d > worst) {
                    worst = d;
                    snprintf(where, sizeof where, "%s[%zu]: %.9g vs %.9g", name,
                             k, x, y);
                }
            }
        }
        off += bytes;
    }
    CHECK(off == la, "%zu trailing bytes", la - off);
    printf("max abs diff %.3g at %s (tolerance %g)\n", worst, where,
           o->tolerance);
    CHECK(worst <= o->tolerance, "max abs diff %.3g at %s exceeds %g", worst,
          where, o->tolerance);
    free(a);
    free(b);
    destroy(&m);
    return 0;
}

/* ---- flags ---------------------------------------------------------------
 */

static const char *value_of(const char *arg, const char *flag)
{
    size_t n = strlen(flag);
    return !strncmp(arg, flag, n) && arg[n] == '=' ? arg + n + 1 : NULL;
}

int main(int argc, char **argv)
{
    CHECK(argc >= 2, "usage: rf_session_task local|ps|worker|compare OPTIONS");
    task_opts o = {.role = argv[1],
                   .steps = 20,
                   .optim = "adam",
                   .width = 16,
                   .threads = 1,
                   .seed = 7,
                   .emb_dim = 4,
                   .emb_parts = 2,
                   .staleness = -1,
                   .cluster = {.job_name = NULL}};
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v;
        if ((v = value_of(a, "--ps_hosts")))
            o.cluster.ps_hosts = v;
        else if ((v = value_of(a, "--worker_hosts")))
            o.cluster.worker_hosts = v;
        else if ((v = value_of(a, "--task_index")))
            o.cluster.task_index = v;
        else if ((v = value_of(a, "--steps")))
            o.steps = atoll(v);
        else if ((v = value_of(a, "--optim")))
            o.optim = v;
        else if ((v = value_of(a, "--apply")))
            o.apply =
                !strcmp(v, "worker") ? RF_PS_APPLY_WORKER : RF_PS_APPLY_PS;
        else if (!strcmp(a, "--use_locking"))
            o.use_locking = true;
        else if (!strcmp(a, "--extra_ps_variable"))
            o.extra_ps_variable = true;
        else if ((v = value_of(a, "--width")))
            o.width = atoi(v);
        else if ((v = value_of(a, "--threads")))
            o.threads = atoi(v);
        else if ((v = value_of(a, "--seed")))
            o.seed = strtoull(v, NULL, 10);
        else if ((v = value_of(a, "--out")))
            o.out = v;
        else if ((v = value_of(a, "--checkpoint_dir")))
            o.checkpoint_dir = v;
        else if ((v = value_of(a, "--save_every")))
            o.save_every = atoll(v);
        else if ((v = value_of(a, "--op_timeout_ms")))
            o.op_timeout_ms = atoi(v);
        else if (!strcmp(a, "--sync_replicas"))
            o.sync_replicas = true;
        else if ((v = value_of(a, "--replicas_to_aggregate")))
            o.replicas_to_aggregate = atoi(v);
        else if ((v = value_of(a, "--total_num_replicas")))
            o.total_num_replicas = atoi(v);
        else if ((v = value_of(a, "--sync_workers")))
            o.sync_workers = atoi(v);
        else if (!strcmp(a, "--push_stale"))
            o.push_stale = true;
        else if ((v = value_of(a, "--stop_at_step")))
            o.stop_at_step = atoll(v);
        else if ((v = value_of(a, "--staleness")))
            o.staleness = atoi(v);
        else if ((v = value_of(a, "--staleness_wait_ms")))
            o.staleness_wait_ms = atoi(v);
        else if ((v = value_of(a, "--sleep_ms")))
            o.sleep_ms = atoi(v);
        else if ((v = value_of(a, "--my_steps")))
            o.my_steps = atoll(v);
        else if ((v = value_of(a, "--recreate_at")))
            o.recreate_at = atoll(v);
        else if ((v = value_of(a, "--record")))
            o.record = v;
        else if ((v = value_of(a, "--vocab")))
            o.vocab = atoi(v);
        else if ((v = value_of(a, "--emb_dim")))
            o.emb_dim = atoi(v);
        else if ((v = value_of(a, "--emb_parts")))
            o.emb_parts = atoi(v);
        else if ((v = value_of(a, "--max_lookup_ids")))
            o.max_lookup_ids = atoll(v);
        else if ((v = value_of(a, "--embedding_lookup")))
            CHECK_OK(rf_lookup_way_parse(v, &o.lookup));
        else if (!strcmp(a, "--table_uninitialized"))
            o.table_uninitialized = true;
        else if ((v = value_of(a, "--bad_id_at")))
            o.bad_id_at = atoll(v);
        else if ((v = value_of(a, "--tolerance")))
            o.tolerance = strtod(v, NULL);
        else if (!strcmp(o.role, "compare") && !o.compare_a)
            o.compare_a = a;
        else if (!strcmp(o.role, "compare") && !o.compare_b)
            o.compare_b = a;
        else
            CHECK(0, "unknown argument %s", a);
    }
    rft_set_who(o.role);
    if (!strcmp(o.role, "local"))
        return run_local(&o);
    if (!strcmp(o.role, "compare"))
        return run_compare(&o);
    o.cluster.job_name = !strcmp(o.role, "ps") ? "ps" : "worker";
    if (!strcmp(o.role, "ps"))
        return run_ps(&o);
    if (!strcmp(o.role, "worker"))
        return run_worker(&o);
    CHECK(0, "unknown role %s", o.role);
    return 2;
}
