/* tools/trainer/dist_worker.c: a worker task's life (MonitoredTrainingSession
 * in a classic TF 1.x trainer), on rdmaflow/session.h: start the server
 * (NUMA binding, fabric), build the model under replica_device_setter,
 * create the monitored session (wait for the ps tasks; the chief restores
 * the newest checkpoint of --checkpoint_dir or initialises, the others
 * wait for it; StopAtStepHook(last_step=--train_steps), NanTensorHook, and
 * on the chief StepCounterHook and CheckpointSaverHook), --explain, train
 * on this worker's part of the data until the session says stop
 * (recovering from ps, worker and chief failures on the way), then close:
 * the others announce they are done; the chief waits for them at most
 * --stop_grace_secs, pulls the final variables, saves the last checkpoint,
 * evaluates test accuracy, writes --variables_out and shuts the ps tasks
 * down, so a whole cluster ends by itself. The chief exits 0 only once
 * the final checkpoint is saved (durable: fsync'ed and renamed) and every
 * ps task acknowledged the shutdown. SIGTERM (preempt.h) stops the
 * training at the end of a step: the chief saves a checkpoint, and the
 * task exits 138 without announcing its end. A failure's exit status
 * comes from its rf_status (exit_status.h). An elastic worker (--elastic
 * or a sparse cluster) trains the batches the shard ledger deals, and
 * on SIGTERM, not being the chief, leaves the job (elastic.c: LEAVE, exit
 * 0) instead of exiting 138. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist.h"
#include "export.h"
#include "metrics.h"
#include "preempt.h"
#include "prom.h"
#include "rdmaflow/checkpoint.h"
#include "rdmaflow/clock.h"
#include "rdmaflow/file.h"
#include "report.h"
#include "train.h"

/* What the worker holds. */
typedef struct tr_worker {
    const tr_flags *f;
    const rf_cluster *cluster;
    const rf_cluster_task *self;
    int num_ps, num_workers; /* num_workers -1: a sparse cluster */
    bool elastic;            /* --elastic or a sparse cluster */
    rf_server *server;
    tr_session s;
    rf_monitored_session *ms;
    rf_metrics_writer *metrics; /* --metrics_out (NULL: none) */
    int64_t per_global_step;    /* examples in one global step */
    tr_ledger ledger;           /* elastic: the shard ledger's deals */
} tr_worker;

static int fail(const char *what, const char *msg)
{
    return tr_exit_fail(TR_EXIT_FAILED, what, msg);
}

/* Worker i's part of the training data: everything with one worker (so one
 * worker reproduces local training), else shard i of W, shuffled per
 * epoch with a seed of its own. An elastic worker (W unknown or changing)
 * trains the batches the shard ledger of ps task 0 deals (ledger.c), in
 * the set's file order within a shard, so each example of an epoch is
 * trained once whatever the membership does. */
static int select_data(const tr_worker *d, rf_dataset *train, rf_dataset **mine,
                       char *err, size_t errlen)
{
    const tr_flags *f = d->f;
    *mine = NULL;
    if (d->elastic) /* the ledger deals its batches (ledger.c) */
        return 0;
    if (d->num_workers == 1) {
        rf_dataset_set_shuffle(train, true, f->seed);
        return 0;
    }
    int id = d->self->worker_id;
    if (rf_dataset_shard(train, (uint32_t)d->num_workers, (uint32_t)id, f->seed,
                         mine) != RF_OK) {
        snprintf(err, errlen, "data shard %d of %d: %s", id, d->num_workers,
                 rf_error_message());
        return -1;
    }
    rf_dataset_set_shuffle(*mine, true, f->seed + (uint64_t)id);
    return 0;
}

/* The training loop: one monitored run per batch (fetching the loss and
 * the train op, whose value is the new global_step) until the session says
 * stop (StopAtStepHook(last_step=--train_steps)) or SIGTERM came; the
 * first --trace_steps steps are traced. 0, or the exit status of the
 * failure with err. */
