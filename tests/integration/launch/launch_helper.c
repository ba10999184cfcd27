/* tests/integration/launch/launch_helper.c: the "program" rf-launch runs in
 * its tests. It finds out which task it is from the appended classic flags
 * (--job_name, --task_index) or TF_CONFIG, then does what its own options
 * say:
 *   --echo               print its argv and TF_CONFIG (parsed) and exit 0
 *   --spam=N             N checkable lines on stdout and N on stderr, each
 *                        written in several pieces
 *   --write-trace        write a synthetic Chrome trace to --trace=FILE
 *   --corrupt-trace=T    task T writes a truncated trace instead
 *   --no-trace=T         task T writes no trace
 *   --epoch=US           traces carry otherData.rf_epoch_us = US * (k+1)
 *   --grandchild[=setsid] fork a child that sleeps (in a new session)
 *   --ignore-term        ignore SIGTERM and SIGINT
 *   --ready              print "ready" once set up
 *   --exit=T:CODE:MS     task T exits with CODE after MS ms
 *   --kill=T:SIG:MS      task T kills itself with SIG after MS ms
 *   --then=A, --ps-then=A  then (ps tasks: --ps-then): "exit" (0), "forever"
 *                        (until a signal), or a number of ms then exit 0
 *   --marker=X           ignored (lets the tests find the processes)
 *   --runs=DIR           record this run (k = 1, 2, ... for each start of
 *                        the task) as DIR/<self>.<k>: "argv I X" per
 *                        argument, "env NAME=VALUE" per environment
 *                        variable, "pgroup_leader 0|1", "pdeathsig SIG",
 *                        and with RF_CLUSTER_SECRET_FILE "secret_file MODE
 *                        BYTES FNV" (octal mode, size, FNV-1a 64 of the
 *                        bytes: equal secrets, without showing them);
 *                        then DIR/<self>.<k>.t: "<rf_now_ms> <pid>" (made
 *                        by rename, so whole when it appears); with
 *                        --grandchild, DIR/<self>.<k>.gc: its pid
 *   --crash=T:SIG:RUNS   task T kills itself with SIG in its first RUNS
 *                        runs (needs --runs), after "ready"
 *   --await-run=T:K      wait until run K of task T is recorded (--runs)
 *   --await-gone=T:K     wait until run K of task T has ended and been
 *                        reaped (its pid is gone)
 *                        (each wait: at most 30 s, then exit 7; task T
 *                        itself does not wait)
 * Separate mode: launch_helper --check-trace FILE prints a summary of a
 * merged trace ("process <pid> <name>", "events <pid> <count>", ...). */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rdmaflow/clock.h"

static char self[32] = "?";
static const char *job = "", *trace_path, *runs_dir;
static int task_index = -1;
static long run_no; /* this run of the task (--runs), from 1 */

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0)
            exit(9);
        p += w;
        n -= (size_t)w;
    }
}

static void whoami(void)
{
    if (*job) {
        snprintf(self, sizeof self, "%s%d", job, task_index);
        return;
    }
    const char *tc = getenv("TF_CONFIG");
    json_object *root = tc ? json_tokener_parse(tc) : NULL, *task, *type, *idx;
    if (root && json_object_object_get_ex(root, "task", &task) &&
        json_object_object_get_ex(task, "type", &type) &&
        json_object_object_get_ex(task, "index", &idx)) {
        const char *ty = json_object_get_string(type);
        if (!strcmp(ty, "chief"))
            snprintf(self, sizeof self, "chief");
        else
            snprintf(self, sizeof self, "%s%d", ty, json_object_get_int(idx));
    }
    json_object_put(root);
}

static void echo(int argc, char **argv)
{
    printf("argc %d\n", argc);
    for (int i = 0; i < argc; i++)
        printf("argv %d %s\n", i, argv[i]);
    const char *tc = getenv("TF_CONFIG");
    printf("tf_config %s\n", tc ? tc : "(unset)");
    json_object *root = tc ? json_tokener_parse(tc) : NULL, *cl, *task;
    if (root && json_object_object_get_ex(root, "cluster", &cl)) {
        json_object_object_foreach(cl, key, val)
        {
            printf("tf_cluster %s", key);
            for (size_t i = 0; i < json_object_array_length(val); i++)
                printf(
                    "%s%s", i ? "," : " ",
                    json_object_get_string(json_object_array_get_idx(val, i)));
            printf("\n");
        }
    }
    if (root && json_object_object_get_ex(root, "task", &task))
        printf("tf_task %s\n",
               json_object_to_json_string_ext(task, JSON_C_TO_STRING_PLAIN));
    json_object_put(root);
    printf("self %s\n", self);
}

