/* graph/kernels_pool.c: MaxPool (NHWC, SAME/VALID; padded positions never
 * win) and MaxPoolGrad, which routes each output gradient to the first
 * maximum of its window in row-major order (strictly-greater scan), as
 * TensorFlow's CPU MaxPoolGrad; overlapping windows add up. Parallel over
 * image chunks, which own disjoint parts of the output. */
#include <math.h>
#include <string.h>

#include "graph/graph_internal.h"

#define POOL_GRAIN 16384

typedef struct pool_job {
    int64_t n, ih, iw, c, kh, kw, sh, sw, oh, ow, pt, pl, per_chunk;
    const float *x, *dy;
    float *out;
} pool_job;

static void pool_init(pool_job *j, const rf_kctx *k, const rf_shape *in)
{
    const rf_node *n = k->node;
    j->n = in->dims[0];
    j->ih = in->dims[1];
    j->iw = in->dims[2];
    j->c = in->dims[3];
    j->kh = n->attr.ksize[0];
    j->kw = n->attr.ksize[1];
    j->sh = n->attr.strides[0];
    j->sw = n->attr.strides[1];
    rf_window_out(n, j->ih, j->kh, j->sh, n->attr.padding, &j->oh, &j->pt);
    rf_window_out(n, j->iw, j->kw, j->sw, n->attr.padding, &j->ow, &j->pl);
    int64_t per_img = j->ih * j->iw * j->c;
    int64_t grain = per_img ? POOL_GRAIN / per_img : 1;
    j->per_chunk = grain < 1 ? 1 : grain;
}

/* Index (into x) of the first maximum of window (n, oy, ox) channel c. */
static int64_t window_argmax(const pool_job *j, int64_t n, int64_t oy,
                             int64_t ox, int64_t c)
{
    int64_t y0 = oy * j->sh - j->pt, x0 = ox * j->sw - j->pl;
    int64_t best = -1;
    float bv = -INFINITY;
    for (int64_t y = y0 < 0 ? 0 : y0; y < y0 + j->kh && y < j->ih; y++)
        for (int64_t x = x0 < 0 ? 0 : x0; x < x0 + j->kw && x < j->iw; x++) {
            int64_t idx = ((n * j->ih + y) * j->iw + x) * j->c + c;
            if (best < 0 || j->x[idx] > bv) {
                best = idx;
                bv = j->x[idx];
            }
        }
    return best;
}

static void pool_chunk(void *arg, size_t chunk, int tid)
{
    (void)tid;
    const pool_job *j = arg;
    int64_t n0 = (int64_t)chunk * j->per_chunk, n1 = n0 + j->per_chunk;
    if (n1 > j->n)
        n1 = j->n;
    for (int64_t n = n0; n < n1; n++)
        for (int64_t oy = 0; oy < j->oh; oy++)
            for (int64_t ox = 0; ox < j->ow; ox++) {
                float *o = j->out + ((n * j->oh + oy) * j->ow + ox) * j->c;
                int64_t y0 = oy * j->sh - j->pt, x0 = ox * j->sw - j->pl;
                for (int64_t c = 0; c < j->c; c++)
                    o[c] = -INFINITY;
                for (int64_t y = y0 < 0 ? 0 : y0; y < y0 + j->kh && y < j->ih;
                     y++)
                    for (int64_t x = x0 < 0 ? 0 : x0;
                         x < x0 + j->kw && x < j->iw; x++) {
                        const float *p =
                            j->x + ((n * j->ih + y) * j->iw + x) * j->c;
                        for (int64_t c = 0; c < j->c; c++)
                            if (p[c] > o[c])
                                o[c] = p[c];
                    }
            }
}

static void pool_grad_chunk(void *arg, size_t chunk, int tid)
{
    (void)tid;
    const pool_job *j = arg;
    int64_t n0 = (int64_t)chunk * j->per_chunk, n1 = n0 + j->per_chunk;
    if (n1 > j->n)
        n1 = j->n;
    int64_t img = j->ih * j->iw * j->c;
    memset(j->out + n0 * img, 0, (size_t)((n1 - n0) * img) * sizeof(float));
    for (int64_t n = n0; n < n1; n++)
        for (int64_t oy = 0; oy < j->oh; oy++)
            for (int64_t ox = 0; ox < j->ow; ox++) {
                const float *d = j->dy + ((n * j->oh + oy) * j->ow + ox) * j->c;
                for (int64_t c = 0; c < j->c; c++) {
                    int64_t a = window_argmax(j, n, oy, ox, c);
                    if (a >= 0)
                        j->out[a] += d[c];
                }
            }
}

RF_KERNEL(rf_k_max_pool)
{
    pool_job j = {.x = k->in[0]->data, .out = k->out->data};
    pool_init(&j, k, &k->in[0]->shape);
    if (j.n == 0)
        return RF_OK;
    size_t chunks = (size_t)((j.n + j.per_chunk - 1) / j.per_chunk);
    rf_parallel_for(k, chunks, pool_chunk, &j);
    return RF_OK;
}

/* inputs (x, dy) */
RF_KERNEL(rf_k_max_pool_grad)
{
    pool_job j = {
        .x = k->in[0]->data, .dy = k->in[1]->data, .out = k->out->data};
    pool_init(&j, k, &k->in[0]->shape);
    if (j.n == 0)
        return RF_OK;
    size_t chunks = (size_t)((j.n + j.per_chunk - 1) / j.per_chunk);
    rf_parallel_for(k, chunks, pool_grad_chunk, &j);
    return RF_OK;
}