static int train(tr_worker *d, rf_dataset *train, rf_trace *trace,
                 tr_train_result *res, char *err, size_t errlen)
{
    const tr_flags *f = d->f;
    tr_session *s = &d->s;
    res->steps = 0;
    res->first_loss = res->final_loss = NAN;
    res->seconds = 0;
    res->global_step = rf_monitored_session_global_step(d->ms);
    res->start_global_step = res->global_step;
    if (rf_monitored_session_should_stop(d->ms))
        return 0;
    size_t bs = (size_t)f->batch_size, dim = s->example_dim;
    tr_progress prog = {0};
    float *xb = malloc(bs * dim * sizeof *xb);
    int32_t *yb = malloc(bs * sizeof *yb);
    int rc = TR_EXIT_FAILED;
    if (!xb || !yb) {
        snprintf(err, errlen, "no memory for a batch of %zu", bs);
        goto out;
    }
    rf_node *feeds[] = {s->x, s->y};
    rf_tensor in[2] = {
        rf_tensor_make(RF_F32, RF_SHAPE((int64_t)bs, (int64_t)dim), xb),
        rf_tensor_make(RF_I32, RF_SHAPE((int64_t)bs), yb),
    };
    rf_node *fetches[] = {s->loss, s->train_op};
    rf_tensor out[2];
    if (d->elastic &&
        (rc = tr_ledger_start(&d->ledger, f, train, d->self->worker_id, d->ms,
                              err, errlen)) != 0)
        goto out;
    rc = TR_EXIT_FAILED;
    if (trace)
        rf_session_set_trace(rf_monitored_session_session(d->ms), trace);
    double t0 = rf_now_s();
    res->start_global_step = res->global_step;
    prog = (tr_progress){.t_log = t0,
                         .gs_log = res->global_step,
                         .cluster = d->self->is_chief,
                         .examples_per_global_step = d->per_global_step};
    while (!rf_monitored_session_should_stop(d->ms) && !tr_preempted()) {
        if (trace && res->steps == f->trace_steps)
            rf_session_set_trace(rf_monitored_session_session(d->ms), NULL);
        if (d->elastic) {
            if ((rc = tr_ledger_batch(&d->ledger, train, xb, yb, err,
                                      errlen)) != 0)
                goto out;
            rc = TR_EXIT_FAILED;
        } else if (rf_dataset_next_batch(train, bs, xb, yb) != RF_OK) {
            snprintf(err, errlen, "reading a batch: %s", rf_error_message());
            goto out;
        }
        bool ended = false;
        rf_status st = rf_monitored_session_run(d->ms, feeds, in, 2, fetches, 2,
                                                out, &res->global_step, &ended);
        if (st != RF_OK) {
            snprintf(err, errlen, "%s", rf_error_message());
            rc = tr_exit_status(st);
            goto out;
        }
        if (ended) /* the job ended while this task recovered */
            break;
        /* out[] is the session's: a recovery in the report frees it */
        float loss = *rf_tensor_f32(&out[0]);
        /* the batch's line, then its progress (ledger.c) */
        if (d->elastic && ((rc = tr_ledger_record(&d->ledger, res->global_step,
                                                  err, errlen)) != 0 ||
                           (rc = tr_ledger_report(&d->ledger, d->ms, &ended,
                                                  err, errlen)) != 0))
            goto out;
        if (ended) /* the job ended while the report recovered */
            break;
        rc = TR_EXIT_FAILED;
        if (tr_progress_step(f, &prog, res, loss, stdout, err, errlen) != 0)
            goto out;
    }
    res->seconds = rf_now_s() - t0;
    if (d->elastic)
        printf("worker %d: trained %" PRId64 " batches dealt by the shard "
               "ledger (%u epochs done)\n",
               d->self->index, d->ledger.batches, d->ledger.at.epochs_done);
    rc = 0;
out:
    tr_progress_finish(&prog, stdout);
    if (trace)
        rf_session_set_trace(rf_monitored_session_session(d->ms), NULL);
    free(xb);
    free(yb);
    return rc;
}

/* The chief's end of training: wait for the others (at most
 * --stop_grace_secs), pull the variables and save the last checkpoint
 * (rf_monitored_session_close), evaluate, export, shut the ps tasks down,
 * in that order: 0 only when all of it was done. A final save that failed
 * leaves the ps tasks serving the trained variables (nothing else holds
 * them) and exits with its status; so does a shutdown that a ps task did
 * not acknowledge. A worker that did not finish makes it exit 1 after all
 * of that: the job is over, a restart cannot bring the worker back. Else
 * the exit status of the failure, with err. */
