/* ps/ps_client_rows.c: embedding tables on the worker side.
 *
 * rf_ps_read_rows: per row one READ of its row record (version, CRC32C,
 * row; ps_layout.h) into the client's registered record scratch, one list
 * per ps, then one wait; a record whose version is odd (a writer owns the
 * row) or whose CRC is not that of its version and row (torn: its cache
 * lines were fetched around a write, in whatever order) is read again,
 * alone with the others that were, until whole or the op timeout; whole
 * rows are copied to the caller's buffer. rf_ps_read_row_range: a
 * contiguous range as one READ per 4 MiB of consecutive records, torn rows
 * read again one by one. What the reads saw is counted
 * (rf_ps_client_row_counters).
 * rf_ps_push_sparse_inbox: WRITEs of the indices and the gradient rows
 * into the worker's inbox, then the WRITE_WITH_IMM of the count (the ps
 * checks and applies, ps_server_sparse.c, and acks as for a dense push);
 * rf_ps_update_sparse_rmw (and _locked): the row update of
 * ps_client_rows_rmw.c (every field record READ and checked, CMP_AND_SWP
 * of each row's version, the sealed records WRITten).
 * rf_ps_push_sparse_sync: the same inbox push to
 * a sync table, its count's WRITE_WITH_IMM carrying the tag after the count
 * (ps_server_sparse_sync.c). Every index is checked before anything is
 * posted. The work request lists, completion contexts and row records are
 * per-client scratch kept between calls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ps/ps_client_internal.h"
#include "rdmaflow/byteorder.h"
#include "rdmaflow/status.h"

/* Rounds of re-reading torn rows before RF_ERR_TIMEOUT (op_timeout_ms
 * bounds them too). */
#define ROWS_MAX_ROUNDS 100000u

rf_status cli_rows_scratch(rf_ps_client *c, size_t wrs, size_t items)
{
    if (wrs > c->rs_wr_cap) {
        rf_wr *w = realloc(c->rs_wrs, wrs * sizeof *w);
        if (!w)
            return rf_error_set(RF_ERR_NO_MEMORY, "ps client: out of memory");
        c->rs_wrs = w;
        c->rs_wr_cap = wrs;
    }
    if (items > c->rs_item_cap) {
        cli_row_item *it = realloc(c->rs_items, items * sizeof *it);
        if (!it)
            return rf_error_set(RF_ERR_NO_MEMORY, "ps client: out of memory");
        c->rs_items = it;
        c->rs_item_cap = items;
    }
    if (!c->rs_ops) {
        c->rs_ops = calloc(c->num_ps, sizeof *c->rs_ops);
        if (!c->rs_ops)
            return rf_error_set(RF_ERR_NO_MEMORY, "ps client: out of memory");
    }
    return RF_OK;
}

rf_status cli_table_check(rf_ps_client *c, rf_ps_var *v, const char *what)
{
    if (!v || v->client != c)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: no table or one of another client", what);
    char name[340];
    ps_cli_conn *p = &c->conns[v->ps];
    if (v->stale)
        return rf_error_set(RF_ERR_ABORTED,
                            "%s: '%s' part %u is gone: %s restarted; the chief "
                            "must recreate and restore it",
                            what, v->spec.name, v->spec.part,
                            cli_ps_name(p, name, sizeof name));
    if (!v->lay.max_push_rows)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: '%s' part %u is not an embedding table "
                            "(max_push_rows 0)",
                            what, v->spec.name, v->spec.part);
    return cli_conn_check(p);
}

rf_status cli_rows_in_mr(const rf_ps_var *v, const void *buf, size_t count,
                         size_t size, rf_mr *mr, const char *what,
                         const char *which)
{
    if (!count)
        return RF_OK;
    const unsigned char *b = buf, *base = mr ? rf_mr_addr(mr) : NULL;
    size_t len = mr ? rf_mr_len(mr) : 0;
    if (!b || !base || size > SIZE_MAX / count || b < base ||
        (size_t)(b - base) > len || count * size > len - (size_t)(b - base))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: '%s' part %u: %s (%zu x %zu bytes at %p) is "
                            "not inside its registered region",
                            what, v->spec.name, v->spec.part, which, count,
                            size, buf);
    return RF_OK;
}

