/* tools/trainer/dist_worker.c: a worker task's life (MonitoredTrainingSession
 * in a classic TF 1.x trainer), on rdmaflow/session.h: start the server
 * (NUMA binding, fabric), build the model under replica_device_setter,
 * create the session (connect to the ps tasks, retrying until they are up;
 * the chief creates and initialises the shards, the others look them up
 * and wait for their init flags), --explain, train on this worker's part
 * of the data until the cluster's global_step reaches --train_steps, then
 * finish: the others announce they are done; the chief waits for them,
 * pulls the final variables, evaluates test accuracy, writes
 * --variables_out and shuts the ps tasks down, so a whole cluster ends by
 * itself. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist.h"
#include "export.h"
#include "rdmaflow/clock.h"
#include "report.h"
#include "train.h"

/* How long the chief waits for the other workers to finish. */
#define TR_WORKERS_DONE_TIMEOUT_MS (30 * 60 * 1000)

/* What the worker holds. */
typedef struct tr_worker {
    const tr_flags *f;
    const rf_cluster *cluster;
    const rf_cluster_task *self;
    int num_ps, num_workers;
    rf_server *server;
    tr_session s;
    rf_session *session;
} tr_worker;

static int fail(const char *what, const char *msg)
{
    fprintf(stderr, "rf-trainer: %s: %s\n", what, msg);
    return 1;
}

/* replica_device_setter(cluster=..., worker_device="/job:<job>/task:<i>") */
static int make_setter(const tr_worker *d, rf_replica_device_setter **out,
                       char *err, size_t errlen)
{
    rf_cluster_desc desc;
    rf_cluster_device_desc(d->cluster, &desc);
    char worker_device[96];
    snprintf(worker_device, sizeof worker_device, "/job:%s/task:%d",
             d->self->job, d->self->index);
    rf_replica_device_setter_options o;
    rf_replica_device_setter_options_init(&o);
    o.cluster = &desc;
    o.worker_device = worker_device;
    if (rf_replica_device_setter_create(&o, out) != RF_OK || !*out) {
        snprintf(err, errlen, "replica_device_setter: %s",
                 *out ? rf_error_message() : "no ps tasks");
        return -1;
    }
    return 0;
}

/* Worker i's part of the training data: everything with one worker (so one
 * worker reproduces local training), else shard i of W, shuffled per
 * epoch with a seed of its own. */
