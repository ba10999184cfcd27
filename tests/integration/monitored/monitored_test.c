/* tests/integration/monitored/monitored_test.c: rf_monitored_test, the
 * monitored session's tests (rdmaflow/session.h, MonitoredTrainingSession):
 * this driver is the chief worker; its ps task is a child process (this
 * program re-executed as "--ps PORT WORKER_PORT"), killed with SIGKILL and
 * started again where a case needs a ps failure. Synthetic data, a small
 * model: x [16, 8] -> dense(4) -> mean softmax cross-entropy, Adagrad.
 *
 *   hooks      the call order of a caller's hook (begin once,
 *              after_create_session, before_run/after_run per run, end at
 *              close), the node it asked for fetched with the same value
 *              the caller got, chief-only hooks run on the chief,
 *              StopAtStepHook(num_steps=6) stops after exactly 6 runs,
 *              LoggingTensorHook every 2 runs, StepCounterHook, the
 *              CheckpointSaver (every 2 steps: model.ckpt-0, 2, 4, 6, and
 *              nothing more at the end), run after the stop and a second
 *              close refused
 *   nan        a NaN input: the run fails with RF_ERR_NUMERIC "NaN loss
 *              during training" and the session says stop
 *   recovery   the ps is SIGKILLed after 5 of 10 steps and started again:
 *              the next run recovers (the chief restores model.ckpt-3 into
 *              the new ps), hooks see after_create_session again, the last
 *              step stays 10 (12 runs in all), global_step ends at 10;
 *              MetricsHook writes a record per run: 12 steps, global_step
 *              4 after 5 (the restore), the same bytes every step before
 *              and after the recovery (the kernel and bias READ: 144),
 *              and the summary's counts
 *   sync_recovery
 *              the same with sync replicas (N = M = 1): the recreated
 *              shards' sync step follows the restored global_step
 *   stopped_ps the ps is SIGSTOPped after 5 steps and continued 4 s later
 *              (RF_PEER_TIMEOUT_MS=1500, so sock notices within seconds):
 *              the session is lost and created again, and since no ps
 *              restarted the chief adopts the variables as they are
 *              (nothing rolled back to model.ckpt-3): global_step goes on
 *              from 5, and the job ends at 10
 *   ledger_recovery
 *              rf_monitored_session_shard_next: batches reported after each
 *              step; the ps SIGKILLed after the 6th step and started again:
 *              the report recovers (model.ckpt-6), is stale (the loaded
 *              ledger had the shard returned) and deals the same shard
 *              from batch 5 (recorded at the save), training ends at 10
 *   failed_saves
 *              the checkpoint directory moved away after model.ckpt-2
 *              (max_failed_saves 3): the saves at 4 and 6 fail with one
 *              line, training goes on; moved back, 8 is saved with a
 *              "saved again" line; away again, a dangling symbolic link in
 *              its place, the third failed save in a row (14) fails the run
 * with RF_ERR_IO naming the directory and the error; the final save fails, the
 * directory comes back during the 5 s pause and the retry saves model.ckpt-14
 *              (it verifies)
 *   final_save the directory gone for good at the end: close fails with
 *              RF_ERR_IO after the retry, model.ckpt-0 alone
 *   refusals   bad hook and session options are refused naming the field,
 *              and the hooks handed over are freed (LeakSanitizer)
 *
 * `rf_monitored_test --case NAME` runs one case; RF_FABRIC, RF_TEST_HOST
 * and RF_TEST_TIME_SCALE as in the ps suite. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdmaflow/checkpoint.h"
#include "rdmaflow/clock.h"
#include "rdmaflow/cluster.h"
#include "rdmaflow/device.h"
#include "rdmaflow/graph.h"
#include "rdmaflow/session.h"
#include "tests/common/budget.h"
#include "tests/common/check.h"
#include "tests/common/net.h"
#include "tests/common/proc.h"
#include "tests/common/suite.h"

#define DIM   8
#define BATCH 16

static const char *host(void)
{
    const char *h = getenv("RF_TEST_HOST");
    return h && *h ? h : "127.0.0.1";
}

/* The cluster of one ps (ps_port) and one worker, as seen by job. */
static rf_cluster *cluster_of(const char *job, unsigned ps_port,
                              unsigned worker_port)
{
    char ps[300], wk[300];
    snprintf(ps, sizeof ps, "%s:%u", host(), ps_port);
    snprintf(wk, sizeof wk, "%s:%u", host(), worker_port);
    rf_cluster_flags f = {
        .ps_hosts = ps, .worker_hosts = wk, .job_name = job, .task_index = "0"};
    rf_cluster *c = NULL;
    CHECK_OK(rf_cluster_resolve(&f, NULL, &c));
    CHECK(c != NULL, "no cluster");
    return c;
}

/* The ps role: serve until the chief shuts it down. */
static int run_ps(unsigned ps_port, unsigned worker_port)
{
    rft_set_who("ps");
    rf_cluster *c = cluster_of("ps", ps_port, worker_port);
    rf_server *s = NULL;
    CHECK_OK(rf_server_start(c, NULL, &s));
    printf("READY\n");
    fflush(stdout);
    CHECK_OK(rf_server_join(s));
    rf_server_stop(s);
    rf_cluster_destroy(c);
    return 0;
}

/* ---- the chief's side ---------------------------------------------------- */

typedef struct fixture {
    unsigned ps_port, worker_port;
    rft_child ps;
    rf_cluster *cluster;
    rf_server *server;
    rf_replica_device_setter *setter;
    rf_graph *g;
    rf_executor *ex;
    rf_node *x, *y, *loss, *train_op, *gs;
    float xb[BATCH * DIM];
    int32_t yb[BATCH];
    char top[128]; /* this process's own: mkdtemp, removed by teardown */
    char dir[256]; /* the checkpoint directory: top/ckpt, not made yet */
} fixture;

