/* tests/fabric/check.h: fatal check macros of the conformance suite. A failed
 * check prints who failed (driver, target, worker), file:line, the condition,
 * the values involved and the calling thread's rf_error_message(), kills every
 * child process this process started and exits with status 1. Checks are
 * fatal so a case never continues (or passes) past a broken expectation. */
#ifndef RF_TESTS_FABRIC_CHECK_H
#define RF_TESTS_FABRIC_CHECK_H

#include <stdint.h>

#include "rdmaflow/fabric.h"
#include "rdmaflow/status.h"

/* Name of this process in messages ("driver", "target", "fadd-worker"). */
extern const char *rt_who;

__attribute__((noreturn, format(printf, 4, 5))) void
rt_check_failed(const char *file, int line, const char *cond, const char *fmt,
                ...);

/* Progress note on stderr, prefixed with rt_who. */
__attribute__((format(printf, 1, 2))) void rt_note(const char *fmt, ...);

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond))                                                           \
            rt_check_failed(__FILE__, __LINE__, #cond, __VA_ARGS__);           \
    } while (0)

/* expr must return want (an rf_status). */
#define CHECK_ST(expr, want)                                                   \
    do {                                                                       \
        rf_status st_got_ = (rf_status)(expr);                                 \
        rf_status st_want_ = (want);                                           \
        if (st_got_ != st_want_)                                               \
            rt_check_failed(__FILE__, __LINE__, #expr,                         \
                            "returned %s (%d), expected %s",                   \
                            rf_status_string(st_got_), (int)st_got_,           \
                            rf_status_string(st_want_));                       \
    } while (0)

#define CHECK_OK(expr) CHECK_ST(expr, RF_OK)

#define CHECK_EQ_U64(a, b)                                                     \
    do {                                                                       \
        uint64_t eq_a_ = (uint64_t)(a), eq_b_ = (uint64_t)(b);                 \
        if (eq_a_ != eq_b_)                                                    \
            rt_check_failed(                                                   \
                __FILE__, __LINE__, #a " == " #b,                              \
                "%llu (0x%llx) != %llu (0x%llx)", (unsigned long long)eq_a_,   \
                (unsigned long long)eq_a_, (unsigned long long)eq_b_,          \
                (unsigned long long)eq_b_);                                    \
    } while (0)

#endif
