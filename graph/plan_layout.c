/* graph/plan_layout.c: a plan's memory. At the first run, and whenever the
 * fed shapes change, plan_layout infers every node's concrete shape from
 * the fed values, decides each value's home (the arena, a variable's
 * storage, the fed buffer, a Const's data, an alias of its input, or
 * nothing), asks fusion.c for this layout's fused groups, and places every
 * arena value and kernel scratch area in one arena, sharing blocks between
 * values whose lifetimes cannot overlap. Building the plan is
 * plan_build.c; running it is executor.c. */
#include <string.h>

#include "graph/plan_internal.h"
#include "rdmaflow/status.h"

size_t rf_plan_arena_bytes(const rf_plan *p)
{
    return p->arena_bytes;
}

size_t plan_fused_nodes(const rf_plan *p)
{
    size_t n = 0;
    for (size_t k = 0; k < p->n; k++)
        n += p->fuse[k].role != RF_FUSE_NONE;
    return n;
}

/* ---- buffer sharing ------------------------------------------------------
 * Within a step, a node's output (or scratch) may reuse the arena block of
 * an earlier value once that value is dead: when every node that touches it
 * (its producer, every consumer of it or of an alias of it) is an ancestor
 * of the new node in the plan's dependency graph. That holds under any
 * schedule, so sharing never depends on timing. Fetched values keep their
 * own blocks. Greedy best fit in topological order; plans larger than
 * SHARE_MAX_NODES (the ancestor sets are n^2 bits) are laid out without
 * sharing. */

#define SHARE_MAX_NODES 8192

typedef struct block {
    size_t off, size;
    uint32_t *users; /* who touches the current tenant */
    size_t n_users;
    uint32_t sole[2]; /* the users of a scratch tenant */
    bool pinned;      /* a fetched value lives here */
} block;

typedef struct sharing {
    size_t n, words; /* plan nodes; 64-bit words per ancestor set */
    uint64_t *anc;   /* per node: the set of its ancestors */
    uint32_t *base;  /* per node: the arena value its output lives in */
    bool *pinned;    /* per arena value: a fetch returns it */
    size_t *ucount;  /* per arena value: how many nodes touch it */
    uint32_t *uidx;  /* those nodes, grouped by value */
    uint32_t *ufill; /* per arena value: the end of its group in uidx */
    block *blocks;
    size_t nblocks, total;
} sharing;

/* Ancestors: propagated along successors in topological order. */
static void find_ancestors(const rf_plan *p, sharing *s)
{
    size_t words = s->words;
    for (size_t k = 0; k < s->n; k++)
        for (size_t e = p->succ_off[k]; e < p->succ_off[k + 1]; e++) {
            uint64_t *d = s->anc + (size_t)p->succ[e] * words,
                     *src = s->anc + k * words;
            for (size_t w = 0; w < words; w++)
                d[w] |= src[w];
            d[k / 64] |= 1ull << (k % 64);
        }
}

/* The arena value each node's output lives in (UINT32_MAX: none), and the
 * values a fetch returns. */
static void find_bases(const rf_plan *p, sharing *s)
{
    uint32_t *base = s->base;
    for (size_t k = 0; k < s->n; k++) {
        if (p->kind[k] == OUT_ARENA)
            base[k] = (uint32_t)k;
        else if (p->kind[k] == OUT_ALIAS)
            base[k] = base[p->in_idx[p->in_off[k]]];
        else
            base[k] = UINT32_MAX;
    }
    for (size_t i = 0; i < p->nfetch; i++)
        if (base[p->fetch_p[i]] != UINT32_MAX)
            s->pinned[base[p->fetch_p[i]]] = true;
}

/* One pass over the users of each arena value (producer, aliases and every
 * consumer): pass 0 counts them, pass 1 files them into uidx. */
static void visit_users(const rf_plan *p, sharing *s, int pass)
{
    const uint32_t *base = s->base;
    for (size_t k = 0; k < s->n; k++) {
        if (base[k] != UINT32_MAX) {
            if (pass)
                s->uidx[s->ufill[base[k]]++] = (uint32_t)k;
            else
                s->ucount[base[k]]++;
        }
        for (size_t i = p->in_off[k]; i < p->in_off[k + 1]; i++) {
            uint32_t b = base[p->in_idx[i]];
            if (b == UINT32_MAX)
                continue;
            if (pass)
                s->uidx[s->ufill[b]++] = (uint32_t)k;
            else
                s->ucount[b]++;
        }
    }
}