/* Line k of a stream: "<self> <stream> <k> <payload>", payload of length
 * 1 + (k * 37) % 3000 made of letter 'a' + k % 26. */
static void spam(int n)
{
    static char buf[4096];
    unsigned seed = (unsigned)getpid();
    for (int k = 0; k < n; k++) {
        for (int s = 0; s < 2; s++) {
            int off = snprintf(buf, sizeof buf, "%s %s %d ", self,
                               s ? "err" : "out", k);
            int len = 1 + (k * 37) % 3000;
            memset(buf + off, 'a' + k % 26, (size_t)len);
            buf[off + len] = '\n';
            size_t total = (size_t)off + (size_t)len + 1, done = 0;
            while (done < total) { /* pieces of random size */
                size_t piece = 1 + (size_t)rand_r(&seed) % (total - done);
                write_all(s ? 2 : 1, buf + done, piece);
                done += piece;
            }
        }
    }
}

static void write_trace(bool corrupt, double epoch)
{
    if (!trace_path)
        return;
    FILE *f = fopen(trace_path, "w");
    if (!f)
        exit(8);
    fprintf(f, "{\"traceEvents\":[\n");
    fprintf(f,
            "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
            "\"args\":{\"name\":\"own-%s\"}},\n",
            (int)getpid(), self);
    fprintf(f,
            "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":1,"
            "\"args\":{\"name\":\"worker 1\"}}",
            (int)getpid());
    for (int i = 0; i < 10; i++)
        fprintf(f,
                ",\n{\"name\":\"op%d\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%d."
                "125,\"dur\":1.5,\"pid\":%d,\"tid\":1,\"args\":{\"task\":\"%s"
                "\"}}",
                i, self, 100 + 10 * i, (int)getpid(), self);
    if (corrupt) {
        fprintf(f, ",\n{\"name\":\"cut");
    } else {
        fprintf(f, "\n],\"displayTimeUnit\":\"ms\"");
        if (epoch > 0)
            fprintf(f, ",\"otherData\":{\"rf_epoch_us\":%.3f}", epoch);
        fprintf(f, "}\n");
    }
    fclose(f);
}

static int check_trace(const char *path)
{
    json_object *root = json_object_from_file(path), *events, *other;
    if (!root || !json_object_object_get_ex(root, "traceEvents", &events)) {
        printf("bad %s\n", path);
        return 1;
    }
    int counts[64] = {0}, nopid = 0;
    double min_ts[64];
    for (int i = 0; i < 64; i++)
        min_ts[i] = 1e300;
    for (size_t i = 0; i < json_object_array_length(events); i++) {
        json_object *ev = json_object_array_get_idx(events, i), *pid, *name,
                    *ph, *args, *v, *ts;
        if (!json_object_object_get_ex(ev, "pid", &pid)) {
            nopid++;
            continue;
        }
        int p = json_object_get_int(pid);
        if (p < 0 || p >= 64)
            continue;
        counts[p]++;
        json_object_object_get_ex(ev, "name", &name);
        json_object_object_get_ex(ev, "ph", &ph);
        const char *nm = json_object_get_string(name);
        if (!strcmp(json_object_get_string(ph), "M") &&
            json_object_object_get_ex(ev, "args", &args)) {
            if (!strcmp(nm, "process_name") &&
                json_object_object_get_ex(args, "name", &v))
                printf("process %d %s\n", p, json_object_get_string(v));
            if (!strcmp(nm, "process_sort_index") &&
                json_object_object_get_ex(args, "sort_index", &v))
                printf("sort %d %d\n", p, json_object_get_int(v));
            if (!strcmp(nm, "thread_name"))
                printf("thread %d\n", p);
        } else if (json_object_object_get_ex(ev, "ts", &ts) &&
                   json_object_get_double(ts) < min_ts[p]) {
            min_ts[p] = json_object_get_double(ts);
        }
    }
    for (int p = 0; p < 64; p++)
        if (counts[p])
            printf("events %d %d first_ts %.3f\n", p, counts[p], min_ts[p]);
    printf("nopid %d\n", nopid);
    json_object *launch, *aligned;
    if (json_object_object_get_ex(root, "otherData", &other) &&
        json_object_object_get_ex(other, "rf_launch", &launch) &&
        json_object_object_get_ex(launch, "aligned", &aligned))
        printf("aligned %s\n", json_object_get_string(aligned));
    json_object_put(root);
    return 0;
}

