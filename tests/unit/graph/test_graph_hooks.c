/* tests/unit/graph/test_graph_hooks.c: plan hooks (rf_plan_hook_node,
 * rf_plan_set_hooks, rf_plan_set_input_hook), the points where the distributed
 * runtime waits for a remote read before a consumer runs and pushes a gradient
 * as soon as it is made; and caller-timed trace spans (rf_trace_add_span,
 * rf_trace_set_thread_name) in the Chrome trace JSON. */
#include <json-c/json.h>
#include <stdatomic.h>
#include <unistd.h>

#include "graph_test.h"

typedef struct hook_log {
    rf_node *consumer, *produced, *var;
    const float *fill; /* what before() writes into var */
    atomic_int before_calls, after_calls;
    atomic_int kernel_saw_fill; /* set by after(): the value used the fill */
    float after_value[4];
    rf_status fail_with; /* before() fails with this when not RF_OK */
} hook_log;

static rf_status before(void *ctx, rf_node *node, const rf_tensor *value,
                        int tid)
{
    hook_log *h = ctx;
    CHECK(value == NULL, "before() got a value");
    CHECK(tid >= 0, "tid %d", tid);
    CHECK(node == h->consumer, "before() for %s", rf_node_name(node));
    atomic_fetch_add(&h->before_calls, 1);
    if (h->fail_with != RF_OK)
        return h->fail_with;
    /* a "remote read" landing in the variable's storage just in time */
    memcpy(rf_variable_data(h->var), h->fill, rf_variable_bytes(h->var));
    return RF_OK;
}

static rf_status after(void *ctx, rf_node *node, const rf_tensor *value,
                       int tid)
{
    hook_log *h = ctx;
    (void)tid;
    CHECK(node == h->produced, "after() for %s", rf_node_name(node));
    CHECK(value && value->dtype == RF_F32 && rf_shape_numel(&value->shape) == 4,
          "after() value");
    atomic_fetch_add(&h->after_calls, 1);
    if (value && value->data)
        memcpy(h->after_value, value->data, sizeof h->after_value);
    return RF_OK;
}

/* x [2,3] @ W [3,2] -> y; z = relu(y); loss = sum(z). Hooks: before MatMul
 * (fills W), after MatMul (sees y). */
static void test_hooks(int threads)
{
    rf_graph *g;
    CHECK_OK(rf_graph_create(&g));
    rf_node *x = rf_placeholder(g, RF_F32, RF_SHAPE(2, 3), "x");
    rf_node *w = rf_variable(g, RF_F32, RF_SHAPE(3, 2), rf_init_zeros(), "w");
    rf_node *y = rf_matmul(g, x, w, false, false, "y");
    rf_node *z = rf_relu(g, y, "z");
    rf_node *loss = rf_reduce_sum(g, z, NULL, 0, false, "loss");
    CHECK_OK(rf_graph_status(g));
    CHECK_OK(rf_graph_initialize_variables(g));
    rf_executor *ex;
    rf_executor_options eo = {.threads = threads};
    CHECK_OK(rf_executor_create(&eo, &ex));
    rf_plan *p;
    CHECK_OK(rf_plan_create(ex, g, &loss, 1, &x, 1, NULL, 0, &p));

    static const float fill[6] = {1, -2, 3, 4, -5, 6};
    hook_log h = {.consumer = y, .produced = y, .var = w, .fill = fill};
    /* sources cannot be hooked; nodes outside the plan neither */
    CHECK(rf_plan_hook_node(p, w, RF_HOOK_BEFORE) == RF_ERR_INVALID_ARG,
          "hooking a Variable");
    CHECK(rf_plan_hook_node(p, x, RF_HOOK_AFTER) == RF_ERR_INVALID_ARG,
          "hooking a fed node");
    rf_node *other = rf_neg(g, x, "outside");
    CHECK(rf_plan_hook_node(p, other, RF_HOOK_AFTER) == RF_ERR_INVALID_ARG,
          "hooking a node outside the plan");
    CHECK(rf_plan_contains(p, y) && !rf_plan_contains(p, other), "contains");
    CHECK(rf_plan_hook_node(p, y, 8u) == RF_ERR_INVALID_ARG, "bad mask");
    CHECK_OK(rf_plan_hook_node(p, y, RF_HOOK_BEFORE | RF_HOOK_AFTER));
    rf_plan_set_hooks(p, before, after, &h);

    const float xv[6] = {1, 2, 3, -1, 0.5f, 2};
    rf_tensor in = rf_tensor_make(RF_F32, RF_SHAPE(2, 3), (void *)xv);
    rf_tensor out;
    enum { RUNS = 5 };
    for (int r = 0; r < RUNS; r++) {
        /* W is zero before each run; only the hook makes it non-zero */
        memset(rf_variable_data(w), 0, rf_variable_bytes(w));
        CHECK_OK(rf_plan_run(p, &in, &out));
    }
    CHECK(atomic_load(&h.before_calls) == RUNS &&
              atomic_load(&h.after_calls) == RUNS,
          "hooks called %d/%d times, want %d each", h.before_calls,
          h.after_calls, RUNS);
    float want[4], sum = 0;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            float acc = 0;
            for (int k = 0; k < 3; k++)
                acc += xv[i * 3 + k] * fill[k * 2 + j];
            want[i * 2 + j] = acc;
            sum += acc > 0 ? acc : 0;
        }
    for (int i = 0; i < 4; i++)
        CHECK(fabsf(h.after_value[i] - want[i]) < 1e-5f,
              "after() saw y[%d] = %g, want %g (the before() fill)", i,
              h.after_value[i], want[i]);
    CHECK(fabsf(*rf_tensor_f32(&out) - sum) < 1e-4f, "loss %g, want %g",
          *rf_tensor_f32(&out), sum);

    /* a failing hook fails the run with its status and message */
    h.fail_with = RF_ERR_TIMEOUT;
    rf_status st = rf_plan_run(p, &in, &out);
    CHECK(st == RF_ERR_TIMEOUT, "failing hook: run returned %s",
          rf_status_string(st));
    CHECK(atomic_load(&h.after_calls) == RUNS,
          "after() ran although the run failed before the kernel");
    h.fail_with = RF_OK;
    CHECK_OK(rf_plan_run(p, &in, &out)); /* and the plan still works */

    rf_plan_destroy(p);
    rf_executor_destroy(ex);
    rf_graph_destroy(g);
}

