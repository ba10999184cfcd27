/* tests/unit/graph/test_graph_partition.c: partitioned variables
 * (rf_graph_set_partitioner, rf_get_variable) and their checkpoints
 * (rf_ckpt_vars, rf_ckpt_read_variable): a dense layer under a partitioner
 * has TF's part names and slices; its initial values, forward output and
 * the values and slots after Adam steps are bitwise those of the same
 * layer unpartitioned; a checkpoint of the parts holds the whole tensors
 * under the whole's names, equal to the unpartitioned graph's, and
 * restores into another partitioning. Initial values are row-keyed
 * (rf_variable_initialize_rows): any range of a part's rows, of a part
 * sliced along axis 0 or along a later axis, is that slice of the whole
 * variable's values. */
#include <unistd.h>

#include "graph_test.h"
#include "rdmaflow/checkpoint.h"
#include "rdmaflow/device.h"

enum { IN = 7, OUT = 5, BATCH = 4, STEPS = 3 };

typedef struct model {
    rf_graph *g;
    rf_node *x, *y, *train, *gs;
} model;

/* dense(x, OUT) with Adam on sum(y * y), parts fixed_size(shards) or none */
static void build(model *m, int shards)
{
    CHECK_OK(rf_graph_create(&m->g));
    rf_graph_set_seed(m->g, 7);
    if (shards) {
        rf_partitioner p;
        CHECK_OK(rf_fixed_size_partitioner(shards, 0, &p));
        CHECK_OK(rf_graph_set_partitioner(m->g, &p));
    }
    m->x = rf_placeholder(m->g, RF_F32, RF_SHAPE(BATCH, IN), "x");
    m->y = rf_dense(m->g, m->x, OUT, RF_ACT_TANH, "dense");
    CHECK_OK(rf_graph_set_partitioner(m->g, NULL));
    rf_node *loss = rf_reduce_sum(m->g, rf_mul(m->g, m->y, m->y, NULL), NULL, 0,
                                  false, "loss");
    rf_optim_config cfg;
    CHECK_OK(rf_optim_defaults(RF_OPTIM_ADAM, &cfg));
    cfg.learning_rate = 0.1f;
    m->gs = rf_global_step(m->g);
    CHECK_OK(rf_minimize(m->g, &cfg, loss, m->gs, &m->train));
    CHECK(rf_graph_status(m->g) == RF_OK, "build: %s", rf_graph_error(m->g));
    CHECK_OK(rf_graph_initialize_variables(m->g));
}

static const float *value(const model *m, const char *name)
{
    rf_node *n = rf_graph_find(m->g, name);
    CHECK(n != NULL, "no node %s", name);
    return rf_variable_data(n);
}

/* whole[r, :] == part rows, for a [rows, OUT] part at row offset off */
static void same_rows(const float *whole, const float *part, int off, int rows,
                      const char *what)
{
    CHECK(!memcmp(whole + (size_t)off * OUT, part,
                  (size_t)rows * OUT * sizeof(float)),
          "%s: rows %d..%d differ from the unpartitioned variable", what, off,
          off + rows - 1);
}