static int chief_finish(tr_worker *d, rf_dataset *test, char *err,
                        size_t errlen)
{
    const tr_flags *f = d->f;
    rf_status cst = rf_monitored_session_close(d->ms);
    char missing[1200] = "";
    if (cst != RF_OK && cst != RF_ERR_TIMEOUT) {
        snprintf(err, errlen, "%s", rf_error_message());
        return tr_exit_status(cst);
    }
    if (cst == RF_ERR_TIMEOUT)
        snprintf(missing, sizeof missing, "%s", rf_error_message());
    printf("global_step at the end: %" PRId64 "\n",
           *(const int64_t *)rf_variable_data(d->s.global_step));
    fflush(stdout);
    double accuracy = NAN;
    if (tr_report_accuracy(f, &d->s, test, &accuracy, err, errlen) != 0)
        return TR_EXIT_FAILED;
    if (tr_metrics_finish(d->metrics, accuracy, NULL, err, errlen) != 0)
        return TR_EXIT_FAILED;
    if (f->variables_out &&
        tr_export_variables(d->s.g, f->variables_out, err, errlen) != 0)
        return TR_EXIT_FAILED;
    rf_status sst = rf_monitored_session_shutdown_cluster(d->ms);
    if (sst != RF_OK) {
        snprintf(err, errlen, "%s", rf_error_message());
        return tr_exit_status(sst);
    }
    printf("chief: ps tasks shut down\n");
    if (missing[0]) {
        snprintf(err, errlen, "%s", missing);
        return TR_EXIT_FAILED;
    }
    tr_exit_reason("the job finished at global_step %" PRId64
                   "%s%s, the ps tasks shut down",
                   *(const int64_t *)rf_variable_data(d->s.global_step),
                   f->checkpoint_dir ? ", its final checkpoint saved in " : "",
                   f->checkpoint_dir ? f->checkpoint_dir : "");
    return TR_EXIT_OK;
}

/* The monitored session's options and hooks from the flags. 0, or the
 * exit status of the failure with err (the readiness wait timed out:
 * retryable). */
static int create_session(tr_worker *d, char *err, size_t errlen)
{
    const tr_flags *f = d->f;
    rf_monitored_session_options mo;
    rf_node *summary_nodes[2];
    tr_monitored_options_fill(f, &d->s, d->per_global_step, summary_nodes, &mo);
    rf_hook *hooks[4] = {NULL, NULL, NULL, NULL};
    size_t n = 2;
    if (rf_stop_at_step_hook_create(0, f->train_steps, &hooks[0]) != RF_OK ||
        rf_nan_tensor_hook_create(d->s.loss, &hooks[1]) != RF_OK ||
        (d->metrics &&
         rf_metrics_hook_create(d->metrics, d->s.loss, d->s.accuracy,
                                &hooks[n++]) != RF_OK) ||
        (tr_prom_registry() &&
         rf_prometheus_hook_create(tr_prom_registry(), f->batch_size,
                                   &hooks[n++]) != RF_OK)) {
        snprintf(err, errlen, "%s", rf_error_message());
        for (size_t i = 0; i < n; i++)
            rf_hook_destroy(hooks[i]);
        return TR_EXIT_FAILED;
    }
    mo.hooks = hooks;
    mo.num_hooks = n;
    rf_status st =
        rf_monitored_session_create(d->server, d->s.g, d->s.ex, &mo, &d->ms);
    if (st != RF_OK) {
        snprintf(err, errlen, "%s", rf_error_message());
        return tr_exit_status(st);
    }
    return 0;
}

/* The server, the data, the model under replica_device_setter, and the
 * configuration lines. Returns 0, or the exit status having said what
 * failed. */