/* The input hook: a Gather over a [1000, 2] table whose hook points the
 * kernel at a 2-row "gathered" table and at positions into it (what the
 * distributed session does with the rows it READ), for this run only. */
typedef struct inputs_log {
    rf_node *gather;
    rf_tensor rows, pos;
    atomic_int calls;
    size_t n_in;
} inputs_log;

static rf_status swap_inputs(void *ctx, rf_node *node, const rf_tensor **in,
                             size_t *n, int tid)
{
    inputs_log *h = ctx;
    (void)tid;
    CHECK(node == h->gather, "inputs() for %s", rf_node_name(node));
    h->n_in = *n;
    CHECK(*n == 2 && in[0]->shape.dims[0] == 1000 && in[1]->dtype == RF_I64,
          "inputs() got the node's inputs");
    atomic_fetch_add(&h->calls, 1);
    in[0] = &h->rows;
    in[1] = &h->pos;
    return RF_OK;
}

static void test_input_hook(void)
{
    rf_graph *g;
    CHECK_OK(rf_graph_create(&g));
    rf_node *ids = rf_placeholder(g, RF_I64, RF_SHAPE(3), "ids");
    rf_node *t =
        rf_variable(g, RF_F32, RF_SHAPE(1000, 2), rf_init_zeros(), "table");
    rf_node *gat = rf_gather(g, t, ids, "lookup");
    rf_node *y = rf_neg(g, gat, "y");
    CHECK_OK(rf_graph_status(g));
    CHECK_OK(rf_graph_initialize_variables(g));
    rf_executor *ex;
    rf_executor_options eo = {.threads = 2};
    CHECK_OK(rf_executor_create(&eo, &ex));
    rf_plan *p;
    CHECK_OK(rf_plan_create(ex, g, &y, 1, &ids, 1, NULL, 0, &p));
    static float rows[4] = {1, 2, 3, 4};
    static int64_t pos[3] = {1, 0, 1};
    inputs_log h = {.gather = gat};
    h.rows = rf_tensor_make(RF_F32, RF_SHAPE(2, 2), rows);
    h.pos = rf_tensor_make(RF_I64, RF_SHAPE(3), pos);
    CHECK_OK(rf_plan_hook_node(p, gat, RF_HOOK_INPUTS));
    rf_plan_set_input_hook(p, swap_inputs, &h);
    int64_t idv[3] = {999, 5, 7};
    rf_tensor in = rf_tensor_make(RF_I64, RF_SHAPE(3), idv), out;
    for (int r = 0; r < 2; r++) {
        CHECK_OK(rf_plan_run(p, &in, &out));
        const float *o = rf_tensor_f32(&out);
        static const float want[6] = {-3, -4, -1, -2, -3, -4};
        for (int i = 0; i < 6; i++)
            CHECK(o[i] == want[i], "run %d: y[%d] = %g, want %g", r, i, o[i],
                  want[i]);
    }
    CHECK(atomic_load(&h.calls) == 2, "inputs() called %d times", h.calls);
    /* the table itself was never read through: without the hook the
     * zero table gives zeros */
    rf_plan_set_input_hook(p, NULL, NULL);
    CHECK_OK(rf_plan_run(p, &in, &out));
    CHECK(rf_tensor_f32(&out)[0] == 0, "without the hook: %g",
          rf_tensor_f32(&out)[0]);
    rf_plan_destroy(p);
    rf_executor_destroy(ex);
    rf_graph_destroy(g);
}

