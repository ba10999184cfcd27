/* graph/kernels_sparse.c: shape functions and kernels of the embedding ops:
 * GatherV2 (axis 0), the fused EmbeddingLookup over a table's parts with
 * TF 1.x's id-to-part mapping (embedding_ops.py,
 * _embedding_lookup_and_transform: p_assignments and new_ids for "mod" and
 * "div"), EmbeddingPartIndices (each id's row in one part, or -1), and the
 * IndexedSlices sparse gradient with its densification (TF's
 * _IndexedSlicesToTensor: unsorted_segment_sum into zeros). Every id is
 * checked before any row is touched. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "rdmaflow/status.h"

#define SHAPE_FN(fn)                                                           \
    rf_status fn(const rf_node *n, const rf_shape *in, const rf_dtype *dt,     \
                 rf_shape *out, rf_dtype *odt)

static bool is_int(rf_dtype d)
{
    return d == RF_I32 || d == RF_I64;
}

static int64_t load_id(const void *data, rf_dtype dt, int64_t i)
{
    return dt == RF_I64 ? ((const int64_t *)data)[i]
                        : (int64_t)((const int32_t *)data)[i];
}

/* "[i]" or "[a,b]": the position of flat element i in shape s, as TF's
 * messages write it. */
static const char *pos_str(const rf_shape *s, int64_t i, char *buf, size_t len)
{
    int64_t idx[RF_MAX_RANK];
    int rank = s->rank > 0 ? s->rank : 1;
    if (s->rank == 0)
        idx[0] = i;
    for (int d = s->rank - 1; d >= 0; d--) {
        int64_t dim = s->dims[d] > 0 ? s->dims[d] : 1;
        idx[d] = i % dim;
        i /= dim;
    }
    size_t at = 0;
    buf[at++] = '[';
    for (int d = 0; d < rank && at < len; d++)
        at += (size_t)snprintf(buf + at, len - at, "%s%" PRId64, d ? "," : "",
                               idx[d]);
    if (at + 2 <= len) {
        buf[at++] = ']';
        buf[at] = '\0';
    } else {
        buf[len - 1] = '\0';
    }
    return buf;
}

/* out = a ++ b[from:] */
static rf_status concat_dims(const rf_node *n, const rf_shape *a,
                             const rf_shape *b, int from, rf_shape *out)
{
    int rank = a->rank + b->rank - from;
    if (rank > RF_MAX_RANK)
        return node_error(n, RF_ERR_INVALID_ARG,
                          "output rank %d exceeds %d (%s and %s)", rank,
                          RF_MAX_RANK, SHAPE_STR(a), SHAPE_STR(b));
    int64_t d[RF_MAX_RANK];
    for (int i = 0; i < a->rank; i++)
        d[i] = a->dims[i];
    for (int i = from; i < b->rank; i++)
        d[a->rank + i - from] = b->dims[i];
    *out = rf_shape_make(rank, d);
    return RF_OK;
}

/* TF 1.x embedding_ops.py, _embedding_lookup_and_transform: the part
 * (p_assignments) and the row in it (new_ids) of a valid id. "mod":
 * id % P, id // P. "div": with ipp = total // P and extras = total % P,
 * max(id // (ipp + 1), (id - extras) // ipp), and
 * where(part < extras, id % (ipp + 1), (id - extras) % ipp). C's truncating
 * division differs from Python's floor only when id < extras makes
 * id - extras negative; then the first term (>= 0) wins the max either
 * way, and the second remainder is not taken (part < extras). */
static void map_id(bool div, int64_t parts, int64_t total, int64_t id,
                   int64_t *part, int64_t *row)
{
    if (!div) {
        *part = id % parts;
        *row = id / parts;
        return;
    }
    int64_t ipp = total / parts, extras = total % parts;
    int64_t a = id / (ipp + 1), b = (id - extras) / ipp;
    *part = a > b ? a : b;
    *row = *part < extras ? id % (ipp + 1) : (id - extras) % ipp;
}

/* The checks of one id against the table: in [0, total), and mapped to a
 * row its part has (part_vals NULL: not checked). */
