/* rdmaflow/prometheus.h: Prometheus metrics (--metrics_port): a registry
 * of named values a task's threads update with atomic stores, rendered in
 * Prometheus' text exposition format (version 0.0.4) and served at
 * http://HOST:PORT/metrics by an HTTP thread of GNU libmicrohttpd; the
 * built-in feeds of a worker (rf_prometheus_hook_create in
 * rdmaflow/monitored_session.h) and of a ps task (rf_prom_ps_attach). */
#ifndef RDMAFLOW_PROMETHEUS_H
#define RDMAFLOW_PROMETHEUS_H

#include "rdmaflow/api.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmaflow/server.h"
#include "rdmaflow/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the registry --------------------------------------------------------
 *
 *   rf_prom_registry *r;
 *   rf_prom_registry_create(&r);
 *   rf_prom_metric *steps;
 *   rf_prom_metric_add(r, RF_PROM_COUNTER, "rdmaflow_worker_steps_total",
 *                      "Training steps this task ran.", NULL, NULL, &steps);
 *   rf_prom_http *http;
 *   rf_prom_http_start(r, "10.0.0.5", 9100, &http);   // scrapes start
 *   ... per step: rf_prom_add(steps, 1);              // never blocks
 *   rf_prom_http_stop(http);
 *   rf_prom_registry_destroy(r);
 *
 * A metric is a name (Prometheus' [a-zA-Z_:][a-zA-Z0-9_:]*), a help text,
 * a type, and at most one label (name="value"); metrics of one name with
 * different label values make one family, written under one # HELP and
 * # TYPE. Values are stored as atomics: rf_prom_set and rf_prom_add never
 * take a lock and may be called from any thread (rf_prom_observe from one
 * thread at a time). Adding metrics and the collect callback take the
 * registry's lock, which a scrape holds while it renders. The registry
 * holds numbers only: nothing of the model is ever in it. */

typedef struct rf_prom_registry rf_prom_registry;
typedef struct rf_prom_metric rf_prom_metric;

typedef enum rf_prom_type {
    RF_PROM_COUNTER, /* only goes up (a name ending in _total) */
    RF_PROM_GAUGE,   /* any value */
    /* quantiles 0.5, 0.9 and 0.99 of the last RF_PROM_SUMMARY_WINDOW
     * observations, with name_sum and name_count over all of them */
    RF_PROM_SUMMARY,
} rf_prom_type;

#define RF_PROM_SUMMARY_WINDOW 1024
#define RF_PROM_MAX_METRICS    256

RF_API rf_status rf_prom_registry_create(rf_prom_registry **out);
/* Frees the registry and its metrics; stop its HTTP server first. NULL is
 * ignored. */
RF_API void rf_prom_registry_destroy(rf_prom_registry *r);

/* Adds a metric (value 0; a summary with no observations has NaN
 * quantiles). label_name NULL: no label. A malformed name or label name,
 * a name already added with another type or help, the same name and
 * label value twice, or more than RF_PROM_MAX_METRICS metrics:
 * RF_ERR_INVALID_ARG naming it. out may be NULL. */
RF_API rf_status rf_prom_metric_add(rf_prom_registry *r, rf_prom_type type,
                                    const char *name, const char *help,
                                    const char *label_name,
                                    const char *label_value,
                                    rf_prom_metric **out);
/* A counter's or gauge's value (a counter's new value must not be less). */
RF_API void rf_prom_set(rf_prom_metric *m, double v);
/* value += v (a counter: v >= 0). */
RF_API void rf_prom_add(rf_prom_metric *m, double v);
RF_API double rf_prom_get(const rf_prom_metric *m);
/* One observation of a summary (one thread at a time): counted in _sum
 * and _count at once; its quantiles are recomputed from the window at
 * most every 0.25 s (and at its first observation). */
RF_API void rf_prom_observe(rf_prom_metric *m, double v);

/* A callback run on the scraping thread just before each rendering, under
 * the registry's lock (so it never runs twice at once), to set values from
 * sources that are read rather than pushed (a ps server's counters).
 * Replaces the previous one; fn NULL removes it. Returns once no scrape
 * is using the previous callback any more. */
typedef void (*rf_prom_collect_fn)(void *ctx, rf_prom_registry *r);
RF_API void rf_prom_registry_set_collect(rf_prom_registry *r,
                                         rf_prom_collect_fn fn, void *ctx);

/* The registry in the text exposition format 0.0.4 (the collect callback
 * run first): per family "# HELP name help" and "# TYPE name type", then
 * its samples; help text with \\ and \n escaped, label values with \\, \"
 * and \n; values as %.17g, NaN, +Inf, -Inf; every line ends in \n.
 * *text is malloc'd (the caller frees it), *len its length. */
RF_API rf_status rf_prom_render(rf_prom_registry *r, char **text, size_t *len);

/* ---- the HTTP server ---------------------------------------------------- */

typedef struct rf_prom_http rf_prom_http;

/* Serves r at http://host:port/metrics from one thread of libmicrohttpd:
 * GET /metrics answers 200 with the rendering ("text/plain; version=0.0.4;
 * charset=utf-8"); GET /ready 200 "ready" once rf_prom_http_set_ready
 * said so, else 503 "not ready" (a Kubernetes readiness probe); any other
 * path 404; any other method 405 (Allow: GET);
 * a request with a body 413. At most 16 connections at once (a 17th waits
 * in the listen backlog until one closes), each closed after 10 s idle.
 * host: a numeric address or a name (the first IPv4 or IPv6 address it
 * resolves to), never a wildcard by default: "0.0.0.0" or "::" must be
 * asked for. port 0 lets the kernel choose a free port
 * (rf_prom_http_port tells which); 1-65535 that port. A port another
 * socket holds: RF_ERR_INVALID_ARG "metrics port P on HOST is in use
 * (another task or program listens there ...)"; an address that is not
 * this machine's: RF_ERR_INVALID_ARG; a name that does not resolve (yet):
 * RF_ERR_UNAVAILABLE (a caller may try again). */
RF_API rf_status rf_prom_http_start(rf_prom_registry *r, const char *host,
                                    int port, rf_prom_http **out);
/* What GET /ready answers from now on (false at the start). NULL is
 * ignored. */
RF_API void rf_prom_http_set_ready(rf_prom_http *h, bool ready);
/* The port it listens on. */
RF_API int rf_prom_http_port(const rf_prom_http *h);
/* Stops serving (waits for a scrape in progress) and frees h. NULL is
 * ignored. */
RF_API void rf_prom_http_stop(rf_prom_http *h);

/* ---- a ps task's metrics ------------------------------------------------ */

/* Adds a ps task's metrics to r (rdmaflow_ps_connections,
 * rdmaflow_ps_pushes_applied_total, rdmaflow_ps_stale_gradients_dropped_total,
 * rdmaflow_ps_arena_bytes, rdmaflow_ps_auth_failures_total, ...; the
 * README's "Prometheus metrics" lists them) and sets r's collect callback
 * to read server's counters (rf_server_ps_counters) at each scrape.
 * server must be a ps task's. rf_prom_ps_detach removes the callback
 * (waiting for a scrape that runs it) and frees *out: call it before
 * stopping the server. The metrics stay in r (at their last values). */
typedef struct rf_prom_ps rf_prom_ps;
RF_API rf_status rf_prom_ps_attach(rf_prom_registry *r, rf_server *server,
                                   rf_prom_ps **out);
RF_API void rf_prom_ps_detach(rf_prom_ps *p);

#ifdef __cplusplus
}
#endif
#endif
