/* core/flags.c: reads a command line through a flag table and prints the
 * table's help (rdmaflow/flags.h). The words of its messages are the
 * ones rf-bench used before it had a table ("-p/--port: 65536 is outside
 * [0, 65535]"), which its bad-input tests match. It never exits and never
 * prints an error. */
#include "rdmaflow/flags.h"

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/env.h"

#define HELP_COLUMN    22
#define TF_HELP_COLUMN 31 /* rf-trainer's layout */
#define HELP_WIDTH     79

/* "-p/--port", or "--port" for a row without an alias. */
static const char *flag_label(const rf_flag_row *row, char *buf, size_t len)
{
    if (row->alias)
        snprintf(buf, len, "-%c/--%s", row->alias, row->name);
    else
        snprintf(buf, len, "--%s", row->name);
    return buf;
}

static int set_error(rf_flag_error *err, rf_flag_error_kind kind,
                     const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int set_error(rf_flag_error *err, rf_flag_error_kind kind,
                     const char *fmt, ...)
{
    va_list ap;
    err->kind = kind;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return -1;
}

int rf_flags_fail(rf_flag_error *err, const char *fmt, ...)
{
    char label[96] = "";
    if (err->row)
        flag_label(err->row, label, sizeof label);
    int n = snprintf(err->message, sizeof err->message, "%s: ", label);
    if (n < 0 || (size_t)n >= sizeof err->message)
        n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message + n, sizeof err->message - (size_t)n, fmt, ap);
    va_end(ap);
    err->kind = RF_FLAG_ERR_BAD_VALUE;
    return -1;
}

/* Whole unsigned decimal number in [min, max]; with suffix a binary K, M
 * or G may follow. */
static int read_unsigned(const char *what, const char *text, uint64_t min,
                         uint64_t max, bool suffix, uint64_t *out,
                         rf_flag_error *err)
{
    rf_flag_error_kind k = RF_FLAG_ERR_BAD_VALUE;
    if (!*text || *text == '-' || *text == '+')
        return set_error(err, k, "%s: '%s' is not a non-negative number", what,
                         RF_ECHO(text));
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || end == text)
        return set_error(err, k, "%s: '%s' is not a number", what,
                         RF_ECHO(text));
    if (suffix && *end && !end[1]) {
        const char *units = strchr("KkMmGg", *end);
        if (!units)
            return set_error(err, k,
                             "%s: '%s' has an unknown suffix (K, M or G)", what,
                             RF_ECHO(text));
        unsigned shift = 10 * (unsigned)(1 + (units - "KkMmGg") / 2);
        if (v > (UINT64_MAX >> shift))
            return set_error(err, k, "%s: '%s' is too large", what,
                             RF_ECHO(text));
        v <<= shift;
        end++;
    }
    if (*end)
        return set_error(err, k, "%s: '%s' has trailing characters", what,
                         RF_ECHO(text));
    if (v < min || v > max)
        return set_error(err, k, "%s: %s is outside [%" PRIu64 ", %" PRIu64 "]",
                         what, RF_ECHO(text), min, max);
    *out = v;
    return 0;
}

int rf_flags_read_uint(const char *what, const char *text, uint64_t min,
                       uint64_t max, uint64_t *out, rf_flag_error *err)
{
    return read_unsigned(what, text, min, max, false, out, err);
}

static int read_signed(const char *what, const char *text, int64_t min,
                       int64_t max, int64_t *out, rf_flag_error *err)
{
    rf_flag_error_kind k = RF_FLAG_ERR_BAD_VALUE;
    errno = 0;
    char *end = NULL;
    long long v = *text ? strtoll(text, &end, 10) : 0;
    if (!*text || errno || end == text)
        return set_error(err, k, "%s: '%s' is not a number", what,
                         RF_ECHO(text));
    if (*end)
        return set_error(err, k, "%s: '%s' has trailing characters", what,
                         RF_ECHO(text));
    if (v < min || v > max)
        return set_error(err, k, "%s: %s is outside [%" PRId64 ", %" PRId64 "]",
                         what, RF_ECHO(text), min, max);
    *out = v;
    return 0;
}