static void start_ps(fixture *f)
{
    char a[16], b[16];
    snprintf(a, sizeof a, "%u", f->ps_port);
    snprintf(b, sizeof b, "%u", f->worker_port);
    const char *args[] = {"--ps", a, b, NULL};
    rft_spawn(&f->ps, "ps", NULL, args, RFT_STDIN_NULL);
    char rest[64];
    rft_expect(&f->ps, "READY", rest, sizeof rest, rft_ms(20000));
}

static void setup(fixture *f)
{
    memset(f, 0, sizeof *f);
    f->ps_port = rft_free_port(host());
    f->worker_port = rft_free_port(host());
    start_ps(f);
    f->cluster = cluster_of("worker", f->ps_port, f->worker_port);
    CHECK_OK(rf_server_start(f->cluster, NULL, &f->server));
    rf_cluster_desc desc;
    rf_cluster_device_desc(f->cluster, &desc);
    rf_replica_device_setter_options so;
    rf_replica_device_setter_options_init(&so);
    so.cluster = &desc;
    so.worker_device = "/job:worker/task:0";
    CHECK_OK(rf_replica_device_setter_create(&so, &f->setter));
    CHECK_OK(rf_graph_create(&f->g));
    rf_graph_set_seed(f->g, 7);
    CHECK_OK(rf_graph_push_replica_device_setter(f->g, f->setter));
    f->gs = rf_global_step(f->g);
    f->x = rf_placeholder(f->g, RF_F32, RF_SHAPE(-1, DIM), "x");
    f->y = rf_placeholder(f->g, RF_I32, RF_SHAPE(-1), "y");
    rf_node *logits = rf_dense(f->g, f->x, 4, RF_ACT_NONE, "logits");
    f->loss = rf_reduce_mean(
        f->g,
        rf_sparse_softmax_cross_entropy_with_logits(f->g, f->y, logits, NULL),
        NULL, 0, false, "loss");
    CHECK(rf_graph_status(f->g) == RF_OK, "%s", rf_graph_error(f->g));
    rf_optim_config cfg;
    CHECK_OK(rf_optim_defaults(RF_OPTIM_ADAGRAD, &cfg));
    cfg.learning_rate = 0.1f;
    CHECK_OK(rf_minimize(f->g, &cfg, f->loss, f->gs, &f->train_op));
    rf_device_fn_pop(f->g);
    CHECK_OK(rf_graph_initialize_variables(f->g));
    rf_executor_options eo = {.threads = 1};
    CHECK_OK(rf_executor_create(&eo, &f->ex));
    for (int i = 0; i < BATCH; i++) {
        for (int d = 0; d < DIM; d++)
            f->xb[i * DIM + d] = (float)((i * 7 + d * 3) % 11) / 11.0f - 0.5f;
        f->yb[i] = i % 4;
    }
    /* never a name an earlier process used: a directory a failed run left
     * behind would be restored from */
    snprintf(f->top, sizeof f->top, "/tmp/rf_monitored.XXXXXX");
    CHECK(mkdtemp(f->top) != NULL, "mkdtemp %s: %s", f->top, strerror(errno));
    snprintf(f->dir, sizeof f->dir, "%s/ckpt", f->top);
}

static void teardown(fixture *f, rf_monitored_session *ms)
{
    if (ms) {
        CHECK_OK(rf_monitored_session_shutdown_cluster(ms));
        rft_wait_ok(&f->ps, rft_ms(10000));
    } else {
        rft_kill(&f->ps);
    }
    rf_monitored_session_destroy(ms);
    rf_executor_destroy(f->ex);
    rf_graph_destroy(f->g);
    rf_replica_device_setter_destroy(f->setter);
    rf_server_stop(f->server);
    rf_cluster_destroy(f->cluster);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", f->top);
    CHECK(system(cmd) == 0, "%s", cmd);
}

/* One training run: fetches the loss and the train op. A run that ran
 * nothing (the job ended while the session recovered) leaves out with no
 * data, which the tests check for. */
static rf_status step(fixture *f, rf_monitored_session *ms, rf_tensor *out,
                      int64_t *gs)
{
    rf_node *feeds[] = {f->x, f->y}, *fetches[] = {f->loss, f->train_op};
    rf_tensor in[2] = {rf_tensor_make(RF_F32, RF_SHAPE(BATCH, DIM), f->xb),
                       rf_tensor_make(RF_I32, RF_SHAPE(BATCH), f->yb)};
    bool ended = false;
    rf_status st =
        rf_monitored_session_run(ms, feeds, in, 2, fetches, 2, out, gs, &ended);
    if (st == RF_OK && ended)
        memset(out, 0, 2 * sizeof *out);
    return st;
}

/* A caller's hook that records what it is called with. */
typedef struct recorder {
    rf_node *want;
    int begin, created, before, after, end;
    int64_t created_at[4];
    float last_value;
    char order[256];
} recorder;

static void note(recorder *r, char c)
{
    size_t n = strlen(r->order);
    if (n + 1 < sizeof r->order)
        r->order[n] = c;
}

static rf_status rec_begin(void *ctx, rf_monitored_session *ms)
{
    (void)ms;
    recorder *r = ctx;
    r->begin++;
    note(r, 'B');
    return RF_OK;
}

