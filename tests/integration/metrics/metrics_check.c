/* tests/integration/metrics/metrics_check.c: the metrics tests' checker,
 * independent of the writer and of rf-plot (json-c parses, nothing of
 * rdmaflow is used):
 *
 *   metrics_check file FILE TASK [--every N] [--batch B] [--partial]
 *       every line of FILE is one JSON object (no torn line), a "step" or
 *       "summary" record of TASK with every field of the README's schema
 *       and its type; step strictly increasing (1, N, 2N, ... and the last
 *       with --every), global_step strictly increasing; exactly one
 *       summary, the last line, whose steps is the last step line's and
 *       examples steps * B (--batch); bytes per step the same on every
 *       step line and the summary's total / steps. --partial: no summary
 *       is required (a killed writer). Prints "steps=S lines=L
 *       final_loss=X test_accuracy=Y global_step=G bytes_read=R
 *       bytes_pushed=P" (Y "none" when not measured; R and P the last step
 *       line's) for the shell to compare with the task's log.
 *   metrics_check dat DAT FILE
 *       the data rows of DAT (rf-plot's) are exactly FILE's step lines, in
 *       order: step, global_step, elapsed, loss, accuracy, examples/s,
 *       global_step/sec, cluster examples/s and the bytes equal ("?" for
 *       null), and time - elapsed the same on every row (one origin;
 *       within 10 ms, as wall_time and elapsed come from two clocks).
 *   metrics_check png FILE
 *       FILE is a PNG: the signature, an IHDR chunk first with a width and
 *       height of at least 100, an IEND chunk last, at least 4 KiB.
 *
 * Exit status 0 if every check passed, 1 otherwise (each failure printed),
 * 2 for a bad command line. */
#include <json-c/json.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static void bad(const char *file, long line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void bad(const char *file, long line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("FAIL: %s:%ld: ", file, line);
    vprintf(fmt, ap);
    putchar('\n');
    va_end(ap);
    failures++;
}

/* The lines of a file, each NUL-terminated without its newline; a last
 * line without a newline is flagged. */
typedef struct lines {
    char **v;
    size_t n;
    bool torn_tail;
} lines;

static void free_lines(lines *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static int read_lines(const char *path, lines *out)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        printf("FAIL: cannot open %s\n", path);
        return -1;
    }
    memset(out, 0, sizeof *out);
    char *buf = NULL;
    size_t cap = 0;
    ssize_t k;
    while ((k = getline(&buf, &cap, f)) >= 0) {
        if (k > 0 && buf[k - 1] == '\n')
            buf[--k] = '\0';
        else
            out->torn_tail = true;
        out->v = realloc(out->v, (out->n + 1) * sizeof *out->v);
        out->v[out->n++] = strdup(buf);
    }
    free(buf);
    fclose(f);
    return 0;
}

static json_object *field(json_object *o, const char *name)
{
    json_object *v = NULL;
    return json_object_object_get_ex(o, name, &v) ? v : NULL;
}

/* name must be present with type t (json_type_null allowed if nullable;
 * an int where a double is expected is fine). */
static bool has(const char *file, long ln, json_object *o, const char *name,
                json_type t, bool nullable)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, name, &v)) {
        bad(file, ln, "no \"%s\"", name);
        return false;
    }
    json_type got = json_object_get_type(v);
    if (got == t || (nullable && got == json_type_null) ||
        (t == json_type_double && got == json_type_int))
        return true;
    bad(file, ln, "\"%s\" is a %s, want %s", name, json_type_to_name(got),
        json_type_to_name(t));
    return false;
}

static double num(json_object *o, const char *name)
{
    json_object *v = field(o, name);
    return v && !json_object_is_type(v, json_type_null)
               ? json_object_get_double(v)
               : NAN;
}

static int64_t i64(json_object *o, const char *name)
{
    json_object *v = field(o, name);
    return v ? json_object_get_int64(v) : -1;
}

static const char *const step_doubles[] = {"loss",
                                           "examples_per_sec",
                                           "global_step_per_sec",
                                           "cluster_examples_per_sec",
                                           "wall_time",
                                           "elapsed"};
static const char *const step_ints[] = {"step", "global_step", "bytes_read",
                                        "bytes_pushed"};
static const char *const sum_doubles[] = {"seconds",
                                          "examples_per_sec",
                                          "global_step_per_sec",
                                          "cluster_examples_per_sec",
                                          "final_loss",
                                          "wall_time",
                                          "elapsed"};
static const char *const sum_ints[] = {
    "steps",       "examples",   "start_global_step",
    "global_step", "bytes_read", "bytes_pushed"};
#define N(a) (sizeof(a) / sizeof(a)[0])

