/* graph/trace.c: per-op timings as Chrome trace event JSON ("X" complete
 * events plus thread/process name metadata), viewable in Perfetto or
 * chrome://tracing. Plans register their node names once per shape
 * generation; events are appended after each run. Spans added by callers
 * (rf_trace_add_span: fabric operations, waits) are registered once per
 * distinct (name, category, args) and appended the same way. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "graph/graph_internal.h"
#include "rdmaflow/escape.h"
#include "rdmaflow/file.h"
#include "rdmaflow/status.h"

typedef struct tnode {
    char *name, *op, *shape;
    char *args; /* spans: JSON members for "args" (NULL for plan nodes) */
} tnode;

#define TRACE_MAX_THREAD_NAMES 64

typedef struct tevent {
    size_t ref;
    uint64_t ts, dur, step;
    int tid;
} tevent;

struct rf_trace {
    pthread_mutex_t mu;
    tnode *nodes;
    size_t n_nodes, cap_nodes;
    tevent *ev;
    size_t n_ev, cap_ev;
    int pid;
    char label[128];
    int max_tid;
    uint64_t epoch;
    size_t *spans; /* indexes of the span tnodes, for lookup */
    size_t n_spans, cap_spans;
    char *thread_names[TRACE_MAX_THREAD_NAMES];
};

/* Makes *arr hold at least need elements of size elem (doubling, at least
 * 64); false if out of memory (*arr unchanged). */
static bool grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *p = grealloc(*arr, c * elem);
    if (!p)
        return false;
    *arr = p;
    *cap = c;
    return true;
}

rf_status rf_trace_create(rf_trace **out)
{
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_trace_create: out NULL");
    rf_trace *t = gcalloc(1, sizeof *t);
    if (!t)
        return rf_error_set(RF_ERR_NO_MEMORY, "rf_trace_create: no memory");
    pthread_mutex_init(&t->mu, NULL);
    t->pid = (int)getpid();
    t->epoch = rf_now_ns();
    *out = t;
    return RF_OK;
}

void rf_trace_destroy(rf_trace *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n_nodes; i++) {
        gfree(t->nodes[i].name);
        gfree(t->nodes[i].op);
        gfree(t->nodes[i].shape);
        gfree(t->nodes[i].args);
    }
    gfree(t->nodes);
    gfree(t->spans);
    for (int i = 0; i < TRACE_MAX_THREAD_NAMES; i++)
        gfree(t->thread_names[i]);
    gfree(t->ev);
    pthread_mutex_destroy(&t->mu);
    gfree(t);
}

size_t rf_trace_num_events(const rf_trace *t)
{
    return t->n_ev;
}

void rf_trace_set_process(rf_trace *t, int pid, const char *label)
{
    t->pid = pid;
    snprintf(t->label, sizeof t->label, "%s", label ? label : "");
}

size_t trace_register(rf_trace *t, size_t n, const char *const *names,
                      const char *const *ops, const char *const *shapes)
{
    pthread_mutex_lock(&t->mu);
    size_t base = t->n_nodes;
    if (!grow((void **)&t->nodes, &t->cap_nodes, t->n_nodes + n,
              sizeof *t->nodes)) {
        pthread_mutex_unlock(&t->mu);
        return SIZE_MAX;
    }
    for (size_t i = 0; i < n; i++) {
        tnode *tn = &t->nodes[base + i];
        tn->name = gstrdup(names[i]);
        tn->op = gstrdup(ops[i]);
        tn->shape = gstrdup(shapes[i]);
        tn->args = NULL;
        if (!tn->name || !tn->op || !tn->shape) {
            for (size_t k = 0; k <= i; k++) {
                gfree(t->nodes[base + k].name);
                gfree(t->nodes[base + k].op);
                gfree(t->nodes[base + k].shape);
            }
            pthread_mutex_unlock(&t->mu);
            return SIZE_MAX;
        }
    }
    t->n_nodes += n;
    pthread_mutex_unlock(&t->mu);
    return base;
}

void trace_add(rf_trace *t, size_t ref, uint64_t ts_ns, uint64_t dur_ns,
               int tid, uint64_t step)
{
    pthread_mutex_lock(&t->mu);
    /* out of memory: drop the event rather than fail the step */
    if (!grow((void **)&t->ev, &t->cap_ev, t->n_ev + 1, sizeof *t->ev)) {
        pthread_mutex_unlock(&t->mu);
        return;
    }
    tevent *e = &t->ev[t->n_ev++];
    e->ref = ref;
    e->ts = ts_ns;
    e->dur = dur_ns;
    e->tid = tid;
    e->step = step;
    if (tid > t->max_tid)
        t->max_tid = tid;
    pthread_mutex_unlock(&t->mu);
}

uint64_t rf_trace_clock_ns(void)
{
    return rf_now_ns();
}

void rf_trace_set_thread_name(rf_trace *t, int tid, const char *name)
{
    if (!t || tid < 0 || tid >= TRACE_MAX_THREAD_NAMES || !name)
        return;
    char *copy = gstrdup(name);
    if (!copy)
        return;
    pthread_mutex_lock(&t->mu);
    gfree(t->thread_names[tid]);
    t->thread_names[tid] = copy;
    if (tid > t->max_tid)
        t->max_tid = tid;
    pthread_mutex_unlock(&t->mu);
}

