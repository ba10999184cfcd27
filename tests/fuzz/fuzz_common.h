/* tests/fuzz/fuzz_common.h: what the libFuzzer targets here share: REQUIRE,
 * an invariant that must hold (abort, which libFuzzer and replay.c report
 * as a crash with the input), the input as a C string, and the check that
 * printed text (an error message, an escaped name) is inert. */
#ifndef RF_TESTS_FUZZ_COMMON_H
#define RF_TESTS_FUZZ_COMMON_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/escape.h"

#define REQUIRE(c)                                                             \
    do {                                                                       \
        if (!(c))                                                              \
            abort();                                                           \
    } while (0)

/* The input up to its first NUL, as a string the caller frees; NULL when
 * out of memory (the target then returns 0). */
static inline char *fuzz_text(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (text) {
        memcpy(text, data, size);
        text[size] = '\0';
    }
    return text;
}

/* Text as it reaches a terminal must hold no control byte (below 0x20,
 * DEL, a C1 control) and be valid UTF-8 (issue 25 item 4). */
static inline void fuzz_require_inert(const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = rf_utf8_seq(s + i, n - i, &cp);
        REQUIRE(k > 0 && cp >= 0x20 && cp != 0x7f &&
                !(cp >= 0x80 && cp <= 0x9f));
        i += k;
    }
}

/* A name from the input as a tool prints it (rf_esc) is inert. */
static inline void fuzz_require_escapes(const char *name)
{
    char *e = rf_escape_dup(name);
    REQUIRE(e);
    fuzz_require_inert(e);
    free(e);
}

#endif