static int check_file(const char *path, const char *task, int64_t every,
                      int64_t batch, bool partial)
{
    lines L;
    if (read_lines(path, &L) != 0)
        return 1;
    if (L.torn_tail)
        bad(path, (long)L.n, "the last line has no newline (torn)");
    int64_t prev_step = 0, prev_gs = -1, line_bytes = -1, steps = 0;
    int64_t last_gs = 0, last_pushed = 0;
    double last_loss = NAN;
    json_object *summary = NULL;
    long summary_at = 0;
    for (size_t i = 0; i < L.n; i++) {
        long ln = (long)i + 1;
        json_object *o = json_tokener_parse(L.v[i]);
        if (!o || !json_object_is_type(o, json_type_object)) {
            bad(path, ln, "not a JSON object: %.80s", L.v[i]);
            json_object_put(o);
            continue;
        }
        if (summary)
            bad(path, ln, "a line after the summary (line %ld)", summary_at);
        json_object *type = field(o, "type"), *t = field(o, "task");
        const char *ts = type ? json_object_get_string(type) : "";
        if (!t || strcmp(json_object_get_string(t), task) != 0)
            bad(path, ln, "task %s, want %s",
                t ? json_object_get_string(t) : "(none)", task);
        if (!strcmp(ts, "step")) {
            for (size_t k = 0; k < N(step_ints); k++)
                has(path, ln, o, step_ints[k], json_type_int, false);
            for (size_t k = 0; k < N(step_doubles); k++)
                has(path, ln, o, step_doubles[k], json_type_double, true);
            if (field(o, "accuracy"))
                has(path, ln, o, "accuracy", json_type_double, false);
            int64_t s = i64(o, "step"), gs = i64(o, "global_step");
            if (s <= prev_step)
                bad(path, ln, "step %lld after %lld", (long long)s,
                    (long long)prev_step);
            if (every > 0 && s != 1 && s % every != 0 && i + 2 < L.n)
                bad(path, ln, "step %lld is neither 1 nor a multiple of %lld",
                    (long long)s, (long long)every);
            if (gs <= prev_gs)
                bad(path, ln, "global_step %lld after %lld", (long long)gs,
                    (long long)prev_gs);
            if (gs < s && strcmp(task, "local") == 0)
                bad(path, ln, "local global_step %lld below step %lld",
                    (long long)gs, (long long)s);
            int64_t b = i64(o, "bytes_read");
            if (line_bytes >= 0 && b != line_bytes)
                bad(path, ln, "bytes_read %lld, the line before %lld",
                    (long long)b, (long long)line_bytes);
            line_bytes = b;
            last_pushed = i64(o, "bytes_pushed");
            prev_step = steps = s;
            prev_gs = last_gs = gs;
            last_loss = num(o, "loss");
            if (isnan(last_loss) || !(num(o, "elapsed") >= 0))
                bad(path, ln, "loss or elapsed missing");
            json_object_put(o);
        } else if (!strcmp(ts, "summary")) {
            for (size_t k = 0; k < N(sum_ints); k++)
                has(path, ln, o, sum_ints[k], json_type_int, false);
            for (size_t k = 0; k < N(sum_doubles); k++)
                has(path, ln, o, sum_doubles[k], json_type_double, true);
            summary = o;
            summary_at = ln;
        } else {
            bad(path, ln, "type '%s', want step or summary", ts);
            json_object_put(o);
        }
    }
    if (!summary && !partial)
        bad(path, (long)L.n, "no summary line");
    double test_acc = NAN;
    if (summary) {
        if (i64(summary, "steps") != steps)
            bad(path, summary_at, "summary steps %lld, the last step line %lld",
                (long long)i64(summary, "steps"), (long long)steps);
        if (batch > 0 && i64(summary, "examples") != steps * batch)
            bad(path, summary_at, "summary examples %lld, want %lld * %lld",
                (long long)i64(summary, "examples"), (long long)steps,
                (long long)batch);
        if (steps && i64(summary, "global_step") != last_gs)
            bad(path, summary_at, "summary global_step %lld, last line %lld",
                (long long)i64(summary, "global_step"), (long long)last_gs);
        if (steps && num(summary, "final_loss") != last_loss)
            bad(path, summary_at, "final_loss %.9g, the last line's loss %.9g",
                num(summary, "final_loss"), last_loss);
        int64_t total = i64(summary, "bytes_read");
        if (steps && (total % steps != 0 || total / steps != line_bytes))
            bad(path, summary_at,
                "bytes_read %lld is not %lld steps of %lld (the lines')",
                (long long)total, (long long)steps, (long long)line_bytes);
        if (field(summary, "test_accuracy"))
            test_acc = num(summary, "test_accuracy");
    }
    char acc[32] = "none";
    if (!isnan(test_acc))
        snprintf(acc, sizeof acc, "%.4f", test_acc);
    printf("steps=%lld lines=%zu final_loss=%.9g test_accuracy=%s "
           "global_step=%lld bytes_read=%lld bytes_pushed=%lld\n",
           (long long)steps, L.n, last_loss, acc, (long long)last_gs,
           (long long)(line_bytes < 0 ? 0 : line_bytes),
           (long long)last_pushed);
    json_object_put(summary);
    free_lines(&L);
    return failures ? 1 : 0;
}

