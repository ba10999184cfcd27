/* tests/unit/graph/test_graph_build.c: building graphs: the op table,
 * TensorFlow's unique naming and name scopes, shape inference with unknown
 * dimensions, shape errors that name the op and both shapes, sticky error
 * propagation, device functions / colocation / control dependencies,
 * variable initializers, layer helpers and gradient naming. */
#include "graph_test.h"

static void test_op_table(void)
{
    for (int i = 0; i < RF_OP_COUNT; i++) {
        const char *n = rf_op_name((rf_op_type)i);
        CHECK(n && strcmp(n, "?") != 0, "op %d has no name", i);
        for (int j = 0; j < i; j++)
            CHECK(strcmp(n, rf_op_name((rf_op_type)j)) != 0,
                  "ops %d and %d are both %s", i, j, n);
    }
    CHECK(strcmp(rf_op_name(RF_OP_COUNT), "?") == 0, "out of range name");
    CHECK(rf_op_is_differentiable(RF_OP_MATMUL), "MatMul differentiable");
    CHECK(!rf_op_is_differentiable(RF_OP_ARGMAX), "ArgMax not");
}

static void test_naming(void)
{
    rf_graph *g;
    CHECK_OK(rf_graph_create(&g));
    rf_node *a = rf_placeholder(g, RF_F32, RF_SHAPE(2, 2), "a");
    rf_node *m0 = rf_matmul(g, a, a, false, false, NULL);
    rf_node *m1 = rf_matmul(g, a, a, false, false, NULL);
    rf_node *m2 = rf_matmul(g, a, a, false, false, "MatMul");
    CHECK(!strcmp(rf_node_name(m0), "MatMul"), "%s", rf_node_name(m0));
    CHECK(!strcmp(rf_node_name(m1), "MatMul_1"), "%s", rf_node_name(m1));
    CHECK(!strcmp(rf_node_name(m2), "MatMul_2"), "%s", rf_node_name(m2));
    /* case-insensitive like TF, and TF's skip over explicit suffixes */
    rf_node *A = rf_identity(g, a, "A");
    CHECK(!strcmp(rf_node_name(A), "A_1"), "%s", rf_node_name(A));
    rf_node *f1 = rf_identity(g, a, "foo_1");
    rf_node *f = rf_identity(g, a, "foo");
    rf_node *f2 = rf_identity(g, a, "foo");
    CHECK(!strcmp(rf_node_name(f1), "foo_1") &&
              !strcmp(rf_node_name(f), "foo") &&
              !strcmp(rf_node_name(f2), "foo_2"),
          "%s %s %s", rf_node_name(f1), rf_node_name(f), rf_node_name(f2));
    /* name scopes, made unique, nested */
    CHECK_OK(rf_name_scope_push(g, "dense"));
    rf_node *d = rf_relu(g, a, NULL);
    CHECK_OK(rf_name_scope_push(g, "inner"));
    rf_node *di = rf_relu(g, a, NULL);
    rf_name_scope_pop(g);
    rf_name_scope_pop(g);
    CHECK_OK(rf_name_scope_push(g, "dense"));
    rf_node *d1 = rf_relu(g, a, NULL);
    rf_name_scope_pop(g);
    CHECK(!strcmp(rf_node_name(d), "dense/Relu"), "%s", rf_node_name(d));
    CHECK(!strcmp(rf_node_name(di), "dense/inner/Relu"), "%s",
          rf_node_name(di));
    CHECK(!strcmp(rf_node_name(d1), "dense_1/Relu"), "%s", rf_node_name(d1));
    CHECK(!strcmp(rf_name_scope(g), ""), "scope restored");
    /* re-entering a scope verbatim, and verbatim node names */
    CHECK_OK(rf_name_scope_push(g, "dense/"));
    rf_node *d2 = rf_relu(g, a, NULL);
    rf_name_scope_pop(g);
    CHECK(!strcmp(rf_node_name(d2), "dense/Relu_1"), "%s", rf_node_name(d2));
    rf_node *exact = rf_identity(g, a, "exact/");
    CHECK(exact && !strcmp(rf_node_name(exact), "exact"), "verbatim");
    CHECK(rf_identity(g, a, "exact/") == NULL, "duplicate verbatim accepted");
    rf_graph_clear_error(g);
    CHECK(rf_identity(g, a, "bad name") == NULL, "space in a name accepted");
    rf_graph_clear_error(g);
    CHECK(rf_graph_find(g, "dense_1/Relu") == d1, "find");
    CHECK(rf_node_id(d1) < rf_graph_num_nodes(g) &&
              rf_graph_node(g, rf_node_id(d1)) == d1,
          "ids");
    rf_graph_destroy(g);
}

