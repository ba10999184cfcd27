/* tools/trainer/dist_wide_deep.c: a worker task of --model=wide_deep: the
 * dist_worker.c life (server, replica_device_setter, monitored session,
 * StopAtStepHook, the chief's close, evaluation, export and shutdown) on
 * the click-through graph. The tables are partitioned over the ps tasks
 * (fixed_size_partitioner(--embedding_partitions, else the ps count), ids
 * to parts by "mod") and live on the ps as embedding table shards: each
 * step READs the batch's rows and pushes sparse gradients. Worker i of W
 * trains on shard i of W of the training split, its k-th step on
 * rf_ctr_batch's batch k, so one worker sees local training's batches.
 * --explain and --trace as dist_worker.c's: the session's description of
 * the step (the tables' READ_ROWS and sparse pushes among the dense
 * variables' operations), and the spans of its first --trace_steps
 * steps. Exit statuses, SIGTERM and the chief's end as dist_worker.c's. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "dist.h"
#include "export.h"
#include "metrics.h"
#include "preempt.h"
#include "prom.h"
#include "rdmaflow/clock.h"
#include "report.h"
#include "wide_deep.h"

static int fail(const char *what, const char *msg)
{
    return tr_exit_fail(TR_EXIT_FAILED, what, msg);
}

/* This process's peak resident set so far (getrusage: KiB on Linux). */
static double peak_rss_mib(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_maxrss / 1024.0
                                            : -1.0;
}

