/* tools/launch/opts.c: parses rf-launch's flags ("--name value" or
 * "--name=value") up to "--"; everything after "--" is the program and its
 * arguments. Every error names the flag. */
#include "opts.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/env.h"

void lt_opts_usage(FILE *f)
{
    fprintf(
        f,
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
        "its host removed when it ends); it is removed at the end.\n\n"
        "  --ps N          parameter-server tasks, 0..%d\n"
        "  --workers N     worker tasks, 0..%d (at least one worker or "
        "--chief)\n"
        "  --chief         add a separate chief task (TensorFlow's \"chief\" "
        "job;\n"
        "                  without it worker0 is the chief); implies "
        "--tf_config,\n"
        "                  as no classic flag names a chief\n"
        "  --tf_config     describe the cluster in each task's TF_CONFIG\n"
        "                  environment variable instead of flags (in flags "
        "mode an\n"
        "                  inherited TF_CONFIG is removed)\n"
        "  --host ADDR     address the tasks listen on (default 127.0.0.1)\n"
        "  --trace FILE    pass --trace=FILE.<task>.json to each task and "
        "merge\n"
        "                  those Chrome traces into FILE at the end\n"
        "  --metrics_dir DIR\n"
        "                  pass --metrics_out=DIR/<task>.jsonl to each task "
        "(made if\n"
        "                  missing)\n"
        "  --plot DIR      the same into DIR (or --metrics_dir), and at the "
        "end draw\n"
        "                  them with rf-plot into DIR: loss, accuracy and "
        "throughput\n"
        "                  per task (PNG; needs jq and gnuplot)\n"
        "  --timeout SECS  stop everything after SECS seconds (exit 124)\n"
        "  --grace SECS    wait after SIGTERM before SIGKILL (default 5)\n"
        "  --ps_grace SECS once every worker succeeded, wait this long for "
        "the ps\n"
        "                  tasks to exit before stopping them (default 10)\n"
        "  --restart_on_failure\n"
        "                  restart a task (ps, worker or chief) that exits\n"
        "                  non-zero or is killed by a signal, with the same "
        "argv,\n"
        "                  environment and port, after 1 s (doubling with "
        "each\n"
        "                  restart of that task, at most %d s); a task "
        "exiting 0\n"
        "                  is never restarted, nor is any once every worker "
        "has\n"
        "                  exited 0 or once rf-launch is stopping. The "
        "restarts of\n"
        "                  each task are printed at the end\n"
        "  --max_restarts N\n"
        "                  restarts per task, 0..%d (default %d; needs\n"
        "                  --restart_on_failure); a failure beyond them "
        "stops\n"
        "                  everything (exit 1)\n"
        "  --hostfile FILE run the tasks over ssh on the hosts of FILE "
        "(Open MPI's\n"
        "                  format: \"HOST [slots=N]\" lines, '#' "
        "comments; slots\n"
        "                  default 1), filling each host's slots in task "
        "order; each\n"
        "                  task listens on its host; the RF_* variables "
        "and\n"
        "                  TF_CONFIG go along, and it runs in this "
        "directory\n"
        "  --ssh CMD       the ssh command, split at blanks (default \""
        "ssh -o\n"
        "                  BatchMode=yes\"; e.g. \"ssh -p 2222 -i key\")\n"
        "  --port_base P   task k (in start order ps0.., chief, worker0..) "
        "listens\n"
        "                  on port P + k (default: ports free on this "
        "machine)\n"
        "  --keep_secret   keep the job's cluster secret file at the end and "
        "print\n"
        "                  its path (e.g. to start another task of the job "
        "by hand\n"
        "                  with RF_CLUSTER_SECRET_FILE)\n"
        "  --help          this message\n"
        "  --version       print the version and exit\n\n"
        "exit status: 0 success, 1 a task failed, 2 usage error, 124 "
        "timeout,\n"
        "128+N stopped by signal N\n",
        LT_MAX_TASKS_PER_JOB, LT_MAX_TASKS_PER_JOB,
        LT_RESTART_BACKOFF_MAX_MS / 1000, LT_MAX_RESTARTS_LIMIT,
        LT_DEFAULT_MAX_RESTARTS);
}

static int parse_count(const char *flag, const char *v, int max, int *out,
                       char *err, size_t errlen)
{
    char *end = NULL;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (*v == '\0' || *end != '\0' || (*v != '-' && (*v < '0' || *v > '9'))) {
        snprintf(err, errlen, "--%s: '%s' is not an integer", flag, RF_ECHO(v));
        return -1;
    }
    if (errno == ERANGE || x < 0 || x > max) {
        snprintf(err, errlen, "--%s: %s is out of range [0, %d]", flag,
                 RF_ECHO(v), max);
        return -1;
    }
    *out = (int)x;
    return 0;
}

