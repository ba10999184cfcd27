/* rdmaflow/graph.h: the dataflow graph (TensorFlow 1.x style). Building and
 * running are separate, as in ggml and TF1: builder calls only record nodes
 * (op, inputs, attributes, static dtype/shape from the op's shape function);
 * an rf_plan prunes the graph to what a set of fetches/targets needs and an
 * rf_executor runs it on a thread pool, with step buffers allocated once per
 * plan. Reverse-mode autodiff (rf_gradients) and Optimizer.minimize
 * (rf_minimize) add ordinary nodes to the graph.
 *
 * Errors. Builders return the new node, or NULL on error; a NULL input makes a
 * builder return NULL at once, so a whole model can be written without checks
 * and verified once with rf_graph_status(). The first error is kept in the
 * graph (rf_graph_error()) and also set as the thread's rf_error_message().
 * Shape errors are RF_ERR_INVALID_ARG and name the op and the shapes, e.g.
 * "MatMul 'dense/MatMul': inner dimensions differ: [2,3] vs [4,5]". The
 * library never exits.
 *
 * Shapes. Static shapes may have unknown dimensions (-1, TF's None), e.g. a
 * placeholder of shape [-1,784]. A plan infers concrete shapes from the fed
 * values on its first run and again only when a fed shape changes.
 *
 * Threads. A graph is built from one thread at a time. An executor runs one
 * plan at a time (rf_plan_run serializes on the executor). */
#ifndef RDMAFLOW_GRAPH_H
#define RDMAFLOW_GRAPH_H

#include "rdmaflow/api.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmaflow/optim.h"
#include "rdmaflow/status.h"
#include "rdmaflow/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Tensors ------------------------------------------------------------ */

/* A view of typed data; rf_tensor never owns memory. Data is dense and
 * row-major (NHWC for images, HWIO for convolution filters). */
typedef struct rf_tensor {
    rf_dtype dtype;
    rf_shape shape;
    void *data;
} rf_tensor;

/* A tensor view over data. */
RF_API rf_tensor rf_tensor_make(rf_dtype dtype, rf_shape shape, void *data);
static inline float *rf_tensor_f32(const rf_tensor *t)
{
    return (float *)t->data;
}
RF_API size_t rf_tensor_bytes(const rf_tensor *t);

/* ---- Ops ---------------------------------------------------------------- */

/* Every op type. The op table (graph/op_table.c) has one entry per value,
 * checked at compile time; rf_op_name() gives TensorFlow's type name. */
typedef enum rf_op_type {
    /* sources and state */
    RF_OP_PLACEHOLDER = 0,
    RF_OP_VARIABLE, /* "VariableV2" */
    RF_OP_CONST,
    RF_OP_IDENTITY,
    RF_OP_ASSIGN,
    RF_OP_ASSIGN_ADD,
    RF_OP_NO_OP, /* groups control dependencies (tf.group) */
    /* math */
    RF_OP_MATMUL,
    RF_OP_ADD,
    RF_OP_SUB,
    RF_OP_MUL,
    RF_OP_NEG,
    RF_OP_ADD_N,
    RF_OP_BIAS_ADD,
    RF_OP_RELU,
    RF_OP_SIGMOID,
    RF_OP_TANH,
    RF_OP_SOFTMAX,
    RF_OP_SPARSE_SOFTMAX_XENT, /* SparseSoftmaxCrossEntropyWithLogits */
    RF_OP_SIGMOID_XENT,        /* sigmoid_cross_entropy_with_logits */
    RF_OP_SUM,
    RF_OP_MEAN,
    RF_OP_RESHAPE,
    RF_OP_CONCAT,
    RF_OP_CONV2D,
    RF_OP_MAX_POOL,
    RF_OP_ARGMAX,
    RF_OP_EQUAL,
    RF_OP_CAST,
    RF_OP_ONES_LIKE,
    RF_OP_ZEROS_LIKE,
    /* gradient ops (built by rf_gradients) */
    RF_OP_REDUCE_LIKE,    /* sum dy over broadcast dims to like's shape */
    RF_OP_RESHAPE_LIKE,   /* reshape x to like's shape */
    RF_OP_REDUCTION_GRAD, /* broadcast dy of Sum/Mean back to x's shape */
    RF_OP_BIAS_ADD_GRAD,
    RF_OP_RELU_GRAD,
    RF_OP_SIGMOID_GRAD,
    RF_OP_TANH_GRAD,
    RF_OP_SOFTMAX_GRAD,
    RF_OP_SPARSE_SOFTMAX_XENT_GRAD,
    RF_OP_CONV2D_BACKPROP_INPUT,
    RF_OP_CONV2D_BACKPROP_FILTER,
    RF_OP_MAX_POOL_GRAD,
    RF_OP_CONCAT_GRAD, /* the slice of dy that belongs to one input */
    /* optimizers (built by rf_minimize / rf_apply_gradients) */
    RF_OP_APPLY_OPTIMIZER,  /* ApplyGradientDescent, ApplyAdam, ... */
    RF_OP_OPTIMIZER_FINISH, /* Adam: advance beta1_power, beta2_power */
    /* embedding tables: sparse reads, sparse gradients, sparse applies */
    RF_OP_GATHER,           /* "GatherV2", axis 0 */
    RF_OP_EMBEDDING_LOOKUP, /* fused embedding_lookup over several parts */
    RF_OP_EMBEDDING_PART_INDICES,  /* each id's row in one part, or -1 */
    RF_OP_INDEXED_SLICES,          /* (indices, values): a sparse gradient */
    RF_OP_INDEXED_SLICES_TO_DENSE, /* unsorted_segment_sum into zeros */
    RF_OP_SPARSE_APPLY_OPTIMIZER,  /* ScatterSub, SparseApplyAdagrad, ... */
    RF_OP_COUNT
} rf_op_type;

