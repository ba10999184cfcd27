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
    window_out(n, j->ih, j->kh, j->sh, n->attr.padding, &j->oh, &j->pt);
    window_out(n, j->iw, j->kw, j->sw, n->attr.padding, &j->ow, &j->pl);
    int64_t per_img = j->ih * j->iw * j->c;
    int64_t grain = per_img ? POOL_GRAIN / per_img : 1;
    j->per_chunk = grain < 1 ? 1 : grain;
}

/* Clipped window rows/cols of output (oy, ox): [y0, y1) x [x0, x1). */
static void window(const pool_job *j, int64_t oy, int64_t ox, int64_t *y0,
                   int64_t *y1, int64_t *x0, int64_t *x1)
{
    int64_t ys = oy * j->sh - j->pt, xs = ox * j->sw - j->pl;
    *y0 = ys < 0 ? 0 : ys;
    *y1 = ys + j->kh < j->ih ? ys + j->kh : j->ih;
    *x0 = xs < 0 ? 0 : xs;
    *x1 = xs + j->kw < j->iw ? xs + j->kw : j->iw;
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
                int64_t y0, y1, x0, x1;
                window(j, oy, ox, &y0, &y1, &x0, &x1);
                for (int64_t c = 0; c < j->c; c++)
                    o[c] = -INFINITY;
                for (int64_t y = y0; y < y1; y++)
                    for (int64_t x = x0; x < x1; x++) {
                        const float *p =
                            j->x + ((n * j->ih + y) * j->iw + x) * j->c;
                        int64_t c = 0;
                        for (; c + 4 <= j->c; c += 4)
                            rf_v4_store(o + c, rf_v4_max(rf_v4_load(p + c),
                                                         rf_v4_load(o + c)));
                        for (; c < j->c; c++)
                            o[c] = rf_maxf(p[c], o[c]);
                    }
            }
}

/* One window's gradient over all channels: per channel, the scan keeps the
 * value and the window position (0 .. window size - 1, row major) of the
 * first maximum (a later element wins only if strictly greater); the
 * second pass adds the gradient where the position matches. Four channels
 * at a time in vector registers with branch-free selects: with a branch per
 * element, which of two random values is larger mispredicts half the time. */
static void grad_window(const pool_job *j, int64_t n, int64_t y0, int64_t y1,
                        int64_t x0, int64_t x1, const float *d)
{
    int64_t row = j->iw * j->c;
    const float *x = j->x + ((n * j->ih + y0) * j->iw + x0) * j->c;
    float *out = j->out + ((n * j->ih + y0) * j->iw + x0) * j->c;
    int64_t c = 0;
    for (; c + 4 <= j->c; c += 4) {
        rf_v4f best = rf_v4_load(x + c);
        rf_v4i at = {0, 0, 0, 0}, pos = at;
        for (int64_t y = 0; y < y1 - y0; y++)
            for (int64_t xx = 0; xx < x1 - x0; xx++, pos += 1) {
                rf_v4f v = rf_v4_load(x + y * row + xx * j->c + c);
                rf_v4i gt = v > best;
                at = (pos & gt) | (at & ~gt);
                best = (rf_v4f)(((rf_v4i)v & gt) | ((rf_v4i)best & ~gt));
            }
        rf_v4f g = rf_v4_load(d + c);
        pos = (rf_v4i){0, 0, 0, 0};
        for (int64_t y = 0; y < y1 - y0; y++)
            for (int64_t xx = 0; xx < x1 - x0; xx++, pos += 1) {
                float *o = out + y * row + xx * j->c + c;
                rf_v4f ov = rf_v4_load(o);
                rf_v4i hit = at == pos;
                rf_v4_store(o, (rf_v4f)(((rf_v4i)(ov + g) & hit) |
                                        ((rf_v4i)ov & ~hit)));
            }
    }
    for (; c < j->c; c++) {
        float best = x[c];
        int64_t at = 0, pos = 0;
        for (int64_t y = 0; y < y1 - y0; y++)
            for (int64_t xx = 0; xx < x1 - x0; xx++, pos++) {
                float v = x[y * row + xx * j->c + c];
                at = v > best ? pos : at;
                best = rf_maxf(v, best);
            }
        int64_t w = x1 - x0;
        out[(at / w) * row + (at % w) * j->c + c] += d[c];
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
                int64_t y0, y1, x0, x1;
                window(j, oy, ox, &y0, &y1, &x0, &x1);
                if (y0 >= y1 || x0 >= x1)
                    continue;
                grad_window(j, n, y0, y1, x0, x1, d);
            }
}

RF_KERNEL(k_max_pool)
{
    pool_job j = {.x = k->in[0]->data, .out = k->out->data};
    pool_init(&j, k, &k->in[0]->shape);
    if (j.n == 0)
        return RF_OK;
    size_t chunks = (size_t)((j.n + j.per_chunk - 1) / j.per_chunk);
    parallel_for(k, chunks, pool_chunk, &j);
    return RF_OK;
}

/* inputs (x, dy) */
RF_KERNEL(k_max_pool_grad)
{
    pool_job j = {
        .x = k->in[0]->data, .dy = k->in[1]->data, .out = k->out->data};
    pool_init(&j, k, &k->in[0]->shape);
    if (j.n == 0)
        return RF_OK;
    size_t chunks = (size_t)((j.n + j.per_chunk - 1) / j.per_chunk);
    parallel_for(k, chunks, pool_grad_chunk, &j);
    return RF_OK;
}
