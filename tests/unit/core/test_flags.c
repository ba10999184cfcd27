/* tests/unit/core/test_flags.c: the flag table (rdmaflow/flags.h):
 * defaults applied from the rows, GNU-style long flags, short aliases and
 * clusters, operands, --noNAME, abbreviations, and each kind of error
 * (unknown flag, missing value, bad value, out of range, value given to a
 * flag that takes none) with the flag named in the message; the help
 * printed from the same rows. Every case checks what a broken parser
 * would get wrong. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/flags.h"
#include "tests/common/check.h"

typedef struct opts {
    int port;
    uint32_t iters;
    uint64_t size;
    int64_t rows;
    double zipf;
    const char *name;
    char host[8];
    int mode;
    const char *poll;
    bool verbose, color, help, iters_seen;
    int calls;
    const char *called_with;
} opts;

static const rf_flag_choice modes[] = {{"fast", 1}, {"slow", 2}, {NULL, 0}};
static const rf_flag_choice polls[] = {
    {"busy", 0}, {"wait", 0}, {"events", 0}, {NULL, 0}};

static int call_tag(const rf_flag_row *row, const char *value, void *ctx,
                    rf_flag_error *err)
{
    opts *o = ctx;
    (void)row;
    if (value && !strcmp(value, "bad"))
        return rf_flags_fail(err, "'%s' is not a tag", value);
    o->calls++;
    o->called_with = value;
    return 0;
}

/* Parses argv (a NULL-terminated list after the program name) into *o with
 * the test table; returns rf_flags_parse's answer. */
static bool no_dashed_values; /* the next parse's table option */

static int parse(opts *o, rf_flag_error *err, int *nops, char **argv,
                 bool exact)
{
    memset(o, 0, sizeof *o);
    const rf_flag_row rows[] = {
        {.name = "port",
         .alias = 'p',
         .type = RF_FLAG_TYPE_INT,
         .dest = &o->port,
         .def = "18515",
         .min = 0,
         .max = 65535,
         .metavar = "PORT",
         .help = "the port"},
        {.name = "iters",
         .alias = 'n',
         .type = RF_FLAG_TYPE_UINT32,
         .dest = &o->iters,
         .def = "1000",
         .min = 5,
         .max = 100000000,
         .seen = &o->iters_seen,
         .help = "iterations"},
        {.name = "size",
         .alias = 's',
         .type = RF_FLAG_TYPE_SIZE,
         .dest = &o->size,
         .def = "64K",
         .min = 1,
         .max = 1 << 30,
         .help = "bytes"},
        {.name = "rows",
         .type = RF_FLAG_TYPE_INT64,
         .dest = &o->rows,
         .def = "1e5",
         .min = 2,
         .max = 4000000000,
         .bits = RF_FLAG_REAL_INT},
        {.name = "zipf",
         .type = RF_FLAG_TYPE_DOUBLE,
         .dest = &o->zipf,
         .def = "1.1",
         .dmin = 0,
         .dmax = 10,
         .bits = RF_FLAG_MIN_OPEN},
        {.name = "name",
         .type = RF_FLAG_TYPE_STRING,
         .dest = &o->name,
         .def = "x",
         .bits = RF_FLAG_NONEMPTY},
        {.name = "host",
         .type = RF_FLAG_TYPE_BUFFER,
         .dest = o->host,
         .size = sizeof o->host,
         .def = "local"},
        {.name = "mode",
         .type = RF_FLAG_TYPE_ENUM,
         .dest = &o->mode,
         .choices = modes,
         .def = "fast"},
        {.name = "poll",
         .type = RF_FLAG_TYPE_CHOICE,
         .dest = &o->poll,
         .choices = polls,
         .def = "wait"},
        {.name = "verbose",
         .alias = 'v',
         .type = RF_FLAG_TYPE_BOOL,
         .dest = &o->verbose},
        {.name = "color",
         .type = RF_FLAG_TYPE_BOOL,
         .dest = &o->color,
         .def = "true",
         .bits = RF_FLAG_NEGATABLE},
        {.name = "tag",
         .alias = 't',
         .type = RF_FLAG_TYPE_CALL,
         .call = call_tag},
        {.name = "help",
         .alias = 'h',
         .type = RF_FLAG_TYPE_BOOL,
         .dest = &o->help,
         .bits = RF_FLAG_STOPS},
        {0},
    };
    rf_flag_table t = {.rows = rows,
                       .ctx = o,
                       .exact_names = exact,
                       .no_dashed_values = no_dashed_values};
    int argc = 0;
    while (argv[argc])
        argc++;
    return rf_flags_parse(&t, argc, argv, nops, err);
}

