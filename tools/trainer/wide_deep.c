/* tools/trainer/wide_deep.c: the wide-and-deep graph, its columns and its
 * fed batches (see wide_deep.h). */
#include "wide_deep.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/device.h"

#define WD_MAX_VARS 1024

int tr_wd_partitions(const tr_flags *f, int num_ps)
{
    return f->embedding_partitions ? (int)f->embedding_partitions : num_ps;
}

int64_t tr_wd_bucket(int64_t id, int64_t vocab, int64_t buckets)
{
    if (vocab <= buckets)
        return id;
    uint64_t z = (uint64_t)id + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (int64_t)(z % (uint64_t)buckets);
}

/* get_variable under fixed_size_partitioner(P) when the table has at least
 * P rows, then its lookup ("mod") */
static rf_node *table_lookup(tr_wd_session *s, int p, int64_t rows,
                             int64_t width, rf_initializer init,
                             const char *name, rf_node *ids)
{
    rf_graph *g = s->base.g;
    size_t first = rf_graph_num_variables(g);
    rf_partitioner part;
    bool split = p > 1 && rows >= p;
    if (split && (rf_fixed_size_partitioner(p, 0, &part) != RF_OK ||
                  rf_graph_set_partitioner(g, &part) != RF_OK))
        return NULL;
    rf_node *table =
        rf_get_variable(g, RF_F32, RF_SHAPE(rows, width), init, name);
    if (split)
        rf_graph_set_partitioner(g, NULL);
    if (s->num_tables < 2 * RF_CTR_MAX_CAT) {
        s->table_first[s->num_tables] = first;
        s->table_end[s->num_tables++] = rf_graph_num_variables(g);
    }
    return rf_embedding_lookup_partitioned(g, table, ids, "mod", NULL);
}

static int build(const tr_flags *f, int p, tr_wd_session *s)
{
    rf_graph *g = s->base.g;
    char name[160];
    s->base.global_step = rf_global_step(g);
    rf_node *wide_terms[RF_CTR_MAX_CAT + 1], *deep_in[RF_CTR_MAX_CAT + 1];
    for (uint32_t c = 0; c < s->num_cat; c++) {
        snprintf(name, sizeof name, "C%u", c + 1);
        s->ids[c] = rf_placeholder(g, RF_I64, RF_SHAPE(-1), name);
    }
    if (s->num_dense)
        s->dense =
            rf_placeholder(g, RF_F32, RF_SHAPE(-1, s->num_dense), "dense");
    s->labels = rf_placeholder(g, RF_F32, RF_SHAPE(-1, 1), "labels");
    for (uint32_t c = 0; c < s->num_cat; c++) {
        snprintf(name, sizeof name, "linear/linear_model/C%u/weights", c + 1);
        wide_terms[c] = table_lookup(s, p, s->buckets[c], 1, rf_init_zeros(),
                                     name, s->ids[c]);
        snprintf(name, sizeof name,
                 "dnn/input_from_feature_columns/C%u_embedding/"
                 "embedding_weights",
                 c + 1);
        deep_in[c] = table_lookup(
            s, p, s->buckets[c], f->embedding_dim,
            rf_init_truncated_normal(0, 1.0 / sqrt((double)f->embedding_dim)),
            name, s->ids[c]);
    }
    size_t nw = s->num_cat, nd = s->num_cat;
    if (s->num_dense) {
        rf_node *w =
            rf_variable(g, RF_F32, RF_SHAPE(s->num_dense, 1), rf_init_zeros(),
                        "linear/linear_model/dense/weights");
        wide_terms[nw++] = rf_matmul(g, s->dense, w, false, false,
                                     "linear/linear_model/dense/MatMul");
        deep_in[nd++] = s->dense;
    }
    rf_node *bias = rf_variable(g, RF_F32, RF_SHAPE(1), rf_init_zeros(),
                                "linear/linear_model/bias_weights");
    rf_node *wide = rf_bias_add(
        g,
        nw > 1 ? rf_add_n(g, wide_terms, nw, "linear/linear_model/sum")
               : wide_terms[0],
        bias, "linear/logits");
    rf_node *h = rf_concat(g, deep_in, nd, 1, "dnn/input_layer");
    for (int i = 0; i < f->hidden.nwidths; i++) {
        snprintf(name, sizeof name, "dnn/hiddenlayer_%d", i);
        h = rf_dense(g, h, f->hidden.widths[i], RF_ACT_RELU, name);
    }
    rf_node *deep = rf_dense(g, h, 1, RF_ACT_NONE, "dnn/logits");
    s->base.logits = rf_add(g, wide, deep, "logits");
    s->prob = rf_sigmoid(g, s->base.logits, "probabilities");
    s->base.loss = rf_reduce_mean(g,
                                  rf_sigmoid_cross_entropy_with_logits(
                                      g, s->labels, s->base.logits, NULL),
                                  NULL, 0, false, "loss");
    return rf_graph_status(g) == RF_OK ? 0 : -1;
}

