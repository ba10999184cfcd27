/* tests/unit/optim/test_kernels.c: the update kernels of rf_optim_apply()
 * against (1) double-precision references written here from the published
 * formulas, step by step, (2) the figures of TensorFlow's own tests
 * (the *_test.py files of tensorflow/python/training, cited per test), and (3)
 * their determinism: bitwise identical results whatever the alignment and
 * however a variable is split into shards. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/optim.h"
#include "tests/common/check.h"
#include "tests/unit/optim/optim_ref.h"

#define MAXN 64

/* TF's assertAllClose / assertAllCloseAccordingToType for float32. */
#define TF_RTOL 1e-6
#define TF_ATOL 1e-6

/* ---- A variable (all the test's variables concatenated) and its slots -- */

typedef struct run {
    rf_optim_config cfg;
    rf_optim_layout layout;
    size_t n;
    float var[MAXN];
    float slot[RF_OPTIM_MAX_SLOTS][MAXN];
    rf_optim_scalars sc;
} run;

static void run_init(run *r, const rf_optim_config *cfg, const float *var0,
                     size_t n)
{
    memset(r, 0, sizeof *r);
    r->cfg = *cfg;
    r->n = n;
    memcpy(r->var, var0, n * sizeof(float));
    CHECK(rf_optim_layout_get(cfg, &r->layout) == RF_OK, "layout");
    for (unsigned s = 0; s < r->layout.num_slots; s++)
        CHECK(rf_optim_slot_init(cfg, s, r->slot[s], n) == RF_OK, "slot %u", s);
    CHECK(rf_optim_scalars_init(cfg, &r->sc) == RF_OK, "scalars");
}

/* One training step: apply to every variable, then _finish. */
static void run_step(run *r, const float *grad)
{
    float *slots[RF_OPTIM_MAX_SLOTS] = {r->slot[0], r->slot[1], r->slot[2]};
    CHECK(rf_optim_apply(&r->cfg, r->var, slots, grad, r->n, &r->sc) == RF_OK,
          "apply %s", rf_optim_kind_name(r->cfg.kind));
    CHECK(rf_optim_finish_step(&r->cfg, &r->sc) == RF_OK, "finish");
}

/* Index of the slot called name (-1 when absent). */
static int slot_of(const run *r, const char *name)
{
    for (unsigned s = 0; s < r->layout.num_slots; s++)
        if (strcmp(r->layout.slots[s].name, name) == 0)
            return (int)s;
    return -1;
}

/* ---- Double-precision references, in the textbook / numpy form -------- */

typedef struct ref {
    double var[MAXN], a[MAXN], b[MAXN], c[MAXN]; /* slots by meaning below */
    int t;                                       /* steps taken */
} ref;

static void ref_init(ref *f, const rf_optim_config *cfg, const float *var0,
                     size_t n)
{
    memset(f, 0, sizeof *f);
    for (size_t i = 0; i < n; i++) {
        f->var[i] = var0[i];
        f->a[i] = ref_initial_a(cfg);
    }
}

static void ref_step(ref *f, const rf_optim_config *cfg, const float *grad,
                     size_t n)
{
    const double lr = cfg->learning_rate, mu = cfg->momentum;
    f->t++;
    for (size_t i = 0; i < n; i++) {
        const double g = grad[i];
        if (cfg->kind == RF_OPTIM_MOMENTUM && cfg->use_nesterov) {
            /* momentum_test.py _update_nesterov_momentum_numpy */
            f->var[i] += f->a[i] * lr * mu;
            f->a[i] = f->a[i] * mu + g;
            f->var[i] -= lr * f->a[i];
            f->var[i] -= f->a[i] * lr * mu;
        } else if (cfg->kind == RF_OPTIM_ADAM) {
            /* adam.py docstring / adam_test.py adam_update_numpy */
            const double b1 = cfg->beta1, b2 = cfg->beta2;
            double lr_t =
                lr * sqrt(1.0 - pow(b2, f->t)) / (1.0 - pow(b1, f->t));
            f->a[i] = b1 * f->a[i] + (1.0 - b1) * g;
            f->b[i] = b2 * f->b[i] + (1.0 - b2) * g * g;
            f->var[i] -= lr_t * f->a[i] / (sqrt(f->b[i]) + cfg->epsilon);
        } else {
            ref_step_element(cfg, &f->var[i], &f->a[i], &f->b[i], &f->c[i], g);
        }
    }
}

