/* fabric/local_addr.c: rf_addr_is_local. An address is this host's if a
 * datagram socket can bind to it, which the kernel allows exactly for
 * addresses assigned to a local interface (loopback included). */
#include "fabric/local_addr.h"

#include <netdb.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rdmaflow/status.h"

int rf_addr_is_local(const char *host)
{
    if (!host || !*host || strcmp(host, "0.0.0.0") == 0 ||
        strcmp(host, "::") == 0 || strcmp(host, "*") == 0)
        return 1;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_DGRAM};
    struct addrinfo *res = NULL;
    int e = getaddrinfo(host, NULL, &hints, &res);
    if (e != 0) {
        rf_error_set(RF_ERR_UNAVAILABLE, "%s", gai_strerror(e));
        return -1;
    }
    int local = 0;
    for (struct addrinfo *ai = res; ai && !local; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        local = bind(fd, ai->ai_addr, ai->ai_addrlen) == 0;
        close(fd);
    }
    freeaddrinfo(res);
    return local;
}
