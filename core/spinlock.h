/* core/spinlock.h: a lock for data-path sections of a few instructions
 * (posting one work request, taking completions): one atomic exchange to
 * take it, a release store to drop it, so an uncontended section costs one
 * atomic instead of a mutex's two. Contended, it spins on a plain load and
 * after 64 rounds gives the CPU away each time (the holder may be preempted
 * on this very core). Never hold one across a blocking call or a long copy:
 * use a pthread mutex there. ThreadSanitizer sees the atomics, so the
 * section's effects are ordered as with a mutex. */
#ifndef RF_CORE_SPINLOCK_H
#define RF_CORE_SPINLOCK_H

#include <stdatomic.h>

typedef struct rf_spinlock {
    _Atomic int held;
} rf_spinlock;

/* The contended path (core/spinlock.c). */
void rf_spin_lock_wait(rf_spinlock *l);

static inline void rf_spin_init(rf_spinlock *l)
{
    atomic_init(&l->held, 0);
}

static inline void rf_spin_lock(rf_spinlock *l)
{
    if (atomic_exchange_explicit(&l->held, 1, memory_order_acquire))
        rf_spin_lock_wait(l);
}

static inline void rf_spin_unlock(rf_spinlock *l)
{
    atomic_store_explicit(&l->held, 0, memory_order_release);
}

#endif
