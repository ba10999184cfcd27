/* tests/unit/graph/test_graph_fusion.c: the executor's fusion of
 * MatMul/Conv2D + BiasAdd (+ Relu) and of ReluGrad + BiasAddGrad
 * (graph/fusion.c, graph/kernels_fused.c): which nodes fuse and which must
 * not (a fetched or shared intermediate, an after-hook), training an MLP
 * and a CNN with Adam bitwise equal with fusion on and off at 1 and 2
 * threads, the fused path's gradients against central finite
 * differences, RF_FUSION's validation, and no allocation in steady-state
 * training steps of either model: neither through the graph's counted
 * allocator nor any malloc/calloc/realloc/aligned_alloc/posix_memalign
 * call from rdmaflow's code (wrapped at link time with --wrap, see
 * CMakeLists.txt, so it also works under ASan and TSan). */
#include <stdatomic.h>
#include <stdlib.h>

#include "graph/graph_internal.h"
#include "graph_test.h"

/* ---- every allocation of rdmaflow's code (ld --wrap) --------------------- */

static atomic_ullong n_calls;

void *__real_malloc(size_t n);
void *__real_calloc(size_t c, size_t n);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t a, size_t n);
int __real_posix_memalign(void **p, size_t a, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t c, size_t n);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t a, size_t n);
int __wrap_posix_memalign(void **p, size_t a, size_t n);

void *__wrap_malloc(size_t n)
{
    atomic_fetch_add(&n_calls, 1);
    return __real_malloc(n);
}
void *__wrap_calloc(size_t c, size_t n)
{
    atomic_fetch_add(&n_calls, 1);
    return __real_calloc(c, n);
}
void *__wrap_realloc(void *p, size_t n)
{
    atomic_fetch_add(&n_calls, 1);
    return __real_realloc(p, n);
}
void *__wrap_aligned_alloc(size_t a, size_t n)
{
    atomic_fetch_add(&n_calls, 1);
    return __real_aligned_alloc(a, n);
}
int __wrap_posix_memalign(void **p, size_t a, size_t n)
{
    atomic_fetch_add(&n_calls, 1);
    return __real_posix_memalign(p, a, n);
}

/* ---- models ---------------------------------------------------------------
 */

enum model { MLP, CNN };

typedef struct net {
    rf_graph *g;
    rf_node *x, *y, *loss, *train;
    int batch;
    size_t x_numel;
    int expect_fused; /* nodes that run fused in the training plan */
} net;

/* The trainer's shapes of layers, smaller. MLP: 512 -> 402 relu (402: a
 * vector tail; its MatMul is cut along N) -> 37 relu -> 10. CNN: 12x12x1
 * -> conv 5x5x16 relu -> pool -> conv 5x5x6 relu -> pool -> dense 24 relu
 * -> 10. */
static void net_build(net *m, enum model kind)
{
    CHECK_OK(rf_graph_create(&m->g));
    rf_graph *g = m->g;
    rf_graph_set_seed(g, 42);
    rf_node *h;
    if (kind == MLP) {
        m->batch = 24;
        m->x_numel = (size_t)m->batch * 512;
        m->x = rf_placeholder(g, RF_F32, RF_SHAPE(-1, 512), "x");
        h = rf_dense(g, m->x, 402, RF_ACT_RELU, NULL);
        h = rf_dense(g, h, 37, RF_ACT_RELU, NULL);
        /* 3 + 3 + 2 forward, 2 ReluGrad/BiasAddGrad pairs */
        m->expect_fused = 12;
    } else {
        m->batch = 8;
        m->x_numel = (size_t)m->batch * 12 * 12;
        m->x = rf_placeholder(g, RF_F32, RF_SHAPE(-1, 12, 12, 1), "x");
        h = rf_conv2d_layer(g, m->x, 16, 5, 5, 1, RF_PADDING_SAME, RF_ACT_RELU,
                            NULL);
        h = rf_max_pool(g, h, 2, 2, 2, 2, RF_PADDING_VALID, NULL);
        h = rf_conv2d_layer(g, h, 6, 5, 5, 1, RF_PADDING_SAME, RF_ACT_RELU,
                            NULL);
        h = rf_max_pool(g, h, 2, 2, 2, 2, RF_PADDING_VALID, NULL);
        h = rf_dense(g, rf_flatten(g, h, NULL), 24, RF_ACT_RELU, NULL);
        m->expect_fused = 3 * 3 + 2 + 3 * 2;
    }
    rf_node *logits = rf_dense(g, h, 10, RF_ACT_NONE, NULL);
    m->y = rf_placeholder(g, RF_I32, RF_SHAPE(-1), "y");
    m->loss = rf_reduce_mean(
        g, rf_sparse_softmax_cross_entropy_with_logits(g, m->y, logits, NULL),
        NULL, 0, false, "loss");
    rf_optim_config cfg;
    rf_optim_defaults(RF_OPTIM_ADAM, &cfg);
    cfg.learning_rate = 0.01f;
    CHECK_OK(rf_minimize(g, &cfg, m->loss, rf_global_step(g), &m->train));
    CHECK(rf_graph_status(g) == RF_OK, "model: %s", rf_graph_error(g));
    CHECK_OK(rf_graph_initialize_variables(g));
}

