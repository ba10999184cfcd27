/* tools/ckpt/diff.c: rf-ckpt diff A B: the tensors only in one, dtype and
 * shape differences, and for tensors of equal dtype and shape the number of
 * elements that differ beyond atol + rtol * |b| and the largest absolute
 * difference. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ckpt_tool.h"

/* Element k of e as a double (data may be unaligned). */
static double elem(const rf_ckpt_entry *e, size_t k)
{
    const unsigned char *p = e->t.data;
    switch (e->t.dtype) {
    case RF_F32: {
        float f;
        memcpy(&f, p + 4 * k, 4);
        return f;
    }
    case RF_I32: {
        int32_t v;
        memcpy(&v, p + 4 * k, 4);
        return v;
    }
    case RF_I64: {
        int64_t v;
        memcpy(&v, p + 8 * k, 8);
        return (double)v;
    }
    case RF_BOOL:
        return p[k];
    }
    return 0;
}

/* Exact comparison for integers (a double loses int64 precision). */
static bool same_bits(const rf_ckpt_entry *a, const rf_ckpt_entry *b, size_t k)
{
    size_t es = rf_dtype_size(a->t.dtype);
    return !memcmp((const char *)a->t.data + es * k,
                   (const char *)b->t.data + es * k, es);
}

static bool compare(const rf_ckpt_entry *a, const rf_ckpt_entry *b, double rtol,
                    double atol)
{
    size_t n = a->t.bytes / rf_dtype_size(a->t.dtype), bad = 0;
    double maxd = 0;
    for (size_t k = 0; k < n; k++) {
        if (same_bits(a, b, k))
            continue;
        double x = elem(a, k), y = elem(b, k);
        if (isnan(x) && isnan(y))
            continue;
        double d = fabs(x - y);
        if (isnan(d))
            maxd = NAN; /* NaN against a number: the max stays NaN */
        else if (d > maxd)
            maxd = d;
        if (!(d <= atol + rtol * fabs(y)))
            bad++;
    }
    if (bad)
        printf("differs: %s: %zu of %zu elements, max abs difference %.9g\n",
               rf_esc(a->t.name), bad, n, maxd);
    return bad == 0;
}

int tool_diff(const char *pa, const char *pb, double rtol, double atol)
{
    rf_ckpt *a = tool_open(pa), *b = a ? tool_open(pb) : NULL;
    if (!a || !b) {
        rf_ckpt_close(a);
        return 1;
    }
    size_t differ = 0, same = 0;
    for (size_t i = 0; i < rf_ckpt_count(a); i++) {
        const rf_ckpt_entry *x = rf_ckpt_at(a, i);
        const rf_ckpt_entry *y = rf_ckpt_find(b, x->t.name);
        char sx[160], sy[160];
        rf_shape_format(&x->t.shape, sx, sizeof sx);
        if (!y) {
            printf("only in %s: %s\n", rf_esc(pa), rf_esc(x->t.name));
            differ++;
            continue;
        }
        rf_shape_format(&y->t.shape, sy, sizeof sy);
        if (x->t.dtype != y->t.dtype) {
            printf("dtype differs: %s: %s vs %s\n", rf_esc(x->t.name),
                   rf_dtype_name(x->t.dtype), rf_dtype_name(y->t.dtype));
            differ++;
        } else if (!rf_shape_equal(&x->t.shape, &y->t.shape)) {
            printf("shape differs: %s: %s vs %s\n", rf_esc(x->t.name), sx, sy);
            differ++;
        } else if (!compare(x, y, rtol, atol)) {
            differ++;
        } else {
            same++;
        }
    }
    for (size_t i = 0; i < rf_ckpt_count(b); i++)
        if (!rf_ckpt_find(a, rf_ckpt_at(b, i)->t.name)) {
            printf("only in %s: %s\n", rf_esc(pb),
                   rf_esc(rf_ckpt_at(b, i)->t.name));
            differ++;
        }
    if (differ)
        printf("%zu tensors differ, %zu equal (rtol %g, atol %g)\n", differ,
               same, rtol, atol);
    else
        printf("equal: %zu tensors (rtol %g, atol %g)\n", same, rtol, atol);
    rf_ckpt_close(a);
    rf_ckpt_close(b);
    return differ ? 1 : 0;
}