/* TensorFlow's type name ("MatMul", "VariableV2", ...); "?" if unknown. */
RF_API const char *rf_op_name(rf_op_type op);
/* True if the op has a gradient builder (rf_gradients flows through it). */
RF_API bool rf_op_is_differentiable(rf_op_type op);

typedef enum rf_padding { RF_PADDING_VALID = 0, RF_PADDING_SAME } rf_padding;

typedef enum rf_activation {
    RF_ACT_NONE = 0,
    RF_ACT_RELU,
    RF_ACT_SIGMOID,
    RF_ACT_TANH,
    RF_ACT_SOFTMAX,
} rf_activation;

/* ---- Graph -------------------------------------------------------------- */

typedef struct rf_graph rf_graph;
typedef struct rf_node rf_node; /* one op instance; one output tensor */

RF_API rf_status rf_graph_create(rf_graph **out);
RF_API void rf_graph_destroy(rf_graph *g);

/* Graph-level seed (tf.set_random_seed); variables created without an
 * explicit seed derive theirs from it and their name. Default 0. */
RF_API void rf_graph_set_seed(rf_graph *g, uint64_t seed);
RF_API uint64_t rf_graph_seed(const rf_graph *g);

/* First error a builder hit (RF_OK if none), and its message ("" if none). */
RF_API rf_status rf_graph_status(const rf_graph *g);
RF_API const char *rf_graph_error(const rf_graph *g);
RF_API void rf_graph_clear_error(rf_graph *g);

/* tf.name_scope: names created inside get the prefix "<scope>/". The scope
 * name itself is made unique ("dense", "dense_1", ...) unless it ends in '/'
 * (then it is used as is, without the '/', like TF re-entering a scope). */
RF_API rf_status rf_name_scope_push(rf_graph *g, const char *name);
RF_API void rf_name_scope_pop(rf_graph *g);
/* The current scope ("" at top level, else e.g. "dense_1"). */
RF_API const char *rf_name_scope(const rf_graph *g);
/* Makes name unique in the graph under the current scope, as TensorFlow's
 * Graph.unique_name (case-insensitive, "x", "x_1", ...), marks it used and
 * writes it to buf. */
RF_API rf_status rf_graph_unique_name(rf_graph *g, const char *name, char *buf,
                                      size_t len);

/* tf.control_dependencies: nodes created inside depend on these nodes. */
RF_API rf_status rf_control_dependencies_push(rf_graph *g, rf_node *const *deps,
                                              size_t n);
RF_API void rf_control_dependencies_pop(rf_graph *g);

/* Device functions (tf.device). When a node is created (and not under a
 * colocation scope) the functions on the stack are applied innermost first,
 * each reading the node's current requested device and writing the new one
 * into device[0..cap) ("" for none); an entry with fn NULL stops the walk
 * (tf.device(None)). Merging and replica_device_setter are built on this in
 * rdmaflow/device.h. An error fails the node's creation. */
typedef rf_status (*rf_device_fn)(void *ctx, const rf_node *node, char *device,
                                  size_t cap);
RF_API rf_status rf_device_fn_push(rf_graph *g, rf_device_fn fn, void *ctx);
RF_API void rf_device_fn_pop(rf_graph *g);

/* tf.colocate_with(node): nodes created inside take node's requested device,
 * record it in rf_node_colocated_with(), and skip the device functions. */
RF_API rf_status rf_colocation_push(rf_graph *g, rf_node *node);
RF_API void rf_colocation_pop(rf_graph *g);

/* ---- Nodes -------------------------------------------------------------- */

#define RF_DEVICE_MAX 160 /* longest device string, with the NUL */

RF_API size_t rf_graph_num_nodes(const rf_graph *g);
RF_API rf_node *rf_graph_node(const rf_graph *g,
                              size_t id); /* creation order */
RF_API rf_node *rf_graph_find(const rf_graph *g, const char *name);

RF_API size_t rf_node_id(const rf_node *n);
RF_API rf_graph *rf_node_graph(const rf_node *n);
RF_API const char *rf_node_name(const rf_node *n);
RF_API rf_op_type rf_node_op(const rf_node *n);
RF_API const char *rf_node_op_name(const rf_node *n);
RF_API rf_dtype rf_node_dtype(const rf_node *n);
RF_API rf_shape rf_node_shape(const rf_node *n); /* static, may have -1 dims */
RF_API size_t rf_node_num_inputs(const rf_node *n);
RF_API rf_node *rf_node_input(const rf_node *n, size_t i);
RF_API size_t rf_node_num_control_inputs(const rf_node *n);
RF_API rf_node *rf_node_control_input(const rf_node *n, size_t i);
RF_API rf_status rf_node_add_control_input(rf_node *n, rf_node *dep);