#define ARGS(...) ((char *[]){"prog", __VA_ARGS__, NULL})

static void check_error(char **argv, rf_flag_error_kind kind,
                        const char *message)
{
    opts o;
    rf_flag_error err;
    int n;
    int rc = parse(&o, &err, &n, argv, false);
    CHECK(rc == -1, "%s: returned %d, want -1", argv[1], rc);
    CHECK(err.kind == kind, "%s: kind %d, want %d (%s)", argv[1], (int)err.kind,
          (int)kind, err.message);
    CHECK(strstr(err.message, message) != NULL, "%s: message '%s', want '%s'",
          argv[1], err.message, message);
}

static void test_defaults(void)
{
    opts o;
    rf_flag_error err;
    int n = -1;
    CHECK(parse(&o, &err, &n, ARGS(NULL), false) == RF_FLAGS_OK, "%s",
          err.message);
    CHECK(n == 0, "%d operands", n);
    CHECK(o.port == 18515, "port %d", o.port);
    CHECK(o.iters == 1000 && !o.iters_seen, "iters %u", o.iters);
    CHECK(o.size == 65536, "size %llu", (unsigned long long)o.size);
    CHECK(o.rows == 100000, "rows %lld", (long long)o.rows);
    CHECK(o.zipf == 1.1, "zipf %g", o.zipf);
    CHECK(!strcmp(o.name, "x") && !strcmp(o.host, "local"), "%s %s", o.name,
          o.host);
    CHECK(o.mode == 1 && !strcmp(o.poll, "wait"), "mode %d", o.mode);
    CHECK(o.color && !o.verbose && o.calls == 0, "bools");
}

static void test_values(void)
{
    opts o;
    rf_flag_error err;
    int n;
    char **argv =
        ARGS("-p", "7", "op1", "--iters=50", "-s4M", "--rows", "2e9", "--zipf",
             "0.5", "--mode=slow", "--nocolor", "-vt", "T", "--poll", "busy",
             "--host", "h", "--name=nm", "--", "-p", "op3");
    int rc = parse(&o, &err, &n, argv, false);
    CHECK(rc == RF_FLAGS_OK, "%s", err.message);
    CHECK(o.port == 7, "short alias with a separate value: port %d", o.port);
    CHECK(o.iters == 50 && o.iters_seen, "iters %u", o.iters);
    CHECK(o.size == 4u << 20, "attached short value with suffix: %llu",
          (unsigned long long)o.size);
    CHECK(o.rows == 2000000000, "rows %lld", (long long)o.rows);
    CHECK(o.zipf == 0.5 && o.mode == 2 && !o.color && o.verbose, "values");
    CHECK(o.calls == 1 && !strcmp(o.called_with, "T"), "call %d", o.calls);
    CHECK(!strcmp(o.poll, "busy") && !strcmp(o.host, "h"), "poll/host");
    CHECK(!strcmp(o.name, "nm"), "name %s", o.name);
    CHECK(n == 3, "%d operands", n);
    CHECK(!strcmp(argv[1], "op1") && !strcmp(argv[2], "-p") &&
              !strcmp(argv[3], "op3"),
          "operands %s %s %s", argv[1], argv[2], argv[3]);

    /* a value takes the next argument even when it starts with '-' */
    rc = parse(&o, &err, &n, ARGS("--name", "-x"), false);
    CHECK(rc == RF_FLAGS_OK && !strcmp(o.name, "-x"), "%s", err.message);
    /* ... unless no_dashed_values and it starts with "--" */
    no_dashed_values = true;
    rc = parse(&o, &err, &n, ARGS("--name", "--verbose"), false);
    CHECK(rc == -1 && err.kind == RF_FLAG_ERR_MISSING_VALUE, "dashed: %d", rc);
    rc = parse(&o, &err, &n, ARGS("--name", "-x"), false);
    CHECK(rc == RF_FLAGS_OK && !strcmp(o.name, "-x"), "%s", err.message);
    no_dashed_values = false;
    /* unique abbreviations, as getopt_long; not with exact_names */
    rc = parse(&o, &err, &n, ARGS("--it", "9"), false);
    CHECK(rc == RF_FLAGS_OK && o.iters == 9, "abbreviation: %s", err.message);
    rc = parse(&o, &err, &n, ARGS("--po", "x"), false);
    CHECK(rc == -1 && err.kind == RF_FLAG_ERR_AMBIGUOUS, "--po: %d", rc);
    rc = parse(&o, &err, &n, ARGS("--it", "9"), true);
    CHECK(rc == -1 && err.kind == RF_FLAG_ERR_UNKNOWN, "exact: %d", rc);
    /* a STOP flag stops: what follows is not read */
    rc = parse(&o, &err, &n, ARGS("--help", "--bogus"), false);
    CHECK(rc == RF_FLAGS_STOPPED && o.help, "stop: %d", rc);
}