/* An integer written as a real ("1e5", "100000.0"), in [min, max]. */
static int read_real_int(const char *what, const char *text, int64_t min,
                         int64_t max, int64_t *out, rf_flag_error *err)
{
    rf_flag_error_kind k = RF_FLAG_ERR_BAD_VALUE;
    char *end = NULL;
    double v = strtod(text, &end);
    if (end == text || *end)
        return set_error(err, k, "%s: '%s' is not a number", what,
                         RF_ECHO(text));
    if (!(v >= (double)min && v <= (double)max))
        return set_error(err, k, "%s: %s is outside [%" PRId64 ", %" PRId64 "]",
                         what, RF_ECHO(text), min, max);
    if (v != (double)(int64_t)v)
        return set_error(err, k, "%s: '%s' is not a whole number", what,
                         RF_ECHO(text));
    *out = (int64_t)v;
    return 0;
}

/* A FLOAT32 row's value: 0, or a normal float32 (a value that becomes 0
 * or infinity, or keeps only a few bits as a subnormal, would be used as
 * something else than what was asked). */
static int check_float32(const char *what, const char *text, double v,
                         rf_flag_error *err)
{
    float x = (float)v;
    if (v == 0 || (isfinite(x) && fabsf(x) >= FLT_MIN))
        return 0;
    return set_error(err, RF_FLAG_ERR_BAD_VALUE,
                     "%s: %s is out of range: it %s in float32 (the smallest "
                     "normal float32 is %g, the largest %g)",
                     what, RF_ECHO(text),
                     x == 0     ? "rounds to 0"
                     : isinf(x) ? "rounds to infinity"
                                : "is subnormal",
                     (double)FLT_MIN, (double)FLT_MAX);
}

static int read_double(const rf_flag_table *t, const rf_flag_row *row,
                       const char *what, const char *text, double *out,
                       rf_flag_error *err)
{
    rf_flag_error_kind k = RF_FLAG_ERR_BAD_VALUE;
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    /* absl: no "nan", "inf" or leading blank */
    bool tf_bad = t->tf_style && !strchr("+-.0123456789", *text);
    if (end == text || *end || tf_bad)
        return set_error(err, k, "%s: '%s' is not a number", what,
                         RF_ECHO(text));
    if (!t->tf_style && (!isfinite(v) || errno == ERANGE))
        return set_error(err, k, "%s: '%s' is not a finite number", what,
                         RF_ECHO(text));
    bool open = row->bits & RF_FLAG_MIN_OPEN;
    bool ranged = row->dmin != 0 || row->dmax != 0;
    bool outside =
        ranged && ((open ? v <= row->dmin : v < row->dmin) || v > row->dmax);
    if (t->tf_style && (outside || !isfinite(v) || errno == ERANGE))
        return set_error(err, k, "%s: %s is out of range %c%g, %g]", what,
                         RF_ECHO(text), open ? '(' : '[', row->dmin, row->dmax);
    if (outside)
        return set_error(err, k, "%s: %s is outside %c%g, %g]", what,
                         RF_ECHO(text), open ? '(' : '[', row->dmin, row->dmax);
    if ((row->bits & RF_FLAG_FLOAT32) && check_float32(what, text, v, err))
        return -1;
    *out = v;
    return 0;
}

/* tf_style: a signed decimal integer in [min, max], in absl's words. */
static int read_tf_int(const char *what, const char *text, int64_t min,
                       int64_t max, int64_t *out, rf_flag_error *err)
{
    rf_flag_error_kind k = RF_FLAG_ERR_BAD_VALUE;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (end == text || *end ||
        (*text != '-' && *text != '+' && (*text < '0' || *text > '9')))
        return set_error(err, k, "%s: '%s' is not an integer", what,
                         RF_ECHO(text));
    if (errno == ERANGE || v < min || v > max)
        return set_error(err, k,
                         "%s: %s is out of range [%" PRId64 ", %" PRId64 "]",
                         what, RF_ECHO(text), min, max);
    *out = v;
    return 0;
}

/* The range of an integer row: its own, or its type's. */
static void int_range(const rf_flag_row *row, int64_t *min, uint64_t *max)
{
    if (row->min != 0 || row->max != 0) {
        *min = row->min;
        *max = (uint64_t)row->max;
        return;
    }
    *min = row->type == RF_FLAG_TYPE_INT || row->type == RF_FLAG_TYPE_INT64
               ? (row->type == RF_FLAG_TYPE_INT ? INT32_MIN : INT64_MIN)
               : 0;
    *max = row->type == RF_FLAG_TYPE_INT      ? INT32_MAX
           : row->type == RF_FLAG_TYPE_UINT16 ? UINT16_MAX
           : row->type == RF_FLAG_TYPE_UINT32 ? UINT32_MAX
           : row->type == RF_FLAG_TYPE_INT64  ? INT64_MAX
                                              : UINT64_MAX;
}