/* The tnode of a span (name, cat, args), registered on first use; SIZE_MAX
 * when out of memory. Called with t->mu held. */
static size_t span_ref(rf_trace *t, const char *name, const char *cat,
                       const char *args)
{
    for (size_t i = t->n_spans; i-- > 0;) {
        const tnode *n = &t->nodes[t->spans[i]];
        if (!strcmp(n->name, name) && !strcmp(n->op, cat) &&
            !strcmp(n->args, args))
            return t->spans[i];
    }
    if (!grow((void **)&t->spans, &t->cap_spans, t->n_spans + 1,
              sizeof *t->spans) ||
        !grow((void **)&t->nodes, &t->cap_nodes, t->n_nodes + 1,
              sizeof *t->nodes))
        return SIZE_MAX;
    tnode *tn = &t->nodes[t->n_nodes];
    tn->name = gstrdup(name);
    tn->op = gstrdup(cat);
    tn->shape = gstrdup("");
    tn->args = gstrdup(args);
    if (!tn->name || !tn->op || !tn->shape || !tn->args) {
        gfree(tn->name);
        gfree(tn->op);
        gfree(tn->shape);
        gfree(tn->args);
        return SIZE_MAX;
    }
    t->spans[t->n_spans++] = t->n_nodes;
    return t->n_nodes++;
}

void rf_trace_add_span(rf_trace *t, const char *name, const char *cat,
                       const char *args, uint64_t ts_ns, uint64_t dur_ns,
                       int tid, uint64_t step)
{
    if (!t || !name || !cat)
        return;
    pthread_mutex_lock(&t->mu);
    size_t ref = span_ref(t, name, cat, args ? args : "");
    pthread_mutex_unlock(&t->mu);
    if (ref != SIZE_MAX)
        trace_add(t, ref, ts_ns, dur_ns, tid, step);
}

/* A JSON string of s: valid JSON whatever s holds (a byte that is not
 * UTF-8 becomes U+FFFD), with DEL and the C1 controls escaped as well. */
static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    size_t left = strlen(s);
    while (left > 0) {
        unsigned char c = (unsigned char)*s;
        uint32_t cp;
        size_t k = rf_utf8_seq(s, left, &cp);
        if (k == 0)
            fputs("\\ufffd", f), k = 1;
        else if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f))
            fprintf(f, "\\u%04x", (unsigned)cp);
        else
            fwrite(s, 1, k, f);
        s += k;
        left -= k;
    }
    fputc('"', f);
}

rf_status rf_trace_write_json(const rf_trace *t, const char *path)
{
    if (!t || !path)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_trace_write_json: NULL");
    rf_file_out *out;
    rf_status st = rf_file_out_open(path, &out);
    if (st != RF_OK)
        return st;
    FILE *f = rf_file_out_stream(out);
    rf_trace *mt = (rf_trace *)t;
    pthread_mutex_lock(&mt->mu);
    fprintf(f, "{\"traceEvents\":[\n");
    fprintf(f,
            "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,"
            "\"tid\":0,\"args\":{\"name\":",
            t->pid);
    json_str(f, t->label[0] ? t->label : "rdmaflow");
    fprintf(f, "}}");
    for (int tid = 0; tid <= t->max_tid; tid++) {
        char def[32];
        snprintf(def, sizeof def, "%s %d", tid == 0 ? "caller" : "worker", tid);
        const char *tname = tid < TRACE_MAX_THREAD_NAMES && t->thread_names[tid]
                                ? t->thread_names[tid]
                                : def;
        fprintf(f,
                ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,"
                "\"tid\":%d,\"args\":{\"name\":",
                t->pid, tid);
        json_str(f, tname);
        fprintf(f, "}}");
    }
    for (size_t i = 0; i < t->n_ev; i++) {
        const tevent *e = &t->ev[i];
        const tnode *n = &t->nodes[e->ref];
        uint64_t ts = e->ts >= t->epoch ? e->ts - t->epoch : 0;
        fprintf(f, ",\n{\"name\":");
        json_str(f, n->name);
        fprintf(f, ",\"cat\":");
        json_str(f, n->op);
        fprintf(f,
                ",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,"
                "\"tid\":%d,\"args\":{",
                (double)ts / 1000.0, (double)e->dur / 1000.0, t->pid, e->tid);
        if (n->args) { /* a span: the caller's members, then the step */
            fprintf(f, "%s%s\"step\":%llu}}", n->args, n->args[0] ? "," : "",
                    (unsigned long long)e->step);
            continue;
        }
        fprintf(f, "\"op\":");
        json_str(f, n->op);
        fprintf(f, ",\"step\":%llu,\"shape\":", (unsigned long long)e->step);
        json_str(f, n->shape);
        fprintf(f, "}}");
    }
    /* ts 0 on CLOCK_MONOTONIC (shared by every process of this host), so
     * rf-launch can put several tasks' traces on one time axis. */
    fprintf(f,
            "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"rf_epoch_us\":"
            "%.3f}}\n",
            (double)t->epoch / 1000.0);
    pthread_mutex_unlock(&mt->mu);
    return rf_file_out_commit(out);
}
