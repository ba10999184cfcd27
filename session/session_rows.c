/* session/session_rows.c: embedding tables in the distributed session. The
 * worker never holds a table shard. Each lookup of table shards (an
 * EmbeddingLookup over their parts, or a Gather of one) is marked with an
 * input hook: just before its kernel runs, the hook maps the batch's ids to
 * (part, row) with the kernel's own checks (rf_embedding_map_ids: a bad id
 * fails the step naming the node, the position and the id, before any READ
 * is posted), deduplicates them in O(n) into per-lookup scratch (no
 * allocation per step), fetches the distinct rows of every part into the
 * lookup's gathered buffer (registered, in a block of its own that the
 * ps-side gather may WRITE): one rf_ps_read_rows call (one list per ps)
 * for the parts whose table's way (session_lookup_way.c) says row READs
 * at this step's rows of the part, one rf_ps_gather_rows for the others,
 * and points the kernel at a one-part table: the gathered
 * rows, and for ids each id's row in them. The kernel code path is the
 * local one, unchanged: a one-part lookup of [distinct, width] rows.
 * A table's gradient is an IndexedSlices (indices: each id's row in the
 * part or -1; values: dy); once both are made, they are staged into the
 * table's registered push buffers (rf_optim_dedup unless the optimizer is
 * sgd, whose updates apply once per occurrence; -1 dropped) and handed to
 * the push strategy (sess_push_gradient), whose rows transfer pushes them
 * (apply=ps rf_ps_push_sparse_inbox, apply=worker rf_ps_update_sparse_rmw,
 * sync replicas rf_ps_push_sparse_sync, tagged like the dense gradients). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "session/session_internal.h"

#define ALIGN64(x) (((x) + 63u) & ~(size_t)63u)

static sess_lookup *lookup_of(const rf_session *s, const rf_node *node)
{
    size_t id = rf_node_id(node);
    if (!s->rows.lookup_of_node || id >= s->rows.nlookups_of_node ||
        s->rows.lookup_of_node[id] < 0)
        return NULL;
    return &s->rows.lookups[s->rows.lookup_of_node[id]];
}

static int32_t table_of(const rf_session *s, const rf_node *n)
{
    size_t id = rf_node_id(n);
    int32_t i = id < s->nodes.nnodes ? s->nodes.var_of_node[id] : -1;
    return i >= 0 && s->v[i].table ? i : -1;
}

/* A lookup node's parts and ids input; false for any other node. */
static bool lookup_shape(const rf_node *n, size_t *ids_in, size_t *first,
                         size_t *nparts)
{
    if (rf_node_op(n) == RF_OP_GATHER) {
        *ids_in = 1, *first = 0, *nparts = 1;
        return true;
    }
    if (rf_node_op(n) == RF_OP_EMBEDDING_LOOKUP) {
        *ids_in = 0, *first = 1, *nparts = rf_node_num_inputs(n) - 1;
        return true;
    }
    return false;
}