/* A .dat cell against a record's value: "?" for null, else equal. */
static void same(const char *dat, long ln, const char *cell, json_object *o,
                 const char *name)
{
    json_object *v = field(o, name);
    bool null = !v || json_object_is_type(v, json_type_null);
    if (!strcmp(cell, "?")) {
        if (!null)
            bad(dat, ln, "%s is ?, the file has %s", name,
                json_object_get_string(v));
        return;
    }
    char *end;
    double d = strtod(cell, &end);
    if (*end || null || d != json_object_get_double(v))
        bad(dat, ln, "%s is %s, the file has %s", name, cell,
            null ? "null" : json_object_get_string(v));
}

static int check_dat(const char *dat, const char *path)
{
    static const char *const cols[] = {"step",
                                       "global_step",
                                       NULL /* time */,
                                       "elapsed",
                                       "loss",
                                       "accuracy",
                                       "examples_per_sec",
                                       "global_step_per_sec",
                                       "cluster_examples_per_sec",
                                       "bytes_read",
                                       "bytes_pushed"};
    lines D = {0}, L = {0};
    if (read_lines(dat, &D) != 0 || read_lines(path, &L) != 0) {
        free_lines(&D);
        return 1;
    }
    size_t r = 0, rows = 0;
    double origin = NAN;
    for (size_t i = 0; i < L.n; i++) {
        json_object *o = json_tokener_parse(L.v[i]);
        json_object *type = o ? field(o, "type") : NULL;
        if (!type || strcmp(json_object_get_string(type), "step") != 0) {
            json_object_put(o);
            continue;
        }
        while (r < D.n && D.v[r][0] == '#')
            r++;
        if (r >= D.n) {
            bad(dat, (long)r, "no row for line %zu of %s", i + 1, path);
            json_object_put(o);
            break;
        }
        char *row = D.v[r], *save = NULL;
        size_t c = 0;
        double t = NAN;
        for (char *cell = strtok_r(row, "\t", &save); cell;
             cell = strtok_r(NULL, "\t", &save), c++) {
            if (c >= N(cols)) {
                bad(dat, (long)r + 1, "more than %zu columns", N(cols));
                break;
            }
            if (cols[c])
                same(dat, (long)r + 1, cell, o, cols[c]);
            else
                t = strtod(cell, NULL);
        }
        if (c != N(cols))
            bad(dat, (long)r + 1, "%zu columns, want %zu", c, N(cols));
        double off = t - num(o, "elapsed");
        if (isnan(origin))
            origin = off;
        else if (fabs(off - origin) > 0.01) /* NTP may slew the wall clock
                                                against the monotonic one
                                                (500 ppm at most) */
            bad(dat, (long)r + 1, "time - elapsed %.6f, row 1 %.6f", off,
                origin);
        rows++;
        r++;
        json_object_put(o);
    }
    while (r < D.n && D.v[r][0] == '#')
        r++;
    if (r < D.n)
        bad(dat, (long)r + 1, "a row more than %s has step lines", path);
    if (rows == 0)
        bad(dat, 0, "no rows");
    printf("%s: %zu rows match %s\n", dat, rows, path);
    free_lines(&D);
    free_lines(&L);
    return failures ? 1 : 0;
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           p[3];
}

static int check_png(const char *path)
{
    static const unsigned char sig[8] = {0x89, 'P',  'N',  'G',
                                         '\r', '\n', 0x1a, '\n'};
    FILE *f = fopen(path, "rb");
    if (!f) {
        printf("FAIL: cannot open %s\n", path);
        return 1;
    }
    unsigned char *b = malloc(1 << 24);
    size_t n = b ? fread(b, 1, 1 << 24, f) : 0;
    fclose(f);
    if (n < 4096)
        bad(path, 0, "%zu bytes: too small for a picture", n);
    else if (memcmp(b, sig, 8) != 0)
        bad(path, 0, "no PNG signature");
    else if (be32(b + 8) != 13 || memcmp(b + 12, "IHDR", 4) != 0)
        bad(path, 0, "the first chunk is not a 13-byte IHDR");
    else if (be32(b + 16) < 100 || be32(b + 20) < 100)
        bad(path, 0, "%ux%u pixels", be32(b + 16), be32(b + 20));
    else if (memcmp(b + n - 8, "IEND", 4) != 0)
        bad(path, 0, "does not end with an IEND chunk");
    else
        printf("%s: PNG %ux%u, %zu bytes\n", path, be32(b + 16), be32(b + 20),
               n);
    free(b);
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "png"))
        return check_png(argv[2]);
    if (argc == 4 && !strcmp(argv[1], "dat"))
        return check_dat(argv[2], argv[3]);
    if (argc >= 4 && !strcmp(argv[1], "file")) {
        int64_t every = 0, batch = 0;
        bool partial = false;
        for (int i = 4; i < argc; i++) {
            if (!strcmp(argv[i], "--partial"))
                partial = true;
            else if (!strcmp(argv[i], "--every") && i + 1 < argc)
                every = atoll(argv[++i]);
            else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
                batch = atoll(argv[++i]);
            else
                return fprintf(stderr, "metrics_check: %s?\n", argv[i]), 2;
        }
        return check_file(argv[2], argv[3], every, batch, partial);
    }
    fprintf(stderr, "usage: metrics_check file FILE TASK [--every N] "
                    "[--batch B] [--partial] | dat DAT FILE | png FILE\n");
    return 2;
}