static rf_status check_id(const rf_node *n, const rf_shape *ids_shape,
                          int64_t i, int64_t id, bool div, int64_t parts,
                          int64_t total, const rf_tensor *const *part_vals,
                          int64_t *part, int64_t *row)
{
    char pos[64];
    if (id < 0 || id >= total)
        return node_error(n, RF_ERR_INVALID_ARG,
                          "ids%s = %" PRId64 " is not in [0, %" PRId64
                          ") (the vocabulary size)",
                          pos_str(ids_shape, i, pos, sizeof pos), id, total);
    map_id(div, parts, total, id, part, row);
    if (part_vals && *row >= part_vals[*part]->shape.dims[0])
        return node_error(
            n, RF_ERR_INVALID_ARG,
            "ids%s = %" PRId64 " maps to row %" PRId64 " of part %" PRId64
            ", which has %" PRId64 " rows (%s strategy over parts of uneven "
            "sizes)",
            pos_str(ids_shape, i, pos, sizeof pos), id, *row, *part,
            part_vals[*part]->shape.dims[0], div ? "div" : "mod");
    return RF_OK;
}

/* ---- GatherV2 ------------------------------------------------------------ */

/* (params, indices) */
SHAPE_FN(shape_gather)
{
    if (in[0].rank < 1)
        return node_error(n, RF_ERR_INVALID_ARG,
                          "params must have rank >= 1, got %s",
                          SHAPE_STR(&in[0]));
    if (!is_int(dt[1]))
        return node_error(n, RF_ERR_INVALID_ARG,
                          "indices must be int32 or int64, got %s",
                          rf_dtype_name(dt[1]));
    *odt = dt[0];
    return concat_dims(n, &in[1], &in[0], 1, out);
}

RF_KERNEL(k_gather)
{
    const rf_tensor *p = k->in[0], *ix = k->in[1];
    int64_t rows = p->shape.dims[0], n = rf_shape_numel(&ix->shape);
    size_t row_bytes = rf_dtype_size(p->dtype);
    for (int d = 1; d < p->shape.rank; d++)
        row_bytes *= (size_t)p->shape.dims[d];
    char *dst = k->out->data;
    for (int64_t i = 0; i < n; i++) {
        int64_t id = load_id(ix->data, ix->dtype, i);
        if (id < 0 || id >= rows) {
            char pos[64];
            return node_error(
                k->node, RF_ERR_INVALID_ARG,
                "indices%s = %" PRId64 " is not in [0, %" PRId64 ")",
                pos_str(&ix->shape, i, pos, sizeof pos), id, rows);
        }
        memcpy(dst + (size_t)i * row_bytes,
               (const char *)p->data + (size_t)id * row_bytes, row_bytes);
    }
    return RF_OK;
}

/* ---- EmbeddingLookup ---------------------------------------------------- */

/* (ids, part_0 .. part_{P-1}) */
SHAPE_FN(shape_embedding_lookup)
{
    size_t parts = n->n_inputs - 1;
    if (!is_int(dt[0]))
        return node_error(n, RF_ERR_INVALID_ARG,
                          "ids must be int32 or int64, got %s",
                          rf_dtype_name(dt[0]));
    int64_t total = 0;
    bool known = true;
    for (size_t p = 1; p <= parts; p++) {
        if (dt[p] != dt[1])
            return node_error(n, RF_ERR_INVALID_ARG,
                              "part %zu is %s, part 0 %s", p - 1,
                              rf_dtype_name(dt[p]), rf_dtype_name(dt[1]));
        bool same = in[p].rank == in[1].rank && in[p].rank >= 1;
        for (int d = 1; same && d < in[p].rank; d++)
            same = in[p].dims[d] == in[1].dims[d];
        if (!same)
            return node_error(n, RF_ERR_INVALID_ARG,
                              "part %zu ('%s') has shape %s, part 0 %s: "
                              "every part needs rank >= 1 and the same "
                              "trailing dims",
                              p - 1, n->inputs[p]->name, SHAPE_STR(&in[p]),
                              SHAPE_STR(&in[1]));
        if (in[p].dims[0] < 0)
            known = false;
        else
            total += in[p].dims[0];
    }
    if (known && n->attr.div_strategy && total < (int64_t)parts)
        return node_error(n, RF_ERR_INVALID_ARG,
                          "\"div\" over %zu parts needs at least one row "
                          "per part, the table has %" PRId64,
                          parts, total);
    *odt = dt[1];
    return concat_dims(n, &in[0], &in[1], 1, out);
}