static rf_status map_one(rf_session *s, rf_node *n, sess_lookup *L)
{
    size_t ids_in = 0, first = 0, np = 0;
    lookup_shape(n, &ids_in, &first, &np);
    L->node = n;
    L->ids_in = ids_in;
    L->nparts = np;
    L->part_var = calloc(np, sizeof *L->part_var);
    L->part_rows = calloc(np, sizeof *L->part_rows);
    L->count = calloc(np, sizeof *L->count);
    L->sets = calloc(np, sizeof *L->sets);
    L->set_part = calloc(np, sizeof *L->set_part);
    if (!L->part_var || !L->part_rows || !L->count || !L->sets || !L->set_part)
        return rf_error_set(RF_ERR_NO_MEMORY, "session: out of memory");
    for (size_t p = 0; p < np; p++) {
        rf_node *part = rf_node_input(n, first + p);
        int32_t vi = table_of(s, part);
        if (vi < 0)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "lookup '%s' reads '%s' with embedding table "
                                "shards; every part must be one (trained "
                                "by a sparse apply on a ps task)",
                                rf_node_name(n), rf_node_name(part));
        const sess_var *v = &s->v[vi];
        if (v->row_bytes != s->v[L->part_var[0]].row_bytes && p > 0)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "lookup '%s': parts of different row sizes",
                                rf_node_name(n));
        L->part_var[p] = (uint32_t)vi;
        L->part_rows[p] = (int64_t)v->rows;
    }
    L->row_bytes = s->v[L->part_var[0]].row_bytes;
    rf_shape ids = rf_node_shape(rf_node_input(n, ids_in));
    if (rf_shape_is_known(&ids))
        L->cap = (size_t)rf_shape_numel(&ids);
    else if (s->opt.max_lookup_ids > 0)
        L->cap = (size_t)s->opt.max_lookup_ids;
    else
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "lookup '%s' of embedding table shards: its ids "
                            "have no static shape; set "
                            "rf_session_options.max_lookup_ids to bound the "
                            "rows one step reads",
                            rf_node_name(n));
    if (L->cap > UINT32_MAX / 4)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "lookup '%s': %zu ids per step is too many",
                            rf_node_name(n), L->cap);
    size_t cap = L->cap ? L->cap : 1;
    L->hcap = 2;
    while (L->hcap < 2 * cap)
        L->hcap *= 2;
    L->part = calloc(cap, sizeof *L->part);
    L->row = calloc(cap, sizeof *L->row);
    L->pos = calloc(cap, sizeof *L->pos);
    L->uniq = calloc(cap, sizeof *L->uniq);
    L->slot_of = calloc(cap, sizeof *L->slot_of);
    L->rows = calloc(cap, sizeof *L->rows);
    L->hash = calloc(L->hcap, sizeof *L->hash);
    if (!L->part || !L->row || !L->pos || !L->uniq || !L->slot_of || !L->rows ||
        !L->hash)
        return rf_error_set(RF_ERR_NO_MEMORY, "session: out of memory");
    return RF_OK;
}

rf_status sess_rows_map(rf_session *s)
{
    size_t nn = rf_graph_num_nodes(s->g), cnt = 0;
    for (size_t k = 0; k < nn; k++) {
        rf_node *n = rf_graph_node(s->g, k);
        size_t ids_in, first, np;
        if (!lookup_shape(n, &ids_in, &first, &np))
            continue;
        bool any = false;
        for (size_t p = 0; p < np; p++)
            any |= table_of(s, rf_node_input(n, first + p)) >= 0;
        cnt += any;
    }
    s->rows.lookup_of_node =
        malloc((nn ? nn : 1) * sizeof *s->rows.lookup_of_node);
    s->rows.lookups = calloc(cnt ? cnt : 1, sizeof *s->rows.lookups);
    if (!s->rows.lookup_of_node || !s->rows.lookups)
        return rf_error_set(RF_ERR_NO_MEMORY, "session: out of memory");
    s->rows.nlookups_of_node = nn;
    for (size_t k = 0; k < nn; k++)
        s->rows.lookup_of_node[k] = -1;
    for (size_t k = 0; k < nn; k++) {
        rf_node *n = rf_graph_node(s->g, k);
        size_t ids_in, first, np;
        if (!lookup_shape(n, &ids_in, &first, &np))
            continue;
        bool any = false;
        for (size_t p = 0; p < np; p++)
            any |= table_of(s, rf_node_input(n, first + p)) >= 0;
        if (!any)
            continue;
        rf_status st = map_one(s, n, &s->rows.lookups[s->rows.nlookups]);
        s->rows.nlookups++;
        if (st != RF_OK)
            return st;
        s->rows.lookup_of_node[k] = (int32_t)(s->rows.nlookups - 1);
    }
    if (pthread_mutex_init(&s->rows.mu, NULL) != 0)
        return rf_error_set(RF_ERR_NO_RESOURCE, "session: mutex");
    s->rows.mu_init = true;
    return RF_OK;
}

size_t sess_rows_bytes(const rf_session *s)
{
    size_t len = 0;
    for (size_t i = 0; i < s->nv; i++)
        if (s->v[i].table)
            len += ALIGN64(s->v[i].max_push_rows * sizeof(int64_t)) +
                   ALIGN64(s->v[i].max_push_rows * s->v[i].row_bytes);
    return len;
}

