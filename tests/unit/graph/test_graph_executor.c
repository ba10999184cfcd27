/* tests/unit/graph/test_graph_executor.c: the executor: bitwise
 * determinism of SGD on a small MLP for a fixed seed (same thread count,
 * and across thread counts), no allocation in steady-state steps (counted
 * allocator), the Chrome trace JSON (parsed by a small validating parser),
 * the variable read-before-write order, pruning and feeding intermediate
 * nodes, fed shapes changing, run-time errors, and external variable
 * storage. */
#include <unistd.h>

#include "graph_test.h"

/* ---- a tiny MLP trained with SGD ----------------------------------------- */

enum { IN = 64, H1 = 48, H2 = 32, OUT = 10, BATCH = 128 };

typedef struct mlp {
    rf_graph *g;
    rf_node *x, *y, *loss, *train, *w1;
} mlp;

static void mlp_build(mlp *m, uint64_t seed)
{
    CHECK_OK(rf_graph_create(&m->g));
    rf_graph *g = m->g;
    rf_graph_set_seed(g, seed);
    m->x = rf_placeholder(g, RF_F32, RF_SHAPE(-1, IN), "x");
    m->y = rf_placeholder(g, RF_I32, RF_SHAPE(-1), "y");
    rf_node *h = rf_dense(g, m->x, H1, RF_ACT_RELU, NULL);
    h = rf_dense(g, h, H2, RF_ACT_TANH, NULL);
    rf_node *o = rf_dense(g, h, OUT, RF_ACT_NONE, NULL);
    m->loss = rf_reduce_mean(
        g, rf_sparse_softmax_cross_entropy_with_logits(g, m->y, o, NULL), NULL,
        0, false, "loss");
    m->w1 = rf_graph_find(g, "dense/kernel");
    rf_optim_config cfg;
    rf_optim_defaults(RF_OPTIM_SGD, &cfg);
    cfg.learning_rate = 0.1f;
    CHECK_OK(rf_minimize(g, &cfg, m->loss, rf_global_step(g), &m->train));
    CHECK(rf_graph_status(g) == RF_OK, "mlp: %s", rf_graph_error(g));
    CHECK_OK(rf_graph_initialize_variables(g));
}

static void make_data(float *x, int32_t *y, int n, uint64_t seed)
{
    test_seed(seed);
    test_fill(x, (size_t)n * IN, 0, 1);
    for (int i = 0; i < n; i++)
        y[i] = (int32_t)(test_uniform() * OUT);
}

/* Runs steps of SGD; returns the final loss bits and the first kernel. */
static uint32_t train(int threads, int steps, float *w1_out)
{
    static float x[BATCH * IN];
    static int32_t y[BATCH];
    make_data(x, y, BATCH, 99);
    mlp m;
    mlp_build(&m, 1234);
    rf_executor *ex;
    rf_executor_options o = {.threads = threads};
    CHECK_OK(rf_executor_create(&o, &ex));
    rf_plan *p;
    rf_node *feeds[2] = {m.x, m.y};
    CHECK_OK(rf_plan_create(ex, m.g, &m.loss, 1, feeds, 2, &m.train, 1, &p));
    rf_tensor fv[2] = {rf_tensor_make(RF_F32, RF_SHAPE(BATCH, IN), x),
                       rf_tensor_make(RF_I32, RF_SHAPE(BATCH), y)};
    rf_tensor out;
    float loss = 0, first = 0;
    for (int s = 0; s < steps; s++) {
        CHECK_OK(rf_plan_run(p, fv, &out));
        loss = *(float *)out.data;
        if (s == 0)
            first = loss;
    }
    CHECK(loss < first, "loss did not decrease: %g -> %g", first, loss);
    CHECK(*(int64_t *)rf_variable_data(rf_global_step(m.g)) == steps,
          "global_step %lld after %d steps",
          (long long)*(int64_t *)rf_variable_data(rf_global_step(m.g)), steps);
    if (w1_out)
        memcpy(w1_out, rf_variable_data(m.w1), sizeof(float) * IN * H1);
    rf_plan_destroy(p);
    rf_executor_destroy(ex);
    rf_graph_destroy(m.g);
    uint32_t bits;
    memcpy(&bits, &loss, sizeof bits);
    return bits;
}

