/* bench/bench_clock.h: the benchmark clock. clock_gettime(CLOCK_MONOTONIC_RAW)
 * in nanoseconds: a vDSO call (no system call), not slewed by NTP, same
 * rate on every core. perftest uses rdtsc scaled by the CPU MHz it reads
 * from /proc/cpuinfo; this clock gives the same intervals without that
 * calibration step (and without its failure mode on frequency-scaled or
 * virtualised CPUs). */
#ifndef RF_BENCH_CLOCK_H
#define RF_BENCH_CLOCK_H

#include <stdint.h>
#include <time.h>

#define BENCH_CLOCK_NAME "CLOCK_MONOTONIC_RAW"

static inline uint64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