/* Compares var and every slot of r with the reference. */
static void compare(const run *r, const ref *f, double rtol, double atol,
                    const char *what)
{
    char desc[160];
    rf_optim_format(&r->cfg, desc, sizeof desc);
    for (size_t i = 0; i < r->n; i++)
        CHECK_NEAR(r->var[i], f->var[i], rtol, atol, "%s %s step %d var[%zu]",
                   what, desc, f->t, i);
    for (unsigned s = 0; s < r->layout.num_slots; s++) {
        const char *name = r->layout.slots[s].name;
        const double *want = ref_slot(&r->cfg, name, f->a, f->b, f->c);
        CHECK(want != NULL, "%s: no reference for slot %s", desc, name);
        for (size_t i = 0; want && i < r->n; i++)
            CHECK_NEAR(r->slot[s][i], want[i], rtol, atol,
                       "%s %s step %d %s[%zu]", what, desc, f->t, name, i);
    }
}

/* Deterministic gradients in [-1, 1] with some exact zeros. */
static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static float next_grad(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    if (rng_state % 9 == 0)
        return 0.0f;
    return (float)((int)(rng_state % 2001) - 1000) / 1000.0f;
}

/* ---- (1) every optimizer against its reference, 12 steps, 37 elements -- */

static void test_against_reference(void)
{
    rf_optim_config cfgs[16];
    const size_t nc = ref_all_configs(cfgs);

    const size_t n = 37;
    for (size_t c = 0; c < nc; c++) {
        float var0[MAXN], grad[MAXN];
        for (size_t i = 0; i < n; i++)
            var0[i] = next_grad() * 3.0f;
        run r;
        ref f;
        run_init(&r, &cfgs[c], var0, n);
        ref_init(&f, &cfgs[c], var0, n);
        for (int step = 0; step < 12; step++) {
            for (size_t i = 0; i < n; i++)
                grad[i] = next_grad();
            run_step(&r, grad);
            ref_step(&f, &cfgs[c], grad, n);
            compare(&r, &f, 2e-5, 2e-6, "reference");
        }
    }
}

/* ---- (2) TensorFlow's own figures -------------------------------------- */

/* gradient_descent_test.py testBasic: lr 3.0, one step. */
static void test_tf_gradient_descent(void)
{
    run r;
    rf_optim_config cfg = ref_config(RF_OPTIM_SGD, 3.0f);
    run_init(&r, &cfg, (const float[]){1.0f, 2.0f, 3.0f, 4.0f}, 4);
    run_step(&r, (const float[]){0.1f, 0.1f, 0.01f, 0.01f});
    const double want[] = {1.0 - 3.0 * 0.1, 2.0 - 3.0 * 0.1, 3.0 - 3.0 * 0.01,
                           4.0 - 3.0 * 0.01};
    for (int i = 0; i < 4; i++)
        CHECK_NEAR(r.var[i], want[i], TF_RTOL, TF_ATOL, "sgd var[%d]", i);
}