/* An integer row's value. A range that starts at 0 or above is read as
 * an unsigned number (so "-1" is "not a non-negative number"); only a
 * SIZE row takes a suffix. */
static int read_integer(const rf_flag_table *t, const rf_flag_row *row,
                        const char *what, const char *text, rf_flag_error *err)
{
    int64_t min;
    uint64_t max;
    int_range(row, &min, &max);
    uint64_t u = 0;
    int64_t s = 0;
    if (t->tf_style) {
        int64_t hi = max > INT64_MAX ? INT64_MAX : (int64_t)max;
        if (read_tf_int(what, text, min, hi, &s, err))
            return -1;
        u = (uint64_t)s;
    } else if (row->bits & RF_FLAG_REAL_INT) {
        int64_t hi = max > INT64_MAX ? INT64_MAX : (int64_t)max;
        if (read_real_int(what, text, min, hi, &s, err))
            return -1;
        u = (uint64_t)s;
    } else if (min >= 0) {
        if (read_unsigned(what, text, (uint64_t)min, max,
                          row->type == RF_FLAG_TYPE_SIZE, &u, err))
            return -1;
        s = (int64_t)u;
    } else if (read_signed(what, text, min, (int64_t)max, &s, err)) {
        return -1;
    }
    switch (row->type) {
    case RF_FLAG_TYPE_INT:
        *(int *)row->dest = (int)s;
        break;
    case RF_FLAG_TYPE_INT64:
        *(int64_t *)row->dest = s;
        break;
    case RF_FLAG_TYPE_UINT16:
        *(uint16_t *)row->dest = (uint16_t)u;
        break;
    case RF_FLAG_TYPE_UINT32:
        *(uint32_t *)row->dest = (uint32_t)u;
        break;
    default: /* UINT64, SIZE */
        *(uint64_t *)row->dest = u;
        break;
    }
    return 0;
}

/* "a, b or c" (tf_style: "one of a, b, c") for the choices of a row. */
static void choice_list(const rf_flag_table *t, const rf_flag_choice *c,
                        char *buf, size_t len)
{
    size_t n = 0, count = 0;
    while (c[count].name)
        count++;
    buf[0] = '\0';
    for (size_t i = 0; i < count && n < len; i++) {
        const char *sep = i == 0 ? (t->tf_style ? "one of " : "")
                          : t->tf_style || i + 1 < count ? ", "
                                                         : " or ";
        int w = snprintf(buf + n, len - n, "%s%s", sep, c[i].name);
        if (w < 0)
            break;
        n += (size_t)w;
    }
}

static int read_choice(const rf_flag_table *t, const rf_flag_row *row,
                       const char *what, const char *text, rf_flag_error *err)
{
    for (const rf_flag_choice *c = row->choices; c && c->name; c++) {
        if (strcmp(c->name, text) != 0)
            continue;
        if (row->type == RF_FLAG_TYPE_ENUM)
            *(int *)row->dest = c->value;
        else
            *(const char **)row->dest = c->name;
        return 0;
    }
    char list[256];
    choice_list(t, row->choices, list, sizeof list);
    return set_error(err, RF_FLAG_ERR_BAD_VALUE, "%s: '%s' is not %s", what,
                     RF_ECHO(text), list);
}