rf_status cli_rows_indices(const rf_ps_var *v, const int64_t *rows, size_t n,
                           size_t set, const char *what)
{
    if (n && !rows)
        return rf_error_set(RF_ERR_INVALID_ARG, "%s: '%s' part %u: no indices",
                            what, v->spec.name, v->spec.part);
    for (size_t i = 0; i < n; i++)
        if (rows[i] < 0 || (uint64_t)rows[i] >= v->lay.rows)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "%s: table '%s' part %u: index %lld at "
                                "position %zu of set %zu is outside its %llu "
                                "rows (nothing was posted)",
                                what, v->spec.name, v->spec.part,
                                (long long)rows[i], i, set,
                                (unsigned long long)v->lay.rows);
    return RF_OK;
}

rf_status cli_field_off(const rf_ps_var *v, rf_ps_field field, uint64_t *off,
                        const char *what)
{
    if (field == RF_PS_FIELD_VALUES) {
        *off = v->e.values_off;
    } else if ((int)field >= RF_PS_FIELD_SLOT0 &&
               (int)field < RF_PS_FIELD_SLOT0 + (int)v->e.num_slots) {
        *off = v->e.slot_off[(int)field - RF_PS_FIELD_SLOT0];
    } else {
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: table '%s' part %u has no row field %d (%u "
                            "slots)",
                            what, v->spec.name, v->spec.part, (int)field,
                            v->e.num_slots);
    }
    return RF_OK;
}

rf_status cli_rows_check_sets(rf_ps_client *c, const rf_ps_rows *sets,
                              size_t nsets, const char *what,
                              cli_rows_mr_check check_mr, size_t *total)
{
    if (nsets && !sets)
        return rf_error_set(RF_ERR_INVALID_ARG, "%s: no sets", what);
    size_t rows = 0;
    for (size_t i = 0; i < nsets; i++) {
        const rf_ps_rows *s = &sets[i];
        rf_status st = cli_table_check(c, s->var, what);
        uint64_t off = 0;
        if (st == RF_OK)
            st = cli_field_off(s->var, s->field, &off, what);
        if (st == RF_OK)
            st = cli_rows_in_mr(s->var, s->buf, s->n,
                                (size_t)s->var->lay.row_bytes, s->mr, what,
                                "the row buffer");
        if (st == RF_OK && check_mr)
            st = check_mr(c, s, i, what);
        if (st == RF_OK)
            st = cli_rows_indices(s->var, s->rows, s->n, i, what);
        if (st != RF_OK)
            return st;
        rows += s->n;
    }
    if (total)
        *total = rows;
    return RF_OK;
}

rf_status cli_rows_locked(rf_ps_client *c,
                          rf_status (*fn)(rf_ps_client *c,
                                          const rf_ps_rows *sets, size_t nsets),
                          const rf_ps_rows *sets, size_t nsets,
                          const char *what)
{
    if (!c)
        return rf_error_set(RF_ERR_INVALID_ARG, "%s: NULL client", what);
    cli_lock(c);
    rf_status st = fn(c, sets, nsets);
    cli_unlock(c);
    return st;
}

rf_status cli_scratch_reserve(rf_ps_client *c, unsigned char **buf, rf_mr **mr,
                              size_t *cap, size_t bytes)
{
    if (bytes <= *cap)
        return RF_OK;
    size_t want = *cap ? *cap : 4096;
    while (want < bytes)
        want *= 2;
    void *p = NULL;
    if (posix_memalign(&p, 64, want) != 0)
        return rf_error_set(RF_ERR_NO_MEMORY, "ps client: out of memory");
    rf_mr *reg;
    rf_status st = rf_mr_reg(c->fabric, p, want, RF_ACCESS_LOCAL_WRITE, &reg);
    if (st != RF_OK) {
        free(p);
        return st;
    }
    if (*mr)
        rf_mr_dereg(*mr);
    free(*buf);
    *buf = p;
    *mr = reg;
    *cap = want;
    return RF_OK;
}

rf_status cli_rec_buf(rf_ps_client *c, size_t bytes)
{
    return cli_scratch_reserve(c, &c->rec_buf, &c->rec_mr, &c->rec_cap, bytes);
}

bool cli_row_whole(rf_ps_client *c, const unsigned char *rec, size_t len,
                   uint64_t *version)
{
    c->row_counters.reads++;
    switch (ps_row_check(rec, len, version)) {
    case PS_ROW_OK:
        return true;
    case PS_ROW_BUSY:
        c->row_counters.busy++;
        return false;
    default:
        c->row_counters.torn++;
        return false;
    }
}

