/* graph/kernels_elementwise.c: Add/Sub/Mul with NumPy broadcasting (and
 * Equal, which shares the broadcasting walk), Neg, AddN, BiasAdd, the
 * activations Relu/Sigmoid/Tanh and their gradients. Work is split into
 * row chunks whose size depends only on the shapes. */
#include <math.h>
#include <string.h>

#include "graph/graph_internal.h"

#define EW_GRAIN      32768
#define EW_MAX_CHUNKS 64

/* Output viewed as rows of its last dimension; for each operand the element
 * strides along every output dim (0 where broadcast). */
typedef struct bcast {
    int rank;
    int64_t dims[RF_MAX_RANK];
    int64_t sa[RF_MAX_RANK], sb[RF_MAX_RANK];
    int64_t row_len, rows;
} bcast;

static void strides_for(const rf_shape *s, const rf_shape *o, int64_t *st)
{
    int64_t acc = 1;
    for (int i = o->rank - 1; i >= 0; i--) {
        int si = s->rank - o->rank + i;
        int64_t d = si >= 0 ? s->dims[si] : 1;
        st[i] = d == 1 ? 0 : acc;
        acc *= d;
    }
}

static void bcast_init(bcast *bc, const rf_shape *a, const rf_shape *b,
                       const rf_shape *o)
{
    memset(bc, 0, sizeof *bc);
    bc->rank = o->rank;
    for (int i = 0; i < o->rank; i++)
        bc->dims[i] = o->dims[i];
    strides_for(a, o, bc->sa);
    strides_for(b, o, bc->sb);
    bc->row_len = o->rank ? o->dims[o->rank - 1] : 1;
    int64_t numel = rf_shape_numel(o);
    bc->rows = bc->row_len ? numel / bc->row_len : 0;
}

/* Offsets of row r's first element in a and b. */
static void row_offsets(const bcast *bc, int64_t r, int64_t *oa, int64_t *ob)
{
    int64_t a = 0, b = 0;
    for (int i = bc->rank - 2; i >= 0; i--) {
        int64_t idx = r % bc->dims[i];
        r /= bc->dims[i];
        a += idx * bc->sa[i];
        b += idx * bc->sb[i];
    }
    *oa = a;
    *ob = b;
}

typedef enum { BIN_ADD, BIN_SUB, BIN_MUL, BIN_EQ } binop;

typedef struct bin_job {
    binop op;
    rf_dtype dt;
    bcast bc;
    const void *a, *b;
    void *o;
    int64_t rows_per_chunk;
} bin_job;

#define BIN_LOOP(T)                                                            \
    do {                                                                       \
        const T *A = j->a, *B = j->b;                                          \
        T *O = j->o;                                                           \
        uint8_t *E = j->o;                                                     \
        for (int64_t r = lo; r < hi; r++) {                                    \
            int64_t oa, ob;                                                    \
            row_offsets(&j->bc, r, &oa, &ob);                                  \
            const T *pa = A + oa, *pb = B + ob;                                \
            int64_t base = r * L;                                              \
            switch (j->op) {                                                   \
            case BIN_ADD:                                                      \
                for (int64_t x = 0; x < L; x++)                                \
                    O[base + x] = pa[x * sa] + pb[x * sb];                     \
                break;                                                         \
            case BIN_SUB:                                                      \
                for (int64_t x = 0; x < L; x++)                                \
                    O[base + x] = pa[x * sa] - pb[x * sb];                     \
                break;                                                         \
            case BIN_MUL:                                                      \
                for (int64_t x = 0; x < L; x++)                                \
                    O[base + x] = pa[x * sa] * pb[x * sb];                     \
                break;                                                         \
            case BIN_EQ:                                                       \
                for (int64_t x = 0; x < L; x++)                                \
                    E[base + x] = pa[x * sa] == pb[x * sb];                    \
                break;                                                         \
            }                                                                  \
        }                                                                      \
    } while (0)

static void bin_chunk(void *arg, size_t chunk, int tid)
{
    (void)tid;
    const bin_job *j = arg;
    int64_t lo = (int64_t)chunk * j->rows_per_chunk;
    int64_t hi = lo + j->rows_per_chunk;
    if (hi > j->bc.rows)
        hi = j->bc.rows;
    int64_t L = j->bc.row_len;
    int64_t sa = j->bc.rank ? j->bc.sa[j->bc.rank - 1] : 0;
    int64_t sb = j->bc.rank ? j->bc.sb[j->bc.rank - 1] : 0;
    switch (j->dt) {
    case RF_F32:
        BIN_LOOP(float);
        break;
    case RF_I32:
        BIN_LOOP(int32_t);
        break;
    case RF_I64:
        BIN_LOOP(int64_t);
        break;
    case RF_BOOL:
        BIN_LOOP(uint8_t);
        break;
    }
}