/* Stores text (a value or the default) through row. */
static int apply_value(const rf_flag_table *t, const rf_flag_row *row,
                       const char *text, rf_flag_error *err)
{
    char what[96];
    flag_label(row, what, sizeof what);
    err->row = row;
    err->value = text;
    switch (row->type) {
    case RF_FLAG_TYPE_BOOL:
        if (!text || !strcmp(text, "true") ||
            (t->tf_style && !strcmp(text, "1"))) {
            *(bool *)row->dest = true;
            return 0;
        }
        if (!strcmp(text, "false") || (t->tf_style && !strcmp(text, "0"))) {
            *(bool *)row->dest = false;
            return 0;
        }
        return set_error(err, RF_FLAG_ERR_BAD_VALUE,
                         t->tf_style ? "%s: '%s' is not a boolean (true, "
                                       "false, 1, 0)"
                                     : "%s: '%s' is not true or false",
                         what, RF_ECHO(text));
    case RF_FLAG_TYPE_DOUBLE:
        return read_double(t, row, what, text, row->dest, err);
    case RF_FLAG_TYPE_STRING:
    case RF_FLAG_TYPE_BUFFER:
        if ((row->bits & RF_FLAG_NONEMPTY) && !*text)
            return set_error(err, RF_FLAG_ERR_BAD_VALUE, "%s: empty value",
                             what);
        if (row->type == RF_FLAG_TYPE_STRING) {
            *(const char **)row->dest = text;
            return 0;
        }
        if (strlen(text) >= row->size)
            return set_error(err, RF_FLAG_ERR_BAD_VALUE,
                             "%s: '%s' is longer than %zu bytes", what,
                             RF_ECHO(text), row->size - 1);
        memcpy(row->dest, text, strlen(text) + 1);
        return 0;
    case RF_FLAG_TYPE_ENUM:
    case RF_FLAG_TYPE_CHOICE:
        return read_choice(t, row, what, text, err);
    case RF_FLAG_TYPE_CALL:
        return row->call(row, text, t->ctx, err);
    default:
        return read_integer(t, row, what, text, err);
    }
}

static bool takes_value(const rf_flag_row *row)
{
    return row->type != RF_FLAG_TYPE_BOOL &&
           !(row->type == RF_FLAG_TYPE_CALL && (row->bits & RF_FLAG_NO_VALUE));
}

static int apply_defaults(const rf_flag_table *t, rf_flag_error *err)
{
    for (const rf_flag_row *row = t->rows; row->name; row++) {
        if (!row->def)
            continue;
        if (apply_value(t, row, row->def, err)) {
            char msg[sizeof err->message];
            memcpy(msg, err->message, sizeof msg);
            return set_error(err, RF_FLAG_ERR_DEFAULT, "the default of %s",
                             msg);
        }
    }
    return 0;
}

/* The row a long name (len bytes of name) stands for: exact, else the
 * unique row it abbreviates. Sets *negate for --noNAME. */
static const rf_flag_row *find_long(const rf_flag_table *t, const char *name,
                                    size_t len, bool *negate, bool *ambiguous)
{
    *negate = *ambiguous = false;
    for (const rf_flag_row *row = t->rows; row->name; row++)
        if (strlen(row->name) == len && !strncmp(row->name, name, len))
            return row;
    for (const rf_flag_row *row = t->rows; row->name; row++)
        if ((row->bits & RF_FLAG_NEGATABLE) && len > 2 &&
            !strncmp(name, "no", 2) && strlen(row->name) == len - 2 &&
            !strncmp(row->name, name + 2, len - 2)) {
            *negate = true;
            return row;
        }
    if (t->exact_names)
        return NULL;
    const rf_flag_row *found = NULL;
    for (const rf_flag_row *row = t->rows; row->name; row++) {
        if (strncmp(row->name, name, len) != 0)
            continue;
        /* two spellings of one flag are one candidate, as for getopt */
        if (found && (!found->dest || found->dest != row->dest ||
                      found->type != row->type)) {
            *ambiguous = true;
            return NULL;
        }
        if (!found)
            found = row;
    }
    return found;
}

static const rf_flag_row *find_alias(const rf_flag_table *t, char c)
{
    for (const rf_flag_row *row = t->rows; row->name; row++)
        if (row->alias == c)
            return row;
    return NULL;
}

/* Gives row its value (or none for a BOOL); returns RF_FLAGS_OK,
 * RF_FLAGS_STOPPED or -1. */
static int give(const rf_flag_table *t, const rf_flag_row *row,
                const char *value, bool negate, rf_flag_error *err)
{
    if (row->seen)
        *row->seen = true;
    if (row->type == RF_FLAG_TYPE_BOOL && !value)
        *(bool *)row->dest = !negate;
    else if (apply_value(t, row, value, err))
        return -1;
    if (t->given)
        t->given(row, t->ctx);
    if (row->type == RF_FLAG_TYPE_BOOL && (row->bits & RF_FLAG_STOPS))
        return RF_FLAGS_STOPPED;
    return RF_FLAGS_OK;
}