/* The "secret_file" line of a record (see --runs). */
static void record_secret(FILE *f)
{
    const char *path = getenv("RF_CLUSTER_SECRET_FILE");
    struct stat sb;
    int fd = path ? open(path, O_RDONLY) : -1;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        if (path)
            fprintf(f, "secret_file missing\n");
        if (fd >= 0)
            close(fd);
        return;
    }
    uint64_t h = 14695981039346656037ull;
    unsigned char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        for (ssize_t i = 0; i < n; i++)
            h = (h ^ buf[i]) * 1099511628211ull;
    close(fd);
    fprintf(f, "secret_file %o %lld %016llx\n", (unsigned)(sb.st_mode & 07777),
            (long long)sb.st_size, (unsigned long long)h);
}

/* Writes this run's record (see --runs) and sets run_no. */
static void record_run(int argc, char **argv)
{
    extern char **environ;
    char path[4096], tmp[4096 + 8];
    FILE *f = NULL;
    for (run_no = 1; !f && run_no < 1000; run_no++) {
        snprintf(path, sizeof path, "%s/%s.%ld", runs_dir, self, run_no);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
        if (fd < 0 && errno != EEXIST)
            exit(6);
        if (fd >= 0 && !(f = fdopen(fd, "w")))
            exit(6);
    }
    if (!f)
        exit(6);
    run_no--;
    for (int i = 0; i < argc; i++)
        fprintf(f, "argv %d %s\n", i, argv[i]);
    for (char **e = environ; *e; e++)
        fprintf(f, "env %s\n", *e);
    int pdeathsig = 0;
    prctl(PR_GET_PDEATHSIG, &pdeathsig);
    fprintf(f, "pgroup_leader %d\npdeathsig %d\n", getpgrp() == getpid(),
            pdeathsig);
    record_secret(f);
    if (fclose(f) != 0)
        exit(6);
    snprintf(tmp, sizeof tmp, "%s.t.tmp", path);
    f = fopen(tmp, "w");
    if (!f)
        exit(6);
    fprintf(f, "%lld %d\n", (long long)rf_now_ms(), (int)getpid());
    snprintf(path + strlen(path), sizeof path - strlen(path), ".t");
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        exit(6);
}

/* --grandchild with --runs: its pid in DIR/<self>.<k>.gc. */
static void record_grandchild(pid_t pid)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.%ld.gc", runs_dir, self, run_no);
    FILE *f = fopen(path, "w");
    if (!f || fprintf(f, "%d\n", (int)pid) < 0 || fclose(f) != 0)
        exit(6);
}

/* "T:K" into the path of run K of task T's time file; *mine: T is this
 * task. */
static bool run_file(const char *v, char *path, size_t len, bool *mine)
{
    const char *c = strrchr(v, ':');
    if (!c || !runs_dir)
        return false;
    *mine = (size_t)(c - v) == strlen(self) && !strncmp(v, self, strlen(self));
    snprintf(path, len, "%s/%.*s.%s.t", runs_dir, (int)(c - v), v, c + 1);
    return true;
}

/* --await-run / --await-gone: polls every 10 ms, 30 s at most. */
static void await_run(const char *v, bool gone)
{
    char path[4096];
    bool mine;
    if (!run_file(v, path, sizeof path, &mine))
        exit(7);
    if (mine)
        return;
    for (int i = 0; i < 3000; i++, rf_sleep_ms(10)) {
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        long long ms;
        int pid = 0;
        bool read = fscanf(f, "%lld %d", &ms, &pid) == 2;
        fclose(f);
        if (!read)
            exit(7);
        if (!gone || (kill(pid, 0) != 0 && errno == ESRCH))
            return;
    }
    exit(7);
}

