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
 * by sess_table_write (one WRITE per part and chunk before a shard's init
 * flag, row updates after).
 *
 * Row i of a saved table is the row its lookup returns for id i: the
 * graph's EmbeddingLookup over the table's parts maps ids to (part, row)
 * (rf_embedding_map_ids), so under the "mod" strategy whole row i is part
 * i % P's row i / P, and under "div" (or a table no lookup reads over
 * several parts) the parts' rows in order. The file is then the same for
 * any number of parts, and a checkpoint restores into any number of ps
 * tasks and of parts (TensorFlow saves a partitioned variable's parts in
 * order, so a "mod" table restored into another partition count reads
 * every id's row under another id). The file says so in its metadata
 * (RF_TABLE_ROWS_KEY); a file without it was written in parts order and
 * restores only where that is the ids' order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/ckpt_internal.h"
#include "session/session_internal.h"

#define TBL_IDX_ROWS  4096u /* restore row updates: rows a call */
#define TBL_MAX_PARTS 1024u

/* A piece's map (map_piece), scratch shared by the sources of one save or
 * restore (owned by the first): of its rows (at most cap), each one's
 * place in the staging buffer, where the parts' rows lie in part order. */
struct tbl_map {
    size_t cap;
    int64_t *ids, *row;
    int32_t *q;
    size_t *at;
    int64_t lo[TBL_MAX_PARTS], hi[TBL_MAX_PARTS]; /* per part, in the piece */
    size_t cnt[TBL_MAX_PARTS], off[TBL_MAX_PARTS];
    bool identity; /* the piece's rows are in part order already */
};

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
    /* The lookup that reads the table over its parts (NULL: none over
     * more than one), and the index in part[] of each of its parts. */
    const sess_lookup *by;
    size_t *p_of_q;
    struct tbl_map *map; /* shared by every source of one call */
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
    if (s->tstage && s->tstage_len >= bytes)
        return RF_OK;
    sess_tables_stage_free(s);
    if (posix_memalign((void **)&s->tstage, 64, bytes) != 0 ||
        !(s->tidx = malloc(TBL_IDX_ROWS * sizeof *s->tidx))) {
        free(s->tstage);
        s->tstage = NULL;
        return rf_error_set(RF_ERR_NO_MEMORY,
                            "checkpoint: no memory for a %zu-byte staging "
                            "buffer",
                            bytes);
    }
    rf_status st =
        rf_ps_client_register(s->client, s->tstage, bytes, &s->tstage_mr);
    if (st != RF_OK) {
        free(s->tstage);
        s->tstage = NULL;
        return rf_error_set(st, "checkpoint: registering %zu bytes: %s", bytes,
                            rf_error_message());
    }
    s->tstage_len = bytes;
    return RF_OK;
}

void sess_tables_stage_free(rf_session *s)
{
    if (s->tstage_mr && s->client)
        rf_ps_client_deregister(s->client, s->tstage_mr);
    s->tstage_mr = NULL;
    free(s->tstage);
    s->tstage = NULL;
    free(s->tidx);
    s->tidx = NULL;
    s->tstage_len = 0;
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

/* Maps the whole's rows [a, b) to the parts' rows (src->cap grows to
 * b - a): src->lo, cnt and off per part (each part's rows of the
 * piece are contiguous: [lo, lo + cnt), staged at off in part order) and
 * src->at[k], row a + k's place in the staging buffer. */
static rf_status map_piece(sess_tbl_src *src, int64_t a, int64_t b)
{
    struct tbl_map *m = src->map;
    size_t n = (size_t)(b - a);
    if (n > m->cap) {
        free(m->ids);
        free(m->row);
        free(m->q);
        free(m->at);
        m->ids = malloc(n * sizeof *m->ids);
        m->row = malloc(n * sizeof *m->row);
        m->q = malloc(n * sizeof *m->q);
        m->at = malloc(n * sizeof *m->at);
        m->cap = m->ids && m->row && m->q && m->at ? n : 0;
        if (!m->cap)
            return rf_error_set(RF_ERR_NO_MEMORY, "checkpoint: out of memory");
    }
    if (src->by) { /* the lookup's own mapping, checks included */
        for (size_t k = 0; k < n; k++)
            m->ids[k] = a + (int64_t)k;
        rf_tensor ids = rf_tensor_make(RF_I64, RF_SHAPE((int64_t)n), m->ids);
        rf_status st =
            rf_embedding_map_ids(src->by->node, &ids, src->by->part_rows,
                                 src->by->nparts, m->q, m->row);
        if (st != RF_OK)
            return st;
        for (size_t k = 0; k < n; k++)
            m->q[k] = (int32_t)src->p_of_q[m->q[k]];
    } else { /* the parts' rows in order */
        size_t p = 0;
        for (size_t k = 0; k < n; k++) {
            int64_t r = a + (int64_t)k;
            while (p + 1 < src->nparts && r >= src->first[p + 1])
                p++;
            m->q[k] = (int32_t)p;
            m->row[k] = r - src->first[p];
        }
    }
    for (size_t p = 0; p < src->nparts; p++)
        m->cnt[p] = 0;
    for (size_t k = 0; k < n; k++) {
        size_t p = (size_t)m->q[k];
        int64_t r = m->row[k];
        if (!m->cnt[p]++) {
            m->lo[p] = m->hi[p] = r;
        } else {
            m->lo[p] = r < m->lo[p] ? r : m->lo[p];
            m->hi[p] = r > m->hi[p] ? r : m->hi[p];
        }
    }
    size_t off = 0;
    for (size_t p = 0; p < src->nparts; p++) {
        if (m->cnt[p] && (size_t)(m->hi[p] - m->lo[p]) + 1 != m->cnt[p])
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "checkpoint: the lookup '%s' maps ids "
                                "%lld..%lld of the table '%s' to rows "
                                "%lld..%lld of its part %zu, not one after "
                                "the other",
                                src->by ? rf_node_name(src->by->node) : "-",
                                (long long)a, (long long)b - 1, src->name,
                                (long long)m->lo[p], (long long)m->hi[p], p);
        m->off[p] = off;
        off += m->cnt[p];
    }
    m->identity = true;
    for (size_t k = 0; k < n; k++) {
        size_t p = (size_t)m->q[k];
        m->at[k] = m->off[p] + (size_t)(m->row[k] - m->lo[p]);
        m->identity &= m->at[k] == k;
    }
    return RF_OK;
}

