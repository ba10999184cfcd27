/* session/prom_registry.c: the registry of Prometheus metrics
 * (rdmaflow/prometheus.h) and its rendering in the text exposition format
 * 0.0.4. Values are doubles kept as 64-bit atomics, so the threads that
 * update them (the training loop, a ps's service thread through the
 * collect callback) never wait for a scrape; a summary's quantiles are
 * computed by its observing thread over a window of recent observations
 * and published as atomics too. The lock guards the list of metrics and
 * the collect callback, and is held by a rendering. Not the HTTP server
 * (metrics_http.c). */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/clock.h"
#include "rdmaflow/prometheus.h"

#define NAME_MAX_LEN  128
#define LABEL_MAX_LEN 256
#define HELP_MAX_LEN  512
#define NUM_QUANTILES 3
#define REPUBLISH_S   0.25

static const double quantiles[NUM_QUANTILES] = {0.5, 0.9, 0.99};

/* a double's bits in an atomic */
typedef _Atomic uint64_t atomic_double;

static double load_d(const atomic_double *a)
{
    uint64_t bits = atomic_load_explicit(a, memory_order_relaxed);
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

static void store_d(atomic_double *a, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    atomic_store_explicit(a, bits, memory_order_relaxed);
}

/* A summary's window, written by its observing thread only. */
typedef struct prom_window {
    double v[RF_PROM_SUMMARY_WINDOW];
    double sorted[RF_PROM_SUMMARY_WINDOW];
    size_t n, next;
    double published_at;
} prom_window;

struct rf_prom_metric {
    rf_prom_type type;
    char name[NAME_MAX_LEN];
    char help[HELP_MAX_LEN];
    char label_name[NAME_MAX_LEN]; /* "" : none */
    char label_value[LABEL_MAX_LEN];
    atomic_double value; /* counter, gauge; a summary's _sum */
    _Atomic uint64_t count;
    atomic_double q[NUM_QUANTILES];
    prom_window *window; /* summaries */
};

struct rf_prom_registry {
    pthread_mutex_t mu;
    rf_prom_metric *m[RF_PROM_MAX_METRICS];
    size_t n;
    rf_prom_collect_fn collect;
    void *collect_ctx;
};

rf_status rf_prom_registry_create(rf_prom_registry **out)
{
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_prom_registry_create: out NULL");
    rf_prom_registry *r = calloc(1, sizeof *r);
    if (!r)
        return rf_error_set(RF_ERR_NO_MEMORY, "prometheus: out of memory");
    pthread_mutex_init(&r->mu, NULL);
    *out = r;
    return RF_OK;
}

void rf_prom_registry_destroy(rf_prom_registry *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        free(r->m[i]->window);
        free(r->m[i]);
    }
    pthread_mutex_destroy(&r->mu);
    free(r);
}

/* [a-zA-Z_:][a-zA-Z0-9_:]* (colons: metric names only) */
static bool valid_name(const char *s, bool colons)
{
    if (!s || !*s || strlen(s) >= NAME_MAX_LEN)
        return false;
    for (const char *p = s; *p; p++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  c == '_' || (colons && c == ':') ||
                  (p != s && c >= '0' && c <= '9');
        if (!ok)
            return false;
    }
    return true;
}

static const char *type_name(rf_prom_type t)
{
    switch (t) {
    case RF_PROM_COUNTER:
        return "counter";
    case RF_PROM_GAUGE:
        return "gauge";
    case RF_PROM_SUMMARY:
        return "summary";
    }
    return "untyped";
}

