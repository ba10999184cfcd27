/* ps/ps_client_rows.c: embedding tables on the worker side.
 *
 * rf_ps_read_rows: per row three READs in one list per ps (the row's
 * version word, the row, the version word again: an RC connection executes
 * them in order, as the sock and shm providers do), then one wait; a row
 * whose two words differ or are odd was being written and is read again,
 * alone with the others that were, until consistent or the op timeout.
 * rf_ps_read_row_range: a contiguous range as three READs (its version
 * words, the rows, the words again), torn rows read again one by one.
 * rf_ps_push_sparse apply=ps: WRITEs of the indices and the gradient rows
 * into the worker's inbox, then the WRITE_WITH_IMM of the count (the ps
 * checks and applies, ps_server_sparse.c, and acks as for a dense push);
 * apply=worker: the read-modify-write of the rows inside their seqlocks
 * (ps_client_rows_rmw.c). rf_ps_push_sparse_sync: the same apply=ps push to
 * a sync table, its count's WRITE_WITH_IMM carrying the tag after the count
 * (ps_server_sparse_sync.c). Every index is checked before anything is
 * posted. The work request lists, completion contexts and version words are
 * per-client scratch kept between calls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
    pthread_mutex_lock(&c->mu);
    rf_status st = fn(c, sets, nsets);
    pthread_mutex_unlock(&c->mu);
    return st;
}

static void nap_us(long us)
{
    struct timespec ts = {.tv_sec = 0, .tv_nsec = us * 1000};
    nanosleep(&ts, NULL);
}

/* One round: the three READs of every pending item, one list per ps, and
 * the wait; then keeps the items whose words disagree. */
static rf_status rows_round(rf_ps_client *c, const rf_ps_rows *sets,
                            size_t *pending)
{
    size_t n = *pending;
    rf_status st = cli_words(c, 2 * n);
    if (st != RF_OK)
        return st;
    uint64_t *words = (uint64_t *)(void *)c->words;
    cli_group g = {0};
    size_t used = 0;
    for (size_t ps = 0; ps < c->num_ps; ps++) {
        ps_cli_conn *p = &c->conns[ps];
        size_t first = used;
        for (size_t k = 0; k < n; k++) {
            const cli_row_item *it = &c->rs_items[k];
            const rf_ps_rows *s = &sets[it->set];
            rf_ps_var *v = s->var;
            if (v->ps != ps)
                continue;
            c->rs_ops[ps] = (cli_op){
                .kind = CLI_OP_GROUP, .group = &g, .var = v, .conn = p};
            uint64_t r = (uint64_t)s->rows[it->pos];
            uint64_t ver = v->rec_addr + v->lay.rowver_off + 8 * r;
            size_t rb = (size_t)v->lay.row_bytes;
            rf_wr base = {.op = RF_OP_READ,
                          .context = &c->rs_ops[ps],
                          .len = 8,
                          .local_mr = c->words_mr,
                          .rkey = v->rkey};
            rf_wr a = base, b = base, d = base;
            a.local = &words[2 * k];
            a.remote_addr = ver;
            b.local = (unsigned char *)s->buf + it->pos * rb;
            b.len = rb;
            b.local_mr = s->mr;
            b.remote_addr = v->rec_addr + it->off + r * v->lay.row_bytes;
            d.local = &words[2 * k + 1];
            d.remote_addr = ver;
            c->rs_wrs[used++] = a;
            c->rs_wrs[used++] = b;
            c->rs_wrs[used++] = d;
        }
        if (used > first)
            cli_post_group(p, &g, c->rs_wrs + first, used - first);
    }
    st = cli_group_wait(c, &g, "rf_ps_read_rows");
    if (st != RF_OK)
        return st;
    size_t keep = 0;
    for (size_t k = 0; k < n; k++) {
        uint64_t w0 = words[2 * k], w1 = words[2 * k + 1];
        if (w0 != w1 || (w0 & 1))
            c->rs_items[keep++] = c->rs_items[k];
    }
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
    st = cli_rows_scratch(c, 3 * total, total);
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
                                "more) still being written after %u reads "
                                "within %d ms",
                                what, (long long)s->rows[it->pos],
                                s->var->spec.name, s->var->spec.part,
                                pending - 1, round + 1, c->opt.op_timeout_ms);
        }
        if (round >= 2)
            nap_us(round < 100 ? 10 : 200);
    }
}

rf_status rf_ps_read_rows(rf_ps_client *c, const rf_ps_rows *sets, size_t nsets)
{
    return cli_rows_locked(c, read_rows, sets, nsets, "rf_ps_read_rows");
}

/* ---- contiguous ranges ------------------------------------------------------
 */

