/* tests/common/net.h: network helpers of the multi-process tests. */
#ifndef RF_TESTS_COMMON_NET_H
#define RF_TESTS_COMMON_NET_H

#include <stdint.h>

/* A TCP port on host (an IPv4 address) that was free a moment ago: bound
 * to port 0, read back, closed. Fails the test if it cannot. */
uint16_t rft_free_port(const char *host);

#endif