/* gradients of every trainable variable; the wide part's ("linear/...")
 * through f->optim, the deep part's through f->optim_deep (one
 * apply_gradients over all with --optimizer) */
static int build_train_op(const tr_flags *f, tr_wd_session *s)
{
    rf_graph *g = s->base.g;
    static rf_node *vars[WD_MAX_VARS], *grads[WD_MAX_VARS];
    rf_node *wv[WD_MAX_VARS], *wg[WD_MAX_VARS], *dv[WD_MAX_VARS],
        *dg[WD_MAX_VARS];
    size_t n = rf_graph_trainable_variables(g, vars, WD_MAX_VARS);
    if (n > WD_MAX_VARS ||
        rf_gradients(g, s->base.loss, vars, n, grads) != RF_OK)
        return -1;
    if (f->optimizer_given)
        return rf_apply_gradients(g, &f->optim, vars, grads, n,
                                  s->base.global_step, NULL,
                                  &s->base.train_op) == RF_OK
                   ? 0
                   : -1;
    size_t nw = 0, nd = 0;
    for (size_t i = 0; i < n; i++) {
        if (!strncmp(rf_node_name(vars[i]), "linear/", 7)) {
            wv[nw] = vars[i];
            wg[nw++] = grads[i];
        } else {
            dv[nd] = vars[i];
            dg[nd++] = grads[i];
        }
    }
    rf_node *ops[2];
    if (rf_apply_gradients(g, &f->optim, wv, wg, nw, NULL, NULL, &ops[0]) !=
            RF_OK ||
        rf_apply_gradients(g, &f->optim_deep, dv, dg, nd, s->base.global_step,
                           NULL, &ops[1]) != RF_OK)
        return -1;
    /* train_op = group(linear_train_op, dnn_train_op) */
    s->base.train_op = rf_no_op(g, ops, 2, "train_op");
    return s->base.train_op ? 0 : -1;
}

/* var, or the variable var is an optimizer slot of, is a table's */
static bool is_table(const tr_wd_session *s, const rf_node *var)
{
    const rf_node *primary = rf_variable_slot_primary(var);
    if (!primary)
        primary = var;
    for (size_t k = 0; k < s->num_tables; k++)
        for (size_t i = s->table_first[k]; i < s->table_end[k]; i++)
            if (rf_graph_variable(s->base.g, i) == primary)
                return true;
    return false;
}

/* Every variable; distributed (tables), every one but the tables' */
static rf_status initialize(tr_wd_session *s, bool distributed)
{
    rf_graph *g = s->base.g;
    if (!distributed)
        return rf_graph_initialize_variables(g);
    for (size_t i = 0; i < rf_graph_num_variables(g); i++) {
        rf_node *v = rf_graph_variable(g, i);
        rf_status st = is_table(s, v) ? RF_OK : rf_variable_initialize(v);
        if (st != RF_OK)
            return st;
    }
    return RF_OK;
}

