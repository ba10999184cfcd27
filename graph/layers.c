/* graph/layers.c: composite builders for model code (tf.layers style):
 * dense and conv2d layers with their "kernel"/"bias" variables under a
 * unique name scope, activations, flatten and accuracy. */
#include "graph/graph_internal.h"

rf_node *rf_activation_apply(rf_graph *g, rf_node *x, rf_activation act,
                             const char *name)
{
    switch (act) {
    case RF_ACT_NONE:
        return x;
    case RF_ACT_RELU:
        return rf_relu(g, x, name);
    case RF_ACT_SIGMOID:
        return rf_sigmoid(g, x, name);
    case RF_ACT_TANH:
        return rf_tanh(g, x, name);
    case RF_ACT_SOFTMAX:
        return rf_softmax(g, x, name);
    }
    return g ? graph_fail(g, RF_ERR_INVALID_ARG, "unknown activation %d",
                          (int)act)
             : NULL;
}

rf_node *rf_dense(rf_graph *g, rf_node *x, int units, rf_activation act,
                  const char *name)
{
    if (!g || !x)
        return g ? rf_identity(g, x, NULL) : NULL; /* records / propagates */
    int64_t in = x->shape.rank >= 1 ? x->shape.dims[x->shape.rank - 1] : -1;
    if (x->shape.rank != 2 || in < 0 || units <= 0)
        return graph_fail(g, RF_ERR_INVALID_ARG,
                          "dense %s: input '%s' must be [batch, n] with a "
                          "known n (got %s), units > 0",
                          name ? name : "", x->name, SHAPE_STR(&x->shape));
    if (rf_name_scope_push(g, name ? name : "dense") != RF_OK)
        return graph_fail(g, RF_ERR_INVALID_ARG, "dense: bad name");
    rf_node *w = rf_get_variable(g, RF_F32, RF_SHAPE(in, units),
                                 rf_init_glorot_uniform(), "kernel");
    rf_node *b =
        rf_get_variable(g, RF_F32, RF_SHAPE(units), rf_init_zeros(), "bias");
    rf_node *y =
        rf_bias_add(g, rf_matmul(g, x, w, false, false, NULL), b, NULL);
    y = rf_activation_apply(g, y, act, NULL);
    rf_name_scope_pop(g);
    return y;
}

rf_node *rf_conv2d_layer(rf_graph *g, rf_node *x, int filters, int kh, int kw,
                         int stride, rf_padding padding, rf_activation act,
                         const char *name)
{
    if (!g || !x)
        return g ? rf_identity(g, x, NULL) : NULL;
    if (x->shape.rank != 4 || x->shape.dims[3] < 0 || filters <= 0 || kh <= 0 ||
        kw <= 0 || stride <= 0)
        return graph_fail(g, RF_ERR_INVALID_ARG,
                          "conv2d %s: input '%s' must be NHWC with known "
                          "channels (got %s); filters, kernel and stride "
                          "positive",
                          name ? name : "", x->name, SHAPE_STR(&x->shape));
    if (rf_name_scope_push(g, name ? name : "conv2d") != RF_OK)
        return graph_fail(g, RF_ERR_INVALID_ARG, "conv2d: bad name");
    rf_node *w =
        rf_get_variable(g, RF_F32, RF_SHAPE(kh, kw, x->shape.dims[3], filters),
                        rf_init_glorot_uniform(), "kernel");
    rf_node *b =
        rf_get_variable(g, RF_F32, RF_SHAPE(filters), rf_init_zeros(), "bias");
    rf_node *y = rf_bias_add(
        g, rf_conv2d(g, x, w, stride, stride, padding, NULL), b, NULL);
    y = rf_activation_apply(g, y, act, NULL);
    rf_name_scope_pop(g);
    return y;
}

rf_node *rf_flatten(rf_graph *g, rf_node *x, const char *name)
{
    if (!g || !x)
        return g ? rf_identity(g, x, NULL) : NULL;
    int64_t rest = 1;
    for (int i = 1; i < x->shape.rank; i++) {
        if (x->shape.dims[i] < 0)
            return graph_fail(g, RF_ERR_INVALID_ARG,
                              "flatten: '%s' of shape %s has unknown "
                              "non-batch dimensions",
                              x->name, SHAPE_STR(&x->shape));
        rest *= x->shape.dims[i];
    }
    return rf_reshape(g, x, RF_SHAPE(-1, rest), name ? name : "Flatten");
}

rf_node *rf_accuracy(rf_graph *g, rf_node *logits, rf_node *labels,
                     const char *name)
{
    if (!g || !logits || !labels)
        return g ? rf_identity(g, logits && labels ? logits : NULL, NULL)
                 : NULL;
    if (rf_name_scope_push(g, name ? name : "accuracy") != RF_OK)
        return graph_fail(g, RF_ERR_INVALID_ARG, "accuracy: bad name");
    rf_node *pred = rf_argmax(g, logits, -1, RF_I64, NULL);
    rf_node *lab =
        labels->dtype == RF_I64 ? labels : rf_cast(g, labels, RF_I64, NULL);
    rf_node *hit = rf_cast(g, rf_equal(g, pred, lab, NULL), RF_F32, NULL);
    rf_node *acc = rf_reduce_mean(g, hit, NULL, 0, false, NULL);
    rf_name_scope_pop(g);
    return acc;
}
