/* tests/unit/graph/test_graph_embedding.c: embedding tables in the graph.
 * Gather and embedding_lookup forward (mod and div, even and uneven parts,
 * int32/int64 ids of rank 1 and 2) against TF 1.x's id-to-part mapping
 * written out from embedding_ops.py and the docstring's 13-ids-over-5-parts
 * lists; bad ids (negative, == vocabulary, beyond, mapped past a part's end)
 * fail the run naming the node and the id; gradients (IndexedSlices,
 * densified) against central finite differences, repeated ids summed, a
 * table read by two lookups (concatenated slices) or by a lookup and a
 * MatMul (densified); each optimizer's sparse applies against the same
 * model whose table is read by a one-hot MatMul with dense applies; no
 * allocation in steady-state steps; the distributed session's table
 * shards (offline description) and rf_embedding_map_ids. */
#include "graph_test.h"
#include "rdmaflow/cluster.h"
#include "rdmaflow/device.h"
#include "rdmaflow/session.h"
#include <inttypes.h>

#define EPS  1e-2
#define ATOL 2e-3
#define RTOL 2e-2
#define D    3 /* embedding width */

static rf_executor *ex;

/* Python's // and % (floor), for the reference mapping */
static int64_t floordiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static int64_t floormod(int64_t a, int64_t b)
{
    return a - floordiv(a, b) * b;
}

/* TF 1.x embedding_ops.py _embedding_lookup_and_transform, written out:
 *   mod: p_assignments = ids % np; new_ids = ids // np
 *   div: ids_per_partition = total // np; extras = total % np
 *        p_assignments = maximum(ids // (ids_per_partition + 1),
 *                                (ids - extras) // ids_per_partition)
 *        new_ids = where(p_assignments < extras, ids % (ids_per_partition+1),
 *                        (ids - extras) % ids_per_partition) */
static void ref_map(bool div, int64_t np, int64_t total, int64_t id,
                    int64_t *part, int64_t *row)
{
    if (!div) {
        *part = floormod(id, np);
        *row = floordiv(id, np);
        return;
    }
    int64_t ipp = floordiv(total, np), extras = floormod(total, np);
    int64_t a = floordiv(id, ipp + 1), b = floordiv(id - extras, ipp);
    *part = a > b ? a : b;
    *row = *part < extras ? floormod(id, ipp + 1) : floormod(id - extras, ipp);
}

/* The part sizes TF's partitioners give (the first total % np parts one
 * row more), which both strategies expect. */
static int64_t part_rows(int64_t total, int np, int p)
{
    return total / np + (p < total % np);
}

static double table_value(int64_t id, int j)
{
    return (double)(id * 10 + j);
}

/* The docstring of embedding_lookup: 13 ids over 5 parts. */
static const int64_t doc_mod[5][3] = {
    {0, 5, 10}, {1, 6, 11}, {2, 7, 12}, {3, 8, -1}, {4, 9, -1}};