/* momentum_test.py doTestBasic: lr 2.0, momentum 0.9, two steps. */
static void test_tf_momentum_basic(void)
{
    run r;
    rf_optim_config cfg = ref_config(RF_OPTIM_MOMENTUM, 2.0f);
    cfg.momentum = 0.9f;
    run_init(&r, &cfg, (const float[]){1.0f, 2.0f, 3.0f, 4.0f}, 4);
    const float g[] = {0.1f, 0.1f, 0.01f, 0.01f};
    run_step(&r, g);
    const double s1[] = {0.1, 0.1, 0.01, 0.01};
    const double v1[] = {1.0 - (0.1 * 2.0), 2.0 - (0.1 * 2.0),
                         3.0 - (0.01 * 2.0), 4.0 - (0.01 * 2.0)};
    for (int i = 0; i < 4; i++) {
        CHECK_NEAR(r.slot[0][i], s1[i], TF_RTOL, TF_ATOL, "step 1 momentum[%d]",
                   i);
        CHECK_NEAR(r.var[i], v1[i], TF_RTOL, TF_ATOL, "step 1 var[%d]", i);
    }
    run_step(&r, g);
    const double s2[] = {0.9 * 0.1 + 0.1, 0.9 * 0.1 + 0.1, 0.9 * 0.01 + 0.01,
                         0.9 * 0.01 + 0.01};
    const double v2[] = {
        1.0 - (0.1 * 2.0) - ((0.9 * 0.1 + 0.1) * 2.0),
        2.0 - (0.1 * 2.0) - ((0.9 * 0.1 + 0.1) * 2.0),
        2.98 - ((0.9 * 0.01 + 0.01) * 2.0),
        3.98 - ((0.9 * 0.01 + 0.01) * 2.0),
    };
    for (int i = 0; i < 4; i++) {
        CHECK_NEAR(r.slot[0][i], s2[i], TF_RTOL, TF_ATOL, "step 2 momentum[%d]",
                   i);
        CHECK_NEAR(r.var[i], v2[i], TF_RTOL, TF_ATOL, "step 2 var[%d]", i);
    }
}

/* momentum_test.py testLikeDistBeliefMom01: lr 0.1, momentum 0.1, figures
 * recorded from DistBelief (the first four of its ten steps). */
static void test_tf_momentum_distbelief(void)
{
    static const float db_grad[4][10] = {
        {0.00096264342f, 0.17914793f, 0.93945462f, 0.41396621f, 0.53037018f,
         0.93197989f, 0.78648776f, 0.50036013f, 0.55345792f, 0.96722615f},
        {0.17075552f, 0.88821375f, 0.20873757f, 0.25236958f, 0.57578111f,
         0.15312378f, 0.5513742f, 0.94687688f, 0.16012503f, 0.22159521f},
        {0.35077485f, 0.47304362f, 0.44412705f, 0.44368884f, 0.078527533f,
         0.81223965f, 0.31168157f, 0.43203235f, 0.16792089f, 0.24644311f},
        {0.9694621f, 0.75035888f, 0.28171822f, 0.83813518f, 0.53807181f,
         0.3728098f, 0.81454384f, 0.03848977f, 0.89759839f, 0.93665648f},
    };
    static const double db_out[4][10] = {
        {-9.6264346e-05, -0.017914793, -0.093945466, -0.041396622, -0.053037018,
         -0.093197994, -0.078648776, -0.050036013, -0.055345792, -0.096722618},
        {-0.017181443, -0.10852765, -0.12421377, -0.070773244, -0.11591884,
         -0.11783017, -0.14165108, -0.14972731, -0.076892875, -0.1285544},
        {-0.053967446, -0.1648933, -0.1716533, -0.1180798, -0.13005978,
         -0.20151734, -0.17911947, -0.20289968, -0.095839672, -0.15638189},
        {-0.15459226, -0.24556576, -0.20456907, -0.20662397, -0.18528105,
         -0.24716705, -0.2643207, -0.21206589, -0.18749419, -0.2528303},
    };
    run r;
    rf_optim_config cfg = ref_config(RF_OPTIM_MOMENTUM, 0.1f);
    cfg.momentum = 0.1f;
    const float zeros[10] = {0};
    run_init(&r, &cfg, zeros, 10);
    for (int s = 0; s < 4; s++) {
        run_step(&r, db_grad[s]);
        for (int i = 0; i < 10; i++)
            CHECK_NEAR(r.var[i], db_out[s][i], TF_RTOL, TF_ATOL,
                       "distbelief step %d var[%d]", s + 1, i);
    }
}

/* Gradient of loss = (w . x)^2 for x = (4, 5), the model of the
 * *_test.py testMinimizeSparseResourceVariable tests: 2 (w . x) x. */
static void minimize_grad(const float *w, float *g)
{
    float pred = w[0] * 4.0f + w[1] * 5.0f;
    g[0] = 2.0f * pred * 4.0f;
    g[1] = 2.0f * pred * 5.0f;
}