static void test_errors(void)
{
    check_error(ARGS("--bogus"), RF_FLAG_ERR_UNKNOWN,
                "unknown option '--bogus'");
    check_error(ARGS("-z"), RF_FLAG_ERR_UNKNOWN, "unknown option '-z'");
    check_error(ARGS("-p"), RF_FLAG_ERR_MISSING_VALUE,
                "option '-p' needs a value");
    check_error(ARGS("--iters"), RF_FLAG_ERR_MISSING_VALUE,
                "option '--iters' needs a value");
    check_error(ARGS("--verbose=1"), RF_FLAG_ERR_EXTRA_VALUE,
                "option '--verbose=1' takes no value");
    check_error(ARGS("-p", "many"), RF_FLAG_ERR_BAD_VALUE,
                "-p/--port: 'many' is not a number");
    check_error(ARGS("--port=65536"), RF_FLAG_ERR_BAD_VALUE,
                "-p/--port: 65536 is outside [0, 65535]");
    check_error(ARGS("-n", "4"), RF_FLAG_ERR_BAD_VALUE,
                "-n/--iters: 4 is outside [5, 100000000]");
    check_error(ARGS("-n", "-1"), RF_FLAG_ERR_BAD_VALUE,
                "-n/--iters: '-1' is not a non-negative number");
    check_error(ARGS("-n", "1k"), RF_FLAG_ERR_BAD_VALUE,
                "-n/--iters: '1k' has trailing characters");
    check_error(ARGS("-s", "8Q"), RF_FLAG_ERR_BAD_VALUE,
                "-s/--size: '8Q' has an unknown suffix (K, M or G)");
    check_error(ARGS("-s", "2G"), RF_FLAG_ERR_BAD_VALUE,
                "-s/--size: 2G is outside [1, 1073741824]");
    check_error(ARGS("--rows", "2.5"), RF_FLAG_ERR_BAD_VALUE,
                "--rows: '2.5' is not a whole number");
    check_error(ARGS("--rows", "1e10"), RF_FLAG_ERR_BAD_VALUE,
                "--rows: 1e10 is outside [2, 4000000000]");
    check_error(ARGS("--zipf", "0"), RF_FLAG_ERR_BAD_VALUE,
                "--zipf: 0 is outside (0, 10]");
    check_error(ARGS("--zipf", "inf"), RF_FLAG_ERR_BAD_VALUE,
                "--zipf: 'inf' is not a finite number");
    check_error(ARGS("--name="), RF_FLAG_ERR_BAD_VALUE, "--name: empty value");
    check_error(ARGS("--host", "123456789"), RF_FLAG_ERR_BAD_VALUE,
                "--host: '123456789' is longer than 7 bytes");
    check_error(ARGS("--mode", "medium"), RF_FLAG_ERR_BAD_VALUE,
                "--mode: 'medium' is not fast or slow");
    check_error(ARGS("--poll", "spin"), RF_FLAG_ERR_BAD_VALUE,
                "--poll: 'spin' is not busy, wait or events");
    check_error(ARGS("-t", "bad"), RF_FLAG_ERR_BAD_VALUE,
                "-t/--tag: 'bad' is not a tag");
    check_error(ARGS("--noverbose"), RF_FLAG_ERR_UNKNOWN,
                "unknown option '--noverbose'");
}

