/* bench/bench_client.h: rf-bench's client: connects to a server, runs the
 * chosen test for each message size, checks the data, prints the rows. */
#ifndef RF_BENCH_CLIENT_H
#define RF_BENCH_CLIENT_H

#include <stdint.h>

#include "bench_opts.h"

/* Returns the process exit status: 0, or 1 on any failure (including a
 * failed data verification). */
int bench_client(const bench_opts *o, const char *host, uint16_t port);

#endif
