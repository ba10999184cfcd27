/* bench/bench_server.h: rf-bench --serve: listens, accepts one client (or
 * every client with --forever) and plays the passive or ping-pong side of
 * the test the client names, verifying what the client wrote. */
#ifndef RF_BENCH_SERVER_H
#define RF_BENCH_SERVER_H

#include "bench_opts.h"

/* Returns the process exit status: 0, or 1 on failure. */
int bench_server(const bench_opts *o);

#endif
