/* tests/unit/optim/test_config.c: optimizer descriptions: TensorFlow's
 * defaults, rejection of bad hyper-parameters with clear messages,
 * --optimizer parsing, slot layouts and initial values, the beta powers,
 * and rf_optim_apply()'s argument checks. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rdmaflow/optim.h"
#include "tests/common/check.h"

static bool has(const char *needle)
{
    return strstr(rf_error_message(), needle) != NULL;
}

static void test_defaults(void)
{
    rf_optim_config c;
    /* adam.py: learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8 */
    CHECK(rf_optim_defaults(RF_OPTIM_ADAM, &c) == RF_OK, "adam");
    CHECK(c.kind == RF_OPTIM_ADAM && c.learning_rate == 0.001f &&
              c.beta1 == 0.9f && c.beta2 == 0.999f && c.epsilon == 1e-8f,
          "adam defaults");
    CHECK(rf_optim_validate(&c) == RF_OK, "adam defaults are valid");

    /* rmsprop.py: decay=0.9, momentum=0.0, epsilon=1e-10, centered=False */
    CHECK(rf_optim_defaults(RF_OPTIM_RMSPROP, &c) == RF_OK, "rmsprop");
    CHECK(c.decay == 0.9f && c.momentum == 0.0f && c.epsilon == 1e-10f &&
              !c.centered,
          "rmsprop defaults");
    /* adagrad.py: initial_accumulator_value=0.1 */
    CHECK(rf_optim_defaults(RF_OPTIM_ADAGRAD, &c) == RF_OK, "adagrad");
    CHECK(c.initial_accumulator_value == 0.1f, "adagrad default %g",
          (double)c.initial_accumulator_value);
    /* ftrl.py: learning_rate_power=-0.5, initial_accumulator_value=0.1,
     * l1_regularization_strength=0.0, l2_regularization_strength=0.0,
     * l2_shrinkage_regularization_strength=0.0 */
    CHECK(rf_optim_defaults(RF_OPTIM_FTRL, &c) == RF_OK, "ftrl");
    CHECK(c.learning_rate_power == -0.5f &&
              c.initial_accumulator_value == 0.1f &&
              c.l1_regularization_strength == 0.0f &&
              c.l2_regularization_strength == 0.0f &&
              c.l2_shrinkage_regularization_strength == 0.0f,
          "ftrl defaults");
    /* momentum.py: use_nesterov=False */
    CHECK(rf_optim_defaults(RF_OPTIM_MOMENTUM, &c) == RF_OK, "momentum");
    CHECK(!c.use_nesterov, "nesterov off by default");

    /* Required arguments (no TF default) are rejected until set. */
    const rf_optimizer_kind need_lr[] = {RF_OPTIM_SGD, RF_OPTIM_MOMENTUM,
                                         RF_OPTIM_ADAGRAD, RF_OPTIM_RMSPROP,
                                         RF_OPTIM_FTRL};
    for (size_t i = 0; i < sizeof need_lr / sizeof need_lr[0]; i++) {
        CHECK(rf_optim_defaults(need_lr[i], &c) == RF_OK, "defaults");
        CHECK(rf_optim_validate(&c) == RF_ERR_INVALID_ARG &&
                  has("learning_rate is required") &&
                  has(rf_optim_kind_name(need_lr[i])),
              "%s without learning_rate: '%s'", rf_optim_kind_name(need_lr[i]),
              rf_error_message());
        c.learning_rate = 0.1f;
        if (need_lr[i] == RF_OPTIM_MOMENTUM) {
            CHECK(rf_optim_validate(&c) == RF_ERR_INVALID_ARG &&
                      has("momentum is required"),
                  "momentum without momentum: '%s'", rf_error_message());
            c.momentum = 0.9f;
        }
        CHECK(rf_optim_validate(&c) == RF_OK, "%s with learning_rate",
              rf_optim_kind_name(need_lr[i]));
    }

    CHECK(rf_optim_defaults((rf_optimizer_kind)42, &c) == RF_ERR_INVALID_ARG &&
              has("unknown optimizer kind 42"),
          "unknown kind: '%s'", rf_error_message());
    CHECK(rf_optim_defaults(RF_OPTIM_SGD, NULL) == RF_ERR_INVALID_ARG, "NULL");
}

