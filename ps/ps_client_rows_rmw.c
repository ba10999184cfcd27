/* ps/ps_client_rows_rmw.c: the read-modify-write of embedding table rows
 * (cli_rows_update), used by the sparse read-modify-writes
 * (rf_ps_update_sparse_rmw and _locked; checked by ps_client_rows.c) and
 * rf_ps_write_rows.
 *
 * cli_rows_update: one list READs the row record (ps_layout.h: version,
 * CRC32C, row) of every field of every row; a row is taken when each
 * record is whole and all are at one version v (else read again,
 * bounded); the rows of each field are gathered side by side and changed;
 * one list of CMP_AND_SWPs takes each row's values-record version from v
 * to v + 1 (odd: owned; a swap that finds anything else lost to another
 * writer since the READ), then one list WRITEs every owned row's records
 * sealed at v + 2 (slots first, the values record, which publishes v + 2,
 * last); the rows whose swap lost are read, changed and swapped again.
 * So no update is lost and no reader accepts a mixed row even when
 * several workers write one row without the lock word, and a record is
 * always whole once its WRITE has landed (two writers never write one
 * row at once).
 *
 * The sparse read-modify-write: the rows are made unique (a repeated sgd
 * index is one row updated twice, in order); _locked: the shard's lock word is
 * taken first (CMP_AND_SWP, jittered backoff until lock_timeout_ms) and
 * released with CMP_AND_SWP token -> 0 after; the change is
 * rf_optim_apply_sparse on the gathered rows (local indices; in a later round,
 * the gradients of the rows that went round again). Completes before returning.
 * Scratch (the gathered rows, the records, the unique-row table, the lists) is
 * the client's, kept between calls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ps/ps_client_internal.h"
#include "rdmaflow/status.h"

static rf_status grow(void **p, size_t *cap, size_t want, size_t size)
{
    if (want <= *cap)
        return RF_OK;
    void *n = realloc(*p, want * size);
    if (!n)
        return rf_error_set(RF_ERR_NO_MEMORY, "ps client: out of memory");
    *p = n;
    *cap = want;
    return RF_OK;
}

/* The registered buffer of the gathered rows: at least bytes. */
static rf_status gather_buf(rf_ps_client *c, size_t bytes)
{
    return cli_scratch_reserve(c, &c->rmw_buf, &c->rmw_mr, &c->rmw_cap, bytes);
}

/* Unique rows of rows[0..n) in order of first appearance into c->rmw_rows
 * (*m of them) and each position's index among them into c->rmw_local. */
static rf_status unique_rows(rf_ps_client *c, const int64_t *rows, size_t n,
                             size_t *m)
{
    size_t hcap = 16;
    while (hcap < 2 * n)
        hcap *= 2;
    rf_status st = grow((void **)&c->rmw_hash, &c->rmw_hash_cap, hcap,
                        sizeof *c->rmw_hash);
    /* rmw_rows and rmw_local share rmw_rows_cap */
    size_t cap = c->rmw_rows_cap;
    if (st == RF_OK)
        st = grow((void **)&c->rmw_rows, &cap, n, sizeof *c->rmw_rows);
    if (st == RF_OK)
        st = grow((void **)&c->rmw_local, &c->rmw_rows_cap, n,
                  sizeof *c->rmw_local);
    if (st != RF_OK)
        return st;
    memset(c->rmw_hash, 0, hcap * sizeof *c->rmw_hash);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t h = (uint64_t)rows[i] * 0x9e3779b97f4a7c15ull;
        size_t b = (size_t)(h >> 20) & (hcap - 1);
        while (c->rmw_hash[b] && c->rmw_rows[c->rmw_hash[b] - 1] != rows[i])
            b = (b + 1) & (hcap - 1);
        if (!c->rmw_hash[b]) {
            c->rmw_rows[k] = rows[i];
            c->rmw_hash[b] = ++k;
        }
        c->rmw_local[i] = (int64_t)(c->rmw_hash[b] - 1);
    }
    *m = k;
    return RF_OK;
}

