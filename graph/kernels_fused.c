/* graph/kernels_fused.c: the compute of the executor's fused groups
 * (fusion.c decides them). The forward epilogue adds a bias and applies
 * Relu to a block of a MatMul or Conv2D output right after its sgemm,
 * while the block is in cache, instead of two more passes (BiasAdd, Relu)
 * over the whole activation. ReluGrad with bias partials writes the
 * gradient and sums it into BiasAddGrad's partials in the same pass, on
 * BiasAddGrad's own partition, so BiasAddGrad only adds the parts.
 *
 * Bits: each element goes through the same float operations as in
 * BiasAdd, Relu and ReluGrad (one add; the same sign select), and every
 * partial sum adds the same values in the same row order as BiasAddGrad's
 * chunks, so fused and unfused results are bitwise equal at any thread
 * count (tests/unit/graph/test_graph_fusion.c). */
#include "graph/graph_internal.h"

void epilogue_rows(float *out, int64_t rows, int64_t cols, int64_t ld,
                   const float *bias, bool relu)
{
    for (int64_t r = 0; r < rows; r++) {
        float *o = out + r * ld;
        int64_t i = 0;
        if (relu) {
            for (; i + 4 <= cols; i += 4) {
                rf_v4f v = rf_v4_load(o + i) + rf_v4_load(bias + i);
                rf_v4_store(o + i, rf_v4_sel_pos(v, v));
            }
            for (; i < cols; i++) {
                float v = o[i] + bias[i];
                o[i] = rf_sel_pos(v, v);
            }
        } else {
            for (; i + 4 <= cols; i += 4)
                rf_v4_store(o + i, rf_v4_load(o + i) + rf_v4_load(bias + i));
            for (; i < cols; i++)
                o[i] = o[i] + bias[i];
        }
    }
}

typedef struct rgb_job {
    const float *dy, *y;
    float *g;
    double *partial; /* [parts][c] */
    int64_t rows, c, per_part;
} rgb_job;

static void rgb_chunk(void *arg, size_t part, int tid)
{
    (void)tid;
    const rgb_job *j = arg;
    double *acc = j->partial + (int64_t)part * j->c;
    for (int64_t i = 0; i < j->c; i++)
        acc[i] = 0;
    int64_t lo = (int64_t)part * j->per_part, hi = lo + j->per_part;
    if (hi > j->rows)
        hi = j->rows;
    for (int64_t r = lo; r < hi; r++) {
        const float *d = j->dy + r * j->c, *y = j->y + r * j->c;
        float *g = j->g + r * j->c;
        int64_t i = 0;
        for (; i + 4 <= j->c; i += 4) /* ReluGrad: 0 where y is 0, as TF */
            rf_v4_store(g + i,
                        rf_v4_sel_pos(rf_v4_load(y + i), rf_v4_load(d + i)));
        for (; i < j->c; i++)
            g[i] = rf_sel_pos(y[i], d[i]);
        for (i = 0; i < j->c; i++)
            acc[i] += g[i];
    }
}

rf_status relu_grad_with_bias_partials(rf_kctx *k)
{
    rgb_job j = {.dy = k->in[0]->data,
                 .y = k->in[1]->data,
                 .g = k->out->data,
                 .partial = k->bias_partials};
    const rf_shape *s = &k->out->shape;
    j.c = s->rank ? s->dims[s->rank - 1] : 1;
    int64_t n = rf_shape_numel(s);
    j.rows = j.c ? n / j.c : 0;
    size_t parts = bias_grad_parts(j.rows, j.c, &j.per_part);
    parallel_for(k, parts, rgb_chunk, &j);
    return RF_OK;
}
