/* session/push_worker.c: the apply=worker push strategy (one-sided,
 * Hogwild!/FaRM style: the ps CPU does nothing). Gradients are queued by
 * the executor threads; a pusher thread reads each queued variable's
 * record, runs the optimizer here and writes it back (rf_ps_update_rmw
 * blocks for that; with use_locking rf_ps_update_rmw_locked, under the
 * record's CMP_AND_SWP lock), the dense ones queued when it comes round in
 * one call, so the client advances those shards' reads and writes
 * together, while backprop goes on; the tables' staged rows one table at a
 * time (rf_ps_update_sparse_rmw, _locked). */
#include <stdio.h>
#include <stdlib.h>

#include "session/session_internal.h"

typedef struct pusher {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t *queue; /* variable indices, a ring of s->nv */
    size_t qhead, qlen;
    size_t *dense, *tables; /* what was queued, by transfer kind */
    rf_ps_xfer *batch;      /* the dense ones' gradients */
    bool busy, stop;
    rf_status st; /* the first failure since the last drain */
    char err[512];
    int tid; /* its thread id in traces */
} pusher;

static rf_status push_dense(rf_session *s, const size_t *vars, size_t n);
static rf_status push_rows(rf_session *s, const size_t *vars, size_t n);

/* Pushes what was queued, grouped by the transfer kind sess_map chose for
 * each variable. */