static rf_status run_binary(rf_kctx *k, binop op)
{
    bin_job j = {.op = op,
                 .dt = k->in[0]->dtype,
                 .a = k->in[0]->data,
                 .b = k->in[1]->data,
                 .o = k->out->data};
    bcast_init(&j.bc, &k->in[0]->shape, &k->in[1]->shape, &k->out->shape);
    if (j.bc.rows == 0)
        return RF_OK;
    int64_t grain = EW_GRAIN / (j.bc.row_len ? j.bc.row_len : 1);
    if (grain < 1)
        grain = 1;
    size_t chunks = chunks_for(j.bc.rows, grain, EW_MAX_CHUNKS);
    j.rows_per_chunk = (j.bc.rows + (int64_t)chunks - 1) / (int64_t)chunks;
    chunks = (size_t)((j.bc.rows + j.rows_per_chunk - 1) / j.rows_per_chunk);
    parallel_for(k, chunks, bin_chunk, &j);
    return RF_OK;
}

RF_KERNEL(k_add)
{
    return run_binary(k, BIN_ADD);
}

RF_KERNEL(k_sub)
{
    return run_binary(k, BIN_SUB);
}

RF_KERNEL(k_mul)
{
    return run_binary(k, BIN_MUL);
}

RF_KERNEL(k_equal)
{
    return run_binary(k, BIN_EQ);
}

/* ---- flat elementwise ops ------------------------------------------------ */

typedef enum {
    UN_NEG,
    UN_RELU,
    UN_SIGMOID,
    UN_TANH,
    UN_RELU_GRAD,    /* (dy, y) */
    UN_SIGMOID_GRAD, /* (dy, y) */
    UN_TANH_GRAD,    /* (dy, y) */
    UN_ADD_N,
    UN_SIGMOID_XENT, /* (logits x, labels z) */
} unop;

typedef struct flat_job {
    unop op;
    rf_dtype dt;
    const rf_tensor *const *in;
    size_t n_in;
    void *o;
    int64_t n, per_chunk;
} flat_job;

static float sigmoidf(float x)
{
    if (x >= 0) {
        float e = expf(-x);
        return 1.0f / (1.0f + e);
    }
    float e = expf(x);
    return e / (1.0f + e);
}

#define ADD_N_LOOP(T)                                                          \
    do {                                                                       \
        T *O = j->o;                                                           \
        const T *I0 = j->in[0]->data;                                          \
        for (int64_t i = lo; i < hi; i++)                                      \
            O[i] = I0[i];                                                      \
        for (size_t m = 1; m < j->n_in; m++) {                                 \
            const T *I = j->in[m]->data;                                       \
            for (int64_t i = lo; i < hi; i++)                                  \
                O[i] += I[i];                                                  \
        }                                                                      \
    } while (0)

#define NEG_LOOP(T)                                                            \
    do {                                                                       \
        T *O = j->o;                                                           \
        const T *I = j->in[0]->data;                                           \
        for (int64_t i = lo; i < hi; i++)                                      \
            O[i] = -I[i];                                                      \
    } while (0)

static void flat_chunk(void *arg, size_t chunk, int tid)
{
    (void)tid;
    const flat_job *j = arg;
    int64_t lo = (int64_t)chunk * j->per_chunk, hi = lo + j->per_chunk;
    if (hi > j->n)
        hi = j->n;
    if (j->op == UN_ADD_N || j->op == UN_NEG) {
        switch (j->dt) {
        case RF_F32:
            if (j->op == UN_ADD_N)
                ADD_N_LOOP(float);
            else
                NEG_LOOP(float);
            break;
        case RF_I32:
            if (j->op == UN_ADD_N)
                ADD_N_LOOP(int32_t);
            else
                NEG_LOOP(int32_t);
            break;
        case RF_I64:
            if (j->op == UN_ADD_N)
                ADD_N_LOOP(int64_t);
            else
                NEG_LOOP(int64_t);
            break;
        case RF_BOOL:
            break;
        }
        return;
    }
    float *o = j->o;
    const float *x = j->in[0]->data;
    const float *y = j->n_in > 1 ? j->in[1]->data : NULL;
    switch (j->op) {
    case UN_RELU: {
        int64_t i = lo;
        for (; i + 4 <= hi; i += 4) {
            rf_v4f v = rf_v4_load(x + i);
            rf_v4_store(o + i, rf_v4_sel_pos(v, v));
        }
        for (; i < hi; i++)
            o[i] = rf_sel_pos(x[i], x[i]);
        break;
    }
    case UN_SIGMOID:
        for (int64_t i = lo; i < hi; i++)
            o[i] = sigmoidf(x[i]);
        break;
    case UN_TANH:
        for (int64_t i = lo; i < hi; i++)
            o[i] = tanhf(x[i]);
        break;
    case UN_RELU_GRAD: { /* x = dy, y = relu output: 0 at 0, as TF */
        int64_t i = lo;
        for (; i + 4 <= hi; i += 4)
            rf_v4_store(o + i,
                        rf_v4_sel_pos(rf_v4_load(y + i), rf_v4_load(x + i)));
        for (; i < hi; i++)
            o[i] = rf_sel_pos(y[i], x[i]);
        break;
    }
    case UN_SIGMOID_GRAD:
        for (int64_t i = lo; i < hi; i++)
            o[i] = x[i] * (y[i] * (1.0f - y[i]));
        break;
    case UN_TANH_GRAD:
        for (int64_t i = lo; i < hi; i++)
            o[i] = x[i] * (1.0f - y[i] * y[i]);
        break;
    case UN_SIGMOID_XENT: /* max(x, 0) - x z + log1p(exp(-|x|)), TF's form */
        for (int64_t i = lo; i < hi; i++) {
            float relu = x[i] >= 0.0f ? x[i] : 0.0f;
            float neg_abs = x[i] >= 0.0f ? -x[i] : x[i];
            o[i] = (relu - x[i] * y[i]) + log1pf(expf(neg_abs));
        }
        break;
    default:
        break;
    }
}