static void test_names_and_numbers(void)
{
    model a, b;
    build(&a, 0);
    build(&b, 3);
    /* TF's _iter_slices: 7 rows in 3 parts = 3, 2, 2; bias 5 = 2, 2, 1 */
    static const int krows[3] = {3, 2, 2}, koff[3] = {0, 3, 5};
    for (int i = 0; i < 3; i++) {
        char name[64];
        snprintf(name, sizeof name, "dense/kernel/part_%d", i);
        rf_node *k = rf_graph_find(b.g, name);
        CHECK(k && rf_node_shape(k).rank == 2 &&
                  rf_node_shape(k).dims[0] == krows[i] &&
                  rf_node_shape(k).dims[1] == OUT,
              "%s: missing or wrong shape", name);
        rf_save_slice s;
        CHECK(rf_variable_save_slice(k, &s), "%s: no save slice", name);
        CHECK(!strcmp(s.full_name, "dense/kernel") &&
                  s.full_shape.dims[0] == IN && s.offset[0] == koff[i],
              "%s: slice %s offset %lld", name, s.full_name,
              (long long)s.offset[0]);
        same_rows(value(&a, "dense/kernel"), rf_variable_data(k), koff[i],
                  krows[i], name);
        char buf[RF_SAVE_SLICE_NAME_MAX];
        rf_node *m1 = rf_variable_get_slot(k, "v");
        CHECK(m1 && !strcmp(rf_variable_checkpoint_name(m1, buf, sizeof buf),
                            "dense/kernel/Adam_1"),
              "%s: slot v saved as '%s'", name,
              m1 ? rf_variable_checkpoint_name(m1, buf, sizeof buf) : "-");
    }
    CHECK(rf_graph_find(b.g, "dense/kernel") == NULL,
          "the partitioned graph has no whole variable");
    CHECK(rf_graph_find(b.g, "dense/bias/part_2") != NULL &&
              rf_node_shape(rf_graph_find(b.g, "dense/bias/part_2")).dims[0] ==
                  1,
          "bias parts");

    /* same forward, same steps, bitwise */
    rf_executor_options eo = {.threads = 1};
    rf_executor *ex;
    CHECK_OK(rf_executor_create(&eo, &ex));
    float xv[BATCH * IN];
    test_seed(3);
    test_fill(xv, BATCH * IN, -1, 1);
    rf_tensor feed = rf_tensor_make(RF_F32, RF_SHAPE(BATCH, IN), xv);
    double ya[BATCH * OUT], yb[BATCH * OUT];
    CHECK(test_eval(ex, a.g, a.y, &a.x, &feed, 1, ya, BATCH * OUT) ==
                  BATCH * OUT &&
              test_eval(ex, b.g, b.y, &b.x, &feed, 1, yb, BATCH * OUT) ==
                  BATCH * OUT,
          "forward");
    CHECK(!memcmp(ya, yb, sizeof ya), "forward outputs differ");
    model *ms[2] = {&a, &b};
    for (int k = 0; k < 2; k++) {
        rf_plan *p;
        CHECK_OK(rf_plan_create(ex, ms[k]->g, NULL, 0, &ms[k]->x, 1,
                                &ms[k]->train, 1, &p));
        for (int s = 0; s < STEPS; s++)
            CHECK_OK(rf_plan_run(p, &feed, NULL));
        rf_plan_destroy(p);
    }
    for (int i = 0; i < 3; i++) {
        char name[64], slot[80];
        snprintf(name, sizeof name, "dense/kernel/part_%d", i);
        same_rows(value(&a, "dense/kernel"), value(&b, name), koff[i], krows[i],
                  "kernel after Adam steps");
        snprintf(slot, sizeof slot, "%s/Adam", name);
        same_rows(value(&a, "dense/kernel/Adam"), value(&b, slot), koff[i],
                  krows[i], "slot m after Adam steps");
    }

    /* the checkpoint of the parts is the unpartitioned graph's */
    rf_ckpt_vars *ca, *cb;
    CHECK_OK(rf_ckpt_vars_create(rf_graph_num_variables(a.g), &ca));
    CHECK_OK(rf_ckpt_vars_create(rf_graph_num_variables(b.g), &cb));
    for (size_t i = 0; i < rf_graph_num_variables(a.g); i++) {
        rf_node *v = rf_graph_variable(a.g, i);
        CHECK_OK(rf_ckpt_vars_add(ca, v, rf_variable_data(v)));
    }
    for (size_t i = 0; i < rf_graph_num_variables(b.g); i++) {
        rf_node *v = rf_graph_variable(b.g, i);
        CHECK_OK(rf_ckpt_vars_add(cb, v, rf_variable_data(v)));
    }
    const rf_ckpt_tensor *ta, *tb;
    size_t na, nb;
    CHECK_OK(rf_ckpt_vars_tensors(ca, &ta, &na));
    CHECK_OK(rf_ckpt_vars_tensors(cb, &tb, &nb));
    CHECK(na == nb, "%zu tensors unpartitioned, %zu partitioned", na, nb);
    for (size_t i = 0; i < na; i++) {
        const rf_ckpt_tensor *u = NULL;
        for (size_t j = 0; j < nb; j++)
            if (!strcmp(tb[j].name, ta[i].name))
                u = &tb[j];
        CHECK(u && u->bytes == ta[i].bytes &&
                  rf_shape_equal(&u->shape, &ta[i].shape) &&
                  !memcmp(u->data, ta[i].data, u->bytes),
              "tensor %s: missing or different in the parts' checkpoint",
              ta[i].name);
    }

    /* written from the whole graph, restored into 2 parts */
    char dir[] = "/tmp/rf_test_partition_XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char path[128];
    snprintf(path, sizeof path, "%s/w.safetensors", dir);
    CHECK_OK(rf_ckpt_write(path, ta, na, NULL));
    model c;
    build(&c, 2);
    rf_ckpt *ck;
    CHECK_OK(rf_ckpt_open(path, &ck));
    for (size_t i = 0; i < rf_graph_num_variables(c.g); i++) {
        rf_node *v = rf_graph_variable(c.g, i);
        CHECK_OK(rf_ckpt_read_variable(ck, v, rf_variable_data(v)));
    }
    same_rows(value(&a, "dense/kernel"), value(&c, "dense/kernel/part_0"), 0, 4,
              "restored part_0");
    same_rows(value(&a, "dense/kernel"), value(&c, "dense/kernel/part_1"), 4, 3,
              "restored part_1");
    /* a tensor of another shape is refused, naming it */
    model d;
    CHECK_OK(rf_graph_create(&d.g));
    rf_node *odd = rf_variable(d.g, RF_F32, RF_SHAPE(IN, OUT + 1),
                               rf_init_zeros(), "dense/kernel");
    float junk[IN * (OUT + 1)];
    CHECK(rf_ckpt_read_variable(ck, odd, junk) == RF_ERR_INVALID_ARG &&
              strstr(rf_error_message(), "dense/kernel"),
          "a shape mismatch: %s", rf_error_message());
    rf_ckpt_close(ck);
    unlink(path);
    rmdir(dir);
    rf_ckpt_vars_free(ca);
    rf_ckpt_vars_free(cb);
    rf_executor_destroy(ex);
    rf_graph_destroy(a.g);
    rf_graph_destroy(b.g);
    rf_graph_destroy(c.g);
    rf_graph_destroy(d.g);
}

