/* graph/grad_fns.c: the gradient builder of every differentiable op (the
 * `grad` column of the op table), TensorFlow's math_grad.py / nn_grad.py
 * rules: broadcast gradients reduced back to each operand's shape, MatMul's
 * four transpose cases, ReLU/Sigmoid/Tanh/Softmax from the op's output,
 * SparseSoftmaxCrossEntropy's softmax - onehot, Conv2D's input and filter
 * backprops, MaxPool's routing to the window's first maximum. */
#include <string.h>

#include "graph/graph_internal.h"

static rf_attrs attrs_of(const rf_node *n)
{
    rf_attrs a = n->attr;
    a.optim = NULL;
    return a;
}

/* dy summed down to x's shape when x was broadcast in the forward op. */
static rf_node *reduce_to(rf_graph *g, rf_node *dy, rf_node *x)
{
    if (!dy)
        return NULL;
    if (rf_shape_is_known(&dy->shape) && rf_shape_equal(&dy->shape, &x->shape))
        return dy;
    return reduce_like(g, dy, x, NULL);
}

/* Builders record failures in the graph (rf_gradients starts from a clean
 * graph status), so the status after building is the result. */
static rf_status done(rf_graph *g, rf_node **dx, size_t n)
{
    (void)dx;
    (void)n;
    return g->err;
}

RF_GRAD(grad_identity)
{
    (void)g;
    (void)n;
    dx[0] = dy;
    return RF_OK;
}

RF_GRAD(grad_matmul)
{
    rf_node *a = n->inputs[0], *b = n->inputs[1];
    bool ta = n->attr.transpose_a, tb = n->attr.transpose_b;
    if (!ta && !tb) {
        dx[0] = rf_matmul(g, dy, b, false, true, NULL);
        dx[1] = rf_matmul(g, a, dy, true, false, NULL);
    } else if (!ta && tb) {
        dx[0] = rf_matmul(g, dy, b, false, false, NULL);
        dx[1] = rf_matmul(g, dy, a, true, false, NULL);
    } else if (ta && !tb) {
        dx[0] = rf_matmul(g, b, dy, false, true, NULL);
        dx[1] = rf_matmul(g, a, dy, false, false, NULL);
    } else {
        dx[0] = rf_matmul(g, b, dy, true, true, NULL);
        dx[1] = rf_matmul(g, dy, a, true, true, NULL);
    }
    return done(g, dx, 2);
}

RF_GRAD(grad_add)
{
    dx[0] = reduce_to(g, dy, n->inputs[0]);
    dx[1] = reduce_to(g, dy, n->inputs[1]);
    return done(g, dx, 2);
}

RF_GRAD(grad_sub)
{
    dx[0] = reduce_to(g, dy, n->inputs[0]);
    dx[1] = reduce_to(g, rf_neg(g, dy, NULL), n->inputs[1]);
    return done(g, dx, 2);
}

RF_GRAD(grad_mul)
{
    rf_node *a = n->inputs[0], *b = n->inputs[1];
    dx[0] = reduce_to(g, rf_mul(g, dy, b, NULL), a);
    dx[1] = reduce_to(g, rf_mul(g, a, dy, NULL), b);
    return done(g, dx, 2);
}

RF_GRAD(grad_neg)
{
    (void)n;
    dx[0] = rf_neg(g, dy, NULL);
    return done(g, dx, 1);
}

RF_GRAD(grad_add_n)
{
    (void)g;
    for (size_t i = 0; i < n->n_inputs; i++)
        dx[i] = dy;
    return RF_OK;
}

RF_GRAD(grad_bias_add)
{
    (void)n;
    dx[0] = dy;
    dx[1] = node_create(g, RF_OP_BIAS_ADD_GRAD, NULL, &dy, 1, NULL);
    return done(g, dx, 2);
}

static rf_node *unary_grad(rf_graph *g, rf_op_type op, rf_node *dy, rf_node *y)
{
    rf_node *in[2] = {dy, y};
    return node_create(g, op, NULL, in, 2, NULL);
}

RF_GRAD(grad_relu)
{
    dx[0] = unary_grad(g, RF_OP_RELU_GRAD, dy, n);
    return done(g, dx, 1);
}

RF_GRAD(grad_sigmoid)
{
    dx[0] = unary_grad(g, RF_OP_SIGMOID_GRAD, dy, n);
    return done(g, dx, 1);
}

RF_GRAD(grad_tanh)
{
    dx[0] = unary_grad(g, RF_OP_TANH_GRAD, dy, n);
    return done(g, dx, 1);
}

RF_GRAD(grad_softmax)
{
    dx[0] = unary_grad(g, RF_OP_SOFTMAX_GRAD, dy, n);
    return done(g, dx, 1);
}

/* inputs (logits, labels) */
RF_GRAD(grad_xent)
{
    rf_node *in[3] = {dy, n->inputs[0], n->inputs[1]};
    dx[0] = node_create(g, RF_OP_SPARSE_SOFTMAX_XENT_GRAD, NULL, in, 3, NULL);
    dx[1] = NULL;
    return done(g, dx, 1);
}

/* inputs (logits x, labels z): dy * (sigmoid(x) - z) and dy * -x */
RF_GRAD(grad_sigmoid_xent)
{
    rf_node *x = n->inputs[0], *z = n->inputs[1];
    dx[0] = rf_mul(g, dy, rf_sub(g, rf_sigmoid(g, x, NULL), z, NULL), NULL);
    dx[1] = rf_neg(g, rf_mul(g, dy, x, NULL), NULL);
    return done(g, dx, 2);
}

