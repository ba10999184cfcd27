/* bench/emblookup/el_opts.c: the flag table of rf-bench-emb
 * (rdmaflow/flags.h). A malformed flag is a usage error (exit 2)
 * naming it. */
#include "el_opts.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/env.h"
#include "rdmaflow/flags.h"

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
#define COUNT RF_FLAG_REAL_INT

#define EL_FLAG_ROWS 21
static void el_flag_rows(rf_flag_row rows[EL_FLAG_ROWS], el_opts *o, bool *help)
{
    const rf_flag_row table[EL_FLAG_ROWS] = {
        RF_FLAG_STRING(
            "provider", &o->provider, NULL, "NAME",
            "sock, shm, verbs or auto (default: RF_FABRIC, else auto)"),
        RF_FLAG_BUFFER("host", o->host, "127.0.0.1", "ADDR",
                       "address of the ps tasks"),
        RF_FLAG_INT64("rows", &o->rows, "1e5", 2, 4000000000, "N",
                      "table rows, 1eN allowed, 2 .. 4e9", .bits = COUNT),
        RF_FLAG_UINT32("dim", &o->dim, "16", 1, 4096, "N",
                       "floats per row, 1 .. 4096", .bits = COUNT),
        RF_FLAG_UINT32("batch", &o->batch, "256", 1, 1 << 20, "N",
                       "examples per step", .bits = COUNT),
        RF_FLAG_UINT32("features", &o->features, "16", 1, 32, "N",
                       "ids per example, 1 .. 32", .bits = COUNT),
        RF_FLAG_DOUBLE("zipf", &o->zipf, "1.1", 0, 10, "S",
                       "Zipf exponent of the ids", .bits = RF_FLAG_MIN_OPEN),
        RF_FLAG_UINT64("seed", &o->seed, "1", 0, 1000000000000000, "N",
                       "data seed", .bits = COUNT),
        RF_FLAG_INT("steps", &o->steps, "50", 1, 100000, "N",
                    "measured steps of rows and gather", .bits = COUNT),
        RF_FLAG_INT("warmup", &o->warmup, "5", 0, 100000, "N",
                    "steps run first and not counted", .bits = COUNT),
        RF_FLAG_INT("dense-steps", &o->dense_steps, NULL, 1, 100000, "N",
                    "measured steps of dense (default: --steps)",
                    .bits = COUNT),
        RF_FLAG_SIZE("dense-cap", &o->dense_cap, "4G", 0, (int64_t)1 << 50,
                     "BYTES",
                     "largest whole-shard buffer, K/M/G; a larger shard skips "
                     "dense, saying so"),
        RF_FLAG_BOOL("push", &o->push,
                     "also push the rows' gradients (zero) apply=ps each step"),
        RF_FLAG_STRING("json", &o->json, NULL, "FILE",
                       "also write the figures as JSON"),
        RF_FLAG_INT("timeout", &o->timeout_s, "120", 1, 86400, "SEC",
                    "bound on start-up and each operation", .bits = COUNT),
        RF_FLAG_BOOL("inject-stale-row", &o->inject_stale_row,
                     "change a looked-up row behind the check's back (for the "
                     "smoke test: the run must then fail its check)"),
        RF_FLAG_STOP("help", help, "this text", .alias = 'h'),
        /* the role of each ps task, which the worker re-executes */
        RF_FLAG_BOOL("serve-ps", &o->serve_ps, NULL, .bits = RF_FLAG_HIDDEN),
        RF_FLAG_INT("index", &o->ps_index, NULL, 0, EL_PS_TASKS - 1, NULL, NULL,
                    .bits = COUNT | RF_FLAG_HIDDEN),
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
    rf_flag_row rows[EL_FLAG_ROWS];
    el_flag_rows(rows, o, &help);
    rf_flag_table t = {.rows = rows};
    rf_flag_error err;
    int n;
    int rc = rf_flags_parse(&t, argc, argv, &n, &err);
    if (rc < 0)
        return bad("%s", err.message);
    if (rc == RF_FLAGS_STOPPED) {
        fputs(usage_head, stdout);
        rf_flags_print_help(stdout, &t);
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