static void test_determinism(void)
{
    static float wa[IN * H1], wb[IN * H1], wc[IN * H1];
    uint32_t a = train(2, 30, wa);
    uint32_t b = train(2, 30, wb);
    CHECK(a == b, "same seed and threads: loss bits %08x vs %08x", a, b);
    CHECK(memcmp(wa, wb, sizeof wa) == 0, "weights differ between runs");
    uint32_t c = train(3, 30, wc);
    uint32_t d = train(1, 30, NULL);
    /* chunking depends only on shapes, so even the thread count does not
     * change the bits */
    CHECK(a == c && a == d, "across thread counts: %08x %08x %08x", a, c, d);
    CHECK(memcmp(wa, wc, sizeof wa) == 0, "weights differ across threads");
}

/* ---- buffer reuse ----------------------------------------------------------
 */

static void test_no_steady_state_allocation(void)
{
    static float x[BATCH * IN];
    static int32_t y[BATCH];
    make_data(x, y, BATCH, 5);
    mlp m;
    mlp_build(&m, 7);
    rf_executor *ex;
    rf_executor_options o = {.threads = 2};
    CHECK_OK(rf_executor_create(&o, &ex));
    rf_plan *p;
    rf_node *feeds[2] = {m.x, m.y};
    CHECK_OK(rf_plan_create(ex, m.g, &m.loss, 1, feeds, 2, &m.train, 1, &p));
    rf_tensor fv[2] = {rf_tensor_make(RF_F32, RF_SHAPE(BATCH, IN), x),
                       rf_tensor_make(RF_I32, RF_SHAPE(BATCH), y)};
    rf_tensor out;
    CHECK_OK(rf_plan_run(p, fv, &out)); /* lays out the arena */
    void *first_data = out.data;
    size_t arena = rf_plan_arena_bytes(p);
    rf_graph_alloc_stats before = rf_graph_alloc_stats_get();
    for (int s = 0; s < 25; s++)
        CHECK_OK(rf_plan_run(p, fv, &out));
    rf_graph_alloc_stats after = rf_graph_alloc_stats_get();
    CHECK(after.allocations == before.allocations &&
              after.live_bytes == before.live_bytes,
          "steady-state steps allocated: %llu -> %llu allocations",
          (unsigned long long)before.allocations,
          (unsigned long long)after.allocations);
    CHECK(out.data == first_data && rf_plan_arena_bytes(p) == arena,
          "buffers moved");
    /* a smaller batch re-plans (temporaries only) and reuses the arena */
    fv[0].shape = RF_SHAPE(BATCH / 2, IN);
    fv[1].shape = RF_SHAPE(BATCH / 2);
    before = rf_graph_alloc_stats_get();
    CHECK_OK(rf_plan_run(p, fv, &out));
    after = rf_graph_alloc_stats_get();
    CHECK(after.live_bytes == before.live_bytes,
          "smaller batch grew memory by %lld bytes",
          (long long)(after.live_bytes - before.live_bytes));
    before = rf_graph_alloc_stats_get();
    CHECK_OK(rf_plan_run(p, fv, &out));
    after = rf_graph_alloc_stats_get();
    CHECK(after.allocations == before.allocations,
          "steady state at the smaller batch allocated");
    rf_plan_destroy(p);
    rf_executor_destroy(ex);
    rf_graph_destroy(m.g);
}

/* ---- trace JSON
 * --------------------------------------------------------------- */

typedef struct jp {
    const char *s;
    size_t i, n;
    int x_events, x_complete;
} jp;

static void ws(jp *p)
{
    while (p->i < p->n && strchr(" \t\r\n", p->s[p->i]))
        p->i++;
}

static bool jvalue(jp *p, int depth, char *key_str, size_t key_cap);