static rf_status run_flat(rf_kctx *k, unop op)
{
    flat_job j = {.op = op,
                  .dt = k->out->dtype,
                  .in = k->in,
                  .n_in = k->n_in,
                  .o = k->out->data};
    j.n = rf_shape_numel(&k->out->shape);
    if (j.n <= 0)
        return RF_OK;
    size_t chunks = chunks_for(j.n, EW_GRAIN, EW_MAX_CHUNKS);
    j.per_chunk = (j.n + (int64_t)chunks - 1) / (int64_t)chunks;
    chunks = (size_t)((j.n + j.per_chunk - 1) / j.per_chunk);
    parallel_for(k, chunks, flat_chunk, &j);
    return RF_OK;
}

RF_KERNEL(k_neg)
{
    return run_flat(k, UN_NEG);
}

RF_KERNEL(k_add_n)
{
    return run_flat(k, UN_ADD_N);
}

RF_KERNEL(k_relu)
{
    return run_flat(k, UN_RELU);
}

RF_KERNEL(k_sigmoid)
{
    return run_flat(k, UN_SIGMOID);
}

RF_KERNEL(k_tanh)
{
    return run_flat(k, UN_TANH);
}

RF_KERNEL(k_sigmoid_xent)
{
    return run_flat(k, UN_SIGMOID_XENT);
}

RF_KERNEL(k_relu_grad)
{
    if (k->bias_partials) /* fused with the BiasAddGrad of its output */
        return relu_grad_with_bias_partials(k);
    return run_flat(k, UN_RELU_GRAD);
}

RF_KERNEL(k_sigmoid_grad)
{
    return run_flat(k, UN_SIGMOID_GRAD);
}

RF_KERNEL(k_tanh_grad)
{
    return run_flat(k, UN_TANH_GRAD);
}

/* ---- BiasAdd ------------------------------------------------------------- */

typedef struct bias_job {
    const float *x, *bias;
    float *o;
    int64_t rows, c, per_chunk;
} bias_job;

static void bias_chunk(void *arg, size_t chunk, int tid)
{
    (void)tid;
    const bias_job *j = arg;
    int64_t lo = (int64_t)chunk * j->per_chunk, hi = lo + j->per_chunk;
    if (hi > j->rows)
        hi = j->rows;
    for (int64_t r = lo; r < hi; r++) {
        const float *x = j->x + r * j->c;
        float *o = j->o + r * j->c;
        int64_t i = 0;
        for (; i + 4 <= j->c; i += 4)
            rf_v4_store(o + i, rf_v4_load(x + i) + rf_v4_load(j->bias + i));
        for (; i < j->c; i++)
            o[i] = x[i] + j->bias[i];
    }
}

RF_KERNEL(k_bias_add)
{
    bias_job j = {
        .x = k->in[0]->data, .bias = k->in[1]->data, .o = k->out->data};
    const rf_shape *s = &k->out->shape;
    j.c = s->dims[s->rank - 1];
    int64_t n = rf_shape_numel(s);
    j.rows = j.c ? n / j.c : 0;
    if (j.rows == 0)
        return RF_OK;
    int64_t grain = EW_GRAIN / j.c > 0 ? EW_GRAIN / j.c : 1;
    size_t chunks = chunks_for(j.rows, grain, EW_MAX_CHUNKS);
    j.per_chunk = (j.rows + (int64_t)chunks - 1) / (int64_t)chunks;
    chunks = (size_t)((j.rows + j.per_chunk - 1) / j.per_chunk);
    parallel_for(k, chunks, bias_chunk, &j);
    return RF_OK;
}