/* Checks a new metric against the registry's (r->mu held). */
static rf_status check_new(const rf_prom_registry *r, rf_prom_type type,
                           const char *name, const char *help,
                           const char *label_name, const char *label_value)
{
    if (!valid_name(name, true))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "prometheus: '%s' is not a metric name "
                            "([a-zA-Z_:][a-zA-Z0-9_:]*, < %d characters)",
                            name ? name : "(null)", NAME_MAX_LEN);
    if ((int)type < RF_PROM_COUNTER || type > RF_PROM_SUMMARY)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "prometheus: %s: unknown type %d", name, (int)type);
    if (!help || strlen(help) >= HELP_MAX_LEN)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "prometheus: %s: a help text shorter than %d "
                            "characters is required",
                            name, HELP_MAX_LEN);
    if (label_name &&
        (!valid_name(label_name, false) || !strncmp(label_name, "__", 2) ||
         !strcmp(label_name, "quantile") || !label_value ||
         strlen(label_value) >= LABEL_MAX_LEN))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "prometheus: %s: label '%s' is not a label name "
                            "([a-zA-Z_][a-zA-Z0-9_]*, not __* or quantile) "
                            "with a value shorter than %d characters",
                            name, label_name, LABEL_MAX_LEN);
    if (r->n >= RF_PROM_MAX_METRICS)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "prometheus: %s: the registry holds %d metrics "
                            "already",
                            name, RF_PROM_MAX_METRICS);
    for (size_t i = 0; i < r->n; i++) {
        const rf_prom_metric *o = r->m[i];
        if (strcmp(o->name, name) != 0)
            continue;
        if (o->type != type || strcmp(o->help, help) != 0 ||
            strcmp(o->label_name, label_name ? label_name : "") != 0)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "prometheus: %s was added with another type, "
                                "help or label name",
                                name);
        if (!label_name || !strcmp(o->label_value, label_value))
            return rf_error_set(
                RF_ERR_INVALID_ARG, "prometheus: %s%s%s was added already",
                name, label_name ? " " : "", label_name ? label_value : "");
    }
    return RF_OK;
}

rf_status rf_prom_metric_add(rf_prom_registry *r, rf_prom_type type,
                             const char *name, const char *help,
                             const char *label_name, const char *label_value,
                             rf_prom_metric **out)
{
    if (out)
        *out = NULL;
    if (!r)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_prom_metric_add: no registry");
    pthread_mutex_lock(&r->mu);
    rf_status st = check_new(r, type, name, help, label_name, label_value);
    rf_prom_metric *m = NULL;
    if (st == RF_OK && !(m = calloc(1, sizeof *m)))
        st = rf_error_set(RF_ERR_NO_MEMORY, "prometheus: out of memory");
    if (st == RF_OK && type == RF_PROM_SUMMARY &&
        !(m->window = calloc(1, sizeof *m->window)))
        st = rf_error_set(RF_ERR_NO_MEMORY, "prometheus: out of memory");
    if (st != RF_OK) {
        free(m);
        pthread_mutex_unlock(&r->mu);
        return st;
    }
    m->type = type;
    snprintf(m->name, sizeof m->name, "%s", name);
    snprintf(m->help, sizeof m->help, "%s", help);
    if (label_name) {
        snprintf(m->label_name, sizeof m->label_name, "%s", label_name);
        snprintf(m->label_value, sizeof m->label_value, "%s", label_value);
    }
    for (int i = 0; i < NUM_QUANTILES; i++)
        store_d(&m->q[i], NAN);
    r->m[r->n++] = m;
    pthread_mutex_unlock(&r->mu);
    if (out)
        *out = m;
    return RF_OK;
}

void rf_prom_set(rf_prom_metric *m, double v)
{
    if (m)
        store_d(&m->value, v);
}

void rf_prom_add(rf_prom_metric *m, double v)
{
    if (!m)
        return;
    uint64_t old = atomic_load_explicit(&m->value, memory_order_relaxed), nw;
    do {
        double d;
        memcpy(&d, &old, sizeof d);
        d += v;
        memcpy(&nw, &d, sizeof nw);
    } while (!atomic_compare_exchange_weak_explicit(
        &m->value, &old, nw, memory_order_relaxed, memory_order_relaxed));
}

double rf_prom_get(const rf_prom_metric *m)
{
    return m ? load_d(&m->value) : NAN;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The window's quantiles (nearest rank) into the atomics. */
static void publish_quantiles(rf_prom_metric *m)
{
    prom_window *w = m->window;
    memcpy(w->sorted, w->v, w->n * sizeof *w->v);
    qsort(w->sorted, w->n, sizeof *w->sorted, cmp_double);
    for (int i = 0; i < NUM_QUANTILES; i++) {
        size_t k = (size_t)ceil(quantiles[i] * (double)w->n);
        store_d(&m->q[i], w->sorted[k ? k - 1 : 0]);
    }
}

void rf_prom_observe(rf_prom_metric *m, double v)
{
    if (!m || !m->window)
        return;
    prom_window *w = m->window;
    w->v[w->next] = v;
    w->next = (w->next + 1) % RF_PROM_SUMMARY_WINDOW;
    if (w->n < RF_PROM_SUMMARY_WINDOW)
        w->n++;
    double now = rf_now_s();
    if (w->n == 1 || now - w->published_at >= REPUBLISH_S) {
        publish_quantiles(m);
        w->published_at = now;
    }
    rf_prom_add(m, v);
    atomic_fetch_add_explicit(&m->count, 1, memory_order_relaxed);
}

void rf_prom_registry_set_collect(rf_prom_registry *r, rf_prom_collect_fn fn,
                                  void *ctx)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    r->collect = fn;
    r->collect_ctx = ctx;
    pthread_mutex_unlock(&r->mu);
}

