/* tests/unit/optim/test_sparse.c: rf_optim_dedup() and
 * rf_optim_apply_sparse() against (1) double-precision step-by-step
 * references written here from TensorFlow 1.x's sparse formulas (the
 * SparseApply* kernels of training_ops.cc, Adam's _apply_sparse_shared, SGD's
 * scatter_sub), (2) TF's own test figures where its tests give literal
 * numbers, and (3) the behaviour TF's kernels have: duplicates applied twice,
 * -1 skipped, out-of-range refused with nothing changed, bitwise equality
 * with the dense kernel where TF's formulas agree, Adam moving every row. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/data/rng.h"
#include "rdmaflow/optim.h"
#include "tests/common/check.h"
#include "tests/unit/optim/optim_ref.h"

#define MAXROWS 16
#define MAXW    8
#define MAXE    (MAXROWS * MAXW)
#define MAXN    32

/* TF's assertAllCloseAccordingToType for float32. */
#define TF_RTOL 1e-6
#define TF_ATOL 1e-6

static rf_rng rng;

/* A gradient value in [-1, 1] with some exact zeros. */
static float next_grad(void)
{
    if (rng_below(&rng, 9) == 0)
        return 0.0f;
    return (float)((int)rng_below(&rng, 2001) - 1000) / 1000.0f;
}

/* ---- A [rows, width] variable, its slots and scalars ------------------ */

typedef struct table {
    rf_optim_config cfg;
    rf_optim_layout layout;
    size_t rows, width;
    float var[MAXE];
    float slot[RF_OPTIM_MAX_SLOTS][MAXE];
    rf_optim_scalars sc;
} table;

static void table_init(table *t, const rf_optim_config *cfg, size_t rows,
                       size_t width, const float *var0)
{
    memset(t, 0, sizeof *t);
    t->cfg = *cfg;
    t->rows = rows;
    t->width = width;
    memcpy(t->var, var0, rows * width * sizeof(float));
    CHECK_OK(rf_optim_layout_get(cfg, &t->layout));
    for (unsigned s = 0; s < t->layout.num_slots; s++)
        CHECK_OK(rf_optim_slot_init(cfg, s, t->slot[s], rows * width));
    CHECK_OK(rf_optim_scalars_init(cfg, &t->sc));
}

static rf_status table_apply(table *t, const int64_t *idx, size_t n,
                             const float *grad)
{
    float *slots[RF_OPTIM_MAX_SLOTS] = {t->slot[0], t->slot[1], t->slot[2]};
    return rf_optim_apply_sparse(&t->cfg, t->var, slots, t->rows, t->width, idx,
                                 n, grad, &t->sc);
}

/* One training step: the sparse apply, then _finish. */
static void table_step(table *t, const int64_t *idx, size_t n,
                       const float *grad)
{
    CHECK_OK(table_apply(t, idx, n, grad));
    CHECK_OK(rf_optim_finish_step(&t->cfg, &t->sc));
}

static int slot_of(const table *t, const char *name)
{
    for (unsigned s = 0; s < t->layout.num_slots; s++)
        if (strcmp(t->layout.slots[s].name, name) == 0)
            return (int)s;
    return -1;
}

/* ---- Double-precision references, from TF's documented formulas ------- */

typedef struct ref {
    double var[MAXE], a[MAXE], b[MAXE], c[MAXE];
    int t;
} ref;

static void ref_init(ref *f, const rf_optim_config *cfg, size_t count,
                     const float *var0)
{
    memset(f, 0, sizeof *f);
    for (size_t k = 0; k < count; k++) {
        f->var[k] = var0[k];
        f->a[k] = ref_initial_a(cfg);
    }
}

/* One step: entries in order, each updating its row (duplicates twice). */
static void ref_step(ref *f, const rf_optim_config *cfg, size_t rows,
                     size_t width, const int64_t *idx, size_t n,
                     const float *grad)
{
    const double lr = cfg->learning_rate, mu = cfg->momentum;
    f->t++;
    if (cfg->kind == RF_OPTIM_ADAM) {
        /* adam.py _apply_sparse_shared: decay all, scatter_add, move all */
        const double b1 = cfg->beta1, b2 = cfg->beta2;
        for (size_t k = 0; k < rows * width; k++) {
            f->a[k] *= b1;
            f->b[k] *= b2;
        }
        for (size_t i = 0; i < n; i++) {
            if (idx[i] < 0)
                continue;
            for (size_t j = 0; j < width; j++) {
                const double g = grad[i * width + j];
                const size_t k = (size_t)idx[i] * width + j;
                f->a[k] += (1.0 - b1) * g;
                f->b[k] += (1.0 - b2) * g * g;
            }
        }
        const double lr_t =
            lr * sqrt(1.0 - pow(b2, f->t)) / (1.0 - pow(b1, f->t));
        for (size_t k = 0; k < rows * width; k++)
            f->var[k] -= lr_t * f->a[k] / (sqrt(f->b[k]) + cfg->epsilon);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (idx[i] < 0)
            continue;
        for (size_t j = 0; j < width; j++) {
            const double g = grad[i * width + j];
            const size_t k = (size_t)idx[i] * width + j;
            if (cfg->kind == RF_OPTIM_MOMENTUM && cfg->use_nesterov) {
                /* SparseApplyMomentum's use_nesterov form */
                f->a[k] = mu * f->a[k] + g;
                f->var[k] -= lr * g + lr * mu * f->a[k];
            } else {
                ref_step_element(cfg, &f->var[k], &f->a[k], &f->b[k], &f->c[k],
                                 g);
            }
        }
    }
}