/* momentum_test.py testMinimizeSparseResourceVariable: lr 1, momentum 0. */
static void test_tf_momentum_minimize(void)
{
    run r;
    rf_optim_config cfg = ref_config(RF_OPTIM_MOMENTUM, 1.0f);
    cfg.momentum = 0.0f;
    run_init(&r, &cfg, (const float[]){1.0f, 2.0f}, 2);
    float g[2];
    minimize_grad(r.var, g);
    run_step(&r, g);
    CHECK_NEAR(r.var[0], -111.0, TF_RTOL, TF_ATOL, "var[0]");
    CHECK_NEAR(r.var[1], -138.0, TF_RTOL, TF_ATOL, "var[1]");
}

/* momentum_test.py testNesterovMomentum: lr 2, momentum 0.9, nesterov,
 * cost = 5 var0^2 + 3 var1 (gradients 10 var0 and 3), four steps checked
 * against the test's numpy form of the update. */
static void test_tf_nesterov(void)
{
    run r;
    ref f;
    rf_optim_config cfg = ref_config(RF_OPTIM_MOMENTUM, 2.0f);
    cfg.momentum = 0.9f;
    cfg.use_nesterov = true;
    const float var0[] = {1.0f, 2.0f, 3.0f, 4.0f};
    run_init(&r, &cfg, var0, 4);
    ref_init(&f, &cfg, var0, 4);
    for (int t = 1; t < 5; t++) {
        float g[4] = {r.var[0] * 10.0f, r.var[1] * 10.0f, 3.0f, 3.0f};
        float gref[4] = {(float)(f.var[0] * 10.0), (float)(f.var[1] * 10.0),
                         3.0f, 3.0f};
        run_step(&r, g);
        ref_step(&f, &cfg, gref, 4);
        /* The trajectory grows geometrically; TF checks with allClose. */
        for (int i = 0; i < 4; i++)
            CHECK_NEAR(r.var[i], f.var[i], TF_RTOL * 10, TF_ATOL,
                       "nesterov step %d var[%d]", t, i);
    }
}

/* adagrad_test.py doTestBasic: lr 3.0, initial_accumulator_value 0.1, three
 * steps, figures as printed in the test. */
static void test_tf_adagrad_basic(void)
{
    run r;
    rf_optim_config cfg = ref_config(RF_OPTIM_ADAGRAD, 3.0f);
    run_init(&r, &cfg, (const float[]){1.0f, 2.0f, 3.0f, 4.0f}, 4);
    for (int s = 0; s < 3; s++)
        run_step(&r, (const float[]){0.1f, 0.1f, 0.01f, 0.01f});
    const double want[] = {-1.6026098728179932, -0.6026098728179932,
                           2.715679168701172, 3.715679168701172};
    for (int i = 0; i < 4; i++)
        CHECK_NEAR(r.var[i], want[i], TF_RTOL, TF_ATOL, "adagrad var[%d]", i);
}

/* ftrl_test.py: var0 and var1 (concatenated), grads0 [0.1, 0.2], grads1
 * [0.01, 0.02] every step, FtrlOptimizer(3.0, initial_accumulator_value=0.1,
 * ...), TF's expected values after `steps` steps. */
static void tf_ftrl_case(const char *name, float l1, float l2, float shrink,
                         const float *var0, int steps, const double *want)
{
    run r;
    rf_optim_config cfg = ref_config(RF_OPTIM_FTRL, 3.0f);
    cfg.l1_regularization_strength = l1;
    cfg.l2_regularization_strength = l2;
    cfg.l2_shrinkage_regularization_strength = shrink;
    run_init(&r, &cfg, var0, 4);
    for (int s = 0; s < steps; s++)
        run_step(&r, (const float[]){0.1f, 0.2f, 0.01f, 0.02f});
    for (int i = 0; i < 4; i++)
        CHECK_NEAR(r.var[i], want[i], TF_RTOL, TF_ATOL, "%s var[%d]", name, i);
}