static int parse_secs(const char *flag, const char *v, double min, double *out,
                      char *err, size_t errlen)
{
    char *end = NULL;
    errno = 0;
    double x = strtod(v, &end);
    if (*v == '\0' || *end != '\0' || !isfinite(x) ||
        !((*v >= '0' && *v <= '9') || *v == '.' || *v == '-')) {
        snprintf(err, errlen, "--%s: '%s' is not a number of seconds", flag,
                 RF_ECHO(v));
        return -1;
    }
    if (x < min || x > 1e6) {
        snprintf(err, errlen, "--%s: %s is out of range [%g, 1e6] seconds",
                 flag, RF_ECHO(v), min);
        return -1;
    }
    *out = x;
    return 0;
}

typedef enum flag_id {
    F_PS,
    F_WORKERS,
    F_CHIEF,
    F_TF_CONFIG,
    F_HOST,
    F_TRACE,
    F_METRICS_DIR,
    F_PLOT,
    F_TIMEOUT,
    F_GRACE,
    F_PS_GRACE,
    F_RESTART_ON_FAILURE,
    F_MAX_RESTARTS,
    F_HELP,
    F_VERSION,
    F_HOSTFILE,
    F_SSH,
    F_PORT_BASE,
    F_KEEP_SECRET,
} flag_id;

static const struct {
    const char *name;
    flag_id id;
    bool takes_value;
} flags[] = {
    {"ps", F_PS, true},
    {"workers", F_WORKERS, true},
    {"chief", F_CHIEF, false},
    {"tf_config", F_TF_CONFIG, false},
    {"host", F_HOST, true},
    {"trace", F_TRACE, true},
    {"metrics_dir", F_METRICS_DIR, true},
    {"plot", F_PLOT, true},
    {"timeout", F_TIMEOUT, true},
    {"grace", F_GRACE, true},
    {"ps_grace", F_PS_GRACE, true},
    {"restart_on_failure", F_RESTART_ON_FAILURE, false},
    {"max_restarts", F_MAX_RESTARTS, true},
    {"help", F_HELP, false},
    {"version", F_VERSION, false},
    /* several machines over ssh */
    {"hostfile", F_HOSTFILE, true},
    {"ssh", F_SSH, true},
    {"port_base", F_PORT_BASE, true},
    {"keep_secret", F_KEEP_SECRET, false},
};

static int set_flag(lt_opts *o, flag_id id, const char *name, const char *v,
                    char *err, size_t errlen)
{
    switch (id) {
    case F_PS:
        return parse_count(name, v, LT_MAX_TASKS_PER_JOB, &o->ps, err, errlen);
    case F_WORKERS:
        return parse_count(name, v, LT_MAX_TASKS_PER_JOB, &o->workers, err,
                           errlen);
    case F_CHIEF:
        o->chief = true;
        return 0;
    case F_TF_CONFIG:
        o->tf_config = true;
        return 0;
    case F_HOST:
        if (*v == '\0' || strpbrk(v, ", \t\"\\[]")) {
            snprintf(err, errlen, "--host: '%s' is not an address", RF_ECHO(v));
            return -1;
        }
        o->host = v;
        return 0;
    case F_TRACE:
        if (*v == '\0') {
            snprintf(err, errlen, "--trace: empty file name");
            return -1;
        }
        o->trace = v;
        return 0;
    case F_METRICS_DIR:
    case F_PLOT:
        if (*v == '\0') {
            snprintf(err, errlen, "--%s: empty directory name", name);
            return -1;
        }
        *(id == F_PLOT ? &o->plot_dir : &o->metrics_dir) = v;
        return 0;
    case F_TIMEOUT:
        if (parse_secs(name, v, 0, &o->timeout_s, err, errlen) != 0)
            return -1;
        if (o->timeout_s == 0) {
            snprintf(err, errlen, "--timeout: must be more than 0 seconds");
            return -1;
        }
        return 0;
    case F_GRACE:
        return parse_secs(name, v, 0, &o->grace_s, err, errlen);
    case F_PS_GRACE:
        return parse_secs(name, v, 0, &o->ps_grace_s, err, errlen);
    case F_RESTART_ON_FAILURE:
        o->restart_on_failure = true;
        return 0;
    case F_MAX_RESTARTS:
        return parse_count(name, v, LT_MAX_RESTARTS_LIMIT, &o->max_restarts,
                           err, errlen);
    case F_HELP:
        o->help = true;
        return 0;
    case F_VERSION:
        o->version = true;
        return 0;
    case F_HOSTFILE:
        if (*v == '\0') {
            snprintf(err, errlen, "--hostfile: empty file name");
            return -1;
        }
        o->hostfile = v;
        return 0;
    case F_SSH:
        if (v[strspn(v, " \t")] == '\0') {
            snprintf(err, errlen, "--ssh: empty command");
            return -1;
        }
        o->ssh = v;
        return 0;
    case F_KEEP_SECRET:
        o->keep_secret = true;
        return 0;
    case F_PORT_BASE:
        if (parse_count(name, v, 65535, &o->port_base, err, errlen) != 0)
            return -1;
        if (o->port_base == 0) {
            snprintf(err, errlen, "--port_base: 0 is not a port");
            return -1;
        }
        return 0;
    }
    return -1;
}

