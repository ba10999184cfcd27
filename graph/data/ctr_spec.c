/* graph/data/ctr_spec.c: the click-through data set's spec
 * (rdmaflow/ctr_data.h): its default, range checks, and the compact text
 * form "name=value;..." parsed for a command-line flag and written back. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/ctr_data.h"

#define DEFAULT_ZIPF 1.1

void rf_ctr_spec_default(rf_ctr_spec *spec)
{
    static const int64_t vocab[] = {1000,     10000, 100000, 1000000,
                                    10000000, 1000,  100000, 1000000000};
    memset(spec, 0, sizeof *spec);
    spec->seed = 1;
    spec->num_cat = sizeof vocab / sizeof vocab[0];
    for (uint32_t f = 0; f < RF_CTR_MAX_CAT; f++) {
        spec->vocab[f] = f < spec->num_cat ? vocab[f] : 0;
        spec->zipf[f] = DEFAULT_ZIPF;
    }
    spec->num_dense = 4;
    spec->head = 200;
    spec->cat_scale = 0.5;
    spec->tail_scale = 0.05;
    spec->dense_scale = 0.5;
    spec->bias = -1.5;
    spec->train_size = 1000000;
    spec->test_size = 100000;
}

__attribute__((format(printf, 2, 3))) static rf_status bad(const char *field,
                                                           const char *fmt, ...)
{
    char why[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return rf_error_set(RF_ERR_INVALID_ARG, "ctr spec: %s: %s", field, why);
}

static int real_ok(double x, double lo, double hi)
{
    return isfinite(x) && x >= lo && x <= hi;
}

rf_status rf_ctr_spec_check(const rf_ctr_spec *spec)
{
    if (!spec)
        return rf_error_set(RF_ERR_INVALID_ARG, "ctr spec: NULL");
    if (spec->num_cat > RF_CTR_MAX_CAT)
        return bad("vocab", "%u features, at most %d", spec->num_cat,
                   RF_CTR_MAX_CAT);
    if (spec->num_dense > RF_CTR_MAX_DENSE)
        return bad("dense", "%u features, at most %d", spec->num_dense,
                   RF_CTR_MAX_DENSE);
    if (spec->num_cat + spec->num_dense == 0)
        return bad("vocab", "no categorical and no dense features");
    for (uint32_t f = 0; f < spec->num_cat; f++) {
        if (spec->vocab[f] < 1 || spec->vocab[f] > RF_CTR_MAX_VOCAB)
            return bad("vocab", "%lld (feature %u) is outside [1, 1e9]",
                       (long long)spec->vocab[f], f);
        if (!real_ok(spec->zipf[f], 0.0, 10.0) || spec->zipf[f] == 0.0)
            return bad("zipf", "%g (feature %u) is outside (0, 10]",
                       spec->zipf[f], f);
    }
    if (spec->head < 0)
        return bad("head", "%lld is negative", (long long)spec->head);
    const struct {
        const char *name;
        double x, lo, hi;
    } reals[] = {{"scale", spec->cat_scale, 0, 100},
                 {"tail", spec->tail_scale, 0, 100},
                 {"dense_scale", spec->dense_scale, 0, 100},
                 {"bias", spec->bias, -100, 100}};
    for (size_t k = 0; k < sizeof reals / sizeof reals[0]; k++)
        if (!real_ok(reals[k].x, reals[k].lo, reals[k].hi))
            return bad(reals[k].name, "%g is outside [%g, %g]", reals[k].x,
                       reals[k].lo, reals[k].hi);
    const struct {
        const char *name;
        uint64_t n;
    } sizes[] = {{"train", spec->train_size}, {"test", spec->test_size}};
    for (size_t k = 0; k < 2; k++)
        if (sizes[k].n < 1 || sizes[k].n > RF_CTR_MAX_SIZE)
            return bad(sizes[k].name, "%llu examples is outside [1, 2^40]",
                       (unsigned long long)sizes[k].n);
    return RF_OK;
}

/* An unsigned integer, written plainly (decimal or 0x hex) or, if
 * allow_exp, as a real such as 1e7 that is an integer. */