static void set_fusion(bool on)
{
    CHECK(setenv("RF_FUSION", on ? "1" : "0", 1) == 0, "setenv");
}

/* Every variable's bytes (weights, Adam's slots and powers, global_step)
 * appended to buf; returns the length. */
static size_t snapshot(rf_graph *g, unsigned char *buf, size_t cap)
{
    size_t len = 0;
    for (size_t i = 0; i < rf_graph_num_nodes(g); i++) {
        rf_node *n = rf_graph_node(g, i);
        if (rf_node_op(n) != RF_OP_VARIABLE)
            continue;
        size_t b = rf_variable_bytes(n);
        CHECK(len + b <= cap, "snapshot buffer too small");
        memcpy(buf + len, rf_variable_data(n), b);
        len += b;
    }
    return len;
}

enum { STEPS = 6, SNAP_CAP = 8 << 20 };

typedef struct result {
    uint32_t loss[STEPS];
    size_t len;
    unsigned char *vars;
} result;

/* Trains STEPS steps on fixed random data with fusion on or off. */
static void train(enum model kind, bool fusion, int threads, result *r)
{
    net m;
    net_build(&m, kind);
    float *x = malloc(m.x_numel * sizeof *x);
    int32_t *y = malloc((size_t)m.batch * sizeof *y);
    CHECK(x && y, "no memory");
    test_seed(7);
    test_fill(x, m.x_numel, 0, 1);
    for (int i = 0; i < m.batch; i++)
        y[i] = (int32_t)(test_uniform() * 10);
    set_fusion(fusion);
    rf_executor *ex;
    rf_executor_options o = {.threads = threads};
    CHECK_OK(rf_executor_create(&o, &ex));
    rf_plan *p;
    rf_node *feeds[2] = {m.x, m.y};
    CHECK_OK(rf_plan_create(ex, m.g, &m.loss, 1, feeds, 2, &m.train, 1, &p));
    rf_tensor fv[2] = {rf_tensor_make(RF_F32,
                                      kind == MLP
                                          ? RF_SHAPE(m.batch, 512)
                                          : RF_SHAPE(m.batch, 12, 12, 1),
                                      x),
                       rf_tensor_make(RF_I32, RF_SHAPE(m.batch), y)};
    rf_tensor out;
    for (int s = 0; s < STEPS; s++) {
        CHECK_OK(rf_plan_run(p, fv, &out));
        memcpy(&r->loss[s], out.data, sizeof r->loss[s]);
    }
    size_t fused = plan_fused_nodes(p);
    CHECK(fused == (fusion ? (size_t)m.expect_fused : 0),
          "%s, fusion %d: %zu nodes fused, expected %d",
          kind == MLP ? "mlp" : "cnn", fusion, fused,
          fusion ? m.expect_fused : 0);
    r->vars = malloc(SNAP_CAP);
    CHECK(r->vars, "no memory");
    r->len = snapshot(m.g, r->vars, SNAP_CAP);
    rf_plan_destroy(p);
    rf_executor_destroy(ex);
    rf_graph_destroy(m.g);
    free(x);
    free(y);
}

