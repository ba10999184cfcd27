/* session/metrics_http.c: the HTTP side of Prometheus metrics
 * (rdmaflow/prometheus.h): GET /metrics on the task's own address, served
 * by one internal thread of GNU libmicrohttpd, which renders the registry
 * (prom_registry.c) at each scrape and never touches anything else of the
 * task. The listening socket is made here, so a port in use or an address
 * that is not this machine's is reported with its reason before the
 * daemon starts; libmicrohttpd owns (and closes) it after. Bounded: 16
 * connections, 10 s idle timeout, 32 KiB per connection, no request body
 * read. */
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rdmaflow/prometheus.h"

#define MAX_CONNECTIONS  16u
#define IDLE_TIMEOUT_S   10u
#define CONN_MEMORY      (32u * 1024u)
#define LISTEN_BACKLOG   16
#define CONTENT_TYPE_004 "text/plain; version=0.0.4; charset=utf-8"

struct rf_prom_http {
    rf_prom_registry *r;
    struct MHD_Daemon *d;
    int port;
    atomic_bool ready; /* GET /ready: 200 once set, else 503 */
};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned code,
                             const char *text)
{
    struct MHD_Response *res = MHD_create_response_from_buffer(
        strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
    if (!res)
        return MHD_NO;
    MHD_add_response_header(res, MHD_HTTP_HEADER_CONTENT_TYPE,
                            "text/plain; charset=utf-8");
    if (code == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(res, MHD_HTTP_HEADER_ALLOW, "GET");
    enum MHD_Result ok = MHD_queue_response(c, code, res);
    MHD_destroy_response(res);
    return ok;
}

/* A request that announces a body (which is never read). */
static bool has_body(struct MHD_Connection *c)
{
    const char *len = MHD_lookup_connection_value(
        c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    return (len && strcmp(len, "0") != 0) ||
           MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                       MHD_HTTP_HEADER_TRANSFER_ENCODING);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
                                  const char *url, const char *method,
                                  const char *version, const char *upload,
                                  size_t *upload_size, void **req_ctx)
{
    (void)version;
    (void)upload;
    (void)req_ctx;
    rf_prom_http *h = cls;
    /* answered at the first call, before any body is read */
    if (*upload_size)
        return MHD_NO; /* a body after the answer: close */
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0)
        return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED,
                     "only GET is served here\n");
    bool ready = strcmp(url, "/ready") == 0;
    if (!ready && strcmp(url, "/metrics") != 0)
        return reply(c, MHD_HTTP_NOT_FOUND,
                     "not found: try /metrics or /ready\n");
    if (has_body(c))
        return reply(c, MHD_HTTP_CONTENT_TOO_LARGE,
                     "a GET takes no body here\n");
    if (ready)
        return atomic_load(&h->ready)
                   ? reply(c, MHD_HTTP_OK, "ready\n")
                   : reply(c, MHD_HTTP_SERVICE_UNAVAILABLE, "not ready\n");
    char *text;
    size_t len;
    if (rf_prom_render(h->r, &text, &len) != RF_OK)
        return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
    struct MHD_Response *res =
        MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (!res) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(res, MHD_HTTP_HEADER_CONTENT_TYPE,
                            CONTENT_TYPE_004);
    enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_OK, res);
    MHD_destroy_response(res);
    return ok;
}

/* A listening socket on host:port; -1 with the error set and *st its
 * status. */
static int listen_on(const char *host, int port, int *bound_port, rf_status *st)
{
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    int rc = getaddrinfo(host, service, &hints, &ai);
    if (rc != 0) {
        /* a Kubernetes pod's own name may not be published yet */
        *st = rf_error_set(RF_ERR_UNAVAILABLE,
                           "metrics: cannot resolve '%s' to listen on (%s)",
                           host, gai_strerror(rc));
        return -1;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0) {
        *st = rf_error_set(RF_ERR_IO, "metrics: socket: %s", strerror(errno));
    } else if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) !=
                   0 ||
               bind(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        int e = errno;
        if (e == EADDRINUSE)
            *st = rf_error_set(
                RF_ERR_INVALID_ARG,
                "metrics port %d on %s is in use (another task or "
                "program listens there: give each task on one host "
                "a port of its own)",
                port, host);
        else if (e == EADDRNOTAVAIL)
            *st = rf_error_set(RF_ERR_INVALID_ARG,
                               "metrics: %s is not an address of this machine "
                               "(cannot listen on it)",
                               host);
        else
            *st = rf_error_set(RF_ERR_IO,
                               "metrics: cannot listen on %s port %d: %s", host,
                               port, strerror(e));
        close(fd);
        fd = -1;
    } else if (listen(fd, LISTEN_BACKLOG) != 0) {
        *st = rf_error_set(RF_ERR_IO, "metrics: listen on %s port %d: %s", host,
                           port, strerror(errno));
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    struct sockaddr_storage sa;
    socklen_t len = sizeof sa;
    if (fd >= 0 && getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
        *bound_port = ntohs(sa.ss_family == AF_INET6
                                ? ((struct sockaddr_in6 *)&sa)->sin6_port
                                : ((struct sockaddr_in *)&sa)->sin_port);
    return fd;
}

rf_status rf_prom_http_start(rf_prom_registry *r, const char *host, int port,
                             rf_prom_http **out)
{
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_prom_http_start: out NULL");
    *out = NULL;
    if (!r || !host || !*host)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "metrics: a registry and a host are required");
    if (port < 0 || port > 65535)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "metrics: port %d is not in 0..65535", port);
    rf_prom_http *h = calloc(1, sizeof *h);
    if (!h)
        return rf_error_set(RF_ERR_NO_MEMORY, "metrics: out of memory");
    h->r = r;
    rf_status st = RF_OK;
    int fd = listen_on(host, port, &h->port, &st);
    if (fd < 0) {
        free(h);
        return st;
    }
    h->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL, 0,
                            NULL, NULL, on_request, h, MHD_OPTION_LISTEN_SOCKET,
                            (MHD_socket)fd, MHD_OPTION_CONNECTION_LIMIT,
                            MAX_CONNECTIONS, MHD_OPTION_CONNECTION_TIMEOUT,
                            IDLE_TIMEOUT_S, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                            (size_t)CONN_MEMORY, MHD_OPTION_END);
    if (!h->d) {
        close(fd);
        free(h);
        return rf_error_set(RF_ERR_IO,
                            "metrics: libmicrohttpd could not start serving "
                            "%s port %d",
                            host, port);
    }
    *out = h;
    return RF_OK;
}

void rf_prom_http_set_ready(rf_prom_http *h, bool ready)
{
    if (h)
        atomic_store(&h->ready, ready);
}

int rf_prom_http_port(const rf_prom_http *h)
{
    return h ? h->port : 0;
}

void rf_prom_http_stop(rf_prom_http *h)
{
    if (!h)
        return;
    MHD_stop_daemon(h->d); /* joins its thread, closes the socket */
    free(h);
}