static void compare(const table *t, const ref *f, double rtol, double atol,
                    const char *what)
{
    char desc[200];
    rf_optim_format(&t->cfg, desc, sizeof desc);
    const size_t count = t->rows * t->width;
    for (size_t k = 0; k < count; k++)
        CHECK_NEAR(t->var[k], f->var[k], rtol, atol,
                   "%s %s width %zu step %d var[%zu]", what, desc, t->width,
                   f->t, k);
    for (unsigned i = 0; i < t->layout.num_slots; i++) {
        const char *name = t->layout.slots[i].name;
        const double *want = ref_slot(&t->cfg, name, f->a, f->b, f->c);
        CHECK(want != NULL, "%s: no reference for slot %s", desc, name);
        for (size_t k = 0; want && k < count; k++)
            CHECK_NEAR(t->slot[i][k], want[k], rtol, atol,
                       "%s %s width %zu step %d %s[%zu]", what, desc, t->width,
                       f->t, name, k);
    }
}

static void random_var(float *var, size_t count)
{
    for (size_t k = 0; k < count; k++)
        var[k] = next_grad() * 3.0f;
}

/* n random indices in [-1, rows) (so with duplicates and -1) and grads. */
static void random_entries(int64_t *idx, float *grad, size_t n, size_t rows,
                           size_t width)
{
    for (size_t i = 0; i < n; i++) {
        idx[i] = (int64_t)rng_below(&rng, (uint32_t)rows + 1) - 1;
        for (size_t j = 0; j < width; j++)
            grad[i * width + j] = next_grad();
    }
}

/* ---- (1) every kind against its reference ------------------------------ */

static void test_against_reference(void)
{
    rf_optim_config cfgs[20];
    const size_t nc = ref_all_configs(cfgs);
    const size_t widths[] = {1, 3, 8};
    const size_t rows = 11, n = 9;
    for (size_t c = 0; c < nc; c++) {
        for (size_t w = 0; w < 3; w++) {
            const size_t width = widths[w];
            float var0[MAXE], grad[MAXN * MAXW];
            int64_t idx[MAXN];
            random_var(var0, rows * width);
            table t;
            ref f;
            table_init(&t, &cfgs[c], rows, width, var0);
            ref_init(&f, &cfgs[c], rows * width, var0);
            for (int step = 0; step < 10; step++) {
                random_entries(idx, grad, n, rows, width);
                table_step(&t, idx, n, grad);
                ref_step(&f, &cfgs[c], rows, width, idx, n, grad);
                compare(&t, &f, 2e-5, 2e-6, "reference");
            }
        }
    }
}

/* ---- (2) behaviour ------------------------------------------------------ */

/* A repeated index is applied twice: one call with {r, r} is bitwise two
 * calls with {r} (every kind but Adam, whose every call also decays all
 * rows; its duplicates are covered by the reference test). */
static void test_duplicates_twice(void)
{
    rf_optim_config cfgs[20];
    const size_t nc = ref_all_configs(cfgs);
    const size_t rows = 5, width = 3;
    for (size_t c = 0; c < nc; c++) {
        if (cfgs[c].kind == RF_OPTIM_ADAM)
            continue;
        float var0[MAXE], grad[2 * MAXW];
        random_var(var0, rows * width);
        for (size_t j = 0; j < 2 * width; j++)
            grad[j] = next_grad() + 1.5f; /* non-zero */
        table once, twice;
        table_init(&once, &cfgs[c], rows, width, var0);
        table_init(&twice, &cfgs[c], rows, width, var0);
        const int64_t dup[2] = {2, 2};
        CHECK_OK(table_apply(&once, dup, 2, grad));
        CHECK_OK(table_apply(&twice, dup, 1, grad));
        CHECK_OK(table_apply(&twice, dup, 1, grad + width));
        CHECK(memcmp(&once.var, &twice.var, sizeof once.var) == 0 &&
                  memcmp(&once.slot, &twice.slot, sizeof once.slot) == 0,
              "%s: {2, 2} in one call differs from two calls",
              rf_optim_kind_name(cfgs[c].kind));
        /* and the second update did happen: not the first alone */
        table first;
        table_init(&first, &cfgs[c], rows, width, var0);
        CHECK_OK(table_apply(&first, dup, 1, grad));
        CHECK(memcmp(&first.var, &once.var, sizeof once.var) != 0,
              "%s: the repeated index was updated once",
              rf_optim_kind_name(cfgs[c].kind));
    }
}