static const int64_t doc_div[5][3] = {
    {0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {9, 10, -1}, {11, 12, -1}};

static void check_docstring(void)
{
    for (int div = 0; div < 2; div++)
        for (int p = 0; p < 5; p++)
            for (int r = 0; r < 3; r++) {
                int64_t id = div ? doc_div[p][r] : doc_mod[p][r];
                if (id < 0)
                    continue;
                int64_t part, row;
                ref_map(div, 5, 13, id, &part, &row);
                CHECK(part == p && row == r,
                      "%s: id %lld maps to (%lld, %lld), docstring (%d, %d)",
                      div ? "div" : "mod", (long long)id, (long long)part,
                      (long long)row, p, r);
            }
}

/* parts of a [total, D] table under strategy div, each row holding
 * table_value(id) for the id mapped to it */
static void make_parts(rf_graph *g, int64_t total, int np, rf_node **parts)
{
    for (int p = 0; p < np; p++)
        parts[p] = rf_variable(g, RF_F32, RF_SHAPE(part_rows(total, np, p), D),
                               rf_init_zeros(), NULL);
}

static void fill_parts(rf_node **parts, int64_t total, int np, bool div)
{
    int filled = 0;
    for (int p = 0; p < np; p++)
        memset(rf_variable_data(parts[p]), 0xff,
               rf_variable_bytes(parts[p])); /* NaN: rows never filled */
    for (int64_t id = 0; id < total; id++) {
        int64_t part, row;
        ref_map(div, np, total, id, &part, &row);
        CHECK(part >= 0 && part < np && row >= 0 &&
                  row < part_rows(total, np, (int)part),
              "id %lld -> (%lld, %lld) outside the parts", (long long)id,
              (long long)part, (long long)row);
        float *d = rf_variable_data(parts[part]);
        CHECK(isnan(d[row * D]), "two ids map to part %lld row %lld",
              (long long)part, (long long)row);
        for (int j = 0; j < D; j++)
            d[row * D + j] = (float)table_value(id, j);
        filled++;
    }
    CHECK(filled == total, "filled %d of %lld rows", filled, (long long)total);
}

static void check_forward(int64_t total, int np, bool div, rf_dtype idt,
                          bool rank2)
{
    rf_graph *g;
    CHECK_OK(rf_graph_create(&g));
    rf_node *parts[8];
    make_parts(g, total, np, parts);
    enum { N = 24 };
    int64_t ids64[N];
    int32_t ids32[N];
    for (int i = 0; i < N; i++) /* every id, some repeated, out of order */
        ids64[i] = ids32[i] = (int32_t)((i * 7 + 3) % total);
    rf_shape is = rank2 ? RF_SHAPE(4, 6) : RF_SHAPE(N);
    rf_node *ids =
        rf_const(g, idt, is, idt == RF_I64 ? (void *)ids64 : ids32, "ids");
    rf_node *y = rf_embedding_lookup(g, parts, (size_t)np, ids,
                                     div ? "div" : "mod", NULL);
    CHECK(y != NULL, "lookup: %s", rf_graph_error(g));
    CHECK(rf_node_op(y) == (np == 1 ? RF_OP_GATHER : RF_OP_EMBEDDING_LOOKUP),
          "built %s", rf_node_op_name(y));
    CHECK(strcmp(rf_node_name(y), "embedding_lookup") == 0, "named %s",
          rf_node_name(y));
    rf_shape ys = rf_node_shape(y);
    CHECK(ys.rank == is.rank + 1 && ys.dims[ys.rank - 1] == D &&
              ys.dims[0] == is.dims[0],
          "shape rank %d", ys.rank);
    CHECK_OK(rf_graph_initialize_variables(g));
    fill_parts(parts, total, np, div);
    double out[N * D];
    CHECK(test_eval(ex, g, y, NULL, NULL, 0, out, N * D) == N * D, "eval: %s",
          rf_error_message());
    for (int i = 0; i < N; i++)
        for (int j = 0; j < D; j++)
            CHECK(out[i * D + j] == table_value(ids64[i], j),
                  "%s P=%d total=%lld: out[%d][%d] = %g, want %g",
                  div ? "div" : "mod", np, (long long)total, i, j,
                  out[i * D + j], table_value(ids64[i], j));
    rf_graph_destroy(g);
}

/* Runs fetch with ids fed; returns the status, message in rf_error_message */
static rf_status run_ids(rf_graph *g, rf_node *fetch, rf_node *ph, int64_t *ids,
                         int64_t n)
{
    rf_plan *p = NULL;
    CHECK_OK(rf_plan_create(ex, g, &fetch, 1, &ph, 1, NULL, 0, &p));
    rf_tensor feed = rf_tensor_make(RF_I64, RF_SHAPE(n), ids), out;
    rf_status st = rf_plan_run(p, &feed, &out);
    rf_plan_destroy(p);
    return st;
}

static void check_bad_ids(void)
{
    rf_graph *g;
    CHECK_OK(rf_graph_create(&g));
    rf_node *parts[3];
    make_parts(g, 10, 3, parts);
    rf_node *ph = rf_placeholder(g, RF_I64, RF_SHAPE(-1), "ids");
    rf_node *mod = rf_embedding_lookup(g, parts, 3, ph, "mod", "emb");
    rf_node *div = rf_embedding_lookup(g, parts, 3, ph, "div", "emb_div");
    rf_node *one = rf_embedding_lookup(g, parts, 1, ph, NULL, "one");
    rf_node *table =
        rf_variable(g, RF_F32, RF_SHAPE(5, D), rf_init_zeros(), "t");
    rf_node *gat = rf_gather(g, table, ph, "gat");
    CHECK_OK(rf_graph_status(g));
    CHECK_OK(rf_graph_initialize_variables(g));
    const int64_t bad[] = {-1, 10, 11, 1000000007};
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
        for (int which = 0; which < 2; which++) {
            int64_t ids[3] = {0, bad[b], 1};
            CHECK_ST(run_ids(g, which ? div : mod, ph, ids, 3),
                     RF_ERR_INVALID_ARG);
            char want[128];
            snprintf(want, sizeof want, "EmbeddingLookup '%s': ids[1] = %lld",
                     which ? "emb_div" : "emb", (long long)bad[b]);
            CHECK_MSG(want);
            CHECK_MSG("is not in [0, 10)");
        }
        int64_t ids[3] = {1, 2, bad[b] < 0 ? bad[b] : bad[b] - 5};
        CHECK_ST(run_ids(g, gat, ph, ids, 3), RF_ERR_INVALID_ARG);
        char want[128];
        snprintf(want, sizeof want,
                 "GatherV2 'gat': indices[2] = %lld is not in [0, 5)",
                 (long long)ids[2]);
        CHECK_MSG(want);
    }
    /* a single part is a Gather over its 4 rows */
    int64_t ids4[2] = {3, 4};
    CHECK_ST(run_ids(g, one, ph, ids4, 2), RF_ERR_INVALID_ARG);
    CHECK_MSG("GatherV2 'one': indices[1] = 4 is not in [0, 4)");
    rf_graph_destroy(g);

    /* rank-2 ids: the position is written [row,col] */
    CHECK_OK(rf_graph_create(&g));
    make_parts(g, 10, 3, parts);
    int64_t ids2[2][3] = {{0, 1, 2}, {3, 12, 5}};
    rf_node *c = rf_const(g, RF_I64, RF_SHAPE(2, 3), ids2, "ids");
    rf_node *y = rf_embedding_lookup(g, parts, 3, c, "div", NULL);
    CHECK_OK(rf_graph_initialize_variables(g));
    double out[18];
    CHECK(test_eval(ex, g, y, NULL, NULL, 0, out, 18) < 0, "ran");
    CHECK_MSG("ids[1,1] = 12 is not in [0, 10)");
    rf_graph_destroy(g);

    /* mod over parts of sizes 3, 3, 4: id 9 -> part 0, row 3 */
    CHECK_OK(rf_graph_create(&g));
    rf_node *q[3];
    for (int p = 0; p < 3; p++)
        q[p] = rf_variable(g, RF_F32, RF_SHAPE(p == 2 ? 4 : 3, D),
                           rf_init_zeros(), NULL);
    ph = rf_placeholder(g, RF_I64, RF_SHAPE(-1), "ids");
    y = rf_embedding_lookup(g, q, 3, ph, "mod", "uneven");
    CHECK_OK(rf_graph_initialize_variables(g));
    int64_t ok[2] = {8, 0}, past[2] = {8, 9};
    CHECK_OK(run_ids(g, y, ph, ok, 2));
    CHECK_ST(run_ids(g, y, ph, past, 2), RF_ERR_INVALID_ARG);
    CHECK_MSG("'uneven': ids[1] = 9 maps to row 3 of part 0, which has 3 rows");
    rf_graph_destroy(g);

    /* build-time refusals */
    CHECK_OK(rf_graph_create(&g));
    rf_node *r[2] = {
        rf_variable(g, RF_F32, RF_SHAPE(4, 3), rf_init_zeros(), NULL),
        rf_variable(g, RF_F32, RF_SHAPE(4, 2), rf_init_zeros(), NULL)};
    ph = rf_placeholder(g, RF_I64, RF_SHAPE(-1), "ids");
    CHECK(rf_embedding_lookup(g, r, 2, ph, "mod", NULL) == NULL, "built");
    CHECK(strstr(rf_graph_error(g), "same trailing dims") != NULL, "%s",
          rf_graph_error(g));
    rf_graph_clear_error(g);
    CHECK(rf_embedding_lookup(g, r, 1, ph, "modulo", NULL) == NULL, "built");
    CHECK(strstr(rf_graph_error(g), "'modulo'") != NULL, "%s",
          rf_graph_error(g));
    rf_graph_clear_error(g);
    rf_node *f = rf_placeholder(g, RF_F32, RF_SHAPE(2), "f");
    CHECK(rf_gather(g, r[0], f, NULL) == NULL, "float indices accepted");
    rf_graph_destroy(g);
}

