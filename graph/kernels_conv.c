/* graph/kernels_conv.c: Conv2D (NHWC input, HWIO filter) by im2col + sgemm,
 * and its two gradients. Images are processed in chunks of a fixed number
 * of images (from the shape); each pool thread has its own im2col buffer in
 * the node's scratch. The filter gradient sums over the batch: chunks are
 * grouped into a fixed number of parts, each accumulating its chunks in
 * order into its own partial, and the partials are added in part order. */
#include <string.h>

#include "graph/graph_internal.h"

#ifndef CONV_ROWS      /* overridable only to measure alternatives */
#define CONV_ROWS 1024 /* output pixels per chunk (at least one image) */
#endif
#define CONV_MAX_PARTS 16

static rf_conv_geom geom_of(const rf_node *n, const rf_shape *in,
                            const rf_shape *filter)
{
    rf_conv_geom g;
    g.n = in->dims[0];
    g.ih = in->dims[1];
    g.iw = in->dims[2];
    g.ic = in->dims[3];
    g.kh = filter->dims[0];
    g.kw = filter->dims[1];
    g.oc = filter->dims[3];
    g.sh = n->attr.strides[0];
    g.sw = n->attr.strides[1];
    window_out(n, g.ih, g.kh, g.sh, n->attr.padding, &g.oh, &g.pad_top);
    window_out(n, g.iw, g.kw, g.sw, n->attr.padding, &g.ow, &g.pad_left);
    return g;
}

static int64_t imgs_per_chunk(const rf_conv_geom *g)
{
    int64_t pix = g->oh * g->ow;
    int64_t ipc = pix > 0 ? CONV_ROWS / pix : 1;
    return ipc < 1 ? 1 : ipc;
}

static size_t col_floats(const rf_conv_geom *g)
{
    return (size_t)(imgs_per_chunk(g) * g->oh * g->ow * g->kh * g->kw * g->ic);
}

static size_t n_chunks(const rf_conv_geom *g)
{
    int64_t ipc = imgs_per_chunk(g);
    return (size_t)((g->n + ipc - 1) / ipc);
}

static size_t col_bytes_all(const rf_conv_geom *g, int nthreads)
{
    return rf_align_up(col_floats(g) * sizeof(float), RF_ALIGN) *
           (size_t)nthreads;
}

static float *thread_col(void *scratch, const rf_conv_geom *g, int tid)
{
    return (float *)((char *)scratch +
                     rf_align_up(col_floats(g) * sizeof(float), RF_ALIGN) *
                         (size_t)tid);
}

/* For output column ox, the kernel columns that fall inside the input:
 * [k0, k1), starting at input column ix0 + k0. */
static void col_span(const rf_conv_geom *g, int64_t ox, int64_t *k0,
                     int64_t *k1, int64_t *ix0)
{
    *ix0 = ox * g->sw - g->pad_left;
    *k0 = *ix0 < 0 ? -*ix0 : 0;
    *k1 = g->iw - *ix0 < g->kw ? g->iw - *ix0 : g->kw;
    if (*k1 < *k0)
        *k1 = *k0;
}

/* im2col for kernel rows shorter than IM2COL_SHORT floats (5 in the first
 * layer of a 5x5 CNN on one channel): element loops per input row, since a
 * memcpy call per 20 bytes cost 2.5x the time of this (measured: 2.0-2.5
 * against 0.87 ms per 100 28x28 images). */
#define IM2COL_SHORT 16

static void im2col_short(const rf_conv_geom *g, const float *x, int64_t n0,
                         int64_t n1, float *col)
{
    int64_t K = g->kh * g->kw * g->ic, row_len = g->kw * g->ic;
    int64_t wlen = g->iw * g->ic;
    for (int64_t n = n0; n < n1; n++)
        for (int64_t oy = 0; oy < g->oh; oy++) {
            float *base = col + ((n - n0) * g->oh + oy) * g->ow * K;
            for (int64_t ky = 0; ky < g->kh; ky++) {
                int64_t iy = oy * g->sh - g->pad_top + ky;
                float *d0 = base + ky * row_len;
                if (iy < 0 || iy >= g->ih) {
                    for (int64_t ox = 0; ox < g->ow; ox++)
                        for (int64_t t = 0; t < row_len; t++)
                            d0[ox * K + t] = 0.0f;
                    continue;
                }
                const float *xr = x + (n * g->ih + iy) * wlen;
                for (int64_t ox = 0; ox < g->ow; ox++) {
                    int64_t s0 = (ox * g->sw - g->pad_left) * g->ic;
                    float *d = d0 + ox * K;
                    if (s0 >= 0 && s0 + row_len <= wlen)
                        for (int64_t t = 0; t < row_len; t++)
                            d[t] = xr[s0 + t];
                    else
                        for (int64_t t = 0; t < row_len; t++) {
                            int64_t i = s0 + t;
                            d[t] = i >= 0 && i < wlen ? xr[i] : 0.0f;
                        }
                }
            }
        }
}

