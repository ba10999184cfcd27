/* tests/fabric/opts.h: the command-line options every role of the
 * conformance program shares, and how the suite starts its child roles. */
#ifndef RF_TESTS_FABRIC_OPTS_H
#define RF_TESTS_FABRIC_OPTS_H

#include "tests/common/proc.h"

typedef struct rt_options {
    const char *provider; /* --provider (default "auto") */
    const char *host;     /* --host: address to listen on and connect to */
    int peer_timeout_ms;  /* RF_PEER_TIMEOUT_MS (default 10000) */
} rt_options;

extern rt_options rt_opts;

/* Starts this program again as a child (tests/common/proc.h, stdin and
 * stdout pipes) with `--provider P --host H <args...>` (args is
 * NULL-terminated). */
void rt_spawn(rft_child *c, const char *name, const char *const *args);

#endif
