/* core/strbuf.h: appending formatted text to a caller's fixed buffer with
 * snprintf's contract for the whole: the text is cut to fit (always
 * NUL-terminated when len > 0, buf may be NULL with len 0) and total counts
 * what the whole text would need, so a formatter built from several
 * appends can still return what snprintf would. Private to the layers. */
#ifndef RF_CORE_STRBUF_H
#define RF_CORE_STRBUF_H

#include <stddef.h>

typedef struct rf_strbuf {
    char *buf;
    size_t len;  /* capacity, NUL included */
    size_t used; /* bytes written, at most len - 1 */
    int total;   /* bytes the whole text needs, NUL excluded */
} rf_strbuf;

static inline rf_strbuf rf_strbuf_make(char *buf, size_t len)
{
    if (buf && len)
        buf[0] = '\0';
    return (rf_strbuf){.buf = buf, .len = buf ? len : 0};
}

void rf_strbuf_printf(rf_strbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
