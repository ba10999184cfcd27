/* tests/unit/prometheus/test_prometheus.c: rdmaflow/prometheus.h.
 *   format  the text exposition format 0.0.4 of a registry, byte for byte:
 *           HELP and TYPE once per family, a family's samples together,
 *           escapes in help texts and label values, NaN and +Inf, a
 *           summary's quantiles over its window with _sum and _count; the
 *           registry's refusals (bad names, a type changed, a duplicate).
 *   http    the server on 127.0.0.1 (port 0: the kernel's choice): GET
 *           /metrics answers 200 with the rendering and its Content-Type;
 *           another path 404, another method 405 with Allow: GET, a body
 *           413; 8 threads scraping at once while the values change, every
 *           answer whole and its counter never going back; a 17th
 *           connection waiting while 16 idle ones are open; a port another
 *           socket holds refused naming it, an address not this
 *           machine's refused, a port out of range refused.
 * The client is plain sockets (HTTP/1.0 requests), not libmicrohttpd. */
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rdmaflow/prometheus.h"
#include "tests/common/check.h"

static void format(void)
{
    rf_prom_registry *r;
    CHECK_OK(rf_prom_registry_create(&r));
    rf_prom_metric *a0, *b, *a1, *g, *s;
    CHECK_OK(rf_prom_metric_add(r, RF_PROM_COUNTER, "x_bytes_total",
                                "Bytes \\ moved\nby x.", "ps", "/job:ps/task:0",
                                &a0));
    CHECK_OK(
        rf_prom_metric_add(r, RF_PROM_GAUGE, "x_up", "Up.", NULL, NULL, &b));
    CHECK_OK(rf_prom_metric_add(r, RF_PROM_COUNTER, "x_bytes_total",
                                "Bytes \\ moved\nby x.", "ps", "a\"b\\c\nd",
                                &a1));
    CHECK_OK(rf_prom_metric_add(r, RF_PROM_GAUGE, "x_ratio", "Ratio.", NULL,
                                NULL, &g));
    CHECK_OK(rf_prom_metric_add(r, RF_PROM_SUMMARY, "x_seconds", "Time.", NULL,
                                NULL, &s));
    rf_prom_add(a0, 3);
    rf_prom_add(a0, 4);
    rf_prom_set(a1, 1e20);
    rf_prom_set(b, NAN);
    rf_prom_set(g, INFINITY);
    for (int i = 1; i <= 100; i++)
        rf_prom_observe(s, i); /* published at the first: then every 0.25 s */
    usleep(260000);
    rf_prom_observe(s, 0); /* a window of 0..100: republished */
    const char *want = "# HELP x_bytes_total Bytes \\\\ moved\\nby x.\n"
                       "# TYPE x_bytes_total counter\n"
                       "x_bytes_total{ps=\"/job:ps/task:0\"} 7\n"
                       "x_bytes_total{ps=\"a\\\"b\\\\c\\nd\"} 1e+20\n"
                       "# HELP x_up Up.\n"
                       "# TYPE x_up gauge\n"
                       "x_up NaN\n"
                       "# HELP x_ratio Ratio.\n"
                       "# TYPE x_ratio gauge\n"
                       "x_ratio +Inf\n"
                       "# HELP x_seconds Time.\n"
                       "# TYPE x_seconds summary\n"
                       "x_seconds{quantile=\"0.5\"} 50\n"
                       "x_seconds{quantile=\"0.9\"} 90\n"
                       "x_seconds{quantile=\"0.99\"} 99\n"
                       "x_seconds_sum 5050\n"
                       "x_seconds_count 101\n";
    char *text;
    size_t len;
    CHECK_OK(rf_prom_render(r, &text, &len));
    CHECK(len == strlen(want) && !strcmp(text, want),
          "rendered:\n%s\nwant:\n%s", text, want);
    free(text);

    /* refusals */
    CHECK_ST(
        rf_prom_metric_add(r, RF_PROM_COUNTER, "9x", "h", NULL, NULL, NULL),
        RF_ERR_INVALID_ARG);
    CHECK_MSG("not a metric name");
    CHECK_ST(rf_prom_metric_add(r, RF_PROM_GAUGE, "x_bytes_total",
                                "Bytes \\ moved\nby x.", "ps", "z", NULL),
             RF_ERR_INVALID_ARG);
    CHECK_MSG("another type");
    CHECK_ST(rf_prom_metric_add(r, RF_PROM_COUNTER, "x_bytes_total",
                                "Bytes \\ moved\nby x.", "ps", "/job:ps/task:0",
                                NULL),
             RF_ERR_INVALID_ARG);
    CHECK_MSG("added already");
    CHECK_ST(
        rf_prom_metric_add(r, RF_PROM_GAUGE, "x_q", "h", "quantile", "1", NULL),
        RF_ERR_INVALID_ARG);
    CHECK_ST(rf_prom_metric_add(r, RF_PROM_GAUGE, "x_q", "h", "a-b", "1", NULL),
             RF_ERR_INVALID_ARG);
    rf_prom_registry_destroy(r);

    /* an empty registry renders as an empty text */
    CHECK_OK(rf_prom_registry_create(&r));
    CHECK_OK(rf_prom_render(r, &text, &len));
    CHECK(len == 0 && text && !*text, "empty registry: %zu bytes", len);
    free(text);
    rf_prom_registry_destroy(r);
    rft_note("format: ok");
}