static int create_ms(const tr_flags *f, rf_server *server, tr_wd_session *s,
                     rf_metrics_writer *metrics, int64_t per_global_step,
                     rf_monitored_session **ms, char *err, size_t errlen)
{
    rf_monitored_session_options mo;
    rf_node *summary_nodes[2];
    tr_monitored_options_fill(f, &s->base, per_global_step, summary_nodes, &mo);
    mo.session.max_lookup_ids = f->batch_size;
    rf_hook *hooks[4] = {NULL, NULL, NULL, NULL};
    size_t n = 2;
    if (rf_stop_at_step_hook_create(0, f->train_steps, &hooks[0]) != RF_OK ||
        rf_nan_tensor_hook_create(s->base.loss, &hooks[1]) != RF_OK ||
        (metrics && rf_metrics_hook_create(metrics, s->base.loss, NULL,
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
        rf_monitored_session_create(server, s->base.g, s->base.ex, &mo, ms);
    if (st != RF_OK) {
        snprintf(err, errlen, "%s", rf_error_message());
        return tr_exit_status(st);
    }
    return 0;
}

/* The training loop; the first --trace_steps steps traced into trace
 * (NULL: none), as dist_worker.c's; until the session says stop or
 * SIGTERM came. 0, or the exit status with err. */
static int train(const tr_flags *f, rf_monitored_session *ms, tr_wd_session *s,
                 const rf_cluster_task *self, int workers, rf_trace *trace,
                 tr_train_result *res, char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    res->first_loss = res->final_loss = NAN;
    res->global_step = res->start_global_step =
        rf_monitored_session_global_step(ms);
    if (rf_monitored_session_should_stop(ms))
        return 0;
    tr_wd_batch b;
    if (tr_wd_batch_init(s, (size_t)f->batch_size, &b) != 0) {
        snprintf(err, errlen, "out of memory");
        return TR_EXIT_FAILED;
    }
    rf_node *fetches[] = {s->base.loss, s->base.train_op};
    rf_tensor out[2];
    tr_progress prog = {.t_log = rf_now_s(),
                        .gs_log = res->global_step,
                        .cluster = self->is_chief,
                        .examples_per_global_step = f->batch_size};
    double t0 = rf_now_s();
    int rc = TR_EXIT_FAILED;
    if (trace)
        rf_session_set_trace(rf_monitored_session_session(ms), trace);
    while (!rf_monitored_session_should_stop(ms) && !tr_preempted()) {
        if (trace && res->steps == f->trace_steps)
            rf_session_set_trace(rf_monitored_session_session(ms), NULL);
        if (rf_ctr_batch(&f->ctr_spec, RF_DATA_TRAIN, (uint32_t)self->worker_id,
                         (uint32_t)workers, (uint64_t)res->steps,
                         (size_t)f->batch_size, b.raw,
                         s->num_dense ? b.dense : NULL, b.labels,
                         NULL) != RF_OK) {
            snprintf(err, errlen, "making a batch: %s", rf_error_message());
            goto out;
        }
        tr_wd_batch_feed(f, s, &b, 0, (size_t)f->batch_size);
        bool ended = false;
        rf_status st = rf_monitored_session_run(ms, b.feed_nodes, b.feeds,
                                                b.nfeeds, fetches, 2, out,
                                                &res->global_step, &ended);
        if (st != RF_OK) {
            snprintf(err, errlen, "%s", rf_error_message());
            rc = tr_exit_status(st);
            goto out;
        }
        if (ended) /* the job ended while this task recovered */
            break;
        if (tr_progress_step(f, &prog, res, *rf_tensor_f32(&out[0]), stdout,
                             err, errlen) != 0)
            goto out;
    }
    res->seconds = rf_now_s() - t0;
    rc = 0;
out:
    tr_progress_finish(&prog, stdout);
    if (trace)
        rf_session_set_trace(rf_monitored_session_session(ms), NULL);
    tr_wd_batch_free(&b);
    return rc;
}

/* --explain: the session's description of the training step, for the
 * feeds and fetches train() runs. */
static int explain_step(const tr_flags *f, rf_server *server,
                        rf_monitored_session *ms, tr_wd_session *s, FILE *out,
                        char *err, size_t errlen)
{
    rf_node *feeds[RF_CTR_MAX_CAT + 2];
    size_t nfeeds = tr_wd_feed_nodes(s, feeds);
    rf_node *fetches[] = {s->base.loss, s->base.train_op};
    const rf_session_desc *desc = NULL;
    if (rf_session_describe(rf_monitored_session_session(ms), feeds, nfeeds,
                            fetches, 2, &desc) != RF_OK) {
        snprintf(err, errlen, "%s", rf_error_message());
        return -1;
    }
    return tr_dist_explain(f, server, desc, out, err, errlen);
}

/* --trace's buffer, its process named after this task. */
static int trace_open(const tr_flags *f, const rf_cluster_task *self,
                      rf_trace **out)
{
    *out = NULL;
    if (!f->trace_path)
        return 0;
    char label[128];
    snprintf(label, sizeof label, "rf-trainer /job:%s/task:%d", self->job,
             self->index);
    if (rf_trace_create(out) != RF_OK)
        return -1;
    rf_trace_set_process(*out, 0, label);
    return 0;
}

int tr_wd_run_worker(const tr_flags *f, rf_cluster *cluster, FILE *explain)
{
    char err[2048];
    const rf_cluster_task *self = rf_cluster_self(cluster);
    int num_ps = rf_cluster_num_ps(cluster);
    int workers = rf_cluster_num_workers(cluster);
    bool chief = self->is_chief;
    rf_server *server = NULL;
    rf_replica_device_setter *setter = NULL;
    rf_monitored_session *ms = NULL;
    rf_metrics_writer *metrics = NULL;
    rf_trace *trace = NULL;
    tr_wd_session s;
    memset(&s, 0, sizeof s);
    int rc = 1;
    char who[64];
    snprintf(who, sizeof who, "%s %d", self->job, self->index);
    if (f->elastic || rf_cluster_is_sparse(cluster)) {
        fprintf(stderr,
                "rf-trainer: %s: --model=wide_deep does not run "
                "elastic workers yet (--elastic or a TF_CONFIG "
                "sparseCluster); use the default model\n",
                who);
        return 2;
    }
    rf_server_options so = {.cluster_secret_file = f->cluster_secret_file,
                            .require_secret = f->require_secret,
                            .bind_addr = f->bind_addr,
                            .resolve_wait_secs = (int)f->max_wait_secs};
    rf_status sst = rf_server_start(cluster, &so, &server);
    if (sst != RF_OK) {
        rc = tr_exit_fail_status(sst, who, rf_error_message());
        goto out;
    }
    int parts = tr_wd_partitions(f, num_ps);
    if (tr_make_setter(f, cluster, self, &setter, err, sizeof err) != 0 ||
        tr_wd_session_create(f, setter, parts, &s, err, sizeof err) != 0) {
        rc = fail("setup", err);
        goto out;
    }
    printf("model: wide_deep, %zu parameters, tables in %d parts\n",
           tr_model_num_params(s.base.g), parts);
    printf("%s of %d workers%s, %d ps tasks; apply=%s%s\n", who, workers,
           chief ? " (chief)" : "", num_ps, f->apply,
           f->use_locking ? " with use_locking" : "");
    fflush(stdout);
    char task[64];
    tr_metrics_task(self, task, sizeof task);
    if (tr_metrics_open(f, task, f->batch_size, &metrics, err, sizeof err) !=
        0) {
        rc = fail("--metrics_out", err);
        goto out;
    }
    double t_create = rf_now_s();
    if ((rc = create_ms(f, server, &s, metrics,
                        tr_examples_per_global_step(f, workers), &ms, err,
                        sizeof err)) != 0) {
        rc = tr_exit_fail(rc, who, err);
        goto out;
    }
    tr_prom_ready();
    rc = TR_EXIT_FAILED;
    printf("%s: session created in %.2f s (%s), peak RSS %.1f MiB\n", who,
           rf_now_s() - t_create, chief ? "the tables initialised" : "waited",
           peak_rss_mib());
    if (f->explain != TR_EXPLAIN_NONE &&
        explain_step(f, server, ms, &s, explain, err, sizeof err) != 0) {
        rc = fail("--explain", err);
        goto out;
    }
    if (trace_open(f, self, &trace) != 0) {
        rc = fail("--trace", rf_error_message());
        goto out;
    }
    tr_train_result tr;
    tr_preempt_graceful(true); /* SIGTERM: stop at the end of a step */
    if ((rc = train(f, ms, &s, self, workers, trace, &tr, err, sizeof err)) !=
        0) {
        rc = tr_training_failed(ms, rc, err);
        goto out;
    }
    rc = TR_EXIT_FAILED;
    if (tr_preempted() && !rf_monitored_session_should_stop(ms)) {
        char why[4600] = "", path[4096];
        if (chief && f->checkpoint_dir &&
            rf_session_save(rf_monitored_session_session(ms), f->checkpoint_dir,
                            (int)f->max_to_keep, path, sizeof path) == RF_OK)
            snprintf(why, sizeof why, "; saved %s", path);
        else if (chief && f->checkpoint_dir)
            snprintf(why, sizeof why, "; no checkpoint saved: %s",
                     rf_error_message());
        char msg[4800];
        snprintf(msg, sizeof msg,
                 "preempted: SIGTERM at global_step %" PRId64
                 ", before the job's end%s",
                 tr.global_step, why);
        rc = tr_exit_fail(TR_EXIT_RETRYABLE, who, msg);
        goto out;
    }
    if (trace && tr_write_trace(trace, f->trace_path, err, sizeof err) != 0) {
        rc = fail("--trace", err);
        goto out;
    }
    tr_print_training(f, &tr, 0);
    tr_print_ssp(f, ms);
    tr_print_lookups(ms);
    if (chief)
        tr_print_cluster_rate(&tr, tr_examples_per_global_step(f, workers));
    if (!chief) {
        rf_status cst = rf_monitored_session_close(ms);
        if (cst != RF_OK) {
            rc = tr_exit_fail_status(cst, who, rf_error_message());
            goto out;
        }
        if (tr_metrics_finish(metrics, NAN, NULL, err, sizeof err) != 0) {
            rc = fail("--metrics_out", err);
            goto out;
        }
        printf("worker %d: done after %" PRId64 " steps\n", self->index,
               tr.steps);
        tr_exit_reason("%s done after %" PRId64 " steps", who, tr.steps);
        rc = 0;
        goto out;
    }
    /* the chief's memory before the final pull of every table */
    printf("chief: peak RSS before the final pull: %.1f MiB\n", peak_rss_mib());
    rf_status cst = rf_monitored_session_close(ms);
    if (cst != RF_OK && cst != RF_ERR_TIMEOUT) {
        rc = tr_exit_fail_status(cst, "chief", rf_error_message());
        goto out;
    }
    printf("global_step at the end: %" PRId64 "\n",
           *(const int64_t *)rf_variable_data(s.base.global_step));
    const char *what;
    if (tr_wd_finish(f, &s, metrics, &what, err, sizeof err) != 0) {
        rc = fail(what, err);
        goto out;
    }
    rf_status dst = rf_monitored_session_shutdown_cluster(ms);
    if (dst != RF_OK) {
        rc = tr_exit_fail_status(dst, "chief", rf_error_message());
        goto out;
    }
    printf("chief: ps tasks shut down\n");
    if (cst == RF_OK)
        tr_exit_reason("the job finished, the ps tasks shut down");
    rc = cst == RF_OK ? 0 : fail("chief", "a worker did not finish");
out:
    fflush(stdout);
    rf_trace_destroy(trace);
    rf_monitored_session_destroy(ms);
    rf_metrics_writer_close(metrics);
    tr_wd_session_destroy(&s);
    rf_server_stop(server);
    rf_replica_device_setter_destroy(setter);
    return rc;
}