static void test_tf_ftrl(void)
{
    const float zeros[4] = {0, 0, 0, 0}, init[4] = {1, 2, 4, 3};
    /* testFtrlwithoutRegularization: 3 steps from zeros */
    tf_ftrl_case(
        "WithoutRegularization", 0, 0, 0, zeros, 3,
        (const double[]){-2.60260963, -4.29698515, -0.28432083, -0.56694895});
    /* testFtrlwithoutRegularization2: 3 steps from [1, 2], [4, 3] */
    tf_ftrl_case(
        "WithoutRegularization2", 0, 0, 0, init, 3,
        (const double[]){-2.55607247, -3.98729396, -0.28232238, -0.56096673});
    /* testFtrlWithL1: l1 0.001, 10 steps */
    tf_ftrl_case(
        "WithL1", 0.001f, 0, 0, init, 10,
        (const double[]){-7.66718769, -10.91273689, -0.93460727, -1.86147261});
    /* testFtrlWithL1_L2: l1 0.001, l2 2.0, 10 steps */
    tf_ftrl_case(
        "WithL1_L2", 0.001f, 2.0f, 0, init, 10,
        (const double[]){-0.24059935, -0.46829352, -0.02406147, -0.04830509});
    /* testFtrlWithL1_L2_L2Shrinkage: and shrinkage 0.1 (ApplyFtrlV2) */
    tf_ftrl_case(
        "WithL1_L2_L2Shrinkage", 0.001f, 2.0f, 0.1f, init, 10,
        (const double[]){-0.22578995, -0.44345796, -0.14378493, -0.13229476});
}

/* ftrl_test.py testEquivAdagradwithoutRegularization and
 * testEquivGradientDescentwithoutRegularization: from zeros, without
 * L1/L2, FTRL with learning_rate_power -0.5 is Adagrad and with 0 is
 * gradient descent (5 steps of applyOptimizer, assertAllCloseAccordingToType).
 */
static void test_tf_ftrl_equivalences(void)
{
    const float zeros[4] = {0, 0, 0, 0};
    const float g[4] = {0.1f, 0.2f, 0.01f, 0.02f};
    for (int fixed = 0; fixed < 2; fixed++) {
        run a, b;
        rf_optim_config ftrl = ref_config(RF_OPTIM_FTRL, 3.0f);
        ftrl.learning_rate_power = fixed ? 0.0f : -0.5f;
        rf_optim_config other =
            ref_config(fixed ? RF_OPTIM_SGD : RF_OPTIM_ADAGRAD, 3.0f);
        run_init(&a, &ftrl, zeros, 4);
        run_init(&b, &other, zeros, 4);
        for (int s = 0; s < 5; s++) {
            run_step(&a, g);
            run_step(&b, g);
        }
        for (int i = 0; i < 4; i++)
            CHECK_NEAR(a.var[i], b.var[i], TF_RTOL, TF_ATOL,
                       "ftrl as %s var[%d]", fixed ? "sgd" : "adagrad", i);
    }
}

/* adagrad_test.py testMinimizeSparseResourceVariable: lr 1, var0 2x2 whose
 * row 0 only feeds the loss; expects [[0, 1], [3, 4]] within 0.01. */
static void test_tf_adagrad_minimize(void)
{
    run r;
    rf_optim_config cfg = ref_config(RF_OPTIM_ADAGRAD, 1.0f);
    run_init(&r, &cfg, (const float[]){1.0f, 2.0f, 3.0f, 4.0f}, 4);
    float g[4] = {0};
    minimize_grad(r.var, g);
    run_step(&r, g);
    const double want[] = {0.0, 1.0, 3.0, 4.0};
    for (int i = 0; i < 4; i++)
        CHECK_NEAR(r.var[i], want[i], 0.0, 0.01, "adagrad minimize var[%d]", i);
}

/* adam_test.py doTestBasic: defaults but lr 0.001, var0 (1, 2) with
 * gradient 0.1, var1 (3, 4) with 0.01, three steps against the test's
 * adam_update_numpy; beta1_power and beta2_power equal 0.9^(t+1) and
 * 0.999^(t+1) after step t. */
