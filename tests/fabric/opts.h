/* tests/fabric/opts.h: the command-line options every role of the
 * conformance program shares, and the time budget helpers. */
#ifndef RF_TESTS_FABRIC_OPTS_H
#define RF_TESTS_FABRIC_OPTS_H

#include <stdint.h>

typedef struct rt_options {
    const char *provider; /* --provider (default "auto") */
    const char *host;     /* --host: address to listen on and connect to */
    int time_scale;       /* RF_TEST_TIME_SCALE (default 1) */
    int peer_timeout_ms;  /* RF_PEER_TIMEOUT_MS (default 10000) */
} rt_options;

extern rt_options rt_opts;

/* base_ms multiplied by the time scale (slow guests, sanitizers). */
int rt_ms(int base_ms);

/* Monotonic clock. */
uint64_t rt_now_us(void);

#endif