static bool jstring(jp *p, char *out, size_t cap)
{
    if (p->s[p->i] != '"')
        return false;
    size_t k = 0;
    for (p->i++; p->i < p->n && p->s[p->i] != '"'; p->i++) {
        if ((unsigned char)p->s[p->i] < 0x20)
            return false;
        if (p->s[p->i] == '\\')
            p->i++;
        if (out && k + 1 < cap)
            out[k++] = p->s[p->i];
    }
    if (out)
        out[k] = '\0';
    if (p->i >= p->n)
        return false;
    p->i++;
    return true;
}

static bool jnumber(jp *p)
{
    char *end;
    strtod(p->s + p->i, &end);
    if (end == p->s + p->i)
        return false;
    p->i = (size_t)(end - p->s);
    return true;
}

/* an object; counts trace events: ph "X" with every required key */
static bool jobject(jp *p, int depth)
{
    const char *need[] = {"name", "ph", "ts", "dur", "pid", "tid", "args"};
    bool seen[7] = {false};
    bool is_x = false;
    p->i++;
    ws(p);
    if (p->s[p->i] == '}') {
        p->i++;
        return true;
    }
    for (;;) {
        char key[64];
        ws(p);
        if (!jstring(p, key, sizeof key))
            return false;
        ws(p);
        if (p->s[p->i++] != ':')
            return false;
        ws(p);
        char val[64] = "";
        if (!jvalue(p, depth + 1, val, sizeof val))
            return false;
        for (int k = 0; k < 7; k++)
            if (!strcmp(key, need[k]))
                seen[k] = true;
        if (!strcmp(key, "ph") && !strcmp(val, "X"))
            is_x = true;
        ws(p);
        if (p->s[p->i] == ',') {
            p->i++;
            continue;
        }
        if (p->s[p->i] != '}')
            return false;
        p->i++;
        break;
    }
    if (is_x && depth == 2) {
        p->x_events++;
        bool all = true;
        for (int k = 0; k < 7; k++)
            all = all && seen[k];
        p->x_complete += all;
    }
    return true;
}

static bool jvalue(jp *p, int depth, char *str, size_t cap)
{
    ws(p);
    if (p->i >= p->n || depth > 16)
        return false;
    char c = p->s[p->i];
    if (c == '{')
        return jobject(p, depth);
    if (c == '[') {
        p->i++;
        ws(p);
        if (p->s[p->i] == ']') {
            p->i++;
            return true;
        }
        for (;;) {
            if (!jvalue(p, depth + 1, NULL, 0))
                return false;
            ws(p);
            if (p->s[p->i] == ',') {
                p->i++;
                continue;
            }
            if (p->s[p->i++] != ']')
                return false;
            return true;
        }
    }
    if (c == '"')
        return jstring(p, str, cap);
    if (!strncmp(p->s + p->i, "true", 4) || !strncmp(p->s + p->i, "null", 4)) {
        p->i += 4;
        return true;
    }
    if (!strncmp(p->s + p->i, "false", 5)) {
        p->i += 5;
        return true;
    }
    return jnumber(p);
}

