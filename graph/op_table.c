/* graph/op_table.c: the op registry, one entry per rf_op_type: TensorFlow's
 * type name, arity, flags, shape function, scratch size, CPU kernel and
 * gradient builder. The compile-time check keeps it in step with the enum;
 * rf_op_table_check() verifies every entry is filled in. */
#include "graph/graph_internal.h"
#include "rdmaflow/status.h"

#define ND RF_OPF_NOT_DIFFERENTIABLE

static const rf_op_def op_table[] = {
    [RF_OP_PLACEHOLDER] = {"Placeholder", 0, 0, ND | RF_OPF_SOURCE,
                           rf_shape_from_attr, NULL, NULL, NULL},
    [RF_OP_VARIABLE] = {"VariableV2", 0, 0, ND | RF_OPF_SOURCE,
                        rf_shape_from_attr, NULL, NULL, NULL},
    [RF_OP_CONST] = {"Const", 0, 0, ND | RF_OPF_SOURCE, rf_shape_from_attr,
                     NULL, NULL, NULL},
    [RF_OP_IDENTITY] = {"Identity", 1, 1, RF_OPF_CAN_ALIAS, rf_shape_same, NULL,
                        rf_k_identity, rf_grad_identity},
    [RF_OP_ASSIGN] = {"Assign", 2, 2, ND | RF_OPF_STATEFUL | RF_OPF_REF_OUTPUT,
                      rf_shape_assign, NULL, rf_k_assign, NULL},
    [RF_OP_ASSIGN_ADD] = {"AssignAdd", 2, 2,
                          ND | RF_OPF_STATEFUL | RF_OPF_REF_OUTPUT,
                          rf_shape_assign, NULL, rf_k_assign_add, NULL},
    [RF_OP_NO_OP] = {"NoOp", 0, -1, ND, rf_shape_noop, NULL, NULL, NULL},
    [RF_OP_MATMUL] = {"MatMul", 2, 2, 0, rf_shape_matmul, NULL, rf_k_matmul,
                      rf_grad_matmul},
    [RF_OP_ADD] = {"Add", 2, 2, 0, rf_shape_binary, NULL, rf_k_add,
                   rf_grad_add},
    [RF_OP_SUB] = {"Sub", 2, 2, 0, rf_shape_binary, NULL, rf_k_sub,
                   rf_grad_sub},
    [RF_OP_MUL] = {"Mul", 2, 2, 0, rf_shape_binary, NULL, rf_k_mul,
                   rf_grad_mul},
    [RF_OP_NEG] = {"Neg", 1, 1, 0, rf_shape_same, NULL, rf_k_neg, rf_grad_neg},
    [RF_OP_ADD_N] = {"AddN", 1, -1, 0, rf_shape_add_n, NULL, rf_k_add_n,
                     rf_grad_add_n},
    [RF_OP_BIAS_ADD] = {"BiasAdd", 2, 2, 0, rf_shape_bias_add, NULL,
                        rf_k_bias_add, rf_grad_bias_add},
    [RF_OP_RELU] = {"Relu", 1, 1, 0, rf_shape_float_unary, NULL, rf_k_relu,
                    rf_grad_relu},
    [RF_OP_SIGMOID] = {"Sigmoid", 1, 1, 0, rf_shape_float_unary, NULL,
                       rf_k_sigmoid, rf_grad_sigmoid},
    [RF_OP_TANH] = {"Tanh", 1, 1, 0, rf_shape_float_unary, NULL, rf_k_tanh,
                    rf_grad_tanh},
    [RF_OP_SOFTMAX] = {"Softmax", 1, 1, 0, rf_shape_softmax, NULL, rf_k_softmax,
                       rf_grad_softmax},
    [RF_OP_SPARSE_SOFTMAX_XENT] = {"SparseSoftmaxCrossEntropyWithLogits", 2, 2,
                                   0, rf_shape_xent, NULL, rf_k_xent,
                                   rf_grad_xent},
    [RF_OP_SIGMOID_XENT] = {"SigmoidCrossEntropyWithLogits", 2, 2, 0,
                            rf_shape_sigmoid_xent, NULL, rf_k_sigmoid_xent,
                            rf_grad_sigmoid_xent},
    [RF_OP_SUM] = {"Sum", 1, 1, 0, rf_shape_reduce, rf_scratch_reduce,
                   rf_k_reduce, rf_grad_sum},
    [RF_OP_MEAN] = {"Mean", 1, 1, 0, rf_shape_reduce, rf_scratch_reduce,
                    rf_k_reduce, rf_grad_mean},
    [RF_OP_RESHAPE] = {"Reshape", 1, 1, RF_OPF_CAN_ALIAS, rf_shape_reshape,
                       NULL, rf_k_identity, rf_grad_reshape},
    [RF_OP_CONCAT] = {"ConcatV2", 1, -1, 0, rf_shape_concat, NULL, rf_k_concat,
                      rf_grad_concat},
    [RF_OP_CONV2D] = {"Conv2D", 2, 2, 0, rf_shape_conv2d, rf_scratch_conv2d,
                      rf_k_conv2d, rf_grad_conv2d},
    [RF_OP_MAX_POOL] = {"MaxPool", 1, 1, 0, rf_shape_max_pool, NULL,
                        rf_k_max_pool, rf_grad_max_pool},
    [RF_OP_ARGMAX] = {"ArgMax", 1, 1, ND, rf_shape_argmax, NULL, rf_k_argmax,
                      NULL},
    [RF_OP_EQUAL] = {"Equal", 2, 2, ND, rf_shape_equal_op, NULL, rf_k_equal,
                     NULL},
    [RF_OP_CAST] = {"Cast", 1, 1, 0, rf_shape_cast, NULL, rf_k_cast,
                    rf_grad_cast},
    [RF_OP_ONES_LIKE] = {"OnesLike", 1, 1, ND, rf_shape_same, NULL,
                         rf_k_ones_like, NULL},
    [RF_OP_ZEROS_LIKE] = {"ZerosLike", 1, 1, ND, rf_shape_same, NULL,
                          rf_k_zeros_like, NULL},
    [RF_OP_REDUCE_LIKE] = {"ReduceLike", 2, 2, ND, rf_shape_reduce_like,
                           rf_scratch_reduce, rf_k_reduce_like, NULL},
    [RF_OP_RESHAPE_LIKE] = {"ReshapeLike", 2, 2, ND | RF_OPF_CAN_ALIAS,
                            rf_shape_like1, NULL, rf_k_identity, NULL},
    [RF_OP_REDUCTION_GRAD] = {"ReductionGrad", 2, 2, ND,
                              rf_shape_reduction_grad, NULL,
                              rf_k_reduction_grad, NULL},
    [RF_OP_BIAS_ADD_GRAD] = {"BiasAddGrad", 1, 1, ND, rf_shape_bias_add_grad,
                             rf_scratch_bias_add_grad, rf_k_bias_add_grad,
                             NULL},
    [RF_OP_RELU_GRAD] = {"ReluGrad", 2, 2, ND, rf_shape_unary_grad, NULL,
                         rf_k_relu_grad, NULL},
    [RF_OP_SIGMOID_GRAD] = {"SigmoidGrad", 2, 2, ND, rf_shape_unary_grad, NULL,
                            rf_k_sigmoid_grad, NULL},
    [RF_OP_TANH_GRAD] = {"TanhGrad", 2, 2, ND, rf_shape_unary_grad, NULL,
                         rf_k_tanh_grad, NULL},
    [RF_OP_SOFTMAX_GRAD] = {"SoftmaxGrad", 2, 2, ND, rf_shape_unary_grad, NULL,
                            rf_k_softmax_grad, NULL},
    [RF_OP_SPARSE_SOFTMAX_XENT_GRAD] = {"SparseSoftmaxCrossEntropyGrad", 3, 3,
                                        ND, rf_shape_xent_grad, NULL,
                                        rf_k_xent_grad, NULL},
    [RF_OP_CONV2D_BACKPROP_INPUT] = {"Conv2DBackpropInput", 3, 3, ND,
                                     rf_shape_conv2d_backprop_input,
                                     rf_scratch_conv2d_backprop_input,
                                     rf_k_conv2d_backprop_input, NULL},
    [RF_OP_CONV2D_BACKPROP_FILTER] = {"Conv2DBackpropFilter", 3, 3, ND,
                                      rf_shape_conv2d_backprop_filter,
                                      rf_scratch_conv2d_backprop_filter,
                                      rf_k_conv2d_backprop_filter, NULL},
    [RF_OP_MAX_POOL_GRAD] = {"MaxPoolGrad", 2, 2, ND, rf_shape_max_pool_grad,
                             NULL, rf_k_max_pool_grad, NULL},
    [RF_OP_CONCAT_GRAD] = {"ConcatGrad", 2, -1, ND, rf_shape_concat_grad, NULL,
                           rf_k_concat_grad, NULL},
    [RF_OP_APPLY_OPTIMIZER] = {"ApplyOptimizer", 2, -1,
                               ND | RF_OPF_STATEFUL | RF_OPF_REF_OUTPUT,
                               rf_shape_apply, NULL, rf_k_apply, NULL},
    [RF_OP_OPTIMIZER_FINISH] = {"OptimizerFinish", 2, 2, ND | RF_OPF_STATEFUL,
                                rf_shape_finish, NULL, rf_k_finish, NULL},
    [RF_OP_GATHER] = {"GatherV2", 2, 2, 0, rf_shape_gather, NULL, rf_k_gather,
                      rf_grad_gather},
    [RF_OP_EMBEDDING_LOOKUP] = {"EmbeddingLookup", 3, -1, 0,
                                rf_shape_embedding_lookup, NULL,
                                rf_k_embedding_lookup,
                                rf_grad_embedding_lookup},
    [RF_OP_EMBEDDING_PART_INDICES] = {"EmbeddingPartIndices", 1, 1, ND,
                                      rf_shape_embedding_part_indices, NULL,
                                      rf_k_embedding_part_indices, NULL},
    [RF_OP_INDEXED_SLICES] = {"IndexedSlices", 2, 2, ND,
                              rf_shape_indexed_slices, NULL,
                              rf_k_indexed_slices, NULL},
    [RF_OP_INDEXED_SLICES_TO_DENSE] = {"IndexedSlicesToDense", 2, 2, ND,
                                       rf_shape_indexed_slices, NULL,
                                       rf_k_indexed_slices_to_dense, NULL},
    [RF_OP_SPARSE_APPLY_OPTIMIZER] = {"SparseApplyOptimizer", 3, -1,
                                      ND | RF_OPF_STATEFUL | RF_OPF_REF_OUTPUT,
                                      rf_shape_sparse_apply,
                                      rf_scratch_sparse_apply,
                                      rf_k_sparse_apply, NULL},
};