/* The piece map_piece mapped, read from the parts' shards into dst
 * (staging memory) in part order. */
static rf_status read_parts(sess_tbl_src *src, unsigned char *dst)
{
    const struct tbl_map *m = src->map;
    rf_session *s = src->s;
    size_t rb = src->row_bytes;
    for (size_t p = 0; p < src->nparts; p++) {
        const sess_var *v = &s->v[src->part[p]];
        for (size_t d = 0; d < m->cnt[p]; d += RF_PS_RANGE_MAX_ROWS) {
            size_t n = m->cnt[p] - d < RF_PS_RANGE_MAX_ROWS
                           ? m->cnt[p] - d
                           : RF_PS_RANGE_MAX_ROWS;
            rf_status st = rf_ps_read_row_range(
                s->client, v->shard, field_of(src->slot), m->lo[p] + (int64_t)d,
                n, dst + (m->off[p] + d) * rb, s->tstage_mr);
            if (st != RF_OK)
                return st;
        }
    }
    return RF_OK;
}

static rf_status fill(void *ctx, uint64_t off, void *buf, size_t len)
{
    struct sess_tbl_src *src = ctx;
    const struct tbl_map *m = src->map;
    size_t rb = src->row_bytes;
    int64_t a = (int64_t)(off / rb), b = (int64_t)((off + len + rb - 1) / rb);
    size_t n = (size_t)(b - a);
    rf_status st = stage(src->s, RF_CKPT_FILL_CHUNK + 2 * rb);
    if (st == RF_OK)
        st = map_piece(src, a, b);
    if (st == RF_OK)
        st = read_parts(src, src->s->tstage);
    if (st != RF_OK)
        return st;
    const unsigned char *parts = src->s->tstage;
    uint64_t skip = off - (uint64_t)a * rb; /* of the first row's bytes */
    if (m->identity) {
        memcpy(buf, parts + skip, len);
        return RF_OK;
    }
    /* row a + k of the whole is at m->at[k] in parts: the bytes of it that
     * fall in [off, off + len) */
    unsigned char *out = buf;
    for (size_t k = 0; k < n; k++) {
        uint64_t from = k ? 0 : skip;
        uint64_t left = skip + len - (uint64_t)k * rb; /* from its start */
        uint64_t to = left < rb ? left : rb;
        memcpy(out, parts + m->at[k] * rb + from, (size_t)(to - from));
        out += to - from;
    }
    return RF_OK;
}

void sess_tables_ckpt_free(sess_tbl_src *src, size_t n)
{
    for (size_t i = 0; src && i < n; i++) {
        free(src[i].part);
        free(src[i].first);
        free(src[i].p_of_q);
    }
    if (src && n) {
        struct tbl_map *m = src[0].map;
        if (m) {
            free(m->ids);
            free(m->row);
            free(m->q);
            free(m->at);
            free(m);
        }
    }
    free(src);
}

/* The first lookup that reads t over all of its parts (more than one),
 * whose ids' order the saved rows follow. */
