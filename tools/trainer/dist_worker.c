/* tools/trainer/dist_worker.c: a worker task's life (MonitoredTrainingSession
 * in a classic TF 1.x trainer): bind and open the fabric, build the model
 * under replica_device_setter, connect to the ps tasks (retrying until they
 * are up), create and initialise the shards (chief) or look them up and
 * wait for their init flags (others), --explain, train on this worker's
 * part of the data until the cluster's global_step reaches --train_steps,
 * then announce done. The chief then waits for every other worker, reads
 * the final variables, evaluates test accuracy, writes --variables_out and
 * tells the ps tasks to shut down, so a whole cluster ends by itself. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist.h"
#include "export.h"
#include "report.h"

/* How long the chief waits for the other workers to finish. */
#define TR_WORKERS_DONE_TIMEOUT_MS (30 * 60 * 1000)

static int fail(const char *what, const char *msg)
{
    fprintf(stderr, "rf-trainer: %s: %s\n", what, msg);
    return 1;
}

/* replica_device_setter(cluster=..., worker_device="/job:<job>/task:<i>") */
static int make_setter(const tr_dist *d, rf_replica_device_setter **out,
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
static int select_data(const tr_dist *d, rf_dataset *train, rf_dataset **mine,
                       char *err, size_t errlen)
{
    const tr_flags *f = d->f;
    *mine = NULL;
    if (d->num_workers == 1) {
        rf_dataset_set_shuffle(train, true, f->seed);
        return 0;
    }
    if (rf_dataset_shard(train, (uint32_t)d->num_workers,
                         (uint32_t)d->worker_id, f->seed, mine) != RF_OK) {
        snprintf(err, errlen, "data shard %d of %d: %s", d->worker_id,
                 d->num_workers, rf_error_message());
        return -1;
    }
    rf_dataset_set_shuffle(*mine, true, f->seed + (uint64_t)d->worker_id);
    return 0;
}

/* The chief's end of training: wait for the others, fetch, evaluate,
 * export, shut the ps tasks down. */
static int chief_finish(tr_dist *d, rf_dataset *test, char *err, size_t errlen)
{
    const tr_flags *f = d->f;
    int64_t others = d->num_workers - 1, done = 0;
    if (others > 0) {
        printf("chief: waiting for %" PRId64 " other worker%s to finish\n",
               others, others == 1 ? "" : "s");
        fflush(stdout);
        if (rf_ps_wait_workers_done(d->client, others, 100,
                                    TR_WORKERS_DONE_TIMEOUT_MS,
                                    &done) != RF_OK) {
            snprintf(err, errlen, "%s", rf_error_message());
            return -1;
        }
    }
    if (tr_dist_fetch_all(d, f->variables_out != NULL, err, errlen) != 0)
        return -1;
    printf("global_step at the end: %" PRId64 "\n",
           *(const int64_t *)rf_variable_data(d->global_step_var));
    fflush(stdout);
    if (tr_report_accuracy(f, d->s, test, err, errlen) != 0)
        return -1;
    if (f->variables_out &&
        tr_export_variables(d->s->g, f->variables_out, err, errlen) != 0)
        return -1;
    if (rf_ps_shutdown(d->client) != RF_OK) {
        snprintf(err, errlen, "shutting the ps tasks down: %s",
                 rf_error_message());
        return -1;
    }
    printf("chief: ps tasks shut down\n");
    return 0;
}

int tr_run_worker(const tr_flags *f, rf_cluster *cluster)
{
    char err[2048];
    tr_dist d = {.f = f, .cluster = cluster};
    d.self = rf_cluster_self(cluster);
    d.num_ps = rf_cluster_num_ps(cluster);
    d.num_workers = rf_cluster_num_workers(cluster);
    d.worker_id = d.self->worker_id;
    d.chief = d.self->is_chief;
    rf_dataset *train = NULL, *test = NULL, *mine = NULL;
    rf_replica_device_setter *setter = NULL;
    rf_trace *trace = NULL;
    tr_session s = {0};
    int rc = 1;
    double t_load = 0;
    char who[64];
    snprintf(who, sizeof who, "%s %d", d.self->job, d.self->index);

    if (f->trace_path && tr_check_trace_path(f->trace_path) != 0)
        return 1;
    if (tr_dist_open(&d, err, sizeof err) != 0) {
        rc = fail(who, err);
        goto out;
    }
    if (tr_load_data(f, &train, &test, &t_load, err, sizeof err) != 0) {
        rc = fail("data", err);
        goto out;
    }
    if (make_setter(&d, &setter, err, sizeof err) != 0 ||
        tr_session_create(f, (int)rf_dataset_rows(train),
                          (int)rf_dataset_cols(train),
                          (int)rf_dataset_num_classes(train), setter, &s, err,
                          sizeof err) != 0) {
        rc = fail("setup", err);
        goto out;
    }
    d.s = &s;
    tr_print_config(f, &s, train, test, tr_data_dir(f));
    printf("%s of %d workers%s, %d ps tasks; apply=%s%s\n", who, d.num_workers,
           d.chief ? " (chief)" : "", d.num_ps, f->apply,
           f->use_locking ? " with use_locking" : "");
    fflush(stdout);
    if (tr_dist_map(&d, err, sizeof err) != 0) {
        rc = fail("placement", err);
        goto out;
    }
    if (tr_dist_connect(&d, err, sizeof err) != 0) {
        rc = fail(who, err);
        goto out;
    }
    if (tr_dist_plan(&d, err, sizeof err) != 0) {
        rc = fail("setup", err);
        goto out;
    }
    if (f->explain != TR_EXPLAIN_NONE &&
        tr_dist_explain(&d, stdout, err, sizeof err) != 0) {
        rc = fail("--explain", err);
        goto out;
    }
    if (select_data(&d, train, &mine, err, sizeof err) != 0) {
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
    if (tr_dist_train(&d, mine ? mine : train, trace, stdout, &tr, err,
                      sizeof err) != 0) {
        rc = fail("training", err);
        goto out;
    }
    if (trace && tr_write_trace(trace, f->trace_path, err, sizeof err) != 0) {
        rc = fail("--trace", err);
        goto out;
    }
    tr_print_training(f, &tr, t_load);
    if (!d.chief) {
        if (rf_ps_worker_done(d.client) != RF_OK) {
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
    rf_plan_destroy(d.plan); /* before the graph and executor it points to */
    d.plan = NULL;
    tr_session_destroy(&s);
    tr_dist_close(&d);
    rf_replica_device_setter_destroy(setter);
    rf_dataset_free(mine);
    rf_dataset_free(train);
    rf_dataset_free(test);
    return rc;
}
