/* bench/bench_spawn.h: --loopback's server child. rf-bench re-executes
 * itself (rf_spawn of /proc/self/exe, rdmaflow/spawn.h: fork + exec, never
 * a bare fork, since verbs is fork-unsafe) as `rf-bench --serve --port 0
 * --ready-fd 3`, and the child writes the port it listens on to that pipe.
 * The child dies with rf-bench. */
#ifndef RF_BENCH_SPAWN_H
#define RF_BENCH_SPAWN_H

#include <stdbool.h>
#include <stdint.h>

#include "bench_opts.h"
#include "rdmaflow/spawn.h"

/* Starts the server child on o->host and waits (up to o->timeout_s) for its
 * port. Returns 0, or -1 (message printed, child reaped). */
int bench_spawn_server(const bench_opts *o, rf_child *server, uint16_t *port);

/* Waits up to timeout_s for the child (terminating it first when
 * terminate; killing it after the wait) and returns its exit status, or -1
 * if it died of a signal, had to be killed or could not be reaped. */
int bench_reap_server(rf_child *server, bool terminate, int timeout_s);

#endif
