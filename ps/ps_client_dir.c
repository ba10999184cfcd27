/* ps/ps_client_dir.c: what the client knows of each ps: its arena
 * regions (REGIONS_REQ, chunked) and its directory (DIR_REQ, chunked and
 * incremental: shards are only ever appended within an incarnation), every
 * entry checked to lie inside its region; and the var handles: create
 * (chief, CREATE_REQ), lookup (waiting for the chief), binding to directory
 * entries, refusal of a different dtype/shape/optimizer, staleness after a
 * ps restart. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/log.h"
#include "ps/ps_client_internal.h"
#include "ps/ps_spec.h"
#include "rdmaflow/status.h"

rf_status cli_fetch_regions(ps_cli_conn *p)
{
    static __thread ps_regions_reply r;
    uint32_t start = 0, total = 0;
    rf_mr_desc *regions = NULL;
    char name[340];
    cli_ps_name(p, name, sizeof name);
    do {
        ps_range_req q = {.start = start};
        size_t len;
        rf_status st =
            ps_enc_range_req(cli_req_buf(p), PS_REQ_MAX, PS_MSG_REGIONS_REQ,
                             cli_next_req_id(p), &q, &len);
        const unsigned char *reply;
        size_t rlen;
        if (st == RF_OK)
            st = cli_rpc(p, len, PS_MSG_REGIONS_REPLY, &reply, &rlen);
        if (st != RF_OK) {
            free(regions);
            return st;
        }
        st = ps_dec_regions_reply(reply, rlen, &r);
        cli_rpc_done(p);
        if (st == RF_OK && r.start != start)
            st = rf_error_set(RF_ERR_CORRUPT, "regions from %u, asked %u",
                              r.start, start);
        if (st == RF_OK && start == 0) {
            total = r.total;
            regions = calloc(total ? total : 1, sizeof *regions);
            if (!regions) {
                return rf_error_set(RF_ERR_NO_MEMORY,
                                    "ps client: out of memory");
            }
        }
        if (st == RF_OK && r.total != total)
            st = rf_error_set(RF_ERR_CORRUPT,
                              "region count changed from %u to %u", total,
                              r.total);
        if (st != RF_OK) {
            char why[400];
            snprintf(why, sizeof why, "%s", rf_error_message());
            free(regions);
            cli_conn_fail(p, "protocol error: %s", why);
            return rf_error_set(RF_ERR_CORRUPT, "%s: protocol error: %s", name,
                                why);
        }
        memcpy(regions + start, r.regions, r.count * sizeof *regions);
        start += r.count;
    } while (start < total);
    free(p->regions);
    p->regions = regions;
    p->num_regions = total;
    return RF_OK;
}

/* A location of len bytes inside a known region: its address and rkey. */
static bool locate(const ps_cli_conn *p, ps_loc loc, uint64_t len,
                   uint64_t *addr, uint32_t *rkey)
{
    if (loc.region >= p->num_regions)
        return false;
    const rf_mr_desc *d = &p->regions[loc.region];
    if (loc.offset > d->len || len > d->len - loc.offset)
        return false;
    *addr = d->addr + loc.offset;
    *rkey = d->rkey;
    return true;
}

/* The layout an entry's spec implies (ps_entry_check verified it). */
static void entry_layout(const ps_entry *e, ps_layout *l)
{
    memset(l, 0, sizeof *l);
    ps_layout_full(e->values_bytes, e->num_slots,
                   e->spec.shape.rank >= 1 ? (uint64_t)e->spec.shape.dims[0]
                                           : 0,
                   e->spec.max_push_rows, e->spec.sync_n > 0, l);
}

static bool entry_inside(const ps_cli_conn *p, const ps_entry *e)
{
    uint64_t a;
    uint32_t k;
    ps_layout l;
    entry_layout(e, &l);
    if (!locate(p, e->record, e->record_bytes, &a, &k))
        return false;
    if (e->inbox.region != PS_NO_REGION &&
        !locate(p, e->inbox, l.inbox_bytes, &a, &k))
        return false;
    return true;
}

