/* fabric/verbs/verbs_util.c: small helpers of the verbs provider: errno to
 * rf_status, address parsing and printing (deadlines and timed waits are
 * core's, rdmaflow/clock.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>

#include "fabric/verbs/verbs_internal.h"

rf_status verbs_errno_status(int err)
{
    switch (err) {
    case ENOMEM:
        return RF_ERR_NO_MEMORY;
    case EAGAIN:
    case ENOSPC:
    case ENOBUFS:
        return RF_ERR_NO_RESOURCE;
    case EINVAL:
    case EFAULT:
    case EACCES:
    case EPERM:
    case ERANGE:
        return RF_ERR_INVALID_ARG;
    case EOPNOTSUPP:
    case ENOSYS:
        return RF_ERR_UNSUPPORTED;
    case ETIMEDOUT:
        return RF_ERR_TIMEOUT;
    case ENODEV:
    case ENXIO:
    case ENETUNREACH:
    case EHOSTUNREACH:
    case ENETDOWN:
    case ECONNREFUSED:
    case EADDRNOTAVAIL:
    case EADDRINUSE:
        return RF_ERR_UNAVAILABLE;
    case ECONNRESET:
    case ENOTCONN:
    case EPIPE:
        return RF_ERR_DISCONNECTED;
    default:
        return RF_ERR_IO;
    }
}

void verbs_addr_str(const struct sockaddr *sa, char *buf, size_t len)
{
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        port = ntohs(in->sin_port);
        snprintf(buf, len, "%s:%u", host, port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
        port = ntohs(in6->sin6_port);
        snprintf(buf, len, "[%s]:%u", host, port);
    } else {
        snprintf(buf, len, "(family %d)", sa->sa_family);
    }
}

rf_status verbs_resolve(const char *what, const char *host, uint16_t port,
                        struct sockaddr_storage *out)
{
    memset(out, 0, sizeof *out);
    if (!host || !*host) {
        struct sockaddr_in *in = (struct sockaddr_in *)out;
        in->sin_family = AF_INET;
        in->sin_addr.s_addr = htonl(INADDR_ANY);
        in->sin_port = htons(port);
        return RF_OK;
    }
    /* Accept "[v6]" as well as a bare literal or name. */
    char name[256];
    size_t hl = strlen(host);
    if (hl >= sizeof name)
        return rf_error_set(RF_ERR_INVALID_ARG, "%s: host name too long", what);
    if (host[0] == '[' && hl > 2 && host[hl - 1] == ']') {
        memcpy(name, host + 1, hl - 2);
        name[hl - 2] = '\0';
    } else {
        memcpy(name, host, hl + 1);
    }
    char service[8];
    snprintf(service, sizeof service, "%u", (unsigned)port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(name, service, &hints, &res);
    if (rc != 0)
        return rf_error_set(RF_ERR_UNAVAILABLE, "%s: cannot resolve '%s': %s",
                            what, host, gai_strerror(rc));
    /* Prefer IPv4: RoCE v2 GIDs are usually IPv4-mapped. */
    const struct addrinfo *pick = res;
    for (const struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        if (ai->ai_family == AF_INET) {
            pick = ai;
            break;
        }
    }
    if (pick->ai_addrlen > sizeof *out) {
        freeaddrinfo(res);
        return rf_error_set(RF_ERR_INVALID_ARG, "%s: odd address for '%s'",
                            what, host);
    }
    memcpy(out, pick->ai_addr, pick->ai_addrlen);
    freeaddrinfo(res);
    return RF_OK;
}

const char *verbs_event_str(int event)
{
    return rdma_event_str((enum rdma_cm_event_type)event);
}