static rf_status find_lookup(rf_session *s, sess_tbl_src *t)
{
    for (size_t k = 0; k < s->nlookups && !t->by && t->nparts > 1; k++) {
        const sess_lookup *L = &s->lookups[k];
        if (L->nparts != t->nparts)
            continue;
        size_t *p_of_q = malloc(L->nparts * sizeof *p_of_q);
        if (!p_of_q)
            return rf_error_set(RF_ERR_NO_MEMORY, "checkpoint: out of memory");
        size_t q = 0;
        for (; q < L->nparts; q++) {
            size_t p = 0;
            while (p < t->nparts && t->part[p] != L->part_var[q])
                p++;
            if (p == t->nparts)
                break;
            p_of_q[q] = p;
        }
        if (q < L->nparts) {
            free(p_of_q);
            continue;
        }
        t->by = L;
        t->p_of_q = p_of_q;
    }
    return RF_OK;
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
        else
            st = find_lookup(s, t);
    }
    struct tbl_map *map = st == RF_OK && n ? calloc(1, sizeof *map) : NULL;
    if (st == RF_OK && n && !map)
        st = rf_error_set(RF_ERR_NO_MEMORY, "checkpoint: out of memory");
    for (size_t j = 0; j < n && map; j++)
        src[j].map = map;
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

/* One table tensor e of ck into the shards of t, a chunk of the whole's
 * rows at a time, each part's rows of it in one write. */
static rf_status restore_one(rf_session *s, const rf_ckpt *ck,
                             const rf_ckpt_entry *e, sess_tbl_src *t,
                             bool by_id)
{
    const struct tbl_map *m = t->map;
    size_t rb = t->row_bytes;
    size_t chunk = RF_CKPT_FILL_CHUNK / rb ? RF_CKPT_FILL_CHUNK / rb : 1;
    int64_t rows = t->shape.rank ? t->shape.dims[0] : 1;
    bool *locked = calloc(t->nparts, sizeof *locked);
    rf_status st =
        locked ? stage(s, chunk * rb)
               : rf_error_set(RF_ERR_NO_MEMORY, "checkpoint: out of memory");
    for (size_t p = 0; p < t->nparts && st == RF_OK; p++) {
        rf_ps_var *shard = s->v[t->part[p]].shard;
        locked[p] = rf_ps_wait_initialized(s->client, &shard, 1, 1, 0) == RF_OK;
    }
    for (int64_t a = 0; a < rows && st == RF_OK; a += (int64_t)chunk) {
        int64_t b = rows - a < (int64_t)chunk ? rows : a + (int64_t)chunk;
        size_t n = (size_t)(b - a);
        if ((st = map_piece(t, a, b)) != RF_OK)
            break;
        if (!by_id && !m->identity) {
            st = rf_error_set(
                RF_ERR_INVALID_ARG,
                "%s was saved without \"%s\" in its metadata: its rows of "
                "the table '%s' are in the order of the parts it was saved "
                "from, and this graph's lookup '%s' reads %zu parts in "
                "another order (the \"mod\" partition strategy), so every "
                "id would get another id's row; restore it with a graph "
                "whose lookup reads the table's rows in order (one part, or "
                "the \"div\" strategy)",
                rf_ckpt_path(ck), SESS_TABLE_ROWS_KEY, t->name,
                rf_node_name(t->by->node), t->nparts);
            break;
        }
        const unsigned char *from =
            (const unsigned char *)e->t.data + (size_t)a * rb;
        if (m->identity)
            memcpy(s->tstage, from, n * rb);
        else
            for (size_t k = 0; k < n; k++)
                memcpy(s->tstage + m->at[k] * rb, from + k * rb, rb);
        ckpt_release(ck, from, n * rb);
        for (size_t p = 0; p < t->nparts && st == RF_OK; p++)
            if (m->cnt[p])
                st = sess_table_write(s, &s->v[t->part[p]], field_of(t->slot),
                                      locked[p], m->lo[p], m->cnt[p],
                                      s->tstage + m->off[p] * rb, s->tstage_mr,
                                      s->tidx);
    }
    free(locked);
    if (st != RF_OK)
        rf_error_set(st, "restoring the table '%s' from %s: %s", t->name,
                     rf_ckpt_path(ck), rf_error_message());
    return st;
}

rf_status sess_tables_restore(rf_session *s, const rf_ckpt *ck)
{
    sess_tbl_src *src = NULL;
    size_t n = 0;
    const char *order = rf_ckpt_meta(ck, SESS_TABLE_ROWS_KEY);
    bool by_id = order && !strcmp(order, SESS_TABLE_ROWS_BY_ID);
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
        st = restore_one(s, ck, e, t, by_id);
    }
    sess_tables_ckpt_free(src, n);
    return st;
}
