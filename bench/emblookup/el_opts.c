/* bench/emblookup/el_opts.c: the flag table of rf-bench-emb
 * (tools/common/flagtab.h). A malformed flag is a usage error (exit 2)
 * naming it. */
#include "el_opts.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flagtab.h"
#include "rdmaflow/env.h"

#define STR_(x) #x
#define STR(x)  STR_(x) /* a number macro as text */

static const char usage_head[] =
    "Usage: rf-bench-emb [options]\n"
    "\n"
    "Embedding lookups from a table of --rows rows x --dim floats, "
    "mod-partitioned\nover " STR(
        EL_PS_TASKS) " ps tasks (child processes of this program on --host): "
                     "per step a batch\nof --batch examples x --features Zipf "
                     "ids (rdmaflow/ctr_data.h), shard id % 2,\nrow id / 2, "
                     "deduplicated, then looked up three ways in the same "
                     "run:\n"
                     "  rows    rf_ps_read_rows (one-sided row READs, version "
                     "words around each row)\n"
                     "  dense   rf_ps_read of each shard's whole values into "
                     "one reused buffer\n"
                     "          (what a dense pull moves), then the rows "
                     "copied out locally\n"
                     "  gather  rf_ps_gather_rows (the ps CPU copies the rows "
                     "and WRITEs them back)\n"
                     "\n"
                     "Options:\n";

static const char usage_tail[] =
    "\n"
    "Exit status: 0 ok, 1 failure (including the data check), 2 usage "
    "error.\n";

static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int bad(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "rf-bench-emb: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (see --help)\n");
    va_end(ap);
    return 2;
}

/* Counts may be written as reals that are whole numbers (1e5), as
 * before the table. */
#define COUNT FLAGTAB_REAL_INT