static void test_bitwise_equal(enum model kind)
{
    result base;
    train(kind, false, 1, &base);
    for (int fusion = 0; fusion < 2; fusion++)
        for (int threads = 1; threads <= 2; threads++) {
            if (!fusion && threads == 1)
                continue;
            result r;
            train(kind, fusion, threads, &r);
            for (int s = 0; s < STEPS; s++)
                CHECK(r.loss[s] == base.loss[s],
                      "%s fusion %d threads %d step %d: loss bits %08x, "
                      "unfused 1 thread %08x",
                      kind == MLP ? "mlp" : "cnn", fusion, threads, s,
                      r.loss[s], base.loss[s]);
            CHECK(r.len == base.len && memcmp(r.vars, base.vars, r.len) == 0,
                  "%s fusion %d threads %d: variables differ from the "
                  "unfused 1-thread run",
                  kind == MLP ? "mlp" : "cnn", fusion, threads);
            free(r.vars);
        }
    CHECK(base.loss[STEPS - 1] != base.loss[0], "training did not move");
    free(base.vars);
}

/* ---- steady-state steps allocate nothing ------------------------------- */

static void test_no_allocation(enum model kind)
{
    net m;
    net_build(&m, kind);
    float *x = calloc(m.x_numel, sizeof *x);
    int32_t *y = calloc((size_t)m.batch, sizeof *y);
    CHECK(x && y, "no memory");
    test_seed(3);
    test_fill(x, m.x_numel, 0, 1);
    set_fusion(true);
    rf_executor *ex;
    rf_executor_options o = {.threads = 2};
    CHECK_OK(rf_executor_create(&o, &ex));
    rf_plan *p;
    rf_node *feeds[2] = {m.x, m.y};
    CHECK_OK(rf_plan_create(ex, m.g, &m.loss, 1, feeds, 2, &m.train, 1, &p));
    rf_tensor fv[2] = {rf_tensor_make(RF_F32,
                                      kind == MLP
                                          ? RF_SHAPE(m.batch, 512)
                                          : RF_SHAPE(m.batch, 12, 12, 1),
                                      x),
                       rf_tensor_make(RF_I32, RF_SHAPE(m.batch), y)};
    rf_tensor out;
    unsigned long long c0 = atomic_load(&n_calls);
    CHECK_OK(rf_plan_run(p, fv, &out)); /* lays out the arena */
    CHECK(atomic_load(&n_calls) > c0, "the allocation counter sees nothing");
    rf_graph_alloc_stats before = rf_graph_alloc_stats_get();
    c0 = atomic_load(&n_calls);
    for (int s = 0; s < 10; s++)
        CHECK_OK(rf_plan_run(p, fv, &out));
    unsigned long long c1 = atomic_load(&n_calls);
    rf_graph_alloc_stats after = rf_graph_alloc_stats_get();
    CHECK(plan_fused_nodes(p) == (size_t)m.expect_fused, "not fused");
    CHECK(c1 == c0, "%s: 10 steady-state steps made %llu allocation calls",
          kind == MLP ? "mlp" : "cnn", c1 - c0);
    CHECK(after.allocations == before.allocations &&
              after.live_bytes == before.live_bytes,
          "%s: the graph allocator counted %llu allocations",
          kind == MLP ? "mlp" : "cnn",
          (unsigned long long)(after.allocations - before.allocations));
    rf_plan_destroy(p);
    rf_executor_destroy(ex);
    rf_graph_destroy(m.g);
    free(x);
    free(y);
}

/* ---- which nodes fuse ---------------------------------------------------- */

static int before_calls;
static rf_status count_before(void *ctx, rf_node *node, const rf_tensor *v,
                              int tid)
{
    (void)ctx;
    (void)node;
    (void)v;
    (void)tid;
    before_calls++;
    return RF_OK;
}

