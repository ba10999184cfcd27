/* graph/graph_internal.h: the representation behind rdmaflow/graph.h, shared
 * by the graph core's files: node and graph structs, the op table entry
 * (shape function, scratch size, kernel, gradient builder), the kernel
 * context, and the counted allocator. Not installed; not for other layers. */
#ifndef RF_GRAPH_INTERNAL_H
#define RF_GRAPH_INTERNAL_H

#include <stdarg.h>
#include <stdatomic.h>
#include <string.h>

#include "rdmaflow/clock.h"
#include "rdmaflow/device.h"
#include "rdmaflow/graph.h"

/* ---- counted allocator (alloc.c) --------------------------------------- */

void *gmalloc(size_t n);
void *gcalloc(size_t count, size_t size);
void *grealloc(void *p, size_t n);
void gfree(void *p);
char *gstrdup(const char *s);
/* 64-byte aligned, zeroed (4 MiB and more: an anonymous mapping, whose
 * pages cost nothing until touched); free with gfree_aligned and the
 * same n. */
void *galloc_aligned(size_t n);
void gfree_aligned(void *p, size_t n);

#define RF_ALIGN 64
static inline size_t rf_align_up(size_t n, size_t a)
{
    return (n + a - 1) / a * a;
}

/* Branch-free float selections: gcc -O2 compiles `a > b ? a : b` on floats
 * to a branch, which mispredicts half the time on activations of random
 * sign. These compile to a compare and bit masks (and vectorize). */
static inline float rf_f32_bits_and(float v, uint32_t mask)
{
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    b &= mask;
    memcpy(&v, &b, sizeof v);
    return v;
}
/* cond > 0 ? v : +0 */
static inline float rf_sel_pos(float cond, float v)
{
    return rf_f32_bits_and(v, -(uint32_t)(cond > 0.0f));
}
/* a > b ? a : b */
static inline float rf_maxf(float a, float b)
{
    uint32_t m = -(uint32_t)(a > b), ua, ub;
    memcpy(&ua, &a, sizeof ua);
    memcpy(&ub, &b, sizeof ub);
    ua = (ua & m) | (ub & ~m);
    memcpy(&a, &ua, sizeof a);
    return a;
}

/* 4-float vectors (GCC/Clang vector extensions, one SSE register on
 * baseline x86-64, NEON on arm64): the hot elementwise loops use them
 * because -O2 does not vectorize loops of unknown trip count. */