static void test_spans(void)
{
    rf_trace *t;
    CHECK_OK(rf_trace_create(&t));
    rf_trace_set_process(t, 3, "worker 0");
    rf_trace_set_thread_name(t, 5, "pusher");
    uint64_t t0 = rf_trace_clock_ns();
    for (int step = 0; step < 3; step++) {
        rf_trace_add_span(t, "READ dense/kernel", "fabric",
                          "\"bytes\":802816,\"ps_task\":1", t0 + 1000u * step,
                          500, 0, (uint64_t)step);
        rf_trace_add_span(t, "FETCH_AND_ADD global_step", "fabric", NULL,
                          t0 + 1000u * step + 600, 50, 5, (uint64_t)step);
    }
    CHECK(rf_trace_num_events(t) == 6, "%zu events", rf_trace_num_events(t));
    char path[] = "/tmp/rf_spans_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    close(fd);
    CHECK_OK(rf_trace_write_json(t, path));
    json_object *root = json_object_from_file(path);
    unlink(path);
    CHECK(root != NULL, "trace is not JSON");
    json_object *ev = NULL;
    int reads = 0, faas = 0, named = 0;
    if (root && json_object_object_get_ex(root, "traceEvents", &ev)) {
        for (size_t i = 0; i < json_object_array_length(ev); i++) {
            json_object *e = json_object_array_get_idx(ev, i), *v, *args;
            const char *name = json_object_object_get_ex(e, "name", &v)
                                   ? json_object_get_string(v)
                                   : "";
            if (!strcmp(name, "thread_name") &&
                json_object_object_get_ex(e, "args", &args) &&
                json_object_object_get_ex(args, "name", &v) &&
                !strcmp(json_object_get_string(v), "pusher"))
                named++;
            if (!json_object_object_get_ex(e, "args", &args))
                continue;
            json_object *step = NULL, *bytes = NULL, *cat = NULL;
            json_object_object_get_ex(args, "step", &step);
            json_object_object_get_ex(e, "cat", &cat);
            if (!strcmp(name, "READ dense/kernel")) {
                reads++;
                CHECK(json_object_object_get_ex(args, "bytes", &bytes) &&
                          json_object_get_int64(bytes) == 802816,
                      "READ bytes");
                CHECK(cat && !strcmp(json_object_get_string(cat), "fabric"),
                      "READ cat");
                CHECK(step && json_object_get_int64(step) == reads - 1,
                      "READ step");
            } else if (!strcmp(name, "FETCH_AND_ADD global_step")) {
                faas++;
                json_object *tid = NULL;
                CHECK(json_object_object_get_ex(e, "tid", &tid) &&
                          json_object_get_int(tid) == 5,
                      "FAA tid");
            }
        }
    }
    CHECK(reads == 3 && faas == 3, "%d READ and %d FAA spans, want 3 each",
          reads, faas);
    CHECK(named == 1, "thread name 'pusher' appears %d times", named);
    json_object_put(root);
    rf_trace_destroy(t);
}

int main(void)
{
    test_hooks(1);
    test_hooks(2);
    test_input_hook();
    test_spans();
    printf("graph hooks and spans: all checks passed\n");
    return 0;
}
