/* ps/ps_server_sparse_sync.c: sync replicas with an embedding table on the
 * ps (TensorFlow 1.x's SparseConditionalAccumulator under
 * SyncReplicasOptimizer). A sync table's push (rf_ps_push_sparse_sync) is
 * the sparse push of ps_server_sparse.c whose 16-byte header carries the
 * worker's local step after the count (PS_SPARSE_SYNC_HDR_BYTES). Against
 * the record's sync step S, as for a dense sync shard (ps_server_sync.c):
 * a tag below S is stale (dropped, counted in the stale word), a tag above
 * S is a protocol error (the connection is dropped), one gradient per
 * client and step is taken (a second is dropped, the first kept): the
 * same gate, ps_sync_gate. A taken
 * gradient adds each of its rows into the row's sum and increments the
 * row's own count (TF's MEAN reduction of IndexedSlices: each row divided
 * by the gradients that touched it, not by replicas_to_aggregate); when
 * replicas_to_aggregate gradients were taken, every touched row's mean is
 * applied once with rf_optim_apply_sparse, each row owned and its records
 * sealed (ps_sparse_apply_rows, the async path's update; Adam's TF 1.x sparse
 * rule too), then S+1 is stored into the step word after the update. The
 * accumulator (a row -> entry map, the touched rows, their sums and counts)
 * grows on demand; its bytes, over every table of the ps, stay within
 * rf_ps_server_options.max_accum_bytes: a push that would pass it is
 * refused with an error ack naming the shard and the bound, nothing
 * changed. A step the chief set (rf_ps_sync_set_step) empties it. Service
 * thread only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "ps/ps_server_internal.h"
#include "rdmaflow/byteorder.h"
#include "rdmaflow/clock.h"
#include "rdmaflow/status.h"

#define NO_ENTRY UINT32_MAX

struct ps_rows_acc {
    uint32_t *entry_of; /* per table row: its entry, NO_ENTRY (lazy) */
    int64_t *row;       /* entry -> row, in the order first touched */
    uint32_t *count;    /* entry -> gradients that touched the row */
    float *sum;         /* entry -> the row's summed gradient rows */
    uint32_t used, cap; /* entries */
    size_t bytes;       /* what it holds, charged to s->accum_bytes */
};

static uint64_t *rec_word(ps_shard *sh, uint32_t off)
{
    return (uint64_t *)(void *)(sh->rec_ptr + off);
}

static size_t entry_bytes(const ps_shard *sh)
{
    return (size_t)sh->layout.row_bytes + sizeof(int64_t) + sizeof(uint32_t);
}

rf_status ps_rows_acc_create(ps_shard *sh)
{
    sh->sync->rows = calloc(1, sizeof *sh->sync->rows);
    if (!sh->sync->rows)
        return rf_error_set(RF_ERR_NO_MEMORY,
                            "ps: no memory for the accumulator of '%s'",
                            sh->spec.name);
    return RF_OK;
}

void ps_rows_acc_free(rf_ps_server *s, ps_shard *sh)
{
    ps_rows_acc *r = sh->sync ? sh->sync->rows : NULL;
    if (!r)
        return;
    s->accum_bytes -= r->bytes;
    free(r->entry_of);
    free(r->row);
    free(r->count);
    free(r->sum);
    free(r);
    sh->sync->rows = NULL;
}

void ps_rows_acc_clear(ps_shard *sh)
{
    ps_rows_acc *r = sh->sync->rows;
    for (uint32_t i = 0; i < r->used; i++)
        r->entry_of[r->row[i]] = NO_ENTRY;
    r->used = 0;
}

static rf_status over_bound(rf_ps_server *s, ps_shard *sh, size_t more)
{
    return rf_error_set(RF_ERR_NO_MEMORY,
                        "ps %d: sync push to table '%s' part %u refused: its "
                        "accumulator would need %zu more bytes, past this "
                        "ps's max_accum_bytes %zu (RF_PS_MAX_ACCUM_MB; %zu "
                        "held)",
                        s->opt.task_index, sh->spec.name, sh->spec.part, more,
                        s->opt.max_accum_bytes, s->accum_bytes);
}

/* Room for `need` entries (and the row map), within the bound. */
static rf_status rows_room(rf_ps_server *s, ps_shard *sh, uint32_t need)
{
    ps_rows_acc *r = sh->sync->rows;
    size_t map = r->entry_of ? 0 : (size_t)sh->layout.rows * sizeof(uint32_t);
    if (need <= r->cap && !map)
        return RF_OK;
    uint32_t cap = r->cap;
    if (need > cap) {
        cap = cap ? cap : 64;
        while (cap < need)
            cap = cap > UINT32_MAX / 2 ? need : 2 * cap;
    }
    size_t avail = s->opt.max_accum_bytes - s->accum_bytes;
    size_t more = map + (size_t)(cap - r->cap) * entry_bytes(sh);
    if (more > avail) { /* the doubling does not fit: exactly what is needed */
        cap = need > r->cap ? need : r->cap;
        more = map + (size_t)(cap - r->cap) * entry_bytes(sh);
        if (more > avail)
            return over_bound(s, sh, more);
    }
    if (map) {
        r->entry_of = malloc(map ? map : 1);
        if (!r->entry_of)
            return rf_error_set(RF_ERR_NO_MEMORY, "ps: out of memory");
        memset(r->entry_of, 0xff, map);
        r->bytes += map;
        s->accum_bytes += map;
    }
    if (cap > r->cap) {
        size_t width = (size_t)sh->layout.row_bytes / sizeof(float);
        int64_t *row = realloc(r->row, (size_t)cap * sizeof *row);
        if (row)
            r->row = row;
        uint32_t *count = realloc(r->count, (size_t)cap * sizeof *count);
        if (count)
            r->count = count;
        float *sum = realloc(r->sum, (size_t)cap * width * sizeof *sum);
        if (sum)
            r->sum = sum;
        if (!row || !count || !sum)
            return rf_error_set(RF_ERR_NO_MEMORY, "ps: out of memory");
        size_t grown = (size_t)(cap - r->cap) * entry_bytes(sh);
        r->bytes += grown;
        s->accum_bytes += grown;
        r->cap = cap;
    }
    return RF_OK;
}

