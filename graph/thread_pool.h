/* graph/thread_pool.h: the executor's thread pool: nthreads-1 worker threads
 * plus the thread that runs a plan, one FIFO of tasks, and a parallel-for
 * whose caller takes part (so nested waits cannot deadlock). Capacity is
 * reserved up front: pushing never allocates. */
#ifndef RF_GRAPH_THREAD_POOL_H
#define RF_GRAPH_THREAD_POOL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "graph/graph_internal.h"

typedef void (*rf_task_fn)(void *arg, size_t idx, int tid);

rf_status pool_create(int nthreads, rf_pool **out);
void pool_destroy(rf_pool *p);
int pool_size(const rf_pool *p);
/* Makes room for at least items queued tasks (called when a plan is
 * created, never during a run). */
rf_status pool_reserve(rf_pool *p, size_t items);
/* Queues fn(arg, idx, tid) for a worker (or the thread in run_until).
 * Returns false if the queue is full (cannot happen within the reserve). */
bool pool_push(rf_pool *p, rf_task_fn fn, void *arg, size_t idx);
/* Runs queued tasks on the calling thread (as thread tid) until *remaining
 * is zero. Whoever brings it to zero must call pool_wake(). */
void pool_run_until(rf_pool *p, int tid, atomic_size_t *remaining);
void pool_wake(rf_pool *p);
/* fn(arg, c, tid) for c in [0, n): the caller and idle workers claim chunks;
 * returns when all are done. */
void pool_parallel_for(rf_pool *p, int tid, size_t n, rf_chunk_fn fn,
                       void *arg);

#endif
