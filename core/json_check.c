/* core/json_check.c: a strict second pass over JSON text for what json-c
 * lets through and other readers would read differently (core/json_check.h):
 * a recursive walk of RFC 8259's grammar that decodes every key to compare
 * the keys of each object. */
#include "core/json_check.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/env.h"
#include "rdmaflow/escape.h"

#define MAX_DEPTH 64

typedef struct walk {
    const char *s, *p, *end;
    rf_status status;
    const char *what;
    bool failed;
} walk;

typedef struct key {
    char *s;
    size_t n, off;
} key;

__attribute__((format(printf, 2, 3))) static bool bad(walk *w, const char *fmt,
                                                      ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!w->failed)
        rf_error_set(w->status, "%s: %s (at byte %zu)", w->what, msg,
                     (size_t)(w->p - w->s));
    w->failed = true;
    return false;
}

static void skip_ws(walk *w)
{
    while (w->p < w->end &&
           (*w->p == ' ' || *w->p == '\t' || *w->p == '\n' || *w->p == '\r'))
        w->p++;
}

static int hex4(const char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return -1;
        v = v << 4 | d;
    }
    return v;
}

static void put_utf8(char *o, size_t *n, uint32_t cp)
{
    if (cp < 0x80) {
        o[(*n)++] = (char)cp;
    } else if (cp < 0x800) {
        o[(*n)++] = (char)(0xc0 | cp >> 6);
        o[(*n)++] = (char)(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        o[(*n)++] = (char)(0xe0 | cp >> 12);
        o[(*n)++] = (char)(0x80 | (cp >> 6 & 0x3f));
        o[(*n)++] = (char)(0x80 | (cp & 0x3f));
    } else {
        o[(*n)++] = (char)(0xf0 | cp >> 18);
        o[(*n)++] = (char)(0x80 | (cp >> 12 & 0x3f));
        o[(*n)++] = (char)(0x80 | (cp >> 6 & 0x3f));
        o[(*n)++] = (char)(0x80 | (cp & 0x3f));
    }
}

/* A string at w->p ('"'); its decoded bytes in out (the caller frees it;
 * NULL out: only checked). */
static bool string(walk *w, key *out)
{
    const char *start = ++w->p;
    char *buf = NULL;
    size_t n = 0;
    if (out) {
        /* the decoded form is never longer than the raw one: up to the
         * first quote that no backslash escapes */
        const char *q = start;
        while (q < w->end && *q != '"')
            q += *q == '\\' && q + 1 < w->end ? 2 : 1;
        buf = malloc((size_t)(q - start) + 1);
        if (!buf)
            return bad(w, "out of memory");
    }
    while (w->p < w->end && *w->p != '"') {
        unsigned char c = (unsigned char)*w->p;
        uint32_t cp;
        if (c < 0x20) {
            free(buf);
            return bad(w, "a raw control byte 0x%02x in a string", c);
        }
        if (c != '\\') {
            size_t k = rf_utf8_seq(w->p, (size_t)(w->end - w->p), &cp);
            if (k == 0) {
                free(buf);
                return bad(w, "a byte 0x%02x that is not UTF-8 in a string", c);
            }
            if (buf)
                memcpy(buf + n, w->p, k);
            n += k;
            w->p += k;
            continue;
        }
        if (w->end - w->p < 2) {
            free(buf);
            return bad(w, "a string cut short");
        }
        char e = w->p[1];
        const char *simple = strchr("\"\\/bfnrt", e);
        if (e && simple) {
            static const char to[] = "\"\\/\b\f\n\r\t";
            if (buf)
                buf[n] = to[simple - "\"\\/bfnrt"];
            n++;
            w->p += 2;
            continue;
        }
        int v = e == 'u' && w->end - w->p >= 6 ? hex4(w->p + 2) : -1;
        if (v < 0) {
            free(buf);
            return bad(w, "a bad escape in a string");
        }
        cp = (uint32_t)v;
        w->p += 6;
        if (cp >= 0xd800 && cp <= 0xdbff) {
            int lo = w->end - w->p >= 6 && w->p[0] == '\\' && w->p[1] == 'u'
                         ? hex4(w->p + 2)
                         : -1;
            if (lo < 0xdc00 || lo > 0xdfff) {
                free(buf);
                return bad(w, "an unpaired surrogate \\u%04x in a string",
                           (unsigned)cp);
            }
            cp = 0x10000 + ((cp - 0xd800) << 10) + ((uint32_t)lo - 0xdc00);
            w->p += 6;
        } else if (cp >= 0xdc00 && cp <= 0xdfff) {
            free(buf);
            return bad(w, "an unpaired surrogate \\u%04x in a string",
                       (unsigned)cp);
        } else if (cp == 0) {
            free(buf);
            return bad(w, "a NUL (\\u0000) in a string");
        }
        if (buf)
            put_utf8(buf, &n, cp);
        else
            n += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    }
    if (w->p >= w->end) {
        free(buf);
        w->p = start - 1;
        return bad(w, "a string without its closing quote");
    }
    w->p++;
    if (out) {
        buf[n] = '\0';
        *out = (key){.s = buf, .n = n, .off = (size_t)(start - 1 - w->s)};
    }
    return true;
}

static bool number(walk *w)
{
    const char *start = w->p, *q = w->p;
    bool integer = true;
    if (q < w->end && *q == '-')
        q++;
    if (q < w->end && *q == '0') {
        q++;
    } else if (q < w->end && *q >= '1' && *q <= '9') {
        while (q < w->end && *q >= '0' && *q <= '9')
            q++;
    } else {
        return bad(w, "not a JSON value");
    }
    if (q < w->end && *q == '.') {
        integer = false;
        if (++q >= w->end || *q < '0' || *q > '9')
            return bad(w, "a number without digits after its '.'");
        while (q < w->end && *q >= '0' && *q <= '9')
            q++;
    }
    if (q < w->end && (*q == 'e' || *q == 'E')) {
        integer = false;
        q++;
        if (q < w->end && (*q == '+' || *q == '-'))
            q++;
        if (q >= w->end || *q < '0' || *q > '9')
            return bad(w, "a number without digits in its exponent");
        while (q < w->end && *q >= '0' && *q <= '9')
            q++;
    }
    char num[64];
    size_t len = (size_t)(q - start);
    if (len >= sizeof num && integer)
        return bad(w, "the integer %.20s... is out of range", start);
    if (len < sizeof num) {
        memcpy(num, start, len);
        num[len] = '\0';
        errno = 0;
        if (integer)
            (void)strtoll(num, NULL, 10);
        double d = integer ? 0 : strtod(num, NULL);
        if (errno == ERANGE && (integer || isinf(d)))
            return bad(w, "the number %s is out of range", num);
    } else {
        /* a long fraction or exponent: strtod on a copy */
        char *copy = strndup(start, len);
        if (!copy)
            return bad(w, "out of memory");
        double d = strtod(copy, NULL);
        free(copy);
        if (isinf(d))
            return bad(w, "a number out of range");
    }
    w->p = q;
    return true;
}

static int key_cmp(const void *a, const void *b)
{
    const key *x = a, *y = b;
    if (x->n != y->n)
        return x->n < y->n ? -1 : 1;
    int c = memcmp(x->s, y->s, x->n);
    if (c)
        return c;
    return x->off < y->off ? -1 : x->off > y->off;
}

static bool value(walk *w, int depth);

static bool object(walk *w, int depth)
{
    key *keys = NULL;
    size_t n = 0, cap = 0;
    bool ok = true;
    w->p++;
    skip_ws(w);
    if (w->p < w->end && *w->p == '}') {
        w->p++;
        return true;
    }
    for (;;) {
        skip_ws(w);
        if (w->p >= w->end || *w->p != '"') {
            ok = bad(w, "an object key that is not a \"string\"");
            break;
        }
        if (n == cap) {
            size_t nc = cap ? 2 * cap : 8;
            key *k = realloc(keys, nc * sizeof *k);
            if (!k) {
                ok = bad(w, "out of memory");
                break;
            }
            keys = k, cap = nc;
        }
        if (!(ok = string(w, &keys[n])))
            break;
        n++;
        skip_ws(w);
        if (w->p >= w->end || *w->p != ':') {
            ok = bad(w, "no ':' after an object key");
            break;
        }
        w->p++;
        if (!(ok = value(w, depth + 1)))
            break;
        skip_ws(w);
        if (w->p < w->end && *w->p == ',') {
            w->p++;
            continue;
        }
        if (w->p < w->end && *w->p == '}') {
            w->p++;
            break;
        }
        ok = bad(w, "no ',' or '}' after an object member");
        break;
    }
    if (ok && n > 1) {
        qsort(keys, n, sizeof *keys, key_cmp);
        for (size_t i = 1; i < n; i++)
            if (keys[i].n == keys[i - 1].n &&
                !memcmp(keys[i].s, keys[i - 1].s, keys[i].n)) {
                rf_error_set(w->status,
                             "%s: the key \"%s\" is in one object twice, "
                             "at bytes %zu and %zu",
                             w->what, RF_ECHO(keys[i].s), keys[i - 1].off,
                             keys[i].off);
                w->failed = true;
                ok = false;
                break;
            }
    }
    for (size_t i = 0; i < n; i++)
        free(keys[i].s);
    free(keys);
    return ok;
}

static bool array(walk *w, int depth)
{
    w->p++;
    skip_ws(w);
    if (w->p < w->end && *w->p == ']') {
        w->p++;
        return true;
    }
    for (;;) {
        if (!value(w, depth + 1))
            return false;
        skip_ws(w);
        if (w->p < w->end && *w->p == ',') {
            w->p++;
            continue;
        }
        if (w->p < w->end && *w->p == ']') {
            w->p++;
            return true;
        }
        return bad(w, "no ',' or ']' after an array element");
    }
}

static bool literal(walk *w, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(w->end - w->p) < n || memcmp(w->p, word, n))
        return bad(w, "not a JSON value");
    w->p += n;
    return true;
}

static bool value(walk *w, int depth)
{
    if (depth > MAX_DEPTH)
        return bad(w, "nested more than %d deep", MAX_DEPTH);
    skip_ws(w);
    if (w->p >= w->end)
        return bad(w, "a value missing");
    switch (*w->p) {
    case '{':
        return object(w, depth);
    case '[':
        return array(w, depth);
    case '"':
        return string(w, NULL);
    case 't':
        return literal(w, "true");
    case 'f':
        return literal(w, "false");
    case 'n':
        return literal(w, "null");
    default:
        return number(w);
    }
}

rf_status rf_json_check(const char *text, size_t len, rf_status status,
                        const char *what)
{
    walk w = {.s = text,
              .p = text,
              .end = text + len,
              .status = status,
              .what = what};
    if (!value(&w, 0))
        return status;
    skip_ws(&w);
    if (w.p != w.end) {
        bad(&w, "text after the JSON value");
        return status;
    }
    return RF_OK;
}
