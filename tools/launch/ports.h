/* tools/launch/ports.h: free TCP ports for the tasks. */
#ifndef RF_LAUNCH_PORTS_H
#define RF_LAUNCH_PORTS_H

#include <stddef.h>

/* Binds n TCP sockets to port 0 of host (a numeric address or a name),
 * all at once so the ports are distinct, and returns them with their
 * ports. The sockets (close-on-exec) stay bound, which keeps the ports from
 * being handed out, until the caller closes each one right before starting
 * the task that listens on it. Returns 0, or -1 with err set (-2 when host
 * does not resolve). */
int lt_ports_reserve(const char *host, int n, int *fds, int *ports, char *err,
                     size_t errlen);

#endif