void sess_rows_place(rf_session *s, unsigned char *base)
{
    size_t off = 0;
    for (size_t i = 0; i < s->nv; i++) {
        sess_var *v = &s->v[i];
        if (!v->table)
            continue;
        v->push_rows = (int64_t *)(void *)(base + off);
        off += ALIGN64(v->max_push_rows * sizeof(int64_t));
        v->grad_buf = (float *)(void *)(base + off);
        off += ALIGN64(v->max_push_rows * v->row_bytes);
    }
}

rf_status sess_rows_register_gathered(rf_session *s)
{
    size_t len = 0;
    for (size_t k = 0; k < s->rows.nlookups; k++)
        len += ALIGN64(s->rows.lookups[k].cap * s->rows.lookups[k].row_bytes);
    if (!len)
        return RF_OK;
    rf_server *sv = s->server;
    if (rf_topology_alloc(sv->topo, &sv->binding, len,
                          (void **)&s->rows.gathered_mem) != RF_OK)
        return rf_error_set(RF_ERR_NO_MEMORY,
                            "allocating %zu bytes of lookup rows: %s", len,
                            rf_error_message());
    s->rows.gathered_len = len;
    bool reply = s->opt.embedding_lookup != RF_LOOKUP_ROWS;
    rf_status st =
        reply ? rf_ps_client_register_reply(s->client, s->rows.gathered_mem,
                                            len, &s->rows.gathered_mr)
              : rf_ps_client_register(s->client, s->rows.gathered_mem, len,
                                      &s->rows.gathered_mr);
    if (st != RF_OK)
        return rf_error_set(st, "registering %zu bytes of lookup rows: %s", len,
                            rf_error_message());
    size_t off = 0;
    for (size_t k = 0; k < s->rows.nlookups; k++) {
        sess_lookup *L = &s->rows.lookups[k];
        L->gathered = s->rows.gathered_mem + off;
        off += ALIGN64(L->cap * L->row_bytes);
    }
    return RF_OK;
}

void sess_rows_free_gathered(rf_session *s)
{
    if (s->rows.gathered_mem)
        rf_topology_free(s->server->topo, s->rows.gathered_mem,
                         s->rows.gathered_len);
    s->rows.gathered_mem = NULL;
    s->rows.gathered_mr = NULL;
    for (size_t k = 0; k < s->rows.nlookups; k++)
        s->rows.lookups[k].gathered = NULL;
}

void sess_rows_free(rf_session *s)
{
    for (size_t k = 0; k < s->rows.nlookups; k++) {
        sess_lookup *L = &s->rows.lookups[k];
        free(L->part_var);
        free(L->part_rows);
        free(L->count);
        free(L->sets);
        free(L->set_part);
        free(L->part);
        free(L->row);
        free(L->pos);
        free(L->uniq);
        free(L->slot_of);
        free(L->rows);
        free(L->hash);
    }
    free(s->rows.lookups);
    s->rows.lookups = NULL;
    s->rows.nlookups = 0;
    free(s->rows.lookup_of_node);
    s->rows.lookup_of_node = NULL;
    for (size_t i = 0; i < s->nv; i++) {
        free(s->v[i].dedup_scratch);
        s->v[i].dedup_scratch = NULL;
    }
    if (s->rows.mu_init)
        pthread_mutex_destroy(&s->rows.mu);
    s->rows.mu_init = false;
}

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

/* The distinct (part, row) of the batch in order of first appearance,
 * grouped part by part into rows, and pos: each id's row in gathered.
 * Returns the number of distinct rows. */
static size_t dedup_rows(sess_lookup *L, size_t n)
{
    memset(L->hash, 0, L->hcap * sizeof *L->hash);
    memset(L->count, 0, L->nparts * sizeof *L->count);
    size_t m = 0, mask = L->hcap - 1;
    for (size_t i = 0; i < n; i++) {
        uint64_t key = (uint64_t)L->row[i] * L->nparts + (uint64_t)L->part[i];
        size_t h = mix(key) & mask;
        for (;;) {
            uint32_t e = L->hash[h];
            if (e == 0) {
                L->hash[h] = (uint32_t)m + 1;
                L->uniq[m] = (uint32_t)i;
                L->count[L->part[i]]++;
                L->pos[i] = (int64_t)m++;
                break;
            }
            uint32_t f = L->uniq[e - 1];
            if (L->row[f] == L->row[i] && L->part[f] == L->part[i]) {
                L->pos[i] = (int64_t)(e - 1);
                break;
            }
            h = (h + 1) & mask;
        }
    }
    /* part p's rows start at the sum of the counts before it */
    uint32_t start = 0;
    for (size_t p = 0; p < L->nparts; p++) {
        uint32_t c = L->count[p];
        L->count[p] = start;
        start += c;
    }
    for (size_t j = 0; j < m; j++) {
        uint32_t f = L->uniq[j];
        uint32_t slot = L->count[L->part[f]]++;
        L->slot_of[j] = slot;
        L->rows[slot] = L->row[f];
    }
    for (size_t i = 0; i < n; i++)
        L->pos[i] = L->slot_of[L->pos[i]];
    /* count[p] is now the end of part p's rows */
    return m;
}

