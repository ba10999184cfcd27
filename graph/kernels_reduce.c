/* graph/kernels_reduce.c: Sum/Mean over axes, ReduceLike (the broadcast
 * gradient of Add/Sub/Mul), ReductionGrad (Sum/Mean's gradient), and
 * BiasAddGrad. Sums accumulate in double in index order. When few outputs
 * each reduce many elements, every group is cut into a fixed number of
 * parts (a function of the shape only) whose partial sums land in scratch
 * and are added in part order: parallel, and bitwise deterministic. */
#include <string.h>

#include "graph/graph_internal.h"

#define RED_GRAIN     16384 /* input elements per chunk */
#define RED_MAX_PARTS 64

typedef struct red_plan {
    int nk, nr;
    int64_t kdims[RF_MAX_RANK], kstr[RF_MAX_RANK];
    int64_t rdims[RF_MAX_RANK], rstr[RF_MAX_RANK];
    int64_t m, gsize; /* outputs, elements per output */
    size_t parts;     /* per output group */
} red_plan;

static void red_plan_init(red_plan *p, const rf_shape *s, const bool *mask)
{
    memset(p, 0, sizeof *p);
    int64_t str[RF_MAX_RANK], acc = 1;
    for (int i = s->rank - 1; i >= 0; i--) {
        str[i] = acc;
        acc *= s->dims[i];
    }
    p->m = 1;
    p->gsize = 1;
    for (int i = 0; i < s->rank; i++) {
        if (mask[i]) {
            p->rdims[p->nr] = s->dims[i];
            p->rstr[p->nr++] = str[i];
            p->gsize *= s->dims[i];
        } else {
            p->kdims[p->nk] = s->dims[i];
            p->kstr[p->nk++] = str[i];
            p->m *= s->dims[i];
        }
    }
    /* split groups only when there are too few outputs to go around */
    p->parts = 1;
    if (p->m < 16 && p->gsize >= 2 * RED_GRAIN)
        p->parts = chunks_for(p->gsize, RED_GRAIN, RED_MAX_PARTS);
}

static int64_t kept_offset(const red_plan *p, int64_t m)
{
    int64_t off = 0;
    for (int i = p->nk - 1; i >= 0; i--) {
        off += (m % p->kdims[i]) * p->kstr[i];
        m /= p->kdims[i];
    }
    return off;
}

/* Sum of group elements [g0, g1) of the group based at base. */
#define GROUP_SUM(T, ACC)                                                      \
    static ACC group_sum_##T(const red_plan *p, const T *x, int64_t base,      \
                             int64_t g0, int64_t g1)                           \
    {                                                                          \
        int64_t idx[RF_MAX_RANK], off = base, g = g0;                          \
        for (int i = p->nr - 1; i >= 0; i--) {                                 \
            idx[i] = g % p->rdims[i];                                          \
            g /= p->rdims[i];                                                  \
            off += idx[i] * p->rstr[i];                                        \
        }                                                                      \
        ACC acc = 0;                                                           \
        for (g = g0; g < g1; g++) {                                            \
            acc += (ACC)x[off];                                                \
            for (int i = p->nr - 1; i >= 0; i--) {                             \
                off += p->rstr[i];                                             \
                if (++idx[i] < p->rdims[i])                                    \
                    break;                                                     \
                off -= idx[i] * p->rstr[i];                                    \
                idx[i] = 0;                                                    \
            }                                                                  \
        }                                                                      \
        return acc;                                                            \
    }
typedef float f32_t;
GROUP_SUM(f32_t, double)
GROUP_SUM(int32_t, int64_t)
GROUP_SUM(int64_t, int64_t)

typedef struct red_job {
    red_plan p;
    const rf_tensor *x;
    rf_tensor *out;
    bool mean;
    double *partial;   /* [m][parts] when parts > 1 */
    int64_t per_chunk; /* outputs per chunk (parts == 1) */
} red_job;

static void store(red_job *j, int64_t m, double facc, int64_t iacc)
{
    switch (j->out->dtype) {
    case RF_F32:
        ((float *)j->out->data)[m] =
            (float)(j->mean && j->p.gsize ? facc / (double)j->p.gsize : facc);
        break;
    case RF_I32:
        ((int32_t *)j->out->data)[m] =
            (int32_t)(j->mean && j->p.gsize ? iacc / j->p.gsize : iacc);
        break;
    case RF_I64:
        ((int64_t *)j->out->data)[m] =
            j->mean && j->p.gsize ? iacc / j->p.gsize : iacc;
        break;
    case RF_BOOL:
        break;
    }
}

static void sum_range(const red_job *j, int64_t m, int64_t g0, int64_t g1,
                      double *facc, int64_t *iacc)
{
    int64_t base = kept_offset(&j->p, m);
    *facc = 0;
    *iacc = 0;
    switch (j->x->dtype) {
    case RF_F32:
        *facc = group_sum_f32_t(&j->p, j->x->data, base, g0, g1);
        break;
    case RF_I32:
        *iacc = group_sum_int32_t(&j->p, j->x->data, base, g0, g1);
        break;
    case RF_I64:
        *iacc = group_sum_int64_t(&j->p, j->x->data, base, g0, g1);
        break;
    case RF_BOOL:
        break;
    }
}

