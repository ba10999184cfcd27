/* ps/ps_client_rows_write.c: writing rows of embedding tables from the
 * worker side (the chief's chunked initialisation and checkpoint restores
 * of tables that it never holds whole).
 *
 * rf_ps_write_rows: the mirror of rf_ps_read_rows; per set, one list per
 * ps: FETCH_AND_ADD +1 of every row's version word (odd), the WRITEs of the
 * rows (the first fenced, so none overtakes the atomics), FETCH_AND_ADD +1
 * of every word (even), in order on the connection, so a concurrent
 * rf_ps_read_rows never accepts a half-written row.
 * rf_ps_write_row_range: before a shard's init flag is set nobody reads
 * it, so a contiguous range goes as one WRITE (one work request instead of
 * three per row); the flag is READ first and a set flag refused.
 * rf_ps_mark_initialized: the init flags alone, after such writes. */
#include <stdio.h>
#include <string.h>

#include "ps/ps_client_internal.h"
#include "rdmaflow/status.h"

static rf_status write_rows(rf_ps_client *c, const rf_ps_rows *sets,
                            size_t nsets)
{
    const char *what = "rf_ps_write_rows";
    size_t total = 0;
    rf_status st = cli_rows_check_sets(c, sets, nsets, what, NULL, &total);
    if (st != RF_OK || !total)
        return st;
    st = cli_rows_scratch(c, 3 * total, 0);
    if (st == RF_OK)
        st = cli_words(c, 1);
    if (st != RF_OK)
        return st;
    /* the atomics' old values are not needed: one sink word for all */
    uint64_t *sink = (uint64_t *)(void *)c->words;
    cli_group g = {0};
    size_t used = 0;
    for (size_t ps = 0; ps < c->num_ps; ps++) {
        ps_cli_conn *p = &c->conns[ps];
        size_t first = used;
        c->rs_ops[ps] = (cli_op){.kind = CLI_OP_GROUP, .group = &g, .conn = p};
        for (size_t i = 0; i < nsets; i++) {
            const rf_ps_rows *s = &sets[i];
            rf_ps_var *v = s->var;
            if (v->ps != ps || !s->n)
                continue;
            c->rs_ops[ps].var = v;
            uint64_t off = 0;
            cli_field_off(v, s->field, &off, what);
            size_t rb = (size_t)v->lay.row_bytes;
            for (int pass = 0; pass < 3; pass++)
                for (size_t j = 0; j < s->n; j++) {
                    uint64_t r = (uint64_t)s->rows[j];
                    rf_wr w = {.context = &c->rs_ops[ps], .rkey = v->rkey};
                    if (pass == 1) {
                        w.op = RF_OP_WRITE;
                        w.flags = j == 0 ? RF_WR_FENCE : 0;
                        w.local = (unsigned char *)s->buf + j * rb;
                        w.len = rb;
                        w.local_mr = s->mr;
                        w.remote_addr = v->rec_addr + off + r * rb;
                    } else {
                        w.op = RF_OP_FETCH_ADD;
                        w.local = sink;
                        w.len = 8;
                        w.local_mr = c->words_mr;
                        w.remote_addr = v->rec_addr + v->lay.rowver_off + 8 * r;
                        w.compare_add = 1;
                    }
                    c->rs_wrs[used++] = w;
                }
        }
        if (used > first)
            cli_post_group(p, &g, c->rs_wrs + first, used - first);
    }
    return cli_group_wait(c, &g, what);
}

rf_status rf_ps_write_rows(rf_ps_client *c, const rf_ps_rows *sets,
                           size_t nsets)
{
    return cli_rows_locked(c, write_rows, sets, nsets, "rf_ps_write_rows");
}

static rf_status write_range(rf_ps_client *c, rf_ps_var *v, rf_ps_field field,
                             int64_t row0, size_t nrows, const void *buf,
                             rf_mr *mr)
{
    const char *what = "rf_ps_write_row_range";
    rf_status st = cli_table_check(c, v, what);
    if (st != RF_OK)
        return st;
    if (!c->opt.is_chief)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: only the chief writes a table before its "
                            "init flag",
                            what);
    uint64_t off = 0;
    if ((st = cli_field_off(v, field, &off, what)) != RF_OK)
        return st;
    if (row0 < 0 || (uint64_t)row0 > v->lay.rows ||
        nrows > v->lay.rows - (uint64_t)row0)
        return rf_error_set(
            RF_ERR_INVALID_ARG,
            "%s: rows [%lld, %llu) of table '%s' part %u, "
            "which has %llu (nothing was posted)",
            what, (long long)row0, (unsigned long long)((uint64_t)row0 + nrows),
            v->spec.name, v->spec.part, (unsigned long long)v->lay.rows);
    size_t rb = (size_t)v->lay.row_bytes;
    if ((st = cli_rows_in_mr(v, buf, nrows, rb, mr, what, "the row buffer")) !=
        RF_OK)
        return st;
    if (!nrows)
        return RF_OK;
    if ((st = cli_words(c, 1)) != RF_OK ||
        (st = cli_record_words(c, &v, 1, RF_OP_READ, PS_REC_INIT_OFF, 8, 0, 1,
                               "reading an init flag")) != RF_OK)
        return st;
    if (*(const uint64_t *)(const void *)c->words == PS_INIT_DONE)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: table '%s' part %u is initialised already "
                            "(workers may read it): use rf_ps_write_rows",
                            what, v->spec.name, v->spec.part);
    cli_group g = {0};
    ps_cli_conn *p = &c->conns[v->ps];
    cli_op o = {.kind = CLI_OP_GROUP, .group = &g, .var = v, .conn = p};
    rf_wr w = {.op = RF_OP_WRITE,
               .context = &o,
               .local = (void *)buf,
               .len = nrows * rb,
               .local_mr = mr,
               .remote_addr = v->rec_addr + off + (uint64_t)row0 * rb,
               .rkey = v->rkey};
    cli_post_group(p, &g, &w, 1);
    return cli_group_wait(c, &g, what);
}

rf_status rf_ps_write_row_range(rf_ps_client *c, rf_ps_var *var,
                                rf_ps_field field, int64_t row0, size_t nrows,
                                const void *buf, rf_mr *mr)
{
    if (!c)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_write_row_range: NULL client");
    pthread_mutex_lock(&c->mu);
    rf_status st = write_range(c, var, field, row0, nrows, buf, mr);
    pthread_mutex_unlock(&c->mu);
    return st;
}

rf_status rf_ps_mark_initialized(rf_ps_client *c, rf_ps_var *const *vars,
                                 size_t n)
{
    if (!c || (n && !vars))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_mark_initialized: NULL argument");
    if (!c->opt.is_chief)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_mark_initialized: only the chief "
                            "initialises variables");
    pthread_mutex_lock(&c->mu);
    rf_status st = cli_vars_usable(c, vars, n, "rf_ps_mark_initialized");
    if (st == RF_OK && n && (st = cli_words(c, 1)) == RF_OK) {
        *(uint64_t *)(void *)c->words = PS_INIT_DONE;
        st = cli_record_words(c, vars, n, RF_OP_WRITE, PS_REC_INIT_OFF, 8, 0, 0,
                              "rf_ps_mark_initialized");
    }
    pthread_mutex_unlock(&c->mu);
    return st;
}
