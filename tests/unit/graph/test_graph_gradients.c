/* tests/unit/graph/test_graph_gradients.c: every differentiable op's gradient
 * against central finite differences. The loop is driven by the op table:
 * for every op with a gradient builder (rf_op_is_differentiable) there must
 * be a case here, or the test fails, so a new op cannot escape it. Each case
 * builds the op on random seeded float variables (kept away from kinks:
 * ReLU inputs away from 0, MaxPool windows with distinct values), takes
 * loss = Sum(op * W) for a random W so every output element matters, and
 * compares rf_gradients with (L(x+eps) - L(x-eps)) / 2eps per element.
 * Sparse gradients (IndexedSlices of Gather, EmbeddingLookup) are compared
 * densified. */
#include "graph_test.h"

#define EPS  1e-2
#define ATOL 2e-3
#define RTOL 2e-2

static rf_executor *ex;

enum fill_kind { FILL_UNIFORM, FILL_AWAY_FROM_ZERO, FILL_DISTINCT };

static struct fill {
    rf_node *var;
    enum fill_kind kind;
} fills[16];
static int nfill;

static rf_node *rvar(rf_graph *g, rf_shape s, enum fill_kind kind)
{
    rf_node *v = rf_variable(g, RF_F32, s, rf_init_zeros(), NULL);
    if (v && nfill < 16) {
        fills[nfill].var = v;
        fills[nfill].kind = kind;
        nfill++;
    }
    return v;
}

static void apply_fills(void)
{
    for (int i = 0; i < nfill; i++) {
        float *d = rf_variable_data(fills[i].var);
        size_t n = rf_variable_bytes(fills[i].var) / sizeof(float);
        switch (fills[i].kind) {
        case FILL_UNIFORM:
            test_fill(d, n, -1, 1);
            break;
        case FILL_AWAY_FROM_ZERO:
            for (size_t j = 0; j < n; j++) {
                double m = 0.1 + 0.9 * test_uniform();
                d[j] = (float)(test_uniform() < 0.5 ? -m : m);
            }
            break;
        case FILL_DISTINCT: /* a shuffled ramp, 0.05 apart */
            for (size_t j = 0; j < n; j++)
                d[j] = (float)(0.05 * (double)j - 0.025 * (double)n);
            for (size_t j = n; j > 1; j--) {
                size_t k = (size_t)(test_uniform() * (double)j);
                float t = d[j - 1];
                d[j - 1] = d[k];
                d[k] = t;
            }
            break;
        }
    }
}

/* A case builds the op under test for variant v (returning NULL when there
 * are no more variants) and lists the variables to differentiate. */
typedef rf_node *(*case_fn)(rf_graph *g, int v, rf_node **xs, int *nx);

static rf_node *case_identity(rf_graph *g, int v, rf_node **xs, int *nx)
{
    if (v > 0)
        return NULL;
    xs[0] = rvar(g, RF_SHAPE(3, 2), FILL_UNIFORM);
    *nx = 1;
    return rf_identity(g, xs[0], NULL);
}

static rf_node *case_matmul(rf_graph *g, int v, rf_node **xs, int *nx)
{
    if (v > 3)
        return NULL;
    bool ta = v & 1, tb = v & 2;
    xs[0] = rvar(g, ta ? RF_SHAPE(4, 3) : RF_SHAPE(3, 4), FILL_UNIFORM);
    xs[1] = rvar(g, tb ? RF_SHAPE(5, 4) : RF_SHAPE(4, 5), FILL_UNIFORM);
    *nx = 2;
    return rf_matmul(g, xs[0], xs[1], ta, tb, NULL);
}