/* Sets one field of a valid config of kind to a bad value and expects a
 * rejection whose message names the field. */
static void expect_bad(rf_optimizer_kind kind, const char *field, float value)
{
    rf_optim_config c;
    rf_optim_defaults(kind, &c);
    c.learning_rate = 0.01f;
    if (kind == RF_OPTIM_MOMENTUM)
        c.momentum = 0.9f;
    CHECK(rf_optim_validate(&c) == RF_OK, "base config of %s",
          rf_optim_kind_name(kind));
    if (!strcmp(field, "learning_rate"))
        c.learning_rate = value;
    else if (!strcmp(field, "momentum"))
        c.momentum = value;
    else if (!strcmp(field, "initial_accumulator_value"))
        c.initial_accumulator_value = value;
    else if (!strcmp(field, "beta1"))
        c.beta1 = value;
    else if (!strcmp(field, "beta2"))
        c.beta2 = value;
    else if (!strcmp(field, "epsilon"))
        c.epsilon = value;
    else if (!strcmp(field, "decay"))
        c.decay = value;
    else if (!strcmp(field, "learning_rate_power"))
        c.learning_rate_power = value;
    else if (!strcmp(field, "l1_regularization_strength"))
        c.l1_regularization_strength = value;
    else if (!strcmp(field, "l2_regularization_strength"))
        c.l2_regularization_strength = value;
    else if (!strcmp(field, "l2_shrinkage_regularization_strength"))
        c.l2_shrinkage_regularization_strength = value;
    else
        CHECK(false, "unknown field %s", field);
    rf_error_clear();
    CHECK(rf_optim_validate(&c) == RF_ERR_INVALID_ARG && has(field) &&
              has(rf_optim_kind_name(kind)),
          "%s %s = %g accepted or unclear: '%s'", rf_optim_kind_name(kind),
          field, (double)value, rf_error_message());
    /* The kernel refuses the same config. */
    float var = 0, grad = 0, s0 = 0, s1 = 0, s2 = 0;
    float *slots[] = {&s0, &s1, &s2};
    rf_optim_scalars sc = {0.5f, 0.5f};
    CHECK(rf_optim_apply(&c, &var, slots, &grad, 1, &sc) == RF_ERR_INVALID_ARG,
          "apply with bad %s", field);
}

