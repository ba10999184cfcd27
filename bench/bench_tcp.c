/* bench/bench_tcp.c: the server child and the connection to it shared by
 * the plain TCP references (bench_tcp.h). */
#include "bench_tcp.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rdmaflow/status.h"

int bench_tcp_accept_one(const char *who, int ready_fd)
{
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 1) ||
        getsockname(l, (struct sockaddr *)&a, &al)) {
        fprintf(stderr, "%s: server socket: %m\n", who);
        if (l >= 0)
            close(l);
        return -1;
    }
    dprintf(ready_fd, "%u\n", (unsigned)ntohs(a.sin_port));
    close(ready_fd);
    int fd = accept(l, NULL, NULL);
    close(l);
    if (fd < 0)
        fprintf(stderr, "%s: accept: %m\n", who);
    return fd;
}

int bench_tcp_spawn_connect(const char *who, const char *const *argv,
                            rf_child *child)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC)) {
        fprintf(stderr, "%s: pipe: %m\n", who);
        return -1;
    }
    rf_spawn_opts so = {.argv = argv,
                        .path = RF_SPAWN_SELF,
                        .die_with_parent = true,
                        .keep = &(rf_spawn_fd){fds[1], 3},
                        .nkeep = 1};
    rf_status st = rf_spawn(&so, child);
    close(fds[1]);
    uint16_t port = 0;
    if (st == RF_OK)
        st = rf_spawn_read_port(fds[0], NULL, 10000, &port);
    close(fds[0]);
    if (st != RF_OK) {
        fprintf(stderr, "%s: server: %s\n", who, rf_error_message());
        return -1;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons(port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a)) {
        fprintf(stderr, "%s: connect: %m\n", who);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}
