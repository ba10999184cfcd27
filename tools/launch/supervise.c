/* tools/launch/supervise.c: the event loop of rf-launch. One thread polls
 * the signalfd and every task's stdout and stderr pipes; task exits are
 * collected with waitpid(-1) (rf-launch is a child subreaper, so orphaned
 * descendants of the tasks come back to it and are reaped too).
 *
 * Phases: RUN (all tasks going) -> DRAIN (every worker and the chief
 * exited 0; the ps tasks get o->ps_grace_s to exit by themselves) -> done;
 * a failed task, a signal or the timeout lead to STOP (the cause's signal
 * to every task's process group, o->grace_s to exit) -> KILL (SIGKILL) ->
 * done.
 *
 * With o->restart_on_failure, a task that fails in RUN and has restarts
 * left is not a failure of the launch: what is left of its process group
 * is killed and it is started again (task.c, same argv and environment)
 * once its backoff has passed, still in RUN. Entering DRAIN or STOP drops
 * the restarts still waiting; a task failing in DRAIN is a failure. A task
 * exiting 2 (a usage or configuration error, as rf-trainer's) is never
 * restarted: the same command would fail the same way; the launch stops
 * and exits 2. Every other failure (1, 138 the retryable one, a signal) is
 * restarted while restarts are left.
 *
 * An elastic job (o->elastic) changes its workers in RUN through the
 * control socket (control.c, elastic.c): "add N" appends N workers to the
 * table (cluster.c gives each the next worker index) and starts them like
 * the others; "remove" sends SIGTERM to a worker that is not the chief and
 * marks it removed: its end, whatever its status, is the worker leaving
 * the job, never a failure, never restarted, and the end of the training
 * no longer waits for it. */
#include "supervise.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "control.h"
#include "elastic.h"
#include "output.h"
#include "rdmaflow/clock.h"
#include "task.h"

/* After SIGKILL, how long to wait for the tasks before giving up. */
#define KILL_WAIT_MS 5000
/* After the last task, how long its descendants' pipes may stay open. */
#define FINAL_OUTPUT_MS 500

typedef enum phase { PH_RUN, PH_DRAIN, PH_STOP, PH_KILL } phase;

typedef struct sup {
    lt_task *t;
    int n;
    int *np;   /* the caller's count, kept equal to n */
    int cap;   /* the table's room (workers added up to it) */
    int ctlfd; /* the control socket, -1 if none */
    const lt_opts *o;
    const lt_sigstate *sig; /* what restarted tasks start with */
    int sigfd;
    phase ph;
    int64_t deadline; /* of the phase (DRAIN, STOP, KILL), rf_now_ms */
    int64_t timeout_at;
    int exit_code;
    int stop_sig; /* signal sent when entering STOP */
} sup;

static int running_count(const sup *s)
{
    int k = 0;
    for (int i = 0; i < s->n; i++)
        k += s->t[i].running;
    return k;
}

/* Tasks running or waiting to be restarted. */
static int live_count(const sup *s)
{
    int k = 0;
    for (int i = 0; i < s->n; i++)
        k += s->t[i].running || s->t[i].restart_at != 0;
    return k;
}

/* The earliest pending restart (rf_now_ms), 0 if none. */
static int64_t next_restart(const sup *s)
{
    int64_t next = 0;
    for (int i = 0; i < s->n; i++)
        if (s->t[i].restart_at && (!next || s->t[i].restart_at < next))
            next = s->t[i].restart_at;
    return next;
}

/* Drops every pending restart, saying why. */
static void cancel_restarts(sup *s, const char *why)
{
    for (int i = 0; i < s->n; i++)
        if (s->t[i].restart_at) {
            s->t[i].restart_at = 0;
            lt_msg("%s: restart cancelled: %s", s->t[i].name, why);
        }
}

static const char *sig_name(int sig)
{
    const char *a = sigabbrev_np(sig);
    return a ? a : "?";
}

