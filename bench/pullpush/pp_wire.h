/* bench/pullpush/pp_wire.h: what the kernel says this process moved over
 * TCP to the ps tasks, for the sock provider (whose endpoints are TCP
 * connections): the sum over this process's TCP sockets whose peer port is
 * one of the ps ports of tcpi_bytes_acked + tcpi_bytes_received (TCP
 * payload both ways: the sock provider's frames, headers included; not the
 * TCP/IP headers). Other providers have no such count. */
#ifndef RF_BENCH_PP_WIRE_H
#define RF_BENCH_PP_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "rdmaflow/status.h"

/* *bytes = the sum now; *sockets = how many sockets were counted.
 * RF_ERR_IO when /proc/self/fd cannot be read. */
rf_status pp_tcp_bytes(const uint16_t *ports, size_t nports, uint64_t *bytes,
                       size_t *sockets);

#endif
