/* bench/bench_clock.c: tick source choice and TSC calibration against
 * rf_now_ns() (see bench_clock.h). */
#include "bench_clock.h"

bool bench_clock_use_tsc;
static uint64_t start_ns, start_ticks;

#define MIN_CALIBRATION_NS 20000000u /* 20 ms */

void bench_clock_init(bool tsc)
{
    bench_clock_use_tsc = tsc && BENCH_HAVE_TSC;
    start_ns = rf_now_ns();
    start_ticks = bench_ticks();
}

double bench_clock_ns_per_tick(void)
{
    if (!bench_clock_use_tsc)
        return 1.0;
    uint64_t ns = rf_now_ns();
    if (ns - start_ns < MIN_CALIBRATION_NS) {
        uint64_t left = MIN_CALIBRATION_NS - (ns - start_ns);
        rf_sleep_ms((int64_t)((left + 999999u) / 1000000u));
        ns = rf_now_ns();
    }
    uint64_t ticks = bench_ticks();
    if (ticks <= start_ticks)
        return 1.0; /* cannot happen with a working TSC */
    return (double)(ns - start_ns) / (double)(ticks - start_ticks);
}

const char *bench_clock_name(void)
{
    return bench_clock_use_tsc ? "tsc" : "clock";
}