/* IndexedSlices built by hand: its value is values; densified, each row is
 * the sum of its entries' values (-1 skipped); an index past dense_shape[0]
 * fails the run; indices and values that do not fit are refused. */
static void check_indexed_slices(void)
{
    rf_graph *g;
    CHECK_OK(rf_graph_create(&g));
    float v[4][2] = {{1, 2}, {3, 4}, {5, 6}, {7, 8}};
    rf_node *vals = rf_const(g, RF_F32, RF_SHAPE(4, 2), v, "v");
    rf_node *ph = rf_placeholder(g, RF_I64, RF_SHAPE(4), "i");
    rf_node *is = rf_indexed_slices(g, ph, vals, RF_SHAPE(3, 2), "s");
    rf_node *dense = rf_indexed_slices_to_dense(g, is, "d");
    CHECK_OK(rf_graph_status(g));
    CHECK(rf_node_is_indexed_slices(is) && !rf_node_is_indexed_slices(dense) &&
              rf_indexed_slices_indices(is) == ph &&
              rf_indexed_slices_values(is) == vals &&
              rf_indexed_slices_dense_shape(is).dims[0] == 3,
          "accessors");
    int64_t ix[4] = {2, -1, 0, 2};
    rf_node *fetch[2] = {is, dense};
    rf_plan *p = NULL;
    CHECK_OK(rf_plan_create(ex, g, fetch, 2, &ph, 1, NULL, 0, &p));
    rf_tensor feed = rf_tensor_make(RF_I64, RF_SHAPE(4), ix), out[2];
    CHECK_OK(rf_plan_run(p, &feed, out));
    CHECK(memcmp(out[0].data, v, sizeof v) == 0, "the value is values");
    const float want[3][2] = {{5, 6}, {0, 0}, {1 + 7, 2 + 8}};
    CHECK(rf_shape_numel(&out[1].shape) == 6 &&
              memcmp(out[1].data, want, sizeof want) == 0,
          "dense %g %g / %g %g / %g %g", ((float *)out[1].data)[0],
          ((float *)out[1].data)[1], ((float *)out[1].data)[2],
          ((float *)out[1].data)[3], ((float *)out[1].data)[4],
          ((float *)out[1].data)[5]);
    ix[3] = 3;
    CHECK_ST(rf_plan_run(p, &feed, out), RF_ERR_INVALID_ARG);
    CHECK_MSG("IndexedSlicesToDense 'd': indices[3] = 3 is not in [0, 3)");
    ix[3] = -2;
    CHECK_ST(rf_plan_run(p, &feed, out), RF_ERR_INVALID_ARG);
    CHECK_MSG("indices[3] = -2 is not in [0, 3)");
    rf_plan_destroy(p);
    CHECK(rf_indexed_slices(g, ph, vals, RF_SHAPE(3, 5), NULL) == NULL,
          "values [4,2] accepted for dense shape [3,5]");
    rf_graph_clear_error(g);
    CHECK(rf_indexed_slices_to_dense(g, vals, NULL) == NULL,
          "densified a Const");
    rf_graph_destroy(g);
}

/* ---- gradients ---------------------------------------------------------- */

static double run_loss(rf_plan *p)
{
    rf_tensor t;
    CHECK_OK(rf_plan_run(p, NULL, &t));
    return *(float *)t.data;
}

/* d loss / d vars[i] (densified when sparse) against central differences;
 * want_sparse says which kind the gradients must be. */
static void check_fd(rf_graph *g, rf_node *loss, rf_node **vars, size_t nv,
                     bool want_sparse, const char *what)
{
    rf_node *grads[8], *dense[8];
    CHECK_OK(rf_gradients(g, loss, vars, nv, grads));
    for (size_t i = 0; i < nv; i++) {
        CHECK(grads[i] != NULL, "%s: no gradient for %zu", what, i);
        CHECK(rf_node_is_indexed_slices(grads[i]) == want_sparse,
              "%s: gradient %zu is a %s", what, i, rf_node_op_name(grads[i]));
        dense[i] = want_sparse ? rf_indexed_slices_to_dense(g, grads[i], NULL)
                               : grads[i];
        CHECK(dense[i] != NULL, "%s: %s", what, rf_graph_error(g));
    }
    CHECK_OK(rf_graph_initialize_variables(g));
    for (size_t i = 0; i < nv; i++)
        test_fill(rf_variable_data(vars[i]),
                  rf_variable_bytes(vars[i]) / sizeof(float), -1, 1);
    rf_plan *pg = NULL, *pl = NULL;
    CHECK_OK(rf_plan_create(ex, g, dense, nv, NULL, 0, NULL, 0, &pg));
    CHECK_OK(rf_plan_create(ex, g, &loss, 1, NULL, 0, NULL, 0, &pl));
    rf_tensor out[8];
    CHECK_OK(rf_plan_run(pg, NULL, out));
    for (size_t i = 0; i < nv; i++) {
        float *x = rf_variable_data(vars[i]);
        size_t n = rf_variable_bytes(vars[i]) / sizeof(float);
        CHECK((size_t)rf_shape_numel(&out[i].shape) == n, "%s: size", what);
        float *an = malloc(n * sizeof *an);
        memcpy(an, out[i].data, n * sizeof *an);
        for (size_t j = 0; j < n; j++) {
            float orig = x[j];
            x[j] = (float)(orig + EPS);
            double lp = run_loss(pl);
            x[j] = (float)(orig - EPS);
            double lm = run_loss(pl);
            x[j] = orig;
            double fd = (lp - lm) / (2 * EPS);
            CHECK(fabs(an[j] - fd) <= ATOL + RTOL * fmax(fabs(an[j]), fabs(fd)),
                  "%s: d/dvar%zu[%zu] analytic %.6g fd %.6g", what, i, j, an[j],
                  fd);
        }
        free(an);
    }
    rf_plan_destroy(pg);
    rf_plan_destroy(pl);
}

