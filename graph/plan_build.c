/* graph/plan_build.c: building a plan. rf_plan_create prunes the graph to
 * the nodes that some fetches and targets need (never looking past a fed
 * node), adds the dependencies a run must respect (data, control, and the
 * variable read-before-write order), orders the nodes topologically
 * (smallest graph id first among the ready ones, so the order is
 * deterministic) and stores the result as CSR arrays of inputs and
 * successors. Shapes and memory are decided later, at the first run and
 * whenever the fed shapes change (plan_layout.c); running is executor.c. */
#include <pthread.h>
#include <string.h>

#include "graph/plan_internal.h"
#include "rdmaflow/status.h"

typedef struct vec {
    uint32_t *v;
    size_t n, cap;
} vec;

static bool vec_push(vec *x, uint32_t e)
{
    if (x->n == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 4;
        uint32_t *v = grealloc(x->v, cap * sizeof *v);
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
    size_t gn;        /* graph nodes at plan creation */
    bool *in;         /* graph id -> needed by the fetches and targets */
    bool *isfed;      /* graph id -> fed */
    uint32_t *gstack; /* graph ids still to visit */
    uint32_t *pidx;   /* graph id -> provisional index, UINT32_MAX if out */
    rf_node **pn;     /* provisional index -> node (graph id order) */
    size_t n;
    vec *adj; /* provisional successors */
    bool *fed;
    bool *seen;
    uint32_t *stack;
    uint32_t *order; /* topological position -> provisional index */
    uint32_t *rank;  /* provisional index -> topological position */
    size_t n_in;     /* data inputs of the nodes that are not fed */
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
    vec *readers = gcalloc(b->n, sizeof *readers);
    vec *writers = gcalloc(b->n, sizeof *writers);
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
            rf_node *var = node_ref_var(node->inputs[i]);
            if (!var || b->pidx[var->id] == UINT32_MAX)
                continue;
            uint32_t v = b->pidx[var->id];
            vec *list = node_writes_input(node, i) ? &writers[v] : &readers[v];
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
        gfree(readers[i].v);
        gfree(writers[i].v);
    }
    gfree(readers);
    gfree(writers);
    return st;
}

void rf_plan_destroy(rf_plan *p)
{
    if (!p)
        return;
    gfree(p->nodes);
    gfree(p->source);
    gfree(p->in_off);
    gfree(p->in_idx);
    gfree(p->in_ptrs);
    gfree(p->succ_off);
    gfree(p->succ);
    gfree(p->npred0);
    gfree(p->npred);
    gfree(p->feed_p);
    gfree(p->fetch_p);
    gfree(p->feed_of);
    gfree(p->feed_shapes);
    gfree(p->vals);
    gfree(p->kind);
    gfree(p->off);
    gfree(p->scratch_off);
    gfree(p->scratch_bytes);
    gfree(p->out_bytes);
    gfree_aligned(p->arena, p->arena_cap);
    gfree(p->t0);
    gfree(p->t1);
    gfree(p->ttid);
    gfree(p->hook);
    gfree(p->hook_in);
    gfree(p->fuse);
    gfree(p->fuse_work);
    pthread_mutex_destroy(&p->err_mu);
    gfree(p);
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
    uint32_t *indeg = gcalloc(b->n ? b->n : 1, sizeof *indeg);
    uint32_t *heap = gmalloc((b->n ? b->n : 1) * sizeof *heap);
    if (!indeg || !heap) {
        gfree(indeg);
        gfree(heap);
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
    gfree(indeg);
    gfree(heap);
    if (k != b->n)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_plan_create: the graph has a dependency "
                            "cycle");
    return RF_OK;
}

static rf_status plan_alloc(rf_plan *p, size_t n_in, size_t n_succ)
{
    size_t n = p->n ? p->n : 1;
    p->nodes = gcalloc(n, sizeof *p->nodes);
    p->source = gcalloc(n, sizeof *p->source);
    p->in_off = gcalloc(n + 1, sizeof *p->in_off);
    p->in_idx = gcalloc(n_in ? n_in : 1, sizeof *p->in_idx);
    p->in_ptrs = gcalloc(n_in ? n_in : 1, sizeof *p->in_ptrs);
    p->succ_off = gcalloc(n + 1, sizeof *p->succ_off);
    p->succ = gcalloc(n_succ ? n_succ : 1, sizeof *p->succ);
    p->npred0 = gcalloc(n, sizeof *p->npred0);
    p->npred = gcalloc(n, sizeof *p->npred);
    p->feed_of = gcalloc(n, sizeof *p->feed_of);
    p->vals = gcalloc(n, sizeof *p->vals);
    p->kind = gcalloc(n, sizeof *p->kind);
    p->off = gcalloc(n, sizeof *p->off);
    p->scratch_off = gcalloc(n, sizeof *p->scratch_off);
    p->scratch_bytes = gcalloc(n, sizeof *p->scratch_bytes);
    p->out_bytes = gcalloc(n, sizeof *p->out_bytes);
    p->t0 = gcalloc(n, sizeof *p->t0);
    p->t1 = gcalloc(n, sizeof *p->t1);
    p->ttid = gcalloc(n, sizeof *p->ttid);
    p->fuse = gcalloc(n, sizeof *p->fuse);
    p->fuse_work = gcalloc(n, sizeof *p->fuse_work);
    p->feed_p = gcalloc(p->nfeed ? p->nfeed : 1, sizeof *p->feed_p);
    p->fetch_p = gcalloc(p->nfetch ? p->nfetch : 1, sizeof *p->fetch_p);
    p->feed_shapes = gcalloc(p->nfeed ? p->nfeed : 1, sizeof *p->feed_shapes);
    if (!p->nodes || !p->source || !p->in_off || !p->in_idx || !p->in_ptrs ||
        !p->succ_off || !p->succ || !p->npred0 || !p->npred || !p->feed_of ||
        !p->vals || !p->kind || !p->off || !p->scratch_off ||
        !p->scratch_bytes || !p->out_bytes || !p->t0 || !p->t1 || !p->ttid ||
        !p->fuse || !p->fuse_work || !p->feed_p || !p->fetch_p ||
        !p->feed_shapes)
        return rf_error_set(RF_ERR_NO_MEMORY, "plan: no memory");
    return RF_OK;
}

