/* tests/unit/optim/check.h: the CHECK and CLOSE assertions of the optim
 * tests (count failures, print where and why, keep going). */
#ifndef RF_TEST_OPTIM_CHECK_H
#define RF_TEST_OPTIM_CHECK_H

#include <math.h>
#include <stdio.h>

#include "rdmaflow/status.h"

static int failures;

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            failures++;                                                        \
            fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__,   \
                    #cond);                                                    \
            fprintf(stderr, __VA_ARGS__);                                      \
            fprintf(stderr, " [last error: %s]\n", rf_error_message());        \
        }                                                                      \
    } while (0)

/* |got - want| <= atol + rtol * |want| (numpy's allclose). */
#define CLOSE(got, want, rtol, atol, ...)                                      \
    do {                                                                       \
        double got_ = (got), want_ = (want);                                   \
        if (!(fabs(got_ - want_) <= (atol) + (rtol)*fabs(want_))) {            \
            failures++;                                                        \
            fprintf(stderr,                                                    \
                    "%s:%d: %s = %.9g, expected %.9g (diff %.3g): ", __FILE__, \
                    __LINE__, #got, got_, want_, fabs(got_ - want_));          \
            fprintf(stderr, __VA_ARGS__);                                      \
            fprintf(stderr, "\n");                                             \
        }                                                                      \
    } while (0)

static int report(const char *name)
{
    if (failures) {
        fprintf(stderr, "%s: %d check(s) failed\n", name, failures);
        return 1;
    }
    printf("%s: all checks passed\n", name);
    return 0;
}

#endif
