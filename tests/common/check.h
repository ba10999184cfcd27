/* tests/common/check.h: the fatal checks of every test program (unit tests,
 * the fabric conformance suite, the ps integration tests and their helper
 * processes). A failed check prints one line on stderr: who failed (the name
 * set with rft_set_who, such as "driver", "target", "ps" or "worker"; the
 * program's name by default) and its pid, file:line, the condition, the
 * values involved and the calling thread's rf_error_message(). It then kills
 * every child process this process started (tests/common/proc.h) and exits
 * with status 1. Checks are fatal so a test never continues (or passes) past
 * a broken expectation.
 *
 * This header is the whole harness a single-process test needs; it is not a
 * logging facility (rft_note is the only progress output it offers). */
#ifndef RF_TESTS_COMMON_CHECK_H
#define RF_TESTS_COMMON_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "rdmaflow/status.h"

/* Names this process in failure messages and notes (a string that lives as
 * long as the process). */
void rft_set_who(const char *who);
const char *rft_who(void);

/* Reports a failed check (see above) and exits 1. cond is the condition as
 * written; fmt says what was seen. */
__attribute__((noreturn, format(printf, 4, 5))) void
rft_fail(const char *file, int line, const char *cond, const char *fmt, ...);

/* Progress note on stderr, prefixed with the process's name and pid. */
__attribute__((format(printf, 1, 2))) void rft_note(const char *fmt, ...);

/* |got - want| <= atol + rtol * |want| (numpy's allclose; NaN is never
 * near anything). */
bool rft_near(double got, double want, double rtol, double atol);

__attribute__((noreturn, format(printf, 8, 9))) void
rft_fail_near(const char *file, int line, const char *expr, double got,
              double want, double rtol, double atol, const char *fmt, ...);

/* cond must hold; the format and its arguments say what was seen. */
#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond))                                                           \
            rft_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);                  \
    } while (0)

/* A check whose condition says it all. */
#define CHECK_TRUE(cond) CHECK(cond, "%s", "is false")

/* expr must return want (an rf_status). */
#define CHECK_ST(expr, want)                                                   \
    do {                                                                       \
        rf_status st_got_ = (rf_status)(expr);                                 \
        rf_status st_want_ = (want);                                           \
        if (st_got_ != st_want_)                                               \
            rft_fail(__FILE__, __LINE__, #expr,                                \
                     "returned %s (%d), expected %s",                          \
                     rf_status_string(st_got_), (int)st_got_,                  \
                     rf_status_string(st_want_));                              \
    } while (0)

#define CHECK_OK(expr) CHECK_ST(expr, RF_OK)

/* The calling thread's rf_error_message() must contain needle. */
#define CHECK_MSG(needle)                                                      \
    CHECK(strstr(rf_error_message(), (needle)) != NULL,                        \
          "message lacks \"%s\"", (needle))

#define CHECK_EQ_U64(a, b)                                                     \
    do {                                                                       \
        uint64_t eq_a_ = (uint64_t)(a), eq_b_ = (uint64_t)(b);                 \
        if (eq_a_ != eq_b_)                                                    \
            rft_fail(__FILE__, __LINE__, #a " == " #b,                         \
                     "%llu (0x%llx) != %llu (0x%llx)",                         \
                     (unsigned long long)eq_a_, (unsigned long long)eq_a_,     \
                     (unsigned long long)eq_b_, (unsigned long long)eq_b_);    \
    } while (0)

/* A unit test's groups of checks, run by name from the command line. */
typedef struct rft_group {
    const char *name;
    void (*fn)(void);
} rft_group;

/* Runs the group named argv[1], or every group without an argument, and
 * prints "ok"; returns 0, or 2 (after saying so) when no group has that
 * name. For main: return rft_groups_run(groups, n, argc, argv). */
int rft_groups_run(const rft_group *groups, size_t n, int argc, char **argv);

/* got must be near want (rft_near); the format says which value it is. */
#define CHECK_NEAR(got, want, rtol, atol, ...)                                 \
    do {                                                                       \
        double near_got_ = (got), near_want_ = (want);                         \
        double near_rtol_ = (rtol), near_atol_ = (atol);                       \
        if (!rft_near(near_got_, near_want_, near_rtol_, near_atol_))          \
            rft_fail_near(__FILE__, __LINE__, #got, near_got_, near_want_,     \
                          near_rtol_, near_atol_, __VA_ARGS__);                \
    } while (0)

#endif