static int set_up(tr_worker *d, const char *who, rf_dataset **train_set,
                  rf_dataset **test, rf_replica_device_setter **setter,
                  double *t_load)
{
    const tr_flags *f = d->f;
    char err[2048];
    rf_server_options so = {.cluster_secret_file = f->cluster_secret_file,
                            .require_secret = f->require_secret,
                            .bind_addr = f->bind_addr,
                            .resolve_wait_secs = (int)f->max_wait_secs,
                            .elastic = d->elastic,
                            .member_timeout_ms =
                                (int)f->member_timeout_secs * 1000};
    rf_status st = rf_server_start(d->cluster, &so, &d->server);
    if (st != RF_OK)
        return tr_exit_fail_status(st, who, rf_error_message());
    if (tr_load_data(f, train_set, test, t_load, err, sizeof err) != 0)
        return fail("data", err);
    if (tr_make_setter(f, d->cluster, d->self, setter, err, sizeof err) != 0 ||
        tr_session_create(f, (int)rf_dataset_rows(*train_set),
                          (int)rf_dataset_cols(*train_set),
                          (int)rf_dataset_num_classes(*train_set), *setter,
                          &d->s, err, sizeof err) != 0)
        return fail("setup", err);
    tr_print_config(f, &d->s, *train_set, *test, tr_data_dir(f));
    if (d->elastic)
        printf("%s (worker id %d) of an elastic job%s, %d ps tasks; "
               "apply=%s%s\n",
               who, d->self->worker_id, d->self->is_chief ? " (chief)" : "",
               d->num_ps, f->apply, f->use_locking ? " with use_locking" : "");
    else
        printf("%s of %d workers%s, %d ps tasks; apply=%s%s\n", who,
               d->num_workers, d->self->is_chief ? " (chief)" : "", d->num_ps,
               f->apply, f->use_locking ? " with use_locking" : "");
    fflush(stdout);
    return 0;
}

/* --trace: the trace, its process named for the task. Returns 0 or 1. */
static int open_trace(const tr_worker *d, rf_trace **trace)
{
    char label[128];
    snprintf(label, sizeof label, "rf-trainer /job:%s/task:%d", d->self->job,
             d->self->index);
    if (rf_trace_create(trace) != RF_OK)
        return fail("--trace", rf_error_message());
    rf_trace_set_process(*trace, 0, label);
    return 0;
}

/* After training: a worker closes its session and metrics; the chief
 * ends the job (chief_finish). Returns the exit status. */
static int finish(tr_worker *d, const char *who, const tr_train_result *tr,
                  rf_dataset *test)
{
    char err[2048];
    if (d->self->is_chief) {
        int rc = chief_finish(d, test, err, sizeof err);
        return rc != 0 ? tr_exit_fail(rc, "chief", err) : 0;
    }
    rf_status st = rf_monitored_session_close(d->ms);
    if (st != RF_OK)
        return tr_exit_fail_status(st, who, rf_error_message());
    if (tr_metrics_finish(d->metrics, NAN, NULL, err, sizeof err) != 0)
        return fail("--metrics_out", err);
    printf("worker %d: done after %" PRId64 " steps\n", d->self->index,
           tr->steps);
    tr_exit_reason("%s done after %" PRId64 " steps, global_step %" PRId64, who,
                   tr->steps, tr->global_step);
    return 0;
}

/* SIGTERM stopped the training before the job's end: the chief saves a
 * checkpoint (the steps since the last one would be lost with it), no one
 * announces its end (the job goes on when the task is back). 138. */
static int preempted(tr_worker *d, const char *who, int64_t global_step)
{
    char saved[4400] = "", why[4600];
    tr_save_now(d->ms, d->f, d->self->is_chief, "SIGTERM", saved, sizeof saved);
    snprintf(why, sizeof why,
             "preempted: SIGTERM at global_step %" PRId64
             ", before the job's end%s",
             global_step, saved);
    return tr_exit_fail(TR_EXIT_RETRYABLE, who, why);
}

