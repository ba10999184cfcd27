/* ps/ps_server_sync.c: sync replicas on the ps (TensorFlow 1.x's
 * SyncReplicasOptimizer, whose ConditionalAccumulator per variable lives
 * here, one per sync shard). A sync push carries the worker's local step as
 * a tag in the first PS_SYNC_TAG_BYTES of its inbox (ps_layout.h), the
 * gradient after it. Against the record's sync step S:
 *   tag <  S  stale: dropped and counted in the record's stale word;
 *   tag == S  taken: added to the shard's sum, once per client and step (a
 *             second gradient of a client for S, a step it re-ran, is
 *             dropped and the first kept); when replicas_to_aggregate were
 *             taken their mean is applied once with the shard's optimizer
 *             (ps_apply_update: seqlock, beta powers, update count) and S+1
 *             is stored into the sync step word after the update, which
 *             publishes it to the workers' READs;
 *   tag >  S  a protocol error (a worker's step comes from global_step,
 *             which never passes a shard's step): the connection is
 *             dropped with a log line.
 * Every other push is acknowledged, accepted or stale, with the shard's
 * step. The sync step word is the chief's to set one-sidedly (the
 * global_step training starts from, rf_ps_sync_set_step): when it no longer
 * is the step the sum belongs to, the sum is dropped. Accumulators are not
 * checkpointed (TensorFlow's are not either): a restarted ps starts with
 * empty ones, at the step the chief sets. Service thread only.
 *
 * The audit trail (RF_LOG_LEVEL=debug; tests/integration/fault's sync cases
 * check it): a dense shard's taken gradient ("step S: took client C's
 * gradient tagged G (K of N)", G as read from the inbox), its averaged
 * update ("applied step S: the mean of K gradients, update U", U the
 * record's update count after it), a stale one ("... is stale ...:
 * dropped") and, at info, a step the chief set ("the sync step was set to
 * S'"). With the shutdown line's counters they let a reader check that
 * every update is of N gradients of its own step from distinct clients,
 * applied once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "ps/ps_server_internal.h"
#include "rdmaflow/byteorder.h"
#include "rdmaflow/clock.h"
#include "rdmaflow/status.h"

static uint64_t *rec_word(ps_shard *sh, uint32_t off)
{
    return (uint64_t *)(void *)(sh->rec_ptr + off);
}

/* The step word, written by this thread and by the chief's RDMA WRITEs. */
static int64_t step_word(ps_shard *sh)
{
    return (int64_t)__atomic_load_n(rec_word(sh, PS_REC_SYNC_STEP_OFF),
                                    __ATOMIC_ACQUIRE);
}

rf_status ps_sync_create(ps_shard *sh)
{
    /* a table's accumulator is per row (ps_server_sparse_sync.c) */
    size_t bytes = sh->spec.max_push_rows ? 0 : (size_t)sh->layout.values_bytes;
    size_t cap = (bytes + 63) & ~(size_t)63;
    ps_sync_acc *a = calloc(1, sizeof *a);
    float *sum = aligned_alloc(64, cap ? cap : 64);
    if (!a || !sum) {
        free(a);
        free(sum);
        return rf_error_set(RF_ERR_NO_MEMORY,
                            "ps: no memory for the accumulator of '%s'",
                            sh->spec.name);
    }
    a->sum = sum;
    a->step = step_word(sh);
    sh->sync = a;
    return sh->spec.max_push_rows ? ps_rows_acc_create(sh) : RF_OK;
}

void ps_sync_free(rf_ps_server *s, ps_shard *sh)
{
    if (!sh->sync)
        return;
    ps_rows_acc_free(s, sh);
    free(sh->sync->sum);
    free(sh->sync);
    sh->sync = NULL;
}

void ps_sync_reset(ps_shard *sh, int64_t step)
{
    if (sh->sync->rows)
        ps_rows_acc_clear(sh);
    sh->sync->count = 0;
    sh->sync->step = step;
    for (uint32_t i = 0; i < sh->num_inboxes; i++)
        sh->inboxes[i].sync_step = -1;
}

/* The mean of the taken gradients applied once; the step advanced and
 * published. Returns the ack word for the push that completed it. */
static uint64_t apply_mean(ps_server_conn *c, ps_shard *sh, int64_t step,
                           uint32_t len)
{
    ps_sync_acc *a = sh->sync;
    size_t n = len / sizeof(float);
    float count = (float)a->count;
    for (size_t i = 0; i < n; i++)
        a->sum[i] /= count;
    uint64_t t0 = c->srv->opt.on_apply ? rf_now_ns() : 0;
    uint64_t done = *rec_word(sh, PS_REC_UPDATES_OFF);
    rf_status st = ps_apply_update(sh, a->sum);
    ps_apply_traced(c, sh, t0, done, len);
    if (st != RF_OK) {
        RF_LOG_WARN("ps %d: applying the mean of %u gradients to '%s' part "
                    "%u at step %lld failed: %s; the step's gradients are "
                    "dropped",
                    c->srv->opt.task_index, a->count, sh->spec.name,
                    sh->spec.part, (long long)step, rf_error_message());
        ps_sync_reset(sh, step);
        return ps_ack_err(st);
    }
    RF_LOG_DEBUG("ps %d: '%s' part %u: applied step %lld: the mean of %u "
                 "gradients, update %llu",
                 c->srv->opt.task_index, sh->spec.name, sh->spec.part,
                 (long long)step, a->count,
                 (unsigned long long)*rec_word(sh, PS_REC_UPDATES_OFF));
    return ps_sync_publish(sh, step);
}