static uint32_t jitter(uint32_t us)
{
    static __thread uint64_t s = 0x2545f4914f6cdd1dull;
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return us / 2 + (uint32_t)(s % (us / 2 + 1));
}

/* Posts wrs[0..n) to v's ps as one list and waits. */
static rf_status run_list(rf_ps_client *c, rf_ps_var *v, rf_wr *wrs, size_t n,
                          const char *what)
{
    ps_cli_conn *p = &c->conns[v->ps];
    cli_group g = {0};
    c->rs_ops[v->ps] =
        (cli_op){.kind = CLI_OP_GROUP, .group = &g, .var = v, .conn = p};
    for (size_t i = 0; i < n; i++)
        wrs[i].context = &c->rs_ops[v->ps];
    cli_post_group(p, &g, wrs, n);
    return cli_group_wait(c, &g, what);
}

/* Takes the shard's lock word (words[0] gets the holder seen). */
static rf_status lock_shard(rf_ps_client *c, rf_ps_var *v, uint64_t *word)
{
    long long deadline = rf_now_ms() + c->opt.lock_timeout_ms;
    uint32_t backoff = 20;
    for (;;) {
        *word = 0;
        rf_wr w = {.op = RF_OP_CMP_SWAP,
                   .local = word,
                   .len = 8,
                   .local_mr = c->words_mr,
                   .remote_addr = v->rec_addr + PS_REC_LOCK_OFF,
                   .rkey = v->rkey,
                   .compare_add = 0,
                   .swap = c->lock_token};
        rf_status st =
            run_list(c, v, &w, 1, "rf_ps_update_sparse_rmw_locked (lock)");
        if (st != RF_OK)
            return st;
        if (*word == 0)
            return RF_OK;
        if (rf_now_ms() >= deadline) {
            char name[340];
            return rf_error_set(
                RF_ERR_TIMEOUT,
                "rf_ps_update_sparse_rmw_locked: the lock of '%s' part %u on "
                "%s is still "
                "held by client %u after %d ms (a worker that died holding "
                "it?)",
                v->spec.name, v->spec.part,
                cli_ps_name(&c->conns[v->ps], name, sizeof name),
                (unsigned)(*word & 0xffffffffu), c->opt.lock_timeout_ms);
        }
        if ((st = cli_pause_us(c, jitter(backoff),
                               "rf_ps_update_sparse_rmw_locked (lock)")) !=
            RF_OK)
            return st;
        backoff = backoff * 2 > 2000 ? 2000 : backoff * 2;
    }
}

/* ---- the row update engine ------------------------------------------------
 */

/* Posts reads of every field record of the rows which[bad[0..nb)) into
 * rec (row jj's field f at (jj * nf + f) * stride) and waits. */
static rf_status read_records(rf_ps_client *c, rf_ps_var *v,
                              const int64_t *rows, const size_t *which,
                              const size_t *bad, size_t nb, const char *what)
{
    const ps_layout *l = &v->lay;
    size_t nf = 1 + l->num_slots, stride = (size_t)l->row_stride;
    size_t k = 0;
    for (size_t b = 0; b < nb; b++)
        for (size_t f = 0; f < nf; f++) {
            uint64_t off = f == 0 ? l->values_off : l->slot_off[f - 1];
            uint64_t r = (uint64_t)rows[which[bad[b]]];
            c->rs_wrs[k++] = (rf_wr){
                .op = RF_OP_READ,
                .local = c->rec_buf + (bad[b] * nf + f) * stride,
                .len = PS_ROW_HDR + (size_t)l->row_bytes,
                .local_mr = c->rec_mr,
                .remote_addr = v->rec_addr + ps_row_off(off, l->row_stride, r),
                .rkey = v->rkey};
        }
    return run_list(c, v, c->rs_wrs, k, what);
}