static rf_status rec_created(void *ctx, rf_monitored_session *ms,
                             int64_t global_step)
{
    (void)ms;
    recorder *r = ctx;
    if (r->created < 4)
        r->created_at[r->created] = global_step;
    r->created++;
    note(r, 'C');
    return RF_OK;
}

static size_t rec_before(void *ctx, rf_monitored_session *ms, rf_node **fetch,
                         size_t max)
{
    (void)ms;
    recorder *r = ctx;
    r->before++;
    note(r, '(');
    if (!r->want || max < 1)
        return 0;
    fetch[0] = r->want;
    return 1;
}

static rf_status rec_after(void *ctx, rf_monitored_session *ms,
                           const rf_run_values *v)
{
    (void)ms;
    recorder *r = ctx;
    r->after++;
    note(r, ')');
    if (r->want) {
        CHECK(v->num_results == 1, "%zu results, want 1", v->num_results);
        r->last_value = *rf_tensor_f32(&v->results[0]);
    }
    return RF_OK;
}

static rf_status rec_end(void *ctx, rf_monitored_session *ms)
{
    (void)ms;
    recorder *r = ctx;
    r->end++;
    note(r, 'E');
    return RF_OK;
}

static const rf_hook_ops recorder_ops = {
    .name = "recorder",
    .begin = rec_begin,
    .after_create_session = rec_created,
    .before_run = rec_before,
    .after_run = rec_after,
    .end = rec_end,
};

