/* session/ckpt_tables.c: checkpoints of embedding tables without the
 * chief ever holding one. Saving: each table (the parts of one partitioned
 * variable, or one table variable) and each of its optimizer slots is one
 * tensor of the whole's shape under the whole's name, as session_ckpt.c
 * names every variable, written in pieces (rf_ckpt_dir_save_filled): a
 * piece's rows are read from the parts' shards with rf_ps_read_row_range
 * (whole rows while other workers train: each row record checked, one
 * READ per 4 MiB of records) into one registered staging buffer.
 * Restoring: a table's rows are copied from the opened file (mapped, its
 * pages dropped as they are used: session/ckpt_read.c) into the staging
 * buffer a chunk at a time and written into the shards, values and slots,
 * by sess_table_write (one WRITE per chunk before a shard's init flag,
 * row updates after). Tables are sliced along axis 0 (their parts are row
 * ranges of the whole), so the whole's row r is part p's row r - first_p,
 * for any number of parts (a checkpoint restores into any number of ps
 * tasks). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/ckpt_internal.h"
#include "session/session_internal.h"

#define TBL_IDX_ROWS  4096u /* restore row updates: rows a call */
#define TBL_MAX_PARTS 1024u

/* One tensor of the checkpoint: a table's values or one slot, whole. */
struct sess_tbl_src {
    rf_session *s;
    char name[RF_SAVE_SLICE_NAME_MAX];
    rf_shape shape; /* the whole's */
    size_t nparts;  /* in order of their first row */
    size_t *part;   /* index in s->v of each part */
    int64_t *first; /* the whole's row of each part's row 0 */
    unsigned slot;  /* 0: values, k: slot k - 1 */
    size_t row_bytes;
};

static rf_ps_field field_of(unsigned slot)
{
    return slot == 0 ? RF_PS_FIELD_VALUES
                     : (rf_ps_field)(RF_PS_FIELD_SLOT0 + (int)slot - 1);
}

/* The staging buffer: at least bytes, registered; and TBL_IDX_ROWS
 * indices. */
static rf_status stage(rf_session *s, size_t bytes)
{
    if (s->ckpt.tstage && s->ckpt.tstage_len >= bytes)
        return RF_OK;
    sess_tables_stage_free(s);
    if (posix_memalign((void **)&s->ckpt.tstage, 64, bytes) != 0 ||
        !(s->ckpt.tidx = malloc(TBL_IDX_ROWS * sizeof *s->ckpt.tidx))) {
        free(s->ckpt.tstage);
        s->ckpt.tstage = NULL;
        return rf_error_set(RF_ERR_NO_MEMORY,
                            "checkpoint: no memory for a %zu-byte staging "
                            "buffer",
                            bytes);
    }
    rf_status st = rf_ps_client_register(s->client, s->ckpt.tstage, bytes,
                                         &s->ckpt.tstage_mr);
    if (st != RF_OK) {
        free(s->ckpt.tstage);
        s->ckpt.tstage = NULL;
        return rf_error_set(st, "checkpoint: registering %zu bytes: %s", bytes,
                            rf_error_message());
    }
    s->ckpt.tstage_len = bytes;
    return RF_OK;
}

void sess_tables_stage_free(rf_session *s)
{
    if (s->ckpt.tstage_mr && s->client)
        rf_ps_client_deregister(s->client, s->ckpt.tstage_mr);
    s->ckpt.tstage_mr = NULL;
    free(s->ckpt.tstage);
    s->ckpt.tstage = NULL;
    free(s->ckpt.tidx);
    s->ckpt.tidx = NULL;
    s->ckpt.tstage_len = 0;
}

/* The name, shape and first row of v's var (or its slot k - 1) in its
 * whole; false (with the error set) if it is not a row range of it. */
static rf_status whole_of(const sess_var *v, unsigned k, char *name,
                          rf_shape *shape, int64_t *first)
{
    const rf_node *var = k == 0 ? v->var : v->apply.slots[k - 1];
    rf_save_slice sl;
    if (!rf_variable_save_slice(var, &sl)) {
        snprintf(name, RF_SAVE_SLICE_NAME_MAX, "%s", rf_node_name(var));
        *shape = rf_node_shape(var);
        *first = 0;
        return RF_OK;
    }
    for (int d = 1; d < sl.full_shape.rank; d++)
        if (sl.offset[d] != 0 || sl.shape.dims[d] != sl.full_shape.dims[d])
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "checkpoint: the table '%s' is sliced along "
                                "axis %d (tables are saved by rows)",
                                sl.full_name, d);
    snprintf(name, RF_SAVE_SLICE_NAME_MAX, "%s", sl.full_name);
    *shape = sl.full_shape;
    *first = sl.offset[0];
    return RF_OK;
}