/* Index -1 is skipped: the result is bitwise that of the entries without
 * it, for every kind. */
static void test_minus_one_skipped(void)
{
    rf_optim_config cfgs[20];
    const size_t nc = ref_all_configs(cfgs);
    const size_t rows = 6, width = 2;
    for (size_t c = 0; c < nc; c++) {
        float var0[MAXE];
        random_var(var0, rows * width);
        const int64_t with[5] = {-1, 4, -1, 1, -1};
        const float gwith[10] = {9, 9, 0.5f, -0.25f, 7, 7, 0.125f, 1, 5, 5};
        const int64_t without[2] = {4, 1};
        const float gwithout[4] = {0.5f, -0.25f, 0.125f, 1};
        table a, b;
        table_init(&a, &cfgs[c], rows, width, var0);
        table_init(&b, &cfgs[c], rows, width, var0);
        CHECK_OK(table_apply(&a, with, 5, gwith));
        CHECK_OK(table_apply(&b, without, 2, gwithout));
        CHECK(memcmp(&a.var, &b.var, sizeof a.var) == 0 &&
                  memcmp(&a.slot, &b.slot, sizeof a.slot) == 0,
              "%s: the -1 entries changed something",
              rf_optim_kind_name(cfgs[c].kind));
        /* only -1: nothing moves (but Adam, which moves every row) */
        table d;
        table_init(&d, &cfgs[c], rows, width, var0);
        CHECK_OK(table_apply(&d, with, 1, gwith));
        if (cfgs[c].kind != RF_OPTIM_ADAM)
            CHECK(memcmp(d.var, var0, rows * width * sizeof(float)) == 0,
                  "%s: an all -1 apply changed var",
                  rf_optim_kind_name(cfgs[c].kind));
    }
}

/* An index outside [0, rows) (other than -1) is refused, naming the offset,
 * the index and rows, with nothing changed even by the valid entries before
 * it. */
static void test_out_of_range(void)
{
    rf_optim_config cfgs[20];
    const size_t nc = ref_all_configs(cfgs);
    const size_t rows = 4, width = 2;
    const int64_t bad[] = {4, 5, -2, INT64_MIN, INT64_MAX};
    for (size_t c = 0; c < nc; c++) {
        for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
            float var0[MAXE];
            random_var(var0, rows * width);
            table t;
            table_init(&t, &cfgs[c], rows, width, var0);
            table before = t;
            const int64_t idx[5] = {0, 3, -1, bad[b], 1};
            float grad[10];
            for (size_t j = 0; j < 10; j++)
                grad[j] = next_grad() + 2.0f;
            CHECK_ST(table_apply(&t, idx, 5, grad), RF_ERR_INVALID_ARG);
            char want[96];
            snprintf(want, sizeof want, "index %lld at offset 3",
                     (long long)bad[b]);
            CHECK_MSG(want);
            CHECK_MSG("[0, 4)");
            CHECK(memcmp(&t, &before, sizeof t) == 0,
                  "%s: a refused apply changed the table",
                  rf_optim_kind_name(cfgs[c].kind));
        }
    }
}