/* y = Relu(BiasAdd(MatMul(x, w), b)) over variables; returns y. */
static rf_node *small_layer(rf_graph *g, rf_node **mm, rf_node **ba)
{
    rf_node *x = rf_variable(g, RF_F32, RF_SHAPE(6, 5), rf_init_zeros(), "x");
    rf_node *w = rf_variable(g, RF_F32, RF_SHAPE(5, 7), rf_init_zeros(), "w");
    rf_node *b = rf_variable(g, RF_F32, RF_SHAPE(7), rf_init_zeros(), "b");
    *mm = rf_matmul(g, x, w, false, false, NULL);
    *ba = rf_bias_add(g, *mm, b, NULL);
    rf_node *y = rf_relu(g, *ba, NULL);
    CHECK(rf_graph_status(g) == RF_OK, "%s", rf_graph_error(g));
    CHECK_OK(rf_graph_initialize_variables(g));
    test_seed(11);
    float *d[3] = {rf_variable_data(x), rf_variable_data(w),
                   rf_variable_data(b)};
    test_fill(d[0], 30, -1, 1);
    test_fill(d[1], 35, -1, 1);
    test_fill(d[2], 7, -1, 1);
    return y;
}

/* Runs fetches once with fusion as given; copies fetch i to out[i]
 * (at most 42 floats each); returns the number of fused nodes. */
static size_t run_small(rf_graph *g, bool fusion, rf_node *const *fetches,
                        size_t n, rf_node *hooked, unsigned when,
                        float out[][42])
{
    set_fusion(fusion);
    rf_executor *ex;
    rf_executor_options o = {.threads = 2};
    CHECK_OK(rf_executor_create(&o, &ex));
    rf_plan *p;
    CHECK_OK(rf_plan_create(ex, g, fetches, n, NULL, 0, NULL, 0, &p));
    if (hooked) {
        rf_plan_set_hooks(p, count_before, count_before, NULL);
        CHECK_OK(rf_plan_hook_node(p, hooked, when));
    }
    rf_tensor t[3];
    CHECK_OK(rf_plan_run(p, NULL, t));
    for (size_t i = 0; i < n; i++)
        memcpy(out[i], t[i].data, rf_tensor_bytes(&t[i]));
    size_t fused = plan_fused_nodes(p);
    rf_plan_destroy(p);
    rf_executor_destroy(ex);
    return fused;
}

static void test_what_fuses(void)
{
    rf_graph *g;
    CHECK_OK(rf_graph_create(&g));
    rf_node *mm, *ba;
    rf_node *y = small_layer(g, &mm, &ba);
    rf_node *other = rf_reduce_sum(g, mm, NULL, 0, false, NULL);
    CHECK(rf_graph_status(g) == RF_OK, "%s", rf_graph_error(g));
    static float on[3][42], off[3][42];
    struct {
        rf_node *fetch[3];
        size_t n;
        rf_node *hooked;
        unsigned when;
        size_t fused;
        const char *what;
    } cases[] = {
        {{y}, 1, NULL, 0, 3, "MatMul, BiasAdd, Relu"},
        {{y, mm}, 2, NULL, 0, 0, "the product fetched"},
        {{y, ba}, 2, NULL, 0, 2, "the BiasAdd fetched: Relu alone"},
        {{ba}, 1, NULL, 0, 2, "MatMul, BiasAdd"},
        {{y, other}, 2, NULL, 0, 0, "the product has two consumers"},
        {{y}, 1, ba, RF_HOOK_AFTER, 0, "an after-hook on BiasAdd"},
        {{y}, 1, mm, RF_HOOK_AFTER, 0, "an after-hook on MatMul"},
        {{y}, 1, ba, RF_HOOK_BEFORE, 3, "a before-hook on BiasAdd"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        memset(on, 0, sizeof on);
        memset(off, 0, sizeof off);
        before_calls = 0;
        size_t f = run_small(g, true, cases[c].fetch, cases[c].n,
                             cases[c].hooked, cases[c].when, on);
        CHECK(f == cases[c].fused, "%s: %zu nodes fused, expected %zu",
              cases[c].what, f, cases[c].fused);
        CHECK(!cases[c].hooked || before_calls == 1,
              "%s: the hook ran %d times", cases[c].what, before_calls);
        CHECK(run_small(g, false, cases[c].fetch, cases[c].n, NULL, 0, off) ==
                  0,
              "RF_FUSION=0 fused");
        for (size_t i = 0; i < cases[c].n; i++)
            CHECK(memcmp(on[i], off[i], 42 * sizeof(float)) == 0,
                  "%s: fetch %zu differs with fusion", cases[c].what, i);
    }
    /* the fused values against the definition */
    run_small(g, true, &y, 1, NULL, 0, on);
    const float *x = rf_variable_data(rf_graph_find(g, "x")),
                *w = rf_variable_data(rf_graph_find(g, "w")),
                *b = rf_variable_data(rf_graph_find(g, "b"));
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 7; j++) {
            double s = b[j];
            for (int k = 0; k < 5; k++)
                s += (double)x[i * 5 + k] * w[k * 7 + j];
            CHECK_NEAR(on[0][i * 7 + j], s > 0 ? s : 0, 1e-5, 1e-6, "y[%d,%d]",
                       i, j);
        }
    rf_graph_destroy(g);
}

