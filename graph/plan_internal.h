/* graph/plan_internal.h: the executor and plan structs shared by the three
 * files that make up the executor: plan_build.c (pruning the graph to what
 * the fetches and targets need, the dependency order and the CSR arrays),
 * plan_layout.c (concrete shapes, operator fusion and the arena with its
 * buffer sharing) and executor.c (the executor object, running a plan and
 * its hooks). Not installed; not for other files of graph/. */
#ifndef RF_GRAPH_PLAN_INTERNAL_H
#define RF_GRAPH_PLAN_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "graph/graph_internal.h"
#include "graph/thread_pool.h"

struct rf_executor {
    rf_pool *pool;
    int threads;
    bool fusion;            /* fuse bias and Relu into their producers */
    pthread_mutex_t run_mu; /* one plan runs at a time */
    rf_trace *trace;
};

enum out_kind {
    OUT_ARENA = 0, /* the node's own slot in the arena */
    OUT_VAR,       /* a variable's storage */
    OUT_FEED,      /* the caller's fed buffer */
    OUT_CONST,     /* the Const node's data */
    OUT_ALIAS,     /* input 0's data (refs, Identity/Reshape of a value) */
    OUT_NONE,      /* no data (NoOp, OptimizerFinish, empty) */
};

struct rf_plan {
    rf_executor *ex;
    rf_graph *g;
    size_t n; /* nodes, in topological order */
    rf_node **nodes;
    bool *source;   /* no kernel runs: fed, Variable, Const */
    size_t n_exec;  /* nodes that are scheduled */
    size_t *in_off; /* data inputs, CSR: plan indices */
    uint32_t *in_idx;
    const rf_tensor **in_ptrs;
    size_t *succ_off; /* successors (all dependency kinds), CSR */
    uint32_t *succ;
    uint32_t *npred0; /* pending non-source predecessors at start */
    atomic_uint *npred;
    size_t nfeed, nfetch;
    uint32_t *feed_p, *fetch_p; /* plan index, or UINT32_MAX if unused */
    int32_t *feed_of;           /* per plan node: feed index or -1 */
    rf_shape *feed_shapes;      /* shapes the layout was computed for */
    bool have_layout;
    uint64_t layout_gen;
    rf_tensor *vals;
    unsigned char *kind;
    size_t *off, *scratch_off, *scratch_bytes, *out_bytes;
    bool shared; /* the last layout shares buffers between nodes */
    void *arena;
    size_t arena_bytes, arena_cap;
    const rf_tensor *feed_values; /* during a run */
    atomic_size_t remaining;
    atomic_int failed;
    pthread_mutex_t err_mu;
    rf_status err;
    char errmsg[512];
    uint64_t steps;
    uint64_t *t0, *t1;
    int *ttid;
    rf_trace *trace_reg; /* the trace the names are registered with */
    uint64_t trace_gen;
    size_t trace_base;
    unsigned char *hook; /* per plan node: RF_HOOK_BEFORE | RF_HOOK_AFTER */
    rf_fuse *fuse;       /* per plan node, this layout's fused groups */
    uint32_t *fuse_work;
    rf_plan_hook_fn hook_before, hook_after;
    void *hook_ctx;
    /* RF_HOOK_INPUTS: the hook's copy of in_ptrs (same offsets) */
    rf_plan_inputs_fn hook_inputs;
    void *inputs_ctx;
    const rf_tensor **hook_in;
};

/* Infers every node's concrete shape for the fed values, decides the fused
 * groups and lays out the arena (plan_layout.c). */
rf_status plan_layout(rf_plan *p, const rf_tensor *feeds);

#endif
