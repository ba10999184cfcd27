/* tools/events/escape.c: text from an event file (tags, version strings)
 * and from a directory listing (file names) is untrusted: a tag holding
 * "\x1b[2J" must not clear the terminal it is printed to. The text form
 * goes through the library's rf_esc (rdmaflow/escape.h); the JSON form here
 * is valid UTF-8 (json-c escapes the controls below 0x20 itself) with DEL
 * and the C1 controls escaped too. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "events_tool.h"
#include "rdmaflow/escape.h"

char *ev_utf8_clean(const char *s)
{
    size_t len = strlen(s);
    /* each byte becomes at most the 3 bytes of U+FFFD */
    char *out = malloc(3 * len + 1), *o = out;
    if (!out)
        return NULL;
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    while (*p) {
        uint32_t cp;
        size_t n = rf_utf8_seq((const char *)p, (size_t)(end - p), &cp);
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
