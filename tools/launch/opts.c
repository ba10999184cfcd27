/* tools/launch/opts.c: rf-launch's flag table (rdmaflow/flags.h):
 * "--name value" or "--name=value" up to "--"; everything after "--" is
 * the program and its arguments. Every error names the flag, in
 * rf-launch's words (its numbers' own readers below). */
#include "opts.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/env.h"
#include "rdmaflow/flags.h"

#define STR_(x) #x
#define STR(x)  STR_(x) /* a number macro as text */

static const char usage_head[] =
    "usage: rf-launch --ps N --workers N [--chief] [--tf_config]\n"
    "                 [--host ADDR] [--trace FILE] [--timeout SECS]\n"
    "                 [--metrics_dir DIR] [--plot DIR]\n"
    "                 [--grace SECS] [--ps_grace SECS]\n"
    "                 [--restart_on_failure [--max_restarts N]]\n"
    "                 [--hostfile FILE [--ssh CMD]] [--port_base P]\n"
    "                 [--keep_secret] -- PROGRAM ARGS...\n"
    "Runs a ps/worker cluster on this machine, one process per task,\n"
    "each running PROGRAM ARGS... --ps_hosts=H:P,... "
    "--worker_hosts=H:P,...\n"
    "--job_name=ps|worker --task_index=N, on free ports of ADDR. Each "
    "output line\n"
    "is prefixed with the task name ([ps0], [worker1]). A task that "
    "fails stops\n"
    "the others (with --restart_on_failure, once it has no restarts "
    "left).\n"
    "Once every worker has exited 0, the ps tasks get --ps_grace\n"
    "seconds to exit; any still running is then stopped with a "
    "warning and the\n"
    "launch still succeeds.\n"
    "The job is authenticated: unless RF_CLUSTER_SECRET_FILE is set or "
    "the\n"
    "program's arguments have --cluster_secret_file (that secret is then "
    "used),\n"
    "rf-launch makes a fresh random cluster secret for the launch, in a "
    "new\n"
    "private folder $TMPDIR/rf-launch.XXXXXX (/tmp without TMPDIR), file "
    "\"secret\"\n"
    "of mode 0600, and gives it to every task in RF_CLUSTER_SECRET_FILE "
    "(a\n"
    "--hostfile task gets it over ssh's standard input, into a private "
    "file on\n"
    "its host removed when it ends); it is removed at the end.\n"
    "An elastic job (the program has --elastic) can change its workers "
    "while it\n"
    "runs: rf-launch --add_worker [N] JOB starts N more, rf-launch "
    "--remove_worker\n"
    "[N | --task worker:K] JOB stops N (the highest-numbered, never the "
    "chief) with\n"
    "SIGTERM: they leave the job and are not restarted. JOB is the run "
    "folder or\n"
    "the job id rf-launch prints when the job starts (exit 0 done, 1 "
    "refused,\n"
    "2 malformed).\n\n";

static const char usage_tail[] =
    "\n"
    "exit status: 0 success, 1 a task failed, 2 usage error, 124 timeout,\n"
    "128+N stopped by signal N\n";

/* An integer count in [0, row->max] into the row's int. */
static int call_count(const rf_flag_row *row, const char *v, void *ctx,
                      rf_flag_error *err)
{
    char *end = NULL;
    (void)ctx;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (*v == '\0' || *end != '\0' || (*v != '-' && (*v < '0' || *v > '9')))
        return rf_flags_fail(err, "'%s' is not an integer", RF_ECHO(v));
    if (errno == ERANGE || x < 0 || x > row->max)
        return rf_flags_fail(err, "%s is out of range [0, %d]", RF_ECHO(v),
                             (int)row->max);
    *(int *)row->dest = (int)x;
    return 0;
}

/* --port_base: a count that is a port (not 0). */
static int call_port(const rf_flag_row *row, const char *v, void *ctx,
                     rf_flag_error *err)
{
    if (call_count(row, v, ctx, err) != 0)
        return -1;
    if (*(int *)row->dest == 0)
        return rf_flags_fail(err, "0 is not a port");
    return 0;
}

