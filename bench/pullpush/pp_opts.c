/* bench/pullpush/pp_opts.c: the flag table of rf-bench-pullpush
 * (rdmaflow/flags.h). A malformed or contradictory flag is a usage
 * error (exit 2) naming it; nothing is silently replaced by a default. */
#include "pp_opts.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/env.h"
#include "rdmaflow/flags.h"
#include "rdmaflow/status.h"
#include "rdmaflow/version.h"

#define STR_(x) #x
#define STR(x)  STR_(x) /* a number macro as text */

static const char usage_head[] =
    "Usage: rf-bench-pullpush [options]\n"
    "\n"
    "Pull and push of every variable of a model of --size bytes held by " STR(
        PP_PS_TASKS) " ps\ntasks (child processes of this program, rdmaflow ps "
                     "servers on --host),\nbeside a single-thread memcpy of "
                     "the same bytes in the same rounds.\nOperations per "
                     "round: memcpy, pull (READ of every variable), "
                     "push_ps\n(apply=ps: WRITE_WITH_IMM into the inbox until "
                     "the ps acknowledged its\napply), push_worker "
                     "(apply=worker: READ, local apply, WRITE back).\n"
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
    fputs("rf-bench-pullpush: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\nTry 'rf-bench-pullpush --help'.\n", stderr);
    return 2;
}

/* --optimizer NAME (and its default): learning_rate 0.01 and momentum 0.9
 * where the optimizer needs them and NAME does not give them. */
static int call_optimizer(const rf_flag_row *row, const char *text, void *ctx,
                          rf_flag_error *err)
{
    rf_optim_config *c = &((pp_opts *)ctx)->optim;
    (void)row;
    if (rf_optim_parse(text, c) != RF_OK)
        return rf_flags_fail(err, "%s", rf_error_message());
    if (c->learning_rate != c->learning_rate)
        c->learning_rate = 0.01f;
    if (c->momentum != c->momentum)
        c->momentum = 0.9f;
    if (rf_optim_validate(c) != RF_OK)
        return rf_flags_fail(err, "%s", rf_error_message());
    return 0;
}

/* What the checks after the table need to know was given. */
typedef struct given_flags {
    bool client; /* --size, --rounds or --warmup */
    bool optim, index;
    bool help, version;
} given_flags;

#define PP_FLAG_ROWS 14
static void pp_flag_rows(rf_flag_row rows[PP_FLAG_ROWS], pp_opts *o,
                         given_flags *g)
{
    const rf_flag_row table[PP_FLAG_ROWS] = {
        RF_FLAG_STRING(
            "provider", &o->provider, NULL, "NAME",
            "sock, shm, verbs or auto (default: RF_FABRIC, else auto)"),
        RF_FLAG_BUFFER("host", o->host, "127.0.0.1", "ADDR",
                       "address of the ps tasks", .bits = RF_FLAG_NONEMPTY),
        RF_FLAG_SIZE("size", &o->size, "1M", 4096, (int64_t)4 << 30, "BYTES",
                     "model size, K/M/G suffixes, 4K .. 4G",
                     .seen = &g->client),
        RF_FLAG_INT("rounds", &o->rounds, "9", 1, 1000, "N",
                    "measured rounds, 1 .. 1000", .seen = &g->client),
        RF_FLAG_INT("warmup", &o->warmup, "1", 0, 100, "N",
                    "rounds run first, not counted, 0 .. 100",
                    .seen = &g->client),
        RF_FLAG_CALL("optimizer", call_optimizer, "sgd", "NAME",
                     "sgd, momentum, adagrad, adam or rmsprop (learning_rate "
                     "0.01, momentum 0.9 where required)",
                     .seen = &g->optim),
        RF_FLAG_INT("timeout", &o->timeout_s, "120", 1, 86400, "SEC",
                    "bound on start-up and on each operation"),
        RF_FLAG_BOOL("inject-extra-push", &o->inject_extra_push,
                     "push once more than the verifier knows (for the smoke "
                     "test: the run must then fail its check)"),
        RF_FLAG_STOP("help", &g->help, "this text", .alias = 'h'),
        RF_FLAG_STOP("version", &g->version, "print the version and exit"),
        /* the role of each ps task, which the client re-executes */
        RF_FLAG_BOOL("serve-ps", &o->serve_ps, NULL, .bits = RF_FLAG_HIDDEN),
        RF_FLAG_INT("index", &o->ps_index, NULL, 0, PP_PS_TASKS - 1, NULL, NULL,
                    .seen = &g->index, .bits = RF_FLAG_HIDDEN),
        RF_FLAG_INT("ready-fd", &o->ready_fd, NULL, 3, 1023, NULL, NULL,
                    .bits = RF_FLAG_HIDDEN),
        {0},
    };
    memcpy(rows, table, sizeof table);
}

int pp_opts_parse(int argc, char **argv, pp_opts *o)
{
    const char *env = getenv("RF_FABRIC");
    *o = (pp_opts){
        .provider = env && *env ? env : "auto", .ps_index = -1, .ready_fd = -1};
    given_flags given = {0};
    rf_flag_row rows[PP_FLAG_ROWS];
    pp_flag_rows(rows, o, &given);
    rf_flag_table t = {.rows = rows, .ctx = o};
    rf_flag_error err;
    int n;
    int rc = rf_flags_parse(&t, argc, argv, &n, &err);
    if (rc < 0)
        return bad("%s", err.message);
    if (rc == RF_FLAGS_STOPPED) {
        if (given.help) {
            fputs(usage_head, stdout);
            rf_flags_print_help(stdout, &t);
            fputs(usage_tail, stdout);
        } else {
            printf("rf-bench-pullpush (rdmaflow) %s\n", rf_version());
        }
        return 1;
    }
    if (n > 0)
        return bad("unexpected argument '%s'", RF_ECHO(argv[1]));
    if (o->serve_ps) {
        if (!given.index || o->ready_fd < 0)
            return bad("--serve-ps needs --index and --ready-fd");
        if (given.client || given.optim || o->inject_extra_push)
            return bad("--serve-ps: the client chooses the model; give "
                       "--size/--rounds/--warmup/--optimizer to it");
    } else if (given.index || o->ready_fd >= 0) {
        return bad("--index and --ready-fd apply to --serve-ps only");
    }
    return 0;
}