#define EL_FLAG_ROWS 21
static void el_flag_rows(flagtab_row rows[EL_FLAG_ROWS], el_opts *o, bool *help)
{
    const flagtab_row table[EL_FLAG_ROWS] = {
        {.name = "provider",
         .type = FLAGTAB_STRING,
         .dest = &o->provider,
         .metavar = "NAME",
         .help = "sock, shm, verbs or auto (default: RF_FABRIC, else auto)"},
        {.name = "host",
         .type = FLAGTAB_BUFFER,
         .dest = o->host,
         .size = sizeof o->host,
         .def = "127.0.0.1",
         .metavar = "ADDR",
         .help = "address of the ps tasks"},
        {.name = "rows",
         .type = FLAGTAB_INT64,
         .dest = &o->rows,
         .def = "1e5",
         .min = 2,
         .max = 4000000000,
         .bits = COUNT,
         .metavar = "N",
         .help = "table rows, 1eN allowed, 2 .. 4e9"},
        {.name = "dim",
         .type = FLAGTAB_UINT32,
         .dest = &o->dim,
         .def = "16",
         .min = 1,
         .max = 4096,
         .bits = COUNT,
         .metavar = "N",
         .help = "floats per row, 1 .. 4096"},
        {.name = "batch",
         .type = FLAGTAB_UINT32,
         .dest = &o->batch,
         .def = "256",
         .min = 1,
         .max = 1 << 20,
         .bits = COUNT,
         .metavar = "N",
         .help = "examples per step"},
        {.name = "features",
         .type = FLAGTAB_UINT32,
         .dest = &o->features,
         .def = "16",
         .min = 1,
         .max = 32,
         .bits = COUNT,
         .metavar = "N",
         .help = "ids per example, 1 .. 32"},
        {.name = "zipf",
         .type = FLAGTAB_DOUBLE,
         .dest = &o->zipf,
         .def = "1.1",
         .dmin = 0,
         .dmax = 10,
         .bits = FLAGTAB_MIN_OPEN,
         .metavar = "S",
         .help = "Zipf exponent of the ids"},
        {.name = "seed",
         .type = FLAGTAB_UINT64,
         .dest = &o->seed,
         .def = "1",
         .min = 0,
         .max = 1000000000000000,
         .bits = COUNT,
         .metavar = "N",
         .help = "data seed"},
        {.name = "steps",
         .type = FLAGTAB_INT,
         .dest = &o->steps,
         .def = "50",
         .min = 1,
         .max = 100000,
         .bits = COUNT,
         .metavar = "N",
         .help = "measured steps of rows and gather"},
        {.name = "warmup",
         .type = FLAGTAB_INT,
         .dest = &o->warmup,
         .def = "5",
         .min = 0,
         .max = 100000,
         .bits = COUNT,
         .metavar = "N",
         .help = "steps run first and not counted"},
        {.name = "dense-steps",
         .type = FLAGTAB_INT,
         .dest = &o->dense_steps,
         .min = 1,
         .max = 100000,
         .bits = COUNT,
         .metavar = "N",
         .help = "measured steps of dense (default: --steps)"},
        {.name = "dense-cap",
         .type = FLAGTAB_SIZE,
         .dest = &o->dense_cap,
         .def = "4G",
         .min = 0,
         .max = (int64_t)1 << 50,
         .metavar = "BYTES",
         .help = "largest whole-shard buffer, K/M/G; a larger shard skips "
                 "dense, saying so"},
        {.name = "push",
         .type = FLAGTAB_BOOL,
         .dest = &o->push,
         .help = "also push the rows' gradients (zero) apply=ps each step"},
        {.name = "json",
         .type = FLAGTAB_STRING,
         .dest = &o->json,
         .metavar = "FILE",
         .help = "also write the figures as JSON"},
        {.name = "timeout",
         .type = FLAGTAB_INT,
         .dest = &o->timeout_s,
         .def = "120",
         .min = 1,
         .max = 86400,
         .bits = COUNT,
         .metavar = "SEC",
         .help = "bound on start-up and each operation"},
        {.name = "inject-stale-row",
         .type = FLAGTAB_BOOL,
         .dest = &o->inject_stale_row,
         .help = "change a looked-up row behind the check's back (for the "
                 "smoke test: the run must then fail its check)"},
        {.name = "help",
         .alias = 'h',
         .type = FLAGTAB_BOOL,
         .dest = help,
         .bits = FLAGTAB_STOP,
         .help = "this text"},
        /* the role of each ps task, which the worker re-executes */
        {.name = "serve-ps",
         .type = FLAGTAB_BOOL,
         .dest = &o->serve_ps,
         .bits = FLAGTAB_HIDDEN},
        {.name = "index",
         .type = FLAGTAB_INT,
         .dest = &o->ps_index,
         .min = 0,
         .max = EL_PS_TASKS - 1,
         .bits = COUNT | FLAGTAB_HIDDEN},
        {0},
    };
    memcpy(rows, table, sizeof table);
}

int el_opts_parse(int argc, char **argv, el_opts *o)
{
    const char *env = getenv("RF_FABRIC");
    *o = (el_opts){.provider = env && *env ? env : "auto",
                   .dense_steps = -1}; /* -1: as --steps */
    bool help = false;
    flagtab_row rows[EL_FLAG_ROWS];
    el_flag_rows(rows, o, &help);
    flagtab t = {.rows = rows};
    flagtab_error err;
    int n;
    int rc = flagtab_parse(&t, argc, argv, &n, &err);
    if (rc < 0)
        return bad("%s", err.message);
    if (rc == FLAGTAB_STOPPED) {
        fputs(usage_head, stdout);
        flagtab_print_help(stdout, &t);
        fputs(usage_tail, stdout);
        return 1;
    }
    if (n > 0)
        return bad("unexpected argument '%s'", RF_ECHO(argv[1]));
    if (o->dense_steps < 0)
        o->dense_steps = o->steps;
    if (o->dense_steps > o->steps)
        return bad("--dense-steps %d is above --steps %d", o->dense_steps,
                   o->steps);
    return 0;
}
