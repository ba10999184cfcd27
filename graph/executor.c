/* graph/executor.c: the executor and running plans. An executor owns the
 * compute thread pool and runs one plan at a time. A run checks the fed
 * values against the plan (laying it out again when their shapes change,
 * plan_layout.c), resolves every value's data pointer, and schedules ready
 * nodes on the pool; a thread that finishes a node continues with one newly
 * ready successor and queues the others. Steady-state runs make no
 * allocation. Also here: the per-node hooks and the trace of a run.
 * Building a plan is plan_build.c. */
#include <cblas.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "graph/plan_internal.h"
#include "rdmaflow/status.h"

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
    rf_status fst = fusion_enabled(&fusion);
    if (fst != RF_OK)
        return fst;
    /* The threading policy: all compute parallelism is the pool's.
     * OpenBLAS runs each (already chunked) GEMM on the calling thread. */
    openblas_set_num_threads(1);
    rf_executor *ex = gcalloc(1, sizeof *ex);
    if (!ex)
        return rf_error_set(RF_ERR_NO_MEMORY, "rf_executor_create: no memory");
    ex->threads = threads;
    ex->fusion = fusion;
    pthread_mutex_init(&ex->run_mu, NULL);
    rf_status st = pool_create(threads, &ex->pool);
    if (st != RF_OK) {
        pthread_mutex_destroy(&ex->run_mu);
        gfree(ex);
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
    pool_destroy(ex->pool);
    pthread_mutex_destroy(&ex->run_mu);
    gfree(ex);
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

size_t rf_plan_num_nodes(const rf_plan *p)
{
    return p->n;
}

uint64_t rf_plan_steps(const rf_plan *p)
{
    return p->steps;
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
        const rf_op_def *def = op_def_get(node->op);
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
            else if (!pool_push(p->ex->pool, run_node, p, s))
                run_node(p, s, tid); /* cannot happen within the reserve */
        }
        /* The last decrement lets the caller return and free the plan:
         * nothing of p may be touched after it. */
        rf_pool *pool = p->ex->pool;
        if (atomic_fetch_sub(&p->remaining, 1) == 1)
            pool_wake(pool);
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
        const char **names = gmalloc(m * sizeof *names);
        const char **ops = gmalloc(m * sizeof *ops);
        const char **shapes = gmalloc(m * sizeof *shapes);
        rf_shape_str *strs = gmalloc(m * sizeof *strs);
        size_t base = SIZE_MAX;
        if (names && ops && shapes && strs) {
            for (size_t k = 0; k < p->n; k++) {
                names[k] = p->nodes[k]->name;
                ops[k] = rf_op_name(p->nodes[k]->op);
                strs[k] = shape_str_of(&p->vals[k].shape);
                shapes[k] = strs[k].s;
            }
            names[p->n] = "step";
            ops[p->n] = "Step";
            shapes[p->n] = "";
            base = trace_register(t, m, names, ops, shapes);
        }
        gfree(names);
        gfree(ops);
        gfree(shapes);
        gfree(strs);
        if (base == SIZE_MAX)
            return;
        p->trace_reg = t;
        p->trace_gen = p->layout_gen;
        p->trace_base = base;
    }
    trace_add(t, p->trace_base + p->n, t_start, t_end - t_start, 0, p->steps);
    for (size_t k = 0; k < p->n; k++)
        if (!p->source[k])
            trace_add(t, p->trace_base + k, p->t0[k], p->t1[k] - p->t0[k],
                      p->ttid[k], p->steps);
}

/* Resolves every value's data pointer for this run; variables must be
 * initialized. */
static rf_status bind_values(rf_plan *p, const rf_tensor *feed_values)
{
    rf_status st = RF_OK;
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
    return st;
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
        st = plan_layout(p, feed_values);
    if (st == RF_OK)
        st = bind_values(p, feed_values);
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
                pool_push(ex->pool, run_node, p, k);
        pool_run_until(ex->pool, 0, &p->remaining);
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
        p->hook = gcalloc(p->n ? p->n : 1, 1);
        if (!p->hook)
            return rf_error_set(RF_ERR_NO_MEMORY,
                                "rf_plan_hook_node: no memory");
    }
    if ((when & RF_HOOK_INPUTS) && !p->hook_in) {
        p->hook_in =
            gcalloc(p->in_off[p->n] ? p->in_off[p->n] : 1, sizeof *p->hook_in);
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
