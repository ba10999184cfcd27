/* rdmaflow/device.h: TensorFlow 1.x device strings and variable placement.
 *
 *  - rf_device_spec: a (possibly partial) device "/job:J/replica:R/task:T/
 *    device:TYPE:ID" with TensorFlow's grammar, canonical printing and
 *    merging (tf.DeviceSpec, DeviceNameUtils).
 *  - rf_device_stack: the stack of `with tf.device(...)` scopes, applied to a
 *    new op exactly as TF1's Graph._apply_device_functions does.
 *  - rf_replica_device_setter: tf.train.replica_device_setter with the
 *    round-robin and greedy-by-bytes strategies or a user strategy.
 *  - rf_partitioner: fixed_size / min_max_variable / variable_axis_size
 *    partitioners, and the slicing of a variable into "<name>/part_<i>"
 *    shards, each placed through the device stack.
 *
 * Nothing here depends on the graph structures: an op is described by an
 * rf_op_desc. None of these objects is thread-safe (graph construction is
 * single-threaded, as in TensorFlow). */
#ifndef RDMAFLOW_DEVICE_H
#define RDMAFLOW_DEVICE_H

#include "rdmaflow/api.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmaflow/cluster.h"
#include "rdmaflow/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Device specifications -------------------------------------------- */

#define RF_DEVICE_UNSET      (-1) /* replica, task or id not specified */
#define RF_DEVICE_JOB_MAX    64   /* job name, with its NUL */
#define RF_DEVICE_TYPE_MAX   32   /* device type, with its NUL */
#define RF_DEVICE_STRING_MAX 160  /* any canonical device string, with NUL */

/* A partial device. Unset fields are "" (job, type) or RF_DEVICE_UNSET
 * (replica, task, id). The all-unset spec is the empty device "". */
typedef struct rf_device_spec {
    char job[RF_DEVICE_JOB_MAX];
    int replica;
    int task;
    char type[RF_DEVICE_TYPE_MAX];
    int id;
} rf_device_spec;

/* Sets every field to unset. */
RF_API void rf_device_spec_clear(rf_device_spec *spec);

/* Parses a device string. Accepted (the union of what TF1's Python
 * DeviceSpec.from_string and C++ DeviceNameUtils::ParseFullName accept):
 *  - components separated by '/', in any order, empty components ignored:
 *    "", "/", "/job:ps/", "job:ps" and "/task:0/job:ps" are all valid;
 *  - "job:NAME"  NAME = letter then letters, digits or '_' (ParseFullName's
 *    rule), or '*' for unset;
 *  - "replica:N", "task:N"  N = decimal digits (<= INT_MAX) or '*';
 *  - "device:TYPE:ID" or "device:TYPE" (id unset)  TYPE = letter then
 *    letters, digits or '_', or '*'; "cpu" and "gpu" become "CPU" and "GPU"
 *    (DeviceSpec's backward compatibility); ID = digits or '*';
 *  - legacy "cpu", "CPU:0", "gpu:*", "/Gpu:1" ...: a component whose name
 *    is CPU or GPU in any case, with an optional ":ID" (TF1 DeviceSpec);
 *  - job, replica and task may repeat (the last wins, as in TF); a second
 *    device type is an error (DeviceSpec: "Cannot specify multiple device
 *    types").
 * NULL is the same as "". On error returns RF_ERR_INVALID_ARG, leaves *out
 * cleared and sets a message naming the offset and text of the culprit:
 *   device string "/job:ps/tsk:1": unknown field at offset 8 ("tsk:1") */
RF_API rf_status rf_device_spec_parse(const char *str, rf_device_spec *out);

/* Canonical form, exactly DeviceSpec.to_string() and
 * DeviceNameUtils::ParsedNameToString(): "/job:J" "/replica:R" "/task:T"
 * "/device:TYPE:ID" in this order, each only if set; an unset id prints as
 * '*' ("/device:GPU:*"); an id without a type is not printed. The empty spec
 * prints "". Returns RF_ERR_INVALID_ARG if len is too small (buf then holds
 * "") or spec holds a value the parser would not accept. */