/* The users of every arena value. Afterwards ufill[k] ends value k's
 * users; they start at ufill[k] - ucount[k]. */
static bool collect_users(const rf_plan *p, sharing *s)
{
    visit_users(p, s, 0);
    size_t sum = 0;
    for (size_t k = 0; k < s->n; k++)
        sum += s->ucount[k];
    s->uidx = gmalloc((sum ? sum : 1) * sizeof *s->uidx);
    s->ufill = gmalloc(s->n * sizeof *s->ufill);
    if (!s->uidx || !s->ufill)
        return false;
    size_t acc = 0;
    for (size_t k = 0; k < s->n; k++) {
        s->ufill[k] = (uint32_t)acc;
        acc += s->ucount[k];
    }
    visit_users(p, s, 1);
    return true;
}

/* The smallest block of at least `need` bytes whose tenant is dead for
 * node k (every user of it is an ancestor of k), or a new block at the end
 * of the arena. */
static size_t best_block(sharing *s, size_t k, size_t need)
{
    const uint64_t *a = s->anc + k * s->words;
    size_t best = SIZE_MAX;
    for (size_t b = 0; b < s->nblocks; b++) {
        block *bl = &s->blocks[b];
        if (bl->pinned || bl->size < need ||
            (best != SIZE_MAX && bl->size >= s->blocks[best].size))
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
        best = s->nblocks++;
        s->blocks[best].off = s->total;
        s->blocks[best].size = need;
        s->total += need;
    }
    return best;
}

/* Places node k's output (scratch false) or scratch area (scratch true)
 * and makes it the tenant of its block. */
static void place(rf_plan *p, sharing *s, size_t k, bool scratch)
{
    size_t need = scratch ? p->scratch_bytes[k] : p->out_bytes[k];
    if (!need)
        return;
    need = rf_align_up(need, RF_ALIGN);
    block *bl = &s->blocks[best_block(s, k, need)];
    if (scratch) { /* only the node itself touches it, and the
                      BiasAddGrad a fused ReluGrad fills it for */
        p->scratch_off[k] = bl->off;
        bl->sole[0] = (uint32_t)k;
        bl->users = bl->sole;
        bl->n_users = 1;
        if (p->fuse[k].role == RF_FUSE_GRAD_HEAD)
            bl->sole[bl->n_users++] = p->fuse[k].peer;
        bl->pinned = false;
    } else {
        p->off[k] = bl->off;
        bl->users = s->uidx + (s->ufill[k] - s->ucount[k]);
        bl->n_users = s->ucount[k];
        bl->pinned = s->pinned[k];
    }
}

static bool share_buffers(rf_plan *p, size_t *total_out)
{
    sharing s = {.n = p->n, .words = (p->n + 63) / 64};
    size_t n = s.n;
    if (n == 0 || n > SHARE_MAX_NODES)
        return false;
    s.anc = gcalloc(n * s.words, sizeof *s.anc);
    s.base = gmalloc(n * sizeof *s.base);
    s.ucount = gcalloc(n + 1, sizeof *s.ucount);
    s.pinned = gcalloc(n, sizeof *s.pinned);
    s.blocks = gcalloc(2 * n, sizeof *s.blocks);
    bool ok = false;
    if (!s.anc || !s.base || !s.ucount || !s.pinned || !s.blocks)
        goto out;
    find_ancestors(p, &s);
    find_bases(p, &s);
    if (!collect_users(p, &s))
        goto out;
    for (size_t k = 0; k < n; k++) {
        place(p, &s, k, false);
        place(p, &s, k, true);
    }
    ok = true;
out:
    gfree(s.anc);
    gfree(s.base);
    gfree(s.ucount);
    gfree(s.uidx);
    gfree(s.ufill);
    gfree(s.pinned);
    gfree(s.blocks);
    if (ok)
        *total_out = s.total;
    return ok;
}