/* broadcasting variants shared by Add, Sub, Mul */
static rf_node *binary_case(rf_graph *g, int v, rf_node **xs, int *nx,
                            rf_op_type op)
{
    rf_shape sa, sb;
    switch (v) {
    case 0:
        sa = RF_SHAPE(2, 3);
        sb = RF_SHAPE(2, 3);
        break;
    case 1:
        sa = RF_SHAPE(2, 3);
        sb = RF_SHAPE(3);
        break;
    case 2:
        sa = RF_SHAPE(2, 1, 4);
        sb = RF_SHAPE(3, 1);
        break;
    case 3:
        sa = RF_SCALAR;
        sb = RF_SHAPE(2, 2);
        break;
    case 4: /* the same variable twice: partial gradients are summed */
        xs[0] = rvar(g, RF_SHAPE(2, 3), FILL_UNIFORM);
        *nx = 1;
        return op == RF_OP_ADD   ? rf_add(g, xs[0], xs[0], NULL)
               : op == RF_OP_SUB ? rf_sub(g, xs[0], xs[0], NULL)
                                 : rf_mul(g, xs[0], xs[0], NULL);
    default:
        return NULL;
    }
    xs[0] = rvar(g, sa, FILL_UNIFORM);
    xs[1] = rvar(g, sb, FILL_UNIFORM);
    *nx = 2;
    return op == RF_OP_ADD   ? rf_add(g, xs[0], xs[1], NULL)
           : op == RF_OP_SUB ? rf_sub(g, xs[0], xs[1], NULL)
                             : rf_mul(g, xs[0], xs[1], NULL);
}

static rf_node *case_add(rf_graph *g, int v, rf_node **xs, int *nx)
{
    return binary_case(g, v, xs, nx, RF_OP_ADD);
}

static rf_node *case_sub(rf_graph *g, int v, rf_node **xs, int *nx)
{
    return binary_case(g, v, xs, nx, RF_OP_SUB);
}

static rf_node *case_mul(rf_graph *g, int v, rf_node **xs, int *nx)
{
    return binary_case(g, v, xs, nx, RF_OP_MUL);
}

static rf_node *case_neg(rf_graph *g, int v, rf_node **xs, int *nx)
{
    if (v > 0)
        return NULL;
    xs[0] = rvar(g, RF_SHAPE(4), FILL_UNIFORM);
    *nx = 1;
    return rf_neg(g, xs[0], NULL);
}

static rf_node *case_add_n(rf_graph *g, int v, rf_node **xs, int *nx)
{
    if (v > 0)
        return NULL;
    xs[0] = rvar(g, RF_SHAPE(2, 3), FILL_UNIFORM);
    xs[1] = rvar(g, RF_SHAPE(2, 3), FILL_UNIFORM);
    *nx = 2;
    rf_node *in[3] = {xs[0], xs[1], xs[0]};
    return rf_add_n(g, in, 3, NULL);
}

static rf_node *case_bias_add(rf_graph *g, int v, rf_node **xs, int *nx)
{
    if (v > 1)
        return NULL;
    xs[0] = rvar(g, v ? RF_SHAPE(2, 3, 2, 4) : RF_SHAPE(3, 4), FILL_UNIFORM);
    xs[1] = rvar(g, RF_SHAPE(4), FILL_UNIFORM);
    *nx = 2;
    return rf_bias_add(g, xs[0], xs[1], NULL);
}

static rf_node *case_relu(rf_graph *g, int v, rf_node **xs, int *nx)
{
    if (v > 0)
        return NULL;
    xs[0] = rvar(g, RF_SHAPE(3, 5), FILL_AWAY_FROM_ZERO);
    *nx = 1;
    return rf_relu(g, xs[0], NULL);
}

static rf_node *case_sigmoid(rf_graph *g, int v, rf_node **xs, int *nx)
{
    if (v > 0)
        return NULL;
    xs[0] = rvar(g, RF_SHAPE(3, 5), FILL_UNIFORM);
    *nx = 1;
    return rf_sigmoid(g, xs[0], NULL);
}

static rf_node *case_tanh(rf_graph *g, int v, rf_node **xs, int *nx)
{
    if (v > 0)
        return NULL;
    xs[0] = rvar(g, RF_SHAPE(3, 5), FILL_UNIFORM);
    *nx = 1;
    return rf_tanh(g, xs[0], NULL);
}

static rf_node *case_softmax(rf_graph *g, int v, rf_node **xs, int *nx)
{
    if (v > 0)
        return NULL;
    xs[0] = rvar(g, RF_SHAPE(3, 5), FILL_UNIFORM);
    *nx = 1;
    return rf_softmax(g, xs[0], NULL);
}

static rf_node *case_xent(rf_graph *g, int v, rf_node **xs, int *nx)
{
    if (v > 1)
        return NULL;
    xs[0] = rvar(g, RF_SHAPE(4, 5), FILL_UNIFORM);
    *nx = 1;
    int32_t l32[4] = {0, 4, 2, 2};
    int64_t l64[4] = {3, 1, 0, 4};
    rf_node *labels = v ? rf_const(g, RF_I64, RF_SHAPE(4), l64, NULL)
                        : rf_const(g, RF_I32, RF_SHAPE(4), l32, NULL);
    return rf_sparse_softmax_cross_entropy_with_logits(g, labels, xs[0], NULL);
}