static void test_validation(void)
{
    for (int k = 0; k < RF_OPTIM_KIND_COUNT; k++) {
        expect_bad((rf_optimizer_kind)k, "learning_rate", -0.1f);
        expect_bad((rf_optimizer_kind)k, "learning_rate", INFINITY);
        expect_bad((rf_optimizer_kind)k, "learning_rate", NAN);
    }
    expect_bad(RF_OPTIM_MOMENTUM, "momentum", -0.5f);
    expect_bad(RF_OPTIM_MOMENTUM, "momentum", 1.5f);
    expect_bad(RF_OPTIM_ADAGRAD, "initial_accumulator_value", 0.0f);
    expect_bad(RF_OPTIM_ADAGRAD, "initial_accumulator_value", -1.0f);
    expect_bad(RF_OPTIM_ADAM, "beta1", 1.0f);
    expect_bad(RF_OPTIM_ADAM, "beta1", -0.1f);
    expect_bad(RF_OPTIM_ADAM, "beta2", 1.0f);
    expect_bad(RF_OPTIM_ADAM, "beta2", NAN);
    expect_bad(RF_OPTIM_ADAM, "epsilon", -1e-8f);
    expect_bad(RF_OPTIM_RMSPROP, "decay", 1.5f);
    expect_bad(RF_OPTIM_RMSPROP, "decay", -0.1f);
    expect_bad(RF_OPTIM_RMSPROP, "momentum", -0.1f);
    expect_bad(RF_OPTIM_RMSPROP, "epsilon", -1.0f);
    expect_bad(RF_OPTIM_RMSPROP, "epsilon", INFINITY);
    /* FtrlOptimizer's ValueErrors, and the kernels' positive lr */
    expect_bad(RF_OPTIM_FTRL, "learning_rate", 0.0f);
    expect_bad(RF_OPTIM_FTRL, "learning_rate_power", 0.5f);
    expect_bad(RF_OPTIM_FTRL, "learning_rate_power", -INFINITY);
    expect_bad(RF_OPTIM_FTRL, "learning_rate_power", NAN);
    expect_bad(RF_OPTIM_FTRL, "initial_accumulator_value", 0.0f);
    expect_bad(RF_OPTIM_FTRL, "initial_accumulator_value", -0.1f);
    expect_bad(RF_OPTIM_FTRL, "l1_regularization_strength", -0.001f);
    expect_bad(RF_OPTIM_FTRL, "l1_regularization_strength", INFINITY);
    expect_bad(RF_OPTIM_FTRL, "l2_regularization_strength", -2.0f);
    expect_bad(RF_OPTIM_FTRL, "l2_shrinkage_regularization_strength", -0.1f);
    expect_bad(RF_OPTIM_FTRL, "l2_shrinkage_regularization_strength", NAN);

    /* Boundary values that are fine: lr 0, beta1 0, epsilon 0, decay 0 and
     * 1, momentum 1. */
    rf_optim_config c;
    rf_optim_defaults(RF_OPTIM_ADAM, &c);
    c.learning_rate = 0.0f;
    c.beta1 = 0.0f;
    c.epsilon = 0.0f;
    CHECK(rf_optim_validate(&c) == RF_OK, "adam boundaries");
    rf_optim_defaults(RF_OPTIM_RMSPROP, &c);
    c.learning_rate = 1.0f;
    c.decay = 0.0f;
    c.momentum = 1.0f;
    c.epsilon = 0.0f;
    CHECK(rf_optim_validate(&c) == RF_OK, "rmsprop boundaries");
    c.decay = 1.0f;
    CHECK(rf_optim_validate(&c) == RF_OK, "rmsprop decay 1");
    rf_optim_defaults(RF_OPTIM_FTRL, &c);
    c.learning_rate = 3.0f;
    c.learning_rate_power = 0.0f; /* a fixed learning rate */
    CHECK(rf_optim_validate(&c) == RF_OK, "ftrl boundaries");
    c.learning_rate_power = -2.0f;
    c.l1_regularization_strength = 0.001f;
    c.l2_regularization_strength = 2.0f;
    c.l2_shrinkage_regularization_strength = 0.1f;
    CHECK(rf_optim_validate(&c) == RF_OK, "ftrl with every regularization");

    /* Fields another kind uses are ignored. */
    rf_optim_defaults(RF_OPTIM_SGD, &c);
    c.learning_rate = 0.5f;
    c.beta1 = 7.0f;
    c.momentum = -3.0f;
    CHECK(rf_optim_validate(&c) == RF_OK, "sgd ignores adam/momentum fields");

    CHECK(rf_optim_validate(NULL) == RF_ERR_INVALID_ARG, "NULL");
    c.kind = (rf_optimizer_kind)-1;
    CHECK(rf_optim_validate(&c) == RF_ERR_INVALID_ARG, "bad kind");
}

