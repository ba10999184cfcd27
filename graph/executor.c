/* graph/executor.c: run plans. A plan is the pruned, topologically ordered
 * subgraph that some fetches and targets need, with explicit dependencies
 * (data, control, and the variable read-before-write order), concrete
 * shapes inferred from the fed values, and one arena holding every
 * intermediate value and kernel scratch area. Runs schedule ready nodes on
 * the executor's pool; a thread that finishes a node continues with one
 * newly ready successor and queues the others. Steady-state runs make no
 * allocation. */
#include <cblas.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "graph/graph_internal.h"
#include "graph/thread_pool.h"
#include "rdmaflow/status.h"

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

/* ---- executor --------------------------------------------------------------
 */

rf_status rf_executor_create(const rf_executor_options *opts, rf_executor **out)
{
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_executor_create: NULL");
    int threads = opts ? opts->threads : 0;
    if (threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (int)n : 1;
    }
    if (threads > 256)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_executor_create: %d threads is too many",
                            threads);
    bool fusion;
    rf_status fst = rf_fusion_enabled(&fusion);
    if (fst != RF_OK)
        return fst;
    /* The threading policy: all compute parallelism is the pool's.
     * OpenBLAS runs each (already chunked) GEMM on the calling thread. */
    openblas_set_num_threads(1);
    rf_executor *ex = rf_gcalloc(1, sizeof *ex);
    if (!ex)
        return rf_error_set(RF_ERR_NO_MEMORY, "rf_executor_create: no memory");
    ex->threads = threads;
    ex->fusion = fusion;
    pthread_mutex_init(&ex->run_mu, NULL);
    rf_status st = rf_pool_create(threads, &ex->pool);
    if (st != RF_OK) {
        pthread_mutex_destroy(&ex->run_mu);
        rf_gfree(ex);
        return st;
    }
    RF_LOG_INFO("executor: %d compute threads, OpenBLAS single-threaded "
                "(%s kernels)",
                threads, rf_blas_core());
    const char *better = rf_blas_suggested_core();
    static atomic_int warned;
    if (better && atomic_exchange(&warned, 1) == 0)
        RF_LOG_WARN("OpenBLAS chose its %s kernels on a CPU that supports "
                    "more: set OPENBLAS_CORETYPE=%s before starting the "
                    "process for faster GEMMs",
                    rf_blas_core(), better);
    *out = ex;
    return RF_OK;
}

void rf_executor_destroy(rf_executor *ex)
{
    if (!ex)
        return;
    rf_pool_destroy(ex->pool);
    pthread_mutex_destroy(&ex->run_mu);
    rf_gfree(ex);
}

int rf_executor_threads(const rf_executor *ex)
{
    return ex->threads;
}

void rf_executor_set_trace(rf_executor *ex, rf_trace *trace)
{
    pthread_mutex_lock(&ex->run_mu);
    ex->trace = trace;
    pthread_mutex_unlock(&ex->run_mu);
}

/* ---- plan construction ------------------------------------------------------
 */

typedef struct vec {
    uint32_t *v;
    size_t n, cap;
} vec;

static bool vec_push(vec *x, uint32_t e)
{
    if (x->n == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 4;
        uint32_t *v = rf_grealloc(x->v, cap * sizeof *v);
        if (!v)
            return false;
        x->v = v;
        x->cap = cap;
    }
    x->v[x->n++] = e;
    return true;
}

/* Is `to` reachable from `from` over adj? (iterative DFS, seen reset) */
static bool reachable(const vec *adj, size_t n, uint32_t from, uint32_t to,
                      bool *seen, uint32_t *stack)
{
    memset(seen, 0, n * sizeof *seen);
    size_t sp = 0;
    stack[sp++] = from;
    seen[from] = true;
    while (sp) {
        uint32_t u = stack[--sp];
        if (u == to)
            return true;
        for (size_t i = 0; i < adj[u].n; i++) {
            uint32_t w = adj[u].v[i];
            if (!seen[w]) {
                seen[w] = true;
                stack[sp++] = w;
            }
        }
    }
    return false;
}

typedef struct builder {
    rf_graph *g;
    size_t gn;      /* graph nodes at plan creation */
    uint32_t *pidx; /* graph id -> provisional index, UINT32_MAX if out */
    rf_node **pn;   /* provisional index -> node (graph id order) */
    size_t n;
    vec *adj; /* provisional successors */
    bool *fed;
    bool *seen;
    uint32_t *stack;
} builder;

static rf_status add_edge(builder *b, uint32_t from, uint32_t to)
{
    if (!vec_push(&b->adj[from], to))
        return rf_error_set(RF_ERR_NO_MEMORY, "plan: no memory");
    return RF_OK;
}

/* Writers of a variable run after its readers and after earlier writers,
 * unless the reverse order is already implied (or the edge would close a
 * cycle: then the existing order stands). */