/* Rows [a, b) of the whole of src into dst (staging memory). */
static rf_status read_whole_rows(struct sess_tbl_src *src, int64_t a, int64_t b,
                                 unsigned char *dst)
{
    rf_session *s = src->s;
    size_t rb = src->row_bytes;
    for (size_t p = 0; p < src->nparts; p++) {
        const sess_var *v = &s->v[src->part[p]];
        int64_t lo = a > src->first[p] ? a : src->first[p];
        int64_t end = src->first[p] + (int64_t)v->rows;
        int64_t hi = b < end ? b : end;
        for (int64_t r = lo; r < hi; r += RF_PS_RANGE_MAX_ROWS) {
            size_t n =
                (size_t)(hi - r < RF_PS_RANGE_MAX_ROWS ? hi - r
                                                       : RF_PS_RANGE_MAX_ROWS);
            rf_status st = rf_ps_read_row_range(
                s->client, v->shard, field_of(src->slot), r - src->first[p], n,
                dst + (size_t)(r - a) * rb, s->ckpt.tstage_mr);
            if (st != RF_OK)
                return st;
        }
    }
    return RF_OK;
}

static rf_status fill(void *ctx, uint64_t off, void *buf, size_t len)
{
    struct sess_tbl_src *src = ctx;
    size_t rb = src->row_bytes;
    int64_t a = (int64_t)(off / rb), b = (int64_t)((off + len + rb - 1) / rb);
    rf_status st = stage(src->s, RF_CKPT_FILL_CHUNK + 2 * rb);
    if (st == RF_OK)
        st = read_whole_rows(src, a, b, src->s->ckpt.tstage);
    if (st != RF_OK)
        return st;
    memcpy(buf, src->s->ckpt.tstage + (off - (uint64_t)a * rb), len);
    return RF_OK;
}

void sess_tables_ckpt_free(sess_tbl_src *src, size_t n)
{
    for (size_t i = 0; src && i < n; i++) {
        free(src[i].part);
        free(src[i].first);
    }
    free(src);
}

rf_status sess_tables_ckpt(rf_session *s, sess_tbl_src **out, size_t *nout)
{
    *out = NULL;
    *nout = 0;
    size_t cap = 0;
    for (size_t i = 0; i < s->nv; i++)
        if (s->v[i].table)
            cap += 1 + s->v[i].apply.num_slots;
    if (!cap)
        return RF_OK;
    sess_tbl_src *src = calloc(cap, sizeof *src);
    if (!src)
        return rf_error_set(RF_ERR_NO_MEMORY, "checkpoint: out of memory");
    size_t n = 0;
    rf_status st = RF_OK;
    for (size_t i = 0; i < s->nv && st == RF_OK; i++) {
        const sess_var *v = &s->v[i];
        for (unsigned k = 0; v->table && k <= v->apply.num_slots; k++) {
            char name[RF_SAVE_SLICE_NAME_MAX];
            rf_shape shape;
            int64_t first = 0;
            if ((st = whole_of(v, k, name, &shape, &first)) != RF_OK)
                break;
            sess_tbl_src *t = NULL;
            for (size_t j = 0; j < n && !t; j++)
                if (!strcmp(src[j].name, name))
                    t = &src[j];
            if (!t) {
                t = &src[n++];
                *t = (struct sess_tbl_src){.s = s,
                                           .shape = shape,
                                           .slot = k,
                                           .row_bytes = v->row_bytes};
                memcpy(t->name, name, sizeof name);
                t->part = calloc(TBL_MAX_PARTS, sizeof *t->part);
                t->first = calloc(TBL_MAX_PARTS, sizeof *t->first);
                if (!t->part || !t->first) {
                    st = rf_error_set(RF_ERR_NO_MEMORY,
                                      "checkpoint: out of memory");
                    break;
                }
            }
            if (t->nparts == TBL_MAX_PARTS) {
                st = rf_error_set(RF_ERR_INVALID_ARG,
                                  "checkpoint: the table '%s' has more than "
                                  "%u parts",
                                  name, TBL_MAX_PARTS);
                break;
            }
            t->part[t->nparts] = i;
            t->first[t->nparts++] = first;
        }
    }
    /* parts in order of their rows, covering the whole exactly */
    for (size_t j = 0; j < n && st == RF_OK; j++) {
        sess_tbl_src *t = &src[j];
        for (size_t p = 1; p < t->nparts; p++) /* insertion sort by row */
            for (size_t q = p; q > 0 && t->first[q - 1] > t->first[q]; q--) {
                int64_t f = t->first[q];
                size_t i = t->part[q];
                t->first[q] = t->first[q - 1];
                t->part[q] = t->part[q - 1];
                t->first[q - 1] = f;
                t->part[q - 1] = i;
            }
        int64_t next = 0;
        for (size_t p = 0; p < t->nparts; p++) {
            if (t->first[p] != next)
                break;
            next += (int64_t)s->v[t->part[p]].rows;
        }
        int64_t rows = t->shape.rank ? t->shape.dims[0] : 1;
        if (next != rows)
            st = rf_error_set(RF_ERR_INVALID_ARG,
                              "checkpoint: the parts of the table '%s' cover "
                              "rows [0, %lld) of its %lld in order",
                              t->name, (long long)next, (long long)rows);
    }
    if (st != RF_OK) {
        sess_tables_ckpt_free(src, n);
        return st;
    }
    *out = src;
    *nout = n;
    return RF_OK;
}