/* sum(tanh(y) * W) for a random constant W */
static rf_node *tanh_loss(rf_graph *g, rf_node *y, const char *name)
{
    rf_shape s = rf_node_shape(y);
    int64_t n = rf_shape_numel(&s);
    float *w = malloc((size_t)n * sizeof *w);
    test_fill(w, (size_t)n, -1, 1);
    rf_node *W = rf_const(g, RF_F32, s, w, NULL);
    free(w);
    return rf_reduce_sum(g, rf_mul(g, rf_tanh(g, y, NULL), W, NULL), NULL, 0,
                         false, name);
}

static void check_gradients(void)
{
    /* repeated ids, rank-2 int32 ids, 3 uneven parts, both strategies */
    for (int div = 0; div < 2; div++) {
        rf_graph *g;
        CHECK_OK(rf_graph_create(&g));
        rf_node *parts[3];
        make_parts(g, 10, 3, parts);
        int32_t ids[2][4] = {{3, 1, 3, 9}, {0, 3, 7, 1}};
        rf_node *c = rf_const(g, RF_I32, RF_SHAPE(2, 4), ids, "ids");
        rf_node *y =
            rf_embedding_lookup(g, parts, 3, c, div ? "div" : "mod", NULL);
        rf_node *loss = tanh_loss(g, y, "loss");
        /* the slices' indices: each id's row in the part, else -1 */
        rf_node *gr[3];
        CHECK_OK(rf_gradients(g, loss, parts, 3, gr));
        for (int p = 0; p < 3; p++) {
            double ix[8];
            CHECK(test_eval(ex, g, rf_indexed_slices_indices(gr[p]), NULL, NULL,
                            0, ix, 8) == 8,
                  "indices: %s", rf_error_message());
            for (int i = 0; i < 8; i++) {
                int64_t part, row;
                ref_map(div, 3, 10, ids[i / 4][i % 4], &part, &row);
                CHECK(ix[i] == (part == p ? (double)row : -1.0),
                      "part %d entry %d: %g", p, i, ix[i]);
            }
            rf_shape ds = rf_indexed_slices_dense_shape(gr[p]);
            CHECK(ds.rank == 2 && ds.dims[0] == part_rows(10, 3, p) &&
                      ds.dims[1] == D,
                  "dense shape %lld", (long long)ds.dims[0]);
        }
        check_fd(g, loss, parts, 3, true, div ? "lookup div" : "lookup mod");
        rf_graph_destroy(g);
    }
    /* one table, Gather with repeats: indices are the ids in order */
    {
        rf_graph *g;
        CHECK_OK(rf_graph_create(&g));
        rf_node *t =
            rf_variable(g, RF_F32, RF_SHAPE(5, D), rf_init_zeros(), "t");
        int64_t ids[6] = {4, 0, 4, 4, 2, 0};
        rf_node *y =
            rf_gather(g, t, rf_const(g, RF_I64, RF_SHAPE(6), ids, NULL), NULL);
        rf_node *loss = tanh_loss(g, y, "loss");
        rf_node *gr;
        CHECK_OK(rf_gradients(g, loss, &t, 1, &gr));
        double ix[6];
        CHECK(test_eval(ex, g, rf_indexed_slices_indices(gr), NULL, NULL, 0, ix,
                        6) == 6,
              "eval");
        for (int i = 0; i < 6; i++)
            CHECK(ix[i] == (double)ids[i], "index %d: %g", i, ix[i]);
        check_fd(g, loss, &t, 1, true, "gather");
        rf_graph_destroy(g);
    }
    /* two lookups of one partitioned table: concatenated slices */
    {
        rf_graph *g;
        CHECK_OK(rf_graph_create(&g));
        rf_node *parts[2];
        make_parts(g, 7, 2, parts);
        int64_t a[3] = {6, 1, 2}, b[4] = {2, 2, 5, 0};
        rf_node *y1 = rf_embedding_lookup(
            g, parts, 2, rf_const(g, RF_I64, RF_SHAPE(3), a, NULL), "div",
            NULL);
        rf_node *y2 = rf_embedding_lookup(
            g, parts, 2, rf_const(g, RF_I64, RF_SHAPE(4), b, NULL), "div",
            NULL);
        rf_node *loss =
            rf_add(g, tanh_loss(g, y1, NULL), tanh_loss(g, y2, NULL), "loss");
        rf_node *gr[2];
        CHECK_OK(rf_gradients(g, loss, parts, 2, gr));
        double ix[7];
        CHECK(test_eval(ex, g, rf_indexed_slices_indices(gr[0]), NULL, NULL, 0,
                        ix, 7) == 7,
              "the concatenated slices do not have 3 + 4 entries");
        check_fd(g, loss, parts, 2, true, "two lookups");
        rf_graph_destroy(g);
    }
    /* a lookup and a MatMul of one table: densified and added */
    {
        rf_graph *g;
        CHECK_OK(rf_graph_create(&g));
        rf_node *t =
            rf_variable(g, RF_F32, RF_SHAPE(4, D), rf_init_zeros(), "t");
        int32_t ids[3] = {1, 3, 1};
        float xv[2 * 4];
        test_fill(xv, 8, -1, 1);
        rf_node *y = rf_embedding_lookup(
            g, &t, 1, rf_const(g, RF_I32, RF_SHAPE(3), ids, NULL), NULL, NULL);
        rf_node *m = rf_matmul(g, rf_const(g, RF_F32, RF_SHAPE(2, 4), xv, "x"),
                               t, false, false, NULL);
        rf_node *loss =
            rf_add(g, tanh_loss(g, y, NULL), tanh_loss(g, m, NULL), "loss");
        check_fd(g, loss, &t, 1, false, "lookup + matmul");
        rf_graph_destroy(g);
    }
    /* a partitioned variable from rf_get_variable */
    {
        rf_graph *g;
        CHECK_OK(rf_graph_create(&g));
        rf_partitioner pt;
        CHECK_OK(rf_fixed_size_partitioner(3, 0, &pt));
        CHECK_OK(rf_graph_set_partitioner(g, &pt));
        rf_node *table =
            rf_get_variable(g, RF_F32, RF_SHAPE(10, D), rf_init_zeros(), "emb");
        CHECK_OK(rf_graph_set_partitioner(g, NULL));
        int64_t ids[5] = {9, 0, 4, 4, 5};
        rf_node *y = rf_embedding_lookup_partitioned(
            g, table, rf_const(g, RF_I64, RF_SHAPE(5), ids, NULL), "div", NULL);
        CHECK(y && rf_node_op(y) == RF_OP_EMBEDDING_LOOKUP &&
                  rf_node_num_inputs(y) == 4,
              "%s", rf_graph_error(g));
        rf_node *parts[3];
        for (int p = 0; p < 3; p++)
            parts[p] = rf_node_input(y, 1 + (size_t)p);
        CHECK(strcmp(rf_node_name(parts[0]), "emb/part_0") == 0, "%s",
              rf_node_name(parts[0]));
        rf_node *loss = tanh_loss(g, y, "loss");
        check_fd(g, loss, parts, 3, true, "partitioned variable");
        rf_graph_destroy(g);
    }
}

