/* cluster/cluster_hostlist.c: Slurm's compressed host lists
 * ("node[01-03,07],gpu-a[1-2]") expanded as `scontrol show hostnames` does,
 * and Slurm's tasks-per-node lists ("2(x3),1"). Only the syntax: the hosts
 * are checked as host names where they become HOST:PORT addresses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster_internal.h"
#include "rdmaflow/status.h"

/* Digits of one range bound; more would overflow the arithmetic below. */
#define BOUND_DIGITS 9

typedef struct hl_out {
    char **hosts;
    size_t n, cap;
} hl_out;

static rf_status hl_push(hl_out *o, const char *what, const char *host)
{
    if (o->n >= RF_HOSTLIST_MAX)
        return rf_error_set(RF_ERR_INVALID_ARG, "%s: more than %d hosts", what,
                            RF_HOSTLIST_MAX);
    if (o->n == o->cap) {
        size_t cap = o->cap ? 2 * o->cap : 16;
        char **h = realloc(o->hosts, cap * sizeof *h);
        if (!h)
            return rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory", what);
        o->hosts = h;
        o->cap = cap;
    }
    if (!(o->hosts[o->n] = strdup(host)))
        return rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory", what);
    o->n++;
    return RF_OK;
}

/* A bound "007": its value and digit count; off is its offset in text. */
static rf_status hl_bound(const char *what, const char *text, size_t off,
                          const char *p, size_t len, long *v)
{
    char q[80];
    if (len == 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s \"%s\": empty range at offset %zu", what,
                            cl_quote(text, strlen(text), q), off);
    if (len > BOUND_DIGITS || strspn(p, "0123456789") < len)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s \"%s\": \"%.*s\" at offset %zu is not a "
                            "number (a range is N or N-M in decimal, at most "
                            "%d digits)",
                            what, cl_quote(text, strlen(text), q), (int)len, p,
                            off, BOUND_DIGITS);
    *v = strtol(p, NULL, 10);
    return RF_OK;
}

/* Expands host `item` (text[start..end), no top-level comma) into o: the
 * literal prefix, then each value of the first bracket group (zero padding
 * of its low bound kept) followed by the expansion of the rest, so the
 * leftmost group varies slowest, as Slurm's multi-dimensional lists. */
static rf_status hl_item(const char *what, const char *text, size_t pos,
                         size_t end, char *prefix, size_t plen, hl_out *o)
{
    char q[80];
    size_t open = pos;
    while (open < end && text[open] != '[')
        open++;
    if (plen + (open - pos) >= RF_HOST_MAX)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s \"%s\": a host name is longer than %d "
                            "characters",
                            what, cl_quote(text, strlen(text), q),
                            RF_HOST_MAX - 1);
    memcpy(prefix + plen, text + pos, open - pos);
    plen += open - pos;
    prefix[plen] = '\0';
    if (open == end) {
        if (plen == 0)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "%s \"%s\": empty host name at offset %zu "
                                "(stray comma?)",
                                what, cl_quote(text, strlen(text), q), pos);
        return hl_push(o, what, prefix);
    }
    size_t close = open + 1;
    while (close < end && text[close] != ']')
        close++; /* nesting and unclosed groups were refused by the caller */
    size_t r = open + 1;
    for (;;) {
        size_t re = r;
        while (re < close && text[re] != ',')
            re++;
        const char *dash = memchr(text + r, '-', re - r);
        size_t llen = dash ? (size_t)(dash - (text + r)) : re - r;
        long lo, hi;
        rf_status st = hl_bound(what, text, r, text + r, llen, &lo);
        if (st == RF_OK && dash)
            st = hl_bound(what, text, (size_t)(dash + 1 - text), dash + 1,
                          re - (size_t)(dash + 1 - text), &hi);
        else
            hi = lo;
        if (st != RF_OK)
            return st;
        if (hi < lo)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "%s \"%s\": range \"%.*s\" at offset %zu goes "
                                "down (%ld > %ld)",
                                what, cl_quote(text, strlen(text), q),
                                (int)(re - r), text + r, r, lo, hi);
        for (long v = lo; v <= hi; v++) {
            char num[32];
            int w = snprintf(num, sizeof num, "%0*ld", (int)llen, v);
            if (plen + (size_t)w >= RF_HOST_MAX)
                return rf_error_set(RF_ERR_INVALID_ARG,
                                    "%s \"%s\": a host name is longer than "
                                    "%d characters",
                                    what, cl_quote(text, strlen(text), q),
                                    RF_HOST_MAX - 1);
            memcpy(prefix + plen, num, (size_t)w + 1);
            st = hl_item(what, text, close + 1, end, prefix, plen + (size_t)w,
                         o);
            if (st != RF_OK)
                return st;
        }
        if (re == close)
            return RF_OK;
        r = re + 1;
    }
}