/* logits away from 0 (the kink of max(x, 0) and |x|), labels in [-1, 1]:
 * the loss is linear in them, so any value checks the labels' gradient */
static rf_node *case_sigmoid_xent(rf_graph *g, int v, rf_node **xs, int *nx)
{
    if (v > 0)
        return NULL;
    xs[0] = rvar(g, RF_SHAPE(3, 4), FILL_AWAY_FROM_ZERO);
    xs[1] = rvar(g, RF_SHAPE(3, 4), FILL_UNIFORM);
    *nx = 2;
    return rf_sigmoid_cross_entropy_with_logits(g, xs[1], xs[0], NULL);
}

static rf_node *reduce_case(rf_graph *g, int v, rf_node **xs, int *nx,
                            bool mean)
{
    static const int ax[][2] = {{0, 0}, {1, 0}, {-1, 0}, {0, 2}};
    static const int nax[] = {0, 1, 1, 2};
    if (v > 5)
        return NULL;
    xs[0] = rvar(g, RF_SHAPE(2, 3, 4), FILL_UNIFORM);
    *nx = 1;
    int k = v % 4;
    bool keep = v >= 4 ? true : (v & 1);
    return mean ? rf_reduce_mean(g, xs[0], ax[k], nax[k], keep, NULL)
                : rf_reduce_sum(g, xs[0], ax[k], nax[k], keep, NULL);
}

static rf_node *case_sum(rf_graph *g, int v, rf_node **xs, int *nx)
{
    return reduce_case(g, v, xs, nx, false);
}

static rf_node *case_mean(rf_graph *g, int v, rf_node **xs, int *nx)
{
    return reduce_case(g, v, xs, nx, true);
}

static rf_node *case_reshape(rf_graph *g, int v, rf_node **xs, int *nx)
{
    if (v > 0)
        return NULL;
    xs[0] = rvar(g, RF_SHAPE(2, 3, 2), FILL_UNIFORM);
    *nx = 1;
    return rf_reshape(g, xs[0], RF_SHAPE(3, -1), NULL);
}

static rf_node *case_concat(rf_graph *g, int v, rf_node **xs, int *nx)
{
    if (v > 1)
        return NULL;
    xs[0] = rvar(g, RF_SHAPE(2, 3), FILL_UNIFORM);
    xs[1] = rvar(g, v ? RF_SHAPE(2, 2) : RF_SHAPE(1, 3), FILL_UNIFORM);
    *nx = 2;
    return rf_concat(g, xs, 2, v ? 1 : 0, NULL);
}

static rf_node *case_conv2d(rf_graph *g, int v, rf_node **xs, int *nx)
{
    static const struct {
        int h, w, c, kh, kw, o, sh, sw;
        rf_padding p;
    } cs[] = {
        {5, 5, 2, 3, 3, 3, 1, 1, RF_PADDING_SAME},
        {5, 6, 2, 3, 2, 2, 2, 2, RF_PADDING_SAME},
        {6, 5, 1, 3, 3, 2, 2, 1, RF_PADDING_VALID},
    };
    if (v >= (int)(sizeof cs / sizeof cs[0]))
        return NULL;
    xs[0] = rvar(g, RF_SHAPE(2, cs[v].h, cs[v].w, cs[v].c), FILL_UNIFORM);
    xs[1] =
        rvar(g, RF_SHAPE(cs[v].kh, cs[v].kw, cs[v].c, cs[v].o), FILL_UNIFORM);
    *nx = 2;
    return rf_conv2d(g, xs[0], xs[1], cs[v].sh, cs[v].sw, cs[v].p, NULL);
}

static rf_node *case_max_pool(rf_graph *g, int v, rf_node **xs, int *nx)
{
    if (v > 2)
        return NULL;
    xs[0] = rvar(g, RF_SHAPE(2, 5, 5, 2), FILL_DISTINCT);
    *nx = 1;
    if (v == 0)
        return rf_max_pool(g, xs[0], 2, 2, 2, 2, RF_PADDING_SAME, NULL);
    if (v == 1)
        return rf_max_pool(g, xs[0], 3, 3, 2, 2, RF_PADDING_VALID, NULL);
    return rf_max_pool(g, xs[0], 3, 3, 1, 1, RF_PADDING_SAME,
                       NULL); /* overlap */
}