/* ---- optimizers: sparse applies against a one-hot MatMul model ---------- */

enum { V = 8, B = 8, STEPS = 4 };

typedef struct model {
    rf_graph *g;
    rf_node *table[2]; /* dense: [0] only */
    rf_node *in;       /* ids int64 [B] or one-hot float [B, V] */
    rf_node *train;
    rf_plan *plan;
} model;

static void build(model *m, const rf_optim_config *cfg, bool sparse,
                  const float *w)
{
    CHECK_OK(rf_graph_create(&m->g));
    rf_graph *g = m->g;
    rf_node *y;
    if (sparse) {
        for (int p = 0; p < 2; p++)
            m->table[p] =
                rf_variable(g, RF_F32, RF_SHAPE(V / 2, D), rf_init_zeros(),
                            p ? "emb/part_1" : "emb/part_0");
        m->in = rf_placeholder(g, RF_I64, RF_SHAPE(B), "ids");
        y = rf_embedding_lookup(g, m->table, 2, m->in, "mod", NULL);
    } else {
        m->table[0] =
            rf_variable(g, RF_F32, RF_SHAPE(V, D), rf_init_zeros(), "emb");
        m->in = rf_placeholder(g, RF_F32, RF_SHAPE(B, V), "onehot");
        y = rf_matmul(g, m->in, m->table[0], false, false, NULL);
    }
    rf_node *W = rf_const(g, RF_F32, RF_SHAPE(B, D), w, "W");
    rf_node *loss = rf_reduce_sum(g, rf_mul(g, rf_tanh(g, y, NULL), W, NULL),
                                  NULL, 0, false, "loss");
    CHECK_OK(rf_minimize(g, cfg, loss, NULL, &m->train));
    CHECK_OK(rf_plan_create(ex, g, NULL, 0, &m->in, 1, &m->train, 1, &m->plan));
}

static float *dense_row(model *d, int64_t id)
{
    return (float *)rf_variable_data(d->table[0]) + id * D;
}
static float *sparse_row(model *s, int64_t id) /* mod over 2 parts */
{
    return (float *)rf_variable_data(s->table[id % 2]) + (id / 2) * D;
}

static void step(model *s, model *d, const int64_t *ids)
{
    float onehot[B * V] = {0};
    for (int b = 0; b < B; b++)
        onehot[b * V + ids[b]] = 1.0f;
    rf_tensor fs = rf_tensor_make(RF_I64, RF_SHAPE(B), (void *)ids);
    rf_tensor fd = rf_tensor_make(RF_F32, RF_SHAPE(B, V), onehot);
    CHECK_OK(rf_plan_run(s->plan, &fs, NULL));
    CHECK_OK(rf_plan_run(d->plan, &fd, NULL));
}

/* How a sparse model must compare with the dense one (TF's rules):
 * BITWISE where the sparse and dense formulas are the same float
 * operations and every row gets its gradient once; NEAR where the math
 * agrees but the rounding differs; UNTOUCHED_STILL where the dense rule
 * moves rows without gradient (momentum, rmsprop slots) and the sparse one
 * must not: both agree at the first step (fresh slots), then a row without
 * ids in a step must keep its value; UNTOUCHED_ONLY the same without the
 * first step (dense FTRL recomputes every row from its linear slot at once,
 * sparse FTRL only the rows it is given). */
typedef enum { BITWISE, NEAR, UNTOUCHED_STILL, UNTOUCHED_ONLY } expect;

