/* graph/thread_pool.c: a small pthread pool (one mutex, one FIFO ring) with
 * a caller-participating parallel-for. Chunks are claimed with an atomic
 * counter; which thread runs a chunk never affects results, because chunks
 * write disjoint outputs and their partition depends only on sizes. */
#include <pthread.h>
#include <string.h>

#include "core/fpenv.h"
#include "graph/thread_pool.h"
#include "rdmaflow/status.h"

typedef struct item {
    rf_task_fn fn; /* NULL: cancelled */
    void *arg;
    size_t idx;
} item;

typedef struct worker_arg {
    struct rf_pool *p;
    int tid;
} worker_arg;

struct rf_pool {
    int nthreads;
    pthread_t *threads;
    worker_arg *args; /* one per worker, freed with the pool */
    int started;
    pthread_mutex_t mu;
    pthread_cond_t work_cv; /* queue non-empty, stop, or a run finished */
    pthread_cond_t done_cv; /* a parallel-for helper finished */
    item *q;
    size_t cap, head, count;
    bool stop;
};

static bool pop_locked(rf_pool *p, item *it)
{
    while (p->count > 0) {
        *it = p->q[p->head];
        p->head = (p->head + 1) % p->cap;
        p->count--;
        if (it->fn)
            return true;
    }
    return false;
}

static void *worker_main(void *arg)
{
    rf_pool *p = ((worker_arg *)arg)->p;
    int tid = ((worker_arg *)arg)->tid;
    /* pool threads only run kernels: flush denormals for their whole life */
    (void)rf_flush_denormals_begin();
    pthread_mutex_lock(&p->mu);
    for (;;) {
        item it;
        if (pop_locked(p, &it)) {
            pthread_mutex_unlock(&p->mu);
            it.fn(it.arg, it.idx, tid);
            pthread_mutex_lock(&p->mu);
            continue;
        }
        if (p->stop)
            break;
        pthread_cond_wait(&p->work_cv, &p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

rf_status pool_create(int nthreads, rf_pool **out)
{
    if (nthreads < 1 || nthreads > 1024)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "thread pool: %d threads (1..1024)", nthreads);
    rf_pool *p = gcalloc(1, sizeof *p);
    if (!p)
        return rf_error_set(RF_ERR_NO_MEMORY, "thread pool: no memory");
    p->nthreads = nthreads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work_cv, NULL);
    pthread_cond_init(&p->done_cv, NULL);
    rf_status st = pool_reserve(p, 64);
    if (st == RF_OK && nthreads > 1) {
        p->threads = gcalloc((size_t)nthreads - 1, sizeof *p->threads);
        p->args = gcalloc((size_t)nthreads - 1, sizeof *p->args);
        if (!p->threads || !p->args)
            st = rf_error_set(RF_ERR_NO_MEMORY, "thread pool: no memory");
    }
    for (int i = 1; st == RF_OK && i < nthreads; i++) {
        worker_arg *wa = &p->args[i - 1];
        wa->p = p;
        wa->tid = i;
        int rc = pthread_create(&p->threads[i - 1], NULL, worker_main, wa);
        if (rc != 0) {
            st = rf_error_set(RF_ERR_NO_RESOURCE,
                              "thread pool: pthread_create: %s", strerror(rc));
            break;
        }
        p->started++;
    }
    if (st != RF_OK) {
        pool_destroy(p);
        return st;
    }
    *out = p;
    return RF_OK;
}

void pool_destroy(rf_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->work_cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->started; i++)
        pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->work_cv);
    pthread_cond_destroy(&p->done_cv);
    gfree(p->threads);
    gfree(p->args);
    gfree(p->q);
    gfree(p);
}

int pool_size(const rf_pool *p)
{
    return p->nthreads;
}

rf_status pool_reserve(rf_pool *p, size_t items)
{
    /* parallel-for helpers: at most nthreads-1 per caller, nthreads callers */
    items += (size_t)p->nthreads * (size_t)p->nthreads;
    pthread_mutex_lock(&p->mu);
    if (items <= p->cap) {
        pthread_mutex_unlock(&p->mu);
        return RF_OK;
    }
    item *q = gmalloc(items * sizeof *q);
    if (!q) {
        pthread_mutex_unlock(&p->mu);
        return rf_error_set(RF_ERR_NO_MEMORY, "thread pool: no memory");
    }
    for (size_t i = 0; i < p->count; i++)
        q[i] = p->q[(p->head + i) % p->cap];
    gfree(p->q);
    p->q = q;
    p->cap = items;
    p->head = 0;
    pthread_mutex_unlock(&p->mu);
    return RF_OK;
}