/* The arguments: width 0, NULL arrays, overlap, adam's scalars. */
static void test_arguments(void)
{
    table t;
    rf_optim_config cfg = ref_config(RF_OPTIM_ADAGRAD, 0.1f);
    float var0[8] = {0};
    table_init(&t, &cfg, 4, 2, var0);
    float *slots[RF_OPTIM_MAX_SLOTS] = {t.slot[0]};
    const int64_t idx[2] = {0, 1};
    const float grad[4] = {1, 2, 3, 4};
    CHECK_ST(
        rf_optim_apply_sparse(&cfg, t.var, slots, 4, 0, idx, 2, grad, NULL),
        RF_ERR_INVALID_ARG);
    CHECK_MSG("width 0");
    CHECK_ST(rf_optim_apply_sparse(&cfg, t.var, NULL, 4, 2, idx, 2, grad, NULL),
             RF_ERR_INVALID_ARG);
    CHECK_MSG("slots NULL");
    CHECK_ST(
        rf_optim_apply_sparse(&cfg, t.var, slots, 4, 2, NULL, 2, grad, NULL),
        RF_ERR_INVALID_ARG);
    CHECK_MSG("indices is NULL");
    CHECK_ST(
        rf_optim_apply_sparse(&cfg, t.var, slots, 4, 2, idx, 2, NULL, NULL),
        RF_ERR_INVALID_ARG);
    CHECK_MSG("grad is NULL");
    slots[0] = t.var + 4; /* accumulator overlaps var's second half */
    CHECK_ST(
        rf_optim_apply_sparse(&cfg, t.var, slots, 4, 2, idx, 2, grad, NULL),
        RF_ERR_INVALID_ARG);
    CHECK_MSG("var and accumulator overlap");
    slots[0] = t.slot[0];
    /* n = 0 with NULL indices and grad: nothing to do */
    CHECK_OK(
        rf_optim_apply_sparse(&cfg, t.var, slots, 4, 2, NULL, 0, NULL, NULL));
    cfg = ref_config(RF_OPTIM_ADAM, 0.1f);
    table_init(&t, &cfg, 4, 2, var0);
    float *aslots[RF_OPTIM_MAX_SLOTS] = {t.slot[0], t.slot[1]};
    CHECK_ST(
        rf_optim_apply_sparse(&cfg, t.var, aslots, 4, 2, idx, 2, grad, NULL),
        RF_ERR_INVALID_ARG);
    CHECK_MSG("beta powers");
    cfg.learning_rate = -1.0f;
    CHECK_ST(
        rf_optim_apply_sparse(&cfg, t.var, aslots, 4, 2, idx, 2, grad, &t.sc),
        RF_ERR_INVALID_ARG);
    CHECK_MSG("learning_rate");
}

/* Where TF's sparse and dense formulas agree (sgd, momentum without
 * Nesterov, adagrad and ftrl with width > 1), every row once in order is
 * bitwise the dense kernel on the whole variable. */
static void test_dense_equality(void)
{
    rf_optim_config cfgs[7];
    cfgs[0] = ref_config(RF_OPTIM_SGD, 0.1f);
    cfgs[1] = ref_config(RF_OPTIM_MOMENTUM, 0.05f);
    cfgs[1].momentum = 0.9f;
    cfgs[2] = ref_config(RF_OPTIM_ADAGRAD, 0.3f);
    cfgs[3] = ref_config(RF_OPTIM_ADAGRAD, 0.3f);
    cfgs[3].initial_accumulator_value = 0.5f;
    cfgs[4] = ref_config(RF_OPTIM_FTRL, 0.3f);
    cfgs[5] = ref_config(RF_OPTIM_FTRL, 0.3f);
    cfgs[5].l1_regularization_strength = 0.05f;
    cfgs[5].l2_regularization_strength = 0.5f;
    cfgs[6] = ref_config(RF_OPTIM_FTRL, 0.3f);
    cfgs[6].learning_rate_power = -0.7f;
    cfgs[6].l2_shrinkage_regularization_strength = 0.1f;
    const size_t rows = 7, width = 5, count = rows * width;
    int64_t idx[MAXN];
    for (size_t i = 0; i < rows; i++)
        idx[i] = (int64_t)i;
    for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++) {
        float var0[MAXE];
        random_var(var0, count);
        table sparse, dense;
        table_init(&sparse, &cfgs[c], rows, width, var0);
        table_init(&dense, &cfgs[c], rows, width, var0);
        float *dslots[RF_OPTIM_MAX_SLOTS] = {dense.slot[0], dense.slot[1],
                                             dense.slot[2]};
        for (int step = 0; step < 8; step++) {
            float grad[MAXE];
            for (size_t k = 0; k < count; k++)
                grad[k] = next_grad();
            table_step(&sparse, idx, rows, grad);
            CHECK_OK(rf_optim_apply(&cfgs[c], dense.var, dslots, grad, count,
                                    &dense.sc));
            CHECK(memcmp(sparse.var, dense.var, sizeof sparse.var) == 0 &&
                      memcmp(sparse.slot, dense.slot, sizeof sparse.slot) == 0,
                  "%s step %d: sparse over every row differs from dense",
                  rf_optim_kind_name(cfgs[c].kind), step);
        }
    }
}

/* Adam's sparse rule moves every row: after a step with a gradient for row
 * 1 only, a step with no entries decays m and v of row 1 (m * beta1 in
 * float) and moves its var; a row never indexed keeps m = v = 0 and var. */
