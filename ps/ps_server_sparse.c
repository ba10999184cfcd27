/* ps/ps_server_sparse.c: apply=ps sparse pushes to embedding tables. The
 * worker WRITEs the row indices and gradient rows into its inbox, then
 * WRITE_WITH_IMMs the count (ps_layout.h); the service thread copies the
 * indices out of the inbox (the peer may keep writing it), checks the count
 * and every index against the shard (a bad push is refused with an error
 * ack and changes nothing), then applies rf_optim_apply_sparse row by row
 * in place: each row owned (its values record's version to odd), updated,
 * and every field record of it sealed at the next even version with its
 * CRC32C (ps_layout.h), the values record's version published last; Adam's
 * TF 1.x rule moves every row, each row alone. The shard's version and
 * update count advance as for a dense push, and the ack is the same. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "ps/ps_server_internal.h"
#include "rdmaflow/byteorder.h"
#include "rdmaflow/clock.h"
#include "rdmaflow/status.h"

static void count_sparse(rf_ps_server *s, bool ok, uint64_t rows)
{
    ps_count_request(s, &s->counters.sparse_applies, &s->counters.sparse_rows,
                     &s->counters.sparse_refused, ok, rows);
}

rf_status ps_sparse_reserve(rf_ps_server *s, uint32_t max_push_rows)
{
    if (max_push_rows <= s->sparse_cap)
        return RF_OK;
    int64_t *p = realloc(s->sparse_idx, (size_t)max_push_rows * sizeof *p);
    if (!p)
        return rf_error_set(RF_ERR_NO_MEMORY, "ps: out of memory");
    s->sparse_idx = p;
    s->sparse_cap = max_push_rows;
    return RF_OK;
}

static unsigned char *row_rec(ps_shard *sh, uint64_t field_off, uint64_t r)
{
    return sh->rec_ptr + ps_row_off(field_off, sh->layout.row_stride, r);
}

/* Takes row r: its values record's version from even v to v + 1 (a
 * CMP_AND_SWP by apply=worker or rf_ps_write_rows owns it meanwhile; as
 * with the lock word, a ps CPU's compare-and-swap and a NIC's are atomic
 * with each other only where the NIC's atomics are coherent with the CPU's,
 * docs/DESIGN.md). A row owned for ROW_OWN_WAIT_MS (its writer died) is
 * taken over with a warning. Returns the version the row gets when sealed. */
#define ROW_OWN_WAIT_MS 1000
static uint64_t row_own(ps_shard *sh, uint64_t r)
{
    uint64_t *w = (uint64_t *)(void *)(row_rec(sh, sh->layout.values_off, r) +
                                       PS_ROW_VER_OFF);
    long long deadline = 0;
    for (uint64_t tries = 0;; tries++) {
        uint64_t v = __atomic_load_n(w, __ATOMIC_RELAXED);
        if (!(v & 1) &&
            __atomic_compare_exchange_n(w, &v, v + 1, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED))
            return v + 2;
        if (tries == 64) {
            deadline = rf_now_ms() + ROW_OWN_WAIT_MS;
        } else if (tries > 64 && rf_now_ms() >= deadline) {
            RF_LOG_WARN("ps: row %llu of '%s' part %u owned by a remote writer "
                        "for %d ms (version %llu): taken over",
                        (unsigned long long)r, sh->spec.name, sh->spec.part,
                        ROW_OWN_WAIT_MS, (unsigned long long)v);
            __atomic_store_n(w, v | 1, __ATOMIC_RELAXED);
            return (v | 1) + 1;
        }
    }
}

/* Seals every field record of row r at version ver: the slots', then the
 * values record's, whose version is published last (release). */
static void row_release(ps_shard *sh, uint64_t r, uint64_t ver)
{
    const ps_layout *l = &sh->layout;
    for (uint32_t i = 0; i < l->num_slots; i++)
        ps_row_publish(row_rec(sh, l->slot_off[i], r), ver,
                       (size_t)l->row_bytes);
    ps_row_publish(row_rec(sh, l->values_off, r), ver, (size_t)l->row_bytes);
}

/* Row r's value and slot rows, in place. */
static float *row_fields(ps_shard *sh, uint64_t r, float **slots)
{
    const ps_layout *l = &sh->layout;
    for (uint32_t i = 0; i < l->num_slots; i++)
        slots[i] =
            (float *)(void *)(row_rec(sh, l->slot_off[i], r) + PS_ROW_HDR);
    return (float *)(void *)(row_rec(sh, l->values_off, r) + PS_ROW_HDR);
}

static int cmp_pos(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return (x[1] > y[1]) - (x[1] < y[1]);
}

/* Adam's TF 1.x rule moves every row; its per-row arithmetic does not
 * depend on the other rows, so each row is updated alone (owned, applied
 * with its own gradients in push order, sealed), bitwise what one apply
 * over the whole table gives. */