static void test_trace(void)
{
    static float x[BATCH * IN];
    static int32_t y[BATCH];
    make_data(x, y, BATCH, 3);
    mlp m;
    mlp_build(&m, 11);
    rf_executor *ex;
    rf_executor_options o = {.threads = 2};
    CHECK_OK(rf_executor_create(&o, &ex));
    rf_trace *t;
    CHECK_OK(rf_trace_create(&t));
    /* DEL and a byte that is not UTF-8: escaped, the JSON valid (issue 25) */
    rf_trace_set_process(t, 7, "worker \"0\"\x7f\xff");
    rf_executor_set_trace(ex, t);
    rf_plan *p;
    rf_node *feeds[2] = {m.x, m.y};
    CHECK_OK(rf_plan_create(ex, m.g, &m.loss, 1, feeds, 2, &m.train, 1, &p));
    rf_tensor fv[2] = {rf_tensor_make(RF_F32, RF_SHAPE(BATCH, IN), x),
                       rf_tensor_make(RF_I32, RF_SHAPE(BATCH), y)};
    rf_tensor out;
    enum { STEPS = 3 };
    for (int s = 0; s < STEPS; s++)
        CHECK_OK(rf_plan_run(p, fv, &out));
    size_t events = rf_trace_num_events(t);
    CHECK(events > STEPS * 10, "only %zu events", events);
    char path[] = "/tmp/rf_trace_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    close(fd);
    CHECK_OK(rf_trace_write_json(t, path));
    FILE *f = fopen(path, "rb");
    static char buf[1 << 22];
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    jp jparse = {.s = buf, .n = n};
    bool ok = jvalue(&jparse, 0, NULL, 0);
    ws(&jparse);
    CHECK(ok && jparse.i == n, "trace is not valid JSON (at byte %zu)",
          jparse.i);
    CHECK(!strncmp(buf, "{\"traceEvents\":[", 16), "trace prefix");
    CHECK(jparse.x_events == (int)events && jparse.x_complete == (int)events,
          "%d X events (%d complete), %zu recorded", jparse.x_events,
          jparse.x_complete, events);
    CHECK(strstr(buf, "\"name\":\"dense/MatMul\"") &&
              strstr(buf, "\"cat\":\"MatMul\"") &&
              strstr(buf, "\"shape\":\"[128,48]\"") &&
              strstr(buf, "\"name\":\"step\"") &&
              strstr(buf, "worker \\\"0\\\"\\u007f\\ufffd\""),
          "expected names in the trace");
    unlink(path);
    rf_executor_set_trace(ex, NULL);
    rf_plan_destroy(p);
    rf_trace_destroy(t);
    rf_executor_destroy(ex);
    rf_graph_destroy(m.g);
}

/* ---- semantics
 * --------------------------------------------------------------- */

static void test_read_before_write(void)
{
    rf_graph *g;
    CHECK_OK(rf_graph_create(&g));
    rf_node *v = rf_variable(g, RF_F32, RF_SHAPE(4096), rf_init_zeros(), "v");
    rf_node *one = rf_const_f32(g, 1, NULL);
    /* a reader created after the writer, not connected to it */
    rf_node *inc = rf_assign_add(
        g, v, rf_add(g, rf_zeros_like(g, v, NULL), one, NULL), NULL);
    rf_node *reader = rf_mul(g, v, rf_const_f32(g, 2, NULL), "reader");
    CHECK_OK(rf_graph_initialize_variables(g));
    rf_executor *ex;
    rf_executor_options o = {.threads = 3};
    CHECK_OK(rf_executor_create(&o, &ex));
    rf_plan *p;
    CHECK_OK(rf_plan_create(ex, g, &reader, 1, NULL, 0, &inc, 1, &p));
    for (int s = 0; s < 50; s++) {
        rf_tensor out;
        CHECK_OK(rf_plan_run(p, NULL, &out));
        float r = ((float *)out.data)[4095];
        CHECK(r == 2.0f * (float)s, "step %d read %g (not the old value)", s,
              r);
    }
    CHECK(((float *)rf_variable_data(v))[0] == 50.0f, "increments");
    /* a fetch of the variable views its storage */
    rf_tensor vt;
    rf_plan *pv;
    CHECK_OK(rf_plan_create(ex, g, &v, 1, NULL, 0, NULL, 0, &pv));
    CHECK_OK(rf_plan_run(pv, NULL, &vt));
    CHECK(vt.data == rf_variable_data(v), "variable fetch is a view");
    rf_plan_destroy(pv);
    rf_plan_destroy(p);
    rf_executor_destroy(ex);
    rf_graph_destroy(g);
}

