/* tools/trainer/dist_step.c: the distributed training loop. One step:
 *   1. post the READs of every variable (rf_ps_read_set_post);
 *   2. run the forward + backward plan; a hook before each op that consumes
 *      a remote variable waits for that variable's read only, and a hook
 *      after each gradient copies it to registered staging and pushes it
 *      (apply=ps: WRITE_WITH_IMM posted at once; apply=worker: handed to
 *      the pusher thread, which reads, applies and writes back while
 *      backprop goes on);
 *   3. wait for the applies (the pusher's queue, then the ps acks);
 *   4. FETCH_AND_ADD 1 on global_step (ps 0): its new value drives
 *      StopAtStepHook(last_step = --train_steps).
 * With --trace, fabric operations and waits are spans in the same trace as
 * the executor's ops (category "fabric", args bytes and ps_task): a READ
 * span runs from the post to the moment the first op that needs the
 * variable has it (an upper bound on the transfer), "wait READ" spans are
 * the time an op actually blocked, a push span is the time to post it
 * (apply=ps) or to read, apply and write back (apply=worker), then the ack
 * wait and the FETCH_AND_ADD. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dist.h"
#include "rdmaflow/status.h"

static void span(tr_dist *d, const char *name, const char *args, uint64_t t0,
                 int tid)
{
    if (d->trace)
        rf_trace_add_span(d->trace, name, "fabric", args, t0,
                          rf_trace_clock_ns() - t0, tid, d->step);
}

/* ---- hooks ----------------------------------------------------------------
 */

static rf_status before_op(void *ctx, rf_node *node, const rf_tensor *value,
                           int tid)
{
    (void)value;
    tr_dist *d = ctx;
    size_t id = rf_node_id(node);
    for (uint32_t e = d->wait_off[id]; e < d->wait_off[id + 1]; e++) {
        tr_rvar *v = &d->v[d->wait_var[e]];
        uint64_t t0 = rf_trace_clock_ns();
        rf_status st = rf_ps_read_set_wait(d->reads, d->wait_var[e]);
        if (st != RF_OK)
            return st;
        if (d->trace) {
            uint64_t t1 = rf_trace_clock_ns();
            if (t1 - t0 > 2000) { /* this op really waited */
                char name[340];
                snprintf(name, sizeof name, "wait %s", v->read_span);
                rf_trace_add_span(d->trace, name, "fabric", v->args, t0,
                                  t1 - t0, tid, d->step);
            }
            if (atomic_exchange(&v->read_traced, 1) == 0)
                rf_trace_add_span(d->trace, v->read_span, "fabric", v->args,
                                  v->t_post, t1 - v->t_post, tid, d->step);
        }
    }
    return RF_OK;
}

static rf_ps_xfer grad_xfer(const tr_dist *d, const tr_rvar *v)
{
    return (rf_ps_xfer){.var = v->shard,
                        .field = RF_PS_FIELD_VALUES,
                        .buf = v->grad_buf,
                        .len = v->info.values_bytes,
                        .mr = d->mem_mr};
}

static rf_status after_op(void *ctx, rf_node *node, const rf_tensor *value,
                          int tid)
{
    tr_dist *d = ctx;
    int32_t i = d->grad_var[rf_node_id(node)];
    if (i < 0)
        return RF_OK;
    tr_rvar *v = &d->v[i];
    size_t bytes = rf_tensor_bytes(value);
    if (bytes != v->info.values_bytes || value->dtype != RF_F32) {
        char b1[64];
        rf_shape_format(&value->shape, b1, sizeof b1);
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "gradient '%s' of '%s' is %s%s (%zu bytes); the "
                            "shard has %zu",
                            rf_node_name(node), rf_node_name(v->var),
                            rf_dtype_name(value->dtype), b1, bytes,
                            v->info.values_bytes);
    }
    memcpy(v->grad_buf, value->data, bytes);
    if (d->f->apply_mode == RF_PS_APPLY_PS) {
        uint64_t t0 = rf_trace_clock_ns();
        rf_ps_xfer x = grad_xfer(d, v);
        rf_status st = rf_ps_push(d->client, &x, 1, RF_PS_APPLY_PS, false);
        span(d, v->push_span, v->args, t0, tid);
        return st;
    }
    pthread_mutex_lock(&d->mu);
    d->queue[(d->qhead + d->qlen++) % d->nv] = (size_t)i;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    return RF_OK;
}

