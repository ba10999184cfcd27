/* core/spinlock.c: the contended path of rf_spinlock (core/spinlock.h). */
#include <sched.h>

#include "core/spinlock.h"

void rf_spin_lock_wait(rf_spinlock *l)
{
    for (unsigned spins = 0;; spins++) {
        /* Wait on a plain load (no cache-line ping-pong), then retry the
         * exchange. After 64 rounds give the CPU away each time. */
        while (atomic_load_explicit(&l->held, memory_order_relaxed)) {
            if (spins++ < 64) {
#if defined(__x86_64__) || defined(__i386__)
                __builtin_ia32_pause();
#elif defined(__aarch64__)
                __asm__ volatile("yield");
#endif
            } else {
                sched_yield();
            }
        }
        if (!atomic_exchange_explicit(&l->held, 1, memory_order_acquire))
            return;
    }
}