static void test_shapes_and_errors(void)
{
    rf_graph *g;
    CHECK_OK(rf_graph_create(&g));
    rf_node *x = rf_placeholder(g, RF_F32, RF_SHAPE(-1, 784), "x");
    rf_node *w = rf_variable(g, RF_F32, RF_SHAPE(784, 256),
                             rf_init_glorot_uniform(), "w");
    rf_node *h = rf_matmul(g, x, w, false, false, NULL);
    rf_shape s = rf_node_shape(h);
    CHECK(s.rank == 2 && s.dims[0] == -1 && s.dims[1] == 256, "partial");
    char buf[64];
    rf_shape_format(&s, buf, sizeof buf);
    CHECK(!strcmp(buf, "[?,256]"), "format %s", buf);
    rf_node *b = rf_add(g, h, rf_const_f32(g, 1, NULL), NULL);
    CHECK(rf_node_shape(b).dims[0] == -1, "broadcast keeps unknown");
    CHECK(rf_graph_status(g) == RF_OK, "no error yet");

    /* a shape error names the op and both shapes */
    float z[20] = {0};
    rf_node *p = rf_const(g, RF_F32, RF_SHAPE(2, 3), z, "p");
    rf_node *q = rf_const(g, RF_F32, RF_SHAPE(4, 5), z, "q");
    rf_node *bad = rf_matmul(g, p, q, false, false, "dense/MatMul");
    CHECK(bad == NULL, "mismatched matmul built");
    CHECK(rf_graph_status(g) == RF_ERR_INVALID_ARG, "status %s",
          rf_status_string(rf_graph_status(g)));
    const char *msg = rf_graph_error(g);
    CHECK(strstr(msg, "MatMul 'dense/MatMul'") && strstr(msg, "[2,3]") &&
              strstr(msg, "[4,5]"),
          "message: %s", msg);
    CHECK(strstr(rf_error_message(), "MatMul 'dense/MatMul'") != NULL,
          "thread message: %s", rf_error_message());
    /* later builders propagate NULL quietly; the first error is kept */
    rf_node *later = rf_relu(g, bad, NULL);
    CHECK(later == NULL && strstr(rf_graph_error(g), "dense/MatMul"),
          "sticky: %s", rf_graph_error(g));
    rf_graph_clear_error(g);

    struct {
        const char *what, *needle;
        rf_node *n;
    } cases[6];
    int nc = 0;
    cases[nc].what = "add";
    cases[nc].needle = "Add 'bad_add'";
    cases[nc++].n = rf_add(g, p, q, "bad_add");
    rf_graph_clear_error(g);
    rf_node *img = rf_placeholder(g, RF_F32, RF_SHAPE(-1, 28, 28, 1), "img");
    rf_node *f3 =
        rf_variable(g, RF_F32, RF_SHAPE(5, 5, 3, 8), rf_init_zeros(), "f3");
    cases[nc].what = "conv";
    cases[nc].needle = "Conv2D 'Conv2D'";
    cases[nc++].n = rf_conv2d(g, img, f3, 1, 1, RF_PADDING_SAME, NULL);
    rf_graph_clear_error(g);
    cases[nc].what = "bias";
    cases[nc].needle = "BiasAdd 'BiasAdd'";
    cases[nc++].n =
        rf_bias_add(g, p, rf_const(g, RF_F32, RF_SHAPE(4), z, NULL), NULL);
    rf_graph_clear_error(g);
    cases[nc].what = "reshape";
    cases[nc].needle = "Reshape 'Reshape'";
    cases[nc++].n = rf_reshape(g, p, RF_SHAPE(4, -1), NULL);
    rf_graph_clear_error(g);
    cases[nc].what = "valid window";
    cases[nc].needle = "MaxPool 'MaxPool'";
    cases[nc++].n = rf_max_pool(g, img, 30, 30, 1, 1, RF_PADDING_VALID, NULL);
    rf_graph_clear_error(g);
    rf_node *fl = rf_placeholder(g, RF_F32, RF_SHAPE(4), "fl");
    cases[nc].what = "xent labels";
    cases[nc].needle = "labels must be int32 or int64";
    cases[nc++].n = rf_sparse_softmax_cross_entropy_with_logits(g, fl, p, NULL);
    for (int i = 0; i < nc; i++)
        CHECK(cases[i].n == NULL, "%s built", cases[i].what);
    /* each message was checked when it happened: re-run to inspect */
    rf_graph_clear_error(g);
    CHECK(rf_add(g, p, q, "bad_add2") == NULL &&
              strstr(rf_graph_error(g), "Add 'bad_add2'") &&
              strstr(rf_graph_error(g), "[2,3] vs [4,5]"),
          "add message: %s", rf_graph_error(g));
    rf_graph_clear_error(g);
    CHECK(rf_conv2d(g, img, f3, 1, 1, RF_PADDING_SAME, "c") == NULL &&
              strstr(rf_graph_error(g), "Conv2D 'c'") &&
              strstr(rf_graph_error(g), "[?,28,28,1]") &&
              strstr(rf_graph_error(g), "[5,5,3,8]"),
          "conv message: %s", rf_graph_error(g));
    rf_graph_clear_error(g);
    /* run-time shape errors name the op too */
    rf_node *pa = rf_placeholder(g, RF_F32, RF_SHAPE(-1, 3), "pa");
    rf_node *pb = rf_placeholder(g, RF_F32, RF_SHAPE(-1, 3), "pb");
    rf_node *sum = rf_add(g, pa, pb, "sum");
    rf_executor *ex;
    rf_executor_options o = {.threads = 1};
    CHECK_OK(rf_executor_create(&o, &ex));
    rf_plan *plan;
    rf_node *feeds[2] = {pa, pb};
    CHECK_OK(rf_plan_create(ex, g, &sum, 1, feeds, 2, NULL, 0, &plan));
    rf_tensor fv[2] = {rf_tensor_make(RF_F32, RF_SHAPE(2, 3), z),
                       rf_tensor_make(RF_F32, RF_SHAPE(4, 3), z)};
    rf_tensor out;
    CHECK(rf_plan_run(plan, fv, &out) == RF_ERR_INVALID_ARG, "ran");
    CHECK(strstr(rf_error_message(), "Add 'sum'") &&
              strstr(rf_error_message(), "[2,3] vs [4,3]"),
          "run-time message: %s", rf_error_message());
    rf_plan_destroy(plan);
    rf_executor_destroy(ex);
    rf_graph_destroy(g);
}