RF_API rf_status rf_device_spec_to_string(const rf_device_spec *spec, char *buf,
                                          size_t len);

/* Parses str and prints its canonical form into buf. */
RF_API rf_status rf_device_canonicalize(const char *str, char *buf, size_t len);

/* DeviceSpec.make_merged_spec / merge_from: every field set in `dev` replaces
 * the one in *base; fields unset in `dev` are kept. No conflict is possible.
 */
RF_API void rf_device_spec_merge(rf_device_spec *base,
                                 const rf_device_spec *dev);

/* DeviceNameUtils::MergeDevNames (used for colocation): fields set in both
 * must agree, else RF_ERR_INVALID_ARG ("Cannot merge devices with
 * incompatible jobs: '/job:foo' and '/job:bar'"), except that with
 * allow_soft_placement a type or id conflict is resolved by unsetting the
 * type and id (type conflict) or the id (id conflict), as TF does. */
RF_API rf_status rf_device_spec_merge_strict(rf_device_spec *target,
                                             const rf_device_spec *other,
                                             bool allow_soft_placement);

/* True when every field is equal (both unset or both set to the same). */
RF_API bool rf_device_spec_equal(const rf_device_spec *a,
                                 const rf_device_spec *b);

/* True when no field is set. */
RF_API bool rf_device_spec_is_empty(const rf_device_spec *spec);

/* DeviceNameUtils::IsSpecification: every field set in `less` is set to the
 * same value in `more`. */
RF_API bool rf_device_spec_is_specification(const rf_device_spec *less,
                                            const rf_device_spec *more);

/* DeviceNameUtils::IsSameAddressSpace: job, replica and task are set in both
 * and equal (the two devices are in the same process). */
RF_API bool rf_device_spec_same_address_space(const rf_device_spec *a,
                                              const rf_device_spec *b);

/* ---- Ops and device functions ----------------------------------------- */

/* What a device function sees of an op. */
typedef struct rf_op_desc {
    const char *type;   /* op type, e.g. "VariableV2", "MatMul" */
    const char *name;   /* op name, e.g. "layer1/weights/part_0" */
    const char *device; /* device requested so far ("" or NULL: none) */
    size_t bytes;       /* size of its single output (byte_size_load_fn), 0 if
                           not known */
} rf_op_desc;

/* A device function (the callable given to tf.device): writes the device for
 * op into out (NUL-terminated, at most out_len bytes; "" means no device).
 * op->device holds what the scopes inside this one produced. The result is
 * parsed and canonicalized by the caller; a malformed result is an error. */
typedef rf_status (*rf_op_device_fn)(void *ctx, const rf_op_desc *op, char *out,
                                     size_t out_len);

/* Bytes of a tensor of the given shape and element size, as
 * contrib.training.byte_size_load_fn: num_elements * elem_size. A negative
 * (unknown) dimension or an overflow is RF_ERR_INVALID_ARG. Rank 0 is a
 * scalar (1 element). */
RF_API rf_status rf_device_byte_size(const int64_t *shape, int rank,
                                     size_t elem_size, size_t *out);

/* ---- Device scopes (tf.device) ---------------------------------------- */

typedef struct rf_device_stack rf_device_stack;

RF_API rf_status rf_device_stack_create(rf_device_stack **out);
RF_API void rf_device_stack_destroy(rf_device_stack *stack);

/* `with tf.device("...")`: the string is parsed now (RF_ERR_INVALID_ARG if
 * malformed). NULL is `with tf.device(None)`: scopes outside it are ignored
 * for ops created inside it. */
RF_API rf_status rf_device_stack_push(rf_device_stack *stack,
                                      const char *device);

/* `with tf.device(fn)`. fn NULL is `tf.device(None)`. ctx is not owned. */
RF_API rf_status rf_device_stack_push_fn(rf_device_stack *stack,
                                         rf_op_device_fn fn, void *ctx);

/* Leaves the innermost scope. RF_ERR_INVALID_ARG if the stack is empty. */
RF_API rf_status rf_device_stack_pop(rf_device_stack *stack);

RF_API size_t rf_device_stack_depth(const rf_device_stack *stack);