static rf_status read_range(rf_ps_client *c, rf_ps_var *v, rf_ps_field field,
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
        n > v->lay.rows - (uint64_t)row0 || n > RF_PS_RANGE_MAX_ROWS)
        return rf_error_set(
            RF_ERR_INVALID_ARG,
            "%s: rows [%lld, %llu) of table '%s' part %u, "
            "which has %llu (at most %u a call; nothing was "
            "posted)",
            what, (long long)row0, (unsigned long long)((uint64_t)row0 + n),
            v->spec.name, v->spec.part, (unsigned long long)v->lay.rows,
            RF_PS_RANGE_MAX_ROWS);
    size_t rb = (size_t)v->lay.row_bytes;
    if ((st = cli_rows_in_mr(v, buf, n, rb, mr, what, "the row buffer")) !=
        RF_OK)
        return st;
    if (!n)
        return RF_OK;
    if ((st = cli_words(c, 2 * n)) != RF_OK)
        return st;
    uint64_t *words = (uint64_t *)(void *)c->words;
    uint64_t ver = v->rec_addr + v->lay.rowver_off + 8 * (uint64_t)row0;
    cli_group g = {0};
    ps_cli_conn *p = &c->conns[v->ps];
    cli_op o = {.kind = CLI_OP_GROUP, .group = &g, .var = v, .conn = p};
    rf_wr base = {.op = RF_OP_READ,
                  .context = &o,
                  .len = 8 * n,
                  .local_mr = c->words_mr,
                  .rkey = v->rkey};
    rf_wr w[3] = {base, base, base};
    w[0].local = words;
    w[0].remote_addr = ver;
    w[1].local = buf;
    w[1].len = n * rb;
    w[1].local_mr = mr;
    w[1].remote_addr = v->rec_addr + off + (uint64_t)row0 * rb;
    w[2].local = words + n;
    w[2].remote_addr = ver;
    cli_post_group(p, &g, w, 3);
    if ((st = cli_group_wait(c, &g, what)) != RF_OK)
        return st;
    /* rows written meanwhile: read again one by one, consistently (the
     * list first: read_rows reuses the words) */
    size_t torn = 0;
    for (size_t i = 0; i < n; i++)
        torn += words[i] != words[n + i] || (words[i] & 1);
    if (!torn)
        return RF_OK;
    int64_t *again = malloc(torn * sizeof *again);
    if (!again)
        return rf_error_set(RF_ERR_NO_MEMORY, "ps client: out of memory");
    for (size_t i = 0, k = 0; i < n; i++)
        if (words[i] != words[n + i] || (words[i] & 1))
            again[k++] = (int64_t)i;
    for (size_t k = 0; k < torn && st == RF_OK; k++) {
        int64_t r = row0 + again[k];
        rf_ps_rows one = {.var = v,
                          .field = field,
                          .rows = &r,
                          .n = 1,
                          .buf = (unsigned char *)buf + (size_t)again[k] * rb,
                          .mr = mr};
        st = read_rows(c, &one, 1);
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
    pthread_mutex_lock(&c->mu);
    rf_status st = read_range(c, var, field, row0, nrows, buf, mr);
    pthread_mutex_unlock(&c->mu);
    return st;
}

/* ---- sparse pushes, apply=ps ----------------------------------------------
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
    v->push_busy = true;
    v->push_sent = v->push_acked = false;
    v->push_sync = sync;
    v->push_gather = false;
    v->push_seq++;
    c->pushes_busy++;
    p->pushes_inflight++;
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

/* sync: rf_ps_push_sparse_sync (apply=ps, tagged with step). */
static rf_status push_sparse(rf_ps_client *c, rf_ps_var *v, const int64_t *rows,
                             size_t n, const float *grad, rf_mr *mr,
                             rf_ps_apply_mode mode, bool use_locking, bool sync,
                             int64_t step)
{
    const char *what = sync ? "rf_ps_push_sparse_sync" : "rf_ps_push_sparse";
    rf_status st = cli_table_check(c, v, what);
    if (st != RF_OK)
        return st;
    if (sync != (v->e.spec.sync_n > 0))
        return rf_error_set(
            RF_ERR_INVALID_ARG, "%s: table '%s' part %u is %s; use %s", what,
            v->spec.name, v->spec.part,
            sync ? "not a sync-replicas shard" : "a sync-replicas shard",
            sync ? "rf_ps_push_sparse" : "rf_ps_push_sparse_sync");
    if (sync && step < 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: local step %lld is negative", what,
                            (long long)step);
    if (mode != RF_PS_APPLY_PS && mode != RF_PS_APPLY_WORKER)
        return rf_error_set(RF_ERR_INVALID_ARG, "%s: apply mode %d", what,
                            (int)mode);
    if (n > v->lay.max_push_rows)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: %zu rows to table '%s' part %u, whose pushes "
                            "carry at most max_push_rows %u",
                            what, n, v->spec.name, v->spec.part,
                            v->lay.max_push_rows);
    if (mode == RF_PS_APPLY_WORKER && v->spec.optim.kind == RF_OPTIM_ADAM)
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
    if (mode == RF_PS_APPLY_PS)
        return push_ps(c, v, rows, n, grad, mr, sync, step, what);
    return cli_rows_rmw(c, v, rows, n, grad, use_locking);
}

rf_status rf_ps_push_sparse(rf_ps_client *c, rf_ps_var *v, const int64_t *rows,
                            size_t n, const float *grad, rf_mr *mr,
                            rf_ps_apply_mode mode, bool use_locking)
{
    if (!c)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_push_sparse: NULL client");
    pthread_mutex_lock(&c->mu);
    rf_status st =
        push_sparse(c, v, rows, n, grad, mr, mode, use_locking, false, 0);
    pthread_mutex_unlock(&c->mu);
    return st;
}

rf_status rf_ps_push_sparse_sync(rf_ps_client *c, rf_ps_var *v,
                                 const int64_t *rows, size_t n,
                                 const float *grad, rf_mr *mr,
                                 int64_t local_step)
{
    if (!c)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_push_sparse_sync: NULL client");
    pthread_mutex_lock(&c->mu);
    rf_status st = push_sparse(c, v, rows, n, grad, mr, RF_PS_APPLY_PS, false,
                               true, local_step);
    pthread_mutex_unlock(&c->mu);
    return st;
}
