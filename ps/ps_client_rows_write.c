/* ps/ps_client_rows_write.c: writing rows of embedding tables from the
 * worker side (the chief's chunked initialisation and checkpoint restores
 * of tables that it never holds whole).
 *
 * rf_ps_write_rows: for tables workers may be reading or writing; per set,
 * the row update of ps_client_rows_rmw.c (READ every field record of each
 * row, own the row with CMP_AND_SWP, WRITE every record sealed at the next
 * version) with the set's rows replacing their field's, so a concurrent
 * rf_ps_read_rows never accepts a half-written row and the other fields'
 * records follow the row's version.
 * rf_ps_write_row_range: before a shard's init flag is set nobody reads
 * it, so the range's row records are built here (sealed at version 0) and
 * go as one WRITE per 4 MiB of records; the flag is READ first and a set
 * flag refused. rf_ps_mark_initialized: the init flags alone, after such
 * writes. */
#include <stdio.h>
#include <string.h>

#include "ps/ps_client_internal.h"
#include "rdmaflow/status.h"

typedef struct set_ctx {
    const rf_ps_rows *set;
    size_t f; /* the field's index: 0 values, 1 + i slot i */
} set_ctx;

/* The set's rows replace their field's rows. */
static rf_status modify_set(void *arg, rf_ps_var *v, const size_t *which,
                            size_t k, float *const *field)
{
    const set_ctx *x = arg;
    size_t rb = (size_t)v->lay.row_bytes;
    for (size_t jj = 0; jj < k; jj++)
        memcpy((unsigned char *)field[x->f] + jj * rb,
               (const unsigned char *)x->set->buf + which[jj] * rb, rb);
    return RF_OK;
}

rf_status cli_rows_write_field(rf_ps_client *c, const rf_ps_rows *set, size_t f)
{
    set_ctx x = {.set = set, .f = f};
    return cli_rows_update(c, set->var, set->rows, set->n, modify_set, &x,
                           "rf_ps_write_rows");
}

static rf_status write_rows(rf_ps_client *c, const rf_ps_rows *sets,
                            size_t nsets)
{
    size_t total = 0;
    rf_status st =
        cli_rows_check_sets(c, sets, nsets, "rf_ps_write_rows", NULL, &total);
    for (size_t i = 0; st == RF_OK && i < nsets; i++)
        st = cli_rows_write_field(
            c, &sets[i],
            sets[i].field == RF_PS_FIELD_VALUES
                ? 0
                : 1 + (size_t)(sets[i].field - RF_PS_FIELD_SLOT0));
    return st;
}

rf_status rf_ps_write_rows(rf_ps_client *c, const rf_ps_rows *sets,
                           size_t nsets)
{
    return cli_rows_locked(c, write_rows, sets, nsets, "rf_ps_write_rows");
}

/* Row records built and WRITten per work request of a range write. */
#define RANGE_CHUNK_BYTES (4u << 20)

rf_status cli_rows_write_range(rf_ps_client *c, rf_ps_var *v, rf_ps_field field,
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
    size_t rb = (size_t)v->lay.row_bytes, stride = (size_t)v->lay.row_stride;
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
    /* Nobody reads or writes the rows before the flag: the records are
     * built here, sealed at version 0 (what every field's records of a
     * new shard are at), one WRITE per chunk of consecutive records. */
    size_t per = RANGE_CHUNK_BYTES / stride ? RANGE_CHUNK_BYTES / stride : 1;
    ps_cli_conn *p = &c->conns[v->ps];
    for (size_t done = 0; done < nrows && st == RF_OK;) {
        size_t m = nrows - done < per ? nrows - done : per;
        if ((st = cli_rec_buf(c, m * stride)) != RF_OK)
            return st;
        for (size_t i = 0; i < m; i++) {
            unsigned char *rec = c->rec_buf + i * stride;
            memcpy(rec + PS_ROW_HDR,
                   (const unsigned char *)buf + (done + i) * rb, rb);
            memset(rec + PS_ROW_HDR + rb, 0, stride - PS_ROW_HDR - rb);
            ps_row_seal(rec, 0, rb);
        }
        cli_group g = {0};
        cli_op o = {.kind = CLI_OP_GROUP, .group = &g, .var = v, .conn = p};
        rf_wr w = {.op = RF_OP_WRITE,
                   .context = &o,
                   .local = c->rec_buf,
                   .len = m * stride,
                   .local_mr = c->rec_mr,
                   .remote_addr =
                       v->rec_addr + ps_row_off(off, v->lay.row_stride,
                                                (uint64_t)row0 + done),
                   .rkey = v->rkey};
        cli_post_group(p, &g, &w, 1);
        st = cli_group_wait(c, &g, what);
        done += m;
    }
    return st;
}

rf_status rf_ps_write_row_range(rf_ps_client *c, rf_ps_var *var,
                                rf_ps_field field, int64_t row0, size_t nrows,
                                const void *buf, rf_mr *mr)
{
    if (!c)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_write_row_range: NULL client");
    cli_lock(c);
    rf_status st = cli_rows_write_range(c, var, field, row0, nrows, buf, mr);
    cli_unlock(c);
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
    cli_lock(c);
    rf_status st = cli_vars_usable(c, vars, n, "rf_ps_mark_initialized");
    if (st == RF_OK && n && (st = cli_words(c, 1)) == RF_OK) {
        *(uint64_t *)(void *)c->words = PS_INIT_DONE;
        st = cli_record_words(c, vars, n, RF_OP_WRITE, PS_REC_INIT_OFF, 8, 0, 0,
                              "rf_ps_mark_initialized");
    }
    cli_unlock(c);
    return st;
}