static void *pusher_main(void *arg)
{
    rf_session *s = arg;
    pusher *q = s->push_state;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (!q->stop && q->qlen == 0)
            pthread_cond_wait(&q->cv, &q->mu);
        if (q->qlen == 0)
            break;
        size_t n = 0, nt = 0;
        for (; q->qlen > 0; q->qlen--) {
            size_t i = q->queue[q->qhead];
            if (s->v[i].xfer == &sess_push_apply_worker.rows)
                q->tables[nt++] = i;
            else
                q->dense[n++] = i;
            q->qhead = (q->qhead + 1) % s->nv;
        }
        q->busy = true;
        pthread_mutex_unlock(&q->mu);
        uint64_t t0 = rf_now_ns();
        rf_status st = n ? push_dense(s, q->dense, n) : RF_OK;
        if (st == RF_OK && nt)
            st = push_rows(s, q->tables, nt);
        if (s->report.trace) {
            char name[64], args[64];
            size_t bytes = 0;
            for (size_t k = 0; k < n; k++)
                bytes += s->v[q->dense[k]].info.values_bytes;
            for (size_t k = 0; k < nt; k++)
                bytes +=
                    s->v[q->tables[k]].push_n * s->v[q->tables[k]].row_bytes;
            n += nt;
            snprintf(name, sizeof name, "APPLY_WORKER %zu variable%s", n,
                     n == 1 ? "" : "s");
            snprintf(args, sizeof args, "\"bytes\":%zu,\"variables\":%zu",
                     bytes, n);
            sess_span(s, name, args, t0, q->tid);
        }
        pthread_mutex_lock(&q->mu);
        if (st != RF_OK && q->st == RF_OK) {
            q->st = st;
            snprintf(q->err, sizeof q->err, "%s", rf_error_message());
        }
        q->busy = false;
        pthread_cond_broadcast(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

static void pusher_free(pusher *q)
{
    free(q->queue);
    free(q->dense);
    free(q->tables);
    free(q->batch);
    free(q);
}

static rf_status start(rf_session *s)
{
    pusher *q = calloc(1, sizeof *q);
    if (!q)
        return rf_error_set(RF_ERR_NO_MEMORY, "apply=worker: out of memory");
    q->queue = calloc(s->nv, sizeof *q->queue);
    q->dense = calloc(s->nv, sizeof *q->dense);
    q->tables = calloc(s->nv, sizeof *q->tables);
    q->batch = calloc(s->nv, sizeof *q->batch);
    q->tid = rf_executor_threads(s->ex);
    if (!q->queue || !q->dense || !q->tables || !q->batch) {
        pusher_free(q);
        return rf_error_set(RF_ERR_NO_MEMORY, "apply=worker: out of memory");
    }
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    s->push_state = q;
    if (pthread_create(&q->thread, NULL, pusher_main, s) != 0) {
        pthread_cond_destroy(&q->cv);
        pthread_mutex_destroy(&q->mu);
        pusher_free(q);
        s->push_state = NULL;
        return rf_error_set(RF_ERR_NO_RESOURCE,
                            "cannot start the apply=worker thread");
    }
    return RF_OK;
}

static void stop(rf_session *s)
{
    pusher *q = s->push_state;
    if (!q)
        return;
    pthread_mutex_lock(&q->mu);
    q->stop = true;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    pthread_join(q->thread, NULL);
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
    pusher_free(q);
    s->push_state = NULL;
}

static rf_status on_gradient(rf_session *s, size_t i, const char *span, int tid)
{
    (void)span; /* the pusher's spans name its batches */
    (void)tid;
    pusher *q = s->push_state;
    pthread_mutex_lock(&q->mu);
    q->queue[(q->qhead + q->qlen++) % s->nv] = i;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    return RF_OK;
}

/* Until the pusher has nothing queued or running; its first error. */
static rf_status drain(rf_session *s)
{
    pusher *q = s->push_state;
    pthread_mutex_lock(&q->mu);
    while (q->qlen > 0 || q->busy)
        pthread_cond_wait(&q->cv, &q->mu);
    rf_status st = q->st;
    if (st != RF_OK)
        rf_error_set(st, "apply=worker update: %s", q->err);
    q->st = RF_OK;
    pthread_mutex_unlock(&q->mu);
    return st;
}

/* The dense gradients of vars, in one read-modify-write call (on the
 * pusher thread: the batch is its own). */
static rf_status push_dense(rf_session *s, const size_t *vars, size_t n)
{
    pusher *q = s->push_state;
    for (size_t k = 0; k < n; k++)
        q->batch[k] = sess_grad_xfer(s, vars[k]);
    return s->opt.use_locking ? rf_ps_update_rmw_locked(s->client, q->batch, n)
                              : rf_ps_update_rmw(s->client, q->batch, n);
}

/* READ and WRITE of the record's beta powers, values, slots and their
 * padding, FETCH_AND_ADD of the version; locking: CMP_AND_SWP, a second
 * FETCH_AND_ADD, the unlocking CMP_AND_SWP. */
static size_t dense_wire(const rf_session *s, const sess_var *v, size_t rows)
{
    (void)rows;
    return 2 * v->info.rmw_bytes + 8 + (s->opt.use_locking ? 24 : 0);
}

/* Each table's staged rows, read, applied here and written back as row
 * updates (each row owned, its records sealed), one table at a time. */
static rf_status push_rows(rf_session *s, const size_t *vars, size_t n)
{
    rf_status st = RF_OK;
    for (size_t k = 0; k < n && st == RF_OK; k++) {
        sess_var *v = &s->v[vars[k]];
        pthread_mutex_lock(&s->rows.mu);
        st = s->opt.use_locking
                 ? rf_ps_update_sparse_rmw_locked(s->client, v->shard,
                                                  v->push_rows, v->push_n,
                                                  v->grad_buf, s->block.mem_mr)
                 : rf_ps_update_sparse_rmw(s->client, v->shard, v->push_rows,
                                           v->push_n, v->grad_buf,
                                           s->block.mem_mr);
        st = sess_rows_pushed(s, v, st);
        pthread_mutex_unlock(&s->rows.mu);
    }
    return st;
}

/* Adam's sparse rule (TF 1.x) moves every row: not a row update. */
static rf_status check_rows(const rf_session *s, const sess_var *v)
{
    (void)s;
    if (v->apply.cfg->kind != RF_OPTIM_ADAM)
        return RF_OK;
    return rf_error_set(RF_ERR_INVALID_ARG,
                        "embedding table '%s': Adam's sparse rule (TF "
                        "1.x) moves every row, a whole-table "
                        "read-modify-write; use apply=ps",
                        rf_node_name(v->var));
}

/* READ of each row's records of values and slots (16-byte header each),
 * CMP_AND_SWP of its version, the records WRITten back; locking: the lock
 * word. */
static size_t rows_wire(const rf_session *s, const sess_var *v, size_t rows)
{
    size_t fields = 1 + v->apply.num_slots;
    return rows * (2 * fields * (v->row_bytes + 16) + 8) +
           (s->opt.use_locking ? 24 : 0);
}

static void name_threads(rf_session *s, rf_trace *t)
{
    pusher *q = s->push_state;
    if (q && t)
        rf_trace_set_thread_name(t, q->tid, "apply=worker pusher");
}

const sess_push_ops sess_push_apply_worker = {
    .name = "worker",
    .push_op = "APPLY_WORKER",
    .wait_op = "WAIT_APPLIES",
    .wait_span = "wait applies",
    .advance_kind = RF_STEP_FETCH_AND_ADD,
    .advance_op = "FETCH_AND_ADD",
    .locks = true,
    .dense = {.push = push_dense, .wire_bytes = dense_wire},
    .rows = {.push = push_rows, .wire_bytes = rows_wire},
    .check_rows = check_rows,
    .start = start,
    .stop = stop,
    .on_gradient = on_gradient,
    .drain = drain,
    /* every update completed inside the pusher's calls: this only
     * collects what the client still holds (nothing, by its contract) */
    .wait = sess_push_wait_acks,
    .advance = sess_advance_fetch_add,
    .name_threads = name_threads,
};
