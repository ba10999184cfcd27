/* rdmaflow/clock.h: the one clock of rdmaflow and what is built on it:
 * monotonic time (CLOCK_MONOTONIC, shared by every process of a host, so
 * traces of several tasks line up), deadlines in milliseconds, timed
 * condition-variable waits on the same clock, and sleeping. Every layer,
 * tool, benchmark and test uses these instead of calling clock_gettime
 * itself (bench/bench_clock.h adds a TSC for cycle-level timing on top).
 * Implemented in core/clock.c. */
#ifndef RDMAFLOW_CLOCK_H
#define RDMAFLOW_CLOCK_H

#include "rdmaflow/api.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Monotonic time since an arbitrary origin (boot). */
RF_API uint64_t rf_now_ns(void);
RF_API uint64_t rf_now_us(void);
RF_API int64_t rf_now_ms(void);
RF_API double rf_now_s(void);

/* Wall-clock time (CLOCK_REALTIME) in seconds since the Unix epoch, for
 * records a person or another program reads (TensorFlow's event wall_time,
 * the metrics files); never for intervals or deadlines, which use the
 * monotonic clock above. */
RF_API double rf_wall_s(void);

/* A deadline is an absolute rf_now_ms() value, or RF_DEADLINE_NONE (wait
 * forever). */
#define RF_DEADLINE_NONE ((int64_t)-1)

/* now + timeout_ms; a negative timeout gives RF_DEADLINE_NONE. */
RF_API int64_t rf_deadline_ms(int64_t timeout_ms);
/* Milliseconds left: 0 once passed, -1 for RF_DEADLINE_NONE, at most
 * INT32_MAX (so it can be handed to poll() or rf_cq_wait()). */
RF_API int rf_deadline_left_ms(int64_t deadline);
/* True once the deadline has passed (never for RF_DEADLINE_NONE). */
RF_API bool rf_deadline_passed(int64_t deadline);

/* Initialises cv to time its waits on the monotonic clock (a wall-clock
 * step must not shorten or stretch a timeout). 0 or an errno value. */
RF_API int rf_cond_init_monotonic(pthread_cond_t *cv);
/* pthread_cond_timedwait until deadline (a cv from
 * rf_cond_init_monotonic); a plain wait for RF_DEADLINE_NONE. 0 when
 * woken, ETIMEDOUT once the deadline has passed. */
RF_API int rf_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu,
                              int64_t deadline);
/* The same for a relative timeout in ms (< 0: no timeout). */
RF_API int rf_cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu,
                           int64_t timeout_ms);

/* Sleeps ms milliseconds (resumed after signals); nothing for ms <= 0. */
RF_API void rf_sleep_ms(int64_t ms);

#ifdef __cplusplus
}
#endif
#endif