RF_API const char *rf_node_requested_device(const rf_node *n); /* "" if none */
RF_API rf_status rf_node_set_requested_device(rf_node *n, const char *device);
RF_API const char *
rf_node_assigned_device(const rf_node *n); /* "" until placed */
RF_API rf_status rf_node_set_assigned_device(rf_node *n, const char *device);
RF_API rf_node *rf_node_colocated_with(const rf_node *n); /* NULL if none */
/* One line for logs and --explain, e.g.
 * "dense/MatMul = MatMul(x, dense/kernel) float32[?,256] @/job:worker"
 * (the assigned device if placed, else the requested one); returns what
 * snprintf would. */
RF_API int rf_node_format(const rf_node *n, char *buf, size_t len);

/* ---- Building ops ----------------------------------------------------- */
/* name may be NULL for the op's default name ("MatMul"); it is made unique
 * under the current name scope either way, except that a name ending in '/'
 * is used verbatim without the '/' (TF's convention for the name a
 * name_scope returned; a duplicate is RF_ERR_INVALID_ARG). */

RF_API rf_node *rf_placeholder(rf_graph *g, rf_dtype dtype, rf_shape shape,
                               const char *name);
/* Copies data (numel * dtype size bytes); shape must be fully known. */
RF_API rf_node *rf_const(rf_graph *g, rf_dtype dtype, rf_shape shape,
                         const void *data, const char *name);
RF_API rf_node *rf_const_f32(rf_graph *g, float value, const char *name);
RF_API rf_node *rf_const_i64(rf_graph *g, int64_t value, const char *name);
RF_API rf_node *rf_identity(rf_graph *g, rf_node *x, const char *name);
RF_API rf_node *rf_no_op(rf_graph *g, rf_node *const *deps, size_t n,
                         const char *name); /* tf.group */
/* var.assign(value) / var.assign_add(value): var must be a Variable; the
 * output is the variable itself (its storage), after the update. */
RF_API rf_node *rf_assign(rf_graph *g, rf_node *var, rf_node *value,
                          const char *name);
RF_API rf_node *rf_assign_add(rf_graph *g, rf_node *var, rf_node *value,
                              const char *name);

RF_API rf_node *rf_matmul(rf_graph *g, rf_node *a, rf_node *b, bool transpose_a,
                          bool transpose_b, const char *name);
/* NumPy broadcasting; both operands the same dtype. */
RF_API rf_node *rf_add(rf_graph *g, rf_node *a, rf_node *b, const char *name);
RF_API rf_node *rf_sub(rf_graph *g, rf_node *a, rf_node *b, const char *name);
RF_API rf_node *rf_mul(rf_graph *g, rf_node *a, rf_node *b, const char *name);
RF_API rf_node *rf_neg(rf_graph *g, rf_node *x, const char *name);
RF_API rf_node *rf_add_n(rf_graph *g, rf_node *const *xs, size_t n,
                         const char *name); /* same shapes */
RF_API rf_node *rf_bias_add(rf_graph *g, rf_node *x, rf_node *bias,
                            const char *name); /* bias over the last dim */
RF_API rf_node *rf_relu(rf_graph *g, rf_node *x, const char *name);
RF_API rf_node *rf_sigmoid(rf_graph *g, rf_node *x, const char *name);
RF_API rf_node *rf_tanh(rf_graph *g, rf_node *x, const char *name);
RF_API rf_node *rf_softmax(rf_graph *g, rf_node *logits, const char *name);
/* Per-example loss [batch]: labels int32/int64 [batch] in [0, classes),
 * logits float [batch, classes]. Out-of-range labels fail the run. */
RF_API rf_node *rf_sparse_softmax_cross_entropy_with_logits(rf_graph *g,
                                                            rf_node *labels,
                                                            rf_node *logits,
                                                            const char *name);
/* tf.nn.sigmoid_cross_entropy_with_logits: elementwise logistic loss of
 * logits x against labels z (both float, the same shape, z usually in
 * [0, 1]) in TF's stable form max(x, 0) - x * z + log(1 + exp(-|x|)).
 * One node ("SigmoidCrossEntropyWithLogits"; TF composes it from Select,
 * Mul, Exp and Log1p). Gradients, as TF's autodiff through that
 * composition gives them: dy * (sigmoid(x) - z) for logits (sigmoid(0) -
 * z at x = 0, where TF's Select takes the x >= 0 branch) and dy * -x for
 * labels. */
RF_API rf_node *rf_sigmoid_cross_entropy_with_logits(rf_graph *g,
                                                     rf_node *labels,
                                                     rf_node *logits,
                                                     const char *name);
/* Reductions over axes (negative axes count from the end); axes NULL or
 * naxes 0 reduces over every axis. */
RF_API rf_node *rf_reduce_sum(rf_graph *g, rf_node *x, const int *axes,
                              int naxes, bool keep_dims, const char *name);
RF_API rf_node *rf_reduce_mean(rf_graph *g, rf_node *x, const int *axes,
                               int naxes, bool keep_dims, const char *name);
/* At most one -1 dim, inferred from the element count. */
RF_API rf_node *rf_reshape(rf_graph *g, rf_node *x, rf_shape shape,
                           const char *name);
RF_API rf_node *rf_concat(rf_graph *g, rf_node *const *xs, size_t n, int axis,
                          const char *name);
/* input NHWC, filter HWIO; TF's SAME/VALID output size and padding. */
RF_API rf_node *rf_conv2d(rf_graph *g, rf_node *input, rf_node *filter,
                          int stride_h, int stride_w, rf_padding padding,
                          const char *name);
RF_API rf_node *rf_max_pool(rf_graph *g, rf_node *input, int ksize_h,
                            int ksize_w, int stride_h, int stride_w,
                            rf_padding padding, const char *name);