static int select_data(const tr_worker *d, rf_dataset *train, rf_dataset **mine,
                       char *err, size_t errlen)
{
    const tr_flags *f = d->f;
    *mine = NULL;
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

/* The training loop: one session run per batch (fetching the loss and the
 * train op, whose value is the new global_step) until the cluster's
 * global_step reaches --train_steps (StopAtStepHook(last_step)); the first
 * --trace_steps steps are traced. */
static int train(tr_worker *d, rf_dataset *train, rf_trace *trace,
                 tr_train_result *res, char *err, size_t errlen)
{
    const tr_flags *f = d->f;
    tr_session *s = &d->s;
    res->steps = 0;
    res->first_loss = res->final_loss = NAN;
    res->seconds = 0;
    if (rf_session_global_step(d->session, &res->global_step) != RF_OK) {
        snprintf(err, errlen, "%s", rf_error_message());
        return -1;
    }
    if (res->global_step >= f->train_steps)
        return 0;
    size_t bs = (size_t)f->batch_size, dim = s->example_dim;
    float *xb = malloc(bs * dim * sizeof *xb);
    int32_t *yb = malloc(bs * sizeof *yb);
    int rc = -1;
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
    if (trace)
        rf_session_set_trace(d->session, trace);
    double t0 = rf_now_s();
    tr_progress prog = {.t_log = t0};
    while (res->global_step < f->train_steps) {
        if (trace && res->steps == f->trace_steps)
            rf_session_set_trace(d->session, NULL);
        if (rf_dataset_next_batch(train, bs, xb, yb) != RF_OK) {
            snprintf(err, errlen, "reading a batch: %s", rf_error_message());
            goto out;
        }
        if (rf_session_run(d->session, feeds, in, 2, fetches, 2, out,
                           &res->global_step) != RF_OK) {
            snprintf(err, errlen, "%s", rf_error_message());
            goto out;
        }
        if (tr_progress_step(f, &prog, res, *rf_tensor_f32(&out[0]), stdout,
                             err, errlen) != 0)
            goto out;
    }
    res->seconds = rf_now_s() - t0;
    rc = 0;
out:
    rf_session_set_trace(d->session, NULL);
    free(xb);
    free(yb);
    return rc;
}

/* The chief's end of training: wait for the others, pull the variables,
 * evaluate, export, shut the ps tasks down. */
static int chief_finish(tr_worker *d, rf_dataset *test, char *err,
                        size_t errlen)
{
    const tr_flags *f = d->f;
    int64_t others = d->num_workers - 1;
    if (others > 0) {
        printf("chief: waiting for %" PRId64 " other worker%s to finish\n",
               others, others == 1 ? "" : "s");
        fflush(stdout);
    }
    if (rf_session_finish(d->session, TR_WORKERS_DONE_TIMEOUT_MS) != RF_OK) {
        snprintf(err, errlen, "%s", rf_error_message());
        return -1;
    }
    printf("global_step at the end: %" PRId64 "\n",
           *(const int64_t *)rf_variable_data(d->s.global_step));
    fflush(stdout);
    if (tr_report_accuracy(f, &d->s, test, err, errlen) != 0)
        return -1;
    if (f->variables_out &&
        tr_export_variables(d->s.g, f->variables_out, err, errlen) != 0)
        return -1;
    if (rf_session_shutdown_cluster(d->session) != RF_OK) {
        snprintf(err, errlen, "%s", rf_error_message());
        return -1;
    }
    printf("chief: ps tasks shut down\n");
    return 0;
}

int tr_run_worker(const tr_flags *f, rf_cluster *cluster)
{
    char err[2048];
    tr_worker d = {.f = f, .cluster = cluster};
    d.self = rf_cluster_self(cluster);
    d.num_ps = rf_cluster_num_ps(cluster);
    d.num_workers = rf_cluster_num_workers(cluster);
    bool chief = d.self->is_chief;
    rf_dataset *train_set = NULL, *test = NULL, *mine = NULL;
    rf_replica_device_setter *setter = NULL;
    rf_trace *trace = NULL;
    int rc = 1;
    double t_load = 0;
    char who[64];
    snprintf(who, sizeof who, "%s %d", d.self->job, d.self->index);

    if (f->trace_path && tr_check_trace_path(f->trace_path) != 0)
        return 1;
    if (rf_server_start(cluster, NULL, &d.server) != RF_OK) {
        rc = fail(who, rf_error_message());
        goto out;
    }
    if (tr_load_data(f, &train_set, &test, &t_load, err, sizeof err) != 0) {
        rc = fail("data", err);
        goto out;
    }
    if (make_setter(&d, &setter, err, sizeof err) != 0 ||
        tr_session_create(f, (int)rf_dataset_rows(train_set),
                          (int)rf_dataset_cols(train_set),
                          (int)rf_dataset_num_classes(train_set), setter, &d.s,
                          err, sizeof err) != 0) {
        rc = fail("setup", err);
        goto out;
    }
    tr_print_config(f, &d.s, train_set, test, tr_data_dir(f));
    printf("%s of %d workers%s, %d ps tasks; apply=%s%s\n", who, d.num_workers,
           chief ? " (chief)" : "", d.num_ps, f->apply,
           f->use_locking ? " with use_locking" : "");
    fflush(stdout);
    rf_session_options so;
    rf_session_options_init(&so);
    so.train_op = d.s.train_op;
    so.global_step = d.s.global_step;
    so.apply = f->apply_mode;
    so.use_locking = f->use_locking;
    so.sync_replicas = f->sync_replicas; /* SyncReplicasOptimizer */
    so.replicas_to_aggregate = (int)f->replicas_to_aggregate;
    so.total_num_replicas = (int)f->total_num_replicas;
    if (rf_session_create(d.server, d.s.g, d.s.ex, &so, &d.session) != RF_OK) {
        rc = fail(who, rf_error_message());
        goto out;
    }
    rf_node *feeds[] = {d.s.x, d.s.y}, *fetches[] = {d.s.loss, d.s.train_op};
    const rf_session_desc *desc = NULL;
    if (rf_session_describe(d.session, feeds, 2, fetches, 2, &desc) != RF_OK) {
        rc = fail("setup", rf_error_message());
        goto out;
    }
    if (f->explain != TR_EXPLAIN_NONE &&
        tr_dist_explain(f, d.server, &d.s, desc, stdout, err, sizeof err) !=
            0) {
        rc = fail("--explain", err);
        goto out;
    }
    if (select_data(&d, train_set, &mine, err, sizeof err) != 0) {
        rc = fail("data", err);
        goto out;
    }
    if (f->trace_path) {
        char label[128];
        snprintf(label, sizeof label, "rf-trainer /job:%s/task:%d", d.self->job,
                 d.self->index);
        if (rf_trace_create(&trace) != RF_OK) {
            rc = fail("--trace", rf_error_message());
            goto out;
        }
        rf_trace_set_process(trace, 0, label);
    }
    tr_train_result tr;
    if (train(&d, mine ? mine : train_set, trace, &tr, err, sizeof err) != 0) {
        rc = fail("training", err);
        goto out;
    }
    if (trace && tr_write_trace(trace, f->trace_path, err, sizeof err) != 0) {
        rc = fail("--trace", err);
        goto out;
    }
    tr_print_training(f, &tr, t_load);
    if (!chief) {
        if (rf_session_finish(d.session, 0) != RF_OK) {
            rc = fail(who, rf_error_message());
            goto out;
        }
        printf("worker %d: done after %" PRId64 " steps\n", d.self->index,
               tr.steps);
    } else if (chief_finish(&d, test, err, sizeof err) != 0) {
        rc = fail("chief", err);
        goto out;
    }
    rc = 0;
out:
    fflush(stdout);
    rf_trace_destroy(trace);
    rf_session_destroy(d.session); /* before the graph and executor */
    tr_session_destroy(&d.s);
    rf_server_stop(d.server);
    rf_replica_device_setter_destroy(setter);
    rf_dataset_free(mine);
    rf_dataset_free(train_set);
    rf_dataset_free(test);
    return rc;
}