/* The value in the next argument, if there is one it may take. */
static const char *next_value(const rf_flag_table *t, int argc, char **argv,
                              int *i)
{
    if (*i + 1 >= argc || ((t->no_dashed_values || t->tf_style) &&
                           !strncmp(argv[*i + 1], "--", 2)))
        return NULL;
    return argv[++*i];
}

/* argv[*i] is "--NAME[=V]". */
static int parse_long(const rf_flag_table *t, int argc, char **argv, int *i,
                      rf_flag_error *err)
{
    const char *arg = argv[*i];
    const char *name = arg + 2, *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    bool negate, ambiguous;
    const rf_flag_row *row = find_long(t, name, len, &negate, &ambiguous);
    err->arg = arg;
    if (!row)
        return set_error(
            err, ambiguous ? RF_FLAG_ERR_AMBIGUOUS : RF_FLAG_ERR_UNKNOWN,
            ambiguous ? "option '%s' is ambiguous" : "unknown option '%s'",
            RF_ECHO(arg));
    err->row = row;
    if (!takes_value(row)) {
        if (eq)
            return set_error(err, RF_FLAG_ERR_EXTRA_VALUE,
                             "option '%s' takes no value", RF_ECHO(arg));
        return give(t, row, NULL, negate, err);
    }
    const char *value = eq ? eq + 1 : next_value(t, argc, argv, i);
    if (!value)
        return set_error(err, RF_FLAG_ERR_MISSING_VALUE,
                         "option '%s' needs a value", RF_ECHO(arg));
    return give(t, row, value, false, err);
}

/* tf_style: argv[*i] is "--NAME[=V]" with a NAME. */
static int parse_tf(const rf_flag_table *t, int argc, char **argv, int *i,
                    rf_flag_error *err)
{
    const char *arg = argv[*i];
    const char *name = arg + 2, *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    err->arg = arg;
    const rf_flag_row *row = NULL;
    for (const rf_flag_row *r = t->rows; r->name && !row; r++)
        if (strlen(r->name) == len && !strncmp(r->name, name, len))
            row = r;
    bool negate = false;
    for (const rf_flag_row *r = t->rows; r->name && !row && !eq; r++)
        if (len > 2 && !strncmp(name, "no", 2) && strlen(r->name) == len - 2 &&
            !strncmp(r->name, name + 2, len - 2))
            row = r, negate = true;
    /* a BOOL that cannot be negated has no --noNAME (--nohelp) */
    if (negate && row->type == RF_FLAG_TYPE_BOOL &&
        !(row->bits & RF_FLAG_NEGATABLE))
        row = NULL;
    if (!row)
        return set_error(err, RF_FLAG_ERR_UNKNOWN,
                         "--%.*s%s: unknown flag (see --help)",
                         len > RF_ECHO_MAX ? RF_ECHO_MAX : (int)len, name,
                         len > RF_ECHO_MAX ? "..." : "");
    err->row = row;
    bool optional =
        row->type != RF_FLAG_TYPE_BOOL && (row->bits & RF_FLAG_OPTIONAL);
    if (negate && !(row->bits & RF_FLAG_NEGATABLE) && !optional)
        return set_error(err, RF_FLAG_ERR_UNKNOWN,
                         "--%s: --no%s is only for boolean flags", row->name,
                         row->name);
    if (row->type == RF_FLAG_TYPE_BOOL && !eq)
        return give(t, row, NULL, negate, err);
    const char *value = eq         ? eq + 1
                        : optional ? (negate ? "false" : "true")
                                   : next_value(t, argc, argv, i);
    if (!value)
        return set_error(err, RF_FLAG_ERR_MISSING_VALUE, "--%s: missing value",
                         row->name);
    return give(t, row, value, false, err);
}

/* tf_style: anything but "--NAME..." ("-x", "--", "--=V", "extra"). */
static bool tf_operand(const char *arg)
{
    return strncmp(arg, "--", 2) != 0 || arg[2] == '\0' || arg[2] == '=';
}

/* argv[*i] is "-abc": aliases, the last (or the first that takes a value)
 * with its value. */
