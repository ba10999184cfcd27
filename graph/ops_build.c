/* graph/ops_build.c: the public builders of rdmaflow/graph.h. Each checks
 * its own arguments, fills the op's attributes and lets node_create()
 * name the node and run the shape function. */
#include <string.h>

#include "graph/graph_internal.h"

static rf_attrs no_attrs(void)
{
    rf_attrs a;
    memset(&a, 0, sizeof a);
    return a;
}

rf_node *rf_placeholder(rf_graph *g, rf_dtype dtype, rf_shape shape,
                        const char *name)
{
    rf_attrs a = no_attrs();
    if (!g)
        return NULL;
    if ((unsigned)dtype >= RF_DTYPE_COUNT)
        return graph_fail(g, RF_ERR_INVALID_ARG,
                          "Placeholder: invalid dtype %d", (int)dtype);
    for (int i = 0; i < shape.rank; i++)
        if (shape.dims[i] < -1)
            return graph_fail(g, RF_ERR_INVALID_ARG,
                              "Placeholder: invalid dimension %lld",
                              (long long)shape.dims[i]);
    a.shape = shape;
    a.dtype = dtype;
    return node_create(g, RF_OP_PLACEHOLDER, name, NULL, 0, &a);
}

rf_node *rf_const(rf_graph *g, rf_dtype dtype, rf_shape shape, const void *data,
                  const char *name)
{
    rf_attrs a = no_attrs();
    if (!g)
        return NULL;
    int64_t numel = rf_shape_numel(&shape);
    if ((unsigned)dtype >= RF_DTYPE_COUNT || numel < 0 || (numel && !data))
        return graph_fail(g, RF_ERR_INVALID_ARG,
                          "Const: needs a valid dtype, a fully known "
                          "shape and data");
    a.shape = shape;
    a.dtype = dtype;
    size_t bytes = (size_t)numel * rf_dtype_size(dtype);
    void *copy = galloc_aligned(bytes);
    if (!copy)
        return graph_fail(g, RF_ERR_NO_MEMORY, "Const: no memory");
    if (bytes)
        memcpy(copy, data, bytes);
    rf_node *n = node_create(g, RF_OP_CONST, name, NULL, 0, &a);
    if (!n) {
        gfree_aligned(copy, bytes);
        return NULL;
    }
    n->const_data = copy;
    n->const_bytes = bytes;
    return n;
}

rf_node *rf_const_f32(rf_graph *g, float value, const char *name)
{
    return rf_const(g, RF_F32, RF_SCALAR, &value, name);
}

rf_node *rf_const_i64(rf_graph *g, int64_t value, const char *name)
{
    return rf_const(g, RF_I64, RF_SCALAR, &value, name);
}

rf_node *rf_identity(rf_graph *g, rf_node *x, const char *name)
{
    return node_create(g, RF_OP_IDENTITY, name, &x, 1, NULL);
}

rf_node *rf_no_op(rf_graph *g, rf_node *const *deps, size_t n, const char *name)
{
    if (!g)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (!deps[i])
            return g->err != RF_OK
                       ? NULL
                       : graph_fail(g, RF_ERR_INVALID_ARG,
                                    "NoOp: dependency %zu is NULL", i);
    rf_node *node = node_create(g, RF_OP_NO_OP, name, NULL, 0, NULL);
    for (size_t i = 0; node && i < n; i++)
        if (rf_node_add_control_input(node, deps[i]) != RF_OK)
            return graph_fail(g, RF_ERR_INVALID_ARG, "NoOp: bad dependency %zu",
                              i);
    return node;
}

static rf_node *ref_op(rf_graph *g, rf_op_type op, rf_node *var, rf_node *value,
                       const char *name)
{
    if (var && var->op != RF_OP_VARIABLE)
        return graph_fail(g, RF_ERR_INVALID_ARG, "%s: '%s' is not a variable",
                          rf_op_name(op), var->name);
    rf_node *in[2] = {var, value};
    return node_create(g, op, name, in, 2, NULL);
}

rf_node *rf_assign(rf_graph *g, rf_node *var, rf_node *value, const char *name)
{
    return ref_op(g, RF_OP_ASSIGN, var, value, name);
}

rf_node *rf_assign_add(rf_graph *g, rf_node *var, rf_node *value,
                       const char *name)
{
    return ref_op(g, RF_OP_ASSIGN_ADD, var, value, name);
}

rf_node *rf_matmul(rf_graph *g, rf_node *a, rf_node *b, bool transpose_a,
                   bool transpose_b, const char *name)
{
    rf_attrs at = no_attrs();
    at.transpose_a = transpose_a;
    at.transpose_b = transpose_b;
    rf_node *in[2] = {a, b};
    return node_create(g, RF_OP_MATMUL, name, in, 2, &at);
}

