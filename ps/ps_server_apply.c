/* ps/ps_server_apply.c: apply=ps on the ps. A worker's write_imm put
 * its gradient in its inbox for the shard the immediate names; the service
 * thread runs rf_optim_apply on the record's values and slots with the
 * record's own beta powers (then advances them, AdamOptimizer._finish per
 * shard), bumps the seqlock version around the update (odd while writing)
 * and acknowledges with a write_imm of the new version into the worker's ack
 * ring, echoing the immediate. A push to a sync-replicas shard goes to its
 * accumulator instead (ps_server_sync.c), which applies through the same
 * update. A push that breaks the protocol (unknown shard, no inbox, wrong
 * length) drops the connection. */
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "ps/ps_server_internal.h"
#include "rdmaflow/clock.h"
#include "rdmaflow/status.h"

void ps_shard_write_begin(ps_shard *sh)
{
    uint64_t *w = ps_shard_word(sh, PS_REC_VERSION_OFF);
    uint64_t v = __atomic_load_n(w, __ATOMIC_RELAXED);
    __atomic_exchange_n(w, v + 1, __ATOMIC_ACQ_REL);
}

void ps_shard_write_end(ps_shard *sh)
{
    uint64_t *w = ps_shard_word(sh, PS_REC_VERSION_OFF);
    uint64_t v = __atomic_load_n(w, __ATOMIC_RELAXED);
    __atomic_store_n(w, v + 1, __ATOMIC_RELEASE);
}

void ps_shard_step_done(ps_shard *sh, rf_optim_scalars *sc)
{
    rf_optim_finish_step(&sh->spec.optim, sc);
    ps_rec_scalars_store(sh->rec_ptr, sc);
    uint64_t *updates = ps_shard_word(sh, PS_REC_UPDATES_OFF);
    __atomic_store_n(updates, *updates + 1, __ATOMIC_RELAXED);
}

void ps_count_request(rf_ps_server *s, uint64_t *done, uint64_t *rows,
                      uint64_t *refused, bool ok, uint64_t n)
{
    pthread_mutex_lock(&s->mu);
    if (ok) {
        (*done)++;
        *rows += n;
    } else {
        (*refused)++;
    }
    pthread_mutex_unlock(&s->mu);
}

/* The update itself, on the arena memory remote peers may read at any
 * time (that is the point: pulls are one-sided). */
rf_status ps_apply_update(ps_shard *sh, const float *grad)
{
    ps_shard_write_begin(sh);

    float *slots[RF_OPTIM_MAX_SLOTS] = {0};
    for (uint32_t i = 0; i < sh->layout.num_slots; i++)
        slots[i] = (float *)(void *)(sh->rec_ptr + sh->layout.slot_off[i]);
    float *values = (float *)(void *)(sh->rec_ptr + sh->layout.values_off);
    rf_optim_scalars sc;
    ps_rec_scalars_load(sh->rec_ptr, &sc);
    size_t n = (size_t)(sh->layout.values_bytes / sizeof(float));
    rf_status st = rf_optim_apply(&sh->spec.optim, values, slots, grad, n, &sc);
    if (st == RF_OK)
        ps_shard_step_done(sh, &sc);
    ps_shard_write_end(sh);
    return st;
}

void ps_apply_traced(ps_server_conn *c, const ps_shard *sh, uint64_t t0,
                     uint64_t done, uint32_t len)
{
    rf_ps_server *s = c->srv;
    if (!s->opt.on_apply ||
        (s->opt.trace_updates != 0 && done >= s->opt.trace_updates))
        return;
    char name[RF_PS_MAX_NAME + 16], args[96];
    snprintf(name, sizeof name, "apply %s", sh->spec.name);
    snprintf(args, sizeof args, "\"bytes\":%u,\"worker\":%u", len,
             c->client_id);
    s->opt.on_apply(s->opt.on_apply_ctx, name, args, t0, rf_now_ns() - t0,
                    done);
}

bool ps_send_ack(ps_server_conn *c, uint32_t imm, uint64_t word)
{
    uint32_t k = (uint32_t)(c->acks % PS_SRV_RECV_DEPTH);
    uint64_t *stage = (uint64_t *)(void *)(c->mem + ps_conn_stage_off()) + k;
    *stage = word;
    uint64_t dst = c->ring.addr + (c->acks % c->ring_slots) * 8;
    c->acks++;
    rf_status st =
        rf_write_imm(c->ep, stage, 8, c->mr, dst, c->ring.rkey, imm, &c->stag);
    if (st == RF_OK)
        c->sends_posted++;
    if (st != RF_OK) {
        char why[300];
        snprintf(why, sizeof why, "sending an ack: %s", rf_error_message());
        ps_conn_drop(c, why);
        return false;
    }
    return true;
}

bool ps_apply_push(ps_server_conn *c, uint32_t imm, uint32_t len)
{
    rf_ps_server *s = c->srv;
    char why[400];
    if (!ps_conn_accepts_push(c))
        return false;
    uint32_t id = ps_imm_shard(imm);
    if (id >= s->num_shards) {
        snprintf(why, sizeof why, "a push to shard %u; the ps has %u", id,
                 s->num_shards);
        ps_conn_drop(c, why);
        return false;
    }
    ps_shard *sh = &s->shards[id];
    ps_inbox *ib = ps_shard_find_inbox(sh, c->client_id);
    if (!sh->spec.trainable || !ib) {
        snprintf(why, sizeof why, "a push to '%s' part %u, which %s",
                 sh->spec.name, sh->spec.part,
                 sh->spec.trainable ? "has no inbox for this client"
                                    : "is not trainable");
        ps_conn_drop(c, why);
        return false;
    }
    if (sh->spec.max_push_rows && len == PS_GATHER_REQ_BYTES)
        return ps_gather_serve(c, sh, ib, imm);
    if (sh->spec.max_push_rows && sh->sync)
        return ps_sparse_sync_push(c, sh, ib, imm, len);
    if (sh->spec.max_push_rows)
        return ps_sparse_push(c, sh, ib, imm, len);
    if (len != sh->layout.values_bytes) {
        snprintf(why, sizeof why,
                 "a push of %u bytes to '%s' part %u, whose gradient has "
                 "%llu",
                 len, sh->spec.name, sh->spec.part,
                 (unsigned long long)sh->layout.values_bytes);
        ps_conn_drop(c, why);
        return false;
    }
    if (sh->sync)
        return ps_sync_push(c, sh, ib, imm, len);
    uint64_t t0 = s->opt.on_apply ? rf_now_ns() : 0;
    uint64_t done = *ps_shard_word(sh, PS_REC_UPDATES_OFF);
    rf_status st = ps_apply_update(sh, (const float *)(const void *)ib->ptr);
    ps_apply_traced(c, sh, t0, done, len);
    uint64_t word;
    if (st == RF_OK) {
        __atomic_fetch_add(&s->dense_applies, 1, __ATOMIC_RELAXED);
        word = ps_ack_ok(__atomic_load_n(ps_shard_word(sh, PS_REC_VERSION_OFF),
                                         __ATOMIC_RELAXED));
    } else {
        RF_LOG_WARN("ps %d: apply to '%s' part %u failed: %s",
                    s->opt.task_index, sh->spec.name, sh->spec.part,
                    rf_error_message());
        word = ps_ack_err(st);
    }
    return ps_send_ack(c, imm, word);
}
