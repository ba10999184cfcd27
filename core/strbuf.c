/* core/strbuf.c: formatted appends to a fixed buffer (core/strbuf.h). */
#include "core/strbuf.h"

#include <stdarg.h>
#include <stdio.h>

void rf_strbuf_printf(rf_strbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->used < b->len ? b->len - b->used : 0;
    int w = vsnprintf(room ? b->buf + b->used : NULL, room, fmt, ap);
    va_end(ap);
    if (w < 0)
        return;
    b->total += w;
    b->used = b->used + (size_t)w < b->len ? b->used + (size_t)w
                                           : (b->len ? b->len - 1 : 0);
}