/* ---- a plain HTTP/1.0 client ---------------------------------------- */

typedef struct http_answer {
    int code;
    char head[2048];
    char *body;
} http_answer;

/* A connected socket to 127.0.0.1:port. */
static int connect_to(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(fd >= 0, "socket");
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    CHECK(connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0, "connect %d",
          port);
    return fd;
}

/* Sends request (whole) to 127.0.0.1:port and reads the answer to EOF. */
static void http(int port, const char *request, http_answer *a)
{
    int fd = connect_to(port);
    size_t n = strlen(request);
    CHECK(write(fd, request, n) == (ssize_t)n, "write");
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    CHECK(buf != NULL, "malloc");
    for (;;) {
        if (len + 1 >= cap)
            CHECK((buf = realloc(buf, cap *= 2)) != NULL, "realloc");
        ssize_t k = read(fd, buf + len, cap - len - 1);
        CHECK(k >= 0, "read");
        if (k == 0)
            break;
        len += (size_t)k;
    }
    close(fd);
    buf[len] = '\0';
    char *end = strstr(buf, "\r\n\r\n");
    CHECK(end != NULL, "no end of headers in %zu bytes: %s", len, buf);
    *end = '\0';
    snprintf(a->head, sizeof a->head, "%s", buf);
    CHECK(sscanf(buf, "HTTP/1.%*d %d", &a->code) == 1, "status line: %s", buf);
    a->body = strdup(end + 4);
    free(buf);
}

typedef struct scraper {
    int port, scrapes;
    bool failed;
    atomic_int *running;
} scraper;

/* Scrapes; every answer must be 200 with the counter never going back. */
static void *scrape(void *arg)
{
    scraper *s = arg;
    double last = -1;
    for (int i = 0; i < s->scrapes; i++) {
        http_answer a;
        http(s->port, "GET /metrics HTTP/1.0\r\n\r\n", &a);
        const char *at = strstr(a.body, "\nt_steps_total ");
        double v = at ? strtod(at + 15, NULL) : -1;
        if (a.code != 200 || !at || v < last ||
            !strstr(a.body, "t_seconds_count "))
            s->failed = true;
        last = v;
        free(a.body);
    }
    atomic_fetch_sub(s->running, 1);
    return NULL;
}