int tr_wd_session_create(const tr_flags *f, rf_replica_device_setter *setter,
                         int partitions, tr_wd_session *s, char *err,
                         size_t errlen)
{
    memset(s, 0, sizeof *s);
    const rf_ctr_spec *spec = &f->ctr_spec;
    s->num_cat = spec->num_cat;
    s->num_dense = spec->num_dense;
    for (uint32_t c = 0; c < s->num_cat; c++) {
        s->hashed[c] = spec->vocab[c] > f->hash_buckets;
        s->buckets[c] = s->hashed[c] ? f->hash_buckets : spec->vocab[c];
    }
    if (rf_graph_create(&s->base.g) != RF_OK) {
        snprintf(err, errlen, "creating the graph: %s", rf_error_message());
        return -1;
    }
    rf_graph_set_seed(s->base.g, f->seed);
    if (setter &&
        rf_graph_push_replica_device_setter(s->base.g, setter) != RF_OK) {
        snprintf(err, errlen, "replica_device_setter: %s", rf_error_message());
        goto fail;
    }
    if (build(f, partitions, s) != 0) {
        snprintf(err, errlen, "building the model: %s",
                 rf_graph_error(s->base.g));
        goto fail;
    }
    if (build_train_op(f, s) != 0) {
        snprintf(err, errlen, "building the optimizer: %s", rf_error_message());
        goto fail;
    }
    if (setter)
        rf_device_fn_pop(s->base.g);
    if (initialize(s, setter != NULL) != RF_OK) {
        snprintf(err, errlen, "initializing variables: %s", rf_error_message());
        goto fail;
    }
    rf_executor_options eo = {.threads = (int)f->threads};
    if (rf_executor_create(&eo, &s->base.ex) != RF_OK) {
        snprintf(err, errlen, "creating the executor: %s", rf_error_message());
        goto fail;
    }
    return 0;
fail:
    tr_wd_session_destroy(s);
    return -1;
}

void tr_wd_session_destroy(tr_wd_session *s)
{
    tr_session_destroy(&s->base);
    memset(s, 0, sizeof *s);
}

int tr_wd_batch_init(const tr_wd_session *s, size_t cap, tr_wd_batch *b)
{
    memset(b, 0, sizeof *b);
    b->cap = cap;
    size_t nc = s->num_cat ? s->num_cat : 1, nd = s->num_dense;
    b->raw = malloc(sizeof(int64_t) * cap * nc);
    b->cols = malloc(sizeof(int64_t) * cap * nc);
    b->dense = malloc(sizeof(float) * cap * (nd ? nd : 1));
    b->labels = malloc(sizeof(float) * cap);
    if (!b->raw || !b->cols || !b->dense || !b->labels) {
        tr_wd_batch_free(b);
        return -1;
    }
    return 0;
}

void tr_wd_batch_free(tr_wd_batch *b)
{
    free(b->raw);
    free(b->cols);
    free(b->dense);
    free(b->labels);
    memset(b, 0, sizeof *b);
}

size_t tr_wd_feed_nodes(const tr_wd_session *s, rf_node **nodes)
{
    size_t k = 0;
    for (uint32_t c = 0; c < s->num_cat; c++)
        nodes[k++] = s->ids[c];
    if (s->num_dense)
        nodes[k++] = s->dense;
    nodes[k++] = s->labels;
    return k;
}

void tr_wd_batch_feed(const tr_flags *f, const tr_wd_session *s, tr_wd_batch *b,
                      size_t first, size_t n)
{
    const rf_ctr_spec *spec = &f->ctr_spec;
    size_t k = 0;
    for (uint32_t c = 0; c < s->num_cat; c++) {
        int64_t *col = b->cols + (size_t)c * b->cap + first;
        const int64_t *raw = b->raw + first * s->num_cat + c;
        for (size_t j = 0; j < n; j++)
            col[j] = tr_wd_bucket(raw[j * s->num_cat], spec->vocab[c],
                                  f->hash_buckets);
        b->feeds[k++] = rf_tensor_make(RF_I64, RF_SHAPE((int64_t)n), col);
    }
    if (s->num_dense)
        b->feeds[k++] =
            rf_tensor_make(RF_F32, RF_SHAPE((int64_t)n, s->num_dense),
                           b->dense + first * s->num_dense);
    b->feeds[k++] =
        rf_tensor_make(RF_F32, RF_SHAPE((int64_t)n, 1), b->labels + first);
    b->n = n;
    b->nfeeds = tr_wd_feed_nodes(s, b->feed_nodes);
}