static void oracle(const rf_optim_config *cfg, bool every_row_once, expect how)
{
    float w[B * D];
    test_fill(w, B * D, -1, 1);
    model s, d;
    build(&s, cfg, true, w);
    build(&d, cfg, false, w);
    CHECK_OK(rf_graph_initialize_variables(s.g));
    CHECK_OK(rf_graph_initialize_variables(d.g));
    for (int64_t id = 0; id < V; id++) {
        float *r = dense_row(&d, id);
        test_fill(r, D, -1, 1);
        memcpy(sparse_row(&s, id), r, D * sizeof(float));
    }
    float before[V * D];
    rf_graph_alloc_stats st0 = {0};
    for (int k = 0; k < STEPS; k++) {
        int64_t ids[B];
        if (every_row_once) { /* a permutation of the rows */
            for (int b = 0; b < B; b++)
                ids[b] = b;
            for (int b = B - 1; b > 0; b--) {
                int j = (int)(test_uniform() * (b + 1));
                int64_t t = ids[b];
                ids[b] = ids[j];
                ids[j] = t;
            }
        } else { /* rows 0..4 with repeats; 5..7 never */
            for (int b = 0; b < B; b++)
                ids[b] = (int64_t)(test_uniform() * 5);
        }
        for (int64_t id = 0; id < V; id++)
            memcpy(before + id * D, sparse_row(&s, id), D * sizeof(float));
        if (k == 2)
            st0 = rf_graph_alloc_stats_get();
        step(&s, &d, ids);
        for (int64_t id = 0; id < V; id++) {
            bool touched = false;
            for (int b = 0; b < B; b++)
                touched |= ids[b] == id;
            float *a = sparse_row(&s, id), *e = dense_row(&d, id);
            for (int j = 0; j < D; j++) {
                const char *kn = rf_optim_kind_name(cfg->kind);
                if (how == BITWISE)
                    CHECK(memcmp(&a[j], &e[j], sizeof(float)) == 0,
                          "%s step %d row %lld[%d]: sparse %.9g dense %.9g", kn,
                          k, (long long)id, j, a[j], e[j]);
                else if (how == NEAR || (how == UNTOUCHED_STILL && k == 0))
                    CHECK_NEAR(a[j], e[j], 1e-5, 1e-6,
                               "%s step %d row %lld[%d]", kn, k, (long long)id,
                               j);
                else if (!touched)
                    CHECK(a[j] == before[id * D + j],
                          "%s step %d: untouched row %lld moved", kn, k,
                          (long long)id);
            }
        }
    }
    /* steps 3 and 4 (same shapes) allocated nothing */
    rf_graph_alloc_stats st1 = rf_graph_alloc_stats_get();
    CHECK_EQ_U64(st1.allocations, st0.allocations);
    /* the apply ops: named as TF's sparse ops, described by apply_info */
    size_t napply = 0;
    for (size_t i = 0; i < rf_graph_num_nodes(s.g); i++) {
        rf_node *n = rf_graph_node(s.g, i);
        CHECK(rf_node_op(n) != RF_OP_APPLY_OPTIMIZER, "dense apply %s",
              rf_node_name(n));
        if (rf_node_op(n) != RF_OP_SPARSE_APPLY_OPTIMIZER)
            continue;
        rf_apply_info ai;
        CHECK_OK(rf_node_apply_info(n, &ai));
        CHECK(ai.sparse && ai.var == s.table[napply] &&
                  rf_node_dtype(ai.indices) == RF_I64 &&
                  rf_node_is_indexed_slices(ai.values) &&
                  ai.grad == ai.values &&
                  ai.num_slots == rf_optim_num_slots(cfg->kind, cfg->centered),
              "apply info of %s", rf_node_name(n));
        for (unsigned k = 0; k < ai.num_slots; k++)
            CHECK(rf_variable_slot_primary(ai.slots[k]) == ai.var, "slot %u",
                  k);
        const char *want[] = {"ScatterSub",         "SparseApplyMomentum",
                              "SparseApplyAdagrad", "SparseApplyAdam",
                              "SparseApplyRMSProp", "SparseApplyFtrl"};
        CHECK((size_t)cfg->kind < sizeof want / sizeof want[0], "kind %d",
              (int)cfg->kind);
        CHECK(strstr(rf_node_name(n), want[cfg->kind]) != NULL, "named %s",
              rf_node_name(n));
        napply++;
    }
    CHECK(napply == 2, "%zu sparse applies", napply);
    rf_plan_destroy(s.plan);
    rf_plan_destroy(d.plan);
    rf_graph_destroy(s.g);
    rf_graph_destroy(d.g);
}

static void check_optimizers(void)
{
    static const struct {
        rf_optimizer_kind kind;
        expect once, subset;
        bool regularized; /* ftrl: l1, l2 and l2 shrinkage (ApplyFtrlV2) */
    } cases[] = {
        {RF_OPTIM_SGD, BITWISE, NEAR, false},
        {RF_OPTIM_MOMENTUM, BITWISE, UNTOUCHED_STILL, false},
        {RF_OPTIM_ADAGRAD, BITWISE, NEAR, false},
        {RF_OPTIM_ADAM, NEAR, NEAR,
         false}, /* TF 1.x's sparse Adam moves every row */
        {RF_OPTIM_RMSPROP, NEAR, UNTOUCHED_STILL, false},
        {RF_OPTIM_FTRL, BITWISE, UNTOUCHED_ONLY, false},
        {RF_OPTIM_FTRL, BITWISE, UNTOUCHED_ONLY, true},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        rf_optim_config cfg;
        CHECK_OK(rf_optim_defaults(cases[c].kind, &cfg));
        cfg.learning_rate = 0.1f;
        if (cases[c].kind == RF_OPTIM_MOMENTUM ||
            cases[c].kind == RF_OPTIM_RMSPROP)
            cfg.momentum = 0.9f;
        if (cases[c].regularized) {
            cfg.l1_regularization_strength = 0.001f;
            cfg.l2_regularization_strength = 0.01f;
            cfg.l2_shrinkage_regularization_strength = 0.1f;
        }
        CHECK_OK(rf_optim_validate(&cfg));
        oracle(&cfg, true, cases[c].once);
        oracle(&cfg, false, cases[c].subset);
        printf("%-10s sparse applies match the one-hot dense model\n",
               rf_optim_kind_name(cases[c].kind));
    }
}

