/* tools/launch/ports.c: reserves distinct free ports by binding port 0 and
 * reading the port back (getsockname). */
#include "ports.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int lt_ports_reserve(const char *host, int n, int *fds, int *ports, char *err,
                     size_t errlen)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM};
    struct addrinfo *ai = NULL;
    int rc = getaddrinfo(host, "0", &hints, &ai);
    if (rc != 0) {
        snprintf(err, errlen, "--host: cannot resolve '%s': %s", host,
                 gai_strerror(rc));
        return -2;
    }
    int i = 0;
    for (; i < n; i++) {
        fds[i] =
            socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, ai->ai_protocol);
        if (fds[i] < 0) {
            snprintf(err, errlen, "socket: %s", strerror(errno));
            break;
        }
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        if (bind(fds[i], ai->ai_addr, ai->ai_addrlen) != 0 ||
            getsockname(fds[i], (struct sockaddr *)&ss, &sl) != 0) {
            snprintf(err, errlen, "--host: cannot bind a port on %s: %s", host,
                     strerror(errno));
            close(fds[i]);
            break;
        }
        ports[i] = ss.ss_family == AF_INET6
                       ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                       : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    }
    freeaddrinfo(ai);
    if (i == n)
        return 0;
    while (i-- > 0) {
        close(fds[i]);
        fds[i] = -1;
    }
    return -1;
}