/* Computes the device of a new op, as Graph._apply_device_functions: starting
 * from op->device ("" for a new op), the scopes are applied from the
 * INNERMOST outwards, stopping at a tf.device(None) scope. A string scope
 * merges its spec under the current device (fields already set win:
 * device.merge_device, so inner scopes take precedence); an empty string
 * scope is skipped (MergeDevice.is_null_merge); a function scope receives
 * the op with its device as computed so far and its result replaces it.
 * Writes the canonical device string into out. */
RF_API rf_status rf_device_stack_apply(rf_device_stack *stack,
                                       const rf_op_desc *op, char *out,
                                       size_t out_len);

/* ---- replica_device_setter -------------------------------------------- */

/* rf_cluster_desc (a job of a cluster as far as placement needs it) is in
 * rdmaflow/cluster.h. */

typedef enum rf_ps_strategy_kind {
    RF_PS_ROUND_ROBIN = 0, /* _RoundRobinStrategy (the default) */
    RF_PS_GREEDY,          /* contrib GreedyLoadBalancingStrategy */
    RF_PS_CUSTOM,          /* user callback */
} rf_ps_strategy_kind;

/* Load of an op for RF_PS_GREEDY; NULL means byte_size_load_fn (op->bytes).
 */
typedef double (*rf_ps_load_fn)(void *ctx, const rf_op_desc *op);

/* A user strategy: returns the ps task index (0 <= *task < num_tasks) for a
 * ps op. */
typedef rf_status (*rf_ps_strategy_fn)(void *ctx, const rf_op_desc *op,
                                       int num_tasks, int *task);

/* TensorFlow's device_setter.STANDARD_PS_OPS (14 op types). */
extern RF_API const char *const rf_standard_ps_ops[];
extern RF_API const size_t rf_standard_ps_ops_count;

typedef struct rf_replica_device_setter_options {
    int ps_tasks;                   /* ignored when cluster is set */
    const rf_cluster_desc *cluster; /* NULL: use ps_tasks */
    const char *ps_device;     /* default "/job:ps"; "" = no ps placement */
    const char *worker_device; /* default "/job:worker"; "" = none */
    bool merge_devices;        /* default true */
    const char *const *ps_ops; /* NULL: rf_standard_ps_ops */
    size_t num_ps_ops;
    rf_ps_strategy_kind strategy; /* default RF_PS_ROUND_ROBIN */
    rf_ps_load_fn load_fn;        /* RF_PS_GREEDY; NULL = op->bytes */
    void *load_ctx;
    rf_ps_strategy_fn strategy_fn; /* RF_PS_CUSTOM */
    void *strategy_ctx;
} rf_replica_device_setter_options;

/* Fills *opts with replica_device_setter's defaults. */
RF_API void
rf_replica_device_setter_options_init(rf_replica_device_setter_options *o);

typedef struct rf_replica_device_setter rf_replica_device_setter;

/* replica_device_setter(...). As in TF, when a cluster is given the number of
 * ps tasks is that of the cluster's job named by ps_device's job; if
 * ps_device has no job or the cluster has no such job, or the number of ps
 * tasks is 0, there is no device function: RF_OK with *out = NULL (TF
 * returns None, and tf.device(None) then clears the outer scopes; see
 * rf_device_stack_push_setter). Bad options (negative ps_tasks, malformed
 * device strings, RF_PS_CUSTOM without a callback) are RF_ERR_INVALID_ARG.
 * The strings of opts are copied. */
RF_API rf_status
rf_replica_device_setter_create(const rf_replica_device_setter_options *opts,
                                rf_replica_device_setter **out);
RF_API void rf_replica_device_setter_destroy(rf_replica_device_setter *setter);

/* _ReplicaDeviceChooser.device_function, usable as an rf_op_device_fn with the
 * setter as ctx:
 *  - merge_devices false and op->device non-empty: op->device unchanged;
 *  - op->type in ps_ops, ps_tasks > 0 and ps_device non-empty: ps_device,
 *    with its task chosen by the strategy only if ps_device has a job and
 *    op->device has no job or the same job (only then does the strategy run
 *    and round-robin advance), then the fields set in op->device override;
 *  - otherwise worker_device with the fields set in op->device overriding. */