/* Index of the first maximum along axis; out_type RF_I32 or RF_I64. */
RF_API rf_node *rf_argmax(rf_graph *g, rf_node *x, int axis, rf_dtype out_type,
                          const char *name);
RF_API rf_node *rf_equal(rf_graph *g, rf_node *a, rf_node *b, const char *name);
RF_API rf_node *rf_cast(rf_graph *g, rf_node *x, rf_dtype dtype,
                        const char *name);
RF_API rf_node *rf_ones_like(rf_graph *g, rf_node *x, const char *name);
RF_API rf_node *rf_zeros_like(rf_graph *g, rf_node *x, const char *name);

/* ---- Embeddings (tf.gather, tf.nn.embedding_lookup) ----
 * rf_gather: GatherV2 along axis 0; indices int32 or int64 of any shape;
 * output indices.shape + params.shape[1:]. An index outside
 * [0, params.shape[0]) fails the run with RF_ERR_INVALID_ARG (TF:
 * InvalidArgument), e.g. "GatherV2 'Gather': indices[1,2] = 1000 is not in [0,
 * 500)". The gradient wrt params is an IndexedSlices (below).
 *
 * rf_embedding_lookup: tf.nn.embedding_lookup (TF 1.x embedding_ops.py) over
 * the parts params[0..nparams) of one table (sliced along the first axis,
 * every part with the same trailing shape). One part: a Gather. Several:
 * one EmbeddingLookup node that maps each id to (part, row) as TF does,
 * with total = the sum of the parts' first dims and P = nparams:
 *   "mod": part = id % P, row = id / P;
 *   "div": ipp = total / P, extras = total % P,
 *          part = max(id / (ipp + 1), (id - extras) / ipp),
 *          row = part < extras ? id % (ipp + 1) : (id - extras) % ipp.
 * partition_strategy NULL means "mod" (TF's default). An id outside
 * [0, total), or one mapped past the end of its part (mod over parts of
 * uneven sizes in the wrong order), fails the run with RF_ERR_INVALID_ARG
 * naming the node, the position, the id and the vocabulary size. The
 * gradient wrt each part is an IndexedSlices whose indices are, for every
 * id, its row in that part or -1 when it belongs to another part (TF's
 * dynamic_partition pieces, with the other parts' entries kept as -1 so
 * shapes stay static; dedup, densify and the sparse applies skip -1).
 *
 * rf_embedding_lookup_partitioned: the same on what rf_get_variable returns
 * (the ConcatV2 of the parts along axis 0 of a partitioned variable, or a
 * single variable): the parts are the concat's inputs. */
RF_API rf_node *rf_gather(rf_graph *g, rf_node *params, rf_node *indices,
                          const char *name);
RF_API rf_node *rf_embedding_lookup(rf_graph *g, rf_node *const *params,
                                    size_t nparams, rf_node *ids,
                                    const char *partition_strategy,
                                    const char *name);
RF_API rf_node *rf_embedding_lookup_partitioned(rf_graph *g, rf_node *table,
                                                rf_node *ids,
                                                const char *partition_strategy,
                                                const char *name);
/* The part and the row in it of every id of ids (any shape) for lookup, a
 * Gather (nparts 1) or an EmbeddingLookup node (nparts its parts) whose
 * parts have part_rows[p] rows: the kernels' mapping and their checks and
 * messages (an id outside the vocabulary, or mapped past its part's rows:
 * RF_ERR_INVALID_ARG naming the node, the position and the id; nothing
 * else written then matters). part and row hold numel(ids) entries. The
 * distributed session maps a batch with it before it READs any row. */
RF_API rf_status rf_embedding_map_ids(const rf_node *lookup,
                                      const rf_tensor *ids,
                                      const int64_t *part_rows, size_t nparts,
                                      int32_t *part, int64_t *row);

/* ---- IndexedSlices (TF's sparse gradient) ----
 * A node of inputs (indices int64 [n], values [n, ...]) standing for the
 * dense tensor of dense_shape that is the sum, for every i with
 * indices[i] != -1, of values[i] at row indices[i]. Its own value (what a
 * fetch of it returns, and what a consumer reads) is values. rf_gradients
 * returns one for a variable read only through Gather/embedding_lookup;
 * several are aggregated by concatenating indices and values (TF's
 * _AggregatedGrads), and mixed with dense partials they are densified
 * first. rf_apply_gradients turns one into a sparse apply.
 * rf_indexed_slices_to_dense builds the dense tensor (unsorted_segment_sum
 * into zeros; an index beyond dense_shape[0] fails the run). */
RF_API rf_node *rf_indexed_slices(rf_graph *g, rf_node *indices,
                                  rf_node *values, rf_shape dense_shape,
                                  const char *name);
RF_API bool rf_node_is_indexed_slices(const rf_node *n);
RF_API rf_node *rf_indexed_slices_indices(const rf_node *slices);
RF_API rf_node *rf_indexed_slices_values(const rf_node *slices);
RF_API rf_shape rf_indexed_slices_dense_shape(const rf_node *slices);
RF_API rf_node *rf_indexed_slices_to_dense(rf_graph *g, rf_node *slices,
                                           const char *name);

/* Composites. rf_accuracy is Mean(Cast(Equal(ArgMax(logits, -1), labels)))
 * under name scope name (default "accuracy"). rf_flatten reshapes to
 * [batch, rest]. */
