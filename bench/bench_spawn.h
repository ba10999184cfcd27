/* bench/bench_spawn.h: --loopback's server child. rf-bench re-executes
 * itself (posix_spawn of /proc/self/exe, i.e. fork+exec, never a bare fork:
 * verbs is fork-unsafe) as `rf-bench --serve --port 0 --ready-fd N`, and
 * the child writes the port it listens on to that pipe. */
#ifndef RF_BENCH_SPAWN_H
#define RF_BENCH_SPAWN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "bench_opts.h"

/* Starts the server child on o->host and waits (up to o->timeout_s) for its
 * port. Returns 0, or -1 (message printed, child reaped). */
int bench_spawn_server(const bench_opts *o, pid_t *pid, uint16_t *port);

/* Waits for the child (terminating it first when terminate) and returns
 * its exit status, or -1 if it died of a signal or could not be reaped. */
int bench_reap_server(pid_t pid, bool terminate, int timeout_s);

#endif