/* 1. Reads every field record of the rows which[0..k) until each row is
 * whole and all its records are at one version (ver[jj]); bad has room for
 * k positions. */
static rf_status read_whole(rf_ps_client *c, rf_ps_var *v, const int64_t *rows,
                            const size_t *which, size_t *bad, size_t k,
                            uint64_t *ver, long long deadline, const char *what)
{
    const ps_layout *l = &v->lay;
    size_t rb = (size_t)l->row_bytes, stride = (size_t)l->row_stride;
    size_t nf = 1 + l->num_slots, nb = k;
    rf_status st = RF_OK;
    for (size_t jj = 0; jj < k; jj++)
        bad[jj] = jj;
    while (st == RF_OK && nb) {
        st = read_records(c, v, rows, which, bad, nb, what);
        size_t still = 0;
        for (size_t b = 0; st == RF_OK && b < nb; b++) {
            const unsigned char *rec = c->rec_buf + bad[b] * nf * stride;
            bool ok = cli_row_whole(c, rec, rb, &ver[bad[b]]);
            for (size_t f = 1; ok && f < nf; f++) {
                uint64_t fv = 0;
                ok = cli_row_whole(c, rec + f * stride, rb, &fv) &&
                     fv == ver[bad[b]];
            }
            if (ok)
                c->row_counters.rows++;
            else
                bad[still++] = bad[b];
        }
        nb = still;
        if (st == RF_OK && nb && rf_now_ms() >= deadline)
            st =
                rf_error_set(RF_ERR_TIMEOUT,
                             "%s: row %lld of table '%s' part %u (and "
                             "%zu more) still torn or being written "
                             "after %d ms",
                             what, (long long)rows[which[bad[0]]], v->spec.name,
                             v->spec.part, nb - 1, c->opt.op_timeout_ms);
        if (st == RF_OK && nb)
            st = cli_pause_us(c, jitter(20), what);
    }
    return st;
}

/* 4. Owns each of the k rows (its values record's version from the one
 * READ, ver[jj], to odd), then 5. WRITEs the owned rows' records sealed at
 * the next even version, the slots' first, the values record (which ends
 * the ownership) last. The rows another writer took meanwhile are moved to
 * the front of which (*lost of them). */
static rf_status own_and_write(rf_ps_client *c, rf_ps_var *v,
                               const int64_t *rows, size_t *which, size_t k,
                               const uint64_t *ver, float *const *field,
                               size_t *lost, const char *what)
{
    const ps_layout *l = &v->lay;
    size_t rb = (size_t)l->row_bytes, stride = (size_t)l->row_stride;
    size_t nf = 1 + l->num_slots, nw = 0;
    uint64_t *words = (uint64_t *)(void *)c->words;
    for (size_t jj = 0; jj < k; jj++)
        c->rs_wrs[nw++] =
            (rf_wr){.op = RF_OP_CMP_SWAP,
                    .local = &words[jj],
                    .len = 8,
                    .local_mr = c->words_mr,
                    .remote_addr =
                        v->rec_addr + ps_row_off(l->values_off, l->row_stride,
                                                 (uint64_t)rows[which[jj]]),
                    .rkey = v->rkey,
                    .compare_add = ver[jj],
                    .swap = ver[jj] + 1};
    rf_status st = run_list(c, v, c->rs_wrs, nw, what);
    *lost = 0;
    nw = 0;
    for (size_t jj = 0; st == RF_OK && jj < k; jj++) {
        if (words[jj] != ver[jj]) {
            which[(*lost)++] = which[jj];
            c->row_counters.conflicts++;
            continue;
        }
        uint64_t r = (uint64_t)rows[which[jj]];
        for (size_t q = 0; q < nf; q++) {
            size_t f = (q + 1) % nf; /* slots, then values */
            unsigned char *rec = c->rec_buf + (jj * nf + f) * stride;
            uint64_t off = f == 0 ? l->values_off : l->slot_off[f - 1];
            memcpy(rec + PS_ROW_HDR, (unsigned char *)field[f] + jj * rb, rb);
            ps_row_seal(rec, ver[jj] + 2, rb);
            c->rs_wrs[nw++] = (rf_wr){
                .op = RF_OP_WRITE,
                .local = rec,
                .len = PS_ROW_HDR + rb,
                .local_mr = c->rec_mr,
                .remote_addr = v->rec_addr + ps_row_off(off, l->row_stride, r),
                .rkey = v->rkey};
        }
    }
    if (st == RF_OK && nw)
        st = run_list(c, v, c->rs_wrs, nw, what);
    return st;
}

