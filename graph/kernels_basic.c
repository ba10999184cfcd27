/* graph/kernels_basic.c: data-movement and small kernels: Identity/Reshape
 * (copy unless aliased), Assign, AssignAdd, Cast, ArgMax, OnesLike,
 * ZerosLike, ConcatV2 and its gradient slice. */
#include <string.h>

#include "graph/graph_internal.h"

RF_KERNEL(k_identity)
{
    if (k->out->data != k->in[0]->data)
        memcpy(k->out->data, k->in[0]->data, rf_tensor_bytes(k->out));
    return RF_OK;
}

/* The output aliases the variable (input 0), so write through out. */
RF_KERNEL(k_assign)
{
    memmove(k->out->data, k->in[1]->data, rf_tensor_bytes(k->out));
    return RF_OK;
}

RF_KERNEL(k_assign_add)
{
    int64_t n = rf_shape_numel(&k->out->shape);
    switch (k->out->dtype) {
    case RF_F32: {
        float *v = k->out->data;
        const float *d = k->in[1]->data;
        for (int64_t i = 0; i < n; i++)
            v[i] += d[i];
        break;
    }
    case RF_I32: {
        int32_t *v = k->out->data;
        const int32_t *d = k->in[1]->data;
        for (int64_t i = 0; i < n; i++)
            v[i] += d[i];
        break;
    }
    case RF_I64: {
        int64_t *v = k->out->data;
        const int64_t *d = k->in[1]->data;
        for (int64_t i = 0; i < n; i++)
            v[i] += d[i];
        break;
    }
    case RF_BOOL:
        return node_error(k->node, RF_ERR_INVALID_ARG, "bool operand");
    }
    return RF_OK;
}

static double load(const void *p, rf_dtype dt, int64_t i)
{
    switch (dt) {
    case RF_F32:
        return ((const float *)p)[i];
    case RF_I32:
        return ((const int32_t *)p)[i];
    case RF_I64:
        return (double)((const int64_t *)p)[i];
    case RF_BOOL:
        return ((const uint8_t *)p)[i] != 0;
    }
    return 0;
}

RF_KERNEL(k_cast)
{
    const rf_tensor *x = k->in[0];
    rf_tensor *o = k->out;
    int64_t n = rf_shape_numel(&o->shape);
    if (x->dtype == o->dtype) {
        if (o->data != x->data)
            memcpy(o->data, x->data, rf_tensor_bytes(o));
        return RF_OK;
    }
    for (int64_t i = 0; i < n; i++) {
        /* integer to integer directly, to keep int64 exact */
        if (x->dtype == RF_I64 && o->dtype == RF_I32) {
            ((int32_t *)o->data)[i] = (int32_t)((const int64_t *)x->data)[i];
            continue;
        }
        if (x->dtype == RF_I32 && o->dtype == RF_I64) {
            ((int64_t *)o->data)[i] = ((const int32_t *)x->data)[i];
            continue;
        }
        double v = load(x->data, x->dtype, i);
        switch (o->dtype) {
        case RF_F32:
            ((float *)o->data)[i] = (float)v;
            break;
        case RF_I32: /* truncation toward zero, as static_cast */
            ((int32_t *)o->data)[i] = (int32_t)v;
            break;
        case RF_I64:
            ((int64_t *)o->data)[i] = (int64_t)v;
            break;
        case RF_BOOL:
            ((uint8_t *)o->data)[i] = v != 0;
            break;
        }
    }
    return RF_OK;
}

static void outer_inner(const rf_shape *s, int axis, int64_t *outer,
                        int64_t *inner)
{
    *outer = 1;
    *inner = 1;
    for (int i = 0; i < axis; i++)
        *outer *= s->dims[i];
    for (int i = axis + 1; i < s->rank; i++)
        *inner *= s->dims[i];
}