static void var_bind(rf_ps_var *v, ps_cli_conn *p, const ps_entry *e)
{
    v->e = *e;
    entry_layout(e, &v->lay);
    locate(p, e->record, e->record_bytes, &v->rec_addr, &v->rkey);
    v->inbox_addr = 0;
    v->inbox_rkey = 0;
    if (e->inbox.region != PS_NO_REGION)
        locate(p, e->inbox, v->lay.inbox_bytes, &v->inbox_addr, &v->inbox_rkey);
    v->stale = false;
    p->by_shard[e->shard_id] = v;
}

typedef struct dir_acc {
    ps_cli_conn *p;
    ps_entry *got;
    uint32_t n, cap;
} dir_acc;

static rf_status collect(void *ctx, const ps_entry *e)
{
    dir_acc *a = ctx;
    if (a->n == a->cap) {
        uint32_t cap = a->cap ? 2 * a->cap : 64;
        ps_entry *n = realloc(a->got, cap * sizeof *n);
        if (!n)
            return rf_error_set(RF_ERR_NO_MEMORY, "ps client: out of memory");
        a->got = n;
        a->cap = cap;
    }
    a->got[a->n++] = *e;
    return RF_OK;
}

/* Fetches entries from p->num_dir on and appends them. */
rf_status cli_fetch_dir(ps_cli_conn *p)
{
    rf_ps_client *c = p->client;
    char name[340];
    cli_ps_name(p, name, sizeof name);
    dir_acc acc = {.p = p};
    uint32_t start = p->num_dir, total = 0;
    rf_status st = RF_OK;
    do {
        ps_range_req q = {.start = start};
        size_t len;
        const unsigned char *reply;
        size_t rlen;
        st = ps_enc_range_req(cli_req_buf(p), PS_REQ_MAX, PS_MSG_DIR_REQ,
                              cli_next_req_id(p), &q, &len);
        if (st == RF_OK)
            st = cli_rpc(p, len, PS_MSG_DIR_REPLY, &reply, &rlen);
        if (st != RF_OK)
            goto out;
        ps_dir_reply d;
        uint32_t before = acc.n;
        st = ps_dec_dir_reply(reply, rlen, &d, collect, &acc);
        cli_rpc_done(p);
        if (st == RF_OK &&
            (d.start != start || d.incarnation != p->incarnation ||
             (d.count == 0 && d.start < d.total) || acc.n - before != d.count))
            st =
                rf_error_set(RF_ERR_CORRUPT,
                             "directory reply from %u (asked %u), "
                             "incarnation 0x%llx",
                             d.start, start, (unsigned long long)d.incarnation);
        if (st != RF_OK) {
            if (st == RF_ERR_NO_MEMORY)
                goto out;
            goto corrupt;
        }
        total = d.total;
        start += d.count;
    } while (start < total);
    /* Arena chunks added since the last REGIONS fetch. */
    for (uint32_t i = 0; i < acc.n; i++) {
        if (!entry_inside(p, &acc.got[i])) {
            if ((st = cli_fetch_regions(p)) != RF_OK)
                goto out;
            break;
        }
    }
    for (uint32_t i = 0; i < acc.n; i++) {
        if (!entry_inside(p, &acc.got[i])) {
            rf_error_set(RF_ERR_CORRUPT,
                         "entry '%s' part %u lies outside the ps arena",
                         acc.got[i].spec.name, acc.got[i].spec.part);
            goto corrupt;
        }
    }
    uint32_t need = p->num_dir + acc.n;
    if (need > p->cap_dir) {
        uint32_t cap = p->cap_dir ? p->cap_dir : 64;
        while (cap < need)
            cap *= 2;
        ps_entry *d = realloc(p->dir, cap * sizeof *d);
        if (d)
            p->dir = d;
        rf_ps_var **b = d ? realloc(p->by_shard, cap * sizeof *b) : NULL;
        if (!d || !b) {
            st = rf_error_set(RF_ERR_NO_MEMORY, "ps client: out of memory");
            goto out;
        }
        p->by_shard = b;
        p->cap_dir = cap;
    }
    for (uint32_t i = 0; i < acc.n; i++) {
        p->dir[p->num_dir] = acc.got[i];
        p->by_shard[p->num_dir] = NULL;
        p->num_dir++;
    }
    /* Handles that survived a reconnect to the same incarnation. */
    for (rf_ps_var *v = c->vars; v; v = v->next) {
        if (v->ps != p->index || v->stale || v->e.shard_id >= p->num_dir)
            continue;
        const ps_entry *e = &p->dir[v->e.shard_id];
        if (strcmp(e->spec.name, v->spec.name) == 0 &&
            e->spec.part == v->spec.part)
            var_bind(v, p, e);
    }
    st = RF_OK;
    goto out;
corrupt:;
    char why[400];
    snprintf(why, sizeof why, "%s", rf_error_message());
    cli_conn_fail(p, "protocol error: %s", why);
    st = rf_error_set(RF_ERR_CORRUPT, "%s: protocol error: %s", name, why);
out:
    free(acc.got);
    return st;
}

