/* graph/op_table.c: the op registry, one entry per rf_op_type: TensorFlow's
 * type name, arity, flags, shape function, scratch size, CPU kernel and
 * gradient builder. The compile-time check keeps it in step with the enum;
 * op_table_check() verifies every entry is filled in. */
#include "graph/graph_internal.h"
#include "rdmaflow/status.h"

#define ND RF_OPF_NOT_DIFFERENTIABLE

static const rf_op_def op_table[] = {
    [RF_OP_PLACEHOLDER] = {"Placeholder", 0, 0, ND | RF_OPF_SOURCE,
                           shape_from_attr, NULL, NULL, NULL},
    [RF_OP_VARIABLE] = {"VariableV2", 0, 0, ND | RF_OPF_SOURCE, shape_from_attr,
                        NULL, NULL, NULL},
    [RF_OP_CONST] = {"Const", 0, 0, ND | RF_OPF_SOURCE, shape_from_attr, NULL,
                     NULL, NULL},
    [RF_OP_IDENTITY] = {"Identity", 1, 1, RF_OPF_CAN_ALIAS, shape_same, NULL,
                        k_identity, grad_identity},
    [RF_OP_ASSIGN] = {"Assign", 2, 2, ND | RF_OPF_STATEFUL | RF_OPF_REF_OUTPUT,
                      shape_assign, NULL, k_assign, NULL},
    [RF_OP_ASSIGN_ADD] = {"AssignAdd", 2, 2,
                          ND | RF_OPF_STATEFUL | RF_OPF_REF_OUTPUT,
                          shape_assign, NULL, k_assign_add, NULL},
    [RF_OP_NO_OP] = {"NoOp", 0, -1, ND, shape_noop, NULL, NULL, NULL},
    [RF_OP_MATMUL] = {"MatMul", 2, 2, 0, shape_matmul, NULL, k_matmul,
                      grad_matmul},
    [RF_OP_ADD] = {"Add", 2, 2, 0, shape_binary, NULL, k_add, grad_add},
    [RF_OP_SUB] = {"Sub", 2, 2, 0, shape_binary, NULL, k_sub, grad_sub},
    [RF_OP_MUL] = {"Mul", 2, 2, 0, shape_binary, NULL, k_mul, grad_mul},
    [RF_OP_NEG] = {"Neg", 1, 1, 0, shape_same, NULL, k_neg, grad_neg},
    [RF_OP_ADD_N] = {"AddN", 1, -1, 0, shape_add_n, NULL, k_add_n, grad_add_n},
    [RF_OP_BIAS_ADD] = {"BiasAdd", 2, 2, 0, shape_bias_add, NULL, k_bias_add,
                        grad_bias_add},
    [RF_OP_RELU] = {"Relu", 1, 1, 0, shape_float_unary, NULL, k_relu,
                    grad_relu},
    [RF_OP_SIGMOID] = {"Sigmoid", 1, 1, 0, shape_float_unary, NULL, k_sigmoid,
                       grad_sigmoid},
    [RF_OP_TANH] = {"Tanh", 1, 1, 0, shape_float_unary, NULL, k_tanh,
                    grad_tanh},
    [RF_OP_SOFTMAX] = {"Softmax", 1, 1, 0, shape_softmax, NULL, k_softmax,
                       grad_softmax},
    [RF_OP_SPARSE_SOFTMAX_XENT] = {"SparseSoftmaxCrossEntropyWithLogits", 2, 2,
                                   0, shape_xent, NULL, k_xent, grad_xent},
    [RF_OP_SIGMOID_XENT] = {"SigmoidCrossEntropyWithLogits", 2, 2, 0,
                            shape_sigmoid_xent, NULL, k_sigmoid_xent,
                            grad_sigmoid_xent},
    [RF_OP_SUM] = {"Sum", 1, 1, 0, shape_reduce, scratch_reduce, k_reduce,
                   grad_sum},
    [RF_OP_MEAN] = {"Mean", 1, 1, 0, shape_reduce, scratch_reduce, k_reduce,
                    grad_mean},
    [RF_OP_RESHAPE] = {"Reshape", 1, 1, RF_OPF_CAN_ALIAS, shape_reshape, NULL,
                       k_identity, grad_reshape},
    [RF_OP_CONCAT] = {"ConcatV2", 1, -1, 0, shape_concat, NULL, k_concat,
                      grad_concat},
    [RF_OP_CONV2D] = {"Conv2D", 2, 2, 0, shape_conv2d, scratch_conv2d, k_conv2d,
                      grad_conv2d},
    [RF_OP_MAX_POOL] = {"MaxPool", 1, 1, 0, shape_max_pool, NULL, k_max_pool,
                        grad_max_pool},
    [RF_OP_ARGMAX] = {"ArgMax", 1, 1, ND, shape_argmax, NULL, k_argmax, NULL},
    [RF_OP_EQUAL] = {"Equal", 2, 2, ND, shape_equal_op, NULL, k_equal, NULL},
    [RF_OP_CAST] = {"Cast", 1, 1, 0, shape_cast, NULL, k_cast, grad_cast},
    [RF_OP_ONES_LIKE] = {"OnesLike", 1, 1, ND, shape_same, NULL, k_ones_like,
                         NULL},
    [RF_OP_ZEROS_LIKE] = {"ZerosLike", 1, 1, ND, shape_same, NULL, k_zeros_like,
                          NULL},
    [RF_OP_REDUCE_LIKE] = {"ReduceLike", 2, 2, ND, shape_reduce_like,
                           scratch_reduce, k_reduce_like, NULL},
    [RF_OP_RESHAPE_LIKE] = {"ReshapeLike", 2, 2, ND | RF_OPF_CAN_ALIAS,
                            shape_like1, NULL, k_identity, NULL},
    [RF_OP_REDUCTION_GRAD] = {"ReductionGrad", 2, 2, ND, shape_reduction_grad,
                              NULL, k_reduction_grad, NULL},
    [RF_OP_BIAS_ADD_GRAD] = {"BiasAddGrad", 1, 1, ND, shape_bias_add_grad,
                             scratch_bias_add_grad, k_bias_add_grad, NULL},
    [RF_OP_RELU_GRAD] = {"ReluGrad", 2, 2, ND, shape_unary_grad, NULL,
                         k_relu_grad, NULL},
    [RF_OP_SIGMOID_GRAD] = {"SigmoidGrad", 2, 2, ND, shape_unary_grad, NULL,
                            k_sigmoid_grad, NULL},
    [RF_OP_TANH_GRAD] = {"TanhGrad", 2, 2, ND, shape_unary_grad, NULL,
                         k_tanh_grad, NULL},
    [RF_OP_SOFTMAX_GRAD] = {"SoftmaxGrad", 2, 2, ND, shape_unary_grad, NULL,
                            k_softmax_grad, NULL},
    [RF_OP_SPARSE_SOFTMAX_XENT_GRAD] = {"SparseSoftmaxCrossEntropyGrad", 3, 3,
                                        ND, shape_xent_grad, NULL, k_xent_grad,
                                        NULL},
    [RF_OP_CONV2D_BACKPROP_INPUT] = {"Conv2DBackpropInput", 3, 3, ND,
                                     shape_conv2d_backprop_input,
                                     scratch_conv2d_backprop_input,
                                     k_conv2d_backprop_input, NULL},
    [RF_OP_CONV2D_BACKPROP_FILTER] = {"Conv2DBackpropFilter", 3, 3, ND,
                                      shape_conv2d_backprop_filter,
                                      scratch_conv2d_backprop_filter,
                                      k_conv2d_backprop_filter, NULL},
    [RF_OP_MAX_POOL_GRAD] = {"MaxPoolGrad", 2, 2, ND, shape_max_pool_grad, NULL,
                             k_max_pool_grad, NULL},
    [RF_OP_CONCAT_GRAD] = {"ConcatGrad", 2, -1, ND, shape_concat_grad, NULL,
                           k_concat_grad, NULL},
    [RF_OP_APPLY_OPTIMIZER] = {"ApplyOptimizer", 2, -1,
                               ND | RF_OPF_STATEFUL | RF_OPF_REF_OUTPUT,
                               shape_apply, NULL, k_apply, NULL},
    [RF_OP_OPTIMIZER_FINISH] = {"OptimizerFinish", 2, 2, ND | RF_OPF_STATEFUL,
                                shape_finish, NULL, k_finish, NULL},
    [RF_OP_GATHER] = {"GatherV2", 2, 2, 0, shape_gather, NULL, k_gather,
                      grad_gather},
    [RF_OP_EMBEDDING_LOOKUP] = {"EmbeddingLookup", 3, -1, 0,
                                shape_embedding_lookup, NULL,
                                k_embedding_lookup, grad_embedding_lookup},
    [RF_OP_EMBEDDING_PART_INDICES] = {"EmbeddingPartIndices", 1, 1, ND,
                                      shape_embedding_part_indices, NULL,
                                      k_embedding_part_indices, NULL},
    [RF_OP_INDEXED_SLICES] = {"IndexedSlices", 2, 2, ND, shape_indexed_slices,
                              NULL, k_indexed_slices, NULL},
    [RF_OP_INDEXED_SLICES_TO_DENSE] = {"IndexedSlicesToDense", 2, 2, ND,
                                       shape_indexed_slices, NULL,
                                       k_indexed_slices_to_dense, NULL},
    [RF_OP_SPARSE_APPLY_OPTIMIZER] = {"SparseApplyOptimizer", 3, -1,
                                      ND | RF_OPF_STATEFUL | RF_OPF_REF_OUTPUT,
                                      shape_sparse_apply, scratch_sparse_apply,
                                      k_sparse_apply, NULL},
};

_Static_assert(sizeof op_table / sizeof op_table[0] == RF_OP_COUNT,
               "op_table must have an entry for every rf_op_type");

const rf_op_def *op_def_get(rf_op_type op)
{
    static const rf_op_def unknown = {"?",        0,    0,    ND,
                                      shape_noop, NULL, NULL, NULL};
    return (unsigned)op < RF_OP_COUNT ? &op_table[op] : &unknown;
}

const char *rf_op_name(rf_op_type op)
{
    return op_def_get(op)->name;
}

bool rf_op_is_differentiable(rf_op_type op)
{
    return op_def_get(op)->grad != NULL;
}

rf_status op_table_check(void)
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
