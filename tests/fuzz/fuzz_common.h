/* tests/fuzz/fuzz_common.h: what the libFuzzer targets here share: REQUIRE,
 * an invariant that must hold (abort, which libFuzzer and replay.c report
 * as a crash with the input), and the input as a C string. */
#ifndef RF_TESTS_FUZZ_COMMON_H
#define RF_TESTS_FUZZ_COMMON_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

#endif