static void test_env(void)
{
    rf_executor *ex;
    rf_executor_options o = {.threads = 1};
    CHECK(setenv("RF_FUSION", "yes", 1) == 0, "setenv");
    CHECK_ST(rf_executor_create(&o, &ex), RF_ERR_INVALID_ARG);
    CHECK_MSG("RF_FUSION");
    CHECK(setenv("RF_FUSION", "2", 1) == 0, "setenv");
    CHECK_ST(rf_executor_create(&o, &ex), RF_ERR_INVALID_ARG);
    CHECK(unsetenv("RF_FUSION") == 0, "unsetenv");
    CHECK_OK(rf_executor_create(&o, &ex));
    rf_executor_destroy(ex);
}

/* ---- gradients of the fused path against finite differences ----------- */

#define EPS 1e-2

/* loss = Sum(Relu(BiasAdd(op(x, w), b)) * R); pre-activations are kept
 * away from Relu's kink (|x w| <= 0.2 < |b|), so central differences of
 * size EPS see no kink. */
static void check_fd(bool conv)
{
    set_fusion(true);
    rf_graph *g;
    CHECK_OK(rf_graph_create(&g));
    rf_shape xs = conv ? RF_SHAPE(2, 5, 5, 2) : RF_SHAPE(6, 5);
    rf_shape ws = conv ? RF_SHAPE(3, 3, 2, 6) : RF_SHAPE(5, 7);
    int64_t c = conv ? 6 : 7;
    rf_node *x = rf_variable(g, RF_F32, xs, rf_init_zeros(), "x");
    rf_node *w = rf_variable(g, RF_F32, ws, rf_init_zeros(), "w");
    rf_node *b = rf_variable(g, RF_F32, RF_SHAPE(c), rf_init_zeros(), "b");
    rf_node *pre = conv ? rf_conv2d(g, x, w, 1, 1, RF_PADDING_SAME, NULL)
                        : rf_matmul(g, x, w, false, false, NULL);
    rf_node *y = rf_relu(g, rf_bias_add(g, pre, b, NULL), NULL);
    int64_t ny = conv ? 2 * 5 * 5 * c : 6 * c;
    rf_node *R =
        rf_variable(g, RF_F32, conv ? RF_SHAPE(2, 5, 5, c) : RF_SHAPE(6, c),
                    rf_init_zeros(), "R");
    rf_node *loss =
        rf_reduce_sum(g, rf_mul(g, y, R, NULL), NULL, 0, false, NULL);
    rf_node *vars[3] = {x, w, b}, *grads[3];
    CHECK_OK(rf_gradients(g, loss, vars, 3, grads));
    CHECK(rf_graph_status(g) == RF_OK, "%s", rf_graph_error(g));
    CHECK_OK(rf_graph_initialize_variables(g));
    test_seed(conv ? 21 : 22);
    float *d[3];
    size_t n[3];
    for (int i = 0; i < 3; i++) {
        d[i] = rf_variable_data(vars[i]);
        n[i] = rf_variable_bytes(vars[i]) / sizeof(float);
    }
    double bound = conv ? 0.2 / 18 : 0.2 / 5; /* |x w| <= 0.2 */
    test_fill(d[0], n[0], -1, 1);
    test_fill(d[1], n[1], -bound, bound);
    for (size_t j = 0; j < n[2]; j++) {
        double m = 0.3 + 0.7 * test_uniform();
        d[2][j] = (float)(test_uniform() < 0.5 ? -m : m);
    }
    test_fill(rf_variable_data(R), (size_t)ny, -1, 1);

    rf_executor *ex;
    rf_executor_options o = {.threads = 2};
    CHECK_OK(rf_executor_create(&o, &ex));
    rf_plan *gp, *lp;
    CHECK_OK(rf_plan_create(ex, g, grads, 3, NULL, 0, NULL, 0, &gp));
    CHECK_OK(rf_plan_create(ex, g, &loss, 1, NULL, 0, NULL, 0, &lp));
    rf_tensor gt[3], lt;
    CHECK_OK(rf_plan_run(gp, NULL, gt));
    CHECK_OK(rf_plan_run(lp, NULL, &lt));
    CHECK(plan_fused_nodes(gp) == 5,
          "gradient plan: %zu nodes fused, expected 3 + 2",
          plan_fused_nodes(gp));
    CHECK(plan_fused_nodes(lp) == 3, "loss plan: %zu nodes fused",
          plan_fused_nodes(lp));
    for (int i = 0; i < 3; i++) {
        const float *an = gt[i].data;
        for (size_t j = 0; j < n[i]; j++) {
            float keep = d[i][j];
            d[i][j] = (float)(keep + EPS);
            CHECK_OK(rf_plan_run(lp, NULL, &lt));
            double lplus = *(float *)lt.data;
            d[i][j] = (float)(keep - EPS);
            CHECK_OK(rf_plan_run(lp, NULL, &lt));
            double lminus = *(float *)lt.data;
            d[i][j] = keep;
            double h = (double)(float)(keep + EPS) - (float)(keep - EPS);
            CHECK_NEAR(an[j], (lplus - lminus) / h, 2e-2, 2e-3,
                       "%s: d loss / d %s[%zu]", conv ? "conv" : "matmul",
                       i == 0   ? "x"
                       : i == 1 ? "w"
                                : "b",
                       j);
        }
    }
    /* and the fused gradients are the unfused ones, bit for bit */
    static float fused[3][512];
    for (int i = 0; i < 3; i++)
        memcpy(fused[i], gt[i].data, n[i] * sizeof(float));
    rf_plan_destroy(gp);
    rf_plan_destroy(lp);
    rf_executor_destroy(ex);
    set_fusion(false);
    CHECK_OK(rf_executor_create(&o, &ex));
    CHECK_OK(rf_plan_create(ex, g, grads, 3, NULL, 0, NULL, 0, &gp));
    CHECK_OK(rf_plan_run(gp, NULL, gt));
    CHECK(plan_fused_nodes(gp) == 0, "RF_FUSION=0 fused");
    for (int i = 0; i < 3; i++)
        CHECK(memcmp(fused[i], gt[i].data, n[i] * sizeof(float)) == 0,
              "%s: gradient %d differs with fusion", conv ? "conv" : "matmul",
              i);
    rf_plan_destroy(gp);
    rf_executor_destroy(ex);
    rf_graph_destroy(g);
}

int main(void)
{
    test_env();
    test_what_fuses();
    check_fd(false);
    check_fd(true);
    test_bitwise_equal(MLP);
    test_bitwise_equal(CNN);
    test_no_allocation(MLP);
    test_no_allocation(CNN);
    unsetenv("RF_FUSION");
    printf("graph fusion: all checks passed\n");
    return 0;
}
