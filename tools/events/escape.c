/* tools/events/escape.c: text from an event file (tags, version strings)
 * and from a directory listing (file names) is untrusted: a tag holding
 * "\x1b[2J" must not clear the terminal it is printed to. The text form
 * escapes what a terminal would act on; the JSON form is valid UTF-8
 * (json-c escapes the controls below 0x20 itself) with DEL and the C1
 * controls escaped too. Not a general-purpose escaper: only what rf-events
 * prints. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "events_tool.h"

/* The length of the valid UTF-8 sequence at s (1..4) and its code point,
 * or 0 when s does not start one (a stray continuation byte, an overlong
 * form, a surrogate, above U+10FFFF, cut short). */
static size_t utf8_seq(const unsigned char *s, uint32_t *cp)
{
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
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) /* also the terminating NUL */
            return 0;
        v = v << 6 | (s[i] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return n;
}

void ev_put_escaped(FILE *fp, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        uint32_t cp;
        size_t n = utf8_seq(p, &cp);
        if (n == 0 || cp < 0x20 || cp == 0x7f) {
            fprintf(fp, "\\x%02x", *p);
            p++;
        } else if (cp == '\\') {
            fputs("\\\\", fp);
            p++;
        } else if (cp >= 0x80 && cp <= 0x9f) {
            fprintf(fp, "\\u%04x", (unsigned)cp);
            p += n;
        } else {
            fwrite(p, 1, n, fp);
            p += n;
        }
    }
}

char *ev_utf8_clean(const char *s)
{
    size_t len = strlen(s);
    /* each byte becomes at most the 3 bytes of U+FFFD */
    char *out = malloc(3 * len + 1), *o = out;
    if (!out)
        return NULL;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        uint32_t cp;
        size_t n = utf8_seq(p, &cp);
        if (n == 0) {
            memcpy(o, "\xef\xbf\xbd", 3);
            o += 3;
            p++;
        } else {
            memcpy(o, p, n);
            o += n;
            p += n;
        }
    }
    *o = '\0';
    return out;
}

void ev_put_json(FILE *fp, const char *json)
{
    const unsigned char *p = (const unsigned char *)json;
    for (; *p; p++) {
        if (*p == 0x7f) {
            fputs("\\u007f", fp);
        } else if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
            fprintf(fp, "\\u%04x", (unsigned)p[1]);
            p++;
        } else {
            fputc(*p, fp);
        }
    }
}