static rf_node *binary(rf_graph *g, rf_op_type op, rf_node *a, rf_node *b,
                       const char *name)
{
    rf_node *in[2] = {a, b};
    return node_create(g, op, name, in, 2, NULL);
}

rf_node *rf_add(rf_graph *g, rf_node *a, rf_node *b, const char *name)
{
    return binary(g, RF_OP_ADD, a, b, name);
}

rf_node *rf_sub(rf_graph *g, rf_node *a, rf_node *b, const char *name)
{
    return binary(g, RF_OP_SUB, a, b, name);
}

rf_node *rf_mul(rf_graph *g, rf_node *a, rf_node *b, const char *name)
{
    return binary(g, RF_OP_MUL, a, b, name);
}

rf_node *rf_equal(rf_graph *g, rf_node *a, rf_node *b, const char *name)
{
    return binary(g, RF_OP_EQUAL, a, b, name);
}

rf_node *rf_bias_add(rf_graph *g, rf_node *x, rf_node *bias, const char *name)
{
    return binary(g, RF_OP_BIAS_ADD, x, bias, name);
}

rf_node *rf_neg(rf_graph *g, rf_node *x, const char *name)
{
    return node_create(g, RF_OP_NEG, name, &x, 1, NULL);
}

rf_node *rf_add_n(rf_graph *g, rf_node *const *xs, size_t n, const char *name)
{
    if (!g)
        return NULL;
    if (n == 0 || !xs)
        return graph_fail(g, RF_ERR_INVALID_ARG, "AddN: no inputs");
    return node_create(g, RF_OP_ADD_N, name, xs, n, NULL);
}

rf_node *rf_relu(rf_graph *g, rf_node *x, const char *name)
{
    return node_create(g, RF_OP_RELU, name, &x, 1, NULL);
}

rf_node *rf_sigmoid(rf_graph *g, rf_node *x, const char *name)
{
    return node_create(g, RF_OP_SIGMOID, name, &x, 1, NULL);
}

rf_node *rf_tanh(rf_graph *g, rf_node *x, const char *name)
{
    return node_create(g, RF_OP_TANH, name, &x, 1, NULL);
}

rf_node *rf_softmax(rf_graph *g, rf_node *logits, const char *name)
{
    return node_create(g, RF_OP_SOFTMAX, name, &logits, 1, NULL);
}

rf_node *rf_sparse_softmax_cross_entropy_with_logits(rf_graph *g,
                                                     rf_node *labels,
                                                     rf_node *logits,
                                                     const char *name)
{
    rf_node *in[2] = {logits, labels};
    return node_create(g, RF_OP_SPARSE_SOFTMAX_XENT, name, in, 2, NULL);
}

rf_node *rf_sigmoid_cross_entropy_with_logits(rf_graph *g, rf_node *labels,
                                              rf_node *logits, const char *name)
{
    rf_node *in[2] = {logits, labels};
    return node_create(g, RF_OP_SIGMOID_XENT, name, in, 2, NULL);
}

/* Normalizes axes against rank: negative from the end, sorted, unique. */
static bool norm_axes(const int *axes, int naxes, int rank, rf_attrs *a)
{
    bool seen[RF_MAX_RANK] = {false};
    if (!axes || naxes == 0) {
        for (int i = 0; i < rank; i++)
            seen[i] = true;
    } else {
        for (int i = 0; i < naxes; i++) {
            int ax = axes[i] < 0 ? axes[i] + rank : axes[i];
            if (ax < 0 || ax >= rank)
                return false;
            seen[ax] = true;
        }
    }
    a->naxes = 0;
    for (int i = 0; i < rank; i++)
        if (seen[i])
            a->axes[a->naxes++] = i;
    return true;
}

static rf_node *reduce(rf_graph *g, rf_op_type op, rf_node *x, const int *axes,
                       int naxes, bool keep_dims, const char *name)
{
    rf_attrs a = no_attrs();
    if (!g || !x)
        return node_create(g, op, name, &x, 1, NULL);
    if (naxes < 0 || naxes > RF_MAX_RANK ||
        !norm_axes(axes, naxes, x->shape.rank, &a))
        return graph_fail(g, RF_ERR_INVALID_ARG,
                          "%s: invalid reduction axes for '%s' of shape "
                          "%s",
                          rf_op_name(op), x->name, SHAPE_STR(&x->shape));
    a.keep_dims = keep_dims;
    return node_create(g, op, name, &x, 1, &a);
}

rf_node *rf_reduce_sum(rf_graph *g, rf_node *x, const int *axes, int naxes,
                       bool keep_dims, const char *name)
{
    return reduce(g, RF_OP_SUM, x, axes, naxes, keep_dims, name);
}

rf_node *rf_reduce_mean(rf_graph *g, rf_node *x, const int *axes, int naxes,
                        bool keep_dims, const char *name)
{
    return reduce(g, RF_OP_MEAN, x, axes, naxes, keep_dims, name);
}