RF_API rf_node *rf_accuracy(rf_graph *g, rf_node *logits, rf_node *labels,
                            const char *name);
RF_API rf_node *rf_flatten(rf_graph *g, rf_node *x, const char *name);
RF_API rf_node *rf_activation_apply(rf_graph *g, rf_node *x, rf_activation act,
                                    const char *name);

/* tf.layers.dense: under a unique name scope (default "dense") creates
 * "kernel" [in, units] (glorot_uniform) and "bias" [units] (zeros), then
 * MatMul, BiasAdd and the activation. x must have a known last dim. */
RF_API rf_node *rf_dense(rf_graph *g, rf_node *x, int units, rf_activation act,
                         const char *name);
/* tf.layers.conv2d (NHWC): "kernel" [kh, kw, in, filters] (glorot_uniform),
 * "bias" [filters] (zeros), Conv2D, BiasAdd, activation. */
RF_API rf_node *rf_conv2d_layer(rf_graph *g, rf_node *x, int filters, int kh,
                                int kw, int stride, rf_padding padding,
                                rf_activation act, const char *name);

/* ---- Variables ---------------------------------------------------------- */

typedef enum rf_init_kind {
    RF_INIT_ZEROS = 0,
    RF_INIT_CONSTANT,         /* value */
    RF_INIT_RANDOM_UNIFORM,   /* [a, b) */
    RF_INIT_TRUNCATED_NORMAL, /* mean a, stddev b; redraw beyond 2 stddev */
    RF_INIT_GLOROT_UNIFORM,   /* U(-l, l), l = sqrt(6 / (fan_in + fan_out)) */
} rf_init_kind;

/* seed 0 derives the variable's seed from the graph seed and its name, so
 * values do not depend on how many other ops were created before it. */
typedef struct rf_initializer {
    rf_init_kind kind;
    double a, b;
    uint64_t seed;
} rf_initializer;

RF_API rf_initializer rf_init_zeros(void);
RF_API rf_initializer rf_init_constant(double value);
RF_API rf_initializer rf_init_random_uniform(double minval, double maxval);
RF_API rf_initializer rf_init_truncated_normal(double mean, double stddev);
RF_API rf_initializer rf_init_glorot_uniform(void);

/* A trainable variable of a fully known shape. Its value lives in the
 * graph's variable store, allocated at creation (64-byte aligned), or in
 * storage supplied with rf_variable_set_storage(); the executor reads and
 * updates it in place and never reallocates it. */
RF_API rf_node *rf_variable(rf_graph *g, rf_dtype dtype, rf_shape shape,
                            rf_initializer init, const char *name);
/* variable_scope(partitioner=p) for the variables the layer builders
 * create (rf_dense, rf_conv2d_layer: kernels and biases) through
 * rf_get_variable; NULL clears it. The partitioner (rdmaflow/device.h) is
 * copied; a RF_PARTITIONER_CUSTOM one's ctx must outlive its use. */
struct rf_partitioner;
RF_API rf_status rf_graph_set_partitioner(rf_graph *g,
                                          const struct rf_partitioner *p);

/* get_variable(name, shape, initializer) under the graph's partitioner.
 * Without one, or for a scalar, rf_variable. With one, as TF's
 * _get_partitioned_variable: the variable is sliced along the first axis
 * whose partition count is > 1 (rf_partition_variable's slicing), each
 * slice a variable "<name>/part_<i>" created in order (so a round-robin
 * replica_device_setter advances once per part) and initialised with the
 * whole variable's shape for the initializer's fans (TF's partition_info),
 * and the result is what a PartitionedVariable is as a tensor: ConcatV2 of
 * the parts along that axis (the part itself when there is one). Each part
 * knows its slice of the whole (rf_variable_save_slice). */
RF_API rf_node *rf_get_variable(rf_graph *g, rf_dtype dtype, rf_shape shape,
                                rf_initializer init, const char *name);

/* TF's Variable.SaveSliceInfo: where a part of a partitioned variable sits
 * in the whole, which checkpoints store under the whole's name. */
#define RF_SAVE_SLICE_NAME_MAX 512
typedef struct rf_save_slice {
    char full_name[RF_SAVE_SLICE_NAME_MAX]; /* "dense/kernel" */
    rf_shape full_shape;
    int64_t offset[RF_MAX_RANK]; /* of the part in the whole */
    rf_shape shape;              /* the part's */
} rf_save_slice;

/* True for a part of a partitioned variable, and for an optimizer slot of
 * one (TF's slot_creator: full_name "<primary's full name>/<slot's own
 * name>", e.g. "dense/kernel/Adam_1" for "dense/kernel/part_0/Adam_1"). */
RF_API bool rf_variable_save_slice(const rf_node *var, rf_save_slice *out);
/* The name a checkpoint stores var under: its save slice's full_name, or
 * its own name. */
RF_API const char *rf_variable_checkpoint_name(const rf_node *var, char *buf,
                                               size_t len);
/* Copies a slice's elements into its place in the whole tensor (to_whole)
 * or out of it. */
RF_API void rf_save_slice_copy(const rf_save_slice *s, size_t elem_size,
                               void *whole, void *part, bool to_whole);

/* tf.train.get_or_create_global_step: int64 scalar "global_step", zero,
 * not trainable. */
RF_API rf_node *rf_global_step(rf_graph *g);