static rf_status ps_for_variables(void *ctx, const rf_node *node, char *device,
                                  size_t cap)
{
    int *counter = ctx;
    if (rf_node_op(node) == RF_OP_VARIABLE)
        snprintf(device, cap, "/job:ps/task:%d", (*counter)++ % 2);
    else if (!device[0])
        snprintf(device, cap, "/job:worker");
    return RF_OK;
}

static rf_status fail_device(void *ctx, const rf_node *node, char *device,
                             size_t cap)
{
    (void)ctx;
    (void)node;
    (void)device;
    (void)cap;
    return RF_ERR_INVALID_ARG;
}

static void test_devices_and_deps(void)
{
    rf_graph *g;
    CHECK_OK(rf_graph_create(&g));
    int counter = 0;
    CHECK_OK(rf_device_fn_push(g, ps_for_variables, &counter));
    rf_node *v0 = rf_variable(g, RF_F32, RF_SHAPE(2), rf_init_zeros(), "v0");
    rf_node *v1 = rf_variable(g, RF_F32, RF_SHAPE(2), rf_init_zeros(), "v1");
    rf_node *r = rf_relu(g, v0, NULL);
    CHECK(!strcmp(rf_node_requested_device(v0), "/job:ps/task:0") &&
              !strcmp(rf_node_requested_device(v1), "/job:ps/task:1") &&
              !strcmp(rf_node_requested_device(r), "/job:worker"),
          "devices %s %s %s", rf_node_requested_device(v0),
          rf_node_requested_device(v1), rf_node_requested_device(r));
    /* colocation skips device functions (so no counter advance) */
    CHECK_OK(rf_colocation_push(g, v1));
    rf_node *slot = rf_variable(g, RF_F32, RF_SHAPE(2), rf_init_zeros(), "s");
    rf_colocation_pop(g);
    CHECK(rf_node_colocated_with(slot) == v1 &&
              !strcmp(rf_node_requested_device(slot), "/job:ps/task:1") &&
              counter == 2,
          "colocation: %s counter %d", rf_node_requested_device(slot), counter);
    /* tf.device(None) stops the walk */
    CHECK_OK(rf_device_fn_push(g, NULL, NULL));
    rf_node *free_node = rf_relu(g, v0, NULL);
    CHECK(!strcmp(rf_node_requested_device(free_node), ""), "device(None)");
    rf_device_fn_pop(g);
    rf_device_fn_pop(g);
    /* a failing device function fails the creation */
    CHECK_OK(rf_device_fn_push(g, fail_device, NULL));
    CHECK(rf_relu(g, v0, NULL) == NULL, "device error ignored");
    rf_device_fn_pop(g);
    rf_graph_clear_error(g);
    CHECK_OK(rf_node_set_assigned_device(r, "/job:worker/replica:0/task:0/"
                                            "device:CPU:0"));
    CHECK(!strcmp(rf_node_assigned_device(r),
                  "/job:worker/replica:0/task:0/device:CPU:0"),
          "assigned");
    char line[256];
    rf_node_format(r, line, sizeof line);
    CHECK(!strcmp(line, "Relu = Relu(v0) float32[2] "
                        "@/job:worker/replica:0/task:0/device:CPU:0"),
          "format: %s", line);
    /* control dependencies */
    rf_node *deps[2] = {v0, r};
    CHECK_OK(rf_control_dependencies_push(g, deps, 2));
    rf_node *c = rf_identity(g, v1, NULL);
    rf_control_dependencies_pop(g);
    rf_node *nc = rf_identity(g, v1, NULL);
    CHECK(rf_node_num_control_inputs(c) == 2 &&
              rf_node_control_input(c, 1) == r &&
              rf_node_num_control_inputs(nc) == 0,
          "control deps");
    rf_graph_destroy(g);
}