#define ARGMAX_LOOP(T)                                                         \
    do {                                                                       \
        const T *x = k->in[0]->data;                                           \
        for (int64_t o = 0; o < outer; o++)                                    \
            for (int64_t i = 0; i < inner; i++) {                              \
                const T *p = x + o * len * inner + i;                          \
                int64_t best = 0;                                              \
                for (int64_t a = 1; a < len; a++)                              \
                    if (p[a * inner] > p[best * inner])                        \
                        best = a;                                              \
                if (k->out->dtype == RF_I64)                                   \
                    ((int64_t *)k->out->data)[o * inner + i] = best;           \
                else                                                           \
                    ((int32_t *)k->out->data)[o * inner + i] = (int32_t)best;  \
            }                                                                  \
    } while (0)

RF_KERNEL(k_argmax)
{
    const rf_shape *s = &k->in[0]->shape;
    int axis = k->node->attr.axis;
    int64_t outer, inner, len = s->dims[axis];
    outer_inner(s, axis, &outer, &inner);
    switch (k->in[0]->dtype) {
    case RF_F32:
        ARGMAX_LOOP(float);
        break;
    case RF_I32:
        ARGMAX_LOOP(int32_t);
        break;
    case RF_I64:
        ARGMAX_LOOP(int64_t);
        break;
    case RF_BOOL:
        ARGMAX_LOOP(uint8_t);
        break;
    }
    return RF_OK;
}

static void fill(rf_tensor *o, double v)
{
    int64_t n = rf_shape_numel(&o->shape);
    for (int64_t i = 0; i < n; i++) {
        switch (o->dtype) {
        case RF_F32:
            ((float *)o->data)[i] = (float)v;
            break;
        case RF_I32:
            ((int32_t *)o->data)[i] = (int32_t)v;
            break;
        case RF_I64:
            ((int64_t *)o->data)[i] = (int64_t)v;
            break;
        case RF_BOOL:
            ((uint8_t *)o->data)[i] = v != 0;
            break;
        }
    }
}

RF_KERNEL(k_ones_like)
{
    fill(k->out, 1.0);
    return RF_OK;
}

RF_KERNEL(k_zeros_like)
{
    memset(k->out->data, 0, rf_tensor_bytes(k->out));
    return RF_OK;
}

RF_KERNEL(k_concat)
{
    int axis = k->node->attr.axis;
    size_t es = rf_dtype_size(k->out->dtype);
    int64_t outer, inner;
    outer_inner(&k->out->shape, axis, &outer, &inner);
    size_t out_row = (size_t)(k->out->shape.dims[axis] * inner) * es;
    size_t off = 0;
    for (size_t m = 0; m < k->n_in; m++) {
        size_t row = (size_t)(k->in[m]->shape.dims[axis] * inner) * es;
        const char *src = k->in[m]->data;
        char *dst = k->out->data;
        for (int64_t o = 0; o < outer; o++)
            memcpy(dst + (size_t)o * out_row + off, src + (size_t)o * row, row);
        off += row;
    }
    return RF_OK;
}

/* inputs (dy, x_0 .. x_{n-1}); output the slice of x_index */
RF_KERNEL(k_concat_grad)
{
    int axis = k->node->attr.axis, index = k->node->attr.index;
    size_t es = rf_dtype_size(k->out->dtype);
    int64_t outer, inner;
    outer_inner(&k->in[0]->shape, axis, &outer, &inner);
    size_t dy_row = (size_t)(k->in[0]->shape.dims[axis] * inner) * es;
    size_t off = 0;
    for (int m = 0; m < index; m++)
        off += (size_t)(k->in[1 + m]->shape.dims[axis] * inner) * es;
    size_t row = (size_t)(k->out->shape.dims[axis] * inner) * es;
    const char *src = k->in[0]->data;
    char *dst = k->out->data;
    for (int64_t o = 0; o < outer; o++)
        memcpy(dst + (size_t)o * row, src + (size_t)o * dy_row + off, row);
    return RF_OK;
}
