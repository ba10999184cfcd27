/* tests/unit/graph/test_graph_minimize.c: Optimizer.minimize and
 * apply_gradients: TensorFlow's slot and op names, slot initial values,
 * colocation with the variable, global_step incremented once per step,
 * Adam's beta powers advanced once per step, and, for every optimizer, a
 * few graph steps bitwise equal to calling the optim/ kernels directly on
 * the same gradients. */
#include "graph_test.h"

static rf_executor *ex;

static rf_status set_ps(void *ctx, const rf_node *node, char *device,
                        size_t cap)
{
    (void)ctx;
    if (rf_node_op(node) == RF_OP_VARIABLE)
        snprintf(device, cap, "/job:ps/task:0");
    return RF_OK;
}

static void test_names_and_slots(rf_optimizer_kind kind, bool centered,
                                 const char *const *want_slots, int nslots,
                                 float slot0_init)
{
    rf_graph *g;
    CHECK_OK(rf_graph_create(&g));
    CHECK_OK(rf_device_fn_push(g, set_ps, NULL));
    rf_node *w = rf_variable(g, RF_F32, RF_SHAPE(3), rf_init_constant(1), "W");
    rf_node *b =
        rf_variable(g, RF_F32, RF_SHAPE(3), rf_init_constant(2), "A_bias");
    rf_device_fn_pop(g);
    rf_node *loss =
        rf_reduce_sum(g, rf_mul(g, w, b, NULL), NULL, 0, false, "loss");
    rf_optim_config cfg;
    CHECK_OK(rf_optim_defaults(kind, &cfg));
    cfg.learning_rate = 0.1f;
    cfg.momentum = 0.5f;
    cfg.centered = centered;
    rf_node *gs = rf_global_step(g);
    rf_node *train = NULL;
    CHECK_OK(rf_minimize(g, &cfg, loss, gs, &train));
    rf_optim_layout lay;
    rf_optim_layout_get(&cfg, &lay);
    const char *tf = lay.tf_name;
    CHECK(train && !strcmp(rf_node_name(train), tf) &&
              rf_node_op(train) == RF_OP_ASSIGN_ADD,
          "train op %s (%s)", train ? rf_node_name(train) : "",
          train ? rf_node_op_name(train) : "");
    for (int i = 0; i < nslots; i++) {
        rf_node *s = rf_graph_find(g, want_slots[i]);
        CHECK(s && rf_node_op(s) == RF_OP_VARIABLE, "%s: no slot %s", tf,
              want_slots[i]);
        if (!s)
            continue;
        CHECK(!rf_variable_trainable(s) && rf_node_colocated_with(s) == w &&
                  !strcmp(rf_node_requested_device(s), "/job:ps/task:0"),
              "%s: slot %s placement", tf, want_slots[i]);
        CHECK(rf_variable_slot_primary(s) == w, "%s primary", want_slots[i]);
    }
    if (nslots) {
        rf_node *s0 = rf_variable_get_slot(w, lay.slots[0].name);
        CHECK(s0 && !strcmp(rf_node_name(s0), want_slots[0]), "get_slot(%s)",
              lay.slots[0].name);
        CHECK_OK(rf_graph_initialize_variables(g));
        CHECK(s0 && ((float *)rf_variable_data(s0))[2] == slot0_init,
              "%s initial %g", want_slots[0],
              s0 ? ((float *)rf_variable_data(s0))[2] : -1.0f);
    }
    char apply_name[128];
    snprintf(apply_name, sizeof apply_name, "%s/update_W/", tf);
    rf_node *ap = NULL;
    for (size_t i = 0; i < rf_graph_num_nodes(g); i++) {
        rf_node *n = rf_graph_node(g, i);
        if (rf_node_op(n) == RF_OP_APPLY_OPTIMIZER &&
            !strncmp(rf_node_name(n), apply_name, strlen(apply_name)))
            ap = n;
    }
    CHECK(ap && rf_node_colocated_with(ap) == w, "%s: apply op for W", tf);
    rf_apply_info info;
    if (ap) {
        CHECK_OK(rf_node_apply_info(ap, &info));
        CHECK(info.var == w && info.num_slots == lay.num_slots &&
                  info.cfg->kind == kind,
              "apply info");
        CHECK((kind == RF_OPTIM_ADAM) == (info.beta1_power != NULL),
              "beta powers");
    }
    if (kind == RF_OPTIM_ADAM) {
        rf_node *b1 = rf_graph_find(g, "beta1_power");
        /* colocated with the first variable by name: A_bias */
        CHECK(b1 && rf_node_colocated_with(b1) == b, "beta1_power placement");
    }
    rf_graph_destroy(g);
}