/* im2col of images [n0, n1) into col[(img, oy, ox)][(kh, kw, ic)]. In NHWC
 * the kw * ic values of one kernel row are contiguous in the input, so each
 * kernel row is one copy (plus zeros where it hangs over the edge). */
static void im2col(const rf_conv_geom *g, const float *x, int64_t n0,
                   int64_t n1, float *col)
{
    if (g->kw * g->ic < IM2COL_SHORT) {
        im2col_short(g, x, n0, n1, col);
        return;
    }
    int64_t K = g->kh * g->kw * g->ic, row_len = g->kw * g->ic;
    for (int64_t n = n0; n < n1; n++)
        for (int64_t oy = 0; oy < g->oh; oy++)
            for (int64_t ox = 0; ox < g->ow; ox++) {
                float *row = col + (((n - n0) * g->oh + oy) * g->ow + ox) * K;
                int64_t k0, k1, ix0;
                col_span(g, ox, &k0, &k1, &ix0);
                for (int64_t ky = 0; ky < g->kh; ky++) {
                    int64_t iy = oy * g->sh - g->pad_top + ky;
                    float *dst = row + ky * row_len;
                    if (iy < 0 || iy >= g->ih || k1 == k0) {
                        memset(dst, 0, (size_t)row_len * sizeof(float));
                        continue;
                    }
                    if (k0 > 0)
                        memset(dst, 0, (size_t)(k0 * g->ic) * sizeof(float));
                    memcpy(dst + k0 * g->ic,
                           x + ((n * g->ih + iy) * g->iw + ix0 + k0) * g->ic,
                           (size_t)((k1 - k0) * g->ic) * sizeof(float));
                    if (k1 < g->kw)
                        memset(dst + k1 * g->ic, 0,
                               (size_t)((g->kw - k1) * g->ic) * sizeof(float));
                }
            }
}

/* dx[images n0..n1) = col2im(dcol), dx zeroed first */
static void col2im(const rf_conv_geom *g, const float *col, int64_t n0,
                   int64_t n1, float *dx)
{
    int64_t K = g->kh * g->kw * g->ic, row_len = g->kw * g->ic;
    memset(dx + n0 * g->ih * g->iw * g->ic, 0,
           (size_t)((n1 - n0) * g->ih * g->iw * g->ic) * sizeof(float));
    for (int64_t n = n0; n < n1; n++)
        for (int64_t oy = 0; oy < g->oh; oy++)
            for (int64_t ox = 0; ox < g->ow; ox++) {
                const float *row =
                    col + (((n - n0) * g->oh + oy) * g->ow + ox) * K;
                int64_t k0, k1, ix0;
                col_span(g, ox, &k0, &k1, &ix0);
                int64_t len = (k1 - k0) * g->ic;
                for (int64_t ky = 0; ky < g->kh; ky++) {
                    int64_t iy = oy * g->sh - g->pad_top + ky;
                    if (iy < 0 || iy >= g->ih || len == 0)
                        continue;
                    const float *src = row + ky * row_len + k0 * g->ic;
                    float *dst =
                        dx + ((n * g->ih + iy) * g->iw + ix0 + k0) * g->ic;
                    for (int64_t c = 0; c < len; c++)
                        dst[c] += src[c];
                }
            }
}

typedef struct conv_job {
    rf_conv_geom g;
    const float *x, *w, *dy;
    float *out;
    void *scratch;
    float *partials;   /* filter grad: [parts][K * OC] */
    const float *bias; /* forward: fused epilogue (kernels_fused.c) */
    bool relu;
    size_t chunks, parts;
} conv_job;

static void chunk_range(const conv_job *j, size_t chunk, int64_t *n0,
                        int64_t *n1)
{
    int64_t ipc = imgs_per_chunk(&j->g);
    *n0 = (int64_t)chunk * ipc;
    *n1 = *n0 + ipc < j->g.n ? *n0 + ipc : j->g.n;
}

static void fwd_chunk(void *arg, size_t chunk, int tid)
{
    const conv_job *j = arg;
    const rf_conv_geom *g = &j->g;
    int64_t n0, n1, K = g->kh * g->kw * g->ic;
    chunk_range(j, chunk, &n0, &n1);
    float *col = thread_col(j->scratch, g, tid);
    im2col(g, j->x, n0, n1, col);
    int64_t rows = (n1 - n0) * g->oh * g->ow;
    float *out = j->out + n0 * g->oh * g->ow * g->oc;
    sgemm(false, false, rows, g->oc, K, col, K, j->w, g->oc, out, g->oc, false);
    if (j->bias)
        epilogue_rows(out, rows, g->oc, g->oc, j->bias, j->relu);
}

size_t scratch_conv2d(const rf_node *n, const rf_shape *in, const rf_shape *out,
                      int nthreads)
{
    (void)out;
    rf_conv_geom g = geom_of(n, &in[0], &in[1]);
    return col_bytes_all(&g, nthreads);
}