static void test_tf_adam_basic(void)
{
    run r;
    ref f;
    rf_optim_config cfg = ref_config(RF_OPTIM_ADAM, 0.001f);
    const float var0[] = {1.0f, 2.0f, 3.0f, 4.0f};
    const float g[] = {0.1f, 0.1f, 0.01f, 0.01f};
    run_init(&r, &cfg, var0, 4);
    ref_init(&f, &cfg, var0, 4);
    CHECK_NEAR(r.sc.beta1_power, 0.9, TF_RTOL, TF_ATOL, "initial beta1_power");
    CHECK_NEAR(r.sc.beta2_power, 0.999, TF_RTOL, TF_ATOL,
               "initial beta2_power");
    for (int t = 1; t < 4; t++) {
        run_step(&r, g);
        ref_step(&f, &cfg, g, 4);
        CHECK_NEAR(r.sc.beta1_power, pow(0.9, t + 1), TF_RTOL, TF_ATOL,
                   "beta1_power after step %d", t);
        CHECK_NEAR(r.sc.beta2_power, pow(0.999, t + 1), TF_RTOL, TF_ATOL,
                   "beta2_power after step %d", t);
        compare(&r, &f, TF_RTOL, TF_ATOL, "adam_test");
    }
}

/* rmsprop_test.py testWithoutMomentum (lr 2, decay 0.9, momentum 0,
 * epsilon 1) and testWithMomentum (momentum 0.5, epsilon 1e-5): two steps
 * each, with the figures written as in the test. "rms" starts at 1, so
 * after step 1 it is 0.9 * 1 + 0.1 * 0.1^2 = 0.901. */
static void test_tf_rmsprop_basic(void)
{
    const float g[] = {0.1f, 0.1f, 0.01f, 0.01f};
    const float var0[] = {1.0f, 2.0f, 3.0f, 4.0f};
    const double base[] = {1.0, 2.0, 3.0, 4.0};
    const double gd[] = {0.1, 0.1, 0.01, 0.01};
    const double rms1[] = {0.901, 0.901, 0.90001, 0.90001};
    const double rms2[] = {0.901 * 0.9 + 0.001, 0.901 * 0.9 + 0.001,
                           0.90001 * 0.9 + 1e-5, 0.90001 * 0.9 + 1e-5};
    run r;

    rf_optim_config cfg = ref_config(RF_OPTIM_RMSPROP, 2.0f);
    cfg.decay = 0.9f;
    cfg.momentum = 0.0f;
    cfg.epsilon = 1.0f;
    run_init(&r, &cfg, var0, 4);
    run_step(&r, g);
    for (int i = 0; i < 4; i++) {
        CHECK_NEAR(r.slot[0][i], rms1[i], TF_RTOL, TF_ATOL, "no-mom rms[%d]",
                   i);
        CHECK_NEAR(r.var[i], base[i] - gd[i] * 2.0 / sqrt(rms1[i] + 1.0),
                   TF_RTOL, TF_ATOL, "no-mom step 1 var[%d]", i);
    }
    run_step(&r, g);
    for (int i = 0; i < 4; i++) {
        CHECK_NEAR(r.slot[0][i], rms2[i], TF_RTOL, TF_ATOL, "no-mom rms[%d]",
                   i);
        CHECK_NEAR(r.var[i],
                   base[i] - gd[i] * 2.0 / sqrt(rms1[i] + 1.0) -
                       gd[i] * 2.0 / sqrt(rms2[i] + 1.0),
                   TF_RTOL, TF_ATOL, "no-mom step 2 var[%d]", i);
    }

    cfg.momentum = 0.5f;
    cfg.epsilon = 1e-5f;
    run_init(&r, &cfg, var0, 4);
    run_step(&r, g);
    for (int i = 0; i < 4; i++) {
        double mom1 = gd[i] * 2.0 / sqrt(rms1[i] + 1e-5);
        CHECK_NEAR(r.slot[0][i], rms1[i], TF_RTOL, TF_ATOL, "mom rms[%d]", i);
        CHECK_NEAR(r.slot[1][i], mom1, TF_RTOL, TF_ATOL, "mom momentum[%d]", i);
        CHECK_NEAR(r.var[i], base[i] - mom1, TF_RTOL, TF_ATOL, "mom var[%d]",
                   i);
    }
    run_step(&r, g);
    for (int i = 0; i < 4; i++) {
        double mom1 = gd[i] * 2.0 / sqrt(rms1[i] + 1e-5);
        double mom2 = 0.5 * mom1 + gd[i] * 2.0 / sqrt(rms2[i] + 1e-5);
        CHECK_NEAR(r.slot[0][i], rms2[i], TF_RTOL, TF_ATOL, "mom rms[%d]", i);
        CHECK_NEAR(r.slot[1][i], mom2, TF_RTOL, TF_ATOL, "mom momentum[%d]", i);
        CHECK_NEAR(r.var[i], base[i] - mom1 - mom2, TF_RTOL, TF_ATOL,
                   "mom step 2 var[%d]", i);
    }
}