/* Seconds in [0, 1e6] into the row's double; --timeout must be above 0. */
static int call_secs(const rf_flag_row *row, const char *v, void *ctx,
                     rf_flag_error *err)
{
    char *end = NULL;
    (void)ctx;
    errno = 0;
    double x = strtod(v, &end);
    if (*v == '\0' || *end != '\0' || !isfinite(x) ||
        !((*v >= '0' && *v <= '9') || *v == '.' || *v == '-'))
        return rf_flags_fail(err, "'%s' is not a number of seconds",
                             RF_ECHO(v));
    if (x < 0 || x > 1e6)
        return rf_flags_fail(err, "%s is out of range [0, 1e6] seconds",
                             RF_ECHO(v));
    if (x == 0 && !strcmp(row->name, "timeout"))
        return rf_flags_fail(err, "must be more than 0 seconds");
    *(double *)row->dest = x;
    return 0;
}

static int call_host(const rf_flag_row *row, const char *v, void *ctx,
                     rf_flag_error *err)
{
    (void)ctx;
    if (*v == '\0' || strpbrk(v, ", \t\"\\[]"))
        return rf_flags_fail(err, "'%s' is not an address", RF_ECHO(v));
    *(const char **)row->dest = v;
    return 0;
}

/* A file or directory name (the row's metavar says which), not empty. */
static int call_path(const rf_flag_row *row, const char *v, void *ctx,
                     rf_flag_error *err)
{
    (void)ctx;
    if (*v == '\0')
        return rf_flags_fail(err, "empty %s name",
                             strcmp(row->metavar, "DIR") ? "file"
                                                         : "directory");
    *(const char **)row->dest = v;
    return 0;
}

static int call_ssh(const rf_flag_row *row, const char *v, void *ctx,
                    rf_flag_error *err)
{
    (void)ctx;
    if (v[strspn(v, " \t")] == '\0')
        return rf_flags_fail(err, "empty command");
    *(const char **)row->dest = v;
    return 0;
}

/* What the checks after the table need to know was given. */
typedef struct given_flags {
    bool ps, workers, host, max_restarts;
} given_flags;