static void signal_running(sup *s, int sig)
{
    for (int i = 0; i < s->n; i++)
        if (s->t[i].running)
            kill(-s->t[i].pid, sig);
}

static void enter_stop(sup *s, int sig)
{
    cancel_restarts(s, "stopping");
    s->ph = PH_STOP;
    s->stop_sig = sig;
    s->deadline = rf_now_ms() + (int64_t)(s->o->grace_s * 1000);
    signal_running(s, sig);
}

static void enter_kill(sup *s)
{
    s->ph = PH_KILL;
    s->deadline = rf_now_ms() + KILL_WAIT_MS;
    signal_running(s, SIGKILL);
}

static bool ok_status(int st)
{
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* Every chief and worker task has exited 0 (a removed one is gone). */
static bool workers_done(const sup *s)
{
    for (int i = 0; i < s->n; i++)
        if (s->t[i].job != LT_JOB_PS && !s->t[i].removed &&
            (s->t[i].running || !ok_status(s->t[i].wstatus)))
            return false;
    return true;
}

/* Why a failed task is not restarted, for the message: "" without
 * --restart_on_failure. */
static void no_restart_reason(const sup *s, const lt_task *t, char *buf,
                              size_t len)
{
    if (!s->o->restart_on_failure)
        buf[0] = '\0';
    else if (s->ph == PH_DRAIN)
        snprintf(buf, len, " once every worker had finished (not restarted)");
    else
        snprintf(buf, len, " after %d restart%s (--max_restarts %d)",
                 t->restarts, t->restarts == 1 ? "" : "s", s->o->max_restarts);
}

/* The task said its command line or configuration is wrong. */
static bool usage_status(int st)
{
    return WIFEXITED(st) && WEXITSTATUS(st) == LT_EXIT_USAGE;
}

static void task_failed(sup *s, const lt_task *t)
{
    char what[128], why[96];
    lt_describe_status(t->wstatus, what, sizeof what);
    no_restart_reason(s, t, why, sizeof why);
    bool usage = usage_status(t->wstatus);
    if (usage)
        snprintf(why, sizeof why, " (a usage or configuration error%s)",
                 s->o->restart_on_failure ? ": not restarted" : "");
    bool others = live_count(s) > 0;
    lt_msg("%s %s%s%s", t->name, what, why,
           others ? "; stopping the others" : "");
    s->exit_code = usage ? LT_EXIT_USAGE : LT_EXIT_FAILED;
    enter_stop(s, SIGTERM);
}

/* Backoff before a task's k-th restart (k >= 1). */
static int64_t restart_backoff_ms(int k)
{
    int64_t d = LT_RESTART_BACKOFF_MS;
    for (int i = 1; i < k && d < LT_RESTART_BACKOFF_MAX_MS; i++)
        d *= 2;
    return d < LT_RESTART_BACKOFF_MAX_MS ? d : LT_RESTART_BACKOFF_MAX_MS;
}

static bool may_restart(const sup *s, const lt_task *t)
{
    return s->o->restart_on_failure && s->ph == PH_RUN &&
           t->restarts < s->o->max_restarts && !usage_status(t->wstatus);
}

/* t has failed and will be restarted: what is left of its process group
 * is killed (a restarted task starts afresh, as a container does), and the
 * restart is due after the backoff. */
static void schedule_restart(sup *s, lt_task *t)
{
    char what[128];
    lt_describe_status(t->wstatus, what, sizeof what);
    int k = t->restarts + 1;
    int64_t d = restart_backoff_ms(k);
    kill(-t->pid, SIGKILL);
    t->restart_at = rf_now_ms() + d;
    lt_msg("%s %s; restarting it in %g s (restart %d of %d)", t->name, what,
           (double)d / 1000, k, s->o->max_restarts);
}

/* Starts the tasks whose restart is due (RUN only). A task that cannot be
 * started fails the launch. */
static void start_restarts(sup *s, int64_t now)
{
    for (int i = 0; i < s->n && s->ph == PH_RUN; i++) {
        lt_task *t = &s->t[i];
        if (!t->restart_at || now < t->restart_at)
            continue;
        t->restart_at = 0;
        /* The old run's pipes: what is still in them, then closed. */
        lt_lines_drain(&t->out);
        lt_lines_drain(&t->err);
        lt_lines_close(&t->out);
        lt_lines_close(&t->err);
        if (lt_task_start(t, s->sig) != RF_OK) {
            bool others = live_count(s) > 0;
            lt_msg("%s: restart %d failed: %s%s", t->name, t->restarts + 1,
                   rf_error_message(), others ? "; stopping the others" : "");
            s->exit_code = LT_EXIT_FAILED;
            enter_stop(s, SIGTERM);
            return;
        }
        t->restarts++;
    }
}

/* Every worker and the chief have exited 0: the training is over. Pending
 * restarts (of ps tasks) are dropped, and the ps tasks still running get
 * their grace. */
static void workers_finished(sup *s)
{
    cancel_restarts(s, "every worker has finished");
    if (running_count(s) > 0) {
        s->ph = PH_DRAIN;
        s->deadline = rf_now_ms() + (int64_t)(s->o->ps_grace_s * 1000);
    }
}

static void task_exited(sup *s, lt_task *t, int st)
{
    t->running = false;
    t->wstatus = st;
    /* The task is gone, so its output is complete: forward it before any
     * message about its end. */
    lt_lines_drain(&t->out);
    lt_lines_drain(&t->err);
    if (t->removed) {
        char what[128];
        lt_describe_status(st, what, sizeof what);
        lt_msg("%s %s: it left the job (--remove_worker; not restarted)",
               t->name, what);
        if (s->ph == PH_RUN && workers_done(s))
            workers_finished(s);
        return;
    }
    if (s->ph == PH_STOP || s->ph == PH_KILL)
        return;
    if (!ok_status(st)) {
        if (may_restart(s, t))
            schedule_restart(s, t);
        else
            task_failed(s, t);
        return;
    }
    if (s->ph == PH_RUN && workers_done(s))
        workers_finished(s);
}

static void reap(sup *s)
{
    for (;;) {
        int st;
        pid_t pid = waitpid(-1, &st, WNOHANG);
        if (pid <= 0)
            return;
        for (int i = 0; i < s->n; i++)
            if (s->t[i].running && s->t[i].pid == pid) {
                task_exited(s, &s->t[i], st);
                break;
            }
        /* else: an orphaned descendant of a task, now reaped */
    }
}

static void on_signal(sup *s, int sig)
{
    if (sig == SIGCHLD)
        return;
    if (s->ph == PH_RUN || s->ph == PH_DRAIN) {
        lt_msg("got SIG%s; stopping the tasks", sig_name(sig));
        s->exit_code = 128 + sig;
        enter_stop(s, sig);
    } else if (s->ph == PH_STOP) {
        lt_msg("got SIG%s again; killing the tasks", sig_name(sig));
        if (s->exit_code == LT_EXIT_OK)
            s->exit_code = 128 + sig;
        enter_kill(s);
    }
}

static void read_signals(sup *s)
{
    struct signalfd_siginfo si[8];
    ssize_t r = read(s->sigfd, si, sizeof si);
    for (ssize_t i = 0; r > 0 && i < r / (ssize_t)sizeof si[0]; i++)
        on_signal(s, (int)si[i].ssi_signo);
}

/* Moves to the next phase when the current one's deadline has passed.
 * Returns false when there is nothing more to wait for. */
static bool check_deadlines(sup *s, int64_t now)
{
    if (s->timeout_at && now >= s->timeout_at &&
        (s->ph == PH_RUN || s->ph == PH_DRAIN)) {
        lt_msg("timeout: tasks still running after %g s; stopping them",
               s->o->timeout_s);
        s->exit_code = LT_EXIT_TIMEOUT;
        enter_stop(s, SIGTERM);
    }
    if (s->ph == PH_RUN || now < s->deadline)
        return true;
    if (s->ph == PH_DRAIN) {
        for (int i = 0; i < s->n; i++)
            if (s->t[i].running)
                lt_msg("warning: %s still running %g s after every worker "
                       "finished; stopping it (SIGTERM)",
                       s->t[i].name, s->o->ps_grace_s);
        enter_stop(s, SIGTERM);
    } else if (s->ph == PH_STOP) {
        for (int i = 0; i < s->n; i++)
            if (s->t[i].running)
                lt_msg("%s did not exit within %g s of SIG%s; killing it",
                       s->t[i].name, s->o->grace_s, sig_name(s->stop_sig));
        enter_kill(s);
    } else {
        for (int i = 0; i < s->n; i++)
            if (s->t[i].running)
                lt_msg("%s (pid %d) still there %d s after SIGKILL; giving "
                       "up on it",
                       s->t[i].name, (int)s->t[i].pid, KILL_WAIT_MS / 1000);
        if (s->exit_code == LT_EXIT_OK)
            s->exit_code = LT_EXIT_FAILED;
        return false;
    }
    return true;
}

static void on_request(void *ctx, const char *req, char *reply, size_t len);

/* Polls the signalfd, the control socket and the open pipes for at most
 * timeout_ms. */
static void wait_events(sup *s, int timeout_ms, bool with_signals)
{
    struct pollfd *p = calloc((size_t)(2 * s->n + 2), sizeof *p);
    lt_lines **lines = calloc((size_t)(2 * s->n + 2), sizeof *lines);
    if (!p || !lines) {
        free(p);
        free(lines);
        rf_sleep_ms(timeout_ms < 0 || timeout_ms > 100 ? 100 : timeout_ms);
        return;
    }
    int k = 0;
    if (with_signals)
        p[k++] = (struct pollfd){.fd = s->sigfd, .events = POLLIN};
    if (with_signals && s->ctlfd >= 0)
        p[k++] = (struct pollfd){.fd = s->ctlfd, .events = POLLIN};
    for (int i = 0; i < s->n; i++) {
        lt_lines *ls[2] = {&s->t[i].out, &s->t[i].err};
        for (int j = 0; j < 2; j++)
            if (ls[j]->in_fd >= 0) {
                lines[k] = ls[j];
                p[k++] = (struct pollfd){.fd = ls[j]->in_fd, .events = POLLIN};
            }
    }
    int r = poll(p, (nfds_t)k, timeout_ms);
    for (int i = 0; r > 0 && i < k; i++) {
        if (!p[i].revents)
            continue;
        if (lines[i])
            lt_lines_pump(lines[i]);
        else if (p[i].fd == s->ctlfd)
            lt_control_serve(s->ctlfd, on_request, s);
        else
            read_signals(s);
    }
    free(p);
    free(lines);
}

static int poll_timeout(const sup *s, int64_t now)
{
    int64_t next = -1;
    if (s->ph != PH_RUN)
        next = s->deadline;
    else if (next_restart(s))
        next = next_restart(s);
    if (s->timeout_at && (s->ph == PH_RUN || s->ph == PH_DRAIN) &&
        (next < 0 || s->timeout_at < next))
        next = s->timeout_at;
    if (next < 0)
        return -1;
    int64_t d = next - now;
    return d < 0 ? 0 : d > 60000 ? 60000 : (int)d;
}

/* Our children, from /proc (CONFIG_PROC_CHILDREN); 0 if unknown. */
static int list_children(pid_t *out, int max)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int n = 0, pid;
    while (n < max && fscanf(f, "%d", &pid) == 1)
        out[n++] = pid;
    fclose(f);
    return n;
}

