/* bench/bench_tcp.h: the plain TCP references' shared plumbing (tcp_ref.c,
 * tcp_rr.c): a server child re-executed from this program that accepts one
 * connection on an ephemeral loopback port and tells its parent the port
 * through a pipe, and the parent's connection to it. */
#ifndef RF_BENCH_TCP_H
#define RF_BENCH_TCP_H

#include <stdint.h>

#include "rdmaflow/spawn.h"

/* Server side: listens on 127.0.0.1:0, writes the port and a newline to
 * ready_fd (then closes it) and accepts one connection. Returns its
 * descriptor, or -1 with a message on stderr naming who. */
int bench_tcp_accept_one(const char *who, int ready_fd);

/* Parent side: starts this program again with argv (whose arguments must
 * include "--ready-fd 3": the child's pipe end is descriptor 3), reads the
 * port it listens on and connects to it. Returns the connected descriptor
 * and fills child, or -1 with a message on stderr. */
int bench_tcp_spawn_connect(const char *who, const char *const *argv,
                            rf_child *child);

#endif
