/* tools/launch/main.c: rf-launch, runs a whole ps/worker cluster on this
 * machine:
 *
 *   rf-launch --ps 2 --workers 2 -- rf-trainer --model mlp:256,128
 *
 * starts one process per task (ps0, ps1, worker0, worker1), each running
 * PROGRAM ARGS... plus the classic flags --ps_hosts= --worker_hosts=
 * --job_name= --task_index= (or, with --tf_config or --chief, a TF_CONFIG
 * environment variable instead), on ports reserved on --host. Each line of
 * their output goes to rf-launch's stdout or stderr prefixed "[worker1] ".
 * Tasks get stdin from /dev/null; a program writing to a pipe should flush
 * its lines (stdio buffers them fully otherwise).
 *
 * Ports: all are bound (port 0, read back) at once, so they are distinct,
 * and each stays bound until just before its own task is forked. What is
 * left is the moment between that close and the task's own bind, in which
 * another process on the machine could take the port; the task then fails
 * to listen, and so does the launch (run it again).
 *
 * Ending: when every worker (and the chief) has exited 0, the ps tasks get
 * --ps_grace seconds to exit by themselves (the chief tells them to); any
 * still running then is stopped with a warning, and the launch still
 * succeeds (exit 0): the training is complete, and TensorFlow-style ps
 * tasks never exit on their own. Any task exiting non-zero or killed by a
 * signal fails the launch: the others are sent SIGTERM, then SIGKILL after
 * --grace seconds, and rf-launch exits 1 naming the task and its status.
 * With --restart_on_failure that failure is first met by restarts, as a
 * cluster manager does (TFJob restartPolicy OnFailure): a task (ps, worker
 * or chief) exiting non-zero or killed by a signal while the job runs is
 * started again with the same argv, environment and port (its trace file,
 * with --trace, is written again), its output still prefixed "[name] ",
 * after what is left of its process group has been killed and after a
 * backoff of 1 s, doubling with each restart of that task up to 30 s;
 * rf-launch prints one line per restart ("ps1 was killed by signal 9
 * (SIGKILL); restarting it in 1 s (restart 1 of 3)"). A task that fails
 * once it has used --max_restarts restarts (default 3, 0 = none) fails the
 * launch as above, the message giving its restarts. A task exiting 2 (a
 * usage or configuration error) is never restarted: the launch stops and
 * exits 2, with or without the flag. A task exiting 0 is
 * never restarted; once every worker has exited 0 nothing is (a restart
 * still waiting is dropped, and a ps failing during its --ps_grace fails
 * the launch); a signal to rf-launch or --timeout (which counts from the
 * first start, restarts included) drops waiting restarts and stops
 * everything. The port of a task is free during its backoff: another
 * process could take it, and the restarted task then fails to listen. At
 * the end rf-launch prints the restarts of every task ("restarts: ps0 0,
 * ps1 1, worker0 0").
 * SIGINT / SIGTERM / SIGHUP to rf-launch are forwarded to every task's
 * process group (a second one kills them), exit 128 + signal; --timeout
 * stops everything, exit 124. A signal ignored when rf-launch starts (e.g.
 * SIGINT of a background job, SIGHUP under nohup) stays ignored.
 *
 * No process outlives rf-launch: each task (every run of it) leads its
 * own process group, which is killed at the end; rf-launch is a child
 * subreaper, so descendants that leave their group are found and killed too;
 * and every task has PR_SET_PDEATHSIG(SIGKILL) in case rf-launch itself is
 * killed (descendants of a task are then not covered).
 *
 * Several machines: with --hostfile FILE (Open MPI's "HOST [slots=N]"
 * lines) the tasks fill the hosts' slots in start order and each is
 * started as ssh (--ssh CMD) running it there (remote.c): in this
 * directory, with TF_CONFIG and the RF_* variables, listening on its host
 * and on a port free here (or --port_base P + k). Its output is prefixed
 * and its failure stops the job as above; stopping the ssh stops the
 * remote task (a watcher on ssh's stdin), and its exit status is ssh's.
 *
 * Authenticated by default: unless the user gives a cluster secret
 * (RF_CLUSTER_SECRET_FILE, or --cluster_secret_file among the program's
 * arguments, which is then used), rf-launch makes a fresh one for the
 * launch in a private run folder and gives it to every task, restarts
 * included; a --hostfile task gets it over ssh's stdin (secret.c,
 * remote.c). It is removed at the end (--keep_secret: kept, and its path
 * printed). The job also gets a fresh RF_JOB_TOKEN (unless rf-launch has
 * one; a --hostfile task gets it on ssh's stdin after the secret, so a
 * --hostfile job with the user's secret gets none): its tasks' tokens,
 * the same on every restart, without token files (secret.c).
 *
 * Elastic jobs (the program's arguments have --elastic): a second
 * rf-launch --add_worker / --remove_worker changes the workers of the
 * running job through a control socket in its run folder (control.c,
 * supervise.c); the job says where when it starts. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cluster.h"
#include "control.h"
#include "metrics.h"
#include "opts.h"
#include "rdmaflow/clock.h"
#include "rdmaflow/env.h"
#include "rdmaflow/file.h"
#include "rdmaflow/version.h"
#include "secret.h"
#include "supervise.h"
#include "task.h"
#include "trace_merge.h"

/* Blocks the signals rf-launch handles and returns a signalfd for them;
 * keeps in *orig what the tasks should start with. */