/* apply=worker: the queued variables are read, updated here and written
 * back (rf_ps_push blocks for that), off the executor's threads; whatever
 * is queued when the pusher comes round goes in one call, so the client
 * advances those shards' reads and writes together. */
static void *pusher_main(void *arg)
{
    tr_dist *d = arg;
    pthread_mutex_lock(&d->mu);
    for (;;) {
        while (!d->stop && d->qlen == 0)
            pthread_cond_wait(&d->cv, &d->mu);
        if (d->qlen == 0)
            break;
        size_t n = 0;
        for (; d->qlen > 0; n++) {
            d->push_x[n] = grad_xfer(d, &d->v[d->queue[d->qhead]]);
            d->qhead = (d->qhead + 1) % d->nv;
            d->qlen--;
        }
        d->busy = true;
        pthread_mutex_unlock(&d->mu);
        uint64_t t0 = rf_trace_clock_ns();
        rf_status st = rf_ps_push(d->client, d->push_x, n, RF_PS_APPLY_WORKER,
                                  d->f->use_locking);
        if (d->trace) {
            char name[64], args[64];
            size_t bytes = 0;
            for (size_t k = 0; k < n; k++)
                bytes += d->push_x[k].len;
            snprintf(name, sizeof name, "APPLY_WORKER %zu variable%s", n,
                     n == 1 ? "" : "s");
            snprintf(args, sizeof args, "\"bytes\":%zu,\"variables\":%zu",
                     bytes, n);
            span(d, name, args, t0, d->pusher_tid);
        }
        pthread_mutex_lock(&d->mu);
        if (st != RF_OK && d->push_st == RF_OK) {
            d->push_st = st;
            snprintf(d->push_err, sizeof d->push_err, "%s", rf_error_message());
        }
        d->busy = false;
        pthread_cond_broadcast(&d->cv);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

/* Waits until the pusher has nothing queued or running; its first error. */
static rf_status pusher_drain(tr_dist *d, char *err, size_t errlen)
{
    pthread_mutex_lock(&d->mu);
    while (d->qlen > 0 || d->busy)
        pthread_cond_wait(&d->cv, &d->mu);
    rf_status st = d->push_st;
    if (st != RF_OK)
        snprintf(err, errlen, "apply=worker update: %s", d->push_err);
    d->push_st = RF_OK;
    pthread_mutex_unlock(&d->mu);
    return st;
}

static void pusher_stop(tr_dist *d)
{
    if (!d->pusher_started)
        return;
    pthread_mutex_lock(&d->mu);
    d->stop = true;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    pthread_join(d->pusher, NULL);
    d->pusher_started = false;
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
    free(d->queue);
    free(d->push_x);
    d->queue = NULL;
    d->push_x = NULL;
}

/* ---- the plan -------------------------------------------------------------
 */

static int var_index(const tr_dist *d, const rf_node *var)
{
    for (size_t i = 0; i < d->nv; i++)
        if (d->v[i].var == var)
            return (int)i;
    return -1;
}

/* Fetches the loss and every gradient; hooks the consumers of remote
 * variables (before) and the gradients (after). */
int tr_dist_plan(tr_dist *d, char *err, size_t errlen)
{
    if (d->plan)
        return 0;
    tr_session *s = d->s;
    rf_graph *g = s->g;
    size_t nf = 1 + d->nv;
    rf_node **fetches = calloc(nf, sizeof *fetches);
    d->fetched = calloc(nf, sizeof *d->fetched);
    if (!fetches || !d->fetched) {
        free(fetches);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    fetches[0] = s->loss;
    for (size_t i = 0; i < d->nv; i++)
        fetches[1 + i] = d->v[i].grad;
    rf_node *feeds[] = {s->x, s->y};
    rf_status st =
        rf_plan_create(s->ex, g, fetches, nf, feeds, 2, NULL, 0, &d->plan);
    free(fetches);
    if (st != RF_OK) {
        snprintf(err, errlen, "creating the training plan: %s",
                 rf_error_message());
        return -1;
    }
    d->nnodes = rf_graph_num_nodes(g);
    d->wait_off = calloc(d->nnodes + 1, sizeof *d->wait_off);
    d->grad_var = malloc(d->nnodes * sizeof *d->grad_var);
    size_t nplan = rf_plan_num_nodes(d->plan), edges = 0;
    for (size_t k = 0; k < nplan; k++) {
        rf_node *n = rf_plan_node(d->plan, k);
        for (size_t j = 0; j < rf_node_num_inputs(n); j++)
            edges += var_index(d, rf_node_input(n, j)) >= 0;
    }
    d->wait_var = malloc((edges ? edges : 1) * sizeof *d->wait_var);
    if (!d->wait_off || !d->grad_var || !d->wait_var) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < d->nnodes; i++)
        d->grad_var[i] = -1;
    for (size_t i = 0; i < d->nv; i++)
        d->grad_var[rf_node_id(d->v[i].grad)] = (int32_t)i;
    /* CSR by node id: count, prefix, fill */
    for (size_t k = 0; k < nplan; k++) {
        rf_node *n = rf_plan_node(d->plan, k);
        for (size_t j = 0; j < rf_node_num_inputs(n); j++)
            if (var_index(d, rf_node_input(n, j)) >= 0)
                d->wait_off[rf_node_id(n) + 1]++;
    }
    for (size_t i = 0; i < d->nnodes; i++)
        d->wait_off[i + 1] += d->wait_off[i];
    uint32_t *fill = calloc(d->nnodes ? d->nnodes : 1, sizeof *fill);
    if (!fill) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t k = 0; k < nplan; k++) {
        rf_node *n = rf_plan_node(d->plan, k);
        size_t id = rf_node_id(n);
        for (size_t j = 0; j < rf_node_num_inputs(n); j++) {
            int vi = var_index(d, rf_node_input(n, j));
            if (vi >= 0)
                d->wait_var[d->wait_off[id] + fill[id]++] = (uint32_t)vi;
        }
        unsigned when =
            (d->wait_off[id + 1] > d->wait_off[id] ? RF_HOOK_BEFORE : 0) |
            (d->grad_var[id] >= 0 ? RF_HOOK_AFTER : 0);
        if (when && rf_plan_hook_node(d->plan, n, when) != RF_OK) {
            free(fill);
            snprintf(err, errlen, "hooking %s: %s", rf_node_name(n),
                     rf_error_message());
            return -1;
        }
    }
    free(fill);
    rf_plan_set_hooks(d->plan, before_op, after_op, d);
    return 0;
}

/* ---- one step and the loop ------------------------------------------------
 */

static int run_step(tr_dist *d, const rf_tensor *in, double *loss,
                    int64_t *global_step, char *err, size_t errlen)
{
    uint64_t t0 = rf_trace_clock_ns();
    for (size_t i = 0; i < d->nv; i++) {
        d->v[i].t_post = t0;
        atomic_store(&d->v[i].read_traced, 0);
    }
    if (rf_ps_read_set_post(d->reads) != RF_OK) {
        snprintf(err, errlen, "reading the variables: %s", rf_error_message());
        return -1;
    }
    rf_status st = rf_plan_run(d->plan, in, d->fetched);
    if (st == RF_OK)
        *loss = *rf_tensor_f32(&d->fetched[0]);
    char perr[600] = "";
    if (st != RF_OK)
        snprintf(perr, sizeof perr, "%s", rf_error_message());
    /* every read and push is accounted for before anything else, even on
     * failure, so no completion outlives the step */
    rf_status rst = rf_ps_read_set_wait_all(d->reads);
    char pusherr[600] = "";
    rf_status pst = RF_OK;
    if (d->f->apply_mode == RF_PS_APPLY_WORKER)
        pst = pusher_drain(d, pusherr, sizeof pusherr);
    uint64_t ta = rf_trace_clock_ns();
    rf_status ast = rf_ps_push_wait(d->client);
    if (d->f->apply_mode == RF_PS_APPLY_PS)
        span(d, "wait apply acks", "", ta, 0);
    if (st != RF_OK) {
        snprintf(err, errlen, "%s", perr);
        return -1;
    }
    if (rst != RF_OK || pst != RF_OK || ast != RF_OK) {
        snprintf(err, errlen, "%s",
                 pst != RF_OK ? pusherr : rf_error_message());
        return -1;
    }
    int64_t old = 0;
    uint64_t tf = rf_trace_clock_ns();
    if (rf_ps_global_step_add(d->client, 1, &old) != RF_OK) {
        snprintf(err, errlen, "incrementing global_step: %s",
                 rf_error_message());
        return -1;
    }
    span(d, "FETCH_AND_ADD global_step", "\"bytes\":8,\"ps_task\":0", tf, 0);
    *global_step = old + 1;
    *(int64_t *)rf_variable_data(d->global_step_var) = old + 1;
    return 0;
}

int tr_dist_train(tr_dist *d, rf_dataset *train, rf_trace *trace, FILE *out,
                  tr_train_result *res, char *err, size_t errlen)
{
    const tr_flags *f = d->f;
    res->steps = 0;
    res->first_loss = res->final_loss = NAN;
    res->seconds = 0;
    if (rf_ps_global_step_read(d->client, &res->global_step) != RF_OK) {
        snprintf(err, errlen, "reading global_step: %s", rf_error_message());
        return -1;
    }
    if (res->global_step >= f->train_steps)
        return 0;
    size_t bs = (size_t)f->batch_size, dim = d->s->example_dim;
    float *xb = malloc(bs * dim * sizeof *xb);
    int32_t *yb = malloc(bs * sizeof *yb);
    int rc = -1;
    if (!xb || !yb) {
        snprintf(err, errlen, "no memory for a batch of %zu", bs);
        goto out;
    }
    if (tr_dist_plan(d, err, errlen) != 0)
        goto out;
    if (f->apply_mode == RF_PS_APPLY_WORKER) {
        d->queue = calloc(d->nv, sizeof *d->queue);
        d->push_x = calloc(d->nv, sizeof *d->push_x);
        pthread_mutex_init(&d->mu, NULL);
        pthread_cond_init(&d->cv, NULL);
        d->pusher_tid = rf_executor_threads(d->s->ex);
        if (!d->queue || !d->push_x ||
            pthread_create(&d->pusher, NULL, pusher_main, d) != 0) {
            snprintf(err, errlen, "cannot start the apply=worker thread");
            pthread_cond_destroy(&d->cv);
            pthread_mutex_destroy(&d->mu);
            free(d->queue);
            free(d->push_x);
            d->queue = NULL;
            d->push_x = NULL;
            goto out;
        }
        d->pusher_started = true;
        if (trace)
            rf_trace_set_thread_name(trace, d->pusher_tid,
                                     "apply=worker pusher");
    }
    rf_tensor in[2] = {
        rf_tensor_make(RF_F32, RF_SHAPE((int64_t)bs, (int64_t)dim), xb),
        rf_tensor_make(RF_I32, RF_SHAPE((int64_t)bs), yb),
    };
    if (trace) {
        d->trace = trace;
        rf_executor_set_trace(d->s->ex, trace);
    }
    double t0 = tr_now();
    tr_progress prog = {.t_log = t0};
    while (res->global_step < f->train_steps) {
        if (d->trace && res->steps == f->trace_steps) {
            rf_executor_set_trace(d->s->ex, NULL);
            d->trace = NULL;
        }
        if (rf_dataset_next_batch(train, bs, xb, yb) != RF_OK) {
            snprintf(err, errlen, "reading a batch: %s", rf_error_message());
            goto out;
        }
        double loss = NAN;
        d->step = (uint64_t)res->steps;
        if (run_step(d, in, &loss, &res->global_step, err, errlen) != 0)
            goto out;
        if (tr_progress_step(f, &prog, res, loss, out, err, errlen) != 0)
            goto out;
    }
    res->seconds = tr_now() - t0;
    rc = 0;
out:
    rf_executor_set_trace(d->s->ex, NULL);
    d->trace = NULL;
    pusher_stop(d);
    free(xb);
    free(yb);
    return rc;
}