void cli_vars_invalidate(rf_ps_client *c, size_t ps)
{
    ps_cli_conn *p = &c->conns[ps];
    for (rf_ps_var *v = c->vars; v; v = v->next) {
        if (v->ps != ps)
            continue;
        v->stale = true;
        if (v->push_busy) {
            v->push_busy = false;
            c->pushes_busy--;
        }
    }
    p->num_dir = 0;
}

static const ps_entry *dir_find(const ps_cli_conn *p, const ps_spec *s)
{
    for (uint32_t i = 0; i < p->num_dir; i++)
        if (p->dir[i].spec.part == s->part &&
            strcmp(p->dir[i].spec.name, s->name) == 0)
            return &p->dir[i];
    return NULL;
}

static rf_status mismatch(const ps_cli_conn *p, const ps_spec *have,
                          const ps_spec *want)
{
    char name[340], a[384], b[384];
    ps_spec_describe(have, a, sizeof a);
    ps_spec_describe(want, b, sizeof b);
    return rf_error_set(RF_ERR_INVALID_ARG,
                        "variable '%s' part %u on %s has %s; this worker's "
                        "graph has %s",
                        want->name, want->part,
                        cli_ps_name(p, name, sizeof name), a, b);
}

/* The handle for spec bound to entry e (existing or new). */
static rf_status bind(ps_cli_conn *p, const ps_spec *spec, const ps_entry *e,
                      rf_ps_var **out)
{
    rf_ps_client *c = p->client;
    if (!ps_spec_same(&e->spec, spec))
        return mismatch(p, &e->spec, spec);
    rf_ps_var *v = c->vars;
    for (; v; v = v->next)
        if (v->ps == p->index && v->spec.part == spec->part &&
            strcmp(v->spec.name, spec->name) == 0)
            break;
    if (!v) {
        v = calloc(1, sizeof *v);
        if (!v)
            return rf_error_set(RF_ERR_NO_MEMORY, "ps client: out of memory");
        v->client = c;
        v->ps = p->index;
        v->next = c->vars;
        c->vars = v;
    } else if (v->push_busy) {
        v->push_busy = false;
        c->pushes_busy--;
    }
    v->spec = *spec;
    var_bind(v, p, e);
    v->push_op = (cli_op){.kind = CLI_OP_PUSH, .var = v, .conn = p};
    v->tag_op = (cli_op){.kind = CLI_OP_TAG, .var = v, .conn = p};
    v->wm_op = (cli_op){.kind = CLI_OP_WM, .var = v, .conn = p};
    *out = v;
    return RF_OK;
}

static rf_status check_args(rf_ps_client *c, size_t ps,
                            const rf_ps_shard_spec *spec, rf_ps_var **out,
                            const char *what, ps_spec *s)
{
    if (!c || !out)
        return rf_error_set(RF_ERR_INVALID_ARG, "%s: NULL argument", what);
    if (ps >= c->num_ps)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: ps task %zu, the cluster has %zu", what, ps,
                            c->num_ps);
    return ps_spec_from_public(spec, what, s);
}