/* One plan fed id batches of changing sizes (the sparse apply's scratch
 * follows the layout). loss = sum(lookup), so every entry's gradient row is
 * ones: TF's ScatterSub (sgd) subtracts lr once per occurrence, in order;
 * Adagrad (after _deduplicate_indexed_slices) sees count(id) once:
 * accum += count^2, var -= lr * count / sqrt(accum). References in double
 * (sgd: float, step by step, as ScatterSub's float ops). */
static void check_changing_batches(void)
{
    for (int kind = 0; kind < 2; kind++) {
        rf_optim_config cfg;
        CHECK_OK(
            rf_optim_defaults(kind ? RF_OPTIM_ADAGRAD : RF_OPTIM_SGD, &cfg));
        cfg.learning_rate = 0.25f;
        rf_graph *g;
        CHECK_OK(rf_graph_create(&g));
        rf_node *parts[2];
        make_parts(g, 7, 2, parts);
        rf_node *ph = rf_placeholder(g, RF_I64, RF_SHAPE(-1), "ids");
        rf_node *y = rf_embedding_lookup(g, parts, 2, ph, "mod", NULL);
        rf_node *loss = rf_reduce_sum(g, y, NULL, 0, false, "loss");
        rf_node *train = NULL;
        CHECK_OK(rf_minimize(g, &cfg, loss, NULL, &train));
        CHECK_OK(rf_graph_initialize_variables(g));
        double ref[7][D], acc[7][D];
        float ref32[7][D];
        for (int64_t id = 0; id < 7; id++)
            for (int j = 0; j < D; j++) {
                float *r =
                    (float *)rf_variable_data(parts[id % 2]) + (id / 2) * D + j;
                *r = (float)(0.1 * (double)(id * D + j) - 1.0);
                ref[id][j] = ref32[id][j] = *r;
                acc[id][j] = cfg.initial_accumulator_value;
            }
        rf_plan *p = NULL;
        CHECK_OK(rf_plan_create(ex, g, NULL, 0, &ph, 1, &train, 1, &p));
        static const int64_t batch[3][12] = {
            {0, 3, 3, 6, 1, 0, 3, 5},
            {2, 2, 2},
            {6, 5, 4, 3, 2, 1, 0, 0, 1, 2, 3, 6}};
        static const int64_t sizes[3] = {8, 3, 12};
        for (int b = 0; b < 3; b++) {
            rf_tensor f =
                rf_tensor_make(RF_I64, RF_SHAPE(sizes[b]), (void *)batch[b]);
            CHECK_OK(rf_plan_run(p, &f, NULL));
            int count[7] = {0};
            for (int64_t i = 0; i < sizes[b]; i++) {
                count[batch[b][i]]++;
                for (int j = 0; !kind && j < D; j++)
                    ref32[batch[b][i]][j] -= 1.0f * cfg.learning_rate;
            }
            for (int64_t id = 0; id < 7; id++)
                for (int j = 0; j < D; j++) {
                    const float *row =
                        (float *)rf_variable_data(parts[id % 2]) + (id / 2) * D;
                    float got = row[j];
                    if (!kind) {
                        CHECK(got == ref32[id][j],
                              "sgd batch %d id %lld: %.9g, want %.9g", b,
                              (long long)id, got, ref32[id][j]);
                        continue;
                    }
                    if (count[id]) {
                        acc[id][j] += (double)count[id] * count[id];
                        ref[id][j] -=
                            cfg.learning_rate * count[id] / sqrt(acc[id][j]);
                    }
                    CHECK_NEAR(got, ref[id][j], 1e-6, 1e-6,
                               "adagrad batch %d id %lld", b, (long long)id);
                }
        }
        rf_plan_destroy(p);
        rf_graph_destroy(g);
    }
}

/* A table on the ps read by embedding_lookup: the session refuses it (the
 * same model read densely is accepted). */
/* A ps variable trained through lookups is an embedding table shard of the
 * distributed session (rf_session_create_offline describes it: rows, row
 * bytes, max_push_rows from the ids' static shape, READ_ROWS bounded by
 * it); one also read densely stays a dense shard. */