RF_API rf_status rf_replica_device_setter_fn(void *setter, const rf_op_desc *op,
                                             char *out, size_t out_len);

/* `with tf.device(replica_device_setter(...))`: pushes the setter's device
 * function, or tf.device(None) when setter is NULL (TF's no-op case). */
RF_API rf_status rf_device_stack_push_setter(rf_device_stack *stack,
                                             rf_replica_device_setter *setter);

/* Number of ps tasks the setter places on. */
RF_API int
rf_replica_device_setter_ps_tasks(const rf_replica_device_setter *setter);

/* RF_PS_GREEDY: the load placed so far on ps task `task` (0 otherwise). */
RF_API double
rf_replica_device_setter_load(const rf_replica_device_setter *setter, int task);

/* ---- Graph integration (rdmaflow/graph.h) ------------------------------ */

/* rdmaflow/graph.h keeps its own device-function stack (rf_device_fn_push),
 * walked innermost first like rf_device_stack. These functions have the
 * signature of its rf_device_fn, read the node's current requested device
 * from device[0..cap) and write the new canonical one there. */
struct rf_graph;
struct rf_node;

/* The rf_op_desc of a node whose current requested device is `device`:
 * type = rf_node_op_name, name = rf_node_name, bytes = elements * dtype size
 * when the static shape is fully known, else 0. */
RF_API void rf_device_node_desc(const struct rf_node *node, const char *device,
                                rf_op_desc *out);

/* tf.device("..."): ctx is a const rf_device_spec * that must outlive the
 * scope; its set fields fill those the node's device leaves unset. */
RF_API rf_status rf_device_node_merge_fn(void *spec, const struct rf_node *node,
                                         char *device, size_t cap);

/* tf.device(fn) for an rf_op_device_fn: ctx is an rf_op_device_binding that
 * must outlive the scope. */
typedef struct rf_op_device_binding {
    rf_op_device_fn fn;
    void *ctx;
} rf_op_device_binding;
RF_API rf_status rf_device_node_fn(void *binding, const struct rf_node *node,
                                   char *device, size_t cap);

/* tf.device(replica_device_setter(...)) on a graph: ctx is the setter. */
RF_API rf_status rf_replica_device_setter_node_fn(void *setter,
                                                  const struct rf_node *node,
                                                  char *device, size_t cap);

/* Pushes the setter's node function on g's device stack, or tf.device(None)
 * when setter is NULL (replica_device_setter returned None). */
RF_API rf_status rf_graph_push_replica_device_setter(
    struct rf_graph *g, rf_replica_device_setter *setter);

/* Parses device into *storage (which must outlive the scope) and pushes
 * rf_device_node_merge_fn with it: `with tf.device("...")` on a graph. NULL
 * pushes tf.device(None). */
RF_API rf_status rf_graph_push_device(struct rf_graph *g, const char *device,
                                      rf_device_spec *storage);

/* ---- Partitioners ----------------------------------------------------- */

#define RF_PARTITION_MAX_RANK 8

typedef enum rf_partitioner_kind {
    RF_PARTITIONER_FIXED_SIZE = 0,
    RF_PARTITIONER_MIN_MAX,
    RF_PARTITIONER_VARIABLE_AXIS_SIZE,
    RF_PARTITIONER_CUSTOM,
} rf_partitioner_kind;

/* A user partitioner: writes rank partition counts for a variable of the
 * given shape and element type (is_string: TF's dtypes.string). */
typedef rf_status (*rf_partitioner_fn)(void *ctx, const int64_t *shape,
                                       int rank, size_t elem_size,
                                       bool is_string, int *partitions);

typedef struct rf_partitioner {
    rf_partitioner_kind kind;
    int axis;       /* Python indexing: negative counts from the last axis */
    int num_shards; /* FIXED_SIZE */
    int max_partitions;               /* MIN_MAX */
    int64_t min_slice_size;           /* MIN_MAX */
    int64_t max_shard_bytes;          /* VARIABLE_AXIS_SIZE */
    int max_shards;                   /* VARIABLE_AXIS_SIZE, 0 = no limit */
    int64_t bytes_per_string_element; /* MIN_MAX, VARIABLE_AXIS_SIZE */
    rf_partitioner_fn fn;             /* CUSTOM */
    void *ctx;
} rf_partitioner;