static rf_status order_variable_access(builder *b)
{
    vec *readers = rf_gcalloc(b->n, sizeof *readers);
    vec *writers = rf_gcalloc(b->n, sizeof *writers);
    rf_status st = RF_OK;
    if (!readers || !writers) {
        st = rf_error_set(RF_ERR_NO_MEMORY, "plan: no memory");
        goto out;
    }
    for (uint32_t u = 0; u < b->n; u++) {
        rf_node *node = b->pn[u];
        if (b->fed[u])
            continue;
        for (size_t i = 0; i < node->n_inputs; i++) {
            rf_node *var = rf_node_ref_var(node->inputs[i]);
            if (!var || b->pidx[var->id] == UINT32_MAX)
                continue;
            uint32_t v = b->pidx[var->id];
            vec *list =
                rf_node_writes_input(node, i) ? &writers[v] : &readers[v];
            if (list->n && list->v[list->n - 1] == u)
                continue;
            if (!vec_push(list, u)) {
                st = rf_error_set(RF_ERR_NO_MEMORY, "plan: no memory");
                goto out;
            }
        }
    }
    for (uint32_t v = 0; v < b->n; v++) {
        for (size_t w = 0; w < writers[v].n; w++) {
            uint32_t wu = writers[v].v[w];
            for (size_t r = 0; r < readers[v].n; r++) {
                uint32_t ru = readers[v].v[r];
                if (ru == wu)
                    continue;
                bool is_writer = false;
                for (size_t k = 0; k < writers[v].n; k++)
                    if (writers[v].v[k] == ru)
                        is_writer = true;
                if (is_writer ||
                    reachable(b->adj, b->n, wu, ru, b->seen, b->stack))
                    continue;
                if ((st = add_edge(b, ru, wu)) != RF_OK)
                    goto out;
            }
            if (w > 0) {
                uint32_t prev = writers[v].v[w - 1];
                if (!reachable(b->adj, b->n, wu, prev, b->seen, b->stack) &&
                    (st = add_edge(b, prev, wu)) != RF_OK)
                    goto out;
            }
        }
    }
out:
    for (size_t i = 0; readers && writers && i < b->n; i++) {
        rf_gfree(readers[i].v);
        rf_gfree(writers[i].v);
    }
    rf_gfree(readers);
    rf_gfree(writers);
    return st;
}

void rf_plan_destroy(rf_plan *p)
{
    if (!p)
        return;
    rf_gfree(p->nodes);
    rf_gfree(p->source);
    rf_gfree(p->in_off);
    rf_gfree(p->in_idx);
    rf_gfree(p->in_ptrs);
    rf_gfree(p->succ_off);
    rf_gfree(p->succ);
    rf_gfree(p->npred0);
    rf_gfree(p->npred);
    rf_gfree(p->feed_p);
    rf_gfree(p->fetch_p);
    rf_gfree(p->feed_of);
    rf_gfree(p->feed_shapes);
    rf_gfree(p->vals);
    rf_gfree(p->kind);
    rf_gfree(p->off);
    rf_gfree(p->scratch_off);
    rf_gfree(p->scratch_bytes);
    rf_gfree(p->out_bytes);
    rf_gfree_aligned(p->arena, p->arena_cap);
    rf_gfree(p->t0);
    rf_gfree(p->t1);
    rf_gfree(p->ttid);
    rf_gfree(p->hook);
    rf_gfree(p->hook_in);
    rf_gfree(p->fuse);
    rf_gfree(p->fuse_work);
    pthread_mutex_destroy(&p->err_mu);
    rf_gfree(p);
}

static rf_status check_nodes(rf_graph *g, rf_node *const *v, size_t n,
                             const char *what)
{
    if (n && !v)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_plan_create: %s NULL",
                            what);
    for (size_t i = 0; i < n; i++)
        if (!v[i] || v[i]->graph != g)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "rf_plan_create: %s[%zu] is NULL or from "
                                "another graph",
                                what, i);
    return RF_OK;
}

/* Kahn's algorithm, smallest graph id first among the ready nodes, so the
 * order is deterministic; fails on a cycle. order[k] = provisional index. */
static rf_status topo_order(builder *b, uint32_t *order)
{
    uint32_t *indeg = rf_gcalloc(b->n ? b->n : 1, sizeof *indeg);
    uint32_t *heap = rf_gmalloc((b->n ? b->n : 1) * sizeof *heap);
    if (!indeg || !heap) {
        rf_gfree(indeg);
        rf_gfree(heap);
        return rf_error_set(RF_ERR_NO_MEMORY, "plan: no memory");
    }
    for (size_t u = 0; u < b->n; u++)
        for (size_t i = 0; i < b->adj[u].n; i++)
            indeg[b->adj[u].v[i]]++;
    size_t hn = 0, k = 0;
#define HEAP_PUSH(x)                                                           \
    do {                                                                       \
        size_t c_ = hn++;                                                      \
        heap[c_] = (x);                                                        \
        while (c_ > 0 && heap[(c_ - 1) / 2] > heap[c_]) {                      \
            uint32_t t_ = heap[c_];                                            \
            heap[c_] = heap[(c_ - 1) / 2];                                     \
            heap[(c_ - 1) / 2] = t_;                                           \
            c_ = (c_ - 1) / 2;                                                 \
        }                                                                      \
    } while (0)
    for (uint32_t u = 0; u < b->n; u++)
        if (indeg[u] == 0)
            HEAP_PUSH(u);
    while (hn) {
        uint32_t u = heap[0];
        heap[0] = heap[--hn];
        for (size_t c = 0;;) {
            size_t l = 2 * c + 1, r = l + 1, m = c;
            if (l < hn && heap[l] < heap[m])
                m = l;
            if (r < hn && heap[r] < heap[m])
                m = r;
            if (m == c)
                break;
            uint32_t t = heap[c];
            heap[c] = heap[m];
            heap[m] = t;
            c = m;
        }
        order[k++] = u;
        for (size_t i = 0; i < b->adj[u].n; i++)
            if (--indeg[b->adj[u].v[i]] == 0)
                HEAP_PUSH(b->adj[u].v[i]);
    }
#undef HEAP_PUSH
    rf_gfree(indeg);
    rf_gfree(heap);
    if (k != b->n)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_plan_create: the graph has a dependency "
                            "cycle");
    return RF_OK;
}

