/* bench/pullpush/pp_wire.c: TCP byte counts of the connections to the ps
 * tasks, from TCP_INFO (pp_wire.h). */
#include "pp_wire.h"

#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <linux/tcp.h>

static int peer_port(int fd)
{
    struct sockaddr_storage a;
    socklen_t len = sizeof a;
    if (getpeername(fd, (struct sockaddr *)&a, &len) != 0)
        return -1;
    if (a.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&a)->sin_port);
    if (a.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&a)->sin6_port);
    return -1;
}

rf_status pp_tcp_bytes(const uint16_t *ports, size_t nports, uint64_t *bytes,
                       size_t *sockets)
{
    *bytes = 0;
    *sockets = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return rf_error_set(RF_ERR_IO, "opendir /proc/self/fd: %s",
                            strerror(errno));
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        long fd = strtol(e->d_name, &end, 10);
        struct stat sb;
        if (*end || end == e->d_name || fd == dirfd(d) ||
            fstat((int)fd, &sb) != 0 || !S_ISSOCK(sb.st_mode))
            continue;
        int proto = 0;
        socklen_t plen = sizeof proto;
        if (getsockopt((int)fd, SOL_SOCKET, SO_PROTOCOL, &proto, &plen) != 0 ||
            proto != IPPROTO_TCP)
            continue;
        int port = peer_port((int)fd);
        size_t k = 0;
        while (k < nports && ports[k] != port)
            k++;
        if (k == nports)
            continue;
        struct tcp_info ti;
        socklen_t tlen = sizeof ti;
        memset(&ti, 0, sizeof ti);
        if (getsockopt((int)fd, IPPROTO_TCP, TCP_INFO, &ti, &tlen) != 0)
            continue;
        *bytes += ti.tcpi_bytes_acked + ti.tcpi_bytes_received;
        (*sockets)++;
    }
    closedir(d);
    return RF_OK;
}