/* Three steps through the graph vs the kernels called directly. The loss
 * sum(W * C) has the constant gradient C. */
static void test_against_kernels(rf_optimizer_kind kind, bool flag)
{
    enum { N = 70000 }; /* several apply chunks */
    rf_graph *g;
    CHECK_OK(rf_graph_create(&g));
    float *c = malloc(N * sizeof *c), *w0 = malloc(N * sizeof *w0);
    test_fill(c, N, -1, 1);
    test_fill(w0, N, -1, 1);
    rf_node *w = rf_variable(g, RF_F32, RF_SHAPE(N), rf_init_zeros(), "w");
    rf_node *C = rf_const(g, RF_F32, RF_SHAPE(N), c, "C");
    rf_node *loss =
        rf_reduce_sum(g, rf_mul(g, w, C, NULL), NULL, 0, false, NULL);
    rf_optim_config cfg;
    CHECK_OK(rf_optim_defaults(kind, &cfg));
    cfg.learning_rate = 0.05f;
    if (kind == RF_OPTIM_MOMENTUM) {
        cfg.momentum = 0.9f;
        cfg.use_nesterov = flag;
    }
    if (kind == RF_OPTIM_RMSPROP) {
        cfg.centered = flag;
        cfg.momentum = 0.3f;
    }
    rf_node *gs = rf_global_step(g), *train;
    CHECK_OK(rf_minimize(g, &cfg, loss, gs, &train));
    CHECK_OK(rf_graph_initialize_variables(g));
    memcpy(rf_variable_data(w), w0, N * sizeof *w0);

    /* reference */
    rf_optim_layout lay;
    rf_optim_layout_get(&cfg, &lay);
    float *ref = malloc(N * sizeof *ref), *slots[RF_OPTIM_MAX_SLOTS] = {0};
    memcpy(ref, w0, N * sizeof *ref);
    for (unsigned s = 0; s < lay.num_slots; s++) {
        slots[s] = malloc(N * sizeof(float));
        rf_optim_slot_init(&cfg, s, slots[s], N);
    }
    rf_optim_scalars sc;
    rf_optim_scalars_init(&cfg, &sc);

    rf_plan *p;
    CHECK_OK(rf_plan_create(ex, g, NULL, 0, NULL, 0, &train, 1, &p));
    for (int step = 0; step < 3; step++) {
        CHECK_OK(rf_plan_run(p, NULL, NULL));
        CHECK_OK(rf_optim_apply(&cfg, ref, slots, c, N, &sc));
        rf_optim_finish_step(&cfg, &sc);
    }
    CHECK(memcmp(ref, rf_variable_data(w), N * sizeof *ref) == 0,
          "%s%s: graph steps differ from the kernels", rf_optim_kind_name(kind),
          flag ? " (flag)" : "");
    for (unsigned s = 0; s < lay.num_slots; s++) {
        rf_node *sv = rf_variable_get_slot(w, lay.slots[s].name);
        CHECK(sv && !memcmp(slots[s], rf_variable_data(sv), N * sizeof(float)),
              "%s slot %s differs", rf_optim_kind_name(kind),
              lay.slots[s].name);
        free(slots[s]);
    }
    CHECK(*(int64_t *)rf_variable_data(gs) == 3, "global_step %lld",
          (long long)*(int64_t *)rf_variable_data(gs));
    if (kind == RF_OPTIM_ADAM) {
        float b1 = *(float *)rf_variable_data(rf_graph_find(g, "beta1_power"));
        float b2 = *(float *)rf_variable_data(rf_graph_find(g, "beta2_power"));
        CHECK(b1 == sc.beta1_power && b2 == sc.beta2_power &&
                  fabs(b1 - pow(0.9, 4)) < 1e-6,
              "beta powers %g %g", b1, b2);
    }
    rf_plan_destroy(p);
    free(ref);
    free(c);
    free(w0);
    rf_graph_destroy(g);
}