static rf_status plan_alloc(rf_plan *p, size_t n_in, size_t n_succ)
{
    size_t n = p->n ? p->n : 1;
    p->nodes = rf_gcalloc(n, sizeof *p->nodes);
    p->source = rf_gcalloc(n, sizeof *p->source);
    p->in_off = rf_gcalloc(n + 1, sizeof *p->in_off);
    p->in_idx = rf_gcalloc(n_in ? n_in : 1, sizeof *p->in_idx);
    p->in_ptrs = rf_gcalloc(n_in ? n_in : 1, sizeof *p->in_ptrs);
    p->succ_off = rf_gcalloc(n + 1, sizeof *p->succ_off);
    p->succ = rf_gcalloc(n_succ ? n_succ : 1, sizeof *p->succ);
    p->npred0 = rf_gcalloc(n, sizeof *p->npred0);
    p->npred = rf_gcalloc(n, sizeof *p->npred);
    p->feed_of = rf_gcalloc(n, sizeof *p->feed_of);
    p->vals = rf_gcalloc(n, sizeof *p->vals);
    p->kind = rf_gcalloc(n, sizeof *p->kind);
    p->off = rf_gcalloc(n, sizeof *p->off);
    p->scratch_off = rf_gcalloc(n, sizeof *p->scratch_off);
    p->scratch_bytes = rf_gcalloc(n, sizeof *p->scratch_bytes);
    p->out_bytes = rf_gcalloc(n, sizeof *p->out_bytes);
    p->t0 = rf_gcalloc(n, sizeof *p->t0);
    p->t1 = rf_gcalloc(n, sizeof *p->t1);
    p->ttid = rf_gcalloc(n, sizeof *p->ttid);
    p->fuse = rf_gcalloc(n, sizeof *p->fuse);
    p->fuse_work = rf_gcalloc(n, sizeof *p->fuse_work);
    p->feed_p = rf_gcalloc(p->nfeed ? p->nfeed : 1, sizeof *p->feed_p);
    p->fetch_p = rf_gcalloc(p->nfetch ? p->nfetch : 1, sizeof *p->fetch_p);
    p->feed_shapes =
        rf_gcalloc(p->nfeed ? p->nfeed : 1, sizeof *p->feed_shapes);
    if (!p->nodes || !p->source || !p->in_off || !p->in_idx || !p->in_ptrs ||
        !p->succ_off || !p->succ || !p->npred0 || !p->npred || !p->feed_of ||
        !p->vals || !p->kind || !p->off || !p->scratch_off ||
        !p->scratch_bytes || !p->out_bytes || !p->t0 || !p->t1 || !p->ttid ||
        !p->fuse || !p->fuse_work || !p->feed_p || !p->fetch_p ||
        !p->feed_shapes)
        return rf_error_set(RF_ERR_NO_MEMORY, "plan: no memory");
    return RF_OK;
}