rf_status rf_ps_create(rf_ps_client *c, size_t ps, const rf_ps_shard_spec *spec,
                       rf_ps_var **out)
{
    ps_spec s;
    rf_status st = check_args(c, ps, spec, out, "rf_ps_create", &s);
    if (st != RF_OK)
        return st;
    if (!c->opt.is_chief)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_create: '%s' part %u: only the chief "
                            "creates shards",
                            s.name, s.part);
    cli_lock(c);
    ps_cli_conn *p = &c->conns[ps];
    size_t len;
    const unsigned char *reply;
    size_t rlen;
    st = ps_enc_create_req(cli_req_buf(p), PS_REQ_MAX, cli_next_req_id(p), &s,
                           &len);
    if (st == RF_OK)
        st = cli_rpc(p, len, PS_MSG_CREATE_REPLY, &reply, &rlen);
    if (st == RF_OK) {
        static __thread ps_create_reply r;
        st = ps_dec_create_reply(reply, rlen, &r);
        cli_rpc_done(p);
        if (st != RF_OK) {
            char why[400], name[340];
            snprintf(why, sizeof why, "%s", rf_error_message());
            cli_conn_fail(p, "protocol error: %s", why);
            st = rf_error_set(RF_ERR_CORRUPT, "%s: protocol error: %s",
                              cli_ps_name(p, name, sizeof name), why);
        } else if (r.entry.shard_id >= p->num_dir) {
            st = cli_fetch_dir(p);
        }
    }
    const ps_entry *e = st == RF_OK ? dir_find(p, &s) : NULL;
    if (st == RF_OK && !e) {
        char name[340];
        st = rf_error_set(RF_ERR_CORRUPT,
                          "%s created '%s' part %u but its directory lacks it",
                          cli_ps_name(p, name, sizeof name), s.name, s.part);
    }
    if (st == RF_OK)
        st = bind(p, &s, e, out);
    cli_unlock(c);
    return st;
}

rf_status rf_ps_lookup(rf_ps_client *c, size_t ps, const rf_ps_shard_spec *spec,
                       rf_ps_var **out)
{
    ps_spec s;
    rf_status st = check_args(c, ps, spec, out, "rf_ps_lookup", &s);
    if (st != RF_OK)
        return st;
    cli_lock(c);
    ps_cli_conn *p = &c->conns[ps];
    long long deadline = rf_now_ms() + c->opt.lookup_timeout_ms;
    long long pause = 20;
    for (;;) {
        const ps_entry *e = dir_find(p, &s);
        if (e) {
            st = bind(p, &s, e, out);
            break;
        }
        if (rf_now_ms() >= deadline) {
            char name[340];
            st = rf_error_set(RF_ERR_TIMEOUT,
                              "variable '%s' part %u was not created on %s "
                              "within %g s (the chief creates it)",
                              s.name, s.part, cli_ps_name(p, name, sizeof name),
                              c->opt.lookup_timeout_ms / 1000.0);
            break;
        }
        if ((st = cli_fetch_dir(p)) != RF_OK)
            break;
        if (dir_find(p, &s))
            continue;
        long long left = deadline - rf_now_ms();
        long long nap = pause < left ? pause : left;
        /* through the engine: read-set waits go on meanwhile */
        if (nap > 0 && (st = cli_pause_us(c, (uint32_t)nap * 1000u,
                                          "rf_ps_lookup")) != RF_OK)
            break;
        pause = pause * 2 > 500 ? 500 : pause * 2;
    }
    cli_unlock(c);
    return st;
}

void rf_ps_var_get_info(const rf_ps_var *v, rf_ps_var_info *info)
{
    if (!v || !info)
        return;
    *info = (rf_ps_var_info){
        .name = v->spec.name,
        .part = v->spec.part,
        .ps_task = v->ps,
        .dtype = v->spec.dtype,
        .shape = v->spec.shape,
        .values_bytes = (size_t)v->e.values_bytes,
        .num_slots = v->e.num_slots,
        .record_bytes = (size_t)v->e.record_bytes,
        .rmw_bytes = (size_t)(v->e.record_bytes - PS_REC_RMW_OFF),
        .remote_addr = v->rec_addr,
        .rkey = v->rkey,
        .rows = (size_t)v->lay.rows,
        .row_bytes = (size_t)v->lay.row_bytes,
        .max_push_rows = v->lay.max_push_rows,
        .inbox_bytes = v->spec.trainable ? (size_t)v->lay.inbox_bytes : 0};
}