/* A lookup's rows were fetched: sets [0, nread) by row READs, the rest by
 * the ps-side gather (s->rows.mu held). */
static void count_lookup(rf_session *s, const sess_lookup *L, size_t nread,
                         size_t nsets)
{
    rf_session_counters *c = &s->report.counters;
    for (size_t k = 0; k < nsets; k++) {
        sess_var *v = &s->v[L->part_var[L->set_part[k]]];
        size_t n = L->sets[k].n;
        c->table_rows_read += n;
        c->table_bytes_read += n * L->row_bytes;
        if (k < nread) {
            sess_count_bytes(s, v->ps_task, sess_rows_read_wire(v, n), 0);
            c->table_lookups_read++;
            v->way.lookups_read++;
            v->way.rows_read += n;
        } else {
            sess_count_bytes(s, v->ps_task, sess_rows_gather_wire(v, n), 0);
            c->table_rows_gathered += n;
            c->table_lookups_gathered++;
            v->way.lookups_gathered++;
            v->way.rows_gathered += n;
        }
    }
}

rf_status sess_rows_inputs(void *ctx, rf_node *node, const rf_tensor **in,
                           size_t *n, int tid)
{
    sess_plan *p = ctx;
    rf_session *s = p->session;
    sess_lookup *L = lookup_of(s, node);
    if (!L)
        return RF_OK;
    const rf_tensor *ids = in[L->ids_in];
    size_t nids = (size_t)rf_shape_numel(&ids->shape);
    if (nids > L->cap)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "lookup '%s': %zu ids this step, more than the "
                            "%zu its gathered rows hold "
                            "(rf_session_options.max_lookup_ids)",
                            rf_node_name(node), nids, L->cap);
    rf_status st = rf_embedding_map_ids(node, ids, L->part_rows, L->nparts,
                                        L->part, L->row);
    if (st != RF_OK)
        return st;
    size_t m = dedup_rows(L, nids);
    /* each part's rows by its table's way at their number: the row READs'
     * sets first, then the gathers' */
    size_t nsets = 0, nread = 0, gathered = 0;
    for (int pass = 0; pass < 2; pass++) {
        uint32_t begin = 0;
        for (size_t q = 0; q < L->nparts; q++) {
            uint32_t end = L->count[q];
            const sess_var *v = &s->v[L->part_var[q]];
            bool gather =
                end > begin && sess_way_of(v, end - begin) == RF_LOOKUP_GATHER;
            if (end > begin && gather == (pass == 1)) {
                L->set_part[nsets] = q;
                L->sets[nsets++] = (rf_ps_rows){
                    .var = v->shard,
                    .field = RF_PS_FIELD_VALUES,
                    .rows = L->rows + begin,
                    .n = end - begin,
                    .buf = L->gathered + (size_t)begin * L->row_bytes,
                    .mr = s->rows.gathered_mr};
                gathered += gather ? end - begin : 0;
            }
            begin = end;
        }
        if (pass == 0)
            nread = nsets;
    }
    uint64_t t0 = rf_now_ns();
    pthread_mutex_lock(&s->rows.mu);
    st = nread ? rf_ps_read_rows(s->client, L->sets, nread) : RF_OK;
    if (st == RF_OK && nsets > nread)
        st = rf_ps_gather_rows(s->client, L->sets + nread, nsets - nread);
    if (st == RF_OK)
        count_lookup(s, L, nread, nsets);
    pthread_mutex_unlock(&s->rows.mu);
    if (st != RF_OK)
        return rf_error_set(st, "reading the rows of lookup '%s': %s",
                            rf_node_name(node), rf_error_message());
    L->step_rows = m;
    if (s->report.trace) {
        char name[RF_PS_MAX_NAME + 32], args[128];
        snprintf(name, sizeof name, "READ_ROWS %s", rf_node_name(node));
        snprintf(args, sizeof args,
                 "\"rows\":%zu,\"bytes\":%zu,\"gathered\":%zu", m,
                 m * L->row_bytes, gathered);
        sess_span(s, name, args, t0, tid);
    }
    /* the kernel reads a one-part table: the gathered rows */
    rf_shape gs = rf_node_shape(s->v[L->part_var[0]].var);
    gs.dims[0] = (int64_t)m;
    L->gathered_t = rf_tensor_make(RF_F32, gs, L->gathered);
    L->pos_t = rf_tensor_make(RF_I64, ids->shape, L->pos);
    if (rf_node_op(node) == RF_OP_GATHER) {
        in[0] = &L->gathered_t;
        in[1] = &L->pos_t;
    } else {
        in[0] = &L->pos_t;
        in[1] = &L->gathered_t;
        *n = 2;
    }
    return RF_OK;
}