static void test_pruning_feeds_and_errors(void)
{
    rf_graph *g;
    CHECK_OK(rf_graph_create(&g));
    rf_node *x = rf_placeholder(g, RF_F32, RF_SHAPE(-1, 4), "x");
    rf_node *w =
        rf_variable(g, RF_F32, RF_SHAPE(4, 2), rf_init_constant(1), "w");
    rf_node *h = rf_matmul(g, x, w, false, false, "h");
    rf_node *r = rf_relu(g, h, "r");
    rf_node *unused = rf_tanh(g, h, "unused");
    (void)unused;
    rf_executor *ex;
    rf_executor_options o = {.threads = 2};
    CHECK_OK(rf_executor_create(&o, &ex));
    rf_plan *p;
    rf_tensor out;
    /* uninitialized variable */
    CHECK_OK(rf_plan_create(ex, g, &r, 1, &x, 1, NULL, 0, &p));
    float xv[5 * 4];
    for (int i = 0; i < 20; i++)
        xv[i] = (float)i - 10;
    rf_tensor fx = rf_tensor_make(RF_F32, RF_SHAPE(3, 4), xv);
    CHECK(rf_plan_run(p, &fx, &out) == RF_ERR_INVALID_ARG &&
              strstr(rf_error_message(),
                     "Attempting to use uninitialized value w"),
          "uninitialized: %s", rf_error_message());
    CHECK_OK(rf_graph_initialize_variables(g));
    CHECK(rf_plan_num_nodes(p) == 4, "pruned plan has %zu nodes",
          rf_plan_num_nodes(p));
    /* shapes changing between runs */
    for (int b = 1; b <= 5; b += 2) {
        fx.shape = RF_SHAPE(b, 4);
        CHECK_OK(rf_plan_run(p, &fx, &out));
        CHECK(out.shape.dims[0] == b && out.shape.dims[1] == 2, "shape");
        for (int i = 0; i < b; i++) {
            float s = 0;
            for (int k = 0; k < 4; k++)
                s += xv[i * 4 + k];
            float want = s > 0 ? s : 0;
            CHECK(((float *)out.data)[i * 2] == want, "batch %d row %d", b, i);
        }
    }
    /* wrong fed shape and dtype */
    fx.shape = RF_SHAPE(2, 5);
    CHECK(rf_plan_run(p, &fx, &out) == RF_ERR_INVALID_ARG &&
              strstr(rf_error_message(), "Cannot feed value of shape [2,5]"),
          "bad feed: %s", rf_error_message());
    rf_plan_destroy(p);
    /* a placeholder that is needed but not fed */
    CHECK_OK(rf_plan_create(ex, g, &r, 1, NULL, 0, NULL, 0, &p));
    CHECK(rf_plan_run(p, NULL, &out) == RF_ERR_INVALID_ARG &&
              strstr(rf_error_message(),
                     "You must feed a value for placeholder tensor 'x'"),
          "missing feed: %s", rf_error_message());
    rf_plan_destroy(p);
    /* feeding an intermediate node cuts its inputs off */
    float hv[] = {-1, 2, 3, -4};
    rf_tensor fh = rf_tensor_make(RF_F32, RF_SHAPE(2, 2), hv);
    CHECK_OK(rf_plan_create(ex, g, &r, 1, &h, 1, NULL, 0, &p));
    CHECK(rf_plan_num_nodes(p) == 2, "fed plan has %zu nodes",
          rf_plan_num_nodes(p));
    CHECK_OK(rf_plan_run(p, &fh, &out));
    CHECK(((float *)out.data)[0] == 0 && ((float *)out.data)[2] == 3,
          "relu of the fed value");
    rf_plan_destroy(p);
    /* variables cannot be fed */
    CHECK(rf_plan_create(ex, g, &r, 1, &w, 1, NULL, 0, &p) ==
              RF_ERR_INVALID_ARG,
          "fed a variable");
    rf_executor_destroy(ex);
    rf_graph_destroy(g);
}