/* A bad default is reported as such (a bug in the table, found at once). */
static void test_bad_default(void)
{
    int port = 0, n;
    const rf_flag_row rows[] = {
        {.name = "port", .type = RF_FLAG_TYPE_INT, .dest = &port, .def = "x"},
        {0},
    };
    rf_flag_table t = {.rows = rows};
    rf_flag_error err;
    char *argv[] = {"prog", NULL};
    CHECK(rf_flags_parse(&t, 1, argv, &n, &err) == -1, "bad default accepted");
    CHECK(err.kind == RF_FLAG_ERR_DEFAULT &&
              strstr(err.message, "the default of --port: 'x'"),
          "%s", err.message);
}

static void test_help(void)
{
    int port = 0;
    bool flag = false;
    const rf_flag_row rows[] = {
        {.name = "port",
         .alias = 'p',
         .type = RF_FLAG_TYPE_INT,
         .dest = &port,
         .def = "18515",
         .metavar = "PORT",
         .help = "listen on / connect to PORT, a long help text that has "
                 "to be wrapped onto a second line"},
        {.name = "quiet",
         .type = RF_FLAG_TYPE_BOOL,
         .dest = &flag,
         .help = "say less"},
        {.name = "internal",
         .type = RF_FLAG_TYPE_BOOL,
         .dest = &flag,
         .bits = RF_FLAG_HIDDEN},
        {0},
    };
    rf_flag_table t = {.rows = rows};
    char buf[1024] = "";
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    CHECK_TRUE(f != NULL);
    rf_flags_print_help(f, &t);
    fclose(f);
    CHECK(
        !strncmp(buf, "  -p, --port PORT     listen on / connect to PORT,", 50),
        "help:\n%s", buf);
    CHECK(strstr(buf, "\n                      ") != NULL, "not wrapped:\n%s",
          buf);
    CHECK(strstr(buf, "(default 18515)\n") != NULL, "no default:\n%s", buf);
    CHECK(strstr(buf, "\n  --quiet             say less\n") != NULL,
          "help:\n%s", buf);
    CHECK(strstr(buf, "internal") == NULL, "hidden row shown:\n%s", buf);
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
        CHECK(strlen(line) <= 79, "line longer than 79: %s", line);
}

/* ---- tf_style (rf-trainer's flags), written with the row macros ---- */

#define TF_REMOTE 0x010000u /* a program bit: the table ignores it */

typedef struct tf_opts {
    int64_t steps;
    double lr;
    bool sync, help;
    int explain;
    const char *apply, *dir;
    char host[16];
    const char *first_remote; /* set by the given call */
    int given;
} tf_opts;

static const rf_flag_choice tf_explain[] = {
    {"text", 1}, {"json", 2}, {"true", 1}, {"false", 0}, {NULL, 0}};
static const rf_flag_choice tf_apply[] = {{"ps", 0}, {"worker", 1}, {0}};

static void tf_given(const rf_flag_row *row, void *ctx)
{
    tf_opts *o = ctx;
    o->given++;
    if ((row->bits & TF_REMOTE) && !o->first_remote)
        o->first_remote = row->name;
}

