/* bench/bench_clock.h: the timestamps of rf-bench's measured loops,
 * bench_ticks(). On x86 it is the TSC (rdtsc, as perftest's get_cycles),
 * converted with a rate measured against rdmaflow/clock.h's rf_now_ns()
 * (CLOCK_MONOTONIC) over the whole run (at least 20 ms), not perftest's CPU
 * MHz from /proc/cpuinfo. rdtsc costs tens of cycles everywhere, while
 * clock_gettime becomes a system call reading an emulated timer when the
 * kernel distrusts the TSC (the rxe qemu guest boots with tsc=unstable).
 * --timer clock (and any non-x86 host) uses rf_now_ns() itself, 1 tick =
 * 1 ns. Timeouts use rf_now_ns() directly.
 *
 * The reference need not be CLOCK_MONOTONIC_RAW: CLOCK_MONOTONIC is never
 * stepped, only slewed by NTP, by at most 500 ppm, so the measured TSC rate
 * is off by 0.05% at worst, far below what the printed latencies (10 ns
 * resolution, microseconds) or their run-to-run noise can show. One clock
 * for the tree is worth more than that. */
#ifndef RF_BENCH_CLOCK_H
#define RF_BENCH_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "rdmaflow/clock.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define BENCH_HAVE_TSC 1
#else
#define BENCH_HAVE_TSC 0
#endif

extern bool bench_clock_use_tsc;

static inline uint64_t bench_ticks(void)
{
#if BENCH_HAVE_TSC
    if (bench_clock_use_tsc)
        return __rdtsc();
#endif
    return rf_now_ns();
}

/* Chooses the tick source (tsc is ignored without one) and starts the TSC
 * calibration. Call once, early. */
void bench_clock_init(bool tsc);
/* Nanoseconds per tick: 1 for the clock; for the TSC, measured since
 * bench_clock_init (waits until at least 20 ms have passed). */
double bench_clock_ns_per_tick(void);
/* "tsc" or "clock". */
const char *bench_clock_name(void);

#endif