int lt_opts_parse(int argc, char **argv, lt_opts *o, char *err, size_t errlen)
{
    *o = (lt_opts){.ps = -1,
                   .workers = -1,
                   .host = "127.0.0.1",
                   .grace_s = 5,
                   .ps_grace_s = 10,
                   .max_restarts = -1}; /* -1: not given */
    int i = 1;
    bool dashdash = false, host_given = false;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            dashdash = true;
            i++;
            break;
        }
        if (!strcmp(a, "-h")) {
            o->help = true;
            continue;
        }
        if (strncmp(a, "--", 2) != 0) {
            snprintf(err, errlen,
                     "unexpected argument '%s' (put '--' before the program: "
                     "rf-launch --ps N --workers N -- PROGRAM ARGS...)",
                     RF_ECHO(a));
            return -1;
        }
        const char *body = a + 2;
        const char *eq = strchr(body, '=');
        size_t nlen = eq ? (size_t)(eq - body) : strlen(body);
        size_t k = 0;
        size_t nflags = sizeof flags / sizeof flags[0];
        while (k < nflags && (strlen(flags[k].name) != nlen ||
                              strncmp(flags[k].name, body, nlen) != 0))
            k++;
        if (k == nflags) {
            snprintf(err, errlen, "--%.*s%s: unknown flag (see --help)",
                     nlen > RF_ECHO_MAX ? RF_ECHO_MAX : (int)nlen, body,
                     nlen > RF_ECHO_MAX ? "..." : "");
            return -1;
        }
        const char *name = flags[k].name;
        const char *v = eq ? eq + 1 : NULL;
        if (!flags[k].takes_value && v) {
            snprintf(err, errlen, "--%s takes no value", name);
            return -1;
        }
        if (flags[k].takes_value && !v) {
            if (i + 1 >= argc || !strncmp(argv[i + 1], "--", 2)) {
                snprintf(err, errlen, "--%s: missing value", name);
                return -1;
            }
            v = argv[++i];
        }
        if (set_flag(o, flags[k].id, name, v ? v : "", err, errlen) != 0)
            return -1;
        host_given |= flags[k].id == F_HOST;
    }
    bool max_restarts_given = o->max_restarts >= 0;
    if (!max_restarts_given)
        o->max_restarts = LT_DEFAULT_MAX_RESTARTS;
    if (o->help || o->version)
        return 0;
    if (!dashdash) {
        snprintf(err, errlen,
                 "missing '--' before the program (rf-launch --ps N "
                 "--workers N -- PROGRAM ARGS...)");
        return -1;
    }
    if (i >= argc || argv[i][0] == '\0') {
        snprintf(err, errlen, "no program after '--'");
        return -1;
    }
    if (o->ps < 0) {
        snprintf(err, errlen, "--ps: required (number of ps tasks)");
        return -1;
    }
    if (o->workers < 0) {
        snprintf(err, errlen, "--workers: required (number of worker tasks)");
        return -1;
    }
    if (o->workers == 0 && !o->chief) {
        snprintf(err, errlen,
                 "--workers: 0 workers and no --chief leaves nothing to run");
        return -1;
    }
    if (max_restarts_given && !o->restart_on_failure) {
        snprintf(err, errlen,
                 "--max_restarts: needs --restart_on_failure (without it no "
                 "task is restarted)");
        return -1;
    }
    if (o->ssh && !o->hostfile) {
        snprintf(err, errlen, "--ssh: only with --hostfile");
        return -1;
    }
    if (o->hostfile && host_given) {
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
    if (o->chief)
        o->tf_config = true;
    o->prog = argv + i;
    o->prog_argc = argc - i;
    return 0;
}