void rf_ps_client_row_counters(rf_ps_client *c, rf_ps_row_counters *out)
{
    if (!out)
        return;
    *out = (rf_ps_row_counters){0};
    if (!c)
        return;
    cli_lock(c);
    *out = c->row_counters;
    cli_unlock(c);
}

/* One round: one READ of every pending item's row record into c->rec_buf
 * (one list per ps) and the wait; whole rows are copied to their places,
 * the others kept pending. */
static rf_status rows_round(rf_ps_client *c, const rf_ps_rows *sets,
                            size_t *pending)
{
    size_t n = *pending, bytes = 0;
    for (size_t k = 0; k < n; k++)
        bytes += (size_t)sets[c->rs_items[k].set].var->lay.row_stride;
    rf_status st = cli_rec_buf(c, bytes);
    if (st != RF_OK)
        return st;
    cli_group g = {0};
    size_t used = 0, at = 0;
    for (size_t ps = 0; ps < c->num_ps; ps++) {
        ps_cli_conn *p = &c->conns[ps];
        size_t first = used;
        for (size_t k = 0; k < n; k++) {
            const cli_row_item *it = &c->rs_items[k];
            rf_ps_var *v = sets[it->set].var;
            if (v->ps != ps)
                continue;
            c->rs_ops[ps] = (cli_op){
                .kind = CLI_OP_GROUP, .group = &g, .var = v, .conn = p};
            uint64_t r = (uint64_t)sets[it->set].rows[it->pos];
            c->rs_wrs[used++] = (rf_wr){
                .op = RF_OP_READ,
                .context = &c->rs_ops[ps],
                .local = c->rec_buf + at,
                .len = PS_ROW_HDR + (size_t)v->lay.row_bytes,
                .local_mr = c->rec_mr,
                .remote_addr =
                    v->rec_addr + ps_row_off(it->off, v->lay.row_stride, r),
                .rkey = v->rkey};
            at += (size_t)v->lay.row_stride;
        }
        if (used > first)
            cli_post_group(p, &g, c->rs_wrs + first, used - first);
    }
    st = cli_group_wait(c, &g, "rf_ps_read_rows");
    if (st != RF_OK)
        return st;
    /* the records landed in post order: per ps, the items of that ps */
    size_t keep = 0;
    at = 0;
    for (size_t ps = 0; ps < c->num_ps; ps++)
        for (size_t k = 0; k < n; k++) {
            const cli_row_item *it = &c->rs_items[k];
            const rf_ps_rows *s = &sets[it->set];
            if (s->var->ps != ps)
                continue;
            size_t rb = (size_t)s->var->lay.row_bytes;
            const unsigned char *rec = c->rec_buf + at;
            at += (size_t)s->var->lay.row_stride;
            if (cli_row_whole(c, rec, rb, NULL)) {
                memcpy((unsigned char *)s->buf + it->pos * rb, rec + PS_ROW_HDR,
                       rb);
                c->row_counters.rows++;
            } else {
                c->rs_items[n + keep++] = *it; /* the second half */
            }
        }
    memmove(c->rs_items, c->rs_items + n, keep * sizeof *c->rs_items);
    *pending = keep;
    return RF_OK;
}