static rf_node *case_cast(rf_graph *g, int v, rf_node **xs, int *nx)
{
    if (v > 0)
        return NULL;
    xs[0] = rvar(g, RF_SHAPE(5), FILL_UNIFORM);
    *nx = 1;
    return rf_cast(g, xs[0], RF_F32, NULL);
}

/* ids with repeats; the gradient is an IndexedSlices, densified below */
static rf_node *case_gather(rf_graph *g, int v, rf_node **xs, int *nx)
{
    if (v > 1)
        return NULL;
    static const int32_t ids[5] = {2, 0, 2, 3, 2};
    xs[0] = rvar(g, RF_SHAPE(4, 3), FILL_UNIFORM);
    *nx = 1;
    rf_node *ix = v == 0
                      ? rf_const(g, RF_I32, RF_SHAPE(5), ids, NULL)
                      : rf_cast(g, rf_const(g, RF_I32, RF_SHAPE(5), ids, NULL),
                                RF_I64, NULL);
    return rf_gather(g, xs[0], ix, NULL);
}

static rf_node *case_embedding_lookup(rf_graph *g, int v, rf_node **xs, int *nx)
{
    if (v > 1)
        return NULL;
    static const int64_t ids[2][3] = {{6, 0, 3}, {3, 5, 3}};
    for (int p = 0; p < 3; p++)
        xs[p] = rvar(g, RF_SHAPE(p == 0 ? 3 : 2, 2), FILL_UNIFORM);
    *nx = 3;
    return rf_embedding_lookup(g, xs, 3,
                               rf_const(g, RF_I64, RF_SHAPE(2, 3), ids, NULL),
                               v ? "div" : "mod", NULL);
}

static const case_fn cases[RF_OP_COUNT] = {
    [RF_OP_IDENTITY] = case_identity,
    [RF_OP_MATMUL] = case_matmul,
    [RF_OP_ADD] = case_add,
    [RF_OP_SUB] = case_sub,
    [RF_OP_MUL] = case_mul,
    [RF_OP_NEG] = case_neg,
    [RF_OP_ADD_N] = case_add_n,
    [RF_OP_BIAS_ADD] = case_bias_add,
    [RF_OP_RELU] = case_relu,
    [RF_OP_SIGMOID] = case_sigmoid,
    [RF_OP_TANH] = case_tanh,
    [RF_OP_SOFTMAX] = case_softmax,
    [RF_OP_SPARSE_SOFTMAX_XENT] = case_xent,
    [RF_OP_SIGMOID_XENT] = case_sigmoid_xent,
    [RF_OP_SUM] = case_sum,
    [RF_OP_MEAN] = case_mean,
    [RF_OP_RESHAPE] = case_reshape,
    [RF_OP_CONCAT] = case_concat,
    [RF_OP_CONV2D] = case_conv2d,
    [RF_OP_MAX_POOL] = case_max_pool,
    [RF_OP_CAST] = case_cast,
    [RF_OP_GATHER] = case_gather,
    [RF_OP_EMBEDDING_LOOKUP] = case_embedding_lookup,
};

static double run_loss(rf_plan *p)
{
    rf_tensor t;
    if (rf_plan_run(p, NULL, &t) != RF_OK)
        return NAN;
    return *(float *)t.data;
}