rf_status rf_plan_create(rf_executor *ex, rf_graph *g, rf_node *const *fetches,
                         size_t nfetch, rf_node *const *feeds, size_t nfeed,
                         rf_node *const *targets, size_t ntarget, rf_plan **out)
{
    if (!ex || !g || !out)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_plan_create: NULL");
    rf_status st;
    if ((st = check_nodes(g, fetches, nfetch, "fetches")) != RF_OK ||
        (st = check_nodes(g, feeds, nfeed, "feeds")) != RF_OK ||
        (st = check_nodes(g, targets, ntarget, "targets")) != RF_OK)
        return st;
    if (nfetch + ntarget == 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_plan_create: nothing to fetch or run");
    for (size_t i = 0; i < nfeed; i++)
        if (rf_node_is_ref(feeds[i]))
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "rf_plan_create: cannot feed '%s' (%s): it "
                                "is a variable reference",
                                feeds[i]->name, rf_op_name(feeds[i]->op));

    builder b = {.g = g, .gn = g->n_nodes};
    uint32_t *order = NULL, *rank = NULL;
    rf_plan *p = rf_gcalloc(1, sizeof *p);
    b.pidx = rf_gmalloc(b.gn * sizeof *b.pidx);
    bool *in = rf_gcalloc(b.gn, sizeof *in), *isfed = rf_gcalloc(b.gn, 1);
    uint32_t *stack = rf_gmalloc(b.gn * sizeof *stack);
    if (!p || !b.pidx || !in || !isfed || !stack) {
        st = rf_error_set(RF_ERR_NO_MEMORY, "plan: no memory");
        goto fail;
    }
    pthread_mutex_init(&p->err_mu, NULL);
    p->ex = ex;
    p->g = g;
    p->nfeed = nfeed;
    p->nfetch = nfetch;
    for (size_t i = 0; i < nfeed; i++)
        isfed[feeds[i]->id] = true;
    /* the needed nodes: everything fetches and targets depend on, without
     * looking past fed nodes */
    size_t sp = 0;
    for (size_t i = 0; i < nfetch + ntarget; i++) {
        rf_node *r = i < nfetch ? fetches[i] : targets[i - nfetch];
        if (!in[r->id]) {
            in[r->id] = true;
            stack[sp++] = (uint32_t)r->id;
        }
    }
    while (sp) {
        rf_node *u = g->nodes[stack[--sp]];
        if (isfed[u->id])
            continue;
        for (size_t i = 0; i < u->n_inputs + u->n_control; i++) {
            rf_node *v =
                i < u->n_inputs ? u->inputs[i] : u->control[i - u->n_inputs];
            if (!in[v->id]) {
                in[v->id] = true;
                stack[sp++] = (uint32_t)v->id;
            }
        }
    }
    for (size_t id = 0; id < b.gn; id++) {
        b.pidx[id] = in[id] ? (uint32_t)b.n : UINT32_MAX;
        if (in[id])
            b.n++;
    }
    b.pn = rf_gmalloc((b.n ? b.n : 1) * sizeof *b.pn);
    b.adj = rf_gcalloc(b.n ? b.n : 1, sizeof *b.adj);
    b.fed = rf_gcalloc(b.n ? b.n : 1, sizeof *b.fed);
    b.seen = rf_gcalloc(b.n ? b.n : 1, sizeof *b.seen);
    b.stack = rf_gmalloc((b.n ? b.n : 1) * sizeof *b.stack);
    order = rf_gmalloc((b.n ? b.n : 1) * sizeof *order);
    rank = rf_gmalloc((b.n ? b.n : 1) * sizeof *rank);
    if (!b.pn || !b.adj || !b.fed || !b.seen || !b.stack || !order || !rank) {
        st = rf_error_set(RF_ERR_NO_MEMORY, "plan: no memory");
        goto fail;
    }
    for (size_t id = 0; id < b.gn; id++)
        if (in[id]) {
            b.pn[b.pidx[id]] = g->nodes[id];
            b.fed[b.pidx[id]] = isfed[id];
        }
    /* explicit edges (data and control) */
    size_t n_in = 0;
    for (uint32_t u = 0; u < b.n; u++) {
        rf_node *node = b.pn[u];
        if (b.fed[u])
            continue;
        n_in += node->n_inputs;
        for (size_t i = 0; i < node->n_inputs + node->n_control; i++) {
            rf_node *v = i < node->n_inputs ? node->inputs[i]
                                            : node->control[i - node->n_inputs];
            if ((st = add_edge(&b, b.pidx[v->id], u)) != RF_OK)
                goto fail;
        }
    }
    if ((st = order_variable_access(&b)) != RF_OK)
        goto fail;
    if ((st = topo_order(&b, order)) != RF_OK)
        goto fail;
    for (uint32_t k = 0; k < b.n; k++)
        rank[order[k]] = k;

    /* final layout in topological order */
    p->n = b.n;
    size_t n_succ = 0;
    for (size_t u = 0; u < b.n; u++)
        n_succ += b.adj[u].n;
    if ((st = plan_alloc(p, n_in, n_succ)) != RF_OK)
        goto fail;
    size_t ii = 0, si = 0;
    for (uint32_t k = 0; k < b.n; k++) {
        uint32_t u = order[k];
        rf_node *node = b.pn[u];
        p->nodes[k] = node;
        p->feed_of[k] = -1;
        p->source[k] =
            b.fed[u] || (rf_op_def_get(node->op)->flags & RF_OPF_SOURCE);
        p->in_off[k] = ii;
        if (!b.fed[u])
            for (size_t i = 0; i < node->n_inputs; i++)
                p->in_idx[ii++] = rank[b.pidx[node->inputs[i]->id]];
        p->succ_off[k] = si;
        for (size_t i = 0; i < b.adj[u].n; i++)
            p->succ[si++] = rank[b.adj[u].v[i]];
    }
    p->in_off[b.n] = ii;
    p->succ_off[b.n] = si;
    for (size_t k = 0; k < b.n; k++) {
        if (p->source[k])
            continue;
        p->n_exec++;
    }
    for (size_t k = 0; k < b.n; k++)
        if (!p->source[k])
            for (size_t e = p->succ_off[k]; e < p->succ_off[k + 1]; e++)
                p->npred0[p->succ[e]]++;
    for (size_t i = 0; i < nfeed; i++) {
        uint32_t u = b.pidx[feeds[i]->id];
        p->feed_p[i] = u == UINT32_MAX ? UINT32_MAX : rank[u];
        if (u != UINT32_MAX)
            p->feed_of[rank[u]] = (int32_t)i;
    }
    for (size_t i = 0; i < nfetch; i++)
        p->fetch_p[i] = rank[b.pidx[fetches[i]->id]];
    for (size_t k = 0; k < b.n; k++)
        atomic_init(&p->npred[k], 0);
    atomic_init(&p->remaining, 0);
    atomic_init(&p->failed, 0);
    if ((st = rf_pool_reserve(ex->pool, b.n + 16)) != RF_OK)
        goto fail;
    *out = p;
    goto cleanup;
fail:
    rf_plan_destroy(p);
    p = NULL;
cleanup:
    if (b.adj)
        for (size_t u = 0; u < b.n; u++)
            rf_gfree(b.adj[u].v);
    rf_gfree(b.adj);
    rf_gfree(b.pn);
    rf_gfree(b.fed);
    rf_gfree(b.seen);
    rf_gfree(b.stack);
    rf_gfree(b.pidx);
    rf_gfree(order);
    rf_gfree(rank);
    rf_gfree(in);
    rf_gfree(isfed);
    rf_gfree(stack);
    return st;
}

size_t rf_plan_num_nodes(const rf_plan *p)
{
    return p->n;
}

size_t rf_plan_arena_bytes(const rf_plan *p)
{
    return p->arena_bytes;
}

size_t rf_plan_fused_nodes(const rf_plan *p)
{
    size_t n = 0;
    for (size_t k = 0; k < p->n; k++)
        n += p->fuse[k].role != RF_FUSE_NONE;
    return n;
}

uint64_t rf_plan_steps(const rf_plan *p)
{
    return p->steps;
}

/* ---- shapes and memory ----------------------------------------------------
 */

/* ---- buffer sharing
 * ---------------------------------------------------------- Within a step, a
 * node's output (or scratch) may reuse the arena block of an earlier value once
 * that value is dead: when every node that touches it (its producer, every
 * consumer of it or of an alias of it) is an ancestor of the new node in the
 * plan's dependency graph. That holds under any schedule, so sharing never
 * depends on timing. Fetched values keep their own blocks. Greedy best fit in
 * topological order; plans larger than SHARE_MAX_NODES (the ancestor sets are
 * n^2 bits) are laid out without sharing. */

#define SHARE_MAX_NODES 8192

typedef struct block {
    size_t off, size;
    uint32_t *users; /* who touches the current tenant */
    size_t n_users;
    uint32_t sole[2]; /* the users of a scratch tenant */
    bool pinned;      /* a fetched value lives here */
} block;