/* Step + 1 is published only over step: a compare-and-swap, so that a step
 * the chief set (an RDMA WRITE of the same word, rf_ps_sync_set_step) while
 * this step's mean was applied stays set instead of being overwritten. */
uint64_t ps_sync_publish(ps_shard *sh, int64_t step)
{
    sh->sync->applied++;
    uint64_t seen = (uint64_t)step;
    if (!__atomic_compare_exchange_n(rec_word(sh, PS_REC_SYNC_STEP_OFF), &seen,
                                     (uint64_t)(step + 1), false,
                                     __ATOMIC_RELEASE, __ATOMIC_ACQUIRE)) {
        RF_LOG_INFO("ps: '%s' part %u: the sync step was set to %lld while "
                    "step %lld was applied: kept",
                    sh->spec.name, sh->spec.part, (long long)(int64_t)seen,
                    (long long)step);
        ps_sync_reset(sh, (int64_t)seen);
        return ps_ack_sync(false, seen);
    }
    ps_sync_reset(sh, step + 1);
    return ps_ack_sync(false, (uint64_t)(step + 1));
}

bool ps_sync_gate(ps_server_conn *c, ps_shard *sh, ps_inbox *ib, uint32_t imm,
                  int64_t tag, bool *ret)
{
    int64_t step = step_word(sh);
    if (step != sh->sync->step) { /* the chief set another step */
        RF_LOG_INFO("ps %d: '%s' part %u: the sync step was set to %lld "
                    "(the accumulator was at step %lld with %u gradients: "
                    "dropped)",
                    c->srv->opt.task_index, sh->spec.name, sh->spec.part,
                    (long long)step, (long long)sh->sync->step,
                    sh->sync->count);
        ps_sync_reset(sh, step);
    }
    if (tag < step) {
        uint64_t *stale = rec_word(sh, PS_REC_SYNC_STALE_OFF);
        __atomic_store_n(stale, *stale + 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&c->srv->stale_dropped, 1, __ATOMIC_RELAXED);
        RF_LOG_DEBUG("ps %d: '%s' part %u: client %u's gradient of step %lld "
                     "is stale (the shard is at step %lld): dropped",
                     c->srv->opt.task_index, sh->spec.name, sh->spec.part,
                     c->client_id, (long long)tag, (long long)step);
        *ret = ps_send_ack(c, imm, ps_ack_sync(true, (uint64_t)step));
        return false;
    }
    if (tag > step) {
        char why[RF_PS_MAX_NAME + 200];
        snprintf(why, sizeof why,
                 "a gradient of '%s' part %u tagged with step %lld, ahead "
                 "of the shard's step %lld (sync replicas)",
                 sh->spec.name, sh->spec.part, (long long)tag, (long long)step);
        ps_conn_drop(c, why);
        *ret = false;
        return false;
    }
    if (ib->sync_step == step) {
        RF_LOG_INFO("ps %d: '%s' part %u: client %u sent a second gradient "
                    "for step %lld; the first is kept",
                    c->srv->opt.task_index, sh->spec.name, sh->spec.part,
                    c->client_id, (long long)step);
        *ret = ps_send_ack(c, imm, ps_ack_sync(false, (uint64_t)step));
        return false;
    }
    return true;
}

bool ps_sync_push(ps_server_conn *c, ps_shard *sh, ps_inbox *ib, uint32_t imm,
                  uint32_t len)
{
    ps_sync_acc *a = sh->sync;
    bool ret = false;
    int64_t tag = (int64_t)rf_get_le64(ib->ptr);
    if (!ps_sync_gate(c, sh, ib, imm, tag, &ret))
        return ret;
    int64_t step = a->step;
    const float *g = (const float *)(const void *)(ib->ptr + PS_SYNC_TAG_BYTES);
    size_t n = len / sizeof(float);
    if (a->count == 0) {
        memcpy(a->sum, g, len);
    } else {
        for (size_t i = 0; i < n; i++)
            a->sum[i] += g[i];
    }
    a->count++;
    a->taken++;
    __atomic_fetch_add(&c->srv->dense_applies, 1, __ATOMIC_RELAXED);
    ib->sync_step = step;
    RF_LOG_DEBUG("ps %d: '%s' part %u: step %lld: took client %u's gradient "
                 "tagged %lld (%u of %u)",
                 c->srv->opt.task_index, sh->spec.name, sh->spec.part,
                 (long long)step, c->client_id, (long long)tag, a->count,
                 sh->spec.sync_n);
    if (a->count < sh->spec.sync_n)
        return ps_send_ack(c, imm, ps_ack_sync(false, (uint64_t)step));
    return ps_send_ack(c, imm, apply_mean(c, sh, step, len));
}

void ps_sync_log_stats(rf_ps_server *s)
{
    for (uint32_t i = 0; i < s->num_shards; i++) {
        ps_shard *sh = &s->shards[i];
        if (!sh->sync)
            continue;
        RF_LOG_INFO("ps %d: sync replicas '%s' part %u: step %lld, %llu "
                    "averaged updates of %u gradients, %llu gradients taken, "
                    "%llu dropped as stale",
                    s->opt.task_index, sh->spec.name, sh->spec.part,
                    (long long)step_word(sh),
                    (unsigned long long)sh->sync->applied, sh->spec.sync_n,
                    (unsigned long long)sh->sync->taken,
                    (unsigned long long)__atomic_load_n(
                        rec_word(sh, PS_REC_SYNC_STALE_OFF), __ATOMIC_RELAXED));
    }
}