static void red_chunk(void *arg, size_t chunk, int tid)
{
    (void)tid;
    red_job *j = arg;
    if (j->p.parts > 1) { /* chunk = (output, part) */
        int64_t m = (int64_t)(chunk / j->p.parts);
        int64_t part = (int64_t)(chunk % j->p.parts);
        int64_t per =
            (j->p.gsize + (int64_t)j->p.parts - 1) / (int64_t)j->p.parts;
        int64_t g0 = part * per,
                g1 = g0 + per < j->p.gsize ? g0 + per : j->p.gsize;
        double f;
        int64_t i;
        sum_range(j, m, g0 < g1 ? g0 : g1, g1, &f, &i);
        j->partial[chunk] = j->x->dtype == RF_F32 ? f : (double)i;
        return;
    }
    int64_t lo = (int64_t)chunk * j->per_chunk, hi = lo + j->per_chunk;
    if (hi > j->p.m)
        hi = j->p.m;
    for (int64_t m = lo; m < hi; m++) {
        double f;
        int64_t i;
        sum_range(j, m, 0, j->p.gsize, &f, &i);
        store(j, m, f, i);
    }
}

static rf_status reduce_run(rf_kctx *k, const rf_tensor *x, const bool *mask,
                            bool mean)
{
    red_job j = {.x = x, .out = k->out, .mean = mean};
    red_plan_init(&j.p, &x->shape, mask);
    if (j.p.m == 0)
        return RF_OK;
    if (j.p.parts > 1) {
        j.partial = k->scratch;
        parallel_for(k, (size_t)j.p.m * j.p.parts, red_chunk, &j);
        for (int64_t m = 0; m < j.p.m; m++) {
            double f = 0;
            int64_t i = 0;
            for (size_t q = 0; q < j.p.parts; q++) {
                f += j.partial[(size_t)m * j.p.parts + q];
                i += (int64_t)j.partial[(size_t)m * j.p.parts + q];
            }
            store(&j, m, f, i);
        }
        return RF_OK;
    }
    int64_t grain = RED_GRAIN / (j.p.gsize ? j.p.gsize : 1);
    if (grain < 1)
        grain = 1;
    size_t chunks = chunks_for(j.p.m, grain, RED_MAX_PARTS);
    j.per_chunk = (j.p.m + (int64_t)chunks - 1) / (int64_t)chunks;
    chunks = (size_t)((j.p.m + j.per_chunk - 1) / j.per_chunk);
    parallel_for(k, chunks, red_chunk, &j);
    return RF_OK;
}

static void axes_mask(const rf_node *n, bool *mask)
{
    memset(mask, 0, RF_MAX_RANK * sizeof *mask);
    for (int i = 0; i < n->attr.naxes; i++)
        mask[n->attr.axes[i]] = true;
}

/* The reduce mask of ReduceLike(dy, like): dims of dy that like lacks or
 * has as 1. */
static void like_mask(const rf_shape *dy, const rf_shape *like, bool *mask)
{
    memset(mask, 0, RF_MAX_RANK * sizeof *mask);
    int lead = dy->rank - like->rank;
    for (int i = 0; i < dy->rank; i++)
        mask[i] = i < lead || (like->dims[i - lead] == 1 && dy->dims[i] != 1);
}

size_t scratch_reduce(const rf_node *n, const rf_shape *in, const rf_shape *out,
                      int nthreads)
{
    (void)out;
    (void)nthreads;
    bool mask[RF_MAX_RANK];
    if (n->op == RF_OP_REDUCE_LIKE)
        like_mask(&in[0], &in[1], mask);
    else
        axes_mask(n, mask);
    red_plan p;
    red_plan_init(&p, &in[0], mask);
    return p.parts > 1 ? (size_t)p.m * p.parts * sizeof(double) : 0;
}

RF_KERNEL(k_reduce)
{
    bool mask[RF_MAX_RANK];
    axes_mask(k->node, mask);
    return reduce_run(k, k->in[0], mask, k->node->op == RF_OP_MEAN);
}

RF_KERNEL(k_reduce_like)
{
    bool mask[RF_MAX_RANK];
    like_mask(&k->in[0]->shape, &k->in[1]->shape, mask);
    return reduce_run(k, k->in[0], mask, false);
}

/* ---- ReductionGrad: out[x] = dy[reduced index] (* 1/count for Mean) ---- */

typedef struct rg_job {
    int rank;
    int64_t dims[RF_MAX_RANK], sdy[RF_MAX_RANK];
    const float *dy;
    float *o;
    float scale;
    int64_t rows, row_len, per_chunk;
} rg_job;