/* ---- shapes and the arena ------------------------------------------------
 */

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
    fuse_plan(&v, p->fuse, p->fuse_work);
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

/* Runs node k's shape function on its inputs' shapes (and sizes its
 * scratch); points its input pointers at the inputs' values. */
static rf_status infer_shape(rf_plan *p, size_t k)
{
    rf_node *node = p->nodes[k];
    rf_tensor *t = &p->vals[k];
    const rf_op_def *def = op_def_get(node->op);
    rf_shape small_in[8];
    rf_dtype small_dt[8];
    size_t nin = p->in_off[k + 1] - p->in_off[k];
    rf_shape *ins = small_in;
    rf_dtype *dts = small_dt;
    if (nin > 8) {
        ins = gmalloc(nin * sizeof *ins);
        dts = gmalloc(nin * sizeof *dts);
        if (!ins || !dts) {
            gfree(ins);
            gfree(dts);
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
        st = node_error(node, RF_ERR_INVALID_ARG,
                        "output shape %s is not fully defined at run "
                        "time",
                        SHAPE_STR(&t->shape));
    if (st == RF_OK && def->scratch)
        p->scratch_bytes[k] =
            def->scratch(node, ins, &t->shape, p->ex->threads);
    if (ins != small_in) {
        gfree(ins);
        gfree(dts);
    }
    return st;
}

/* Node k's concrete shape and dtype, and where its value lives. */
static rf_status infer_value(rf_plan *p, size_t k, const rf_tensor *feeds)
{
    rf_node *node = p->nodes[k];
    rf_tensor *t = &p->vals[k];
    const rf_op_def *def = op_def_get(node->op);
    p->scratch_bytes[k] = 0;
    if (p->feed_of[k] >= 0) {
        const rf_tensor *f = &feeds[p->feed_of[k]];
        t->dtype = f->dtype;
        t->shape = f->shape;
        p->kind[k] = OUT_FEED;
        return RF_OK;
    }
    if (node->op == RF_OP_VARIABLE || node->op == RF_OP_CONST) {
        t->dtype = node->dtype;
        t->shape = node->shape;
        p->kind[k] = node->op == RF_OP_VARIABLE ? OUT_VAR : OUT_CONST;
        return RF_OK;
    }
    if (node->op == RF_OP_PLACEHOLDER)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "You must feed a value for placeholder "
                            "tensor '%s' with dtype %s and shape %s",
                            node->name, rf_dtype_name(node->dtype),
                            SHAPE_STR(&node->shape));
    rf_status st = infer_shape(p, k);
    if (st != RF_OK)
        return st;
    size_t nin = p->in_off[k + 1] - p->in_off[k];
    const rf_tensor *in0 = nin ? &p->vals[p->in_idx[p->in_off[k]]] : NULL;
    size_t bytes = rf_tensor_bytes(t);
    if (def->flags & RF_OPF_REF_OUTPUT)
        p->kind[k] = OUT_ALIAS;
    else if ((def->flags & RF_OPF_CAN_ALIAS) && in0 &&
             !node_is_ref(node->inputs[0]) && in0->dtype == t->dtype)
        p->kind[k] = OUT_ALIAS;
    else if (bytes == 0)
        p->kind[k] = OUT_NONE;
    else
        p->kind[k] = OUT_ARENA;
    p->out_bytes[k] = p->kind[k] == OUT_ARENA ? bytes : 0;
    return RF_OK;
}

/* Every arena value and scratch area in a block of its own; returns the
 * arena's size. */
static size_t layout_unshared(rf_plan *p)
{
    size_t total = 0;
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
    return total;
}

/* Infers every node's concrete shape and lays out the arena. */
rf_status plan_layout(rf_plan *p, const rf_tensor *feeds)
{
    size_t total = 0;
    for (size_t k = 0; k < p->n; k++) {
        rf_status st = infer_value(p, k, feeds);
        if (st != RF_OK)
            return st;
    }
    apply_fusion(p);
    p->shared = share_buffers(p, &total);
    if (!p->shared)
        total = layout_unshared(p);
    if (total > p->arena_cap) {
        gfree_aligned(p->arena, p->arena_cap);
        p->arena = galloc_aligned(total);
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