static void test_errors(void)
{
    rf_graph *g;
    CHECK_OK(rf_graph_create(&g));
    rf_partitioner p;
    CHECK_OK(rf_fixed_size_partitioner(4, 0, &p));
    CHECK_OK(rf_graph_set_partitioner(g, &p));
    /* a part whose name is taken (it would be made unique): refused */
    CHECK(rf_variable(g, RF_F32, RF_SHAPE(1), rf_init_zeros(), "w/part_1"),
          "the squatter");
    rf_node *v =
        rf_get_variable(g, RF_F32, RF_SHAPE(8, 2), rf_init_zeros(), "w");
    CHECK(v == NULL && rf_graph_status(g) == RF_ERR_INVALID_ARG &&
              strstr(rf_graph_error(g), "part 1"),
          "a taken part name: %s", rf_graph_error(g));
    rf_graph_destroy(g);
    /* a scalar is never partitioned */
    CHECK_OK(rf_graph_create(&g));
    CHECK_OK(rf_graph_set_partitioner(g, &p));
    rf_node *s = rf_get_variable(g, RF_F32, RF_SCALAR, rf_init_zeros(), "s");
    CHECK(s && !strcmp(rf_node_name(s), "s") &&
              !rf_variable_save_slice(s, NULL),
          "a scalar under a partitioner");
    rf_graph_destroy(g);
}

enum { TR = 10, TC = 6 };

/* "t" [TR, TC] truncated normal, seed 7, under fixed_size(shards, axis) */
static rf_graph *table_graph(int shards, int axis)
{
    rf_graph *g;
    CHECK_OK(rf_graph_create(&g));
    rf_graph_set_seed(g, 7);
    if (shards) {
        rf_partitioner p;
        CHECK_OK(rf_fixed_size_partitioner(shards, axis, &p));
        CHECK_OK(rf_graph_set_partitioner(g, &p));
    }
    CHECK(rf_get_variable(g, RF_F32, RF_SHAPE(TR, TC),
                          rf_init_truncated_normal(0.0, 1.0), "t") != NULL,
          "t: %s", rf_graph_error(g));
    CHECK_OK(rf_graph_initialize_variables(g));
    return g;
}

/* every part's values (and any range of its rows) are its slice of the
 * unpartitioned variable's, whichever axis is sliced */
static void check_parts(const float *whole, int shards, int axis)
{
    rf_graph *g = table_graph(shards, axis);
    int covered = 0;
    for (int i = 0; i < shards; i++) {
        char name[32];
        snprintf(name, sizeof name, "t/part_%d", i);
        rf_node *v = rf_graph_find(g, name);
        CHECK(v != NULL, "no %s", name);
        rf_save_slice sl;
        CHECK(rf_variable_save_slice(v, &sl), "%s: no slice", name);
        int64_t rows = sl.shape.dims[0], cols = sl.shape.dims[1];
        const float *d = rf_variable_data(v);
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++)
                CHECK(d[r * cols + c] ==
                          whole[(sl.offset[0] + r) * TC + sl.offset[1] + c],
                      "%s (axis %d) [%lld, %lld] differs from the whole's",
                      name, axis, (long long)r, (long long)c);
        covered += (int)(rows * cols);
        /* rows [1, rows) alone: the same numbers */
        float buf[TR * TC];
        memset(buf, 0, sizeof buf);
        CHECK_OK(rf_variable_initialize_rows(v, 1, rows - 1, buf));
        CHECK(!memcmp(buf, d + cols, (size_t)((rows - 1) * cols) * 4),
              "%s: rows 1.. alone differ", name);
        CHECK(rf_variable_initialize_rows(v, 1, rows, buf) ==
                  RF_ERR_INVALID_ARG,
              "%s: a range past the end accepted", name);
    }
    CHECK(covered == TR * TC, "parts cover %d of %d", covered, TR * TC);
    rf_graph_destroy(g);
}

static void test_initialize_rows(void)
{
    rf_graph *g = table_graph(0, 0);
    rf_node *t = rf_graph_find(g, "t");
    const float *whole = rf_variable_data(t);
    /* rows are independent streams: row 3 alone is row 3 */
    float row[TC];
    CHECK_OK(rf_variable_initialize_rows(t, 3, 1, row));
    CHECK(!memcmp(row, whole + 3 * TC, sizeof row), "row 3 alone differs");
    CHECK(memcmp(whole, whole + TC, sizeof row) != 0, "rows 0 and 1 equal");
    check_parts(whole, 3, 0);
    check_parts(whole, 4, 1);
    rf_graph_destroy(g);
}

int main(void)
{
    test_names_and_numbers();
    test_initialize_rows();
    test_errors();
    printf("partitioned variables: ok\n");
    return 0;
}