static bool push_locked(rf_pool *p, rf_task_fn fn, void *arg, size_t idx)
{
    if (p->count == p->cap)
        return false;
    item *it = &p->q[(p->head + p->count) % p->cap];
    it->fn = fn;
    it->arg = arg;
    it->idx = idx;
    p->count++;
    return true;
}

bool pool_push(rf_pool *p, rf_task_fn fn, void *arg, size_t idx)
{
    pthread_mutex_lock(&p->mu);
    bool ok = push_locked(p, fn, arg, idx);
    if (ok)
        pthread_cond_signal(&p->work_cv);
    pthread_mutex_unlock(&p->mu);
    return ok;
}

void pool_run_until(rf_pool *p, int tid, atomic_size_t *remaining)
{
    rf_fpenv fp = rf_flush_denormals_begin(); /* the caller, for this run */
    pthread_mutex_lock(&p->mu);
    while (atomic_load(remaining) > 0) {
        item it;
        if (pop_locked(p, &it)) {
            pthread_mutex_unlock(&p->mu);
            it.fn(it.arg, it.idx, tid);
            pthread_mutex_lock(&p->mu);
        } else {
            pthread_cond_wait(&p->work_cv, &p->mu);
        }
    }
    pthread_mutex_unlock(&p->mu);
    rf_flush_denormals_end(fp);
}

void pool_wake(rf_pool *p)
{
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->work_cv);
    pthread_mutex_unlock(&p->mu);
}

typedef struct pf_job {
    rf_chunk_fn fn;
    void *arg;
    size_t n;
    atomic_size_t next;
    int refs; /* queued or running helpers; under the pool mutex */
    rf_pool *pool;
} pf_job;

static void claim_chunks(pf_job *j, int tid)
{
    for (;;) {
        size_t c = atomic_fetch_add(&j->next, 1);
        if (c >= j->n)
            return;
        j->fn(j->arg, c, tid);
    }
}

static void pf_help(void *arg, size_t idx, int tid)
{
    (void)idx;
    pf_job *j = arg;
    claim_chunks(j, tid);
    pthread_mutex_lock(&j->pool->mu);
    if (--j->refs == 0)
        pthread_cond_broadcast(&j->pool->done_cv);
    pthread_mutex_unlock(&j->pool->mu);
}

void pool_parallel_for(rf_pool *p, int tid, size_t n, rf_chunk_fn fn, void *arg)
{
    if (n == 0)
        return;
    if (n == 1 || p->nthreads == 1) {
        for (size_t c = 0; c < n; c++)
            fn(arg, c, tid);
        return;
    }
    pf_job j = {.fn = fn, .arg = arg, .n = n, .refs = 0, .pool = p};
    atomic_init(&j.next, 0);
    size_t helpers =
        n - 1 < (size_t)p->nthreads - 1 ? n - 1 : (size_t)p->nthreads - 1;
    pthread_mutex_lock(&p->mu);
    for (size_t i = 0; i < helpers; i++) {
        if (!push_locked(p, pf_help, &j, 0))
            break;
        j.refs++;
    }
    if (j.refs > 0)
        pthread_cond_broadcast(&p->work_cv);
    pthread_mutex_unlock(&p->mu);

    claim_chunks(&j, tid);

    pthread_mutex_lock(&p->mu);
    /* cancel helpers no worker has picked up yet */
    for (size_t i = 0; i < p->count && j.refs > 0; i++) {
        item *it = &p->q[(p->head + i) % p->cap];
        if (it->fn == pf_help && it->arg == &j) {
            it->fn = NULL;
            j.refs--;
        }
    }
    while (j.refs > 0)
        pthread_cond_wait(&p->done_cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

void parallel_for(const rf_kctx *k, size_t nchunks, rf_chunk_fn fn, void *arg)
{
    if (!k->pool || nchunks <= 1) {
        for (size_t c = 0; c < nchunks; c++)
            fn(arg, c, k->tid);
        return;
    }
    pool_parallel_for(k->pool, k->tid, nchunks, fn, arg);
}

size_t chunks_for(int64_t units, int64_t grain, size_t max_chunks)
{
    if (units <= 0 || grain <= 0)
        return 1;
    int64_t n = (units + grain - 1) / grain;
    if (n < 1)
        n = 1;
    if ((uint64_t)n > max_chunks)
        n = (int64_t)max_chunks;
    return (size_t)n;
}