RF_KERNEL(k_embedding_lookup)
{
    const rf_tensor *ids = k->in[0];
    size_t parts = k->n_in - 1;
    const rf_tensor *const *pv = k->in + 1;
    int64_t total = 0;
    for (size_t p = 0; p < parts; p++)
        total += pv[p]->shape.dims[0];
    size_t row_bytes = rf_dtype_size(k->out->dtype);
    for (int d = 1; d < pv[0]->shape.rank; d++)
        row_bytes *= (size_t)pv[0]->shape.dims[d];
    int64_t n = rf_shape_numel(&ids->shape);
    char *dst = k->out->data;
    for (int64_t i = 0; i < n; i++) {
        int64_t part = 0, row = 0;
        rf_status st = check_id(
            k->node, &ids->shape, i, load_id(ids->data, ids->dtype, i),
            k->node->attr.div_strategy, (int64_t)parts, total, pv, &part, &row);
        if (st != RF_OK)
            return st;
        memcpy(dst + (size_t)i * row_bytes,
               (const char *)k->in[1 + part]->data + (size_t)row * row_bytes,
               row_bytes);
    }
    return RF_OK;
}

/* The kernels' own checks and mapping, for the distributed session, which
 * maps a batch before it READs the rows (include/rdmaflow/graph.h). */
rf_status rf_embedding_map_ids(const rf_node *lookup, const rf_tensor *ids,
                               const int64_t *part_rows, size_t nparts,
                               int32_t *part, int64_t *row)
{
    bool gather = lookup && lookup->op == RF_OP_GATHER;
    if (!lookup || !ids || !part_rows || !part || !row || nparts < 1 ||
        (!gather && lookup->op != RF_OP_EMBEDDING_LOOKUP) ||
        (gather ? nparts != 1 : nparts != lookup->n_inputs - 1) ||
        !is_int(ids->dtype))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_embedding_map_ids: bad argument");
    int64_t total = 0, n = rf_shape_numel(&ids->shape);
    for (size_t p = 0; p < nparts; p++)
        total += part_rows[p];
    for (int64_t i = 0; i < n; i++) {
        int64_t id = load_id(ids->data, ids->dtype, i), pt = 0, r = id;
        char pos[64];
        if (gather && (id < 0 || id >= total))
            return node_error(
                lookup, RF_ERR_INVALID_ARG,
                "indices%s = %" PRId64 " is not in [0, %" PRId64 ")",
                pos_str(&ids->shape, i, pos, sizeof pos), id, total);
        if (!gather) {
            rf_status st =
                check_id(lookup, &ids->shape, i, id, lookup->attr.div_strategy,
                         (int64_t)nparts, total, NULL, &pt, &r);
            if (st != RF_OK)
                return st;
            if (r >= part_rows[pt])
                return node_error(
                    lookup, RF_ERR_INVALID_ARG,
                    "ids%s = %" PRId64 " maps to row %" PRId64
                    " of part %" PRId64 ", which has %" PRId64
                    " rows (%s strategy over parts of uneven sizes)",
                    pos_str(&ids->shape, i, pos, sizeof pos), id, r, pt,
                    part_rows[pt], lookup->attr.div_strategy ? "div" : "mod");
        }
        part[i] = (int32_t)pt;
        row[i] = r;
    }
    return RF_OK;
}

/* ---- EmbeddingPartIndices ---------------------------------------------- */

/* (ids): int64 [numel(ids)] */
SHAPE_FN(shape_embedding_part_indices)
{
    if (!is_int(dt[0]))
        return node_error(n, RF_ERR_INVALID_ARG,
                          "ids must be int32 or int64, got %s",
                          rf_dtype_name(dt[0]));
    const rf_attrs *a = &n->attr;
    if (a->num_parts < 1 || a->part < 0 || a->part >= a->num_parts ||
        a->vocab < (a->div_strategy ? a->num_parts : 0))
        return node_error(n, RF_ERR_INVALID_ARG,
                          "part %d of %d over %" PRId64 " rows is not "
                          "valid",
                          a->part, a->num_parts, a->vocab);
    int64_t m = rf_shape_is_known(&in[0]) ? rf_shape_numel(&in[0]) : -1;
    *out = rf_shape_make(1, &m);
    *odt = RF_I64;
    return RF_OK;
}

