/* tests/common/net.c: network helpers of the multi-process tests (net.h). */
#include "tests/common/net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/common/check.h"

uint16_t rft_free_port(const char *host)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(fd >= 0, "socket: %s", strerror(errno));
    struct sockaddr_in a = {.sin_family = AF_INET};
    CHECK(inet_pton(AF_INET, host, &a.sin_addr) == 1,
          "'%s' is not an IPv4 "
          "address",
          host);
    CHECK(bind(fd, (struct sockaddr *)&a, sizeof a) == 0, "bind: %s",
          strerror(errno));
    socklen_t len = sizeof a;
    CHECK(getsockname(fd, (struct sockaddr *)&a, &len) == 0, "getsockname: %s",
          strerror(errno));
    close(fd);
    return ntohs(a.sin_port);
}