RF_API size_t rf_graph_num_variables(const rf_graph *g);
RF_API rf_node *rf_graph_variable(const rf_graph *g,
                                  size_t i); /* creation order */
/* The trainable variables in creation order (tf.trainable_variables). Fills
 * up to cap; returns the count. */
RF_API size_t rf_graph_trainable_variables(const rf_graph *g, rf_node **out,
                                           size_t cap);
RF_API bool rf_variable_trainable(const rf_node *var);
RF_API void rf_variable_set_trainable(rf_node *var, bool trainable);
RF_API rf_initializer rf_variable_initializer(const rf_node *var);
/* The variable whose slot this is (NULL for an ordinary variable), and the
 * slot's name ("m", "v", "momentum", "accumulator", "rms", "mg"). */
RF_API rf_node *rf_variable_slot_primary(const rf_node *var);
RF_API const char *rf_variable_slot_name(const rf_node *var);
/* optimizer.get_slot(var, name): the slot variable or NULL. */
RF_API rf_node *rf_variable_get_slot(const rf_node *var, const char *slot_name);

/* ---- The rf_variable_storage hook ----
 * Variable values live in memory the distributed runtime may need to own
 * (RDMA-registered regions). Two ways to supply it, both honoured by the
 * executor, which reads and updates variables in place and never
 * reallocates or moves their storage:
 *  - a graph-wide allocator: variables created after
 *    rf_graph_set_variable_storage() take their buffer from hook->alloc
 *    (64-byte aligned, at least bytes; NULL falls back to the graph's own
 *    allocation) and give it back through hook->release when the graph is
 *    destroyed or the storage is replaced;
 *  - per variable, rf_variable_set_storage() below. */
typedef struct rf_variable_storage {
    void *(*alloc)(void *ctx, const rf_node *var, size_t bytes);
    void (*release)(void *ctx, const rf_node *var, void *data, size_t bytes);
    void *ctx;
} rf_variable_storage;
/* hook NULL restores the graph's own allocation for later variables. */
RF_API void rf_graph_set_variable_storage(rf_graph *g,
                                          const rf_variable_storage *hook);

/* The current value buffer and its size. */
RF_API void *rf_variable_data(const rf_node *var);
RF_API size_t rf_variable_bytes(const rf_node *var);
/* Points the variable at external storage (e.g. RDMA-registered memory):
 * data must hold rf_variable_bytes() and be aligned to 64 bytes; the caller
 * keeps ownership and must keep it alive while the graph uses it. With
 * copy_current the current value is copied in (and the initialized flag is
 * kept); otherwise the variable is marked uninitialized. The graph's own
 * buffer is released. No plan may be running. */
RF_API rf_status rf_variable_set_storage(rf_node *var, void *data, size_t bytes,
                                         bool copy_current);
/* Undoes rf_variable_set_storage: the variable gets a buffer of the graph's
 * own again, with its current value copied in (the initialized flag kept),
 * so the external storage may be freed. RF_OK at once if it already owns
 * its buffer; RF_ERR_NO_MEMORY (nothing changed) if none can be had. No
 * plan may be running. */
RF_API rf_status rf_variable_own_storage(rf_node *var);

/* Runs the variable's initializer into its storage (deterministic). */
RF_API rf_status rf_variable_initialize(rf_node *var);
/* Rows [row0, row0 + nrows) of var's initial value (var's own rows: a
 * part's rows are its slice of the whole's) into out (nrows * row bytes),
 * exactly what rf_variable_initialize puts there. A row is the index along
 * axis 0 (numel / dims[0] elements; a scalar is one row); each row draws
 * from its own stream seeded from the variable's seed and the whole's row
 * index, so any range is generated alone in bounded memory (a part sliced
 * along a later axis walks the whole row and keeps its columns). The
 * graph's storage is not touched. RF_ERR_INVALID_ARG for a range outside
 * the variable's rows. */
RF_API rf_status rf_variable_initialize_rows(const rf_node *var, int64_t row0,
                                             int64_t nrows, void *out);
/* tf.global_variables_initializer, run directly: every variable. */
RF_API rf_status rf_graph_initialize_variables(rf_graph *g);
RF_API bool rf_variable_is_initialized(const rf_node *var);
RF_API void rf_variable_mark_initialized(rf_node *var, bool initialized);

/* ---- Autodiff ----------------------------------------------------------- */

/* tf.gradients(loss, xs): adds the gradient subgraph under name scope
 * "gradients" and writes d(sum of loss)/d(xs[i]) to grads_out[i], or NULL
 * where loss does not depend on xs[i] (TF's None). Partial gradients of a
 * node used several times are summed with AddN in a fixed order. A
 * variable read only through Gather/embedding_lookup gets an IndexedSlices
 * (several: one of their concatenated indices and values, as TF's
 * _AggregatedGrads); read densely too, its sparse partials are densified
 * and added (TF would make IndexedSlices of the dense ones instead: the
 * same sum in another rounding order). */
RF_API rf_status rf_gradients(rf_graph *g, rf_node *loss, rf_node *const *xs,
                              size_t n, rf_node **grads_out);

/* ---- Optimizers (tf.train.Optimizer) ---------------------------------- */

