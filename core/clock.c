/* core/clock.c: CLOCK_MONOTONIC time, millisecond deadlines, timed
 * condition-variable waits and sleeps (rdmaflow/clock.h). The only file of
 * the library layers (core, fabric, optim, ps, cluster, graph) that calls
 * clock_gettime(CLOCK_MONOTONIC), pthread_condattr_setclock or nanosleep;
 * the others use these functions. Wall-clock time (CLOCK_REALTIME) is
 * here only as rf_wall_s, for records' timestamps (the metrics files);
 * core/log.c stamps log lines with it itself, and ps_server.c mixes it into
 * an incarnation number when getrandom fails. */
#include "rdmaflow/clock.h"

#include <errno.h>
#include <stdint.h>
#include <time.h>

static struct timespec mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts;
}

uint64_t rf_now_ns(void)
{
    struct timespec ts = mono();
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t rf_now_us(void)
{
    return rf_now_ns() / 1000u;
}

int64_t rf_now_ms(void)
{
    return (int64_t)(rf_now_ns() / 1000000u);
}

double rf_now_s(void)
{
    struct timespec ts = mono();
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double rf_wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int64_t rf_deadline_ms(int64_t timeout_ms)
{
    return timeout_ms < 0 ? RF_DEADLINE_NONE : rf_now_ms() + timeout_ms;
}

int rf_deadline_left_ms(int64_t deadline)
{
    if (deadline < 0)
        return -1;
    int64_t left = deadline - rf_now_ms();
    if (left < 0)
        return 0;
    return left > INT32_MAX ? INT32_MAX : (int)left;
}

bool rf_deadline_passed(int64_t deadline)
{
    return deadline >= 0 && rf_now_ms() >= deadline;
}

int rf_cond_init_monotonic(pthread_cond_t *cv)
{
    pthread_condattr_t ca;
    int rc = pthread_condattr_init(&ca);
    if (rc)
        return rc;
    rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    if (rc == 0)
        rc = pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
    return rc;
}

int rf_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu,
                       int64_t deadline)
{
    if (deadline < 0)
        return pthread_cond_wait(cv, mu);
    struct timespec ts = {.tv_sec = (time_t)(deadline / 1000),
                          .tv_nsec = (long)(deadline % 1000) * 1000000L};
    return pthread_cond_timedwait(cv, mu, &ts);
}

int rf_cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t timeout_ms)
{
    return rf_cond_wait_until(cv, mu, rf_deadline_ms(timeout_ms));
}

void rf_sleep_ms(int64_t ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {.tv_sec = (time_t)(ms / 1000),
                          .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}