static void test_adam_all_rows(void)
{
    rf_optim_config cfg = ref_config(RF_OPTIM_ADAM, 0.1f);
    const size_t rows = 3, width = 2;
    const float var0[6] = {1, 2, 3, 4, 5, 6};
    table t;
    table_init(&t, &cfg, rows, width, var0);
    const int64_t idx[1] = {1};
    const float grad[2] = {0.5f, -0.25f};
    table_step(&t, idx, 1, grad);
    const int m = slot_of(&t, "m"), v = slot_of(&t, "v");
    CHECK_TRUE(m >= 0 && v >= 0);
    /* step 1, by hand: m = g * (1 - beta1), v = g^2 * (1 - beta2),
     * lr_t = lr * sqrt(1 - beta2) / (1 - beta1), var -= lr_t * m / (sqrt(v)
     * + eps) = lr * sign(g) (almost exactly: eps is tiny) */
    for (size_t j = 0; j < width; j++) {
        CHECK_NEAR(t.slot[m][2 + j], (1.0 - cfg.beta1) * grad[j], 1e-6, 0,
                   "m[1][%zu]", j);
        CHECK_NEAR(t.slot[v][2 + j], (1.0 - cfg.beta2) * grad[j] * grad[j],
                   1e-6, 0, "v[1][%zu]", j);
        CHECK_NEAR(t.var[2 + j], var0[2 + j] - 0.1 * (grad[j] > 0 ? 1 : -1),
                   1e-5, 0, "var[1][%zu]", j);
    }
    const table after1 = t;
    CHECK_OK(table_apply(&t, NULL, 0, NULL));
    for (size_t j = 0; j < width; j++) {
        CHECK(t.slot[m][2 + j] == after1.slot[m][2 + j] * cfg.beta1,
              "m[1][%zu] = %.9g, not decayed by beta1", j,
              (double)t.slot[m][2 + j]);
        CHECK(t.slot[v][2 + j] == after1.slot[v][2 + j] * cfg.beta2,
              "v[1][%zu] = %.9g, not decayed by beta2", j,
              (double)t.slot[v][2 + j]);
        CHECK(t.var[2 + j] != after1.var[2 + j],
              "var[1][%zu] did not move without a gradient", j);
        /* the move is lr_t * m / (sqrt(v) + eps) with step-1 beta powers */
        double b1p = cfg.beta1 * (double)cfg.beta1,
               b2p = cfg.beta2 * (double)cfg.beta2;
        double lr_t = 0.1 * sqrt(1 - b2p) / (1 - b1p);
        double mm = t.slot[m][2 + j], vv = t.slot[v][2 + j];
        CHECK_NEAR(t.var[2 + j],
                   after1.var[2 + j] - lr_t * mm / (sqrt(vv) + cfg.epsilon),
                   1e-6, 1e-7, "var[1][%zu] step 2", j);
    }
    for (size_t k = 0; k < width; k++) {
        CHECK(t.var[k] == var0[k] && t.var[4 + k] == var0[4 + k] &&
                  t.slot[m][k] == 0 && t.slot[v][4 + k] == 0,
              "a row never indexed changed (%zu)", k);
    }
}

/* ---- (3) TensorFlow's own figures -------------------------------------- */

/* gradient_descent_test.py testSparseBasic: var0 [[1], [2]] with
 * IndexedSlices([[0.1]], [0]), var1 [[3], [4]] with ([[0.01]], [1]),
 * lr 3.0, one step. */
static void test_tf_sgd_sparse_basic(void)
{
    rf_optim_config cfg = ref_config(RF_OPTIM_SGD, 3.0f);
    table v0, v1;
    table_init(&v0, &cfg, 2, 1, (const float[]){1.0f, 2.0f});
    table_init(&v1, &cfg, 2, 1, (const float[]){3.0f, 4.0f});
    table_step(&v0, (const int64_t[]){0}, 1, (const float[]){0.1f});
    table_step(&v1, (const int64_t[]){1}, 1, (const float[]){0.01f});
    CHECK_NEAR(v0.var[0], 1.0 - 3.0 * 0.1, TF_RTOL, TF_ATOL, "var0[0]");
    CHECK(v0.var[1] == 2.0f, "var0[1] = %g", (double)v0.var[1]);
    CHECK(v1.var[0] == 3.0f, "var1[0] = %g", (double)v1.var[0]);
    CHECK_NEAR(v1.var[1], 4.0 - 3.0 * 0.01, TF_RTOL, TF_ATOL, "var1[1]");
}

/* adagrad_test.py testSparseBasic: the same variables and slices,
 * AdagradOptimizer(3.0, initial_accumulator_value=0.1), three steps:
 * var0 [[-1.6026098728179932], [2.0]], var1 [[3.0], [3.715679168701172]]
 * (width 1: TF's scalar path). */