static char *read_all(FILE *f)
{
    static char buf[65536];
    rewind(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    return buf;
}

static int count(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static void case_hooks(void)
{
    fixture f;
    setup(&f);
    recorder rec = {.want = f.loss}, chief_rec = {0};
    FILE *log = tmpfile(), *lines = tmpfile();
    CHECK(log && lines, "tmpfile");
    rf_hook *h[4], *chief_only[1];
    CHECK_OK(rf_hook_create(&recorder_ops, &rec, &h[0]));
    CHECK_OK(rf_stop_at_step_hook_create(6, 0, &h[1]));
    CHECK_OK(rf_logging_hook_create(&f.loss, 1, 2, lines, &h[2]));
    CHECK_OK(rf_step_counter_hook_create(2, BATCH, lines, NULL, &h[3]));
    CHECK_OK(rf_hook_create(&recorder_ops, &chief_rec, &chief_only[0]));
    rf_monitored_session_options o;
    rf_monitored_session_options_init(&o);
    o.session.train_op = f.train_op;
    o.checkpoint_dir = f.dir;
    o.save_checkpoint_steps = 2;
    o.log_step_count_steps = 0; /* the caller's StepCounter above */
    o.hooks = h;
    o.num_hooks = 4;
    o.chief_only_hooks = chief_only;
    o.num_chief_only_hooks = 1;
    o.log = log;
    rf_monitored_session *ms = NULL;
    CHECK_OK(rf_monitored_session_create(f.server, f.g, f.ex, &o, &ms));
    CHECK(rf_monitored_session_is_chief(ms), "the driver is the chief");
    CHECK(rec.begin == 1 && rec.created == 1 && rec.created_at[0] == 0,
          "begin %d, after_create_session %d (at %lld)", rec.begin, rec.created,
          (long long)rec.created_at[0]);
    int runs = 0;
    int64_t gs = -1;
    while (!rf_monitored_session_should_stop(ms)) {
        rf_tensor out[2];
        CHECK_OK(step(&f, ms, out, &gs));
        runs++;
        CHECK(rec.last_value == *rf_tensor_f32(&out[0]),
              "the hook's loss %g differs from the caller's %g",
              (double)rec.last_value, (double)*rf_tensor_f32(&out[0]));
        CHECK(*(const int64_t *)out[1].data == gs, "train_op %lld, step %lld",
              (long long)*(const int64_t *)out[1].data, (long long)gs);
        CHECK(runs <= 6, "still running after %d runs", runs);
    }
    CHECK(runs == 6 && gs == 6, "%d runs, global_step %lld; want 6 and 6", runs,
          (long long)gs);
    rf_tensor out[2];
    CHECK_ST(step(&f, ms, out, &gs), RF_ERR_INVALID_ARG);
    CHECK_MSG("stop was requested");
    CHECK_OK(rf_monitored_session_close(ms));
    CHECK_ST(rf_monitored_session_close(ms), RF_ERR_INVALID_ARG);
    CHECK(strcmp(rec.order, "BC()()()()()()E") == 0, "hook calls %s",
          rec.order);
    CHECK(strcmp(chief_rec.order, "BC()()()()()()E") == 0,
          "chief-only hook calls %s", chief_rec.order);
    /* LoggingTensorHook at runs 1, 3, 5; StepCounter at steps 2, 4, 6 */
    const char *text = read_all(lines);
    rft_note("hook lines:\n%s", text);
    CHECK(count(text, "loss = ") == 3, "%d logging lines, want 3",
          count(text, "loss = "));
    CHECK(strstr(text, "global_step = 1") && strstr(text, "global_step = 5"),
          "logging lines at global_step 1 and 5");
    CHECK(count(text, "global_step/sec: ") == 3 &&
              count(text, "examples/sec: ") == 3,
          "%d step-counter lines, want 3", count(text, "global_step/sec: "));
    /* CheckpointSaver: at creation (0), 2, 4, 6; the end adds nothing */
    rf_ckpt_list l;
    CHECK_OK(rf_ckpt_dir_list(f.dir, &l));
    char names[512] = "";
    for (size_t i = 0; i < l.n; i++) {
        const char *b = strrchr(l.paths[i], '/');
        size_t used = strlen(names);
        snprintf(names + used, sizeof names - used, "%s%s", i ? " " : "",
                 b ? b + 1 : l.paths[i]);
    }
    rf_ckpt_list_free(&l);
    CHECK(strcmp(names,
                 "model.ckpt-6.safetensors model.ckpt-4.safetensors "
                 "model.ckpt-2.safetensors model.ckpt-0.safetensors") == 0,
          "checkpoints: %s", names);
    text = read_all(log);
    CHECK(count(text, "saved checkpoint") == 4, "%d saves logged, want 4:\n%s",
          count(text, "saved checkpoint"), text);
    CHECK(strstr(text, "session ready: initialised the variables"),
          "the chief initialised: %s", text);
    teardown(&f, ms);
    fclose(log);
    fclose(lines);
}

static void case_nan(void)
{
    fixture f;
    setup(&f);
    rf_hook *h[2];
    CHECK_OK(rf_stop_at_step_hook_create(0, 100, &h[0]));
    CHECK_OK(rf_nan_tensor_hook_create(f.loss, &h[1]));
    rf_monitored_session_options o;
    rf_monitored_session_options_init(&o);
    o.session.train_op = f.train_op;
    o.hooks = h;
    o.num_hooks = 2;
    o.log_step_count_steps = 0;
    rf_monitored_session *ms = NULL;
    CHECK_OK(rf_monitored_session_create(f.server, f.g, f.ex, &o, &ms));
    rf_tensor out[2];
    int64_t gs;
    CHECK_OK(step(&f, ms, out, &gs));
    f.xb[3] = NAN;
    CHECK_ST(step(&f, ms, out, &gs), RF_ERR_NUMERIC);
    CHECK_MSG("NaN loss during training (global_step 2)");
    CHECK(rf_monitored_session_should_stop(ms), "no stop after a NaN loss");
    teardown(&f, ms);
}

/* The recovery case's metrics file: a record per run (12), the restore
 * visible in global_step (4 after 5), every step's READ bytes those of the
 * kernel [8, 4] and bias [4] (144), before and after the new session, and
 * the summary's step count. */
static void check_metrics(const char *path)
{
    FILE *m = fopen(path, "r");
    CHECK(m != NULL, "%s: not written", path);
    char *text = read_all(m);
    fclose(m);
    int steps = 0, summaries = 0;
    long long gs[16] = {0};
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        const char *b = strstr(line, "\"bytes_read\":");
        if (strstr(line, "\"type\":\"summary\"")) {
            summaries++;
            CHECK(strstr(line, "\"steps\":12,"), "summary: %s", line);
            CHECK(b && atoll(b + 13) == 12 * 144, "summary bytes: %s", line);
            continue;
        }
        CHECK(strstr(line, "\"type\":\"step\"") && steps < 16, "%s", line);
        const char *g = strstr(line, "\"global_step\":");
        CHECK(g && b, "no global_step or bytes_read: %s", line);
        gs[steps++] = atoll(g + 14);
        CHECK(atoll(b + 13) == 144, "step %d read %lld bytes, want 144: %s",
              steps, atoll(b + 13), line);
    }
    CHECK(steps == 12 && summaries == 1, "%d step records, %d summaries", steps,
          summaries);
    CHECK(gs[4] == 5 && gs[5] == 4 && gs[11] == 10,
          "global_steps %lld, %lld, ..., %lld: want 5, 4 (restored), ... 10",
          gs[4], gs[5], gs[11]);
}

/* The options of the cases that lose their ps: a save every 3 steps into
 * f->dir, hooks h, the log into log, max_wait_secs 60 (scaled). */
static void recovery_options(const fixture *f, rf_hook **h, size_t num_hooks,
                             FILE *log, rf_monitored_session_options *o)
{
    rf_monitored_session_options_init(o);
    o->session.train_op = f->train_op;
    o->checkpoint_dir = f->dir;
    o->save_checkpoint_steps = 3;
    o->log_step_count_steps = 0;
    o->max_wait_secs = rft_ms(60000) / 1000;
    o->hooks = h;
    o->num_hooks = num_hooks;
    o->log = log;
}

static void recovery(bool sync)
{
    fixture f;
    setup(&f);
    recorder rec = {0};
    FILE *log = tmpfile();
    CHECK(log != NULL, "tmpfile");
    rf_hook *h[3];
    CHECK_OK(rf_hook_create(&recorder_ops, &rec, &h[0]));
    CHECK_OK(rf_stop_at_step_hook_create(10, 0, &h[1]));
    char mpath[300];
    snprintf(mpath, sizeof mpath, "%s.metrics.jsonl", f.dir);
    rf_metrics_options mo;
    rf_metrics_options_init(&mo);
    mo.path = mpath;
    mo.task = "worker:0";
    mo.every_n_steps = 1;
    mo.examples_per_step = BATCH;
    rf_metrics_writer *mw = NULL;
    CHECK_OK(rf_metrics_writer_open(&mo, &mw));
    CHECK_OK(rf_metrics_hook_create(mw, f.loss, NULL, &h[2]));
    rf_monitored_session_options o;
    recovery_options(&f, h, 3, log, &o);
    o.session.sync_replicas = sync; /* N = M = 1: the chief alone */
    rf_monitored_session *ms = NULL;
    CHECK_OK(rf_monitored_session_create(f.server, f.g, f.ex, &o, &ms));
    int runs = 0;
    int64_t gs = 0;
    rf_tensor out[2];
    for (; runs < 5; runs++)
        CHECK_OK(step(&f, ms, out, &gs));
    CHECK(gs == 5, "global_step %lld after 5 runs", (long long)gs);
    rft_kill(&f.ps); /* SIGKILL: the ps and its variables are gone */
    start_ps(&f);    /* a new incarnation, empty */
    int64_t seen[16];
    while (!rf_monitored_session_should_stop(ms)) {
        CHECK_OK(step(&f, ms, out, &gs));
        CHECK(out[0].data != NULL, "a run after the recovery ran nothing");
        seen[runs - 5] = gs;
        runs++;
        CHECK(runs <= 16, "still running after %d runs", runs);
    }
    const char *text = read_all(log);
    rft_note("log:\n%s", text);
    CHECK(rf_monitored_session_recoveries(ms) == 1, "%d recoveries, want 1",
          rf_monitored_session_recoveries(ms));
    CHECK(strstr(text, "session lost (RF_ERR_") && strstr(text, "restored ") &&
              strstr(text, "model.ckpt-3.safetensors, global_step 3"),
          "the log does not show a restore of model.ckpt-3:\n%s", text);
    /* the first run after the kill ran from step 3: 4, then 5 ... 10 */
    CHECK(seen[0] == 4, "the first run after the recovery ended at %lld",
          (long long)seen[0]);
    CHECK(runs == 12 && gs == 10,
          "%d runs ending at global_step %lld; want 12 runs and 10 (the last "
          "step is not moved by a recovery)",
          runs, (long long)gs);
    CHECK(rec.created == 2 && rec.created_at[1] == 3,
          "after_create_session %d times (2nd at %lld)", rec.created,
          (long long)rec.created_at[1]);
    CHECK_OK(rf_monitored_session_close(ms));
    CHECK_OK(rf_metrics_writer_summary(mw, NAN));
    check_metrics(mpath);
    teardown(&f, ms);
    rf_metrics_writer_close(mw);
    unlink(mpath);
    fclose(log);
}

static void case_recovery(void)
{
    recovery(false);
}

/* The same with sync replicas: the recreated shards' sync step is set to
 * the restored global_step, so the re-run step's tag matches. */
static void case_sync_recovery(void)
{
    recovery(true);
}

/* SIGCONTs the ps after a while, while the driver is blocked in a run. */
typedef struct waker {
    pid_t pid;
    int after_ms;
} waker;

static void *wake_later(void *arg)
{
    const waker *w = arg;
    usleep((useconds_t)w->after_ms * 1000u);
    kill(w->pid, SIGCONT);
    return NULL;
}

static void case_stopped_ps(void)
{
    setenv("RF_PEER_TIMEOUT_MS", "1500", 1); /* before the fabric opens */
    fixture f;
    setup(&f);
    FILE *log = tmpfile();
    CHECK(log != NULL, "tmpfile");
    rf_hook *h[1];
    CHECK_OK(rf_stop_at_step_hook_create(0, 10, &h[0]));
    rf_monitored_session_options o;
    recovery_options(&f, h, 1, log, &o);
    o.session.op_timeout_ms = 2000;
    rf_monitored_session *ms = NULL;
    CHECK_OK(rf_monitored_session_create(f.server, f.g, f.ex, &o, &ms));
    rf_tensor out[2];
    int64_t gs = 0, after = -1;
    for (int i = 0; i < 5; i++)
        CHECK_OK(step(&f, ms, out, &gs));
    CHECK(kill(f.ps.pid, SIGSTOP) == 0, "SIGSTOP");
    waker w = {.pid = f.ps.pid, .after_ms = 4000};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, wake_later, &w) == 0, "pthread_create");
    while (!rf_monitored_session_should_stop(ms)) {
        CHECK_OK(step(&f, ms, out, &gs));
        if (after < 0 && rf_monitored_session_recoveries(ms) > 0)
            after = gs;
    }
    pthread_join(t, NULL);
    const char *text = read_all(log);
    rft_note("log:\n%s", text);
    CHECK(rf_monitored_session_recoveries(ms) == 1, "%d recoveries, want 1",
          rf_monitored_session_recoveries(ms));
    CHECK(strstr(text, "adopted the variables") && !strstr(text, "restored "),
          "the chief did not adopt the surviving variables:\n%s", text);
    CHECK(after >= 6,
          "the first run after the recovery ended at global_step "
          "%lld: rolled back",
          (long long)after);
    CHECK(gs == 10, "global_step %lld at the end, want 10", (long long)gs);
    CHECK_OK(rf_monitored_session_close(ms));
    teardown(&f, ms);
    fclose(log);
}

