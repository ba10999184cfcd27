/* tests/integration/session/session_check.h: fatal checks of the session
 * task (to be replaced by tests/common's harness). */
#ifndef RF_TESTS_SESSION_CHECK_H
#define RF_TESTS_SESSION_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/status.h"

static const char *check_who = "session_task";

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "FAIL: %s: %s:%d: %s: ", check_who, __FILE__,      \
                    __LINE__, #cond);                                          \
            fprintf(stderr, __VA_ARGS__);                                      \
            fprintf(stderr, " (last error: %s)\n", rf_error_message());        \
            exit(1);                                                           \
        }                                                                      \
    } while (0)
#define CHECK_ST(expr, want)                                                   \
    do {                                                                       \
        rf_status st_got_ = (expr);                                            \
        CHECK(st_got_ == (want), "returned %s, expected %s",                   \
              rf_status_string(st_got_), rf_status_string(want));              \
    } while (0)
#define CHECK_OK(expr) CHECK_ST(expr, RF_OK)
#define CHECK_MSG(needle)                                                      \
    CHECK(strstr(rf_error_message(), (needle)) != NULL,                        \
          "message lacks \"%s\"", (needle))

#endif