typedef float rf_v4f __attribute__((vector_size(16)));
typedef int32_t rf_v4i __attribute__((vector_size(16)));
static inline rf_v4f rf_v4_load(const float *p)
{
    rf_v4f v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void rf_v4_store(float *p, rf_v4f v)
{
    memcpy(p, &v, sizeof v);
}
static inline rf_v4f rf_v4_splat(float x)
{
    rf_v4f v = {x, x, x, x};
    return v;
}
/* a > b ? a : b per lane */
static inline rf_v4f rf_v4_max(rf_v4f a, rf_v4f b)
{
    rf_v4i m = a > b;
    return (rf_v4f)(((rf_v4i)a & m) | ((rf_v4i)b & ~m));
}
/* cond > 0 ? v : +0 per lane */
static inline rf_v4f rf_v4_sel_pos(rf_v4f cond, rf_v4f v)
{
    return (rf_v4f)((rf_v4i)v & (cond > rf_v4_splat(0.0f)));
}

/* ---- nodes and graph ----------------------------------------------------- */

typedef struct rf_attrs {
    bool transpose_a, transpose_b; /* MatMul */
    bool keep_dims;                /* Sum, Mean, ReductionGrad */
    bool mean;                     /* ReductionGrad: scale by 1/count */
    int naxes;                     /* Sum, Mean, ReductionGrad: */
    int axes[RF_MAX_RANK];         /*   normalized, sorted, unique */
    int axis;                      /* ArgMax, Concat, ConcatGrad */
    int index;                     /* ConcatGrad: which input */
    rf_shape shape;                /* Reshape target, Placeholder shape */
    int ksize[2], strides[2];      /* Conv2D*, MaxPool* (h, w) */
    rf_padding padding;
    rf_dtype dtype;     /* Cast target, ArgMax out type */
    unsigned num_slots; /* ApplyOptimizer, SparseApplyOptimizer */
    /* EmbeddingLookup, EmbeddingPartIndices: TF's partition_strategy
     * ("div" if true, else "mod"); EmbeddingPartIndices also: which part,
     * of how many, the table's total rows and this part's rows */
    bool div_strategy;
    int part, num_parts;
    int64_t vocab, part_rows;
    const rf_optim_config *optim; /* ApplyOptimizer, OptimizerFinish: copied
                                     into the node at creation */
} rf_attrs;

typedef struct rf_var {
    rf_node *node;
    void *data;
    size_t bytes;
    bool owned;               /* data allocated by the graph */
    rf_variable_storage hook; /* alloc set: data came from this hook */
    bool initialized;
    bool trainable;
    rf_initializer init;
    rf_node *slot_primary;
    char slot_name[32];
    rf_save_slice *slice; /* a part of a partitioned variable, else NULL */
} rf_var;

struct rf_node {
    rf_graph *graph;
    size_t id;
    rf_op_type op;
    char *name;
    rf_node **inputs;
    size_t n_inputs;
    rf_node **control;
    size_t n_control, cap_control;
    rf_dtype dtype;
    rf_shape shape;
    char requested_device[RF_DEVICE_MAX];
    char assigned_device[RF_DEVICE_MAX];
    rf_node *colocate_with;
    rf_attrs attr;
    void *const_data; /* Const: owned copy (64-byte aligned) */
    size_t const_bytes;
    rf_var *var;            /* Variable */
    rf_optim_config *optim; /* ApplyOptimizer, OptimizerFinish: owned */
};

#define RF_STACK_MAX 64

typedef struct rf_name_entry {
    char *key; /* lower-case */
    size_t count;
} rf_name_entry;

struct rf_graph {
    rf_node **nodes;
    size_t n_nodes, cap_nodes;
    rf_var **vars;
    size_t n_vars, cap_vars;
    rf_name_entry *names; /* open addressing, cap a power of two */
    size_t n_names, cap_names;
    char scope[1024];
    char *scope_saved[RF_STACK_MAX]; /* the enclosing scopes */
    int scope_depth;
    struct {
        rf_node **deps;
        size_t n;
    } cdeps[RF_STACK_MAX];
    int cdeps_depth;
    struct {
        rf_device_fn fn;
        void *ctx;
    } devfns[RF_STACK_MAX];
    int devfn_depth;
    rf_node *coloc[RF_STACK_MAX];
    int coloc_depth;
    uint64_t seed;
    rf_variable_storage storage; /* for new variables (alloc NULL: own) */
    rf_partitioner *partitioner; /* rf_get_variable's, NULL: none */
    rf_status err;
    char errmsg[512];
};

/* Records a build error (the first one is kept in the graph), sets the
 * thread's error message, returns NULL. */
rf_node *graph_fail(rf_graph *g, rf_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Releases a variable's buffer to wherever it came from. */
void var_release(rf_var *v);
rf_status graph_failv(rf_graph *g, rf_status st, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* Creates a node: checks inputs (a NULL input returns NULL quietly if the
 * graph already failed), makes the name unique, runs the op's shape
 * function, applies control dependencies, colocation and device functions.
 * attr may be NULL. */
rf_node *node_create(rf_graph *g, rf_op_type op, const char *name,
                     rf_node *const *inputs, size_t n, const rf_attrs *attr);
/* Same, with a message for the caller's own argument checks. */

/* Ops that write the variable behind input i (Assign, AssignAdd, apply
 * slots, finish), and ops whose output is a reference to a variable's
 * storage (Variable, Assign, AssignAdd, ApplyOptimizer). */
bool node_writes_input(const rf_node *n, size_t i);
bool node_is_ref(const rf_node *n);
/* The Variable node behind a reference (following Assign etc. to input 0),
 * or NULL if n is not a reference. */
rf_node *node_ref_var(const rf_node *n);

/* ---- shapes (tensor.c) ------------------------------------------------- */

/* "<OpType> '<name>': " prefix for messages. */
int node_describe(const rf_node *n, char *buf, size_t len);
/* rf_error_set(st, "<OpType> '<name>': <fmt>") */
rf_status node_error(const rf_node *n, rf_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* NumPy broadcast of a and b (with -1 as unknown); RF_ERR_INVALID_ARG
 * through node_error if incompatible. */
rf_status broadcast_shape(const rf_node *n, const rf_shape *a,
                          const rf_shape *b, rf_shape *out);
/* Short-hand formatted shape for messages (two rotating buffers per call
 * site are enough: use SHAPE_STR(a), SHAPE_STR(b) in one message). */
typedef struct rf_shape_str {
    char s[96];
} rf_shape_str;
rf_shape_str shape_str_of(const rf_shape *s);
#define SHAPE_STR(sh) (shape_str_of(sh).s)

/* ---- op table (op_table.c) --------------------------------------------- */

typedef struct rf_pool rf_pool;

/* Kernel context: the node, its input values and output, a scratch area
 * (of the size the op's scratch function asked for) and the pool. */
typedef struct rf_kctx {
    const rf_node *node;
    const rf_tensor *const *in;
    size_t n_in;
    rf_tensor *out;
    void *scratch;
    size_t scratch_bytes;
    rf_pool *pool;
    int tid;      /* thread running the kernel body */
    int nthreads; /* pool size (scratch functions were given this) */
    /* Set by the executor's fusion (fusion.c), zero when the node runs
     * alone. MatMul, Conv2D: after each block, out += epi_bias per row of
     * the last dimension, then Relu if epi_relu (the folded BiasAdd and
     * Relu). ReluGrad: also write BiasAddGrad's partial sums into
     * bias_partials. BiasAddGrad: partials_done, its scratch holds them. */
    const float *epi_bias;
    bool epi_relu;
    double *bias_partials;
    bool partials_done;
} rf_kctx;

typedef rf_status (*rf_shape_fn)(const rf_node *n, const rf_shape *in,
                                 const rf_dtype *in_dt, rf_shape *out,
                                 rf_dtype *out_dt);
typedef size_t (*rf_scratch_fn)(const rf_node *n, const rf_shape *in,
                                const rf_shape *out, int nthreads);
typedef rf_status (*rf_kernel_fn)(rf_kctx *k);
/* Builds the gradients of n's inputs from dy (the gradient of n's output):
 * dx[i] for each input, NULL where there is none. */
typedef rf_status (*rf_grad_fn)(rf_graph *g, rf_node *n, rf_node *dy,
                                rf_node **dx);

enum {
    RF_OPF_NOT_DIFFERENTIABLE = 1u << 0, /* explicitly no gradient */
    RF_OPF_STATEFUL = 1u << 1,           /* writes a variable */
    RF_OPF_CAN_ALIAS = 1u << 2,  /* output may alias input 0 (if not a ref) */
    RF_OPF_REF_OUTPUT = 1u << 3, /* output is input 0's variable storage */
    RF_OPF_SOURCE = 1u << 4,     /* no kernel: value supplied by the plan */
};

typedef struct rf_op_def {
    const char *name;
    int min_inputs, max_inputs; /* max -1: variadic */
    unsigned flags;
    rf_shape_fn shape;
    rf_scratch_fn scratch; /* NULL: none */
    rf_kernel_fn kernel;   /* NULL only for sources and NoOp */
    rf_grad_fn grad;       /* NULL: not differentiable */
} rf_op_def;

const rf_op_def *op_def_get(rf_op_type op);
/* RF_OK if every entry of the table is filled in consistently (checked once
 * at graph creation and by the unit tests). */
rf_status op_table_check(void);

/* shape functions (shape_fns.c) */
rf_status shape_from_attr(const rf_node *, const rf_shape *, const rf_dtype *,
                          rf_shape *, rf_dtype *);
rf_status shape_same(const rf_node *, const rf_shape *, const rf_dtype *,
                     rf_shape *, rf_dtype *);
rf_status shape_noop(const rf_node *, const rf_shape *, const rf_dtype *,
                     rf_shape *, rf_dtype *);
rf_status shape_assign(const rf_node *, const rf_shape *, const rf_dtype *,
                       rf_shape *, rf_dtype *);
rf_status shape_matmul(const rf_node *, const rf_shape *, const rf_dtype *,
                       rf_shape *, rf_dtype *);
rf_status shape_binary(const rf_node *, const rf_shape *, const rf_dtype *,
                       rf_shape *, rf_dtype *);
rf_status shape_float_unary(const rf_node *, const rf_shape *, const rf_dtype *,
                            rf_shape *, rf_dtype *);
rf_status shape_add_n(const rf_node *, const rf_shape *, const rf_dtype *,
                      rf_shape *, rf_dtype *);
rf_status shape_bias_add(const rf_node *, const rf_shape *, const rf_dtype *,
                         rf_shape *, rf_dtype *);
rf_status shape_softmax(const rf_node *, const rf_shape *, const rf_dtype *,
                        rf_shape *, rf_dtype *);
rf_status shape_xent(const rf_node *, const rf_shape *, const rf_dtype *,
                     rf_shape *, rf_dtype *);
rf_status shape_sigmoid_xent(const rf_node *, const rf_shape *,
                             const rf_dtype *, rf_shape *, rf_dtype *);
rf_status shape_xent_grad(const rf_node *, const rf_shape *, const rf_dtype *,
                          rf_shape *, rf_dtype *);
rf_status shape_reduce(const rf_node *, const rf_shape *, const rf_dtype *,
                       rf_shape *, rf_dtype *);
rf_status shape_reshape(const rf_node *, const rf_shape *, const rf_dtype *,
                        rf_shape *, rf_dtype *);
rf_status shape_concat(const rf_node *, const rf_shape *, const rf_dtype *,
                       rf_shape *, rf_dtype *);
rf_status shape_conv2d(const rf_node *, const rf_shape *, const rf_dtype *,
                       rf_shape *, rf_dtype *);
rf_status shape_max_pool(const rf_node *, const rf_shape *, const rf_dtype *,
                         rf_shape *, rf_dtype *);
rf_status shape_argmax(const rf_node *, const rf_shape *, const rf_dtype *,
                       rf_shape *, rf_dtype *);
rf_status shape_equal_op(const rf_node *, const rf_shape *, const rf_dtype *,
                         rf_shape *, rf_dtype *);
rf_status shape_cast(const rf_node *, const rf_shape *, const rf_dtype *,
                     rf_shape *, rf_dtype *);
rf_status shape_like1(const rf_node *, const rf_shape *, const rf_dtype *,
                      rf_shape *, rf_dtype *);
rf_status shape_reduce_like(const rf_node *, const rf_shape *, const rf_dtype *,
                            rf_shape *, rf_dtype *);
rf_status shape_reduction_grad(const rf_node *, const rf_shape *,
                               const rf_dtype *, rf_shape *, rf_dtype *);
rf_status shape_bias_add_grad(const rf_node *, const rf_shape *,
                              const rf_dtype *, rf_shape *, rf_dtype *);
rf_status shape_unary_grad(const rf_node *, const rf_shape *, const rf_dtype *,
                           rf_shape *, rf_dtype *);
rf_status shape_conv2d_backprop_input(const rf_node *, const rf_shape *,
                                      const rf_dtype *, rf_shape *, rf_dtype *);
rf_status shape_conv2d_backprop_filter(const rf_node *, const rf_shape *,
                                       const rf_dtype *, rf_shape *,
                                       rf_dtype *);
rf_status shape_max_pool_grad(const rf_node *, const rf_shape *,
                              const rf_dtype *, rf_shape *, rf_dtype *);
rf_status shape_concat_grad(const rf_node *, const rf_shape *, const rf_dtype *,
                            rf_shape *, rf_dtype *);
rf_status shape_apply(const rf_node *, const rf_shape *, const rf_dtype *,
                      rf_shape *, rf_dtype *);
rf_status shape_finish(const rf_node *, const rf_shape *, const rf_dtype *,
                       rf_shape *, rf_dtype *);

/* Convolution geometry (TensorFlow's GetWindowedOutputSize). */
typedef struct rf_conv_geom {
    int64_t n, ih, iw, ic; /* input NHWC */
    int64_t kh, kw, oc;    /* filter HWIO (ic shared) */
    int64_t sh, sw;        /* strides */
    int64_t oh, ow;        /* output */
    int64_t pad_top, pad_left;
} rf_conv_geom;
/* Fills the output size and the top/left padding for one spatial dim. */
rf_status window_out(const rf_node *n, int64_t in, int64_t k, int64_t stride,
                     rf_padding pad, int64_t *out, int64_t *pad_before);

/* kernels */
#define RF_KERNEL(fn) rf_status fn(rf_kctx *k)
RF_KERNEL(k_identity);
RF_KERNEL(k_assign);
RF_KERNEL(k_assign_add);
RF_KERNEL(k_matmul);
RF_KERNEL(k_add);
RF_KERNEL(k_sub);
RF_KERNEL(k_mul);
RF_KERNEL(k_neg);
RF_KERNEL(k_add_n);
RF_KERNEL(k_bias_add);
RF_KERNEL(k_relu);
RF_KERNEL(k_sigmoid);
RF_KERNEL(k_tanh);
RF_KERNEL(k_softmax);
RF_KERNEL(k_xent);
RF_KERNEL(k_sigmoid_xent);
RF_KERNEL(k_reduce);
RF_KERNEL(k_concat);
RF_KERNEL(k_conv2d);
RF_KERNEL(k_max_pool);
RF_KERNEL(k_argmax);
RF_KERNEL(k_equal);
RF_KERNEL(k_cast);
RF_KERNEL(k_ones_like);
RF_KERNEL(k_zeros_like);
RF_KERNEL(k_reduce_like);
RF_KERNEL(k_reduction_grad);
RF_KERNEL(k_bias_add_grad);
RF_KERNEL(k_relu_grad);
RF_KERNEL(k_sigmoid_grad);
RF_KERNEL(k_tanh_grad);
RF_KERNEL(k_softmax_grad);
RF_KERNEL(k_xent_grad);
RF_KERNEL(k_conv2d_backprop_input);
RF_KERNEL(k_conv2d_backprop_filter);
RF_KERNEL(k_max_pool_grad);
RF_KERNEL(k_concat_grad);
RF_KERNEL(k_apply);
RF_KERNEL(k_finish);
RF_KERNEL(k_gather);
RF_KERNEL(k_embedding_lookup);
RF_KERNEL(k_embedding_part_indices);
RF_KERNEL(k_indexed_slices);
RF_KERNEL(k_indexed_slices_to_dense);
RF_KERNEL(k_sparse_apply);

/* shape functions and scratch of the embedding ops (kernels_sparse.c) */
rf_status shape_gather(const rf_node *, const rf_shape *, const rf_dtype *,
                       rf_shape *, rf_dtype *);
rf_status shape_embedding_lookup(const rf_node *, const rf_shape *,
                                 const rf_dtype *, rf_shape *, rf_dtype *);
rf_status shape_embedding_part_indices(const rf_node *, const rf_shape *,
                                       const rf_dtype *, rf_shape *,
                                       rf_dtype *);
rf_status shape_indexed_slices(const rf_node *, const rf_shape *,
                               const rf_dtype *, rf_shape *, rf_dtype *);
rf_status shape_sparse_apply(const rf_node *, const rf_shape *,
                             const rf_dtype *, rf_shape *, rf_dtype *);
size_t scratch_sparse_apply(const rf_node *, const rf_shape *, const rf_shape *,
                            int);

size_t scratch_conv2d(const rf_node *, const rf_shape *, const rf_shape *, int);
size_t scratch_conv2d_backprop_input(const rf_node *, const rf_shape *,
                                     const rf_shape *, int);
size_t scratch_conv2d_backprop_filter(const rf_node *, const rf_shape *,
                                      const rf_shape *, int);
size_t scratch_bias_add_grad(const rf_node *, const rf_shape *,
                             const rf_shape *, int);
size_t scratch_reduce(const rf_node *, const rf_shape *, const rf_shape *, int);

/* gradient builders (grad_fns.c) */
#define RF_GRAD(fn)                                                            \
    rf_status fn(rf_graph *g, rf_node *n, rf_node *dy, rf_node **dx)
RF_GRAD(grad_identity);
RF_GRAD(grad_matmul);
RF_GRAD(grad_add);
RF_GRAD(grad_sub);
RF_GRAD(grad_mul);
RF_GRAD(grad_neg);
RF_GRAD(grad_add_n);
RF_GRAD(grad_bias_add);
RF_GRAD(grad_relu);
RF_GRAD(grad_sigmoid);
RF_GRAD(grad_tanh);
RF_GRAD(grad_softmax);
RF_GRAD(grad_xent);
RF_GRAD(grad_sigmoid_xent);
RF_GRAD(grad_sum);
RF_GRAD(grad_mean);
RF_GRAD(grad_reshape);
RF_GRAD(grad_concat);
RF_GRAD(grad_conv2d);
RF_GRAD(grad_max_pool);
RF_GRAD(grad_cast);
RF_GRAD(grad_gather);
RF_GRAD(grad_embedding_lookup);

/* builders for gradient ops (ops_build.c) */
rf_node *reduce_like(rf_graph *g, rf_node *dy, rf_node *like, const char *name);
rf_node *reshape_like(rf_graph *g, rf_node *x, rf_node *like, const char *name);

/* ---- parallelism (thread_pool.c) --------------------------------------- */

typedef void (*rf_chunk_fn)(void *arg, size_t chunk, int tid);
/* Runs fn(arg, c, tid) for c in [0, nchunks) on the pool, the calling
 * thread included; returns when all are done. Chunks must write disjoint
 * data. */
void parallel_for(const rf_kctx *k, size_t nchunks, rf_chunk_fn fn, void *arg);
/* Number of chunks for work units of the given grain (a pure function of
 * the sizes, so results never depend on the thread count). */
size_t chunks_for(int64_t units, int64_t grain, size_t max_chunks);

/* ---- trace (trace.c) ---------------------------------------------------- */

/* Registers n node descriptions (copied) and returns the index of the
 * first, or SIZE_MAX if out of memory. */
size_t trace_register(rf_trace *t, size_t n, const char *const *names,
                      const char *const *ops, const char *const *shapes);
/* Appends one complete event for registered node ref (allocates only when
 * the event buffer grows). */
void trace_add(rf_trace *t, size_t ref, uint64_t ts_ns, uint64_t dur_ns,
               int tid, uint64_t step);

/* ---- executor-level fusion (fusion.c, kernels_fused.c) ------------------ */

/* A node's part in a fused group. Forward: a MatMul or Conv2D (HEAD) runs
 * its BiasAdd and optionally the Relu after it as an epilogue of each
 * output block; those nodes are FOLDED (no kernel, output aliased to the
 * head's). Backward: a ReluGrad (GRAD_HEAD) also computes the partial sums
 * of the BiasAddGrad that reduces its output (GRAD_TAIL), which only adds
 * the partials up. Every float operation and every addition order is the
 * unfused kernels', so results are bitwise the same. */
typedef enum rf_fuse_role {
    RF_FUSE_NONE = 0,
    RF_FUSE_HEAD,
    RF_FUSE_FOLDED,
    RF_FUSE_GRAD_HEAD,
    RF_FUSE_GRAD_TAIL,
} rf_fuse_role;

typedef struct rf_fuse {
    uint8_t role;
    /* HEAD: bias_add, relu (UINT32_MAX if none); FOLDED: peer = the head;
     * GRAD_HEAD: peer = the BiasAddGrad; GRAD_TAIL: peer = the ReluGrad */
    uint32_t peer, relu;
} rf_fuse;

/* The parts of a plan fusion looks at (plan indices, topological order). */
typedef struct rf_fuse_view {
    size_t n;
    rf_node *const *nodes;
    const bool *source; /* no kernel: fed, Variable, Const */
    const size_t *in_off;
    const uint32_t *in_idx;
    const size_t *succ_off;
    const uint32_t *succ;
    const uint32_t *fetch_p;
    size_t nfetch;
    const unsigned char *hook; /* per node RF_HOOK_* bits, or NULL */
    const rf_tensor *vals;     /* dtypes and shapes of this layout */
} rf_fuse_view;

/* Fills out[n] with the fused groups of the plan (all RF_FUSE_NONE when
 * none qualify). work: n uint32_t. */
void fuse_plan(const rf_fuse_view *v, rf_fuse *out, uint32_t *work);
/* Whether fusion is on for new executors: RF_FUSION unset, empty or 1;
 * 0 turns it off. Any other value is an error (RF_ERR_INVALID_ARG). */
rf_status fusion_enabled(bool *on);
/* How many nodes of p's current layout run fused (heads, folded nodes,
 * ReluGrad/BiasAddGrad pairs all count); for tests. */
size_t plan_fused_nodes(const rf_plan *p);

/* The forward epilogue on a rows x cols block of out (row stride ld):
 * out += bias[j] (float add, as BiasAdd), then Relu if relu. */
void epilogue_rows(float *out, int64_t rows, int64_t cols, int64_t ld,
                   const float *bias, bool relu);
/* ReluGrad that also leaves BiasAddGrad's partials in k->bias_partials. */
rf_status relu_grad_with_bias_partials(rf_kctx *k);

/* BiasAddGrad's partition (kernels_reduce.c): rows of c values are cut
 * into parts of per_part rows; each part sums its rows in order into
 * partial[part][c] (double), and the parts are added in order. */
size_t bias_grad_parts(int64_t rows, int64_t c, int64_t *per_part);
void bias_grad_finish(const double *partial, size_t parts, int64_t c,
                      float *out);

/* BLAS row-major sgemm (blas.c): C[m,n] = A (m x k, or k x m if ta) * B (k x n,
 * or n x k if tb) (+ C if accumulate), lda/ldb/ldc given. */
void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a,
           int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc,
           bool accumulate);

/* device_stack.c: runs a device function on op (its current device set to
 * `current`) and parses what it wrote into *spec; an unterminated or
 * unparsable result is an error naming the op. */
rf_status device_fn_run(rf_op_device_fn fn, void *ctx, const rf_op_desc *op,
                        const char *current, rf_device_spec *spec);

#endif