static void test_sgd_by_hand(void)
{
    /* loss = mean((x W - t)^2) on a 2x2 example, one step of lr 0.5 */
    rf_graph *g;
    CHECK_OK(rf_graph_create(&g));
    float xv[] = {1, 2}, tv[] = {1};
    rf_node *x = rf_const(g, RF_F32, RF_SHAPE(1, 2), xv, NULL);
    rf_node *t = rf_const(g, RF_F32, RF_SHAPE(1, 1), tv, NULL);
    rf_node *w =
        rf_variable(g, RF_F32, RF_SHAPE(2, 1), rf_init_constant(0.5), "w");
    rf_node *d = rf_sub(g, rf_matmul(g, x, w, false, false, NULL), t, NULL);
    rf_node *loss =
        rf_reduce_mean(g, rf_mul(g, d, d, NULL), NULL, 0, false, NULL);
    rf_optim_config cfg;
    rf_optim_defaults(RF_OPTIM_SGD, &cfg);
    cfg.learning_rate = 0.5f;
    rf_node *train;
    CHECK_OK(rf_minimize(g, &cfg, loss, NULL, &train));
    CHECK(train && rf_node_op(train) == RF_OP_NO_OP &&
              !strcmp(rf_node_name(train), "GradientDescent"),
          "train op without global_step: %s", train ? rf_node_name(train) : "");
    CHECK_OK(rf_graph_initialize_variables(g));
    rf_plan *p;
    CHECK_OK(rf_plan_create(ex, g, NULL, 0, NULL, 0, &train, 1, &p));
    CHECK_OK(rf_plan_run(p, NULL, NULL));
    /* xW - t = 1.5 - 1 = 0.5; dL/dW = 2 * 0.5 * x = (1, 2);
     * W = 0.5 - 0.5 * (1, 2) = (0, -0.5) */
    float *wv = rf_variable_data(w);
    CHECK(wv[0] == 0.0f && wv[1] == -0.5f, "sgd step: %g %g", wv[0], wv[1]);
    rf_plan_destroy(p);

    /* nothing to train */
    rf_node *lone = rf_reduce_sum(g, x, NULL, 0, false, NULL);
    rf_node *t2;
    CHECK(rf_minimize(g, &cfg, lone, NULL, &t2) == RF_ERR_INVALID_ARG &&
              strstr(rf_error_message(), "No gradients provided"),
          "no gradients: %s", rf_error_message());
    /* an invalid config is refused */
    cfg.learning_rate = -1;
    CHECK(rf_minimize(g, &cfg, loss, NULL, &t2) == RF_ERR_INVALID_ARG,
          "negative learning rate");
    rf_graph_destroy(g);
}

int main(void)
{
    rf_executor_options o = {.threads = 2};
    CHECK_OK(rf_executor_create(&o, &ex));
    test_seed(3);
    const char *mom[] = {"W/Momentum"}, *ada[] = {"W/Adagrad"},
               *adam[] = {"W/Adam", "W/Adam_1", "beta1_power", "beta2_power"},
               *rms[] = {"W/RMSProp", "W/RMSProp_1"},
               *crms[] = {"W/RMSProp", "W/RMSProp_1", "W/RMSProp_2"},
               *ftrl[] = {"W/Ftrl", "W/Ftrl_1"};
    test_names_and_slots(RF_OPTIM_SGD, false, NULL, 0, 0);
    test_names_and_slots(RF_OPTIM_MOMENTUM, false, mom, 1, 0);
    test_names_and_slots(RF_OPTIM_ADAGRAD, false, ada, 1, 0.1f);
    test_names_and_slots(RF_OPTIM_ADAM, false, adam, 2, 0);
    test_names_and_slots(RF_OPTIM_RMSPROP, false, rms, 2, 1.0f);
    test_names_and_slots(RF_OPTIM_RMSPROP, true, crms, 3, 1.0f);
    test_names_and_slots(RF_OPTIM_FTRL, false, ftrl, 2, 0.1f);
    for (int k = 0; k < RF_OPTIM_KIND_COUNT; k++) {
        test_against_kernels((rf_optimizer_kind)k, false);
        if (k == RF_OPTIM_MOMENTUM || k == RF_OPTIM_RMSPROP)
            test_against_kernels((rf_optimizer_kind)k, true);
    }
    test_sgd_by_hand();
    rf_executor_destroy(ex);
    printf("graph minimize: all checks passed\n");
    return 0;
}