/* Children rf-launch had before it started any task (lt_note_inherited):
 * not descendants of the tasks, so never killed here. */
#define MAX_INHERITED 64
static pid_t inherited[MAX_INHERITED];
static int num_inherited;

void lt_note_inherited(void)
{
    num_inherited = list_children(inherited, MAX_INHERITED);
}

static bool was_inherited(pid_t pid)
{
    for (int i = 0; i < num_inherited; i++)
        if (inherited[i] == pid)
            return true;
    return false;
}

/* SIGKILLs what may be left of the tasks: their process groups, and every
 * remaining descendant (orphans reparented to us, including those that
 * left their group), reaping them, for at most about two seconds. */
static void kill_leftovers(sup *s)
{
    for (int i = 0; i < s->n; i++)
        if (s->t[i].pid > 0)
            kill(-s->t[i].pid, SIGKILL);
    for (int round = 0; round < 100; round++) {
        while (waitpid(-1, NULL, WNOHANG) > 0)
            ;
        pid_t kids[256];
        int k = list_children(kids, 256), left = 0;
        for (int i = 0; i < k; i++)
            if (!was_inherited(kids[i])) {
                kill(kids[i], SIGKILL);
                left++;
            }
        if (left == 0)
            break;
        rf_sleep_ms(20);
    }
}