/* Brackets balanced, not nested, not empty. */
static rf_status hl_check_brackets(const char *what, const char *text)
{
    char q[80];
    size_t open = 0;
    bool in = false;
    for (size_t i = 0; text[i]; i++) {
        char ch = text[i];
        if (ch == '[' && in)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "%s \"%s\": '[' at offset %zu inside the "
                                "brackets opened at offset %zu (brackets do "
                                "not nest)",
                                what, cl_quote(text, strlen(text), q), i, open);
        if (ch == '[') {
            in = true;
            open = i;
        } else if (ch == ']' && !in) {
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "%s \"%s\": ']' at offset %zu without a '['",
                                what, cl_quote(text, strlen(text), q), i);
        } else if (ch == ']') {
            if (i == open + 1)
                return rf_error_set(RF_ERR_INVALID_ARG,
                                    "%s \"%s\": empty brackets at offset %zu",
                                    what, cl_quote(text, strlen(text), q),
                                    open);
            in = false;
        } else if (ch == ' ' || ch == '\t' || ch == '\n') {
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "%s \"%s\": blank at offset %zu (hosts are "
                                "separated by commas)",
                                what, cl_quote(text, strlen(text), q), i);
        }
    }
    if (in)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s \"%s\": '[' at offset %zu is not closed", what,
                            cl_quote(text, strlen(text), q), open);
    return RF_OK;
}

rf_status rf_hostlist_expand(const char *text, const char *what, char ***hosts,
                             size_t *n)
{
    if (!what)
        what = "host list";
    if (hosts)
        *hosts = NULL;
    if (n)
        *n = 0;
    if (!hosts || !n)
        return rf_error_set(RF_ERR_INVALID_ARG, "%s: no output", what);
    if (!text || !*text)
        return rf_error_set(RF_ERR_INVALID_ARG, "%s is empty", what);
    rf_status st = hl_check_brackets(what, text);
    if (st != RF_OK)
        return st;
    hl_out o = {0};
    char prefix[RF_HOST_MAX];
    size_t pos = 0, len = strlen(text);
    while (st == RF_OK) {
        size_t end = pos;
        bool in = false;
        while (end < len && (in || text[end] != ',')) {
            in = text[end] == '[' ? true : text[end] == ']' ? false : in;
            end++;
        }
        st = hl_item(what, text, pos, end, prefix, 0, &o);
        if (end == len)
            break;
        pos = end + 1;
    }
    if (st != RF_OK) {
        rf_hostlist_free(o.hosts, o.n);
        return st;
    }
    *hosts = o.hosts;
    *n = o.n;
    return RF_OK;
}

void rf_hostlist_free(char **hosts, size_t n)
{
    for (size_t i = 0; hosts && i < n; i++)
        free(hosts[i]);
    free(hosts);
}

rf_status cl_tasks_per_node(const char *text, const char *what, int **counts,
                            size_t *n)
{
    char q[80];
    *counts = NULL;
    *n = 0;
    if (!*text)
        return rf_error_set(RF_ERR_INVALID_ARG, "%s is empty", what);
    int *c = NULL;
    size_t nc = 0;
    const char *p = text;
    for (;;) {
        char *end;
        long v = -1, rep = 1;
        if (*p >= '0' && *p <= '9')
            v = strtol(p, &end, 10);
        if (v < 1 || v > 65535)
            goto bad;
        p = end;
        if (p[0] == '(') {
            if (p[1] != 'x' || p[2] < '1' || p[2] > '9')
                goto bad;
            rep = strtol(p + 2, &end, 10);
            if (*end != ')' || rep > RF_HOSTLIST_MAX)
                goto bad;
            p = end + 1;
        }
        if (*p != ',' && *p != '\0')
            goto bad;
        if (nc + (size_t)rep > RF_HOSTLIST_MAX)
            goto bad;
        int *g = realloc(c, (nc + (size_t)rep) * sizeof *g);
        if (!g) {
            free(c);
            return rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory", what);
        }
        c = g;
        for (long i = 0; i < rep; i++)
            c[nc++] = (int)v;
        if (*p == '\0')
            break;
        p++;
    }
    *counts = c;
    *n = nc;
    return RF_OK;
bad:
    free(c);
    return rf_error_set(RF_ERR_INVALID_ARG,
                        "%s \"%s\": malformed at offset %zu (expected counts "
                        "like \"2(x3),1\": N or N(xM), N in 1-65535, "
                        "separated by commas)",
                        what, cl_quote(text, strlen(text), q),
                        (size_t)(p - text));
}