static void test_tf_adagrad_sparse_basic(void)
{
    rf_optim_config cfg = ref_config(RF_OPTIM_ADAGRAD, 3.0f);
    table v0, v1;
    table_init(&v0, &cfg, 2, 1, (const float[]){1.0f, 2.0f});
    table_init(&v1, &cfg, 2, 1, (const float[]){3.0f, 4.0f});
    for (int s = 0; s < 3; s++) {
        table_step(&v0, (const int64_t[]){0}, 1, (const float[]){0.1f});
        table_step(&v1, (const int64_t[]){1}, 1, (const float[]){0.01f});
    }
    CHECK_NEAR(v0.var[0], -1.6026098728179932, 1e-5, TF_ATOL, "var0[0]");
    CHECK(v0.var[1] == 2.0f, "var0[1] = %g", (double)v0.var[1]);
    CHECK(v1.var[0] == 3.0f, "var1[0] = %g", (double)v1.var[0]);
    CHECK_NEAR(v1.var[1], 3.715679168701172, 1e-5, TF_ATOL, "var1[1]");
}

/* momentum_test.py testSparse: var0 zeros [4, 2] with
 * IndexedSlices([[.1, .1]], [1]), var1 ones [4, 2] with
 * ([[.01, .01], [.01, .01]], [2, 3]), lr 2.0, momentum 0.9, two steps;
 * TF's expected values, by hand:
 *   step 1: accum0[1] = .1, var0[1] = -.2; accum1[2,3] = .01,
 *           var1[2,3] = 1 - .02 = .98
 *   step 2: accum0[1] = .9 * .1 + .1, var0[1] = -.2 - 2 * (.9 * .1 + .1);
 *           var1[2,3] = .98 - 2 * (.9 * .01 + .01) */