void sess_tables_ckpt_tensor(sess_tbl_src *all, size_t j, rf_ckpt_tensor *t,
                             rf_ckpt_fill *f)
{
    sess_tbl_src *src = &all[j];
    int64_t rows = src->shape.rank ? src->shape.dims[0] : 1;
    *t = (rf_ckpt_tensor){.name = src->name,
                          .dtype = RF_F32,
                          .shape = src->shape,
                          .data = NULL,
                          .bytes = (size_t)rows * src->row_bytes};
    *f = (rf_ckpt_fill){.fn = fill, .ctx = src};
}

rf_status sess_tables_restore(rf_session *s, const rf_ckpt *ck)
{
    sess_tbl_src *src = NULL;
    size_t n = 0;
    rf_status st = sess_tables_ckpt(s, &src, &n);
    for (size_t j = 0; j < n && st == RF_OK; j++) {
        sess_tbl_src *t = &src[j];
        const rf_ckpt_entry *e = rf_ckpt_find(ck, t->name);
        if (!e) {
            st = rf_error_set(RF_ERR_INVALID_ARG,
                              "checkpoint %s has no tensor '%s' for this "
                              "graph",
                              rf_ckpt_path(ck), t->name);
            break;
        }
        if (e->t.dtype != RF_F32 || !rf_shape_equal(&e->t.shape, &t->shape)) {
            char a[64], c[64];
            rf_shape_format(&e->t.shape, a, sizeof a);
            rf_shape_format(&t->shape, c, sizeof c);
            st = rf_error_set(RF_ERR_INVALID_ARG,
                              "checkpoint %s has '%s' as %s%s; this graph has "
                              "float32%s",
                              rf_ckpt_path(ck), t->name,
                              rf_dtype_name(e->t.dtype), a, c);
            break;
        }
        size_t rb = t->row_bytes;
        size_t chunk = RF_CKPT_FILL_CHUNK / rb ? RF_CKPT_FILL_CHUNK / rb : 1;
        if ((st = stage(s, chunk * rb)) != RF_OK)
            break;
        for (size_t p = 0; p < t->nparts && st == RF_OK; p++) {
            sess_var *v = &s->v[t->part[p]];
            rf_ps_var *shard = v->shard;
            bool locked =
                rf_ps_wait_initialized(s->client, &shard, 1, 1, 0) == RF_OK;
            for (size_t r = 0; r < v->rows && st == RF_OK; r += chunk) {
                size_t m = v->rows - r < chunk ? v->rows - r : chunk;
                size_t at = (size_t)(t->first[p] + (int64_t)r) * rb;
                memcpy(s->ckpt.tstage, (const unsigned char *)e->t.data + at,
                       m * rb);
                ckpt_release(ck, (const unsigned char *)e->t.data + at, m * rb);
                st = sess_table_write(s, v, field_of(t->slot), locked,
                                      (int64_t)r, m, s->ckpt.tstage,
                                      s->ckpt.tstage_mr, s->ckpt.tidx);
            }
            if (st != RF_OK)
                rf_error_set(st, "restoring the table '%s' from %s: %s",
                             t->name, rf_ckpt_path(ck), rf_error_message());
        }
    }
    sess_tables_ckpt_free(src, n);
    return st;
}