static void http_server(void)
{
    rf_prom_registry *r;
    CHECK_OK(rf_prom_registry_create(&r));
    rf_prom_metric *steps, *secs;
    CHECK_OK(rf_prom_metric_add(r, RF_PROM_COUNTER, "t_steps_total", "Steps.",
                                NULL, NULL, &steps));
    CHECK_OK(rf_prom_metric_add(r, RF_PROM_SUMMARY, "t_seconds", "Time.", NULL,
                                NULL, &secs));
    rf_prom_http *h;
    CHECK_OK(rf_prom_http_start(r, "127.0.0.1", 0, &h));
    int port = rf_prom_http_port(h);
    CHECK(port > 0, "port %d", port);

    http_answer a;
    http(port, "GET /metrics HTTP/1.0\r\n\r\n", &a);
    CHECK(a.code == 200, "GET /metrics: %d", a.code);
    CHECK(strstr(a.head, "text/plain; version=0.0.4") != NULL,
          "Content-Type: %s", a.head);
    char *text;
    size_t len;
    CHECK_OK(rf_prom_render(r, &text, &len));
    CHECK(!strcmp(a.body, text), "body:\n%s\nrendering:\n%s", a.body, text);
    free(text);
    free(a.body);

    http(port, "GET /ready HTTP/1.0\r\n\r\n", &a);
    CHECK(a.code == 503 && !strcmp(a.body, "not ready\n"),
          "GET /ready before ready: %d %s", a.code, a.body);
    free(a.body);
    rf_prom_http_set_ready(h, true);
    http(port, "GET /ready HTTP/1.0\r\n\r\n", &a);
    CHECK(a.code == 200 && !strcmp(a.body, "ready\n"),
          "GET /ready once ready: %d %s", a.code, a.body);
    free(a.body);
    rf_prom_http_set_ready(h, false);
    http(port, "GET /ready HTTP/1.0\r\n\r\n", &a);
    CHECK(a.code == 503, "GET /ready after not ready again: %d", a.code);
    free(a.body);
    http(port, "POST /ready HTTP/1.0\r\nContent-Length: 0\r\n\r\n", &a);
    CHECK(a.code == 405, "POST /ready: %d", a.code);
    free(a.body);

    http(port, "GET /metric HTTP/1.0\r\n\r\n", &a);
    CHECK(a.code == 404, "GET /metric: %d", a.code);
    free(a.body);
    http(port, "GET / HTTP/1.0\r\n\r\n", &a);
    CHECK(a.code == 404, "GET /: %d", a.code);
    free(a.body);
    http(port, "POST /metrics HTTP/1.0\r\nContent-Length: 0\r\n\r\n", &a);
    CHECK(a.code == 405, "POST /metrics: %d", a.code);
    CHECK(strstr(a.head, "Allow: GET") != NULL, "405 without Allow: %s",
          a.head);
    free(a.body);
    http(port, "DELETE /metrics HTTP/1.0\r\n\r\n", &a);
    CHECK(a.code == 405, "DELETE /metrics: %d", a.code);
    free(a.body);
    http(port, "GET /metrics HTTP/1.0\r\nContent-Length: 5\r\n\r\nhello", &a);
    CHECK(a.code == 413, "GET /metrics with a body: %d", a.code);
    free(a.body);

    /* concurrent scrapes while the values change */
    enum { SCRAPERS = 8 };
    scraper sc[SCRAPERS];
    pthread_t th[SCRAPERS];
    atomic_int running = SCRAPERS;
    for (int i = 0; i < SCRAPERS; i++) {
        sc[i] = (scraper){.port = port, .scrapes = 40, .running = &running};
        CHECK(pthread_create(&th[i], NULL, scrape, &sc[i]) == 0, "thread");
    }
    long updates = 0;
    while (atomic_load(&running) > 0) {
        rf_prom_add(steps, 1);
        rf_prom_observe(secs, 1e-3 * (double)(updates++ % 7));
    }
    for (int i = 0; i < SCRAPERS; i++) {
        pthread_join(th[i], NULL);
        CHECK(!sc[i].failed, "scraper %d saw a bad answer", i);
    }
    CHECK(rf_prom_get(steps) == (double)updates, "steps %g after %ld updates",
          rf_prom_get(steps), updates);
    rft_note("%d x 40 scrapes during %ld updates", SCRAPERS, updates);

    /* at most 16 connections: a 17th waits (in the listen backlog) while
     * 16 idle ones are open, and is served once they are gone */
    int idle[16];
    for (int i = 0; i < 16; i++)
        idle[i] = connect_to(port);
    usleep(100000); /* accepted by the server's thread */
    int extra = connect_to(port);
    const char *get = "GET /metrics HTTP/1.0\r\n\r\n";
    CHECK(write(extra, get, strlen(get)) == (ssize_t)strlen(get), "write");
    struct pollfd pfd = {.fd = extra, .events = POLLIN};
    CHECK(poll(&pfd, 1, 1000) == 0,
          "a 17th connection was served while 16 were open");
    for (int i = 0; i < 16; i++)
        close(idle[i]);
    CHECK(poll(&pfd, 1, 5000) == 1, "the 17th connection never served");
    char head[16] = "";
    CHECK(read(extra, head, sizeof head - 1) > 0 &&
              !strncmp(head, "HTTP/1.1 200", 12),
          "the 17th connection's answer: %s", head);
    close(extra);

    /* a port held by another socket */
    CHECK_ST(rf_prom_http_start(r, "127.0.0.1", port, &(rf_prom_http *){0}),
             RF_ERR_INVALID_ARG);
    CHECK_MSG("is in use");
    char want[64];
    snprintf(want, sizeof want, "port %d on 127.0.0.1", port);
    CHECK_MSG(want);
    rf_prom_http_stop(h);
    /* free again once stopped */
    CHECK_OK(rf_prom_http_start(r, "127.0.0.1", port, &h));
    rf_prom_http_stop(h);
    CHECK_ST(rf_prom_http_start(r, "192.0.2.1", 0, &h), RF_ERR_INVALID_ARG);
    CHECK_MSG("not an address of this machine");
    CHECK_ST(rf_prom_http_start(r, "127.0.0.1", 65536, &h), RF_ERR_INVALID_ARG);
    CHECK_ST(rf_prom_http_start(r, "nosuchhost.invalid", 0, &h),
             RF_ERR_UNAVAILABLE);
    CHECK_MSG("cannot resolve 'nosuchhost.invalid'");
    rf_prom_registry_destroy(r);
    rft_note("http: ok");
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "";
    if (!strcmp(what, "format"))
        format();
    else if (!strcmp(what, "http"))
        http_server();
    else {
        fprintf(stderr, "usage: %s format|http\n", argv[0]);
        return 2;
    }
    return 0;
}