#define LT_FLAG_ROWS 20
static void lt_flag_rows(rf_flag_row rows[LT_FLAG_ROWS], lt_opts *o,
                         given_flags *g)
{
    const rf_flag_row table[LT_FLAG_ROWS] = {
        RF_FLAG_CALL("ps", call_count, NULL, "N",
                     "parameter-server tasks, 0.." STR(LT_MAX_TASKS_PER_JOB),
                     .dest = &o->ps, .max = LT_MAX_TASKS_PER_JOB,
                     .seen = &g->ps),
        RF_FLAG_CALL(
            "workers", call_count, NULL, "N",
            "worker tasks, 0.." STR(
                LT_MAX_TASKS_PER_JOB) " (at least one worker or --chief)",
            .dest = &o->workers, .max = LT_MAX_TASKS_PER_JOB,
            .seen = &g->workers),
        RF_FLAG_BOOL(
            "chief", &o->chief,
            "add a separate chief task (TensorFlow's \"chief\" job; "
            "without it worker0 is the chief); implies --tf_config, as "
            "no classic flag names a chief"),
        RF_FLAG_BOOL(
            "tf_config", &o->tf_config,
            "describe the cluster in each task's TF_CONFIG environment "
            "variable instead of flags (in flags mode an inherited "
            "TF_CONFIG is removed)"),
        RF_FLAG_CALL("host", call_host, "127.0.0.1", "ADDR",
                     "address the tasks listen on", .dest = &o->host,
                     .seen = &g->host),
        RF_FLAG_CALL(
            "trace", call_path, NULL, "FILE",
            "pass --trace=FILE.<task>.json to each task and merge those "
            "Chrome traces into FILE at the end",
            .dest = &o->trace),
        RF_FLAG_CALL(
            "metrics_dir", call_path, NULL, "DIR",
            "pass --metrics_out=DIR/<task>.jsonl to each task (made if "
            "missing)",
            .dest = &o->metrics_dir),
        RF_FLAG_CALL(
            "plot", call_path, NULL, "DIR",
            "the same into DIR (or --metrics_dir), and at the end draw "
            "them with rf-plot into DIR: loss, accuracy and throughput "
            "per task (PNG; needs jq and gnuplot)",
            .dest = &o->plot_dir),
        RF_FLAG_CALL("timeout", call_secs, NULL, "SECS",
                     "stop everything after SECS seconds (exit 124)",
                     .dest = &o->timeout_s),
        RF_FLAG_CALL("grace", call_secs, "5", "SECS",
                     "wait after SIGTERM before SIGKILL", .dest = &o->grace_s),
        RF_FLAG_CALL("ps_grace", call_secs, "10", "SECS",
                     "once every worker succeeded, wait this long for the ps "
                     "tasks to exit before stopping them",
                     .dest = &o->ps_grace_s),
        RF_FLAG_BOOL(
            "restart_on_failure", &o->restart_on_failure,
            "restart a task (ps, worker or chief) that exits non-zero "
            "or is killed by a signal, with the same argv, environment "
            "and port, after 1 s (doubling with each restart of that "
            "task, at most " STR(
                LT_RESTART_BACKOFF_MAX_MS) " ms); a task exiting 0 is "
                                           "never restarted, nor is one "
                                           "exiting 2 (a usage error: "
                                           "the launch stops and exits "
                                           "2), nor is any once every "
                                           "worker has exited 0 or once "
                                           "rf-launch is stopping. The "
                                           "restarts of each task are "
                                           "printed at the end"),
        RF_FLAG_CALL(
            "max_restarts", call_count, STR(LT_DEFAULT_MAX_RESTARTS), "N",
            "restarts per task, 0.." STR(
                LT_MAX_RESTARTS_LIMIT) " (needs --restart_on_failure); a "
                                       "failure "
                                       "beyond them stops everything (exit 1)",
            .dest = &o->max_restarts, .max = LT_MAX_RESTARTS_LIMIT,
            .seen = &g->max_restarts),
        RF_FLAG_CALL(
            "hostfile", call_path, NULL, "FILE",
            "run the tasks over ssh on the hosts of FILE (Open MPI's "
            "format: \"HOST [slots=N]\" lines, '#' comments; slots "
            "default 1), filling each host's slots in task order; each "
            "task listens on its host; the RF_* variables and TF_CONFIG "
            "go along, and it runs in this directory",
            .dest = &o->hostfile),
        RF_FLAG_CALL("ssh", call_ssh, NULL, "CMD",
                     "the ssh command, split at blanks (default \"ssh -o "
                     "BatchMode=yes\"; e.g. \"ssh -p 2222 -i key\")",
                     .dest = &o->ssh),
        RF_FLAG_CALL(
            "port_base", call_port, NULL, "P",
            "task k (in start order ps0.., chief, worker0..) listens on "
            "port P + k (default: ports free on this machine)",
            .dest = &o->port_base, .max = 65535),
        RF_FLAG_BOOL("keep_secret", &o->keep_secret,
                     "keep the job's cluster secret file at the end and print "
                     "its path (e.g. to start another task of the job by hand "
                     "with RF_CLUSTER_SECRET_FILE)"),
        RF_FLAG_BOOL("help", &o->help, "this message", .alias = 'h'),
        RF_FLAG_BOOL("version", &o->version, "print the version and exit"),
        {0},
    };
    memcpy(rows, table, sizeof table);
}

void lt_opts_usage(FILE *f)
{
    lt_opts o;
    given_flags g;
    rf_flag_row rows[LT_FLAG_ROWS];
    lt_flag_rows(rows, &o, &g);
    fputs(usage_head, f);
    rf_flags_print_help(f, &(rf_flag_table){.rows = rows});
    fputs(usage_tail, f);
}

/* The table's error in rf-launch's words. */
static void table_error(const rf_flag_error *e, char *err, size_t errlen)
{
    const char *arg = e->arg ? e->arg : "";
    switch (e->kind) {
    case RF_FLAG_ERR_UNKNOWN:
        if (arg[0] == '-' && arg[1] == '-') {
            const char *body = arg + 2;
            size_t nlen = strcspn(body, "=");
            snprintf(err, errlen, "--%.*s%s: unknown flag (see --help)",
                     nlen > RF_ECHO_MAX ? RF_ECHO_MAX : (int)nlen, body,
                     nlen > RF_ECHO_MAX ? "..." : "");
            return;
        }
        snprintf(err, errlen,
                 "unexpected argument '%s' (put '--' before the program: "
                 "rf-launch --ps N --workers N -- PROGRAM ARGS...)",
                 RF_ECHO(arg));
        return;
    case RF_FLAG_ERR_EXTRA_VALUE:
        snprintf(err, errlen, "--%s takes no value", e->row->name);
        return;
    case RF_FLAG_ERR_MISSING_VALUE:
        snprintf(err, errlen, "--%s: missing value", e->row->name);
        return;
    default:
        snprintf(err, errlen, "%s", e->message);
        return;
    }
}