static bool share_buffers(rf_plan *p, size_t *total_out)
{
    size_t n = p->n, words = (n + 63) / 64;
    if (n == 0 || n > SHARE_MAX_NODES)
        return false;
    uint64_t *anc = rf_gcalloc(n * words, sizeof *anc);
    uint32_t *base = rf_gmalloc(n * sizeof *base);
    size_t *ucount = rf_gcalloc(n + 1, sizeof *ucount);
    uint32_t *uidx = NULL, *ufill = NULL;
    bool *pinned = rf_gcalloc(n, sizeof *pinned);
    block *blocks = rf_gcalloc(2 * n, sizeof *blocks);
    size_t nblocks = 0, total = 0;
    bool ok = false;
    if (!anc || !base || !ucount || !pinned || !blocks)
        goto out;
    /* ancestors: propagate along successors in topological order */
    for (size_t k = 0; k < n; k++)
        for (size_t e = p->succ_off[k]; e < p->succ_off[k + 1]; e++) {
            uint64_t *d = anc + (size_t)p->succ[e] * words,
                     *src = anc + k * words;
            for (size_t w = 0; w < words; w++)
                d[w] |= src[w];
            d[k / 64] |= 1ull << (k % 64);
        }
    /* the arena value each node's output lives in (UINT32_MAX: none) */
    for (size_t k = 0; k < n; k++) {
        if (p->kind[k] == OUT_ARENA)
            base[k] = (uint32_t)k;
        else if (p->kind[k] == OUT_ALIAS)
            base[k] = base[p->in_idx[p->in_off[k]]];
        else
            base[k] = UINT32_MAX;
    }
    for (size_t i = 0; i < p->nfetch; i++)
        if (base[p->fetch_p[i]] != UINT32_MAX)
            pinned[base[p->fetch_p[i]]] = true;
    /* users of each arena value: producer, aliases and every consumer */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t k = 0; k < n; k++) {
            if (base[k] != UINT32_MAX) {
                if (pass)
                    uidx[ufill[base[k]]++] = (uint32_t)k;
                else
                    ucount[base[k]]++;
            }
            for (size_t i = p->in_off[k]; i < p->in_off[k + 1]; i++) {
                uint32_t b = base[p->in_idx[i]];
                if (b == UINT32_MAX)
                    continue;
                if (pass)
                    uidx[ufill[b]++] = (uint32_t)k;
                else
                    ucount[b]++;
            }
        }
        if (pass == 0) {
            size_t sum = 0;
            for (size_t k = 0; k < n; k++)
                sum += ucount[k];
            uidx = rf_gmalloc((sum ? sum : 1) * sizeof *uidx);
            ufill = rf_gmalloc(n * sizeof *ufill);
            if (!uidx || !ufill)
                goto out;
            size_t acc = 0;
            for (size_t k = 0; k < n; k++) {
                ufill[k] = (uint32_t)acc;
                acc += ucount[k];
            }
        }
    }
    /* ufill[k] now ends value k's users; they start at ufill[k] - ucount[k] */
    for (size_t k = 0; k < n; k++) {
        for (int what = 0; what < 2; what++) {
            size_t need = what ? p->scratch_bytes[k] : p->out_bytes[k];
            if (!need)
                continue;
            need = rf_align_up(need, RF_ALIGN);
            const uint64_t *a = anc + k * words;
            size_t best = SIZE_MAX;
            for (size_t b = 0; b < nblocks; b++) {
                block *bl = &blocks[b];
                if (bl->pinned || bl->size < need ||
                    (best != SIZE_MAX && bl->size >= blocks[best].size))
                    continue;
                bool dead = true;
                for (size_t u = 0; dead && u < bl->n_users; u++) {
                    uint32_t x = bl->users[u];
                    dead = (a[x / 64] >> (x % 64)) & 1;
                }
                if (dead)
                    best = b;
            }
            if (best == SIZE_MAX) {
                best = nblocks++;
                blocks[best].off = total;
                blocks[best].size = need;
                total += need;
            }
            block *bl = &blocks[best];
            if (what) { /* scratch: only the node itself touches it, and
                           the BiasAddGrad a fused ReluGrad fills it for */
                p->scratch_off[k] = bl->off;
                bl->sole[0] = (uint32_t)k;
                bl->users = bl->sole;
                bl->n_users = 1;
                if (p->fuse[k].role == RF_FUSE_GRAD_HEAD)
                    bl->sole[bl->n_users++] = p->fuse[k].peer;
                bl->pinned = false;
            } else {
                p->off[k] = bl->off;
                bl->users = uidx + (ufill[k] - ucount[k]);
                bl->n_users = ucount[k];
                bl->pinned = pinned[k];
            }
        }
    }
    ok = true;
out:
    rf_gfree(anc);
    rf_gfree(base);
    rf_gfree(ucount);
    rf_gfree(uidx);
    rf_gfree(ufill);
    rf_gfree(pinned);
    rf_gfree(blocks);
    if (ok)
        *total_out = total;
    return ok;
}

/* Decides this layout's fused groups (fusion.c) and adjusts the values'
 * kinds and scratch to them: folded nodes alias their head's buffer; a
 * fused ReluGrad owns the partials of its BiasAddGrad as its scratch. */
static void apply_fusion(rf_plan *p)
{
    memset(p->fuse, 0, p->n * sizeof *p->fuse);
    if (!p->ex->fusion)
        return;
    rf_fuse_view v = {.n = p->n,
                      .nodes = p->nodes,
                      .source = p->source,
                      .in_off = p->in_off,
                      .in_idx = p->in_idx,
                      .succ_off = p->succ_off,
                      .succ = p->succ,
                      .fetch_p = p->fetch_p,
                      .nfetch = p->nfetch,
                      .hook = p->hook,
                      .vals = p->vals};
    rf_fuse_plan(&v, p->fuse, p->fuse_work);
    for (size_t k = 0; k < p->n; k++) {
        rf_fuse *f = &p->fuse[k];
        if (f->role == RF_FUSE_HEAD && p->kind[k] != OUT_ARENA) {
            /* an empty product: nothing to fuse */
            p->fuse[f->peer].role = RF_FUSE_NONE;
            if (f->relu != UINT32_MAX)
                p->fuse[f->relu].role = RF_FUSE_NONE;
            f->role = RF_FUSE_NONE;
        } else if (f->role == RF_FUSE_FOLDED) {
            p->kind[k] = OUT_ALIAS;
            p->out_bytes[k] = 0;
        } else if (f->role == RF_FUSE_GRAD_TAIL) {
            p->scratch_bytes[f->peer] = p->scratch_bytes[k];
            p->scratch_bytes[k] = 0;
        }
    }
}