_Static_assert(sizeof op_table / sizeof op_table[0] == RF_OP_COUNT,
               "op_table must have an entry for every rf_op_type");

const rf_op_def *rf_op_def_get(rf_op_type op)
{
    static const rf_op_def unknown = {"?",           0,    0,    ND,
                                      rf_shape_noop, NULL, NULL, NULL};
    return (unsigned)op < RF_OP_COUNT ? &op_table[op] : &unknown;
}

const char *rf_op_name(rf_op_type op)
{
    return rf_op_def_get(op)->name;
}

bool rf_op_is_differentiable(rf_op_type op)
{
    return rf_op_def_get(op)->grad != NULL;
}

rf_status rf_op_table_check(void)
{
    for (int i = 0; i < RF_OP_COUNT; i++) {
        const rf_op_def *d = &op_table[i];
        if (!d->name || !d->shape)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "op table: entry %d is missing", i);
        /* every op decides: a gradient, or explicitly none */
        if (!d->grad == !(d->flags & ND))
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "op table: %s must have a gradient or be "
                                "marked not differentiable",
                                d->name);
        if (!d->kernel && !(d->flags & RF_OPF_SOURCE) && i != RF_OP_NO_OP)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "op table: %s has no kernel", d->name);
    }
    return RF_OK;
}