/* The checks once every flag is known. */
static int check_flags(const lt_opts *o, const given_flags *g, char *err,
                       size_t errlen)
{
    if (!g->ps) {
        snprintf(err, errlen, "--ps: required (number of ps tasks)");
        return -1;
    }
    if (!g->workers) {
        snprintf(err, errlen, "--workers: required (number of worker tasks)");
        return -1;
    }
    if (o->workers == 0 && !o->chief) {
        snprintf(err, errlen,
                 "--workers: 0 workers and no --chief leaves nothing to run");
        return -1;
    }
    if (g->max_restarts && !o->restart_on_failure) {
        snprintf(err, errlen,
                 "--max_restarts: needs --restart_on_failure (without it no "
                 "task is restarted)");
        return -1;
    }
    if (o->ssh && !o->hostfile) {
        snprintf(err, errlen, "--ssh: only with --hostfile");
        return -1;
    }
    if (o->hostfile && g->host) {
        snprintf(err, errlen,
                 "--host: not with --hostfile (each task listens on its "
                 "hostfile host)");
        return -1;
    }
    int total = o->ps + (o->chief ? 1 : 0) + o->workers;
    if (o->port_base > 0 && o->port_base + total - 1 > 65535) {
        snprintf(err, errlen, "--port_base: %d + %d tasks go past port 65535",
                 o->port_base, total);
        return -1;
    }
    return 0;
}

/* The program's argument a as rf-trainer's boolean flag --elastic reads
 * it (one or two dashes, =true/1/false/0, --noelastic): 1 on, 0 off, -1
 * another argument. */
static int elastic_arg(const char *a)
{
    if (a[0] != '-')
        return -1;
    const char *n = a + (a[1] == '-' ? 2 : 1);
    if (!strcmp(n, "elastic") || !strcmp(n, "elastic=true") ||
        !strcmp(n, "elastic=1"))
        return 1;
    if (!strcmp(n, "noelastic") || !strcmp(n, "elastic=false") ||
        !strcmp(n, "elastic=0"))
        return 0;
    return -1;
}

int lt_opts_parse(int argc, char **argv, lt_opts *o, char *err, size_t errlen)
{
    *o = (lt_opts){.ps = -1, .workers = -1};
    given_flags g = {0};
    rf_flag_row rows[LT_FLAG_ROWS];
    lt_flag_rows(rows, o, &g);
    /* the flags end at the first "--"; the program follows */
    int dashdash = 1;
    while (dashdash < argc && strcmp(argv[dashdash], "--") != 0)
        dashdash++;
    rf_flag_table t = {
        .rows = rows, .exact_names = true, .no_dashed_values = true};
    rf_flag_error e;
    int n;
    if (rf_flags_parse(&t, dashdash, argv, &n, &e) != RF_FLAGS_OK) {
        table_error(&e, err, errlen);
        return -1;
    }
    if (n > 0) {
        snprintf(err, errlen,
                 "unexpected argument '%s' (put '--' before the program: "
                 "rf-launch --ps N --workers N -- PROGRAM ARGS...)",
                 RF_ECHO(argv[1]));
        return -1;
    }
    if (o->help || o->version)
        return 0;
    if (dashdash == argc) {
        snprintf(err, errlen,
                 "missing '--' before the program (rf-launch --ps N "
                 "--workers N -- PROGRAM ARGS...)");
        return -1;
    }
    int i = dashdash + 1;
    if (i >= argc || argv[i][0] == '\0') {
        snprintf(err, errlen, "no program after '--'");
        return -1;
    }
    if (check_flags(o, &g, err, errlen) != 0)
        return -1;
    if (o->chief)
        o->tf_config = true;
    o->prog = argv + i;
    o->prog_argc = argc - i;
    /* an elastic job (rf-trainer --elastic): its workers may change */
    for (int k = 1; k < o->prog_argc; k++) {
        int on = elastic_arg(o->prog[k]);
        if (on >= 0)
            o->elastic = on;
    }
    return 0;
}