rf_status cli_rows_update(rf_ps_client *c, rf_ps_var *v, const int64_t *rows,
                          size_t m, cli_rows_modify modify, void *ctx,
                          const char *what)
{
    if (!m)
        return RF_OK;
    const ps_layout *l = &v->lay;
    size_t rb = (size_t)l->row_bytes, stride = (size_t)l->row_stride;
    size_t nf = 1 + l->num_slots;
    rf_status st;
    if ((st = cli_rec_buf(c, m * nf * stride)) != RF_OK ||
        (st = gather_buf(c, nf * m * rb)) != RF_OK ||
        (st = cli_words(c, m)) != RF_OK ||
        (st = cli_rows_scratch(c, nf * m, 0)) != RF_OK)
        return st;
    size_t *which = malloc(2 * m * sizeof *which);
    uint64_t *ver = malloc(m * sizeof *ver);
    if (!which || !ver) {
        free(which), free(ver);
        return rf_error_set(RF_ERR_NO_MEMORY, "ps client: out of memory");
    }
    float *field[1 + RF_OPTIM_MAX_SLOTS];
    for (size_t f = 0; f < nf; f++)
        field[f] = (float *)(void *)(c->rmw_buf + f * m * rb);
    for (size_t j = 0; j < m; j++)
        which[j] = j;
    size_t k = m;
    long long deadline = rf_now_ms() + c->opt.op_timeout_ms;
    for (uint32_t round = 0; st == RF_OK && k; round++) {
        st = read_whole(c, v, rows, which, which + m, k, ver, deadline, what);
        /* 2. the fields' rows side by side; 3. the change */
        for (size_t jj = 0; st == RF_OK && jj < k; jj++)
            for (size_t f = 0; f < nf; f++)
                memcpy((unsigned char *)field[f] + jj * rb,
                       c->rec_buf + (jj * nf + f) * stride + PS_ROW_HDR, rb);
        if (st == RF_OK)
            st = modify(ctx, v, which, k, field);
        size_t lost = 0;
        if (st == RF_OK)
            st = own_and_write(c, v, rows, which, k, ver, field, &lost, what);
        /* the rows another writer took meanwhile go round again */
        k = lost;
        if (st == RF_OK && k && rf_now_ms() >= deadline)
            st = rf_error_set(RF_ERR_TIMEOUT,
                              "%s: row %lld of table '%s' part %u (and %zu "
                              "more) taken by other writers for %d ms",
                              what, (long long)rows[which[0]], v->spec.name,
                              v->spec.part, k - 1, c->opt.op_timeout_ms);
        if (st == RF_OK && k)
            st = cli_pause_us(c, jitter(20u << (round < 6 ? round : 6)), what);
    }
    free(which), free(ver);
    return st;
}

/* ---- apply=worker ---------------------------------------------------------
 */

typedef struct rmw_ctx {
    const rf_optim_config *optim;
    size_t m, n, width;
    const int64_t *local; /* each position's unique row */
    const float *grad;
    /* a later round's subset: its rows' positions and gradients */
    int64_t *inv, *sub_idx;
    float *sub_grad;
    char err[400];
    const char *what; /* the caller, in messages */
} rmw_ctx;

