/* tools/trainer/dist_common.c: what a worker's live run and --explain_only
 * build the same way from the flags: the replica_device_setter of a task,
 * and the session options (apply mode, locking, sync replicas). */
#include <inttypes.h>
#include <stdio.h>

#include "dist.h"

int tr_make_setter(const tr_flags *f, const rf_cluster *cluster,
                   const rf_cluster_task *task, rf_replica_device_setter **out,
                   char *err, size_t errlen)
{
    rf_cluster_desc desc;
    rf_cluster_device_desc(cluster, &desc);
    char worker_device[96];
    snprintf(worker_device, sizeof worker_device, "/job:%s/task:%d", task->job,
             task->index);
    rf_replica_device_setter_options o;
    rf_replica_device_setter_options_init(&o);
    o.cluster = &desc;
    o.worker_device = worker_device;
    o.strategy = f->ps_strategy_kind;
    *out = NULL;
    if (rf_replica_device_setter_create(&o, out) != RF_OK || !*out) {
        snprintf(err, errlen, "replica_device_setter: %s",
                 *out ? rf_error_message() : "no ps tasks");
        return -1;
    }
    return 0;
}

int64_t tr_examples_per_global_step(const tr_flags *f, int num_workers)
{
    return f->batch_size * (!f->sync_replicas ? 1
                            : f->replicas_to_aggregate
                                ? f->replicas_to_aggregate
                                : num_workers);
}

void tr_session_options_fill(const tr_flags *f, const tr_session *s,
                             rf_session_options *o)
{
    o->train_op = s->train_op;
    o->global_step = s->global_step;
    o->apply = f->apply_mode;
    o->use_locking = f->use_locking;
    o->sync_replicas = f->sync_replicas; /* SyncReplicasOptimizer */
    o->replicas_to_aggregate = (int)f->replicas_to_aggregate;
    o->total_num_replicas = (int)f->total_num_replicas;
    o->staleness = (int)f->staleness; /* stale synchronous parallel */
    o->embedding_lookup = (rf_lookup_way)f->embedding_lookup;
}

void tr_monitored_options_fill(const tr_flags *f, const tr_session *s,
                               int64_t per_global_step,
                               rf_node *summary_nodes[2],
                               rf_monitored_session_options *mo)
{
    static const char *const tags[] = {"loss", "accuracy"};
    rf_monitored_session_options_init(mo);
    tr_session_options_fill(f, s, &mo->session);
    mo->checkpoint_dir = f->checkpoint_dir;
    mo->save_checkpoint_steps = f->save_checkpoint_steps;
    mo->save_checkpoint_secs = f->save_checkpoint_secs;
    mo->max_to_keep = (int)f->max_to_keep;
    mo->max_failed_saves = (int)f->max_failed_saves;
    mo->log_step_count_steps = f->log_step_count_steps;
    mo->examples_per_step = per_global_step;
    mo->max_wait_secs = (int)f->max_wait_secs;
    mo->stop_grace_secs = (int)f->stop_grace_secs;
    /* TensorFlow's MonitoredTrainingSession: save_summaries_secs alone
     * replaces the default of every 100 steps */
    mo->summary_dir = f->summary_dir;
    mo->save_summaries_steps =
        f->save_summaries_secs > 0 && !f->save_summaries_steps_given
            ? 0
            : f->save_summaries_steps;
    mo->save_summaries_secs = f->save_summaries_secs;
    summary_nodes[0] = s->loss;
    summary_nodes[1] = s->accuracy;
    mo->summary_nodes = summary_nodes;
    mo->summary_tags = tags;
    mo->num_summaries = s->accuracy ? 2 : 1;
}

void tr_print_lookups(rf_monitored_session *ms)
{
    rf_session *s = rf_monitored_session_session(ms);
    rf_session_lookup_info w[64];
    size_t n = rf_session_lookup_info_get(s, w, 64);
    for (size_t i = 0; i < n && i < 64; i++)
        printf("embedding lookups of %s; %" PRIu64
               " lookups by row READs (%" PRIu64 " rows), %" PRIu64
               " by the gather (%" PRIu64 " rows)\n",
               w[i].reason, w[i].lookups_read, w[i].rows_read,
               w[i].lookups_gathered, w[i].rows_gathered);
    if (n > 64)
        printf("embedding lookups: %zu more tables\n", n - 64);
    fflush(stdout);
}

void tr_print_ssp(const tr_flags *f, rf_monitored_session *ms)
{
    if (f->staleness < 0)
        return;
    rf_session_counters c;
    rf_session_counters_get(rf_monitored_session_session(ms), &c);
    printf("stale synchronous parallel (staleness %" PRId64 "): %" PRIu64
           " of %" PRIu64 " steps waited for the slowest worker, %.3f s in "
           "all; %" PRId64 " steps ahead of it at the last step\n",
           f->staleness, c.ssp_waits, c.train_runs, c.ssp_wait_ns / 1e9,
           c.ssp_lead);
    fflush(stdout);
}
