/* core/escape.c: C-style escaping of untrusted text for printing
 * (rdmaflow/escape.h), the one escaper every tool, error message and log
 * line uses. */
#include "rdmaflow/escape.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

size_t rf_utf8_seq(const char *text, size_t left, uint32_t *cp)
{
    const unsigned char *s = (const unsigned char *)text;
    if (left == 0)
        return 0;
    unsigned char c = s[0];
    size_t n;
    uint32_t v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if ((c & 0xe0) == 0xc0) {
        n = 2, v = c & 0x1f, min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
        n = 3, v = c & 0x0f, min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
        n = 4, v = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (n > left)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        v = v << 6 | (s[i] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return n;
}

/* Appends the n bytes at s to buf when they fit whole (an escape is never
 * cut); counts them in *total either way. */
static void put(char *buf, size_t len, size_t *used, bool *full, size_t *total,
                const char *s, size_t n)
{
    *total += n;
    if (*full || *used + n >= len) {
        *full = true;
        return;
    }
    memcpy(buf + *used, s, n);
    *used += n;
}

size_t rf_escape(char *buf, size_t len, const char *text, size_t n,
                 rf_escape_mode mode)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)text;
    size_t used = 0, total = 0, i = 0;
    bool full = buf == NULL || len == 0;
    while (i < n) {
        uint32_t cp;
        size_t k = rf_utf8_seq(text + i, n - i, &cp);
        char esc[8];
        if (k == 1 && cp == '\n') {
            put(buf, len, &used, &full, &total, "\\n", 2);
        } else if (k == 1 && cp == '\t') {
            put(buf, len, &used, &full, &total, "\\t", 2);
        } else if (k == 1 && cp == '\r') {
            put(buf, len, &used, &full, &total, "\\r", 2);
        } else if (k == 1 && (cp == '\\' || cp == '"') &&
                   mode == RF_ESCAPE_ALL) {
            esc[0] = '\\', esc[1] = (char)cp;
            put(buf, len, &used, &full, &total, esc, 2);
        } else if (k == 0 || cp < 0x20 || cp == 0x7f ||
                   (cp >= 0x80 && cp <= 0x9f)) {
            /* a control or an invalid byte; a C1 control is its 2 bytes */
            size_t bytes = k ? k : 1;
            for (size_t b = 0; b < bytes; b++) {
                esc[0] = '\\', esc[1] = 'x';
                esc[2] = hex[p[i + b] >> 4], esc[3] = hex[p[i + b] & 15];
                put(buf, len, &used, &full, &total, esc, 4);
            }
            i += bytes;
            continue;
        } else {
            put(buf, len, &used, &full, &total, (const char *)p + i, k);
        }
        i += k;
    }
    if (buf && len)
        buf[used] = '\0';
    return total;
}

char *rf_escape_dup(const char *text)
{
    if (!text)
        text = "(null)";
    size_t n = strlen(text);
    size_t need = rf_escape(NULL, 0, text, n, RF_ESCAPE_ALL);
    char *out = malloc(need + 1);
    if (out)
        rf_escape(out, need + 1, text, n, RF_ESCAPE_ALL);
    return out;
}

/* rf_esc's strings: RF_ESC_SLOTS per thread, reused in turn, freed by the
 * key's destructor at the thread's exit. */
typedef struct esc_ring {
    char *s[RF_ESC_SLOTS];
    unsigned next;
} esc_ring;
static pthread_key_t ring_key;
static pthread_once_t ring_once = PTHREAD_ONCE_INIT;

static void ring_free(void *p)
{
    esc_ring *r = p;
    for (int i = 0; i < RF_ESC_SLOTS; i++)
        free(r->s[i]);
    free(r);
}

static void ring_init(void)
{
    (void)pthread_key_create(&ring_key, ring_free);
}

const char *rf_esc(const char *text)
{
    pthread_once(&ring_once, ring_init);
    esc_ring *r = pthread_getspecific(ring_key);
    if (!r) {
        r = calloc(1, sizeof *r);
        if (!r || pthread_setspecific(ring_key, r) != 0) {
            free(r);
            return "(out of memory)";
        }
    }
    char *s = rf_escape_dup(text);
    if (!s)
        return "(out of memory)";
    unsigned i = r->next++ % RF_ESC_SLOTS;
    free(r->s[i]);
    r->s[i] = s;
    return s;
}

int rf_fputs_escaped(const char *text, FILE *fp)
{
    char buf[512];
    size_t n = strlen(text);
    /* in pieces of at most 120 bytes (480 escaped) that end where the
     * whole text's escaping would step, so a piece never cuts a UTF-8
     * sequence and the output is the same as one rf_escape's */
    while (n > 0) {
        size_t take = 0;
        while (take < n) {
            uint32_t cp;
            size_t k = rf_utf8_seq(text + take, n - take, &cp);
            k = k ? k : 1;
            if (take + k > 120)
                break;
            take += k;
        }
        rf_escape(buf, sizeof buf, text, take, RF_ESCAPE_ALL);
        if (fputs(buf, fp) == EOF)
            return EOF;
        text += take;
        n -= take;
    }
    return 0;
}