static void test_initializers(void)
{
    rf_graph *g, *h;
    CHECK_OK(rf_graph_create(&g));
    CHECK_OK(rf_graph_create(&h));
    rf_graph_set_seed(g, 42);
    rf_graph_set_seed(h, 42);
    /* h has unrelated ops first: the values must not change */
    rf_relu(h, rf_placeholder(h, RF_F32, RF_SHAPE(3), "junk"), NULL);
    rf_node *wg = rf_variable(g, RF_F32, RF_SHAPE(100, 50),
                              rf_init_glorot_uniform(), "w");
    rf_node *wh = rf_variable(h, RF_F32, RF_SHAPE(100, 50),
                              rf_init_glorot_uniform(), "w");
    rf_node *k = rf_variable(g, RF_F32, RF_SHAPE(5, 5, 4, 8),
                             rf_init_glorot_uniform(), "k");
    rf_node *t = rf_variable(g, RF_F32, RF_SHAPE(1000),
                             rf_init_truncated_normal(1.0, 0.5), "t");
    rf_node *c =
        rf_variable(g, RF_F32, RF_SHAPE(3), rf_init_constant(2.5), "c");
    rf_node *gs = rf_global_step(g);
    CHECK(rf_global_step(g) == gs && !rf_variable_trainable(gs) &&
              rf_node_dtype(gs) == RF_I64 &&
              !strcmp(rf_node_name(gs), "global_step"),
          "global step");
    CHECK(!rf_variable_is_initialized(wg), "initialized before init");
    CHECK_OK(rf_graph_initialize_variables(g));
    CHECK_OK(rf_graph_initialize_variables(h));
    CHECK(rf_variable_is_initialized(wg), "not initialized after init");
    const float *a = rf_variable_data(wg), *b = rf_variable_data(wh);
    CHECK(memcmp(a, b, rf_variable_bytes(wg)) == 0,
          "values depend on unrelated ops");
    double lim = sqrt(6.0 / 150), sum = 0, mx = 0;
    for (int i = 0; i < 5000; i++) {
        sum += a[i];
        mx = fmax(mx, fabs(a[i]));
    }
    CHECK(mx <= lim && mx > 0.9 * lim && fabs(sum / 5000) < 0.01,
          "glorot: max %g limit %g mean %g", mx, lim, sum / 5000);
    const float *kd = rf_variable_data(k);
    double klim = sqrt(6.0 / (4 * 25 + 8 * 25)), kmx = 0;
    for (int i = 0; i < 800; i++)
        kmx = fmax(kmx, fabs(kd[i]));
    CHECK(kmx <= klim && kmx > 0.8 * klim, "conv glorot %g vs %g", kmx, klim);
    const float *td = rf_variable_data(t);
    double tm = 0;
    for (int i = 0; i < 1000; i++) {
        CHECK(td[i] >= 0.0f && td[i] <= 2.0f, "truncated %g", td[i]);
        tm += td[i];
    }
    CHECK(fabs(tm / 1000 - 1.0) < 0.05, "truncated mean %g", tm / 1000);
    const float *cd = rf_variable_data(c);
    CHECK(cd[0] == 2.5f && cd[2] == 2.5f, "constant");
    CHECK(*(int64_t *)rf_variable_data(gs) == 0, "global step zero");
    /* another seed, other values */
    rf_graph_set_seed(h, 43);
    CHECK_OK(rf_variable_initialize(wh));
    CHECK(memcmp(a, rf_variable_data(wh), rf_variable_bytes(wg)) != 0,
          "seed ignored");
    rf_graph_destroy(g);
    rf_graph_destroy(h);
}