/* rmsprop_test.py testDense: its _TEST_PARAM_VALUES (learning_rate, decay,
 * momentum, epsilon, centered), four steps against _rmsprop_update_numpy. */
static void test_tf_rmsprop_dense(void)
{
    static const struct {
        float lr, decay, momentum, epsilon;
        bool centered;
    } params[] = {
        {0.5f, 0.9f, 0.0f, 1e-3f, true},  {0.5f, 0.9f, 0.0f, 1e-3f, false},
        {0.1f, 0.9f, 0.0f, 1e-3f, true},  {0.5f, 0.95f, 0.0f, 1e-3f, false},
        {0.5f, 0.95f, 0.0f, 1e-5f, true}, {0.5f, 0.95f, 0.9f, 1e-5f, true},
    };
    const float var0[] = {1.0f, 2.0f, 3.0f, 4.0f};
    const float g[] = {0.1f, 0.2f, 0.01f, 0.2f};
    for (size_t p = 0; p < sizeof params / sizeof params[0]; p++) {
        rf_optim_config cfg = ref_config(RF_OPTIM_RMSPROP, params[p].lr);
        cfg.decay = params[p].decay;
        cfg.momentum = params[p].momentum;
        cfg.epsilon = params[p].epsilon;
        cfg.centered = params[p].centered;
        run r;
        ref f;
        run_init(&r, &cfg, var0, 4);
        ref_init(&f, &cfg, var0, 4);
        CHECK((slot_of(&r, "mg") >= 0) == cfg.centered, "mg slot iff centered");
        for (int t = 1; t < 5; t++) {
            run_step(&r, g);
            ref_step(&f, &cfg, g, 4);
            compare(&r, &f, TF_RTOL, TF_ATOL, "rmsprop_test testDense");
        }
    }
}

/* rmsprop_test.py testMinimizeSparseResourceVariable (decay 0, epsilon 0:
 * expects (0, 1)) and ...Centered (epsilon 1: expects (-111, -138); the TF
 * 1.x variant with decay 0.1 expects (-7/3, -4/3)), all within 0.01. */