static int tf_parse(tf_opts *o, rf_flag_error *err, char **argv)
{
    memset(o, 0, sizeof *o);
    const rf_flag_row rows[] = {
        RF_FLAG_INT64("steps", &o->steps, "100", 0, 1000, "N", "steps"),
        RF_FLAG_DOUBLE("lr", &o->lr, "0.1", 0, 1e6, "LR", "rate",
                       .bits = RF_FLAG_MIN_OPEN | RF_FLAG_FLOAT32),
        RF_FLAG_BOOL("sync", &o->sync, "in step",
                     .bits = RF_FLAG_NEGATABLE | TF_REMOTE),
        RF_FLAG_ENUM("explain", &o->explain, NULL, tf_explain, "[text|json]",
                     "explain", .bits = RF_FLAG_OPTIONAL),
        RF_FLAG_CHOICE("apply", &o->apply, "ps", tf_apply, "ps|worker", "where",
                       .bits = TF_REMOTE),
        RF_FLAG_STRING("dir", &o->dir, NULL, "DIR", "a directory",
                       .bits = RF_FLAG_NONEMPTY),
        RF_FLAG_BUFFER("host", o->host, "h0", "ADDR", "a host"),
        RF_FLAG_BOOL("help", &o->help, "this text"),
        {0},
    };
    rf_flag_table t = {
        .rows = rows, .ctx = o, .tf_style = true, .given = tf_given};
    int argc = 0, n;
    while (argv[argc])
        argc++;
    return rf_flags_parse(&t, argc, argv, &n, err);
}

static void check_tf_error(char **argv, rf_flag_error_kind kind,
                           const char *message)
{
    tf_opts o;
    rf_flag_error err;
    int rc = tf_parse(&o, &err, argv);
    CHECK(rc == -1, "%s: returned %d, want -1", argv[1], rc);
    CHECK(err.kind == kind, "%s: kind %d, want %d (%s)", argv[1], (int)err.kind,
          (int)kind, err.message);
    CHECK(!strcmp(err.message, message), "%s: message '%s', want '%s'", argv[1],
          err.message, message);
}