/* fixed_size_partitioner(num_shards, axis=0). */
RF_API rf_status rf_fixed_size_partitioner(int num_shards, int axis,
                                           rf_partitioner *out);

/* min_max_variable_partitioner(max_partitions=1, axis=0,
 * min_slice_size=256<<10, bytes_per_string_element=16). */
#define RF_MIN_SLICE_SIZE_DEFAULT           (256 << 10)
#define RF_BYTES_PER_STRING_ELEMENT_DEFAULT 16
RF_API rf_status rf_min_max_variable_partitioner(
    int max_partitions, int axis, int64_t min_slice_size,
    int64_t bytes_per_string_element, rf_partitioner *out);

/* variable_axis_size_partitioner(max_shard_bytes, axis=0,
 * bytes_per_string_element=16, max_shards=None (0)). As TF, max_shard_bytes
 * and bytes_per_string_element must be >= 1 and max_shards >= 0, else
 * RF_ERR_INVALID_ARG. */
RF_API rf_status rf_variable_axis_size_partitioner(
    int64_t max_shard_bytes, int axis, int64_t bytes_per_string_element,
    int max_shards, rf_partitioner *out);

/* Calls the partitioner (variable_scope._call_partitioner): writes rank
 * partition counts, computed exactly as TF (float arithmetic included), and
 * validates them: every count >= 1 and at most one > 1. Rank must be in
 * [1, RF_PARTITION_MAX_RANK] and every dimension >= 0. */
RF_API rf_status rf_partitioner_partitions(const rf_partitioner *p,
                                           const int64_t *shape, int rank,
                                           size_t elem_size, bool is_string,
                                           int *partitions);

/* One shard of a partitioned variable (or the whole variable). */
typedef struct rf_var_part {
    char *name; /* "<name>/part_<i>", or "<name>" when not partitioned */
    int64_t offset[RF_PARTITION_MAX_RANK];
    int64_t shape[RF_PARTITION_MAX_RANK];
    size_t bytes;                      /* elements * elem_size */
    char device[RF_DEVICE_STRING_MAX]; /* as placed by the device stack */
} rf_var_part;

typedef struct rf_partitioned_var {
    bool partitioned; /* false: no partitioner, or a scalar (TF ignores the
                         partitioner for scalars) */
    int rank;
    int64_t full_shape[RF_PARTITION_MAX_RANK];
    int partitions[RF_PARTITION_MAX_RANK]; /* PartitionedVariable
                                              ._get_partitions() */
    int slice_dim;                         /* first axis with count > 1, 0 */
    int num_parts;
    rf_var_part *parts;
} rf_partitioned_var;

/* variable_scope.get_variable(name, shape, partitioner=p) for placement:
 * computes the partitions, slices the variable along the first axis whose
 * count is > 1 (part i has dim / n + (i < dim % n) rows, offsets
 * cumulative: variable_scope._iter_slices), names part i "<name>/part_<i>"
 * and places each part, in order, as an op of type op_type (NULL:
 * "VariableV2") through stack (NULL: no device), so a round-robin setter
 * advances once per part. p NULL, or rank 0, gives one unpartitioned part
 * named <name>. Zero-sized dimensions or more slices than rows are
 * RF_ERR_INVALID_ARG (TF's _PartitionInfo rejects an offset >= the
 * dimension). Free the result with rf_partitioned_var_free. */
RF_API rf_status rf_partition_variable(const rf_partitioner *p,
                                       const char *name, const char *op_type,
                                       const int64_t *shape, int rank,
                                       size_t elem_size, bool is_string,
                                       rf_device_stack *stack,
                                       rf_partitioned_var *out);

RF_API void rf_partitioned_var_free(rf_partitioned_var *var);

#ifdef __cplusplus
}
#endif
#endif