/* Infers every node's concrete shape and lays out the arena. */
static rf_status layout(rf_plan *p, const rf_tensor *feeds)
{
    int nthreads = p->ex->threads;
    rf_shape small_in[8];
    rf_dtype small_dt[8];
    size_t total = 0;
    for (size_t k = 0; k < p->n; k++) {
        rf_node *node = p->nodes[k];
        rf_tensor *t = &p->vals[k];
        const rf_op_def *def = rf_op_def_get(node->op);
        p->scratch_bytes[k] = 0;
        if (p->feed_of[k] >= 0) {
            const rf_tensor *f = &feeds[p->feed_of[k]];
            t->dtype = f->dtype;
            t->shape = f->shape;
            p->kind[k] = OUT_FEED;
            continue;
        }
        if (node->op == RF_OP_VARIABLE || node->op == RF_OP_CONST) {
            t->dtype = node->dtype;
            t->shape = node->shape;
            p->kind[k] = node->op == RF_OP_VARIABLE ? OUT_VAR : OUT_CONST;
            continue;
        }
        if (node->op == RF_OP_PLACEHOLDER)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "You must feed a value for placeholder "
                                "tensor '%s' with dtype %s and shape %s",
                                node->name, rf_dtype_name(node->dtype),
                                SHAPE_STR(&node->shape));
        size_t nin = p->in_off[k + 1] - p->in_off[k];
        rf_shape *ins = small_in;
        rf_dtype *dts = small_dt;
        if (nin > 8) {
            ins = rf_gmalloc(nin * sizeof *ins);
            dts = rf_gmalloc(nin * sizeof *dts);
            if (!ins || !dts) {
                rf_gfree(ins);
                rf_gfree(dts);
                return rf_error_set(RF_ERR_NO_MEMORY, "plan: no memory");
            }
        }
        for (size_t i = 0; i < nin; i++) {
            const rf_tensor *src = &p->vals[p->in_idx[p->in_off[k] + i]];
            ins[i] = src->shape;
            dts[i] = src->dtype;
            p->in_ptrs[p->in_off[k] + i] = src;
        }
        rf_status st = def->shape(node, ins, dts, &t->shape, &t->dtype);
        if (st == RF_OK && !rf_shape_is_known(&t->shape))
            st = rf_node_error(node, RF_ERR_INVALID_ARG,
                               "output shape %s is not fully defined at run "
                               "time",
                               SHAPE_STR(&t->shape));
        if (st == RF_OK && def->scratch)
            p->scratch_bytes[k] = def->scratch(node, ins, &t->shape, nthreads);
        if (ins != small_in) {
            rf_gfree(ins);
            rf_gfree(dts);
        }
        if (st != RF_OK)
            return st;
        const rf_tensor *in0 = nin ? &p->vals[p->in_idx[p->in_off[k]]] : NULL;
        size_t bytes = rf_tensor_bytes(t);
        if (def->flags & RF_OPF_REF_OUTPUT)
            p->kind[k] = OUT_ALIAS;
        else if ((def->flags & RF_OPF_CAN_ALIAS) && in0 &&
                 !rf_node_is_ref(node->inputs[0]) && in0->dtype == t->dtype)
            p->kind[k] = OUT_ALIAS;
        else if (bytes == 0)
            p->kind[k] = OUT_NONE;
        else
            p->kind[k] = OUT_ARENA;
        p->out_bytes[k] = p->kind[k] == OUT_ARENA ? bytes : 0;
    }
    apply_fusion(p);
    p->shared = share_buffers(p, &total);
    if (!p->shared) {
        total = 0;
        for (size_t k = 0; k < p->n; k++) {
            if (p->out_bytes[k]) {
                p->off[k] = total;
                total += rf_align_up(p->out_bytes[k], RF_ALIGN);
            }
            if (p->scratch_bytes[k]) {
                p->scratch_off[k] = total;
                total += rf_align_up(p->scratch_bytes[k], RF_ALIGN);
            }
        }
    }
    if (total > p->arena_cap) {
        rf_gfree_aligned(p->arena, p->arena_cap);
        p->arena = rf_galloc_aligned(total);
        p->arena_cap = p->arena ? total : 0;
        if (!p->arena)
            return rf_error_set(RF_ERR_NO_MEMORY,
                                "plan: cannot allocate a %zu-byte arena",
                                total);
    }
    p->arena_bytes = total;
    for (size_t i = 0; i < p->nfeed; i++)
        p->feed_shapes[i] = feeds[i].shape;
    p->have_layout = true;
    p->layout_gen++;
    return RF_OK;
}

/* ---- running ----------------------------------------------------------------
 */

static void record_error(rf_plan *p, rf_status st)
{
    pthread_mutex_lock(&p->err_mu);
    if (p->err == RF_OK) {
        p->err = st;
        snprintf(p->errmsg, sizeof p->errmsg, "%s", rf_error_message());
    }
    pthread_mutex_unlock(&p->err_mu);
    atomic_store(&p->failed, 1);
}

static void hook_before(rf_plan *p, size_t idx, int tid)
{
    if (p->hook && (p->hook[idx] & RF_HOOK_BEFORE) && p->hook_before &&
        !atomic_load(&p->failed)) {
        rf_status st = p->hook_before(p->hook_ctx, p->nodes[idx], NULL, tid);
        if (st != RF_OK)
            record_error(p, st);
    }
}