RF_KERNEL(k_conv2d)
{
    conv_job j = {.g = geom_of(k->node, &k->in[0]->shape, &k->in[1]->shape),
                  .x = k->in[0]->data,
                  .w = k->in[1]->data,
                  .out = k->out->data,
                  .scratch = k->scratch,
                  .bias = k->epi_bias,
                  .relu = k->epi_relu};
    if (j.g.n == 0 || j.g.oh == 0 || j.g.ow == 0)
        return RF_OK;
    parallel_for(k, n_chunks(&j.g), fwd_chunk, &j);
    return RF_OK;
}

/* inputs (dy, filter, input_like) */
static void bwd_input_chunk(void *arg, size_t chunk, int tid)
{
    const conv_job *j = arg;
    const rf_conv_geom *g = &j->g;
    int64_t n0, n1, K = g->kh * g->kw * g->ic;
    chunk_range(j, chunk, &n0, &n1);
    float *col = thread_col(j->scratch, g, tid);
    int64_t rows = (n1 - n0) * g->oh * g->ow;
    sgemm(false, true, rows, K, g->oc, j->dy + n0 * g->oh * g->ow * g->oc,
          g->oc, j->w, g->oc, col, K, false);
    col2im(g, col, n0, n1, j->out);
}

size_t scratch_conv2d_backprop_input(const rf_node *n, const rf_shape *in,
                                     const rf_shape *out, int nthreads)
{
    rf_conv_geom g = geom_of(n, out, &in[1]);
    return col_bytes_all(&g, nthreads);
}

RF_KERNEL(k_conv2d_backprop_input)
{
    conv_job j = {.g = geom_of(k->node, &k->out->shape, &k->in[1]->shape),
                  .dy = k->in[0]->data,
                  .w = k->in[1]->data,
                  .out = k->out->data,
                  .scratch = k->scratch};
    if (j.g.n == 0)
        return RF_OK;
    if (j.g.oh == 0 || j.g.ow == 0) {
        memset(j.out, 0, rf_tensor_bytes(k->out));
        return RF_OK;
    }
    parallel_for(k, n_chunks(&j.g), bwd_input_chunk, &j);
    return RF_OK;
}

/* inputs (input, dy, filter_like) */
static size_t filter_parts(const rf_conv_geom *g)
{
    size_t c = n_chunks(g);
    return c < CONV_MAX_PARTS ? (c ? c : 1) : CONV_MAX_PARTS;
}

static void bwd_filter_part(void *arg, size_t part, int tid)
{
    const conv_job *j = arg;
    const rf_conv_geom *g = &j->g;
    int64_t K = g->kh * g->kw * g->ic;
    float *acc = j->partials + (size_t)part * (size_t)(K * g->oc);
    float *col = thread_col(j->scratch, g, tid);
    size_t per = (j->chunks + j->parts - 1) / j->parts;
    size_t c0 = part * per, c1 = c0 + per < j->chunks ? c0 + per : j->chunks;
    bool first = true;
    for (size_t c = c0; c < c1; c++) {
        int64_t n0, n1;
        chunk_range(j, c, &n0, &n1);
        im2col(g, j->x, n0, n1, col);
        int64_t rows = (n1 - n0) * g->oh * g->ow;
        sgemm(true, false, K, g->oc, rows, col, K,
              j->dy + n0 * g->oh * g->ow * g->oc, g->oc, acc, g->oc, !first);
        first = false;
    }
    if (first)
        memset(acc, 0, (size_t)(K * g->oc) * sizeof(float));
}

size_t scratch_conv2d_backprop_filter(const rf_node *n, const rf_shape *in,
                                      const rf_shape *out, int nthreads)
{
    rf_conv_geom g = geom_of(n, &in[0], out);
    size_t K = (size_t)(g.kh * g.kw * g.ic);
    return col_bytes_all(&g, nthreads) +
           filter_parts(&g) * K * (size_t)g.oc * sizeof(float);
}

RF_KERNEL(k_conv2d_backprop_filter)
{
    conv_job j = {.g = geom_of(k->node, &k->in[0]->shape, &k->out->shape),
                  .x = k->in[0]->data,
                  .dy = k->in[1]->data,
                  .out = k->out->data,
                  .scratch = k->scratch};
    int64_t K = j.g.kh * j.g.kw * j.g.ic;
    size_t wn = (size_t)(K * j.g.oc);
    if (j.g.n == 0 || j.g.oh == 0 || j.g.ow == 0) {
        memset(j.out, 0, wn * sizeof(float));
        return RF_OK;
    }
    j.chunks = n_chunks(&j.g);
    j.parts = filter_parts(&j.g);
    j.partials =
        (float *)((char *)k->scratch + col_bytes_all(&j.g, k->nthreads));
    parallel_for(k, j.parts, bwd_filter_part, &j);
    memcpy(j.out, j.partials, wn * sizeof(float));
    for (size_t p = 1; p < j.parts; p++) {
        const float *src = j.partials + p * wn;
        for (size_t i = 0; i < wn; i++)
            j.out[i] += src[i];
    }
    return RF_OK;
}