/* One control request (control.h): the workers of an elastic job
 * (elastic.c), only while the job runs. */
static void on_request(void *ctx, const char *req, char *reply, size_t len)
{
    sup *s = ctx;
    lt_elastic e = {.t = s->t,
                    .n = &s->n,
                    .cap = s->cap,
                    .o = s->o,
                    .sig = s->sig,
                    .running = s->ph == PH_RUN};
    lt_elastic_request(&e, req, reply, len);
    *s->np = s->n;
}

int lt_supervise(lt_task *t, int *n, int cap, const lt_opts *o,
                 const lt_sigstate *sig, int sigfd, int ctlfd, int64_t start_ms)
{
    sup s = {.t = t,
             .n = *n,
             .np = n,
             .cap = cap,
             .ctlfd = ctlfd,
             .o = o,
             .sig = sig,
             .sigfd = sigfd,
             .ph = PH_RUN};
    if (o->timeout_s > 0)
        s.timeout_at = start_ms + (int64_t)(o->timeout_s * 1000);
    for (;;) {
        reap(&s);
        if (live_count(&s) == 0)
            break;
        int64_t now = rf_now_ms();
        if (!check_deadlines(&s, now))
            break;
        start_restarts(&s, now);
        wait_events(&s, poll_timeout(&s, now), true);
    }
    kill_leftovers(&s);
    /* Pipes still open belong to descendants that were just killed. */
    int64_t end = rf_now_ms() + FINAL_OUTPUT_MS;
    for (int64_t now = rf_now_ms(); now < end; now = rf_now_ms()) {
        bool open = false;
        for (int i = 0; i < s.n; i++)
            open |= t[i].out.in_fd >= 0 || t[i].err.in_fd >= 0;
        if (!open)
            break;
        wait_events(&s, (int)(end - now), false);
    }
    for (int i = 0; i < s.n; i++) {
        lt_lines_close(&t[i].out);
        lt_lines_close(&t[i].err);
    }
    return s.exit_code;
}

void lt_stop_all(lt_task *t, int n, const lt_opts *o, int sigfd)
{
    sup s = {.t = t,
             .n = n,
             .np = &n,
             .cap = n,
             .ctlfd = -1,
             .o = o,
             .sigfd = sigfd,
             .ph = PH_RUN};
    enter_stop(&s, SIGTERM);
    for (;;) {
        reap(&s);
        if (running_count(&s) == 0)
            break;
        int64_t now = rf_now_ms();
        if (!check_deadlines(&s, now))
            break;
        wait_events(&s, poll_timeout(&s, now), true);
    }
    kill_leftovers(&s);
    for (int i = 0; i < n; i++) {
        lt_lines_drain(&t[i].out);
        lt_lines_drain(&t[i].err);
        lt_lines_close(&t[i].out);
        lt_lines_close(&t[i].err);
    }
}