/* Checks the push and copies its indices (ps_sparse_copy_indices); *fresh
 * gets how many are not in the accumulator yet (a row repeated in the push
 * counted each time: room for at most that many). */
static rf_status check_push(rf_ps_server *s, ps_shard *sh, ps_inbox *ib,
                            uint64_t count, uint32_t *fresh)
{
    rf_status st = ps_sparse_copy_indices(s, sh, ib, count);
    if (st != RF_OK)
        return st;
    const ps_rows_acc *r = sh->sync->rows;
    *fresh = 0;
    for (uint64_t i = 0; i < count; i++)
        *fresh += !r->entry_of || r->entry_of[s->sparse_idx[i]] == NO_ENTRY;
    return RF_OK;
}

/* Adds the push's rows (checked, room made) into the sums. */
static void take_rows(ps_shard *sh, const int64_t *idx, size_t n,
                      const float *grad)
{
    ps_rows_acc *r = sh->sync->rows;
    size_t width = (size_t)sh->layout.row_bytes / sizeof(float);
    for (size_t i = 0; i < n; i++) {
        uint32_t e = r->entry_of[idx[i]];
        const float *g = grad + i * width;
        if (e == NO_ENTRY) {
            e = r->used++;
            r->entry_of[idx[i]] = e;
            r->row[e] = idx[i];
            r->count[e] = 1;
            memcpy(r->sum + (size_t)e * width, g, width * sizeof(float));
            continue;
        }
        float *sum = r->sum + (size_t)e * width;
        for (size_t k = 0; k < width; k++)
            sum[k] += g[k];
        r->count[e]++;
    }
}

/* Each touched row's mean applied; the step advanced and published. */
static uint64_t apply_means(ps_server_conn *c, ps_shard *sh, int64_t step)
{
    ps_rows_acc *r = sh->sync->rows;
    size_t width = (size_t)sh->layout.row_bytes / sizeof(float);
    for (uint32_t e = 0; e < r->used; e++) {
        float n = (float)r->count[e];
        float *sum = r->sum + (size_t)e * width;
        for (size_t k = 0; k < width; k++)
            sum[k] /= n;
    }
    uint64_t t0 = c->srv->opt.on_apply ? rf_now_ns() : 0;
    uint64_t done = *rec_word(sh, PS_REC_UPDATES_OFF);
    rf_status st = ps_sparse_apply_rows(sh, r->row, r->used, r->sum);
    ps_apply_traced(c, sh, t0, done,
                    (uint32_t)((uint64_t)r->used * sh->layout.row_bytes));
    if (st != RF_OK) {
        RF_LOG_WARN("ps %d: applying the row means of %u gradients to '%s' "
                    "part %u at step %lld failed: %s; the step's gradients "
                    "are dropped",
                    c->srv->opt.task_index, sh->sync->count, sh->spec.name,
                    sh->spec.part, (long long)step, rf_error_message());
        ps_sync_reset(sh, step);
        return ps_ack_err(st);
    }
    return ps_sync_publish(sh, step);
}

bool ps_sparse_sync_push(ps_server_conn *c, ps_shard *sh, ps_inbox *ib,
                         uint32_t imm, uint32_t len)
{
    rf_ps_server *s = c->srv;
    char why[RF_PS_MAX_NAME + 200];
    if (len != PS_SPARSE_SYNC_HDR_BYTES) {
        snprintf(why, sizeof why,
                 "a push of %u bytes to sync table '%s' part %u, whose "
                 "sparse push sends its %u-byte count and tag",
                 len, sh->spec.name, sh->spec.part, PS_SPARSE_SYNC_HDR_BYTES);
        ps_conn_drop(c, why);
        return false;
    }
    uint64_t count = rf_get_le64(ib->ptr);
    bool ret = false;
    if (!ps_sync_gate(c, sh, ib, imm, (int64_t)rf_get_le64(ib->ptr + 8), &ret))
        return ret;
    int64_t step = sh->sync->step;
    uint32_t fresh = 0;
    rf_status st = check_push(s, sh, ib, count, &fresh);
    if (st == RF_OK)
        st = rows_room(s, sh, sh->sync->rows->used + fresh);
    if (st != RF_OK) {
        RF_LOG_WARN("%s", rf_error_message());
        pthread_mutex_lock(&s->mu);
        s->counters.sparse_refused++;
        pthread_mutex_unlock(&s->mu);
        return ps_send_ack(c, imm, ps_ack_err(st));
    }
    take_rows(
        sh, s->sparse_idx, (size_t)count,
        (const float *)(const void *)(ib->ptr + ps_sparse_rows_off(
                                                    sh->layout.max_push_rows)));
    pthread_mutex_lock(&s->mu);
    s->counters.sparse_rows += count;
    pthread_mutex_unlock(&s->mu);
    sh->sync->count++;
    sh->sync->taken++;
    ib->sync_step = step;
    if (sh->sync->count < sh->spec.sync_n)
        return ps_send_ack(c, imm, ps_ack_sync(false, (uint64_t)step));
    pthread_mutex_lock(&s->mu);
    s->counters.sparse_applies++;
    pthread_mutex_unlock(&s->mu);
    return ps_send_ack(c, imm, apply_means(c, sh, step));
}