static void run_node(void *arg, size_t idx, int tid)
{
    rf_plan *p = arg;
    for (;;) {
        rf_node *node = p->nodes[idx];
        const rf_op_def *def = rf_op_def_get(node->op);
        const rf_fuse *fu = &p->fuse[idx];
        p->t0[idx] = rf_now_ns();
        /* a folded node's work (and its before-hook) was its head's */
        bool folded = fu->role == RF_FUSE_FOLDED;
        unsigned hook = p->hook && !folded ? p->hook[idx] : 0;
        if (!folded)
            hook_before(p, idx, tid);
        if (fu->role == RF_FUSE_HEAD) {
            hook_before(p, fu->peer, tid);
            if (fu->relu != UINT32_MAX)
                hook_before(p, fu->relu, tid);
        }
        const rf_tensor *const *kin = p->in_ptrs + p->in_off[idx];
        size_t kn = p->in_off[idx + 1] - p->in_off[idx];
        if ((hook & RF_HOOK_INPUTS) && p->hook_inputs &&
            !atomic_load(&p->failed)) {
            const rf_tensor **in = p->hook_in + p->in_off[idx];
            memcpy(in, kin, kn * sizeof *in);
            size_t n = kn;
            rf_status st = p->hook_inputs(p->inputs_ctx, node, in, &n, tid);
            if (st == RF_OK && n > kn)
                st = rf_error_set(RF_ERR_INVALID_ARG,
                                  "input hook of '%s' raised its inputs "
                                  "from %zu to %zu",
                                  node->name, kn, n);
            if (st != RF_OK)
                record_error(p, st);
            kin = in;
            kn = n;
        }
        if (def->kernel && !folded && !atomic_load(&p->failed)) {
            rf_kctx k = {
                .node = node,
                .in = kin,
                .n_in = kn,
                .out = &p->vals[idx],
                .scratch = (char *)p->arena + p->scratch_off[idx],
                .scratch_bytes = p->scratch_bytes[idx],
                .pool = p->ex->pool,
                .tid = tid,
                .nthreads = p->ex->threads,
            };
            if (fu->role == RF_FUSE_HEAD) {
                k.epi_bias = p->vals[p->in_idx[p->in_off[fu->peer] + 1]].data;
                k.epi_relu = fu->relu != UINT32_MAX;
            } else if (fu->role == RF_FUSE_GRAD_HEAD) {
                k.bias_partials = (double *)k.scratch;
            } else if (fu->role == RF_FUSE_GRAD_TAIL) {
                k.scratch = (char *)p->arena + p->scratch_off[fu->peer];
                k.scratch_bytes = p->scratch_bytes[fu->peer];
                k.partials_done = true;
            }
            rf_status st = def->kernel(&k);
            if (st != RF_OK)
                record_error(p, st);
        }
        if ((hook & RF_HOOK_AFTER) && p->hook_after &&
            !atomic_load(&p->failed)) {
            rf_status st = p->hook_after(p->hook_ctx, node, &p->vals[idx], tid);
            if (st != RF_OK)
                record_error(p, st);
        }
        p->t1[idx] = rf_now_ns();
        p->ttid[idx] = tid;
        size_t next = SIZE_MAX;
        for (size_t e = p->succ_off[idx]; e < p->succ_off[idx + 1]; e++) {
            uint32_t s = p->succ[e];
            if (atomic_fetch_sub(&p->npred[s], 1) != 1)
                continue;
            if (next == SIZE_MAX)
                next = s;
            else if (!rf_pool_push(p->ex->pool, run_node, p, s))
                run_node(p, s, tid); /* cannot happen within the reserve */
        }
        /* The last decrement lets the caller return and free the plan:
         * nothing of p may be touched after it. */
        rf_pool *pool = p->ex->pool;
        if (atomic_fetch_sub(&p->remaining, 1) == 1)
            rf_pool_wake(pool);
        if (next == SIZE_MAX)
            return;
        idx = next;
    }
}

static rf_status check_feeds(rf_plan *p, const rf_tensor *feeds, bool *changed)
{
    *changed = !p->have_layout;
    for (size_t i = 0; i < p->nfeed; i++) {
        const rf_tensor *f = &feeds[i];
        uint32_t k = p->feed_p[i];
        if (k == UINT32_MAX)
            continue;
        const rf_node *n = p->nodes[k];
        if (f->dtype != n->dtype)
            return rf_error_set(
                RF_ERR_INVALID_ARG, "feed %zu for '%s': dtype %s, expected %s",
                i, n->name, rf_dtype_name(f->dtype), rf_dtype_name(n->dtype));
        bool ok =
            f->shape.rank == n->shape.rank && rf_shape_is_known(&f->shape);
        for (int d = 0; ok && d < f->shape.rank; d++)
            if (n->shape.dims[d] >= 0 && n->shape.dims[d] != f->shape.dims[d])
                ok = false;
        if (!ok)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "Cannot feed value of shape %s for tensor "
                                "'%s', which has shape %s",
                                SHAPE_STR(&f->shape), n->name,
                                SHAPE_STR(&n->shape));
        if (!f->data && rf_shape_numel(&f->shape) > 0)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "feed %zu for '%s' has no data", i, n->name);
        if (p->have_layout && !rf_shape_equal(&p->feed_shapes[i], &f->shape))
            *changed = true;
    }
    return RF_OK;
}

/* Appends the run's events: one per executed node, and one "step" event
 * (index n) spanning the run on the caller's thread. */
static void trace_run(rf_plan *p, rf_trace *t, uint64_t t_start, uint64_t t_end)
{
    if (p->trace_reg != t || p->trace_gen != p->layout_gen) {
        size_t m = p->n + 1;
        const char **names = rf_gmalloc(m * sizeof *names);
        const char **ops = rf_gmalloc(m * sizeof *ops);
        const char **shapes = rf_gmalloc(m * sizeof *shapes);
        rf_shape_str *strs = rf_gmalloc(m * sizeof *strs);
        size_t base = SIZE_MAX;
        if (names && ops && shapes && strs) {
            for (size_t k = 0; k < p->n; k++) {
                names[k] = p->nodes[k]->name;
                ops[k] = rf_op_name(p->nodes[k]->op);
                strs[k] = rf_shape_str_of(&p->vals[k].shape);
                shapes[k] = strs[k].s;
            }
            names[p->n] = "step";
            ops[p->n] = "Step";
            shapes[p->n] = "";
            base = rf_trace_register(t, m, names, ops, shapes);
        }
        rf_gfree(names);
        rf_gfree(ops);
        rf_gfree(shapes);
        rf_gfree(strs);
        if (base == SIZE_MAX)
            return;
        p->trace_reg = t;
        p->trace_gen = p->layout_gen;
        p->trace_base = base;
    }
    rf_trace_add(t, p->trace_base + p->n, t_start, t_end - t_start, 0,
                 p->steps);
    for (size_t k = 0; k < p->n; k++)
        if (!p->source[k])
            rf_trace_add(t, p->trace_base + k, p->t0[k], p->t1[k] - p->t0[k],
                         p->ttid[k], p->steps);
}