static void test_parse_and_format(void)
{
    static const char *const names[] = {"sgd",  "momentum", "adagrad",
                                        "adam", "rmsprop",  "ftrl"};
    CHECK_EQ_U64(sizeof names / sizeof names[0], RF_OPTIM_KIND_COUNT);
    rf_optim_config c;
    for (int k = 0; k < RF_OPTIM_KIND_COUNT; k++) {
        CHECK(rf_optim_parse(names[k], &c) == RF_OK && (int)c.kind == k,
              "parse %s", names[k]);
        CHECK(!strcmp(rf_optim_kind_name((rf_optimizer_kind)k), names[k]),
              "name of %d", k);
    }
    CHECK(rf_optim_parse("adam", &c) == RF_OK && c.learning_rate == 0.001f,
          "parse gives defaults");
    const char *bad[] = {"Adam", "", "adamw", "sgd ", "Ftrl"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rf_error_clear();
        CHECK(rf_optim_parse(bad[i], &c) == RF_ERR_INVALID_ARG &&
                  has("unknown optimizer") && has(bad[i]) &&
                  has("sgd|momentum|adagrad|adam|rmsprop|ftrl"),
              "parse '%s': '%s'", bad[i], rf_error_message());
    }
    CHECK(rf_optim_parse(NULL, &c) == RF_ERR_INVALID_ARG, "NULL name");
    CHECK_EQ_U64(rf_optim_num_slots(RF_OPTIM_FTRL, false), 2);
    CHECK(!strcmp(rf_optim_kind_name((rf_optimizer_kind)9), "unknown"),
          "unknown name");

    char buf[160];
    rf_optim_parse("adam", &c);
    rf_optim_format(&c, buf, sizeof buf);
    CHECK(!strcmp(buf, "adam(learning_rate=0.001, beta1=0.9, beta2=0.999, "
                       "epsilon=1e-08)"),
          "format '%s'", buf);
    rf_optim_parse("rmsprop", &c);
    c.learning_rate = 0.01f;
    c.centered = true;
    rf_optim_format(&c, buf, sizeof buf);
    CHECK(!strcmp(buf, "rmsprop(learning_rate=0.01, decay=0.9, momentum=0, "
                       "epsilon=1e-10, centered=true)"),
          "format '%s'", buf);
    char big[256];
    rf_optim_parse("ftrl", &c);
    c.learning_rate = 3.0f;
    c.l1_regularization_strength = 0.001f;
    c.l2_shrinkage_regularization_strength = 0.1f;
    rf_optim_format(&c, big, sizeof big);
    CHECK(!strcmp(big, "ftrl(learning_rate=3, learning_rate_power=-0.5, "
                       "initial_accumulator_value=0.1, "
                       "l1_regularization_strength=0.001, "
                       "l2_regularization_strength=0, "
                       "l2_shrinkage_regularization_strength=0.1)"),
          "format '%s'", big);
    rf_optim_parse("rmsprop", &c);
    c.learning_rate = 0.01f;
    c.centered = true;
    char small[8];
    int len = rf_optim_format(&c, small, sizeof small);
    CHECK(len == (int)strlen(buf) && strlen(small) == 7, "truncation %d", len);
}

static void test_layouts(void)
{
    static const struct {
        rf_optimizer_kind kind;
        bool centered;
        const char *tf_name;
        unsigned num_slots, num_scalars;
        const char *names[3];
        float init[3];
    } want[] = {
        {RF_OPTIM_SGD, false, "GradientDescent", 0, 0, {0}, {0}},
        {RF_OPTIM_MOMENTUM, false, "Momentum", 1, 0, {"momentum"}, {0.0f}},
        {RF_OPTIM_ADAGRAD, false, "Adagrad", 1, 0, {"accumulator"}, {0.1f}},
        {RF_OPTIM_ADAM, false, "Adam", 2, 2, {"m", "v"}, {0.0f, 0.0f}},
        {RF_OPTIM_RMSPROP,
         false,
         "RMSProp",
         2,
         0,
         {"rms", "momentum"},
         {1.0f, 0.0f}},
        {RF_OPTIM_RMSPROP,
         true,
         "RMSProp",
         3,
         0,
         {"rms", "mg", "momentum"},
         {1.0f, 0.0f, 0.0f}},
        /* ftrl.py _create_slots: "accum" then "linear" */
        {RF_OPTIM_FTRL, false, "Ftrl", 2, 0, {"accum", "linear"}, {0.1f, 0}},
    };
    for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
        rf_optim_config c;
        rf_optim_defaults(want[w].kind, &c);
        c.learning_rate = 0.1f;
        c.momentum = 0.5f;
        c.centered = want[w].centered;
        rf_optim_layout l;
        CHECK(rf_optim_layout_get(&c, &l) == RF_OK, "layout %zu", w);
        CHECK(l.num_slots == want[w].num_slots &&
                  l.num_scalars == want[w].num_scalars &&
                  !strcmp(l.tf_name, want[w].tf_name),
              "layout %zu: %u slots, %u scalars, %s", w, l.num_slots,
              l.num_scalars, l.tf_name);
        for (unsigned s = 0; s < l.num_slots && s < 3; s++) {
            CHECK(!strcmp(l.slots[s].name, want[w].names[s]) &&
                      l.slots[s].initial_value == want[w].init[s],
                  "layout %zu slot %u: %s = %g", w, s, l.slots[s].name,
                  (double)l.slots[s].initial_value);
            float buf[5] = {-7, -7, -7, -7, -7};
            CHECK(rf_optim_slot_init(&c, s, buf, 4) == RF_OK, "slot init");
            for (int i = 0; i < 4; i++)
                CHECK(buf[i] == want[w].init[s], "slot %u elem %d = %g", s, i,
                      (double)buf[i]);
            CHECK(buf[4] == -7, "slot init wrote past n");
        }
        float x;
        CHECK(rf_optim_slot_init(&c, l.num_slots, &x, 1) ==
                      RF_ERR_INVALID_ARG &&
                  has("no slot"),
              "slot index past the layout: '%s'", rf_error_message());
    }

    /* Adagrad's accumulator starts at the configured value. */
    rf_optim_config c;
    rf_optim_defaults(RF_OPTIM_ADAGRAD, &c);
    c.learning_rate = 0.1f;
    c.initial_accumulator_value = 0.25f;
    float acc[3];
    CHECK(rf_optim_slot_init(&c, 0, acc, 3) == RF_OK && acc[0] == 0.25f &&
              acc[2] == 0.25f,
          "adagrad accumulator %g", (double)acc[0]);
    CHECK(rf_optim_slot_init(&c, 0, NULL, 3) == RF_ERR_INVALID_ARG, "NULL");
    CHECK(rf_optim_slot_init(&c, 0, NULL, 0) == RF_OK, "empty");
}