static rf_status modify_apply(void *arg, rf_ps_var *v, const size_t *which,
                              size_t k, float *const *field)
{
    rmw_ctx *x = arg;
    rf_optim_scalars sc = {0};
    const int64_t *idx = x->local;
    const float *g = x->grad;
    size_t n = x->n;
    if (k != x->m) { /* only the rows another writer took: their gradients */
        if (!x->inv) {
            x->inv = malloc((x->m + x->n) * sizeof *x->inv);
            x->sub_grad = malloc(x->n * x->width * sizeof *x->sub_grad);
            if (!x->inv || !x->sub_grad)
                return rf_error_set(RF_ERR_NO_MEMORY,
                                    "ps client: out of memory");
            x->sub_idx = x->inv + x->m;
        }
        for (size_t j = 0; j < x->m; j++)
            x->inv[j] = -1;
        for (size_t jj = 0; jj < k; jj++)
            x->inv[which[jj]] = (int64_t)jj;
        n = 0;
        for (size_t i = 0; i < x->n; i++)
            if (x->inv[x->local[i]] >= 0) {
                x->sub_idx[n] = x->inv[x->local[i]];
                memcpy(x->sub_grad + n * x->width, x->grad + i * x->width,
                       x->width * sizeof(float));
                n++;
            }
        idx = x->sub_idx;
        g = x->sub_grad;
    }
    rf_status st = rf_optim_apply_sparse(x->optim, field[0], field + 1, k,
                                         x->width, idx, n, g, &sc);
    if (st != RF_OK)
        return rf_error_set(st, "%s: '%s' part %u: %s", x->what, v->spec.name,
                            v->spec.part, rf_error_message());
    return RF_OK;
}

rf_status cli_rows_rmw(rf_ps_client *c, rf_ps_var *v, const int64_t *rows,
                       size_t n, const float *grad, bool locking,
                       const char *what)
{
    size_t m = 0;
    rf_status st = unique_rows(c, rows, n, &m);
    if (st != RF_OK || m == 0)
        return st; /* n = 0: nothing moves (Adam is refused) */
    if ((st = cli_words(c, 2)) != RF_OK ||
        (st = cli_rows_scratch(c, 1, 0)) != RF_OK)
        return st;
    if (locking &&
        (st = lock_shard(c, v, (uint64_t *)(void *)c->words)) != RF_OK)
        return st;
    rmw_ctx x = {.optim = &v->spec.optim,
                 .m = m,
                 .n = n,
                 .width = (size_t)v->lay.row_bytes / sizeof(float),
                 .local = c->rmw_local,
                 .grad = grad,
                 .what = what};
    st = cli_rows_update(c, v, c->rmw_rows, m, modify_apply, &x, what);
    free(x.inv), free(x.sub_grad);
    if (locking) { /* c->words[0] (the engine used them for its swaps) */
        /* released with CMP_AND_SWP token -> 0: atomics are atomic only
         * with respect to other atomics (ps_client_push.c) */
        rf_status ust = cli_words(c, 1);
        uint64_t *old = (uint64_t *)(void *)c->words;
        if (ust == RF_OK) {
            *old = 0;
            rf_wr w = {.op = RF_OP_CMP_SWAP,
                       .local = old,
                       .len = 8,
                       .local_mr = c->words_mr,
                       .remote_addr = v->rec_addr + PS_REC_LOCK_OFF,
                       .rkey = v->rkey,
                       .compare_add = c->lock_token,
                       .swap = 0};
            ust = run_list(c, v, &w, 1,
                           "rf_ps_update_sparse_rmw_locked (unlock)");
        }
        if (ust == RF_OK && *old != c->lock_token)
            ust = rf_error_set(RF_ERR_CORRUPT,
                               "rf_ps_update_sparse_rmw_locked: releasing the "
                               "lock of "
                               "'%s' part %u found 0x%llx in it, not this "
                               "client's 0x%llx: the lock was not held "
                               "while the rows were written",
                               v->spec.name, v->spec.part,
                               (unsigned long long)*old,
                               (unsigned long long)c->lock_token);
        if (st == RF_OK)
            st = ust;
    }
    return st;
}