/* apply_gradients: for each (var, grad) with grad non-NULL creates the
 * optimizer's slots (colocated with var, named "<var>/<Name>",
 * "<var>/<Name>_1" as TF), Adam's "beta1_power"/"beta2_power" (colocated with
 * the first var), an ApplyX op per variable in name scope "<Name>/update_<var>"
 * that runs the rf_optim_apply() kernel, then (Adam) the finish op after all
 * of them, then, if global_step is non-NULL, AssignAdd(global_step, 1) named
 * "<Name>". *train_op is that last op (a NoOp "<Name>" without global_step).
 * name NULL means the optimizer's TF name ("Adam", ...). A grad that is an
 * IndexedSlices gets a SparseApplyOptimizer instead (named as TF's sparse
 * op: "ScatterSub", "SparseApplyMomentum", "SparseApplyAdagrad",
 * "SparseApplyAdam", "SparseApplyRMSProp"): duplicates summed first
 * (rf_optim_dedup, except for sgd: ScatterSub sums them itself), then
 * rf_optim_apply_sparse on the rows named; -1 indices are skipped. */
RF_API rf_status rf_apply_gradients(rf_graph *g, const rf_optim_config *cfg,
                                    rf_node *const *vars, rf_node *const *grads,
                                    size_t n, rf_node *global_step,
                                    const char *name, rf_node **train_op);
/* minimize = rf_gradients over every trainable variable +
 * rf_apply_gradients. RF_ERR_INVALID_ARG if no variable has a gradient. */
RF_API rf_status rf_minimize(rf_graph *g, const rf_optim_config *cfg,
                             rf_node *loss, rf_node *global_step,
                             rf_node **train_op);

/* For an ApplyOptimizer or SparseApplyOptimizer node: its config,
 * variable, gradient, slots (in rf_optim_layout order) and Adam's beta
 * power variables (NULL otherwise). For a sparse apply (sparse true)
 * indices is the int64 indices node and grad = values the IndexedSlices
 * node, whose value is the gradient's rows (NULL, false for a dense
 * apply). The distributed runtime uses this to turn it into a remote
 * apply. */
typedef struct rf_apply_info {
    const rf_optim_config *cfg;
    rf_node *var;
    rf_node *grad;
    bool sparse;
    rf_node *indices, *values;
    rf_node *slots[RF_OPTIM_MAX_SLOTS];
    unsigned num_slots;
    rf_node *beta1_power, *beta2_power;
} rf_apply_info;
RF_API rf_status rf_node_apply_info(const rf_node *apply, rf_apply_info *out);

/* ---- Executor ----------------------------------------------------------- */

typedef struct rf_executor rf_executor;
typedef struct rf_plan rf_plan;
typedef struct rf_trace rf_trace;

typedef struct rf_executor_options {
    int threads; /* total compute threads, the caller included; 0 = online
                    CPUs */
} rf_executor_options;

/* Starts threads-1 pool threads. Threading policy: the executor owns all
 * compute parallelism. OpenBLAS is set to one thread
 * (openblas_set_num_threads(1), process-wide) and the executor splits each
 * GEMM, convolution and elementwise op into chunks run on its pool, and runs
 * independent ready nodes concurrently, so at most `threads` threads compute
 * at once (no oversubscription). Chunking depends only on the shapes, never
 * on the thread count or on scheduling, and every output element (and every
 * partial sum) is computed by one chunk in a fixed order, so results are
 * bitwise reproducible for a fixed seed, and in practice independent of the
 * thread count too. */
RF_API rf_status rf_executor_create(const rf_executor_options *opts,
                                    rf_executor **out);
/* OpenBLAS picks its kernels from the CPU model when it loads; a CPU newer
 * than the library gets the slow "Prescott" (SSE3) fallback. rf_blas_core()
 * names the kernels in use; rf_blas_suggested_core() returns the
 * OPENBLAS_CORETYPE value that would use the CPU's vector units ("SkylakeX"
 * with AVX-512, "Haswell" with AVX2+FMA), or NULL when the choice is fine or
 * OPENBLAS_CORETYPE is already set. It only takes effect if set before the
 * process starts (a program may setenv and re-exec itself early in main).
 * rf_executor_create logs a warning when there is a suggestion. Results are
 * bitwise reproducible for a fixed kernel choice, not across choices. */
RF_API const char *rf_blas_core(void);
RF_API const char *rf_blas_suggested_core(void);
RF_API void rf_executor_destroy(rf_executor *ex);
RF_API int rf_executor_threads(const rf_executor *ex);
/* Plans run on ex append their per-op timings to trace (NULL stops). */
RF_API void rf_executor_set_trace(rf_executor *ex, rf_trace *trace);

/* A run plan (TF's Session.make_callable): the nodes fetches and targets
 * need, not looking past fed nodes (any node may be fed), with dependencies
 * made explicit: an op that writes a variable (Assign, ApplyX, ...) runs
 * after every other op of the plan that reads that variable directly, and
 * writers of one variable run in creation order, so runs are deterministic.
 * The step arena is allocated on the first run and again only if fed shapes
 * grow it; steady-state runs do not allocate. Within a step, values that
 * are dead (every node touching them is an ancestor of the new node) share
 * arena blocks; fetched values never do. */
/* A plan keeps pointers into g and ex: destroy it before either. Nodes
 * added to g later are not part of an existing plan. */
RF_API rf_status rf_plan_create(rf_executor *ex, rf_graph *g,
                                rf_node *const *fetches, size_t nfetch,
                                rf_node *const *feeds, size_t nfeed,
                                rf_node *const *targets, size_t ntarget,
                                rf_plan **out);