static void test_scalars(void)
{
    rf_optim_config c;
    rf_optim_defaults(RF_OPTIM_ADAM, &c);
    rf_optim_scalars s;
    CHECK(rf_optim_scalars_init(&c, &s) == RF_OK && s.beta1_power == 0.9f &&
              s.beta2_power == 0.999f,
          "adam beta powers start at beta1, beta2");
    /* _finish multiplies in float: after t finishes, the product of t + 1
     * float betas, evaluated left to right, with subnormal results flushed
     * to zero as TensorFlow's executor does (beta1_power leaves the normal
     * range at t = 828). */
    float p1 = 0.9f, p2 = 0.999f;
    for (int t = 1; t <= 1000; t++) {
        CHECK(rf_optim_finish_step(&c, &s) == RF_OK, "finish");
        p1 = p1 * 0.9f;
        p2 = p2 * 0.999f;
        if (fabsf(p1) < FLT_MIN)
            p1 = 0.0f;
        if (s.beta1_power != p1 || s.beta2_power != p2) {
            CHECK(false, "step %d: %g %g", t, (double)s.beta1_power,
                  (double)s.beta2_power);
            break;
        }
    }
    CHECK_NEAR(s.beta2_power, pow(0.999, 1001), 1e-4, 0, "beta2_power^1001");

    rf_optim_defaults(RF_OPTIM_SGD, &c);
    c.learning_rate = 0.1f;
    CHECK(rf_optim_scalars_init(&c, &s) == RF_OK && s.beta1_power == 0.0f,
          "sgd scalars zero");
    CHECK(rf_optim_finish_step(&c, &s) == RF_OK && s.beta1_power == 0.0f,
          "sgd finish is a no-op");
    CHECK(rf_optim_finish_step(&c, NULL) == RF_ERR_INVALID_ARG, "NULL");
}