static rf_status check_plan_args(rf_graph *g, rf_node *const *fetches,
                                 size_t nfetch, rf_node *const *feeds,
                                 size_t nfeed, rf_node *const *targets,
                                 size_t ntarget)
{
    rf_status st;
    if ((st = check_nodes(g, fetches, nfetch, "fetches")) != RF_OK ||
        (st = check_nodes(g, feeds, nfeed, "feeds")) != RF_OK ||
        (st = check_nodes(g, targets, ntarget, "targets")) != RF_OK)
        return st;
    if (nfetch + ntarget == 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_plan_create: nothing to fetch or run");
    for (size_t i = 0; i < nfeed; i++)
        if (node_is_ref(feeds[i]))
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "rf_plan_create: cannot feed '%s' (%s): it "
                                "is a variable reference",
                                feeds[i]->name, rf_op_name(feeds[i]->op));
    return RF_OK;
}

/* The needed nodes: everything fetches and targets depend on, without
 * looking past fed nodes. Marks b->in and b->isfed by graph id. */
static void mark_needed(builder *b, rf_node *const *fetches, size_t nfetch,
                        rf_node *const *feeds, size_t nfeed,
                        rf_node *const *targets, size_t ntarget)
{
    rf_graph *g = b->g;
    bool *in = b->in;
    uint32_t *stack = b->gstack;
    for (size_t i = 0; i < nfeed; i++)
        b->isfed[feeds[i]->id] = true;
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
        if (b->isfed[u->id])
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
}

/* Gives the needed nodes their provisional index (graph id order) and
 * allocates the builder's per-node arrays. */
static rf_status number_needed(builder *b)
{
    for (size_t id = 0; id < b->gn; id++) {
        b->pidx[id] = b->in[id] ? (uint32_t)b->n : UINT32_MAX;
        if (b->in[id])
            b->n++;
    }
    size_t n = b->n ? b->n : 1;
    b->pn = gmalloc(n * sizeof *b->pn);
    b->adj = gcalloc(n, sizeof *b->adj);
    b->fed = gcalloc(n, sizeof *b->fed);
    b->seen = gcalloc(n, sizeof *b->seen);
    b->stack = gmalloc(n * sizeof *b->stack);
    b->order = gmalloc(n * sizeof *b->order);
    b->rank = gmalloc(n * sizeof *b->rank);
    if (!b->pn || !b->adj || !b->fed || !b->seen || !b->stack || !b->order ||
        !b->rank)
        return rf_error_set(RF_ERR_NO_MEMORY, "plan: no memory");
    for (size_t id = 0; id < b->gn; id++)
        if (b->in[id]) {
            b->pn[b->pidx[id]] = b->g->nodes[id];
            b->fed[b->pidx[id]] = b->isfed[id];
        }
    return RF_OK;
}

/* The explicit edges (data and control) of the nodes that are not fed. */
static rf_status add_explicit_edges(builder *b)
{
    rf_status st;
    b->n_in = 0;
    for (uint32_t u = 0; u < b->n; u++) {
        rf_node *node = b->pn[u];
        if (b->fed[u])
            continue;
        b->n_in += node->n_inputs;
        for (size_t i = 0; i < node->n_inputs + node->n_control; i++) {
            rf_node *v = i < node->n_inputs ? node->inputs[i]
                                            : node->control[i - node->n_inputs];
            if ((st = add_edge(b, b->pidx[v->id], u)) != RF_OK)
                return st;
        }
    }
    return RF_OK;
}

/* The plan's arrays in topological order: the nodes, which are sources,
 * the CSR of data inputs and of successors, and the pending predecessors
 * each node starts a run with. */