/* The shard ledger's report through the monitored session
 * (rf_monitored_session_shard_next) when ps 0's death finds the worker
 * between a step and its report: the report recovers the session (the
 * restored checkpoint carries the ledger as it was at global_step 6) and
 * is made again, to the loaded ledger, which had the shard returned. */
static void case_ledger_recovery(void)
{
    fixture f;
    setup(&f);
    FILE *log = tmpfile();
    CHECK(log != NULL, "tmpfile");
    rf_hook *h[1];
    CHECK_OK(rf_stop_at_step_hook_create(0, 10, &h[0]));
    rf_monitored_session_options o;
    recovery_options(&f, h, 1, log, &o);
    rf_monitored_session *ms = NULL;
    CHECK_OK(rf_monitored_session_create(f.server, f.g, f.ex, &o, &ms));
    const rf_ps_shard_geometry geom = {
        .num_examples = 64 * BATCH, .batch_size = BATCH, .shard_batches = 8};
    rf_ps_shard_grant at, done;
    bool stale = true, ended = true;
    CHECK_OK(
        rf_monitored_session_shard_next(ms, &geom, NULL, &at, NULL, &ended));
    CHECK(!ended && at.batch == 0, "first grant: batch %u, ended %d", at.batch,
          ended);
    const uint32_t shard = at.shard;
    rf_tensor out[2];
    int64_t gs = 0;
    /* a save reads the ledger before its run's report: the one at
     * global_step 6 finds batches 0-4 recorded */
    for (int i = 0; i < 5; i++) {
        CHECK_OK(step(&f, ms, out, &gs));
        done = at;
        done.batch++;
        CHECK_OK(rf_monitored_session_shard_next(ms, &geom, &done, &at, &stale,
                                                 &ended));
        CHECK(!stale && !ended && at.shard == shard && at.batch == done.batch,
              "report %d: shard %u batch %u (stale %d, ended %d)", i, at.shard,
              at.batch, stale, ended);
    }
    CHECK(gs == 5 && at.batch == 5, "global_step %lld, batch %u", (long long)gs,
          at.batch);
    CHECK_OK(step(&f, ms, out, &gs)); /* batch 5, saved; then ps 0 dies */
    rft_kill(&f.ps);
    start_ps(&f);
    done = at;
    done.batch++;
    CHECK_OK(
        rf_monitored_session_shard_next(ms, &geom, &done, &at, &stale, &ended));
    const char *text = read_all(log);
    rft_note("log:\n%s", text);
    CHECK(rf_monitored_session_recoveries(ms) == 1, "%d recoveries, want 1",
          rf_monitored_session_recoveries(ms));
    CHECK(strstr(text, "SHARD_REQ") &&
              strstr(text, "model.ckpt-6.safetensors, global_step 6"),
          "the report did not recover from model.ckpt-6:\n%s", text);
    CHECK(stale && !ended && at.epoch == 0 && at.shard == shard &&
              at.batch == 5,
          "after the restore: epoch %u shard %u batch %u, stale %d, ended "
          "%d; want shard %u from batch 5 again, stale",
          at.epoch, at.shard, at.batch, stale, ended, shard);
    while (!rf_monitored_session_should_stop(ms)) {
        CHECK_OK(step(&f, ms, out, &gs));
        done = at;
        done.batch++;
        CHECK_OK(rf_monitored_session_shard_next(ms, &geom, &done, &at, &stale,
                                                 &ended));
        CHECK(!stale && !ended, "a report after the recovery: stale %d", stale);
    }
    CHECK(gs == 10 && rf_monitored_session_recoveries(ms) == 1,
          "global_step %lld at the end, %d recoveries", (long long)gs,
          rf_monitored_session_recoveries(ms));
    CHECK_OK(rf_monitored_session_close(ms));
    CHECK(rf_monitored_session_shard_next(ms, &geom, NULL, &at, NULL, NULL) ==
              RF_ERR_INVALID_ARG,
          "a ledger request after close was not refused");
    teardown(&f, ms);
    fclose(log);
}