static int setup_signals(lt_sigstate *orig)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    static const int stops[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof stops / sizeof stops[0]; i++) {
        struct sigaction sa;
        if (sigaction(stops[i], NULL, &sa) == 0 && sa.sa_handler != SIG_IGN)
            sigaddset(&set, stops[i]);
    }
    if (sigprocmask(SIG_BLOCK, &set, &orig->mask) != 0)
        return -1;
    struct sigaction ign = {.sa_handler = SIG_IGN}, pipe_at_start;
    if (sigaction(SIGPIPE, &ign, &pipe_at_start) != 0)
        return -1;
    sigemptyset(&orig->dfl);
    if (pipe_at_start.sa_handler != SIG_IGN)
        sigaddset(&orig->dfl, SIGPIPE);
    return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* --trace: the merged file must be writable (rf_file_check_output: not a
 * directory, device, FIFO or socket, in a writable directory; a symbolic
 * link is followed), checked before any task starts; stale per-task files
 * go. */
static int prepare_trace(const lt_opts *o, lt_task *t, int n)
{
    if (rf_file_check_output(o->trace) != RF_OK) {
        lt_msg("--trace: %s", rf_error_message());
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (unlink(t[i].trace_path) != 0 && errno != ENOENT)
            lt_msg("--trace: cannot remove the old %s: %s", t[i].trace_path,
                   strerror(errno));
    return 0;
}

static int merge_traces(const lt_opts *o, const lt_task *t, int n)
{
    lt_trace_part *parts = calloc((size_t)n, sizeof *parts);
    if (!parts) {
        lt_msg("trace: out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++)
        parts[i] = (lt_trace_part){t[i].name, t[i].trace_path};
    int merged = lt_trace_merge(o->trace, parts, n);
    free(parts);
    if (merged == 0)
        lt_msg("trace: no task wrote a trace; %s not written", o->trace);
    else if (merged > 0)
        lt_msg("trace: %s: merged the traces of %d of %d tasks", o->trace,
               merged, n);
    return merged < 0 ? -1 : 0;
}

/* --restart_on_failure's summary: "restarts: ps0 0, ps1 1, worker0 0". */
static void print_restarts(const lt_task *t, int n)
{
    size_t cap = (size_t)n * (sizeof t->name + 16) + 1, len = 0;
    char *s = malloc(cap);
    if (!s) {
        lt_msg("restarts: out of memory");
        return;
    }
    s[0] = '\0';
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(s + len, cap - len, "%s%s %d", i ? ", " : "",
                                t[i].name, t[i].restarts);
    lt_msg("restarts: %s", s);
    free(s);
}

int main(int argc, char **argv)
{
    /* A malformed RF_LOG_LEVEL (or an RF_LOG_FILE that cannot be opened)
     * is a usage error, before anything runs. */
    if (rf_log_env_check() != RF_OK) {
        fprintf(stderr, "rf-launch: %s\n", rf_error_message());
        return 2;
    }
    /* the second invocation that changes a running elastic job */
    if (argc > 1 &&
        (!strncmp(argv[1], "--add_worker", 12) ||
         !strncmp(argv[1], "--remove_worker", 15)) &&
        (argv[1][argv[1][2] == 'a' ? 12 : 15] == '\0' ||
         argv[1][argv[1][2] == 'a' ? 12 : 15] == '='))
        return lt_control_client(argc, argv);
    lt_opts o;
    char err[512];
    if (lt_opts_parse(argc, argv, &o, err, sizeof err) != 0) {
        lt_msg("%s", err);
        return LT_EXIT_USAGE;
    }
    if (o.help) {
        lt_opts_usage(stdout);
        return LT_EXIT_OK;
    }
    if (o.version) {
        printf("rf-launch (rdmaflow) %s\n", rf_version());
        return LT_EXIT_OK;
    }
    lt_sigstate orig;
    int sigfd = setup_signals(&orig);
    if (sigfd < 0) {
        lt_msg("signal set-up: %s", strerror(errno));
        return LT_EXIT_FAILED;
    }
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
        lt_msg("warning: PR_SET_CHILD_SUBREAPER: %s (descendants that leave "
               "their process group may outlive the launch)",
               strerror(errno));
    lt_note_inherited();
    lt_secret secret;
    int trc = 0;
    if (lt_secret_prepare(&o, &secret, err, sizeof err) != 0 ||
        (trc = lt_job_token_prepare(&o, &secret, err, sizeof err)) != 0) {
        lt_msg("%s", err);
        lt_secret_finish(&secret, false);
        close(sigfd);
        return trc == -2 ? LT_EXIT_USAGE : LT_EXIT_FAILED;
    }
    lt_task *t = NULL;
    int n = 0;
    int rc = lt_cluster_create(&o, secret.path ? &secret : NULL, &t, &n, err,
                               sizeof err);
    if (rc != 0) {
        lt_msg("%s", err);
        lt_secret_finish(&secret, false);
        close(sigfd);
        return rc == -2 ? LT_EXIT_USAGE : LT_EXIT_FAILED;
    }
    if ((o.trace && prepare_trace(&o, t, n) != 0) ||
        ((o.metrics_dir || o.plot_dir) &&
         lt_metrics_prepare(&o, t, n, &orig) != 0)) {
        lt_cluster_free(t, n);
        lt_secret_finish(&secret, false);
        close(sigfd);
        return LT_EXIT_USAGE;
    }
    int ctlfd = -1;
    if (secret.dir) {
        ctlfd = lt_control_open(secret.dir, err, sizeof err);
        if (ctlfd < 0)
            lt_msg("warning: %s (rf-launch --add_worker and --remove_worker "
                   "cannot reach this job)",
                   err);
        else if (o.elastic && !o.hostfile)
            lt_msg("elastic job %d: change its workers with rf-launch "
                   "--add_worker [N] %s (or --remove_worker [N]; the job id "
                   "%d works too)",
                   (int)getpid(), secret.dir, (int)getpid());
    }
    int cap = lt_cluster_capacity(&o);
    int64_t start = rf_now_ms();
    int code = LT_EXIT_OK;
    for (int i = 0; i < n; i++)
        if (lt_task_start(&t[i], &orig) != RF_OK) {
            lt_msg("%s: %s%s", t[i].name, rf_error_message(),
                   i > 0 ? "; stopping the others" : "");
            lt_stop_all(t, n, &o, sigfd);
            code = LT_EXIT_FAILED;
            break;
        }
    if (code == LT_EXIT_OK)
        code = lt_supervise(t, &n, cap, &o, &orig, sigfd, ctlfd, start);
    lt_control_close(ctlfd, secret.dir);
    if (o.restart_on_failure)
        print_restarts(t, n);
    if (o.trace && merge_traces(&o, t, n) != 0 && code == LT_EXIT_OK)
        code = LT_EXIT_FAILED;
    /* not after a signal or --timeout: the user wants it to end */
    if (o.plot_dir && (code == LT_EXIT_OK || code == LT_EXIT_FAILED) &&
        lt_metrics_plot(&o, t, n, &orig) != 0 && code == LT_EXIT_OK)
        code = LT_EXIT_FAILED;
    lt_cluster_free(t, n);
    lt_secret_finish(&secret, o.keep_secret);
    close(sigfd);
    return code;
}