static void test_tf_style(void)
{
    tf_opts o;
    rf_flag_error err;
    int rc =
        tf_parse(&o, &err,
                 ARGS("--steps", "+7", "--lr=2.5", "--sync=0", "--explain",
                      "--apply", "worker", "--dir=d", "--host=h1", "--sync=1"));
    CHECK(rc == RF_FLAGS_OK, "%s", err.message);
    CHECK(o.steps == 7 && o.lr == 2.5 && o.sync && o.explain == 1,
          "values %lld %g %d %d", (long long)o.steps, o.lr, o.sync, o.explain);
    CHECK(!strcmp(o.apply, "worker") && !strcmp(o.dir, "d") &&
              !strcmp(o.host, "h1"),
          "strings %s %s %s", o.apply, o.dir, o.host);
    CHECK(o.given == 8, "the given call ran %d times, want 8", o.given);
    /* the first flag given with the bit, even as --sync=0 */
    CHECK(o.first_remote && !strcmp(o.first_remote, "sync"),
          "first remote flag %s, want sync",
          o.first_remote ? o.first_remote : "(none)");
    rc = tf_parse(&o, &err, ARGS("--explain=json", "--apply=ps", "--nosync"));
    CHECK(rc == RF_FLAGS_OK && !o.sync && o.explain == 2, "%s", err.message);
    CHECK(o.first_remote && !strcmp(o.first_remote, "apply"), "first %s",
          o.first_remote ? o.first_remote : "(none)");
    rc = tf_parse(&o, &err, ARGS("--explain", "--noexplain"));
    CHECK(rc == RF_FLAGS_OK && o.explain == 0, "--noexplain: %d", o.explain);
    /* help does not stop the parse: a later error is still reported */
    rc = tf_parse(&o, &err, ARGS("--help", "--steps=x"));
    CHECK(rc == -1 && o.help, "--help --steps=x: %d", rc);

    /* one or two arguments, the error's kind and its whole message */
    static const struct {
        const char *args[2];
        rf_flag_error_kind kind;
        const char *message;
    } bad[] = {
        {{"extra", NULL}, RF_FLAG_ERR_OPERAND, "unexpected argument 'extra'"},
        {{"-h", NULL}, RF_FLAG_ERR_OPERAND, "unexpected argument '-h'"},
        {{"--", NULL}, RF_FLAG_ERR_OPERAND, "unexpected argument '--'"},
        {{"--=5", NULL}, RF_FLAG_ERR_OPERAND, "unexpected argument '--=5'"},
        {{"--bogus=1", NULL},
         RF_FLAG_ERR_UNKNOWN,
         "--bogus: unknown flag (see --help)"},
        {{"--ste", "1"},
         RF_FLAG_ERR_UNKNOWN,
         "--ste: unknown flag (see --help)"},
        {{"--nohelp", NULL},
         RF_FLAG_ERR_UNKNOWN,
         "--nohelp: unknown flag (see --help)"},
        {{"--nosync=1", NULL},
         RF_FLAG_ERR_UNKNOWN,
         "--nosync: unknown flag (see --help)"},
        {{"--nosteps", NULL},
         RF_FLAG_ERR_UNKNOWN,
         "--steps: --nosteps is only for boolean flags"},
        {{"--steps", NULL},
         RF_FLAG_ERR_MISSING_VALUE,
         "--steps: missing value"},
        {{"--steps", "--sync"},
         RF_FLAG_ERR_MISSING_VALUE,
         "--steps: missing value"},
        {{"--steps= 5", NULL},
         RF_FLAG_ERR_BAD_VALUE,
         "--steps: ' 5' is not an integer"},
        {{"--steps=1.5", NULL},
         RF_FLAG_ERR_BAD_VALUE,
         "--steps: '1.5' is not an integer"},
        {{"--steps=-1", NULL},
         RF_FLAG_ERR_BAD_VALUE,
         "--steps: -1 is out of range [0, 1000]"},
        {{"--steps=99999999999999999999", NULL},
         RF_FLAG_ERR_BAD_VALUE,
         "--steps: 99999999999999999999 is out of range [0, 1000]"},
        {{"--sync=yes", NULL},
         RF_FLAG_ERR_BAD_VALUE,
         "--sync: 'yes' is not a boolean (true, false, 1, 0)"},
        {{"--lr=nan", NULL},
         RF_FLAG_ERR_BAD_VALUE,
         "--lr: 'nan' is not a number"},
        {{"--lr=0", NULL},
         RF_FLAG_ERR_BAD_VALUE,
         "--lr: 0 is out of range (0, 1e+06]"},
        {{"--lr=1e999", NULL},
         RF_FLAG_ERR_BAD_VALUE,
         "--lr: 1e999 is out of range (0, 1e+06]"},
        {{"--lr=1e-300", NULL},
         RF_FLAG_ERR_BAD_VALUE,
         "--lr: 1e-300 is out of range: it rounds to 0 in float32 "
         "(the smallest normal float32 is 1.17549e-38, the largest "
         "3.40282e+38)"},
        {{"--lr=1e-40", NULL},
         RF_FLAG_ERR_BAD_VALUE,
         "--lr: 1e-40 is out of range: it is subnormal in float32 "
         "(the smallest normal float32 is 1.17549e-38, the largest "
         "3.40282e+38)"},
        {{"--explain=maybe", NULL},
         RF_FLAG_ERR_BAD_VALUE,
         "--explain: 'maybe' is not one of text, json, true, false"},
        {{"--dir=", NULL}, RF_FLAG_ERR_BAD_VALUE, "--dir: empty value"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *argv[] = {"prog", (char *)bad[i].args[0], (char *)bad[i].args[1],
                        NULL};
        check_tf_error(argv, bad[i].kind, bad[i].message);
    }

    /* the help: "--NAME=METAVAR", "--[no]NAME", the help at column 31 */
    const rf_flag_row rows[] = {
        RF_FLAG_INT64("steps", &o.steps, "100", 0, 1000, "N", "steps"),
        RF_FLAG_BOOL("sync", &o.sync, "in step", .bits = RF_FLAG_NEGATABLE),
        {0},
    };
    char buf[512] = "";
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    CHECK_TRUE(f != NULL);
    rf_flags_print_help(f, &(rf_flag_table){.rows = rows, .tf_style = true});
    fclose(f);
    CHECK(!strcmp(buf, "  --steps=N                    steps (default 100)\n"
                       "  --[no]sync                   in step\n"),
          "tf help:\n%s", buf);
}

int main(void)
{
    test_defaults();
    test_values();
    test_errors();
    test_bad_default();
    test_help();
    test_tf_style();
    printf("unit.flagtab: ok\n");
    return 0;
}