static rf_status parse_uint(const char *field, const char *s, int allow_exp,
                            uint64_t max, uint64_t *out)
{
    if (!*s)
        return bad(field, "empty value");
    if (!isdigit((unsigned char)s[0]))
        return bad(field, "'%s' is not a non-negative integer", s);
    char *end;
    errno = 0;
    unsigned long long u = strtoull(s, &end, 0);
    if (*end && allow_exp) {
        double d = strtod(s, &end);
        if (*end || !(d >= 0 && d <= 1.8e19) || d != floor(d))
            return bad(field, "'%s' is not an integer", s);
        if (d > (double)max)
            return bad(field, "'%s' is too large", s);
        *out = (uint64_t)d;
        return RF_OK;
    }
    if (*end)
        return bad(field, "'%s' is not an integer", s);
    if (errno == ERANGE || u > max)
        return bad(field, "'%s' is too large", s);
    *out = u;
    return RF_OK;
}

static rf_status parse_real(const char *field, const char *s, double *out)
{
    char *end;
    if (!*s)
        return bad(field, "empty value");
    double d = strtod(s, &end);
    if (*end || !isfinite(d))
        return bad(field, "'%s' is not a finite number", s);
    *out = d;
    return RF_OK;
}

/* Splits a comma-separated list in place; at most max items. */
static rf_status split_list(const char *field, char *s, char **items,
                            size_t max, size_t *n)
{
    *n = 0;
    if (!*s)
        return RF_OK;
    for (char *p = s;;) {
        char *comma = strchr(p, ',');
        if (*n == max)
            return bad(field, "more than %zu values", max);
        if (comma)
            *comma = '\0';
        items[(*n)++] = p;
        if (!comma)
            break;
        p = comma + 1;
    }
    return RF_OK;
}

static rf_status parse_into(char *text, rf_ctr_spec *w)
{
    static const char *const names[] = {
        "vocab", "zipf",  "dense", "seed",        "head", "train",
        "test",  "scale", "tail",  "dense_scale", "bias"};
    enum { NNAMES = sizeof names / sizeof names[0] };
    int seen[NNAMES] = {0};
    double zipf[RF_CTR_MAX_CAT];
    size_t nzipf = 0;
    rf_status st = RF_OK;
    char *save = NULL;
    for (char *tok = strtok_r(text, ";", &save); tok && st == RF_OK;
         tok = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "ctr spec: '%s' is not NAME=VALUE", tok);
        *eq = '\0';
        const char *val = eq + 1;
        int k = 0;
        while (k < NNAMES && strcmp(names[k], tok) != 0)
            k++;
        if (k == NNAMES)
            return rf_error_set(
                RF_ERR_INVALID_ARG,
                "ctr spec: unknown field '%s' (known: vocab, zipf, dense, "
                "seed, head, train, test, scale, tail, dense_scale, bias)",
                tok);
        if (seen[k]++)
            return rf_error_set(RF_ERR_INVALID_ARG, "ctr spec: %s: given twice",
                                tok);
        uint64_t u = 0;
        switch (k) {
        case 0: /* vocab */
        case 1: /* zipf */ {
            char *items[RF_CTR_MAX_CAT];
            size_t n;
            st = split_list(tok, eq + 1, items, RF_CTR_MAX_CAT, &n);
            for (size_t i = 0; i < n && st == RF_OK; i++) {
                if (k == 0) {
                    st = parse_uint(tok, items[i], 1, RF_CTR_MAX_VOCAB, &u);
                    w->vocab[i] = (int64_t)u;
                    if (st == RF_OK && u < 1)
                        st = bad(tok, "0 is outside [1, 1e9]");
                } else {
                    st = parse_real(tok, items[i], &zipf[i]);
                    if (st == RF_OK && !(zipf[i] > 0 && zipf[i] <= 10))
                        st = bad(tok, "'%s' is outside (0, 10]", items[i]);
                }
            }
            if (k == 0)
                w->num_cat = (uint32_t)n;
            else if (n == 0 && st == RF_OK)
                st = bad(tok, "no exponent");
            else
                nzipf = n;
            break;
        }
        case 2:
            st = parse_uint(tok, val, 0, RF_CTR_MAX_DENSE, &u);
            w->num_dense = (uint32_t)u;
            break;
        case 3:
            st = parse_uint(tok, val, 0, UINT64_MAX, &w->seed);
            break;
        case 4:
            st = parse_uint(tok, val, 1, INT64_MAX, &u);
            w->head = (int64_t)u;
            break;
        case 5:
        case 6:
            st = parse_uint(tok, val, 1, RF_CTR_MAX_SIZE, &u);
            if (st == RF_OK && u == 0)
                st = bad(tok, "0 examples");
            *(k == 5 ? &w->train_size : &w->test_size) = u;
            break;
        default:
            st = parse_real(tok, val,
                            k == 7   ? &w->cat_scale
                            : k == 8 ? &w->tail_scale
                            : k == 9 ? &w->dense_scale
                                     : &w->bias);
        }
    }
    if (st != RF_OK)
        return st;
    if (nzipf == 1) {
        for (uint32_t f = 0; f < RF_CTR_MAX_CAT; f++)
            w->zipf[f] = zipf[0];
    } else if (nzipf > 1) {
        if (nzipf != w->num_cat) {
            return bad("zipf",
                       "%zu exponents for %u vocabularies (give one, or one "
                       "per vocabulary)",
                       nzipf, w->num_cat);
        }
        for (size_t f = 0; f < nzipf; f++)
            w->zipf[f] = zipf[f];
    }
    return rf_ctr_spec_check(w);
}