static void test_layers_and_gradient_names(void)
{
    rf_graph *g;
    CHECK_OK(rf_graph_create(&g));
    rf_node *x = rf_placeholder(g, RF_F32, RF_SHAPE(-1, 784), "x");
    rf_node *y = rf_placeholder(g, RF_I64, RF_SHAPE(-1), "y");
    rf_node *h = rf_dense(g, x, 16, RF_ACT_RELU, NULL);
    rf_node *o = rf_dense(g, h, 10, RF_ACT_NONE, NULL);
    CHECK(h && !strcmp(rf_node_name(h), "dense/Relu"), "%s",
          h ? rf_node_name(h) : "");
    CHECK(o && !strcmp(rf_node_name(o), "dense_1/BiasAdd"), "%s",
          o ? rf_node_name(o) : "");
    CHECK(rf_graph_find(g, "dense/kernel") && rf_graph_find(g, "dense/bias") &&
              rf_graph_find(g, "dense_1/MatMul"),
          "layer names");
    rf_node *vars[8];
    size_t nv = rf_graph_trainable_variables(g, vars, 8);
    CHECK(nv == 4 && !strcmp(rf_node_name(vars[0]), "dense/kernel") &&
              !strcmp(rf_node_name(vars[3]), "dense_1/bias"),
          "trainable %zu", nv);
    rf_node *loss = rf_reduce_mean(
        g, rf_sparse_softmax_cross_entropy_with_logits(g, y, o, NULL), NULL, 0,
        false, "loss");
    rf_node *unrelated =
        rf_variable(g, RF_F32, RF_SHAPE(3), rf_init_zeros(), "unrelated");
    rf_node *xs[3] = {vars[0], unrelated, vars[3]}, *gr[3];
    CHECK_OK(rf_gradients(g, loss, xs, 3, gr));
    CHECK(gr[0] && gr[2] && gr[1] == NULL, "None for unrelated");
    CHECK(gr[0] &&
              !strncmp(rf_node_name(gr[0]), "gradients/dense/MatMul_grad/", 28),
          "gradient name %s", gr[0] ? rf_node_name(gr[0]) : "");
    rf_shape gs = rf_node_shape(gr[0]);
    CHECK(gs.rank == 2 && gs.dims[0] == 784 && gs.dims[1] == 16, "grad shape");
    /* a second call gets its own scope */
    rf_node *g2;
    CHECK_OK(rf_gradients(g, loss, &vars[3], 1, &g2));
    CHECK(g2 && !strncmp(rf_node_name(g2), "gradients_1/", 12), "%s",
          g2 ? rf_node_name(g2) : "");
    /* conv layer + flatten + accuracy */
    rf_node *im = rf_placeholder(g, RF_F32, RF_SHAPE(-1, 28, 28, 1), "im");
    rf_node *c1 =
        rf_conv2d_layer(g, im, 4, 5, 5, 1, RF_PADDING_SAME, RF_ACT_RELU, NULL);
    rf_node *p1 = rf_max_pool(g, c1, 2, 2, 2, 2, RF_PADDING_SAME, NULL);
    rf_node *fl = rf_flatten(g, p1, NULL);
    rf_shape fs = rf_node_shape(fl);
    CHECK(fs.rank == 2 && fs.dims[0] == -1 && fs.dims[1] == 14 * 14 * 4,
          "flatten");
    CHECK(rf_graph_find(g, "conv2d/kernel") != NULL, "conv2d/kernel");
    rf_node *acc = rf_accuracy(g, o, y, NULL);
    CHECK(acc && rf_node_shape(acc).rank == 0, "accuracy scalar");
    CHECK(rf_graph_status(g) == RF_OK, "status: %s", rf_graph_error(g));
    rf_graph_destroy(g);
}

int main(void)
{
    test_op_table();
    test_naming();
    test_shapes_and_errors();
    test_devices_and_deps();
    test_initializers();
    test_layers_and_gradient_names();
    printf("graph build: all checks passed\n");
    return 0;
}