RF_KERNEL(k_embedding_part_indices)
{
    const rf_attrs *a = &k->node->attr;
    const rf_tensor *ids = k->in[0];
    int64_t n = rf_shape_numel(&ids->shape), *out = k->out->data;
    for (int64_t i = 0; i < n; i++) {
        int64_t part = 0, row = 0;
        rf_status st = check_id(
            k->node, &ids->shape, i, load_id(ids->data, ids->dtype, i),
            a->div_strategy, a->num_parts, a->vocab, NULL, &part, &row);
        if (st != RF_OK)
            return st;
        if (part == a->part && row >= a->part_rows) {
            char pos[64];
            return node_error(k->node, RF_ERR_INVALID_ARG,
                              "ids%s maps to row %" PRId64 " of part %d, "
                              "which has %" PRId64 " rows",
                              pos_str(&ids->shape, i, pos, sizeof pos), row,
                              a->part, a->part_rows);
        }
        out[i] = part == a->part ? row : -1;
    }
    return RF_OK;
}

/* ---- IndexedSlices, IndexedSlicesToDense ------------------------------- */

/* (indices int64 [n], values [n, ...]); attr shape: the dense shape.
 * IndexedSlices' value is values; IndexedSlicesToDense's the dense
 * tensor. */
SHAPE_FN(shape_indexed_slices)
{
    const rf_shape *ds = &n->attr.shape;
    if (dt[0] != RF_I64 || in[0].rank != 1)
        return node_error(n, RF_ERR_INVALID_ARG,
                          "indices must be int64 of rank 1, got %s%s",
                          rf_dtype_name(dt[0]), SHAPE_STR(&in[0]));
    if (dt[1] != RF_F32)
        return node_error(n, RF_ERR_INVALID_ARG,
                          "values must be float32, got %s",
                          rf_dtype_name(dt[1]));
    bool ok = in[1].rank >= 1 && in[1].rank == ds->rank &&
              (in[0].dims[0] < 0 || in[1].dims[0] < 0 ||
               in[0].dims[0] == in[1].dims[0]);
    for (int d = 1; ok && d < ds->rank; d++)
        ok = in[1].dims[d] < 0 || ds->dims[d] < 0 ||
             in[1].dims[d] == ds->dims[d];
    if (!ok)
        return node_error(n, RF_ERR_INVALID_ARG,
                          "indices %s and values %s do not fit the dense "
                          "shape %s",
                          SHAPE_STR(&in[0]), SHAPE_STR(&in[1]), SHAPE_STR(ds));
    *out = n->op == RF_OP_INDEXED_SLICES ? in[1] : *ds;
    *odt = RF_F32;
    return RF_OK;
}

RF_KERNEL(k_indexed_slices)
{
    if (k->out->data != k->in[1]->data)
        memcpy(k->out->data, k->in[1]->data, rf_tensor_bytes(k->out));
    return RF_OK;
}

RF_KERNEL(k_indexed_slices_to_dense)
{
    const int64_t *idx = k->in[0]->data;
    const float *v = k->in[1]->data;
    float *o = k->out->data;
    int64_t rows = k->out->shape.dims[0], n = k->in[0]->shape.dims[0];
    int64_t width = rows > 0 ? rf_shape_numel(&k->out->shape) / rows : 0;
    memset(o, 0, rf_tensor_bytes(k->out));
    for (int64_t i = 0; i < n; i++) {
        if (idx[i] == -1)
            continue;
        if (idx[i] < 0 || idx[i] >= rows)
            return node_error(k->node, RF_ERR_INVALID_ARG,
                              "indices[%" PRId64 "] = %" PRId64
                              " is not in [0, %" PRId64 ")",
                              i, idx[i], rows);
        float *dst = o + idx[i] * width;
        const float *src = v + i * width;
        for (int64_t j = 0; j < width; j++)
            dst[j] += src[j];
    }
    return RF_OK;
}