rf_status rf_ctr_spec_parse(const char *text, rf_ctr_spec *spec)
{
    if (!text || !spec)
        return rf_error_set(RF_ERR_INVALID_ARG, "ctr spec: NULL argument");
    char *copy = strdup(text);
    if (!copy)
        return rf_error_set(RF_ERR_NO_MEMORY, "ctr spec: copying the text");
    rf_ctr_spec w;
    rf_ctr_spec_default(&w);
    rf_status st = parse_into(copy, &w);
    free(copy);
    if (st == RF_OK)
        *spec = w;
    return st;
}

/* The shortest of %.15g, %.16g, %.17g that reads back as x. */
static void real_text(double x, char *out, size_t size)
{
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(out, size, "%.*g", digits, x);
        if (strtod(out, NULL) == x)
            return;
    }
}

rf_status rf_ctr_spec_format(const rf_ctr_spec *spec, char *buf, size_t size)
{
    rf_status st = rf_ctr_spec_check(spec);
    if (st != RF_OK)
        return st;
    char r[5][32];
    real_text(spec->cat_scale, r[0], sizeof r[0]);
    real_text(spec->tail_scale, r[1], sizeof r[1]);
    real_text(spec->dense_scale, r[2], sizeof r[2]);
    real_text(spec->bias, r[3], sizeof r[3]);
    size_t at = 0;
#define PUT(...)                                                               \
    do {                                                                       \
        int n_ = snprintf(buf + at, at < size ? size - at : 0, __VA_ARGS__);   \
        at += n_ > 0 ? (size_t)n_ : 0;                                         \
    } while (0)
    PUT("seed=%llu;vocab=", (unsigned long long)spec->seed);
    for (uint32_t f = 0; f < spec->num_cat; f++)
        PUT("%s%lld", f ? "," : "", (long long)spec->vocab[f]);
    if (spec->num_cat > 0) {
        PUT(";zipf=");
        for (uint32_t f = 0; f < spec->num_cat; f++) {
            real_text(spec->zipf[f], r[4], sizeof r[4]);
            PUT("%s%s", f ? "," : "", r[4]);
        }
    }
    PUT(";dense=%u;head=%lld;scale=%s;tail=%s;dense_scale=%s;"
        "bias=%s;train=%llu;test=%llu",
        spec->num_dense, (long long)spec->head, r[0], r[1], r[2], r[3],
        (unsigned long long)spec->train_size,
        (unsigned long long)spec->test_size);
#undef PUT
    if (at >= size)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ctr_spec_format: %zu bytes needed, %zu given",
                            at + 1, size);
    return RF_OK;
}