static void test_apply_arguments(void)
{
    rf_optim_config c;
    rf_optim_defaults(RF_OPTIM_ADAM, &c);
    float var[8] = {0}, grad[8] = {0}, m[8] = {0}, v[8] = {0};
    float *slots[] = {m, v};
    rf_optim_scalars sc;
    rf_optim_scalars_init(&c, &sc);

    CHECK(rf_optim_apply(&c, var, slots, grad, 8, &sc) == RF_OK, "valid");
    CHECK(rf_optim_apply(&c, var, slots, grad, 8, NULL) == RF_ERR_INVALID_ARG &&
              has("beta powers"),
          "adam without scalars: '%s'", rf_error_message());
    rf_optim_scalars bad = {1.0f, 0.5f};
    CHECK(rf_optim_apply(&c, var, slots, grad, 8, &bad) == RF_ERR_INVALID_ARG &&
              has("beta1_power"),
          "beta1_power 1: '%s'", rf_error_message());
    CHECK(rf_optim_apply(&c, NULL, slots, grad, 8, &sc) == RF_ERR_INVALID_ARG &&
              has("var is NULL"),
          "NULL var: '%s'", rf_error_message());
    CHECK(rf_optim_apply(&c, var, NULL, grad, 8, &sc) == RF_ERR_INVALID_ARG &&
              has("slots NULL"),
          "NULL slots: '%s'", rf_error_message());
    float *slots_null_v[] = {m, NULL};
    CHECK(rf_optim_apply(&c, var, slots_null_v, grad, 8, &sc) ==
                  RF_ERR_INVALID_ARG &&
              has("v is NULL"),
          "NULL v: '%s'", rf_error_message());
    /* m and v overlapping inside one array (12 floats: v = m + 4 stays in
     * bounds, so the only overlap there is is m's with v's) */
    float mv[12] = {0};
    float *slots_alias[] = {mv, mv + 4};
    CHECK(rf_optim_apply(&c, var, slots_alias, grad, 8, &sc) ==
                  RF_ERR_INVALID_ARG &&
              has("m and v overlap"),
          "overlap: '%s'", rf_error_message());
    CHECK(rf_optim_apply(&c, var, slots, var, 8, &sc) == RF_ERR_INVALID_ARG &&
              has("overlap"),
          "grad aliasing var: '%s'", rf_error_message());
    /* Adjacent (touching, not overlapping) arrays are fine. */
    float block[16] = {0};
    float *adjacent[] = {m, v};
    CHECK(rf_optim_apply(&c, block, adjacent, block + 8, 8, &sc) == RF_OK,
          "adjacent arrays");
    /* n = 0 touches nothing, even with NULL arrays. */
    CHECK(rf_optim_apply(&c, NULL, NULL, NULL, 0, &sc) == RF_OK, "n = 0");

    rf_optim_defaults(RF_OPTIM_SGD, &c);
    c.learning_rate = 1.0f;
    grad[0] = 2.0f;
    CHECK(rf_optim_apply(&c, var, NULL, grad, 1, NULL) == RF_OK &&
              var[0] == -2.0f,
          "sgd needs no slots or scalars");
}

/* Subnormals are flushed inside rf_optim_apply (TensorFlow's
 * ScopedFlushDenormal), and only there. Adam's first moment of a weight
 * whose gradient stays zero, m -= m * (1 - beta1), would otherwise decay
 * into the subnormal range and stick at a few ulps there (0.9 * 4 ulp
 * rounds back to 4 ulp), every later update taking the slow path; flushed,
 * the decrement underflows to zero first and m stays a normal float. The
 * caller's floating-point mode is left as it was. */
static void test_flush_denormals(void)
{
    rf_optim_config c;
    rf_optim_defaults(RF_OPTIM_ADAM, &c);
    rf_optim_scalars sc;
    CHECK(rf_optim_scalars_init(&c, &sc) == RF_OK, "scalars");
    float var[2] = {0.5f, -0.5f}, m[2] = {1e-30f, -1e-30f}, v[2] = {1, 1};
    const float grad[2] = {0, 0};
    float *slots[2] = {m, v};
    for (int t = 0; t < 1000; t++)
        CHECK(rf_optim_apply(&c, var, slots, grad, 2, &sc) == RF_OK, "apply");
    CHECK(fpclassify(m[0]) != FP_SUBNORMAL &&
              fpclassify(m[1]) != FP_SUBNORMAL && fabsf(m[0]) < 1e-36f,
          "adam m with zero gradients ends at %g, %g: subnormal, or did not "
          "decay (want 0 or a normal float below 1e-36)",
          (double)m[0], (double)m[1]);
    volatile float tiny = FLT_MIN;
    volatile float half = tiny / 2.0f;
    CHECK(half != 0.0f && fpclassify(half) == FP_SUBNORMAL,
          "the caller's mode changed: FLT_MIN / 2 = %g", (double)half);
}

int main(void)
{
    test_defaults();
    test_validation();
    test_parse_and_format();
    test_layouts();
    test_scalars();
    test_apply_arguments();
    test_flush_denormals();
    printf("unit.optim.config: all checks passed\n");
    return 0;
}