int tr_run_worker(const tr_flags *f, rf_cluster *cluster, FILE *explain)
{
    char err[2048];
    tr_worker d = {.f = f, .cluster = cluster, .ledger = {.fd = -1}};
    d.self = rf_cluster_self(cluster);
    d.num_ps = rf_cluster_num_ps(cluster);
    d.num_workers = rf_cluster_num_workers(cluster);
    d.elastic = f->elastic || rf_cluster_is_sparse(cluster);
    bool chief = d.self->is_chief;
    if (f->shards_out && !d.elastic)
        return tr_exit_fail(TR_EXIT_USAGE, "--shards_out",
                            "the shard ledger deals batches to elastic "
                            "workers only (--elastic or a TF_CONFIG "
                            "sparseCluster)");

    /* a global step is N workers' batches in sync training */
    d.per_global_step = tr_examples_per_global_step(f, d.num_workers);
    rf_dataset *train_set = NULL, *test = NULL, *mine = NULL;
    rf_replica_device_setter *setter = NULL;
    rf_trace *trace = NULL;
    int rc = 1;
    double t_load = 0;
    char who[64];
    snprintf(who, sizeof who, "%s %d", d.self->job, d.self->index);

    /* the chief makes (or checks) --checkpoint_dir before any work */
    if (chief && f->checkpoint_dir &&
        rf_monitored_session_check_checkpoint_dir(f->checkpoint_dir) != RF_OK)
        return tr_exit_fail(TR_EXIT_USAGE, "--checkpoint_dir",
                            rf_error_message());
    /* and --summary_dir (the same check: a directory it can write) */
    if (chief && f->summary_dir &&
        rf_monitored_session_check_checkpoint_dir(f->summary_dir) != RF_OK)
        return tr_exit_fail(TR_EXIT_USAGE, "--summary_dir", rf_error_message());
    if ((rc = set_up(&d, who, &train_set, &test, &setter, &t_load)) != 0)
        goto out;
    rc = TR_EXIT_FAILED;
    char task[64];
    tr_metrics_task(d.self, task, sizeof task);
    if (tr_metrics_open(f, task, d.per_global_step, &d.metrics, err,
                        sizeof err) != 0) {
        rc = fail("--metrics_out", err);
        goto out;
    }
    if ((rc = create_session(&d, err, sizeof err)) != 0) {
        rc = tr_exit_fail(rc, who, err);
        goto out;
    }
    tr_prom_ready();
    rc = TR_EXIT_FAILED;
    rf_node *feeds[] = {d.s.x, d.s.y}, *fetches[] = {d.s.loss, d.s.train_op};
    const rf_session_desc *desc = NULL;
    if (rf_session_describe(rf_monitored_session_session(d.ms), feeds, 2,
                            fetches, 2, &desc) != RF_OK) {
        rc = fail("setup", rf_error_message());
        goto out;
    }
    if (f->explain != TR_EXPLAIN_NONE &&
        tr_dist_explain(f, d.server, desc, explain, err, sizeof err) != 0) {
        rc = fail("--explain", err);
        goto out;
    }
    if (select_data(&d, train_set, &mine, err, sizeof err) != 0) {
        rc = fail("data", err);
        goto out;
    }
    if (f->trace_path && open_trace(&d, &trace) != 0)
        goto out;
    tr_train_result tr;
    tr_preempt_graceful(true); /* SIGTERM: stop at the end of a step */
    if ((rc = train(&d, mine ? mine : train_set, trace, &tr, err,
                    sizeof err)) != 0) {
        rc = tr_training_failed(d.ms, rc, err);
        goto out;
    }
    if (tr_preempted() && !rf_monitored_session_should_stop(d.ms)) {
        /* an elastic worker leaves the job (scale-down), exit 0 */
        rc = d.elastic && !chief
                 ? tr_elastic_leave(d.ms, d.metrics, d.self, tr.steps)
                 : preempted(&d, who, tr.global_step);
        goto out;
    }
    rc = TR_EXIT_FAILED;
    if (trace && tr_write_trace(trace, f->trace_path, err, sizeof err) != 0) {
        rc = fail("--trace", err);
        goto out;
    }
    tr_print_training(f, &tr, t_load);
    tr_print_ssp(f, d.ms);
    tr_print_lookups(d.ms);
    if (chief)
        tr_print_cluster_rate(&tr, d.per_global_step);
    rc = finish(&d, who, &tr, test);
out:
    fflush(stdout);
    rf_trace_destroy(trace);
    tr_ledger_close(&d.ledger);
    rf_monitored_session_destroy(d.ms); /* before the graph and executor */
    rf_metrics_writer_close(d.metrics); /* after its hook */
    tr_session_destroy(&d.s);
    rf_server_stop(d.server);
    rf_replica_device_setter_destroy(setter);
    rf_dataset_free(mine);
    rf_dataset_free(train_set);
    rf_dataset_free(test);
    return rc;
}