static void check_ps_tables(void)
{
    rf_cluster_flags f = {.ps_hosts = "localhost:2222",
                          .worker_hosts = "localhost:2223",
                          .job_name = "worker",
                          .task_index = "0"};
    rf_cluster *c = NULL;
    CHECK_OK(rf_cluster_resolve(&f, NULL, &c));
    CHECK(c != NULL, "no cluster");
    rf_replica_device_setter_options so;
    rf_replica_device_setter_options_init(&so);
    so.ps_tasks = 1;
    rf_replica_device_setter *setter = NULL;
    CHECK_OK(rf_replica_device_setter_create(&so, &setter));
    rf_optim_config cfg;
    CHECK_OK(rf_optim_defaults(RF_OPTIM_SGD, &cfg));
    cfg.learning_rate = 0.1f;
    for (int how = 0; how < 3; how++) { /* dense, lookup, both */
        rf_graph *g;
        CHECK_OK(rf_graph_create(&g));
        CHECK_OK(rf_graph_push_replica_device_setter(g, setter));
        rf_node *gs = rf_global_step(g);
        rf_node *t =
            rf_variable(g, RF_F32, RF_SHAPE(8, D), rf_init_zeros(), "emb");
        int64_t ids[3] = {1, 5, 1};
        rf_node *y =
            how == 0
                ? t
                : rf_embedding_lookup(
                      g, &t, 1, rf_const(g, RF_I64, RF_SHAPE(3), ids, "ids"),
                      NULL, NULL);
        rf_node *loss =
            rf_reduce_sum(g, rf_tanh(g, y, NULL), NULL, 0, false, "loss");
        if (how == 2)
            loss = rf_add(
                g, loss,
                rf_reduce_sum(g, rf_tanh(g, t, NULL), NULL, 0, false, NULL),
                "both");
        rf_node *train = NULL;
        CHECK_OK(rf_minimize(g, &cfg, loss, gs, &train));
        rf_device_fn_pop(g);
        rf_session_options o;
        rf_session_options_init(&o);
        o.train_op = train;
        rf_session *s = NULL;
        CHECK_OK(
            rf_session_create_offline(c, rf_cluster_self(c), g, ex, &o, &s));
        const rf_session_desc *d = NULL;
        CHECK_OK(rf_session_describe(s, NULL, 0, &train, 1, &d));
        CHECK(d->num_vars == 2, "%zu variables", d->num_vars);
        const rf_session_var_desc *v = &d->vars[1];
        const rf_step_op *r = &d->step[0];
        if (how == 1) {
            CHECK(v->max_push_rows == 3 && v->rows == 8 &&
                      v->row_bytes == D * sizeof(float),
                  "table: %zu rows of %zu B, max_push_rows %u", v->rows,
                  v->row_bytes, v->max_push_rows);
            CHECK(!strcmp(r->name, "READ_ROWS emb") && r->bound &&
                      r->bytes == 3 * D * sizeof(float),
                  "the table's READ: %s, %zu bytes", r->name, r->bytes);
        } else {
            CHECK(v->max_push_rows == 0 && v->rows == 0,
                  "how %d: a dense shard described as a table", how);
            CHECK(!strcmp(r->name, "READ emb") && !r->bound &&
                      r->bytes == 8 * D * sizeof(float),
                  "the dense READ: %s, %zu bytes", r->name, r->bytes);
        }
        if (how == 1) { /* the worker never holds a table */
            rf_node *fetch[2] = {t, rf_tanh(g, t, "dense_read")};
            for (int k = 0; k < 2; k++) {
                CHECK_ST(rf_session_describe(s, NULL, 0, &fetch[k], 1, &d),
                         RF_ERR_INVALID_ARG);
                CHECK_MSG(k ? "'dense_read' (Tanh) reads the embedding table "
                              "shard 'emb' whole"
                            : "fetching the embedding table shard 'emb'");
            }
        }
        rf_session_destroy(s);
        if (how == 1) { /* sync replicas with a table (apply=ps) */
            o.sync_replicas = true;
            CHECK_OK(rf_session_create_offline(c, rf_cluster_self(c), g, ex, &o,
                                               &s));
            rf_session_destroy(s);
            /* the average is applied on the ps: apply=worker is refused */
            rf_session_options w = o;
            w.apply = RF_PS_APPLY_WORKER;
            CHECK_ST(
                rf_session_create_offline(c, rf_cluster_self(c), g, ex, &w, &s),
                RF_ERR_INVALID_ARG);
            CHECK_MSG("apply=worker cannot be combined with it");
            o.sync_replicas = false;
        }
        rf_graph_destroy(g);
    }
    rf_replica_device_setter_destroy(setter);
    rf_cluster_destroy(c);
}

/* rf_embedding_map_ids: the kernels' mapping and messages, for the
 * distributed session's lookups. */
static void check_map_ids(void)
{
    rf_graph *g;
    CHECK_OK(rf_graph_create(&g));
    rf_node *parts[3];
    make_parts(g, 10, 3, parts);
    rf_node *ph = rf_placeholder(g, RF_I64, RF_SHAPE(-1), "ids");
    rf_node *mod = rf_embedding_lookup(g, parts, 3, ph, "mod", "emb");
    rf_node *div = rf_embedding_lookup(g, parts, 3, ph, "div", "emb_div");
    CHECK_OK(rf_graph_status(g));
    int64_t rows[3] = {part_rows(10, 3, 0), part_rows(10, 3, 1),
                       part_rows(10, 3, 2)};
    int64_t ids[10];
    for (int i = 0; i < 10; i++)
        ids[i] = (i * 7) % 10;
    rf_tensor t = rf_tensor_make(RF_I64, RF_SHAPE(10), ids);
    for (int d = 0; d < 2; d++) {
        int32_t part[10];
        int64_t row[10];
        CHECK_OK(rf_embedding_map_ids(d ? div : mod, &t, rows, 3, part, row));
        for (int i = 0; i < 10; i++) {
            int64_t wp, wr;
            ref_map(d, 3, 10, ids[i], &wp, &wr);
            CHECK(part[i] == wp && row[i] == wr,
                  "%s: id %" PRId64 " -> (%d, %" PRId64 "), want (%" PRId64
                  ", %" PRId64 ")",
                  d ? "div" : "mod", ids[i], part[i], row[i], wp, wr);
        }
    }
    ids[4] = 10;
    int32_t part[10];
    int64_t row[10];
    CHECK_ST(rf_embedding_map_ids(mod, &t, rows, 3, part, row),
             RF_ERR_INVALID_ARG);
    CHECK_MSG("EmbeddingLookup 'emb': ids[4] = 10 is not in [0, 10)");
    ids[4] = -1;
    CHECK_ST(rf_embedding_map_ids(mod, &t, rows, 3, part, row),
             RF_ERR_INVALID_ARG);
    CHECK_MSG("ids[4] = -1 is not in [0, 10)");
    CHECK_ST(rf_embedding_map_ids(mod, &t, rows, 2, part, row),
             RF_ERR_INVALID_ARG); /* not the node's parts */
    rf_graph_destroy(g);
}

int main(void)
{
    rf_executor_options o = {.threads = 2};
    CHECK_OK(rf_executor_create(&o, &ex));
    test_seed(14);
    check_docstring();
    for (int div = 0; div < 2; div++) {
        check_forward(13, 5, div, RF_I64, false); /* the docstring's table */
        check_forward(10, 3, div, RF_I32, true);  /* uneven, rank-2 ids */
        check_forward(12, 3, div, RF_I64, true);  /* even */
        check_forward(9, 1, div, RF_I32, false);  /* one part: a Gather */
    }
    check_bad_ids();
    check_indexed_slices();
    check_gradients();
    check_optimizers();
    check_changing_batches();
    check_ps_tables();
    check_map_ids();
    rf_executor_destroy(ex);
    printf("graph embedding: ok\n");
    return 0;
}