/* "T:A:B" for this task? */
static bool for_me(const char *v, long *a, long *b)
{
    const char *c = strchr(v, ':');
    if (!c || (size_t)(c - v) != strlen(self) || strncmp(v, self, strlen(self)))
        return false;
    return sscanf(c + 1, "%ld:%ld", a, b) == 2;
}

static bool is(const char *arg, const char *name, const char **val)
{
    size_t n = strlen(name);
    if (strncmp(arg, name, n) != 0)
        return false;
    if (arg[n] == '=') {
        *val = arg + n + 1;
        return true;
    }
    if (arg[n] == '\0') {
        *val = "";
        return true;
    }
    return false;
}

static void then(const char *action)
{
    if (!strcmp(action, "forever"))
        for (;;)
            pause();
    if (strcmp(action, "exit") != 0)
        rf_sleep_ms(atol(action));
    exit(0);
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--check-trace"))
        return check_trace(argv[2]);
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *v;
    for (int i = 1; i < argc; i++) {
        if (is(argv[i], "--job_name", &v))
            job = v;
        else if (is(argv[i], "--task_index", &v))
            task_index = atoi(v);
        else if (is(argv[i], "--trace", &v))
            trace_path = v;
        else if (is(argv[i], "--runs", &v))
            runs_dir = v;
    }
    whoami();
    if (runs_dir)
        record_run(argc, argv);
    const char *then_all = "exit", *then_ps = NULL;
    bool ready = false;
    long exit_code = -1, exit_ms = 0, kill_sig = 0, kill_ms = 0;
    long crash_sig = 0, crash_runs = 0;
    const char *await_run_v = NULL, *await_gone_v = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        long x, y;
        if (is(a, "--echo", &v))
            echo(argc, argv);
        else if (is(a, "--spam", &v))
            spam(atoi(v));
        else if (is(a, "--write-trace", &v)) {
            bool corrupt = false, none = false;
            double epoch = 0;
            for (int j = 1; j < argc; j++) {
                corrupt |=
                    is(argv[j], "--corrupt-trace", &v) && !strcmp(v, self);
                none |= is(argv[j], "--no-trace", &v) && !strcmp(v, self);
                if (is(argv[j], "--epoch", &v))
                    epoch = atof(v) * (1 + task_index + (*job == 'w') * 10);
            }
            if (!none)
                write_trace(corrupt, epoch);
        } else if (is(a, "--grandchild", &v)) {
            pid_t pid = fork();
            if (pid == 0) {
                if (!strcmp(v, "setsid"))
                    setsid();
                for (;;)
                    pause();
            }
            if (pid > 0 && runs_dir)
                record_grandchild(pid);
        } else if (is(a, "--ignore-term", &v)) {
            signal(SIGTERM, SIG_IGN);
            signal(SIGINT, SIG_IGN);
        } else if (is(a, "--ready", &v))
            ready = true;
        else if (is(a, "--exit", &v) && for_me(v, &x, &y)) {
            exit_code = x;
            exit_ms = y;
        } else if (is(a, "--kill", &v) && for_me(v, &x, &y)) {
            kill_sig = x;
            kill_ms = y;
        } else if (is(a, "--crash", &v) && for_me(v, &x, &y)) {
            crash_sig = x;
            crash_runs = y;
        } else if (is(a, "--await-run", &v))
            await_run_v = v;
        else if (is(a, "--await-gone", &v))
            await_gone_v = v;
        else if (is(a, "--then", &v))
            then_all = v;
        else if (is(a, "--ps-then", &v))
            then_ps = v;
    }
    if (ready)
        printf("ready\n");
    if (crash_sig && run_no >= 1 && run_no <= crash_runs) {
        signal((int)crash_sig, SIG_DFL);
        kill(getpid(), (int)crash_sig);
    }
    if (await_run_v)
        await_run(await_run_v, false);
    if (await_gone_v)
        await_run(await_gone_v, true);
    if (kill_sig) {
        rf_sleep_ms(kill_ms);
        fflush(stdout);
        signal((int)kill_sig, SIG_DFL);
        kill(getpid(), (int)kill_sig);
    }
    if (exit_code >= 0) {
        rf_sleep_ms(exit_ms);
        printf("exiting with %ld\n", exit_code);
        exit((int)exit_code);
    }
    then(then_ps && !strcmp(job, "ps") ? then_ps : then_all);
}