static void test_tf_rmsprop_minimize(void)
{
    static const struct {
        float decay, epsilon;
        bool centered;
        double want0, want1;
    } cases[] = {
        {0.0f, 0.0f, false, 0.0, 1.0},
        {0.0f, 1.0f, true, -111.0, -138.0},
        {0.1f, 1.0f, true, -7 / 3.0, -4 / 3.0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        rf_optim_config cfg = ref_config(RF_OPTIM_RMSPROP, 1.0f);
        cfg.decay = cases[c].decay;
        cfg.momentum = 0.0f;
        cfg.epsilon = cases[c].epsilon;
        cfg.centered = cases[c].centered;
        run r;
        run_init(&r, &cfg, (const float[]){1.0f, 2.0f}, 2);
        float g[2];
        minimize_grad(r.var, g);
        run_step(&r, g);
        CHECK_NEAR(r.var[0], cases[c].want0, 0.0, 0.01, "case %zu var[0]", c);
        CHECK_NEAR(r.var[1], cases[c].want1, 0.0, 0.01, "case %zu var[1]", c);
    }
}

/* ---- (3) determinism ---------------------------------------------------- */

/* Applies `steps` steps of cfg to n elements starting at offset `off` of
 * fresh buffers, in pieces of `piece` elements (a variable split into
 * shards), and copies out var and the slots. */
static void run_split(const rf_optim_config *cfg, size_t n, size_t off,
                      size_t piece, const float *init, const float *grads,
                      int steps, float *out)
{
    float buf[RF_OPTIM_MAX_SLOTS + 1][MAXN + 8];
    rf_optim_layout layout;
    CHECK(rf_optim_layout_get(cfg, &layout) == RF_OK, "layout");
    float *var = buf[0] + off;
    memcpy(var, init, n * sizeof(float));
    for (unsigned s = 0; s < layout.num_slots; s++)
        CHECK(rf_optim_slot_init(cfg, s, buf[s + 1] + off, n) == RF_OK, "slot");
    rf_optim_scalars sc;
    CHECK(rf_optim_scalars_init(cfg, &sc) == RF_OK, "scalars");
    for (int t = 0; t < steps; t++) {
        for (size_t lo = 0; lo < n; lo += piece) {
            size_t len = n - lo < piece ? n - lo : piece;
            float *slots[RF_OPTIM_MAX_SLOTS];
            for (unsigned s = 0; s < layout.num_slots; s++)
                slots[s] = buf[s + 1] + off + lo;
            CHECK(rf_optim_apply(cfg, var + lo, slots, grads + t * n + lo, len,
                                 &sc) == RF_OK,
                  "apply");
        }
        CHECK(rf_optim_finish_step(cfg, &sc) == RF_OK, "finish");
    }
    for (unsigned s = 0; s <= layout.num_slots; s++)
        memcpy(out + s * n, buf[s] + off, n * sizeof(float));
}

static void test_determinism(void)
{
    enum { N = 61, STEPS = 6 };
    float init[N], grads[STEPS * N];
    for (size_t i = 0; i < N; i++)
        init[i] = next_grad();
    for (size_t i = 0; i < STEPS * N; i++)
        grads[i] = next_grad() * 5.0f;
    for (int k = 0; k < RF_OPTIM_KIND_COUNT; k++) {
        for (int variant = 0; variant < 2; variant++) {
            rf_optim_config cfg = ref_config((rf_optimizer_kind)k, 0.05f);
            if (k == RF_OPTIM_MOMENTUM) {
                cfg.momentum = 0.9f;
                cfg.use_nesterov = variant;
            }
            if (k == RF_OPTIM_RMSPROP) {
                cfg.momentum = 0.3f;
                cfg.centered = variant;
            }
            if (k == RF_OPTIM_FTRL && variant) {
                cfg.learning_rate_power = -0.7f;
                cfg.l1_regularization_strength = 0.01f;
                cfg.l2_shrinkage_regularization_strength = 0.1f;
            }
            float whole[(RF_OPTIM_MAX_SLOTS + 1) * N] = {0};
            float other[(RF_OPTIM_MAX_SLOTS + 1) * N] = {0};
            run_split(&cfg, N, 0, N, init, grads, STEPS, whole);
            const size_t offs[] = {1, 2, 3, 5};
            const size_t pieces[] = {1, 7, 16, 30};
            for (size_t o = 0; o < 4; o++) {
                run_split(&cfg, N, offs[o], pieces[o], init, grads, STEPS,
                          other);
                CHECK(memcmp(whole, other, sizeof whole) == 0,
                      "%s variant %d: offset %zu pieces of %zu differ bitwise",
                      rf_optim_kind_name(cfg.kind), variant, offs[o],
                      pieces[o]);
            }
        }
    }
}

int main(void)
{
    test_against_reference();
    test_tf_gradient_descent();
    test_tf_momentum_basic();
    test_tf_momentum_distbelief();
    test_tf_momentum_minimize();
    test_tf_nesterov();
    test_tf_adagrad_basic();
    test_tf_adagrad_minimize();
    test_tf_ftrl();
    test_tf_ftrl_equivalences();
    test_tf_adam_basic();
    test_tf_rmsprop_basic();
    test_tf_rmsprop_dense();
    test_tf_rmsprop_minimize();
    test_determinism();
    printf("unit.optim.kernels: all checks passed\n");
    return 0;
}