static rf_status read_rows(rf_ps_client *c, const rf_ps_rows *sets,
                           size_t nsets)
{
    const char *what = "rf_ps_read_rows";
    size_t total = 0;
    rf_status st = cli_rows_check_sets(c, sets, nsets, what, NULL, &total);
    if (st != RF_OK || !total)
        return st;
    /* items: the pending rows, then room for those kept by a round */
    st = cli_rows_scratch(c, total, 2 * total);
    if (st != RF_OK)
        return st;
    size_t k = 0;
    for (size_t i = 0; i < nsets; i++) {
        uint64_t off = 0;
        cli_field_off(sets[i].var, sets[i].field, &off, what);
        for (size_t j = 0; j < sets[i].n; j++)
            c->rs_items[k++] = (cli_row_item){.set = i, .pos = j, .off = off};
    }
    size_t pending = total;
    long long deadline = rf_now_ms() + c->opt.op_timeout_ms;
    for (uint32_t round = 0;; round++) {
        if ((st = rows_round(c, sets, &pending)) != RF_OK)
            return st;
        if (!pending)
            return RF_OK;
        if (round + 1 >= ROWS_MAX_ROUNDS || rf_now_ms() >= deadline) {
            const cli_row_item *it = &c->rs_items[0];
            const rf_ps_rows *s = &sets[it->set];
            return rf_error_set(RF_ERR_TIMEOUT,
                                "%s: row %lld of table '%s' part %u (and %zu "
                                "more) still torn or being written after %u "
                                "reads within %d ms",
                                what, (long long)s->rows[it->pos],
                                s->var->spec.name, s->var->spec.part,
                                pending - 1, round + 1, c->opt.op_timeout_ms);
        }
        if (round >= 2 &&
            (st = cli_pause_us(c, round < 100 ? 10 : 200, what)) != RF_OK)
            return st;
    }
}

rf_status rf_ps_read_rows(rf_ps_client *c, const rf_ps_rows *sets, size_t nsets)
{
    return cli_rows_locked(c, read_rows, sets, nsets, "rf_ps_read_rows");
}

/* ---- contiguous ranges ------------------------------------------------------
 */

/* Row records READ per work request of a range read (bytes). */
#define RANGE_CHUNK_BYTES (4u << 20)

rf_status cli_rows_read_range(rf_ps_client *c, rf_ps_var *v, rf_ps_field field,
                              int64_t row0, size_t n, void *buf, rf_mr *mr)
{
    const char *what = "rf_ps_read_row_range";
    rf_status st = cli_table_check(c, v, what);
    uint64_t off = 0;
    if (st == RF_OK)
        st = cli_field_off(v, field, &off, what);
    if (st != RF_OK)
        return st;
    if (row0 < 0 || (uint64_t)row0 > v->lay.rows ||
        n > v->lay.rows - (uint64_t)row0)
        return rf_error_set(
            RF_ERR_INVALID_ARG,
            "%s: rows [%lld, %llu) of table '%s' part %u, which has %llu "
            "(nothing was posted)",
            what, (long long)row0, (unsigned long long)((uint64_t)row0 + n),
            v->spec.name, v->spec.part, (unsigned long long)v->lay.rows);
    size_t rb = (size_t)v->lay.row_bytes, stride = (size_t)v->lay.row_stride;
    if ((st = cli_rows_in_mr(v, buf, n, rb, mr, what, "the row buffer")) !=
        RF_OK)
        return st;
    size_t per = RANGE_CHUNK_BYTES / stride ? RANGE_CHUNK_BYTES / stride : 1;
    ps_cli_conn *p = &c->conns[v->ps];
    int64_t *again = NULL; /* rows to read again, up to a chunk's */
    for (size_t done = 0; done < n && st == RF_OK;) {
        size_t m = n - done < per ? n - done : per;
        uint64_t r0 = (uint64_t)row0 + done;
        if ((st = cli_rec_buf(c, m * stride)) != RF_OK)
            break;
        /* one READ of the chunk's consecutive records */
        cli_group g = {0};
        cli_op o = {.kind = CLI_OP_GROUP, .group = &g, .var = v, .conn = p};
        rf_wr w = {.op = RF_OP_READ,
                   .context = &o,
                   .local = c->rec_buf,
                   .len = (m - 1) * stride + PS_ROW_HDR + rb,
                   .local_mr = c->rec_mr,
                   .remote_addr =
                       v->rec_addr + ps_row_off(off, v->lay.row_stride, r0),
                   .rkey = v->rkey};
        cli_post_group(p, &g, &w, 1);
        if ((st = cli_group_wait(c, &g, what)) != RF_OK)
            break;
        /* whole rows out; the others (torn, or owned by a writer) read
         * again one by one as rf_ps_read_rows reads them, after the
         * chunk's copies (read_rows reuses rec_buf) */
        size_t torn = 0;
        for (size_t i = 0; i < m; i++) {
            const unsigned char *rec = c->rec_buf + i * stride;
            if (cli_row_whole(c, rec, rb, NULL)) {
                memcpy((unsigned char *)buf + (done + i) * rb, rec + PS_ROW_HDR,
                       rb);
                c->row_counters.rows++;
            } else {
                if (!again && !(again = malloc(m * sizeof *again)))
                    return rf_error_set(RF_ERR_NO_MEMORY,
                                        "ps client: out of memory");
                again[torn++] = (int64_t)(r0 + i);
            }
        }
        for (size_t k = 0; k < torn && st == RF_OK; k++) {
            rf_ps_rows one = {
                .var = v,
                .field = field,
                .rows = &again[k],
                .n = 1,
                .buf = (unsigned char *)buf +
                       ((size_t)((uint64_t)again[k] - (uint64_t)row0)) * rb,
                .mr = mr};
            st = read_rows(c, &one, 1);
        }
        done += m;
    }
    free(again);
    return st;
}