/* The step's rows of v: -1 dropped, deduplicated (summed in order of
 * first appearance) if sess_map chose to (not sgd, or a strategy that
 * wants unique rows: a sync table's accumulator counts one contribution
 * per row and gradient). */
static rf_status stage(sess_var *v)
{
    const rf_tensor *ix = v->step_idx, *vals = v->step_vals;
    size_t n = ix->shape.rank ? (size_t)ix->shape.dims[0] : 0;
    if (ix->dtype != RF_I64 || vals->dtype != RF_F32 ||
        (size_t)rf_shape_numel(&vals->shape) != n * v->width)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "the sparse gradient of '%s' does not fit its "
                            "table's rows",
                            rf_node_name(v->var));
    if (n > v->max_push_rows)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "the gradient of table '%s' has %zu rows this "
                            "step, more than its max_push_rows %u",
                            rf_node_name(v->var), n, v->max_push_rows);
    const int64_t *idx = ix->data;
    const float *g = vals->data;
    if (v->dedup_scratch) { /* sess_map chose to deduplicate */
        rf_status st = rf_optim_dedup(idx, n, g, v->width, v->dedup_scratch,
                                      v->push_rows, v->grad_buf, &v->push_n);
        if (st != RF_OK)
            return rf_error_set(st, "the gradient of '%s': %s",
                                rf_node_name(v->var), rf_error_message());
        return RF_OK;
    }
    size_t m = 0;
    for (size_t k = 0; k < n; k++) {
        if (idx[k] == -1)
            continue;
        v->push_rows[m] = idx[k];
        memcpy(v->grad_buf + m * v->width, g + k * v->width, v->row_bytes);
        m++;
    }
    v->push_n = m;
    return RF_OK;
}

rf_status sess_rows_gradient(rf_session *s, size_t i, bool is_idx,
                             const rf_tensor *value, const char *span, int tid)
{
    sess_var *v = &s->v[i];
    if (is_idx)
        v->step_idx = value;
    else
        v->step_vals = value;
    if (atomic_fetch_add(&v->ready, 1) != 1)
        return RF_OK; /* the other half comes */
    atomic_store(&v->ready, 0);
    rf_status st = stage(v);
    if (st != RF_OK)
        return st;
    return sess_push_gradient(s, i, span, tid);
}

size_t sess_rows_read_wire(const sess_var *v, size_t n)
{
    /* each row's record: version and CRC32C (ps_layout.h), then the row */
    return n * (v->row_bytes + 16);
}

size_t sess_rows_gather_wire(const sess_var *v, size_t n)
{
    /* per request (max_push_rows rows): the 64-byte request and the 8-byte
     * ack; per row its 8-byte index and the row (ps_layout.h) */
    size_t per = v->max_push_rows ? v->max_push_rows : 1;
    size_t requests = n ? (n + per - 1) / per : 0;
    return requests * (64 + 8) + n * (8 + v->row_bytes);
}