static rf_status reduction(rf_graph *g, rf_node *n, rf_node *dy, rf_node **dx,
                           bool mean)
{
    rf_attrs a = attrs_of(n);
    a.mean = mean;
    rf_node *in[2] = {dy, n->inputs[0]};
    dx[0] = node_create(g, RF_OP_REDUCTION_GRAD, NULL, in, 2, &a);
    return done(g, dx, 1);
}

RF_GRAD(grad_sum)
{
    return reduction(g, n, dy, dx, false);
}

RF_GRAD(grad_mean)
{
    return reduction(g, n, dy, dx, true);
}

RF_GRAD(grad_reshape)
{
    dx[0] = reshape_like(g, dy, n->inputs[0], NULL);
    if (n->n_inputs > 1)
        dx[1] = NULL;
    return done(g, dx, 1);
}

RF_GRAD(grad_concat)
{
    size_t m = n->n_inputs;
    rf_node *small[8],
        **in = m + 1 <= 8 ? small : gmalloc((m + 1) * sizeof *in);
    if (!in) {
        graph_fail(g, RF_ERR_NO_MEMORY, "ConcatGrad: no memory");
        return RF_ERR_NO_MEMORY;
    }
    in[0] = dy;
    memcpy(in + 1, n->inputs, m * sizeof *in);
    for (size_t i = 0; i < m; i++) {
        rf_attrs a = attrs_of(n);
        a.index = (int)i;
        dx[i] = node_create(g, RF_OP_CONCAT_GRAD, NULL, in, m + 1, &a);
    }
    if (in != small)
        gfree(in);
    return done(g, dx, m);
}

RF_GRAD(grad_conv2d)
{
    rf_attrs a = attrs_of(n);
    rf_node *x = n->inputs[0], *w = n->inputs[1];
    rf_node *bi[3] = {dy, w, x}, *bf[3] = {x, dy, w};
    dx[0] = node_create(g, RF_OP_CONV2D_BACKPROP_INPUT, NULL, bi, 3, &a);
    dx[1] = node_create(g, RF_OP_CONV2D_BACKPROP_FILTER, NULL, bf, 3, &a);
    return done(g, dx, 2);
}

RF_GRAD(grad_max_pool)
{
    rf_attrs a = attrs_of(n);
    rf_node *in[2] = {n->inputs[0], dy};
    dx[0] = node_create(g, RF_OP_MAX_POOL_GRAD, NULL, in, 2, &a);
    return done(g, dx, 1);
}

RF_GRAD(grad_cast)
{
    rf_node *x = n->inputs[0];
    if (x->dtype != RF_F32 || n->dtype != RF_F32) {
        dx[0] = NULL;
        return RF_OK;
    }
    dx[0] = rf_cast(g, dy, x->dtype, NULL);
    return done(g, dx, 1);
}

/* values = dy as [n, params.shape[1:]] for n ids */
static rf_node *rows_of(rf_graph *g, rf_node *dy, const rf_shape *params)
{
    int64_t d[RF_MAX_RANK];
    d[0] = -1;
    for (int i = 1; i < params->rank; i++)
        d[i] = params->dims[i];
    return rf_reshape(g, dy, rf_shape_make(params->rank, d), NULL);
}

/* TF's _GatherV2Grad (array_grad.py): IndexedSlices(values = dy reshaped to
 * [size(indices)] + params_shape[1:], indices = indices flattened,
 * dense_shape = params_shape); indices as int64 here. */
RF_GRAD(grad_gather)
{
    rf_node *params = n->inputs[0], *ix = n->inputs[1];
    dx[1] = NULL;
    if (params->dtype != RF_F32) {
        dx[0] = NULL;
        return RF_OK;
    }
    rf_node *flat = ix->dtype == RF_I64 ? ix : rf_cast(g, ix, RF_I64, NULL);
    flat = rf_reshape(g, flat, RF_SHAPE(-1), NULL);
    dx[0] = rf_indexed_slices(g, flat, rows_of(g, dy, &params->shape),
                              params->shape, NULL);
    return done(g, dx, 1);
}

/* embedding_lookup's gradient wrt part p: what TF's gather gradient gives
 * each part after dynamic_partition, with the entries of ids of other
 * parts kept at index -1 (static shapes): IndexedSlices(indices =
 * EmbeddingPartIndices(ids, p), values = dy as [n, dim]). */
RF_GRAD(grad_embedding_lookup)
{
    size_t parts = n->n_inputs - 1;
    rf_node *ids = n->inputs[0];
    dx[0] = NULL;
    int64_t total = 0;
    for (size_t p = 0; p < parts; p++)
        total += n->inputs[1 + p]->shape.dims[0];
    rf_node *values = rows_of(g, dy, &n->inputs[1]->shape);
    for (size_t p = 0; p < parts; p++) {
        rf_node *part = n->inputs[1 + p];
        dx[1 + p] = NULL;
        if (part->dtype != RF_F32)
            continue;
        rf_attrs a = attrs_of(n);
        a.part = (int)p;
        a.num_parts = (int)parts;
        a.vocab = total;
        a.part_rows = part->shape.dims[0];
        rf_node *pi =
            node_create(g, RF_OP_EMBEDDING_PART_INDICES, NULL, &ids, 1, &a);
        dx[1 + p] = rf_indexed_slices(g, pi, values, part->shape, NULL);
    }
    return done(g, dx, n->n_inputs);
}