rf_status rf_ps_read_row_range(rf_ps_client *c, rf_ps_var *var,
                               rf_ps_field field, int64_t row0, size_t nrows,
                               void *buf, rf_mr *mr)
{
    if (!c)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_read_row_range: NULL client");
    if (nrows > RF_PS_RANGE_MAX_ROWS)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_read_row_range: %zu rows, at most %u a call "
                            "(nothing was posted)",
                            nrows, RF_PS_RANGE_MAX_ROWS);
    cli_lock(c);
    rf_status st = cli_rows_read_range(c, var, field, row0, nrows, buf, mr);
    cli_unlock(c);
    return st;
}

/* ---- sparse pushes -----------------------------------------------------
 */

/* sync: a sync table's push, whose header carries the tag (step) after the
 * count (ps_layout.h). */
static rf_status push_ps(rf_ps_client *c, rf_ps_var *v, const int64_t *rows,
                         size_t n, const float *grad, rf_mr *mr, bool sync,
                         int64_t step, const char *what)
{
    ps_cli_conn *p = &c->conns[v->ps];
    rf_status st = RF_OK;
    if (!v->sync_tag &&
        (st = cli_pool_alloc(c, PS_SPARSE_SYNC_HDR_BYTES, &v->sync_tag,
                             &v->sync_tag_mr)) != RF_OK)
        return st;
    if ((st = cli_push_wait_var(c, v, what)) != RF_OK ||
        (st = cli_conn_check(p)) != RF_OK)
        return st;
    cli_push_begin(v, sync, false);
    rf_put_le64(v->sync_tag, (uint64_t)n);
    if (sync)
        rf_put_le64(v->sync_tag + 8, (uint64_t)step);
    rf_wr wrs[3];
    size_t nw = 0;
    if (n) {
        wrs[nw++] = (rf_wr){.op = RF_OP_WRITE,
                            .context = &v->tag_op,
                            .local = (void *)rows,
                            .len = 8 * n,
                            .local_mr = mr,
                            .remote_addr = v->inbox_addr + PS_SPARSE_IDX_OFF,
                            .rkey = v->inbox_rkey};
        wrs[nw++] =
            (rf_wr){.op = RF_OP_WRITE,
                    .context = &v->tag_op,
                    .local = (void *)grad,
                    .len = n * (size_t)v->lay.row_bytes,
                    .local_mr = mr,
                    .remote_addr = v->inbox_addr +
                                   ps_sparse_rows_off(v->lay.max_push_rows),
                    .rkey = v->inbox_rkey};
    }
    wrs[nw++] = (rf_wr){.op = RF_OP_WRITE_IMM,
                        .context = &v->push_op,
                        .local = v->sync_tag,
                        .len = sync ? PS_SPARSE_SYNC_HDR_BYTES : 8,
                        .local_mr = v->sync_tag_mr,
                        .remote_addr = v->inbox_addr,
                        .rkey = v->inbox_rkey,
                        .imm = ps_imm_make(v->e.shard_id, v->push_seq)};
    size_t done = 0;
    st = cli_post_n(p, wrs, nw, &done);
    if (st != RF_OK && done < nw) {
        /* The write_imm was not posted: nothing is in flight for v. */
        v->push_busy = false;
        c->pushes_busy--;
        p->pushes_inflight--;
    }
    return st;
}

/* The checks every sparse push makes before anything is posted (the
 * caller holds the client): a table shard of the primitive's kind (sync:
 * rf_ps_push_sparse_sync), at most max_push_rows rows, Adam refused by a
 * read-modify-write (rmw), indices and gradient rows inside mr, every
 * index in range. */