static int parse_short(const rf_flag_table *t, int argc, char **argv, int *i,
                       rf_flag_error *err)
{
    const char *arg = argv[*i];
    err->arg = arg;
    for (const char *p = arg + 1; *p; p++) {
        const rf_flag_row *row = find_alias(t, *p);
        if (!row)
            return set_error(err, RF_FLAG_ERR_UNKNOWN, "unknown option '-%c'",
                             *p);
        err->row = row;
        if (!takes_value(row)) {
            int rc = give(t, row, NULL, false, err);
            if (rc != RF_FLAGS_OK)
                return rc;
            continue;
        }
        const char *value = p[1] ? p + 1 : next_value(t, argc, argv, i);
        if (!value)
            return set_error(err, RF_FLAG_ERR_MISSING_VALUE,
                             "option '-%c' needs a value", *p);
        return give(t, row, value, false, err);
    }
    return RF_FLAGS_OK;
}

int rf_flags_parse(const rf_flag_table *t, int argc, char **argv,
                   int *noperands, rf_flag_error *err)
{
    memset(err, 0, sizeof *err);
    *noperands = 0;
    if (apply_defaults(t, err))
        return -1;
    memset(err, 0, sizeof *err);
    bool flags_end = false;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        int rc = RF_FLAGS_OK;
        if (t->tf_style) {
            if (tf_operand(arg)) {
                err->arg = arg;
                return set_error(err, RF_FLAG_ERR_OPERAND,
                                 "unexpected argument '%s'", RF_ECHO(arg));
            }
            rc = parse_tf(t, argc, argv, &i, err);
            if (rc != RF_FLAGS_OK)
                return rc;
            continue;
        }
        if (flags_end || arg[0] != '-' || !arg[1] ||
            (t->long_only && arg[1] != '-')) {
            argv[1 + (*noperands)++] = argv[i];
            continue;
        }
        if (!strcmp(arg, "--")) {
            flags_end = true;
            continue;
        }
        if (arg[1] == '-')
            rc = parse_long(t, argc, argv, &i, err);
        else
            rc = parse_short(t, argc, argv, &i, err);
        if (rc != RF_FLAGS_OK)
            return rc;
    }
    return RF_FLAGS_OK;
}

/* Words of text from column col (the cursor, after the flag column),
 * wrapped at HELP_WIDTH and continued at column indent. */
static void print_wrapped(FILE *f, const char *text, int col, int indent)
{
    bool line_start = true;
    for (const char *p = text; *p;) {
        size_t word = strcspn(p, " ");
        if (!line_start && col + 1 + (int)word > HELP_WIDTH) {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
            line_start = true;
        }
        if (!line_start) {
            fputc(' ', f);
            col++;
        }
        fwrite(p, 1, word, f);
        col += (int)word;
        line_start = false;
        p += word;
        while (*p == ' ')
            p++;
    }
    fputc('\n', f);
}

/* A row's flag column: "-p, --port PORT", "--[no]color"; tf_style
 * "--port=PORT". Returns the characters printed. */
static int print_flag(FILE *f, const rf_flag_table *t, const rf_flag_row *row)
{
    char alias[8] = "";
    if (row->alias)
        snprintf(alias, sizeof alias, "-%c, ", row->alias);
    const char *metavar = row->metavar ? row->metavar : "VALUE";
    bool value = takes_value(row);
    return fprintf(f, "  %s--%s%s%s%s", alias,
                   row->bits & RF_FLAG_NEGATABLE ? "[no]" : "", row->name,
                   value ? (t->tf_style ? "=" : " ") : "",
                   value ? metavar : "");
}

void rf_flags_print_help(FILE *f, const rf_flag_table *t)
{
    int column = t->tf_style ? TF_HELP_COLUMN : HELP_COLUMN;
    for (const rf_flag_row *row = t->rows; row->name; row++) {
        if (row->bits & RF_FLAG_HIDDEN)
            continue;
        int n = print_flag(f, t, row);
        if (n < column) {
            fprintf(f, "%*s", column - n, "");
            n = column;
        } else {
            fputc(' ', f);
            n++;
        }
        char text[1024];
        bool show_default = row->def && row->type != RF_FLAG_TYPE_BOOL;
        snprintf(text, sizeof text, "%s%s%s%s", row->help ? row->help : "",
                 show_default ? " (default " : "", show_default ? row->def : "",
                 show_default ? ")" : "");
        print_wrapped(f, text, n, column);
    }
}