/* Moves the checkpoint directory away (a directory that vanished; with
 * dangling, a symbolic link to nowhere left in its place) or back. */
static void move_dir(const fixture *f, bool away, bool dangling)
{
    char a[300], gone[300];
    snprintf(a, sizeof a, "%s.away", f->dir);
    snprintf(gone, sizeof gone, "%s.gone", f->dir);
    if (!away)
        CHECK(unlink(f->dir) == 0 || errno == ENOENT, "unlink %s", f->dir);
    CHECK(rename(away ? f->dir : a, away ? a : f->dir) == 0, "moving %s %s",
          f->dir, away ? "away" : "back");
    if (away && dangling)
        CHECK(symlink(gone, f->dir) == 0, "symlink %s", f->dir);
}

typedef struct mover {
    const fixture *f;
    int after_ms;
} mover;

static void *move_back_later(void *arg)
{
    const mover *m = arg;
    usleep((useconds_t)m->after_ms * 1000u);
    move_dir(m->f, false, false);
    return NULL;
}

/* The checkpoint files of f->dir, newest first, as "a b c". */
static void list_names(const fixture *f, char *names, size_t len)
{
    rf_ckpt_list l;
    CHECK_OK(rf_ckpt_dir_list(f->dir, &l));
    names[0] = '\0';
    for (size_t i = 0; i < l.n; i++) {
        const char *b = strrchr(l.paths[i], '/');
        size_t used = strlen(names);
        snprintf(names + used, len - used, "%s%s", i ? " " : "",
                 b ? b + 1 : l.paths[i]);
    }
    rf_ckpt_list_free(&l);
}

static rf_monitored_session *saver_session(fixture *f, FILE *log,
                                           int64_t save_steps, int max_failed)
{
    rf_hook *h[1];
    CHECK_OK(rf_stop_at_step_hook_create(0, 100, &h[0]));
    rf_monitored_session_options o;
    rf_monitored_session_options_init(&o);
    o.session.train_op = f->train_op;
    o.checkpoint_dir = f->dir;
    o.save_checkpoint_steps = save_steps;
    o.max_failed_saves = max_failed;
    o.log_step_count_steps = 0;
    o.hooks = h;
    o.num_hooks = 1;
    o.log = log;
    rf_monitored_session *ms = NULL;
    CHECK_OK(rf_monitored_session_create(f->server, f->g, f->ex, &o, &ms));
    return ms;
}