static void test_tf_momentum_sparse(void)
{
    rf_optim_config cfg = ref_config(RF_OPTIM_MOMENTUM, 2.0f);
    cfg.momentum = 0.9f;
    table v0, v1;
    float zeros[8] = {0}, ones[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    table_init(&v0, &cfg, 4, 2, zeros);
    table_init(&v1, &cfg, 4, 2, ones);
    for (int s = 1; s <= 2; s++) {
        table_step(&v0, (const int64_t[]){1}, 1, (const float[]){.1f, .1f});
        table_step(&v1, (const int64_t[]){2, 3}, 2,
                   (const float[]){.01f, .01f, .01f, .01f});
        const double a0 = s == 1 ? .1 : .9 * .1 + .1;
        const double a1 = s == 1 ? .01 : .9 * .01 + .01;
        const double w0 = s == 1 ? -.2 : -.2 - 2 * (.9 * .1 + .1);
        const double w1 = s == 1 ? .98 : .98 - 2 * (.9 * .01 + .01);
        for (size_t j = 0; j < 2; j++) {
            CHECK(v0.var[j] == 0 && v0.var[4 + j] == 0 && v0.var[6 + j] == 0,
                  "var0 rows 0, 2, 3 moved (step %d)", s);
            CHECK(v1.var[j] == 1 && v1.var[2 + j] == 1,
                  "var1 rows 0, 1 moved (step %d)", s);
            CHECK_NEAR(v0.slot[0][2 + j], a0, TF_RTOL, TF_ATOL,
                       "accum0[1] step %d", s);
            CHECK_NEAR(v0.var[2 + j], w0, TF_RTOL, TF_ATOL, "var0[1] step %d",
                       s);
            CHECK_NEAR(v1.slot[0][4 + j], a1, TF_RTOL, TF_ATOL,
                       "accum1[2] step %d", s);
            CHECK_NEAR(v1.var[4 + j], w1, TF_RTOL, TF_ATOL, "var1[2] step %d",
                       s);
            CHECK_NEAR(v1.var[6 + j], w1, TF_RTOL, TF_ATOL, "var1[3] step %d",
                       s);
        }
    }
}

/* ftrl_test.py testFtrlWithL1_L2_L2ShrinkageSparse: var0 [[1], [2]] with
 * IndexedSlices([[0.1]], [0]), var1 [[4], [3]] with ([[0.02]], [1]),
 * FtrlOptimizer(3.0, initial_accumulator_value=0.1, l1 0.001, l2 2.0,
 * l2_shrinkage 0.1) (SparseApplyFtrlV2, width 1), 10 steps:
 * var0 [[-0.22578995], [2.]], var1 [[4.], [-0.13229476]]. */
static void test_tf_ftrl_shrinkage_sparse(void)
{
    rf_optim_config cfg = ref_config(RF_OPTIM_FTRL, 3.0f);
    cfg.l1_regularization_strength = 0.001f;
    cfg.l2_regularization_strength = 2.0f;
    cfg.l2_shrinkage_regularization_strength = 0.1f;
    table v0, v1;
    table_init(&v0, &cfg, 2, 1, (const float[]){1.0f, 2.0f});
    table_init(&v1, &cfg, 2, 1, (const float[]){4.0f, 3.0f});
    for (int s = 0; s < 10; s++) {
        table_step(&v0, (const int64_t[]){0}, 1, (const float[]){0.1f});
        table_step(&v1, (const int64_t[]){1}, 1, (const float[]){0.02f});
    }
    CHECK_NEAR(v0.var[0], -0.22578995, TF_RTOL, TF_ATOL, "var0[0]");
    CHECK(v0.var[1] == 2.0f, "var0[1] = %g", (double)v0.var[1]);
    CHECK(v1.var[0] == 4.0f, "var1[0] = %g", (double)v1.var[0]);
    CHECK_NEAR(v1.var[1], -0.13229476, TF_RTOL, TF_ATOL, "var1[1]");
}

/* ftrl_test.py testEquivSparseAdagradwithoutRegularization and
 * testEquivSparseGradientDescentwithoutRegularization: var0, var1 [[0], [0]]
 * with IndexedSlices([[0.1]], [0]) and ([[0.02]], [1]), 5 steps: FTRL(3.0)
 * with learning_rate_power -0.5 is sparse Adagrad(3.0, 0.1), with 0 it is
 * sparse gradient descent. */
static void test_tf_ftrl_sparse_equivalences(void)
{
    for (int fixed = 0; fixed < 2; fixed++) {
        rf_optim_config ftrl = ref_config(RF_OPTIM_FTRL, 3.0f);
        ftrl.learning_rate_power = fixed ? 0.0f : -0.5f;
        rf_optim_config other =
            ref_config(fixed ? RF_OPTIM_SGD : RF_OPTIM_ADAGRAD, 3.0f);
        table a0, a1, b0, b1;
        const float zeros[2] = {0, 0};
        table_init(&a0, &ftrl, 2, 1, zeros);
        table_init(&a1, &ftrl, 2, 1, zeros);
        table_init(&b0, &other, 2, 1, zeros);
        table_init(&b1, &other, 2, 1, zeros);
        for (int s = 0; s < 5; s++) {
            table_step(&a0, (const int64_t[]){0}, 1, (const float[]){0.1f});
            table_step(&a1, (const int64_t[]){1}, 1, (const float[]){0.02f});
            table_step(&b0, (const int64_t[]){0}, 1, (const float[]){0.1f});
            table_step(&b1, (const int64_t[]){1}, 1, (const float[]){0.02f});
        }
        for (int i = 0; i < 2; i++) {
            CHECK_NEAR(a0.var[i], b0.var[i], TF_RTOL, TF_ATOL,
                       "ftrl as %s var0[%d]", fixed ? "sgd" : "adagrad", i);
            CHECK_NEAR(a1.var[i], b1.var[i], TF_RTOL, TF_ATOL,
                       "ftrl as %s var1[%d]", fixed ? "sgd" : "adagrad", i);
        }
        CHECK(a0.var[0] != 0 && a1.var[1] != 0, "nothing moved");
    }
}

/* ---- (4) rf_optim_dedup ------------------------------------------------- */

static void test_dedup(void)
{
    /* order of first appearance, sums in order of appearance, -1 dropped */
    const int64_t idx[8] = {7, -1, 3, 7, 0, 3, 7, -1};
    const float grad[16] = {1, 10, 99, 99, 2, 20, 3,  30,
                            4, 40, 5,  50, 6, 60, 99, 99};
    void *scratch = malloc(rf_optim_dedup_scratch_bytes(8));
    CHECK_TRUE(scratch != NULL);
    int64_t out_idx[8];
    float out_grad[16];
    size_t out_n = 99;
    CHECK_OK(
        rf_optim_dedup(idx, 8, grad, 2, scratch, out_idx, out_grad, &out_n));
    CHECK_EQ_U64(out_n, 3);
    CHECK(out_idx[0] == 7 && out_idx[1] == 3 && out_idx[2] == 0,
          "unique indices %lld %lld %lld", (long long)out_idx[0],
          (long long)out_idx[1], (long long)out_idx[2]);
    const float want[6] = {1 + 3 + 6, 10 + 30 + 60, 2 + 5, 20 + 50, 4, 40};
    for (int k = 0; k < 6; k++)
        CHECK(out_grad[k] == want[k], "out_grad[%d] = %g, want %g", k,
              (double)out_grad[k], (double)want[k]);

    /* the sum is in order of appearance, in float: (1e8 + 1) - 1e8 in float
     * is 0 (1e8 + 1 rounds to 1e8), (1e8 - 1e8) + 1 would be 1 */
    const int64_t i2[3] = {5, 5, 5};
    const float g2[3] = {1e8f, 1.0f, -1e8f};
    CHECK_OK(rf_optim_dedup(i2, 3, g2, 1, scratch, out_idx, out_grad, &out_n));
    CHECK(out_n == 1 && out_idx[0] == 5 && out_grad[0] == 0.0f, "n %zu sum %g",
          out_n, (double)out_grad[0]);
    /* a row starts at +0.0f: a single -0.0f sums to +0.0f
     * (unsorted_segment_sum's setZero then +=) */
    const float g3[1] = {-0.0f};
    CHECK_OK(rf_optim_dedup(i2, 1, g3, 1, scratch, out_idx, out_grad, &out_n));
    CHECK(out_n == 1 && !signbit(out_grad[0]), "-0.0 kept its sign");

    /* every index -1: nothing; n = 0: nothing */
    const int64_t all_minus[2] = {-1, -1};
    CHECK_OK(rf_optim_dedup(all_minus, 2, grad, 2, scratch, out_idx, out_grad,
                            &out_n));
    CHECK_EQ_U64(out_n, 0);
    out_n = 7;
    CHECK_OK(rf_optim_dedup(NULL, 0, NULL, 2, NULL, NULL, NULL, &out_n));
    CHECK_EQ_U64(out_n, 0);
    CHECK_EQ_U64(rf_optim_dedup_scratch_bytes(0), 0);

    /* an index < -1 is refused, naming its position and value, with nothing
     * written */
    const int64_t neg[4] = {1, 2, -5, 1};
    int64_t untouched[4] = {42, 42, 42, 42};
    CHECK_ST(
        rf_optim_dedup(neg, 4, grad, 2, scratch, untouched, out_grad, &out_n),
        RF_ERR_INVALID_ARG);
    CHECK_MSG("indices[2] = -5");
    CHECK(untouched[0] == 42 && untouched[1] == 42, "written before refusing");

    /* width 0: indices only */
    CHECK_OK(rf_optim_dedup(idx, 8, NULL, 0, scratch, out_idx, NULL, &out_n));
    CHECK_EQ_U64(out_n, 3);
    free(scratch);
}

/* In place (out = in) and at scale: many indices with heavy repetition
 * against a quadratic reference; then dedup + apply is the same as applying
 * the summed rows. */
static void test_dedup_random(void)
{
    enum { N = 3000, W = 3, R = 700 };
    int64_t *idx = malloc(N * sizeof *idx), *work_idx = malloc(N * sizeof *idx);
    float *grad = malloc(N * W * sizeof *grad),
          *work = malloc(N * W * sizeof *grad);
    int64_t *ref_idx = malloc(N * sizeof *idx);
    float *ref_grad = malloc(N * W * sizeof *grad);
    void *scratch = malloc(rf_optim_dedup_scratch_bytes(N));
    CHECK_TRUE(idx && work_idx && grad && work && ref_idx && ref_grad &&
               scratch);
    for (size_t i = 0; i < N; i++) {
        /* ids with large gaps, negative hashes, some -1 */
        uint32_t r = rng_below(&rng, R + 1);
        idx[i] =
            r == R ? -1 : (int64_t)r * 1000003 + (int64_t)(r % 3) * 40000000000;
        for (size_t j = 0; j < W; j++)
            grad[i * W + j] = next_grad();
    }
    /* quadratic reference: first appearance, sums in order from +0 */
    size_t ref_n = 0;
    for (size_t i = 0; i < N; i++) {
        if (idx[i] == -1)
            continue;
        size_t p = 0;
        while (p < ref_n && ref_idx[p] != idx[i])
            p++;
        if (p == ref_n) {
            ref_idx[ref_n++] = idx[i];
            for (size_t j = 0; j < W; j++)
                ref_grad[p * W + j] = 0.0f;
        }
        for (size_t j = 0; j < W; j++)
            ref_grad[p * W + j] += grad[i * W + j];
    }
    memcpy(work_idx, idx, N * sizeof *idx);
    memcpy(work, grad, N * W * sizeof *grad);
    size_t out_n = 0;
    CHECK_OK(
        rf_optim_dedup(work_idx, N, work, W, scratch, work_idx, work, &out_n));
    CHECK_EQ_U64(out_n, ref_n);
    CHECK(memcmp(work_idx, ref_idx, ref_n * sizeof *idx) == 0,
          "in-place unique indices differ");
    CHECK(memcmp(work, ref_grad, ref_n * W * sizeof *grad) == 0,
          "in-place sums differ");
    free(idx);
    free(work_idx);
    free(grad);
    free(work);
    free(ref_idx);
    free(ref_grad);
    free(scratch);
}

int main(void)
{
    rng_init(&rng, 20261202, 14);
    test_against_reference();
    test_duplicates_twice();
    test_minus_one_skipped();
    test_out_of_range();
    test_arguments();
    test_dense_equality();
    test_adam_all_rows();
    test_tf_sgd_sparse_basic();
    test_tf_adagrad_sparse_basic();
    test_tf_momentum_sparse();
    test_tf_ftrl_shrinkage_sparse();
    test_tf_ftrl_sparse_equivalences();
    test_dedup();
    test_dedup_random();
    printf("unit.optim.sparse: all checks passed\n");
    return 0;
}