rf_status rf_plan_run(rf_plan *p, const rf_tensor *feed_values,
                      rf_tensor *fetch_out)
{
    if (!p || (p->nfeed && !feed_values) || (p->nfetch && !fetch_out))
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_plan_run: NULL argument");
    rf_executor *ex = p->ex;
    pthread_mutex_lock(&ex->run_mu);
    bool changed;
    rf_status st = check_feeds(p, feed_values, &changed);
    if (st == RF_OK && changed)
        st = layout(p, feed_values);
    /* variables must be initialized; resolve every value's data pointer */
    for (size_t k = 0; st == RF_OK && k < p->n; k++) {
        rf_node *node = p->nodes[k];
        rf_tensor *t = &p->vals[k];
        switch (p->kind[k]) {
        case OUT_ARENA:
            t->data = (char *)p->arena + p->off[k];
            break;
        case OUT_VAR:
            if (!node->var)
                st = rf_error_set(RF_ERR_INVALID_ARG,
                                  "variable %s has no storage", node->name);
            else if (!node->var->initialized)
                st = rf_error_set(RF_ERR_INVALID_ARG,
                                  "Attempting to use uninitialized value %s",
                                  node->name);
            t->data = node->var ? node->var->data : NULL;
            break;
        case OUT_FEED:
            t->data = feed_values[p->feed_of[k]].data;
            break;
        case OUT_CONST:
            t->data = node->const_data;
            break;
        case OUT_ALIAS:
            t->data = p->vals[p->in_idx[p->in_off[k]]].data;
            break;
        default:
            t->data = NULL;
            break;
        }
    }
    if (st != RF_OK) {
        pthread_mutex_unlock(&ex->run_mu);
        return st;
    }
    p->err = RF_OK;
    p->errmsg[0] = '\0';
    atomic_store(&p->failed, 0);
    atomic_store(&p->remaining, p->n_exec);
    for (size_t k = 0; k < p->n; k++)
        atomic_store_explicit(&p->npred[k], p->npred0[k], memory_order_relaxed);
    uint64_t t_start = rf_now_ns();
    if (p->n_exec > 0) {
        for (size_t k = 0; k < p->n; k++)
            if (!p->source[k] && p->npred0[k] == 0)
                rf_pool_push(ex->pool, run_node, p, k);
        rf_pool_run_until(ex->pool, 0, &p->remaining);
    }
    uint64_t t_end = rf_now_ns();
    if (atomic_load(&p->failed)) {
        st = rf_error_set(p->err, "%s", p->errmsg);
    } else {
        for (size_t i = 0; i < p->nfetch; i++)
            fetch_out[i] = p->vals[p->fetch_p[i]];
        if (ex->trace)
            trace_run(p, ex->trace, t_start, t_end);
    }
    p->steps++;
    pthread_mutex_unlock(&ex->run_mu);
    return st;
}

/* ---- hooks -------------------------------------------------------------- */

static size_t plan_index(const rf_plan *p, const rf_node *node)
{
    for (size_t k = 0; k < p->n; k++)
        if (p->nodes[k] == node)
            return k;
    return SIZE_MAX;
}

void rf_plan_set_hooks(rf_plan *p, rf_plan_hook_fn before,
                       rf_plan_hook_fn after, void *ctx)
{
    if (!p)
        return;
    p->hook_before = before;
    p->hook_after = after;
    p->hook_ctx = ctx;
}

void rf_plan_set_input_hook(rf_plan *p, rf_plan_inputs_fn inputs, void *ctx)
{
    if (!p)
        return;
    p->hook_inputs = inputs;
    p->inputs_ctx = ctx;
}

rf_status rf_plan_hook_node(rf_plan *p, const rf_node *node, unsigned when)
{
    if (!p || !node ||
        (when & ~(RF_HOOK_BEFORE | RF_HOOK_AFTER | RF_HOOK_INPUTS)))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_plan_hook_node: bad argument");
    size_t k = plan_index(p, node);
    if (k == SIZE_MAX)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_plan_hook_node: '%s' is not part of the plan",
                            node->name);
    if (p->source[k])
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_plan_hook_node: '%s' runs no kernel in this "
                            "plan (fed, Variable or Const)",
                            node->name);
    if (!p->hook) {
        p->hook = rf_gcalloc(p->n ? p->n : 1, 1);
        if (!p->hook)
            return rf_error_set(RF_ERR_NO_MEMORY,
                                "rf_plan_hook_node: no memory");
    }
    if ((when & RF_HOOK_INPUTS) && !p->hook_in) {
        p->hook_in = rf_gcalloc(p->in_off[p->n] ? p->in_off[p->n] : 1,
                                sizeof *p->hook_in);
        if (!p->hook_in)
            return rf_error_set(RF_ERR_NO_MEMORY,
                                "rf_plan_hook_node: no memory");
    }
    p->hook[k] |= (unsigned char)when;
    p->have_layout = false; /* fusion looks at the hooks: decide again */
    return RF_OK;
}

bool rf_plan_contains(const rf_plan *p, const rf_node *node)
{
    return p && node && plan_index(p, node) != SIZE_MAX;
}

rf_node *rf_plan_node(const rf_plan *p, size_t i)
{
    return p && i < p->n ? p->nodes[i] : NULL;
}