static rf_status sparse_check(rf_ps_client *c, rf_ps_var *v,
                              const int64_t *rows, size_t n, const float *grad,
                              rf_mr *mr, bool sync, bool rmw, const char *what)
{
    rf_status st = cli_table_check(c, v, what);
    if (st != RF_OK)
        return st;
    if (sync != (v->e.spec.sync_n > 0))
        return rf_error_set(
            RF_ERR_INVALID_ARG, "%s: table '%s' part %u is %s; use %s", what,
            v->spec.name, v->spec.part,
            sync ? "not a sync-replicas shard" : "a sync-replicas shard",
            sync ? "rf_ps_push_sparse_inbox" : "rf_ps_push_sparse_sync");
    if (n > v->lay.max_push_rows)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: %zu rows to table '%s' part %u, whose pushes "
                            "carry at most max_push_rows %u",
                            what, n, v->spec.name, v->spec.part,
                            v->lay.max_push_rows);
    if (rmw && v->spec.optim.kind == RF_OPTIM_ADAM)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: table '%s' part %u: Adam's TF 1.x sparse rule "
                            "moves every row (a whole-table read-modify-"
                            "write); use apply=ps",
                            what, v->spec.name, v->spec.part);
    if ((st = cli_rows_in_mr(v, rows, n, 8, mr, what, "the indices")) !=
            RF_OK ||
        (st = cli_rows_in_mr(v, grad, n, (size_t)v->lay.row_bytes, mr, what,
                             "the gradient rows")) != RF_OK ||
        (st = cli_rows_indices(v, rows, n, 0, what)) != RF_OK)
        return st;
    return RF_OK;
}

rf_status rf_ps_push_sparse_inbox(rf_ps_client *c, rf_ps_var *v,
                                  const int64_t *rows, size_t n,
                                  const float *grad, rf_mr *mr)
{
    const char *what = "rf_ps_push_sparse_inbox";
    if (!c)
        return rf_error_set(RF_ERR_INVALID_ARG, "%s: NULL client", what);
    cli_lock(c);
    rf_status st = sparse_check(c, v, rows, n, grad, mr, false, false, what);
    if (st == RF_OK)
        st = push_ps(c, v, rows, n, grad, mr, false, 0, what);
    cli_unlock(c);
    return st;
}

static rf_status update_sparse(rf_ps_client *c, rf_ps_var *v,
                               const int64_t *rows, size_t n, const float *grad,
                               rf_mr *mr, bool locking, const char *what)
{
    if (!c)
        return rf_error_set(RF_ERR_INVALID_ARG, "%s: NULL client", what);
    cli_lock(c);
    rf_status st = sparse_check(c, v, rows, n, grad, mr, false, true, what);
    if (st == RF_OK)
        st = cli_rows_rmw(c, v, rows, n, grad, locking, what);
    cli_unlock(c);
    return st;
}

rf_status rf_ps_update_sparse_rmw(rf_ps_client *c, rf_ps_var *v,
                                  const int64_t *rows, size_t n,
                                  const float *grad, rf_mr *mr)
{
    return update_sparse(c, v, rows, n, grad, mr, false,
                         "rf_ps_update_sparse_rmw");
}

rf_status rf_ps_update_sparse_rmw_locked(rf_ps_client *c, rf_ps_var *v,
                                         const int64_t *rows, size_t n,
                                         const float *grad, rf_mr *mr)
{
    return update_sparse(c, v, rows, n, grad, mr, true,
                         "rf_ps_update_sparse_rmw_locked");
}

rf_status rf_ps_push_sparse_sync(rf_ps_client *c, rf_ps_var *v,
                                 const int64_t *rows, size_t n,
                                 const float *grad, rf_mr *mr,
                                 int64_t local_step)
{
    const char *what = "rf_ps_push_sparse_sync";
    if (!c)
        return rf_error_set(RF_ERR_INVALID_ARG, "%s: NULL client", what);
    cli_lock(c);
    rf_status st = sparse_check(c, v, rows, n, grad, mr, true, false, what);
    if (st == RF_OK && local_step < 0)
        st = rf_error_set(RF_ERR_INVALID_ARG, "%s: local step %lld is negative",
                          what, (long long)local_step);
    if (st == RF_OK)
        st = push_ps(c, v, rows, n, grad, mr, true, local_step, what);
    cli_unlock(c);
    return st;
}