static void case_failed_saves(void)
{
    fixture f;
    setup(&f);
    FILE *log = tmpfile();
    CHECK(log != NULL, "tmpfile");
    rf_monitored_session *ms = saver_session(&f, log, 2, 3);
    rf_tensor out[2];
    int64_t gs = 0;
    for (int i = 0; i < 2; i++)
        CHECK_OK(step(&f, ms, out, &gs));
    /* saves at 4 and 6 fail; training goes on */
    move_dir(&f, true, false);
    for (int i = 0; i < 4; i++)
        CHECK_OK(step(&f, ms, out, &gs));
    const char *text = read_all(log);
    CHECK(count(text, "checkpoint not saved at") == 1,
          "%d 'not saved' lines, want 1:\n%s",
          count(text, "checkpoint not saved at"), text);
    CHECK(strstr(text, "checkpoint not saved at global_step 4: ") &&
              strstr(text, "No such file or directory") &&
              strstr(text, "max_failed_saves=3"),
          "the first failure's line:\n%s", text);
    /* back: the save at 8 succeeds and says so */
    move_dir(&f, false, false);
    for (int i = 0; i < 2; i++)
        CHECK_OK(step(&f, ms, out, &gs));
    text = read_all(log);
    CHECK(strstr(text, "checkpoint saved again at global_step 8, after 2 "
                       "failed saves from global_step 4 on"),
          "no 'saved again' line:\n%s", text);
    char names[512];
    list_names(&f, names, sizeof names);
    CHECK(!strcmp(names, "model.ckpt-8.safetensors model.ckpt-2.safetensors "
                         "model.ckpt-0.safetensors"),
          "checkpoints: %s", names);
    /* a dangling symbolic link in its place: 10 and 12 fail, 14 is the
     * third in a row */
    move_dir(&f, true, true);
    for (int i = 0; i < 5; i++)
        CHECK_OK(step(&f, ms, out, &gs));
    CHECK_ST(step(&f, ms, out, &gs), RF_ERR_IO);
    CHECK_MSG("3 checkpoint saves in a row into");
    CHECK_MSG(f.dir);
    CHECK_MSG("(max_failed_saves=3, the first at global_step 10)");
    CHECK_MSG("No such file or directory");
    text = read_all(log);
    CHECK(count(text, "checkpoint not saved at") == 2,
          "%d 'not saved' lines, want 2 (one per run of failures):\n%s",
          count(text, "checkpoint not saved at"), text);
    /* the final save fails, the directory comes back during the pause,
     * the one retry saves it */
    mover m = {.f = &f, .after_ms = 2000};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, move_back_later, &m) == 0, "pthread_create");
    double t0 = rf_now_s();
    CHECK_OK(rf_monitored_session_close(ms));
    double took = rf_now_s() - t0;
    pthread_join(t, NULL);
    text = read_all(log);
    rft_note("close took %.1f s; log:\n%s", took, text);
    CHECK(took >= 4.5, "close took %.1f s: no pause before the retry", took);
    CHECK(strstr(text, "the final checkpoint (global_step 14) was not saved") &&
              strstr(text, "trying once more in 5 s") &&
              strstr(text, "checkpoint saved again at global_step 14"),
          "the final save's lines:\n%s", text);
    list_names(&f, names, sizeof names);
    CHECK(!strncmp(names, "model.ckpt-14.safetensors ", 26), "checkpoints: %s",
          names);
    char path[400];
    snprintf(path, sizeof path, "%s/model.ckpt-14.safetensors", f.dir);
    CHECK_OK(rf_ckpt_verify(path, NULL, NULL));
    teardown(&f, ms);
    fclose(log);
}

/* The final save fails twice (the directory gone for good): close fails
 * with RF_ERR_IO naming the final checkpoint, after one retry. */
static void case_final_save(void)
{
    fixture f;
    setup(&f);
    FILE *log = tmpfile();
    CHECK(log != NULL, "tmpfile");
    rf_monitored_session *ms = saver_session(&f, log, 0, 3);
    rf_tensor out[2];
    int64_t gs = 0;
    for (int i = 0; i < 3; i++)
        CHECK_OK(step(&f, ms, out, &gs));
    move_dir(&f, true, false);
    double t0 = rf_now_s();
    CHECK_ST(rf_monitored_session_close(ms), RF_ERR_IO);
    double took = rf_now_s() - t0;
    CHECK_MSG("the final checkpoint (global_step 3) was not saved, retried "
              "once");
    CHECK_MSG(f.dir);
    CHECK_MSG("No such file or directory");
    CHECK(took >= 4.5, "close took %.1f s: no pause before the retry", took);
    move_dir(&f, false, false);
    char names[512];
    list_names(&f, names, sizeof names);
    CHECK(!strcmp(names, "model.ckpt-0.safetensors"), "checkpoints: %s", names);
    teardown(&f, ms);
    fclose(log);
}

