/* graph/kernels_nn.c: Softmax over the last dimension, its gradient, and
 * SparseSoftmaxCrossEntropyWithLogits with its gradient, computed the
 * numerically stable way TensorFlow does: shift by the row maximum, loss =
 * log(sum(exp(x - max))) - (x[label] - max), backprop = softmax - onehot. */
#include <math.h>

#include "graph/graph_internal.h"

#define NN_GRAIN      16384
#define NN_MAX_CHUNKS 64

typedef struct nn_job {
    const rf_kctx *k;
    int64_t rows, c, per_chunk;
} nn_job;

static int64_t label_at(const rf_tensor *t, int64_t i)
{
    return t->dtype == RF_I64 ? ((const int64_t *)t->data)[i]
                              : ((const int32_t *)t->data)[i];
}

/* exp(x - max) into e (may be NULL), returns the sum in double */
static double shifted_exp(const float *x, int64_t c, float *e, float *max_out)
{
    float m = x[0];
    for (int64_t i = 1; i < c; i++)
        if (x[i] > m)
            m = x[i];
    double s = 0;
    for (int64_t i = 0; i < c; i++) {
        float v = expf(x[i] - m);
        if (e)
            e[i] = v;
        s += v;
    }
    *max_out = m;
    return s;
}

static void softmax_chunk(void *arg, size_t chunk, int tid)
{
    (void)tid;
    const nn_job *j = arg;
    const float *x = j->k->in[0]->data;
    float *o = j->k->out->data;
    int64_t lo = (int64_t)chunk * j->per_chunk, hi = lo + j->per_chunk;
    if (hi > j->rows)
        hi = j->rows;
    for (int64_t r = lo; r < hi; r++) {
        float m;
        float *y = o + r * j->c;
        double s = shifted_exp(x + r * j->c, j->c, y, &m);
        for (int64_t i = 0; i < j->c; i++)
            y[i] = (float)(y[i] / s);
    }
}

/* (dy, y): dx = (dy - sum(dy * y)) * y */
static void softmax_grad_chunk(void *arg, size_t chunk, int tid)
{
    (void)tid;
    const nn_job *j = arg;
    const float *dy = j->k->in[0]->data, *y = j->k->in[1]->data;
    float *o = j->k->out->data;
    int64_t lo = (int64_t)chunk * j->per_chunk, hi = lo + j->per_chunk;
    if (hi > j->rows)
        hi = j->rows;
    for (int64_t r = lo; r < hi; r++) {
        const float *d = dy + r * j->c, *yy = y + r * j->c;
        double s = 0;
        for (int64_t i = 0; i < j->c; i++)
            s += (double)d[i] * yy[i];
        for (int64_t i = 0; i < j->c; i++)
            o[r * j->c + i] = (d[i] - (float)s) * yy[i];
    }
}

/* in: logits, labels -> loss per row */
static void xent_chunk(void *arg, size_t chunk, int tid)
{
    (void)tid;
    const nn_job *j = arg;
    const float *x = j->k->in[0]->data;
    const rf_tensor *labels = j->k->in[1];
    float *loss = j->k->out->data;
    int64_t lo = (int64_t)chunk * j->per_chunk, hi = lo + j->per_chunk;
    if (hi > j->rows)
        hi = j->rows;
    for (int64_t r = lo; r < hi; r++) {
        float m;
        const float *row = x + r * j->c;
        double s = shifted_exp(row, j->c, NULL, &m);
        int64_t l = label_at(labels, r);
        loss[r] = (float)(log(s) - (double)(row[l] - m));
    }
}

/* in: dloss, logits, labels -> dloss * (softmax - onehot) */
static void xent_grad_chunk(void *arg, size_t chunk, int tid)
{
    (void)tid;
    const nn_job *j = arg;
    const float *dl = j->k->in[0]->data, *x = j->k->in[1]->data;
    const rf_tensor *labels = j->k->in[2];
    float *o = j->k->out->data;
    int64_t lo = (int64_t)chunk * j->per_chunk, hi = lo + j->per_chunk;
    if (hi > j->rows)
        hi = j->rows;
    for (int64_t r = lo; r < hi; r++) {
        float m;
        float *g = o + r * j->c;
        double s = shifted_exp(x + r * j->c, j->c, g, &m);
        int64_t l = label_at(labels, r);
        for (int64_t i = 0; i < j->c; i++) {
            float p = (float)(g[i] / s);
            g[i] = dl[r] * (p - (i == l ? 1.0f : 0.0f));
        }
    }
}

static rf_status check_labels(rf_kctx *k, const rf_tensor *labels, int64_t c)
{
    int64_t n = rf_shape_numel(&labels->shape);
    for (int64_t i = 0; i < n; i++) {
        int64_t l = label_at(labels, i);
        if (l < 0 || l >= c)
            return node_error(k->node, RF_ERR_INVALID_ARG,
                              "Received a label value of %lld which is "
                              "outside the valid range of [0, %lld) "
                              "(example %lld)",
                              (long long)l, (long long)c, (long long)i);
    }
    return RF_OK;
}

static rf_status run_rows(rf_kctx *k, const rf_shape *s, rf_chunk_fn fn)
{
    nn_job j = {.k = k};
    j.c = s->rank ? s->dims[s->rank - 1] : 1;
    int64_t n = rf_shape_numel(s);
    j.rows = j.c ? n / j.c : 0;
    if (j.rows == 0 || j.c == 0)
        return RF_OK;
    int64_t grain = NN_GRAIN / j.c > 0 ? NN_GRAIN / j.c : 1;
    size_t chunks = chunks_for(j.rows, grain, NN_MAX_CHUNKS);
    j.per_chunk = (j.rows + (int64_t)chunks - 1) / (int64_t)chunks;
    chunks = (size_t)((j.rows + j.per_chunk - 1) / j.per_chunk);
    parallel_for(k, chunks, fn, &j);
    return RF_OK;
}

RF_KERNEL(k_softmax)
{
    return run_rows(k, &k->out->shape, softmax_chunk);
}

RF_KERNEL(k_softmax_grad)
{
    return run_rows(k, &k->out->shape, softmax_grad_chunk);
}

RF_KERNEL(k_xent)
{
    const rf_shape *s = &k->in[0]->shape;
    if (s->dims[1] == 0 && s->dims[0] > 0)
        return node_error(k->node, RF_ERR_INVALID_ARG,
                          "logits %s have no classes", SHAPE_STR(s));
    rf_status st = check_labels(k, k->in[1], s->dims[1]);
    if (st != RF_OK)
        return st;
    return run_rows(k, s, xent_chunk);
}

RF_KERNEL(k_xent_grad)
{
    const rf_shape *s = &k->in[1]->shape;
    rf_status st = check_labels(k, k->in[2], s->dims[1]);
    if (st != RF_OK)
        return st;
    return run_rows(k, s, xent_grad_chunk);
}