/* ---- rendering ------------------------------------------------------ */

typedef struct text_buf {
    char *p;
    size_t len, cap;
    bool failed;
} text_buf;

static void put(text_buf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (b->len + n + 1 > cap)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->failed = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void puts_(text_buf *b, const char *s)
{
    put(b, s, strlen(s));
}

/* s with \\ and \n escaped, and \" too in a label value */
static void put_escaped(text_buf *b, const char *s, bool quote)
{
    for (; *s; s++) {
        if (*s == '\\')
            puts_(b, "\\\\");
        else if (*s == '\n')
            puts_(b, "\\n");
        else if (quote && *s == '"')
            puts_(b, "\\\"");
        else
            put(b, s, 1);
    }
}

static void put_value(text_buf *b, double v)
{
    char num[64];
    if (isnan(v))
        snprintf(num, sizeof num, "NaN");
    else if (isinf(v))
        snprintf(num, sizeof num, "%sInf", v > 0 ? "+" : "-");
    else
        snprintf(num, sizeof num, "%.17g", v);
    puts_(b, num);
}

/* name[suffix]{label="value"[,extra]} value\n */
static void put_sample(text_buf *b, const rf_prom_metric *m, const char *suffix,
                       const char *extra, double v)
{
    puts_(b, m->name);
    puts_(b, suffix);
    if (m->label_name[0] || extra) {
        puts_(b, "{");
        if (m->label_name[0]) {
            puts_(b, m->label_name);
            puts_(b, "=\"");
            put_escaped(b, m->label_value, true);
            puts_(b, "\"");
        }
        if (m->label_name[0] && extra)
            puts_(b, ",");
        if (extra)
            puts_(b, extra);
        puts_(b, "}");
    }
    puts_(b, " ");
    put_value(b, v);
    puts_(b, "\n");
}

static void put_metric(text_buf *b, const rf_prom_metric *m)
{
    if (m->type != RF_PROM_SUMMARY) {
        put_sample(b, m, "", NULL, load_d(&m->value));
        return;
    }
    for (int i = 0; i < NUM_QUANTILES; i++) {
        char q[32];
        snprintf(q, sizeof q, "quantile=\"%g\"", quantiles[i]);
        put_sample(b, m, "", q, load_d(&m->q[i]));
    }
    /* _count read first: a concurrent observation may be in _sum only */
    double count =
        (double)atomic_load_explicit(&m->count, memory_order_relaxed);
    put_sample(b, m, "_sum", NULL, load_d(&m->value));
    put_sample(b, m, "_count", NULL, count);
}

rf_status rf_prom_render(rf_prom_registry *r, char **text, size_t *len)
{
    if (!r || !text || !len)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_prom_render: NULL");
    *text = NULL;
    *len = 0;
    text_buf b = {0};
    pthread_mutex_lock(&r->mu);
    if (r->collect)
        r->collect(r->collect_ctx, r);
    /* families in the order of their first metric, each whole */
    bool done[RF_PROM_MAX_METRICS] = {false};
    for (size_t i = 0; i < r->n; i++) {
        if (done[i])
            continue;
        const rf_prom_metric *m = r->m[i];
        puts_(&b, "# HELP ");
        puts_(&b, m->name);
        puts_(&b, " ");
        put_escaped(&b, m->help, false);
        puts_(&b, "\n# TYPE ");
        puts_(&b, m->name);
        puts_(&b, " ");
        puts_(&b, type_name(m->type));
        puts_(&b, "\n");
        for (size_t j = i; j < r->n; j++) {
            if (!done[j] && !strcmp(r->m[j]->name, m->name)) {
                put_metric(&b, r->m[j]);
                done[j] = true;
            }
        }
    }
    pthread_mutex_unlock(&r->mu);
    if (!b.p && !b.failed)
        put(&b, "", 0); /* an empty registry: an empty text */
    if (b.failed) {
        free(b.p);
        return rf_error_set(RF_ERR_NO_MEMORY, "prometheus: out of memory");
    }
    *text = b.p;
    *len = b.len;
    return RF_OK;
}