static void case_refusals(void)
{
    rf_hook *h = NULL;
    CHECK_ST(rf_stop_at_step_hook_create(0, 0, &h), RF_ERR_INVALID_ARG);
    CHECK_MSG("exactly one of num_steps");
    CHECK_ST(rf_stop_at_step_hook_create(3, 4, &h), RF_ERR_INVALID_ARG);
    CHECK_ST(rf_logging_hook_create(NULL, 0, 0, NULL, &h), RF_ERR_INVALID_ARG);
    CHECK_MSG("every_n_iter 0");
    CHECK_ST(rf_step_counter_hook_create(0, 1, NULL, NULL, &h),
             RF_ERR_INVALID_ARG);
    CHECK_ST(rf_checkpoint_saver_hook_create("", 1, 0, 5, NULL, &h),
             RF_ERR_INVALID_ARG);
    CHECK_MSG("a directory is required");
    CHECK_ST(rf_nan_tensor_hook_create(NULL, &h), RF_ERR_INVALID_ARG);
    CHECK(h == NULL, "a refused hook was returned");
    fixture f;
    setup(&f);
    /* SummarySaverHook: a writer, a period, 1..16 nodes with distinct tags */
    rf_summary_writer *w = NULL;
    CHECK_OK(rf_summary_writer_open(f.dir, &w)); /* teardown removes it */
    rf_node *two[2] = {f.loss, f.loss};
    const char *tags[2] = {"loss", "loss"};
    CHECK_ST(rf_summary_saver_hook_create(NULL, 1, 0, two, tags, 1, &h),
             RF_ERR_INVALID_ARG);
    CHECK_MSG("no summary writer");
    CHECK_ST(rf_summary_saver_hook_create(w, 0, 0, two, tags, 1, &h),
             RF_ERR_INVALID_ARG);
    CHECK_MSG("must be > 0");
    CHECK_ST(rf_summary_saver_hook_create(w, 1, 0, two, tags, 0, &h),
             RF_ERR_INVALID_ARG);
    CHECK_MSG("0 summaries (1 to 16)");
    CHECK_ST(rf_summary_saver_hook_create(w, 1, 0, two, tags, 2, &h),
             RF_ERR_INVALID_ARG);
    CHECK_MSG("tag 'loss' given twice");
    tags[1] = "";
    CHECK_ST(rf_summary_saver_hook_create(w, 1, 0, two, tags, 2, &h),
             RF_ERR_INVALID_ARG);
    CHECK_MSG("summary 1 has no tag");
    CHECK(h == NULL, "a refused hook was returned");
    CHECK_OK(rf_summary_writer_close(w));
    rf_hook *hooks[1];
    CHECK_OK(rf_stop_at_step_hook_create(0, 3, &hooks[0]));
    rf_monitored_session_options o;
    rf_monitored_session_options_init(&o);
    o.session.train_op = f.train_op;
    o.max_wait_secs = 0;
    o.hooks = hooks; /* freed by the refusal */
    o.num_hooks = 1;
    rf_monitored_session *ms = NULL;
    CHECK_ST(rf_monitored_session_create(f.server, f.g, f.ex, &o, &ms),
             RF_ERR_INVALID_ARG);
    CHECK_MSG("max_wait_secs 0");
    CHECK(ms == NULL, "a refused session was returned");
    rf_monitored_session_options_init(&o);
    o.session.train_op = f.train_op;
    o.save_checkpoint_secs = -1;
    CHECK_ST(rf_monitored_session_create(f.server, f.g, f.ex, &o, &ms),
             RF_ERR_INVALID_ARG);
    CHECK_MSG("save_checkpoint_secs -1");
    rf_monitored_session_options_init(&o);
    o.session.train_op = f.train_op;
    o.save_summaries_steps = -2;
    CHECK_ST(rf_monitored_session_create(f.server, f.g, f.ex, &o, &ms),
             RF_ERR_INVALID_ARG);
    CHECK_MSG("save_summaries_steps -2");
    rf_monitored_session_options_init(&o);
    o.session.train_op = f.train_op;
    o.num_summaries = 1;
    CHECK_ST(rf_monitored_session_create(f.server, f.g, f.ex, &o, &ms),
             RF_ERR_INVALID_ARG);
    CHECK_MSG("1 summaries without their nodes or tags");
    teardown(&f, NULL);
}

static const rft_case cases[] = {
    {.name = "hooks",
     .budget_s = 60,
     .run = case_hooks,
     .desc = "hook calls, StopAtStep, Logging, StepCounter, CheckpointSaver"},
    {.name = "nan",
     .budget_s = 60,
     .run = case_nan,
     .desc = "NanTensorHook stops the job with RF_ERR_NUMERIC"},
    {.name = "recovery",
     .budget_s = 120,
     .run = case_recovery,
     .desc = "a SIGKILLed ps: restored from the checkpoint, last step kept"},
    {.name = "sync_recovery",
     .budget_s = 120,
     .run = case_sync_recovery,
     .desc = "the recovery case with sync replicas (N = M = 1)"},
    {.name = "stopped_ps",
     .budget_s = 120,
     .run = case_stopped_ps,
     .desc = "a SIGSTOPped ps: the variables survive and are adopted"},
    {.name = "ledger_recovery",
     .budget_s = 120,
     .run = case_ledger_recovery,
     .desc = "a ledger report that finds ps 0 dead recovers and is stale"},
    {.name = "failed_saves",
     .budget_s = 90,
     .run = case_failed_saves,
     .desc = "failed saves: training goes on, saved again, max_failed_saves"},
    {.name = "final_save",
     .budget_s = 60,
     .run = case_final_save,
     .desc = "the final save failing twice fails close"},
    {.name = "refusals",
     .budget_s = 60,
     .run = case_refusals,
     .desc = "bad hook and session options"},
};
#define NCASES (sizeof cases / sizeof cases[0])

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--ps") == 0) {
        rft_proc_init(true);
        return run_ps((unsigned)atoi(argv[2]), (unsigned)atoi(argv[3]));
    }
    rft_set_who("chief");
    rft_proc_init(false);
    setvbuf(stdout, NULL, _IOLBF, 0);
    const rft_case *c = argc == 3 && strcmp(argv[1], "--case") == 0
                            ? rft_case_find(cases, NCASES, argv[2])
                            : NULL;
    if (!c) {
        fprintf(stderr, "usage: rf_monitored_test --case hooks|nan|recovery|"
                        "sync_recovery|stopped_ps|ledger_recovery|"
                        "failed_saves|final_save|"
                        "refusals\n");
        return 2;
    }
    char context[128];
    snprintf(context, sizeof context, "fabric %s",
             getenv("RF_FABRIC") ? getenv("RF_FABRIC") : "auto");
    return rft_case_run(c, context);
}