static void test_external_storage(void)
{
    static float x[BATCH * IN];
    static int32_t y[BATCH];
    make_data(x, y, BATCH, 8);
    mlp m;
    mlp_build(&m, 21);
    size_t bytes = rf_variable_bytes(m.w1);
    float *ext = aligned_alloc(64, (bytes + 63) / 64 * 64);
    float *before = malloc(bytes);
    memcpy(before, rf_variable_data(m.w1), bytes);
    CHECK(rf_variable_set_storage(m.w1, (char *)ext + 4, bytes, true) ==
              RF_ERR_INVALID_ARG,
          "misaligned storage accepted");
    CHECK_OK(rf_variable_set_storage(m.w1, ext, bytes, true));
    CHECK(rf_variable_data(m.w1) == ext && !memcmp(ext, before, bytes) &&
              rf_variable_is_initialized(m.w1),
          "storage switched with its value");
    rf_executor *ex;
    rf_executor_options o = {.threads = 2};
    CHECK_OK(rf_executor_create(&o, &ex));
    rf_plan *p;
    rf_node *feeds[2] = {m.x, m.y};
    rf_node *fetch[2] = {m.loss, m.w1};
    CHECK_OK(rf_plan_create(ex, m.g, fetch, 2, feeds, 2, &m.train, 1, &p));
    rf_tensor fv[2] = {rf_tensor_make(RF_F32, RF_SHAPE(BATCH, IN), x),
                       rf_tensor_make(RF_I32, RF_SHAPE(BATCH), y)};
    rf_tensor out[2];
    for (int s = 0; s < 3; s++)
        CHECK_OK(rf_plan_run(p, fv, out));
    CHECK(out[1].data == ext && rf_variable_data(m.w1) == ext,
          "executor moved the variable");
    CHECK(memcmp(ext, before, bytes) != 0, "training did not update ext");
    /* handing the storage back: the graph's own buffer with ext's values,
     * ext no longer used (scribbled over, then freed) */
    memcpy(before, ext, bytes);
    CHECK_OK(rf_variable_own_storage(m.w1));
    CHECK(rf_variable_data(m.w1) != ext &&
              !memcmp(rf_variable_data(m.w1), before, bytes) &&
              rf_variable_is_initialized(m.w1),
          "own storage with the trained value");
    memset(ext, 0xff, bytes);
    free(ext);
    CHECK_OK(rf_plan_run(p, fv, out));
    CHECK(out[1].data == rf_variable_data(m.w1) &&
              isfinite(*(float *)out[1].data),
          "the plan runs on the variable's own buffer");
    CHECK_OK(rf_variable_own_storage(m.w1)); /* already owned: nothing */
    rf_plan_destroy(p);
    rf_executor_destroy(ex);
    rf_graph_destroy(m.g);
    free(before);
}

/* Dead intermediate values share arena blocks: a chain of 60 ops needs a
 * few blocks, not 60; values still read elsewhere are not overwritten. */
static void test_buffer_sharing(void)
{
    enum { N = 1000, CHAIN = 60 };
    rf_graph *g;
    CHECK_OK(rf_graph_create(&g));
    rf_node *x = rf_placeholder(g, RF_F32, RF_SHAPE(N), "x");
    rf_node *keep = rf_tanh(g, x, "keep"); /* read again at the very end */
    rf_node *h = keep;
    for (int i = 0; i < CHAIN; i++)
        h = rf_add(g, rf_relu(g, h, NULL), rf_const_f32(g, 0.5f, NULL), NULL);
    rf_node *side = rf_sigmoid(g, keep, "side");
    rf_node *z = rf_add(g, rf_add(g, h, keep, NULL), side, "z");
    rf_executor *ex;
    rf_executor_options o = {.threads = 3};
    CHECK_OK(rf_executor_create(&o, &ex));
    rf_plan *p;
    rf_node *fetch[2] = {z, keep};
    CHECK_OK(rf_plan_create(ex, g, fetch, 2, &x, 1, NULL, 0, &p));
    static float xv[N];
    for (int i = 0; i < N; i++)
        xv[i] = (float)(i % 17) / 17.0f - 0.5f;
    rf_tensor fx = rf_tensor_make(RF_F32, RF_SHAPE(N), xv), out[2];
    for (int rep = 0; rep < 20; rep++) {
        CHECK_OK(rf_plan_run(p, &fx, out));
        int bad = 0;
        for (int i = 0; i < N; i++) {
            float k = tanhf(xv[i]), v = k;
            for (int c = 0; c < CHAIN; c++)
                v = (v > 0 ? v : 0) + 0.5f;
            float want = (v + k) + 1.0f / (1.0f + expf(-k));
            float got = ((float *)out[0].data)[i];
            if (fabsf(got - want) > 1e-5f * fabsf(want) + 1e-6f ||
                ((float *)out[1].data)[i] != k)
                bad++;
        }
        CHECK(bad == 0, "run %d: %d wrong values", rep, bad);
    }
    size_t per = (N * sizeof(float) + 63) / 64 * 64;
    CHECK(rf_plan_arena_bytes(p) <= 8 * per,
          "arena %zu bytes for a %d-op chain (%zu per value)",
          rf_plan_arena_bytes(p), 2 * CHAIN, per);
    rf_plan_destroy(p);
    rf_executor_destroy(ex);
    rf_graph_destroy(g);
}