static rf_status adam_rows(ps_shard *sh, const int64_t *idx, size_t n,
                           const float *grad, const rf_optim_scalars *sc)
{
    const ps_layout *l = &sh->layout;
    size_t width = (size_t)(l->row_bytes / sizeof(float));
    int64_t *pos = malloc((2 * n + 1) * sizeof *pos);
    float *g = malloc((n ? n : 1) * (size_t)l->row_bytes);
    if (!pos || !g) {
        free(pos), free(g);
        return rf_error_set(RF_ERR_NO_MEMORY, "ps: out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        pos[2 * i] = idx[i];
        pos[2 * i + 1] = (int64_t)i;
    }
    qsort(pos, n, 2 * sizeof *pos, cmp_pos);
    int64_t *zero = calloc(n ? n : 1, sizeof *zero);
    rf_status st =
        zero ? RF_OK : rf_error_set(RF_ERR_NO_MEMORY, "ps: out of memory");
    size_t k = 0;
    for (uint64_t r = 0; r < l->rows && st == RF_OK; r++) {
        size_t m = 0;
        for (; k < n && (uint64_t)pos[2 * k] == r; k++, m++)
            memcpy(g + m * width, grad + (size_t)pos[2 * k + 1] * width,
                   (size_t)l->row_bytes);
        float *slots[RF_OPTIM_MAX_SLOTS] = {0};
        uint64_t ver = row_own(sh, r);
        float *values = row_fields(sh, r, slots);
        st = rf_optim_apply_sparse(&sh->spec.optim, values, slots, 1, width,
                                   zero, m, g, sc);
        row_release(sh, r, ver);
    }
    free(pos), free(g), free(zero);
    return st;
}

rf_status ps_sparse_apply_rows(ps_shard *sh, const int64_t *idx, size_t n,
                               const float *grad)
{
    const ps_layout *l = &sh->layout;
    size_t width = (size_t)(l->row_bytes / sizeof(float));
    rf_optim_scalars sc;
    ps_rec_scalars_load(sh->rec_ptr, &sc);

    ps_shard_write_begin(sh);
    rf_status st = RF_OK;
    if (sh->spec.optim.kind == RF_OPTIM_ADAM) {
        st = adam_rows(sh, idx, n, grad, &sc);
    } else {
        /* one position at a time, in push order (a repeated sgd index is
         * one row updated twice), each inside its row's ownership */
        static const int64_t zero = 0;
        for (size_t i = 0; i < n && st == RF_OK; i++) {
            float *slots[RF_OPTIM_MAX_SLOTS] = {0};
            uint64_t ver = row_own(sh, (uint64_t)idx[i]);
            float *values = row_fields(sh, (uint64_t)idx[i], slots);
            st = rf_optim_apply_sparse(&sh->spec.optim, values, slots, 1, width,
                                       &zero, 1, grad + i * width, &sc);
            row_release(sh, (uint64_t)idx[i], ver);
        }
    }
    if (st == RF_OK)
        ps_shard_step_done(sh, &sc);
    ps_shard_write_end(sh);
    return st;
}

rf_status ps_sparse_copy_indices(rf_ps_server *s, const ps_shard *sh,
                                 const ps_inbox *ib, uint64_t count)
{
    const ps_layout *l = &sh->layout;
    if (count > l->max_push_rows)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "ps %d: sparse push of %llu rows to '%s' part %u "
                            "(max_push_rows %u) refused",
                            s->opt.task_index, (unsigned long long)count,
                            sh->spec.name, sh->spec.part, l->max_push_rows);
    /* A copy: the peer may write its inbox while we check and apply. */
    return ps_indices_copy(s, sh, ib->ptr + PS_SPARSE_IDX_OFF, count,
                           "sparse push to", NULL);
}

rf_status ps_indices_copy(rf_ps_server *s, const ps_shard *sh,
                          const unsigned char *src, uint64_t count,
                          const char *what, uint64_t *bad)
{
    int64_t *idx = s->sparse_idx;
    uint64_t rows = sh->layout.rows;
    for (uint64_t i = 0; i < count; i++) {
        idx[i] = (int64_t)rf_get_le64(src + 8 * i);
        if (idx[i] < 0 || (uint64_t)idx[i] >= rows) {
            if (bad)
                *bad = i;
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "ps %d: %s '%s' part %u refused: index %lld "
                                "at position %llu is outside its %llu rows",
                                s->opt.task_index, what, sh->spec.name,
                                sh->spec.part, (long long)idx[i],
                                (unsigned long long)i,
                                (unsigned long long)rows);
        }
    }
    return RF_OK;
}

bool ps_sparse_push(ps_server_conn *c, ps_shard *sh, ps_inbox *ib, uint32_t imm,
                    uint32_t len)
{
    rf_ps_server *s = c->srv;
    const ps_layout *l = &sh->layout;
    if (len != 8) {
        char why[400];
        snprintf(why, sizeof why,
                 "a push of %u bytes to table '%s' part %u, whose sparse "
                 "push sends its 8-byte count",
                 len, sh->spec.name, sh->spec.part);
        ps_conn_drop(c, why);
        return false;
    }
    uint64_t count = rf_get_le64(ib->ptr);
    rf_status st = ps_sparse_copy_indices(s, sh, ib, count);
    uint64_t word;
    if (st == RF_OK) {
        uint64_t t0 = s->opt.on_apply ? rf_now_ns() : 0;
        uint64_t done = *ps_shard_word(sh, PS_REC_UPDATES_OFF);
        st = ps_sparse_apply_rows(
            sh, s->sparse_idx, (size_t)count,
            (const float *)(const void *)(ib->ptr + ps_sparse_rows_off(
                                                        l->max_push_rows)));
        ps_apply_traced(c, sh, t0, done, (uint32_t)(count * l->row_bytes));
    }
    if (st == RF_OK) {
        count_sparse(s, true, count);
        word = ps_ack_ok(__atomic_load_n(ps_shard_word(sh, PS_REC_VERSION_OFF),
                                         __ATOMIC_RELAXED));
    } else {
        count_sparse(s, false, 0);
        RF_LOG_WARN("%s", rf_error_message());
        word = ps_ack_err(st);
    }
    return ps_send_ack(c, imm, word);
}