static void rg_chunk(void *arg, size_t chunk, int tid)
{
    (void)tid;
    const rg_job *j = arg;
    int64_t lo = (int64_t)chunk * j->per_chunk, hi = lo + j->per_chunk;
    if (hi > j->rows)
        hi = j->rows;
    int64_t s_last = j->rank ? j->sdy[j->rank - 1] : 0;
    for (int64_t r = lo; r < hi; r++) {
        int64_t off = 0, q = r;
        for (int i = j->rank - 2; i >= 0; i--) {
            off += (q % j->dims[i]) * j->sdy[i];
            q /= j->dims[i];
        }
        float *o = j->o + r * j->row_len;
        for (int64_t x = 0; x < j->row_len; x++)
            o[x] = j->dy[off + x * s_last] * j->scale;
    }
}

RF_KERNEL(k_reduction_grad)
{
    const rf_shape *xs = &k->out->shape;
    bool mask[RF_MAX_RANK];
    axes_mask(k->node, mask);
    rg_job j = {.rank = xs->rank, .dy = k->in[0]->data, .o = k->out->data};
    int64_t acc = 1, count = 1;
    for (int i = xs->rank - 1; i >= 0; i--) {
        j.dims[i] = xs->dims[i];
        j.sdy[i] = mask[i] ? 0 : acc;
        if (!mask[i])
            acc *= xs->dims[i];
        else
            count *= xs->dims[i];
    }
    j.scale = k->node->attr.mean && count ? (float)(1.0 / (double)count) : 1.0f;
    if (k->out->dtype != RF_F32)
        return node_error(k->node, RF_ERR_UNSUPPORTED,
                          "only float32 gradients are supported");
    j.row_len = xs->rank ? xs->dims[xs->rank - 1] : 1;
    int64_t n = rf_shape_numel(xs);
    j.rows = j.row_len ? n / j.row_len : 0;
    if (j.rows == 0)
        return RF_OK;
    int64_t grain = RED_GRAIN / j.row_len > 0 ? RED_GRAIN / j.row_len : 1;
    size_t chunks = chunks_for(j.rows, grain, RED_MAX_PARTS);
    j.per_chunk = (j.rows + (int64_t)chunks - 1) / (int64_t)chunks;
    chunks = (size_t)((j.rows + j.per_chunk - 1) / j.per_chunk);
    parallel_for(k, chunks, rg_chunk, &j);
    return RF_OK;
}

/* ---- BiasAddGrad: sum over every dim but the last ---------------------- */

typedef struct bg_job {
    const float *dy;
    double *partial; /* [parts][c] */
    int64_t rows, c, per_part;
} bg_job;

size_t bias_grad_parts(int64_t rows, int64_t c, int64_t *per_part)
{
    int64_t grain = RED_GRAIN / (c ? c : 1);
    size_t parts = chunks_for(rows, grain > 0 ? grain : 1, RED_MAX_PARTS);
    int64_t pp = (rows + (int64_t)parts - 1) / (int64_t)parts;
    *per_part = pp < 1 ? 1 : pp;
    return parts;
}

void bias_grad_finish(const double *partial, size_t parts, int64_t c,
                      float *out)
{
    for (int64_t i = 0; i < c; i++) {
        double s = 0;
        for (size_t q = 0; q < parts; q++)
            s += partial[(int64_t)q * c + i];
        out[i] = (float)s;
    }
}

size_t scratch_bias_add_grad(const rf_node *n, const rf_shape *in,
                             const rf_shape *out, int nthreads)
{
    (void)n;
    (void)nthreads;
    int64_t c = out->dims[0], numel = rf_shape_numel(&in[0]), per_part;
    int64_t rows = c ? numel / c : 0;
    return bias_grad_parts(rows, c, &per_part) * (size_t)c * sizeof(double);
}

static void bg_chunk(void *arg, size_t part, int tid)
{
    (void)tid;
    const bg_job *j = arg;
    double *acc = j->partial + (int64_t)part * j->c;
    for (int64_t i = 0; i < j->c; i++)
        acc[i] = 0;
    int64_t lo = (int64_t)part * j->per_part, hi = lo + j->per_part;
    if (hi > j->rows)
        hi = j->rows;
    for (int64_t r = lo; r < hi; r++) {
        const float *d = j->dy + r * j->c;
        for (int64_t i = 0; i < j->c; i++)
            acc[i] += d[i];
    }
}

RF_KERNEL(k_bias_add_grad)
{
    bg_job j = {.dy = k->in[0]->data, .partial = k->scratch};
    j.c = k->out->shape.dims[0];
    int64_t numel = rf_shape_numel(&k->in[0]->shape);
    j.rows = j.c ? numel / j.c : 0;
    size_t parts = bias_grad_parts(j.rows, j.c, &j.per_part);
    /* fused: the ReluGrad producing dy already summed the parts */
    if (!k->partials_done)
        parallel_for(k, parts, bg_chunk, &j);
    bias_grad_finish(j.partial, parts, j.c, k->out->data);
    return RF_OK;
}