/* the graph-wide hook: variables take their storage from a "registered"
 * region and give it back when the graph goes */
static _Alignas(64) unsigned char region[1 << 16];
static size_t region_used;
static int released;

static void *region_alloc(void *ctx, const rf_node *var, size_t bytes)
{
    (void)ctx;
    (void)var;
    size_t need = (bytes + 63) / 64 * 64;
    if (region_used + need > sizeof region)
        return NULL; /* the graph falls back to its own memory */
    void *p = region + region_used;
    region_used += need;
    return p;
}

static void region_release(void *ctx, const rf_node *var, void *data,
                           size_t bytes)
{
    (void)ctx;
    (void)var;
    (void)bytes;
    CHECK((unsigned char *)data >= region &&
              (unsigned char *)data < region + sizeof region,
          "released foreign memory");
    released++;
}

static void test_storage_hook(void)
{
    rf_graph *g;
    CHECK_OK(rf_graph_create(&g));
    rf_variable_storage hook = {region_alloc, region_release, NULL};
    rf_graph_set_variable_storage(g, &hook);
    rf_node *a =
        rf_variable(g, RF_F32, RF_SHAPE(100), rf_init_constant(3), "a");
    rf_node *big = rf_variable(g, RF_F32, RF_SHAPE(1 << 15), rf_init_zeros(),
                               "big"); /* does not fit: own memory */
    rf_graph_set_variable_storage(g, NULL);
    rf_node *b = rf_variable(g, RF_F32, RF_SHAPE(10), rf_init_zeros(), "b");
    unsigned char *pa = rf_variable_data(a), *pb = rf_variable_data(b),
                  *pbig = rf_variable_data(big);
    CHECK(pa >= region && pa < region + sizeof region, "a not in region");
    CHECK(!(pb >= region && pb < region + sizeof region) &&
              !(pbig >= region && pbig < region + sizeof region),
          "fallbacks in region");
    CHECK_OK(rf_graph_initialize_variables(g));
    rf_node *inc = rf_assign_add(g, a, rf_ones_like(g, a, NULL), NULL);
    rf_executor *ex;
    rf_executor_options o = {.threads = 2};
    CHECK_OK(rf_executor_create(&o, &ex));
    rf_plan *p;
    CHECK_OK(rf_plan_create(ex, g, &inc, 1, NULL, 0, NULL, 0, &p));
    rf_tensor out;
    CHECK_OK(rf_plan_run(p, NULL, &out));
    CHECK(out.data == pa && ((float *)pa)[99] == 4.0f, "updated in place");
    rf_plan_destroy(p);
    rf_executor_destroy(ex);
    rf_graph_destroy(g);
    CHECK(released == 1, "released %d buffers", released);
}

int main(void)
{
    test_determinism();
    test_no_steady_state_allocation();
    test_trace();
    test_read_before_write();
    test_pruning_feeds_and_errors();
    test_external_storage();
    test_storage_hook();
    test_buffer_sharing();
    printf("graph executor: all checks passed\n");
    return 0;
}