rf_node *rf_reshape(rf_graph *g, rf_node *x, rf_shape shape, const char *name)
{
    rf_attrs a = no_attrs();
    a.shape = shape;
    return node_create(g, RF_OP_RESHAPE, name, &x, 1, &a);
}

rf_node *rf_concat(rf_graph *g, rf_node *const *xs, size_t n, int axis,
                   const char *name)
{
    rf_attrs a = no_attrs();
    if (!g)
        return NULL;
    if (n == 0 || !xs)
        return graph_fail(g, RF_ERR_INVALID_ARG, "ConcatV2: no inputs");
    if (xs[0]) {
        int rank = xs[0]->shape.rank;
        a.axis = axis < 0 ? axis + rank : axis;
        if (a.axis < 0 || a.axis >= rank)
            return graph_fail(g, RF_ERR_INVALID_ARG,
                              "ConcatV2: axis %d out of range for rank %d",
                              axis, rank);
    }
    return node_create(g, RF_OP_CONCAT, name, xs, n, &a);
}

static bool window_args_ok(int kh, int kw, int sh, int sw, rf_padding p)
{
    return kh > 0 && kw > 0 && sh > 0 && sw > 0 &&
           (p == RF_PADDING_VALID || p == RF_PADDING_SAME);
}

rf_node *rf_conv2d(rf_graph *g, rf_node *input, rf_node *filter, int stride_h,
                   int stride_w, rf_padding padding, const char *name)
{
    rf_attrs a = no_attrs();
    if (!g)
        return NULL;
    if (!window_args_ok(1, 1, stride_h, stride_w, padding))
        return graph_fail(g, RF_ERR_INVALID_ARG,
                          "Conv2D: strides must be positive and padding "
                          "SAME or VALID");
    a.strides[0] = stride_h;
    a.strides[1] = stride_w;
    a.padding = padding;
    rf_node *in[2] = {input, filter};
    return node_create(g, RF_OP_CONV2D, name, in, 2, &a);
}

rf_node *rf_max_pool(rf_graph *g, rf_node *input, int ksize_h, int ksize_w,
                     int stride_h, int stride_w, rf_padding padding,
                     const char *name)
{
    rf_attrs a = no_attrs();
    if (!g)
        return NULL;
    if (!window_args_ok(ksize_h, ksize_w, stride_h, stride_w, padding))
        return graph_fail(g, RF_ERR_INVALID_ARG,
                          "MaxPool: ksize and strides must be positive "
                          "and padding SAME or VALID");
    a.ksize[0] = ksize_h;
    a.ksize[1] = ksize_w;
    a.strides[0] = stride_h;
    a.strides[1] = stride_w;
    a.padding = padding;
    return node_create(g, RF_OP_MAX_POOL, name, &input, 1, &a);
}

rf_node *rf_argmax(rf_graph *g, rf_node *x, int axis, rf_dtype out_type,
                   const char *name)
{
    rf_attrs a = no_attrs();
    if (!g)
        return NULL;
    if (out_type != RF_I32 && out_type != RF_I64)
        return graph_fail(g, RF_ERR_INVALID_ARG,
                          "ArgMax: output type must be int32 or int64");
    if (x) {
        a.axis = axis < 0 ? axis + x->shape.rank : axis;
        if (a.axis < 0 || a.axis >= x->shape.rank)
            return graph_fail(g, RF_ERR_INVALID_ARG,
                              "ArgMax: axis %d out of range for '%s' of "
                              "shape %s",
                              axis, x->name, SHAPE_STR(&x->shape));
    }
    a.dtype = out_type;
    return node_create(g, RF_OP_ARGMAX, name, &x, 1, &a);
}

rf_node *rf_cast(rf_graph *g, rf_node *x, rf_dtype dtype, const char *name)
{
    rf_attrs a = no_attrs();
    if (!g)
        return NULL;
    if ((unsigned)dtype >= RF_DTYPE_COUNT)
        return graph_fail(g, RF_ERR_INVALID_ARG, "Cast: invalid dtype %d",
                          (int)dtype);
    a.dtype = dtype;
    return node_create(g, RF_OP_CAST, name, &x, 1, &a);
}

rf_node *rf_ones_like(rf_graph *g, rf_node *x, const char *name)
{
    return node_create(g, RF_OP_ONES_LIKE, name, &x, 1, NULL);
}

rf_node *rf_zeros_like(rf_graph *g, rf_node *x, const char *name)
{
    return node_create(g, RF_OP_ZEROS_LIKE, name, &x, 1, NULL);
}

rf_node *reduce_like(rf_graph *g, rf_node *dy, rf_node *like, const char *name)
{
    return binary(g, RF_OP_REDUCE_LIKE, dy, like, name);
}

rf_node *reshape_like(rf_graph *g, rf_node *x, rf_node *like, const char *name)
{
    return binary(g, RF_OP_RESHAPE_LIKE, x, like, name);
}