RF_API void rf_plan_destroy(rf_plan *p);
/* feed_values[i] feeds feeds[i] (dtype must match, shape must be compatible
 * with the node's static shape; the data is read in place, not copied).
 * fetch_out[i] receives a view of fetches[i]'s value, valid until the next
 * run of this plan (a variable fetch views its storage). On error nothing
 * is partially fetched; variables may have been partially updated. */
RF_API rf_status rf_plan_run(rf_plan *p, const rf_tensor *feed_values,
                             rf_tensor *fetch_out);
RF_API size_t rf_plan_num_nodes(const rf_plan *p);

/* Hooks (TensorFlow's Send/Recv points, for the distributed runtime). A node
 * marked RF_HOOK_BEFORE calls before() on the executor thread just before
 * its kernel runs (e.g. to wait for the remote read of a variable it
 * consumes); a node marked RF_HOOK_AFTER calls after() just after, with its
 * value (e.g. to push a gradient while backprop goes on). value is NULL for
 * before(). Hooks of different nodes run concurrently on different threads;
 * tid is the executor thread (0 = the caller of rf_plan_run). A hook's
 * failure fails the run with its status and rf_error_message(). Only nodes
 * that run a kernel can be marked (a fed node, Variable or Const cannot:
 * RF_ERR_INVALID_ARG), and only nodes of the plan. Set before a run. */
typedef rf_status (*rf_plan_hook_fn)(void *ctx, rf_node *node,
                                     const rf_tensor *value, int tid);
#define RF_HOOK_BEFORE 1u
#define RF_HOOK_AFTER  2u
RF_API void rf_plan_set_hooks(rf_plan *p, rf_plan_hook_fn before,
                              rf_plan_hook_fn after, void *ctx);
RF_API rf_status rf_plan_hook_node(rf_plan *p, const rf_node *node,
                                   unsigned when);
/* A node marked RF_HOOK_INPUTS calls inputs() on the executor thread after
 * its before() and just before its kernel, with the kernel's inputs
 * in[0..*n): the hook may point entries at other tensors and lower *n, for
 * this run of this node only (the kernel reads what the hook left; the
 * plan's values and the other consumers are not affected). The tensors it
 * substitutes must stay valid until the kernel returned. The distributed
 * runtime points an embedding lookup at the rows it READ from the ps
 * (session/session_rows.c). A node so marked is never fused. */
typedef rf_status (*rf_plan_inputs_fn)(void *ctx, rf_node *node,
                                       const rf_tensor **in, size_t *n,
                                       int tid);
#define RF_HOOK_INPUTS 4u
RF_API void rf_plan_set_input_hook(rf_plan *p, rf_plan_inputs_fn inputs,
                                   void *ctx);
/* Whether node is part of the plan (runs or is read by it). */
RF_API bool rf_plan_contains(const rf_plan *p, const rf_node *node);
/* The plan's nodes in topological order (for the distributed runtime to
 * find the consumers of remote variables). */
RF_API rf_node *rf_plan_node(const rf_plan *p, size_t i);
RF_API size_t rf_plan_arena_bytes(const rf_plan *p);
/* Number of runs so far. */
RF_API uint64_t rf_plan_steps(const rf_plan *p);

/* ---- Trace (Chrome trace event JSON, viewable in Perfetto) ------------ */

RF_API rf_status rf_trace_create(rf_trace **out);
RF_API void rf_trace_destroy(rf_trace *t);
RF_API size_t rf_trace_num_events(const rf_trace *t);
/* Sets the process id and label of the events (default: getpid(), ""). */
RF_API void rf_trace_set_process(rf_trace *t, int pid, const char *label);
/* Writes {"traceEvents":[{"name","cat","ph":"X","ts","dur","pid","tid",
 * "args":{"op","step","shape"}},...]} (ts/dur in microseconds) plus thread
 * and process name metadata events, through rdmaflow/file.h's writer (the
 * path checked, a symbolic link followed, a temporary file renamed into
 * place). */
RF_API rf_status rf_trace_write_json(const rf_trace *t, const char *path);
/* The trace's clock (CLOCK_MONOTONIC nanoseconds), for rf_trace_add_span. */
RF_API uint64_t rf_trace_clock_ns(void);
/* Appends a complete event the caller timed (a fabric operation, a wait):
 * name (e.g. "READ dense/kernel"), category cat (e.g. "fabric"), args the
 * JSON object members to put in "args" (e.g. "\"bytes\":1024", or NULL),
 * to which "step" is added. Thread-safe; allocates only the first time a
 * (name, cat, args) triple is seen and when the event buffer grows. */
RF_API void rf_trace_add_span(rf_trace *t, const char *name, const char *cat,
                              const char *args, uint64_t ts_ns, uint64_t dur_ns,
                              int tid, uint64_t step);
/* Names thread tid (0..63) in the trace's metadata (default "caller" for 0,
 * "worker N" for the executor's pool threads). */
RF_API void rf_trace_set_thread_name(rf_trace *t, int tid, const char *name);

/* ---- Allocation accounting ----------------------------------------------- */

/* Every allocation the graph library makes goes through one counted
 * allocator; tests use the counters to check that steady-state steps do
 * not allocate. */
typedef struct rf_graph_alloc_stats {
    uint64_t allocations; /* malloc/calloc/realloc calls so far */
    uint64_t frees;
    int64_t live_bytes;
} rf_graph_alloc_stats;
RF_API rf_graph_alloc_stats rf_graph_alloc_stats_get(void);

#ifdef __cplusplus
}
#endif
#endif