static rf_status fill_plan(rf_plan *p, const builder *b)
{
    p->n = b->n;
    size_t n_succ = 0;
    for (size_t u = 0; u < b->n; u++)
        n_succ += b->adj[u].n;
    rf_status st = plan_alloc(p, b->n_in, n_succ);
    if (st != RF_OK)
        return st;
    size_t ii = 0, si = 0;
    for (uint32_t k = 0; k < b->n; k++) {
        uint32_t u = b->order[k];
        rf_node *node = b->pn[u];
        p->nodes[k] = node;
        p->feed_of[k] = -1;
        p->source[k] =
            b->fed[u] || (op_def_get(node->op)->flags & RF_OPF_SOURCE);
        p->in_off[k] = ii;
        if (!b->fed[u])
            for (size_t i = 0; i < node->n_inputs; i++)
                p->in_idx[ii++] = b->rank[b->pidx[node->inputs[i]->id]];
        p->succ_off[k] = si;
        for (size_t i = 0; i < b->adj[u].n; i++)
            p->succ[si++] = b->rank[b->adj[u].v[i]];
    }
    p->in_off[b->n] = ii;
    p->succ_off[b->n] = si;
    for (size_t k = 0; k < b->n; k++) {
        if (p->source[k])
            continue;
        p->n_exec++;
    }
    for (size_t k = 0; k < b->n; k++)
        if (!p->source[k])
            for (size_t e = p->succ_off[k]; e < p->succ_off[k + 1]; e++)
                p->npred0[p->succ[e]]++;
    return RF_OK;
}

/* Where each feed and fetch sits in the plan (a feed the plan does not
 * need maps to UINT32_MAX). */
static void map_feeds_fetches(rf_plan *p, const builder *b,
                              rf_node *const *fetches, size_t nfetch,
                              rf_node *const *feeds, size_t nfeed)
{
    for (size_t i = 0; i < nfeed; i++) {
        uint32_t u = b->pidx[feeds[i]->id];
        p->feed_p[i] = u == UINT32_MAX ? UINT32_MAX : b->rank[u];
        if (u != UINT32_MAX)
            p->feed_of[b->rank[u]] = (int32_t)i;
    }
    for (size_t i = 0; i < nfetch; i++)
        p->fetch_p[i] = b->rank[b->pidx[fetches[i]->id]];
}

static void builder_free(builder *b)
{
    if (b->adj)
        for (size_t u = 0; u < b->n; u++)
            gfree(b->adj[u].v);
    gfree(b->adj);
    gfree(b->pn);
    gfree(b->fed);
    gfree(b->seen);
    gfree(b->stack);
    gfree(b->pidx);
    gfree(b->order);
    gfree(b->rank);
    gfree(b->in);
    gfree(b->isfed);
    gfree(b->gstack);
}

rf_status rf_plan_create(rf_executor *ex, rf_graph *g, rf_node *const *fetches,
                         size_t nfetch, rf_node *const *feeds, size_t nfeed,
                         rf_node *const *targets, size_t ntarget, rf_plan **out)
{
    if (!ex || !g || !out)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_plan_create: NULL");
    rf_status st =
        check_plan_args(g, fetches, nfetch, feeds, nfeed, targets, ntarget);
    if (st != RF_OK)
        return st;

    builder b = {.g = g, .gn = g->n_nodes};
    rf_plan *p = gcalloc(1, sizeof *p);
    b.pidx = gmalloc(b.gn * sizeof *b.pidx);
    b.in = gcalloc(b.gn, sizeof *b.in);
    b.isfed = gcalloc(b.gn, 1);
    b.gstack = gmalloc(b.gn * sizeof *b.gstack);
    if (!p || !b.pidx || !b.in || !b.isfed || !b.gstack) {
        st = rf_error_set(RF_ERR_NO_MEMORY, "plan: no memory");
        goto fail;
    }
    pthread_mutex_init(&p->err_mu, NULL);
    p->ex = ex;
    p->g = g;
    p->nfeed = nfeed;
    p->nfetch = nfetch;
    mark_needed(&b, fetches, nfetch, feeds, nfeed, targets, ntarget);
    if ((st = number_needed(&b)) != RF_OK ||
        (st = add_explicit_edges(&b)) != RF_OK ||
        (st = order_variable_access(&b)) != RF_OK ||
        (st = topo_order(&b, b.order)) != RF_OK)
        goto fail;
    for (uint32_t k = 0; k < b.n; k++)
        b.rank[b.order[k]] = k;
    if ((st = fill_plan(p, &b)) != RF_OK)
        goto fail;
    map_feeds_fetches(p, &b, fetches, nfetch, feeds, nfeed);
    for (size_t k = 0; k < b.n; k++)
        atomic_init(&p->npred[k], 0);
    atomic_init(&p->remaining, 0);
    atomic_init(&p->failed, 0);
    if ((st = pool_reserve(ex->pool, b.n + 16)) != RF_OK)
        goto fail;
    *out = p;
    builder_free(&b);
    return RF_OK;
fail:
    rf_plan_destroy(p);
    builder_free(&b);
    return st;
}