/* Returns the number of variants run. */
static int run_op_cases(rf_op_type op, case_fn fn)
{
    int variants = 0;
    for (int v = 0;; v++) {
        rf_graph *g;
        CHECK_OK(rf_graph_create(&g));
        nfill = 0;
        rf_node *xs[4] = {NULL};
        int nx = 0;
        rf_node *y = fn(g, v, xs, &nx);
        if (!y) {
            CHECK(rf_graph_status(g) == RF_OK, "%s variant %d: %s",
                  rf_op_name(op), v, rf_graph_error(g));
            rf_graph_destroy(g);
            break;
        }
        variants++;
        CHECK(rf_node_op(y) == op, "%s case builds %s", rf_op_name(op),
              rf_node_op_name(y));
        rf_shape ys = rf_node_shape(y);
        int64_t ny = rf_shape_numel(&ys);
        float *w = malloc(sizeof(float) * (size_t)(ny > 0 ? ny : 1));
        test_fill(w, (size_t)ny, -1, 1);
        rf_node *W = rf_const(g, RF_F32, ys, w, "W");
        rf_node *loss =
            rf_reduce_sum(g, rf_mul(g, y, W, NULL), NULL, 0, false, "loss");
        rf_node *grads[4] = {NULL};
        CHECK_OK(rf_gradients(g, loss, xs, (size_t)nx, grads));
        for (int i = 0; i < nx; i++) /* sparse gradients, as a dense tensor */
            if (rf_node_is_indexed_slices(grads[i]))
                grads[i] = rf_indexed_slices_to_dense(g, grads[i], NULL);
        CHECK_OK(rf_graph_initialize_variables(g));
        apply_fills();
        rf_node *fetch[5] = {loss};
        for (int i = 0; i < nx; i++) {
            CHECK(grads[i] != NULL, "%s v%d: no gradient for input %d",
                  rf_op_name(op), v, i);
            fetch[1 + i] = grads[i];
        }
        rf_plan *pg = NULL, *pl = NULL;
        CHECK_OK(rf_plan_create(ex, g, fetch, 1 + (size_t)nx, NULL, 0, NULL, 0,
                                &pg));
        CHECK_OK(rf_plan_create(ex, g, &loss, 1, NULL, 0, NULL, 0, &pl));
        rf_tensor out[5];
        if (!pg || !pl || rf_plan_run(pg, NULL, out) != RF_OK) {
            CHECK(0, "%s v%d: run failed", rf_op_name(op), v);
        } else {
            for (int i = 0; i < nx; i++) {
                float *x = rf_variable_data(xs[i]);
                int64_t n = (int64_t)(rf_variable_bytes(xs[i]) / sizeof(float));
                float *analytic = malloc(sizeof(float) * (size_t)n);
                memcpy(analytic, out[1 + i].data, sizeof(float) * (size_t)n);
                CHECK(rf_shape_numel(&out[1 + i].shape) == n,
                      "%s v%d: gradient %d has %lld elements, want %lld",
                      rf_op_name(op), v, i,
                      (long long)rf_shape_numel(&out[1 + i].shape),
                      (long long)n);
                int bad = 0;
                for (int64_t j = 0; j < n; j++) {
                    float orig = x[j];
                    x[j] = (float)(orig + EPS);
                    double lp = run_loss(pl);
                    x[j] = (float)(orig - EPS);
                    double lm = run_loss(pl);
                    x[j] = orig;
                    double fd = (lp - lm) / (2 * EPS);
                    double a = analytic[j];
                    if (!(fabs(a - fd) <=
                          ATOL + RTOL * fmax(fabs(a), fabs(fd))))
                        if (bad++ < 3)
                            CHECK(0,
                                  "%s v%d: d/dx%d[%lld] analytic %.6g fd "
                                  "%.6g",
                                  rf_op_name(op), v, i, (long long)j, a, fd);
                }
                free(analytic);
            }
        }
        rf_plan_destroy(pg);
        rf_plan_destroy(pl);
        free(w);
        rf_graph_destroy(g);
    }
    return variants;
}

int main(void)
{
    rf_executor_options o = {.threads = 2};
    CHECK_OK(rf_executor_create(&o, &ex));
    test_seed(7);
    int tested = 0;
    for (int op = 0; op < RF_OP_COUNT; op++) {
        if (!rf_op_is_differentiable((rf_op_type)op)) {
            CHECK(cases[op] == NULL, "%s has a case but no gradient",
                  rf_op_name((rf_op_type)op));
            continue;
        }
        if (!cases[op]) {
            CHECK(0, "differentiable op %s has no finite-difference case",
                  rf_op_name((rf_op_type)op));
            continue;
        }
        int v = run_op_cases((rf_op_type)op, cases[op]);
        CHECK(v > 0, "%s: no variant ran", rf_op_name((rf_op_type)op));
        printf("%-36s %d variant(s)\n", rf_op_name((rf_op_type)op), v);
        tested++;
    }
    rf_executor_destroy(ex);
    printf("graph gradients: %d differentiable ops checked\n", tested);
    return 0;
}
