/* ps/ps_client_gather.c: rf_ps_gather_rows, the worker side of the
 * ps-side gather (ps/ps_server_gather.c has the protocol). It rides on a
 * table's apply=ps push slot (push_busy, the sequence in the immediate, the
 * ack ring), so an ack finds its table as a push's does; push_gather tells
 * the ack handler to keep the outcome for the gather's caller instead of
 * the next rf_ps_push_wait. Per request: a WRITE of the indices (encoded
 * little-endian into the table's registered request buffer) into the
 * inbox's gather area, then the WRITE_WITH_IMM of the 64-byte request
 * naming the reply buffer (its rkey, address and exactly the bytes of the
 * rows it asks for). A set larger than max_push_rows goes in pieces, one
 * in flight per table; different tables' requests are in flight together.
 * Every index and buffer is checked before anything is posted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ps/ps_client_internal.h"
#include "rdmaflow/byteorder.h"
#include "rdmaflow/status.h"

void cli_gather_on_ack(rf_ps_var *v, uint64_t word)
{
    if (!(word & PS_ACK_ERROR) || v->gather_status != RF_OK)
        return;
    v->gather_status = (rf_status)(-(int32_t)(uint32_t)word);
    v->gather_pos = ps_ack_err_pos(word);
}

void cli_gather_failed(rf_ps_var *v, rf_status st)
{
    if (v->gather_status == RF_OK) {
        v->gather_status = st;
        v->gather_pos = 0;
    }
}

static bool is_reply_mr(const rf_ps_client *c, const rf_mr *mr)
{
    for (const cli_reg *r = c->regs; r; r = r->next)
        if (r->mr == mr)
            return r->reply;
    return false;
}

/* A set's buffer must be in a region rf_ps_client_register_reply made. */
static rf_status check_reply_mr(rf_ps_client *c, const rf_ps_rows *s, size_t i,
                                const char *what)
{
    if (!s->n || is_reply_mr(c, s->mr))
        return RF_OK;
    return rf_error_set(RF_ERR_INVALID_ARG,
                        "%s: set %zu ('%s' part %u): its buffer's region was "
                        "not registered with rf_ps_client_register_reply (the "
                        "ps WRITEs the rows there)",
                        what, i, s->var->spec.name, s->var->spec.part);
}

/* The outcome of v's last gather (v idle), as the caller's status. */
static rf_status gather_result(rf_ps_client *c, rf_ps_var *v,
                               const rf_ps_rows *sets, const char *what)
{
    if (!v->push_gather || v->gather_status == RF_OK)
        return RF_OK;
    rf_status st = v->gather_status;
    v->gather_status = RF_OK;
    v->push_gather = false;
    char name[340];
    cli_ps_name(&c->conns[v->ps], name, sizeof name);
    const rf_ps_rows *s = &sets[v->gather_set];
    if (v->gather_pos) {
        size_t pos = v->gather_base + (size_t)(v->gather_pos - 1);
        return rf_error_set(st,
                            "%s: %s refused the gather from table '%s' part "
                            "%u: index %lld at position %zu of set %zu (%s; "
                            "nothing was copied)",
                            what, name, v->spec.name, v->spec.part,
                            pos < s->n ? (long long)s->rows[pos] : -1LL, pos,
                            v->gather_set, rf_status_string(st));
    }
    return rf_error_set(st,
                        "%s: the gather from table '%s' part %u on %s failed "
                        "(%s; the ps's log says why)",
                        what, v->spec.name, v->spec.part, name,
                        rf_status_string(st));
}

/* Posts the request for rows [first, first + m) of set i. */
static rf_status post_request(rf_ps_client *c, const rf_ps_rows *s, size_t i,
                              size_t first, size_t m)
{
    rf_ps_var *v = s->var;
    ps_cli_conn *p = &c->conns[v->ps];
    const ps_layout *l = &v->lay;
    rf_status st = RF_OK;
    if (!v->gather_req &&
        (st = cli_pool_alloc(c, PS_GATHER_REQ_BYTES + 8ull * l->max_push_rows,
                             &v->gather_req, &v->gather_req_mr)) != RF_OK)
        return st;
    uint64_t off = 0;
    cli_field_off(v, s->field, &off, "rf_ps_gather_rows");
    rf_mr_desc d;
    rf_mr_describe(s->mr, &d);
    const unsigned char *buf =
        (const unsigned char *)s->buf + first * (size_t)l->row_bytes;
    unsigned char *req = v->gather_req;
    memset(req, 0, PS_GATHER_REQ_BYTES);
    rf_put_le64(req, (uint64_t)m);
    rf_put_le32(req + 8, (uint32_t)s->field);
    rf_put_le32(req + 12, d.rkey);
    rf_put_le64(req + 16,
                d.addr +
                    (uint64_t)(buf - (const unsigned char *)rf_mr_addr(s->mr)));
    rf_put_le64(req + 24, (uint64_t)m * l->row_bytes);
    for (size_t k = 0; k < m; k++)
        rf_put_le64(req + PS_GATHER_REQ_BYTES + 8 * k,
                    (uint64_t)s->rows[first + k]);

    cli_push_begin(v, false, true);
    v->gather_status = RF_OK;
    v->gather_pos = 0;
    v->gather_set = i;
    v->gather_base = first;
    uint64_t area =
        v->inbox_addr + ps_gather_off(l->max_push_rows, l->row_bytes);
    rf_wr wrs[2] = {
        {.op = RF_OP_WRITE,
         .context = &v->tag_op,
         .local = req + PS_GATHER_REQ_BYTES,
         .len = 8 * m,
         .local_mr = v->gather_req_mr,
         .remote_addr = area + PS_GATHER_REQ_BYTES,
         .rkey = v->inbox_rkey},
        {.op = RF_OP_WRITE_IMM,
         .context = &v->push_op,
         .local = req,
         .len = PS_GATHER_REQ_BYTES,
         .local_mr = v->gather_req_mr,
         .remote_addr = area,
         .rkey = v->inbox_rkey,
         .imm = ps_imm_make(v->e.shard_id, v->push_seq)},
    };
    size_t done = 0;
    st = cli_post_n(p, wrs, 2, &done);
    if (st != RF_OK && done < 2) {
        /* The write_imm was not posted: nothing is in flight for v. */
        v->push_busy = false;
        v->push_gather = false;
        c->pushes_busy--;
        p->pushes_inflight--;
    }
    return st;
}

static rf_status gather_rows(rf_ps_client *c, const rf_ps_rows *sets,
                             size_t nsets)
{
    const char *what = "rf_ps_gather_rows";
    rf_status st =
        cli_rows_check_sets(c, sets, nsets, what, check_reply_mr, NULL);
    if (st != RF_OK || !nsets)
        return st;
    if (nsets > c->gt_cap) {
        size_t *d = realloc(c->gt_done, nsets * sizeof *d);
        if (!d)
            return rf_error_set(RF_ERR_NO_MEMORY, "ps client: out of memory");
        c->gt_done = d;
        c->gt_cap = nsets;
    }
    size_t *done = c->gt_done;
    memset(done, 0, nsets * sizeof *done);
    rf_status first = RF_OK;
    char first_err[1200] = "";
    bool more = true;
    while (more && first == RF_OK) {
        more = false;
        for (size_t i = 0; i < nsets && first == RF_OK; i++) {
            const rf_ps_rows *s = &sets[i];
            if (done[i] >= s->n)
                continue;
            rf_ps_var *v = s->var;
            /* its previous request (or push) first, and room at its ps */
            st = cli_push_wait_var(c, v, what);
            if (st == RF_OK)
                st = gather_result(c, v, sets, what);
            if (st == RF_OK)
                st = cli_conn_check(&c->conns[v->ps]);
            size_t m = s->n - done[i];
            if (m > v->lay.max_push_rows)
                m = v->lay.max_push_rows;
            if (st == RF_OK)
                st = post_request(c, s, i, done[i], m);
            if (st != RF_OK) {
                first = st;
                snprintf(first_err, sizeof first_err, "%s", rf_error_message());
                break;
            }
            done[i] += m;
            more |= done[i] < s->n;
        }
    }
    /* Every request in flight is waited for (the rows land in the
     * caller's buffers), failures or not. */
    for (size_t i = 0; i < nsets; i++) {
        rf_ps_var *v = sets[i].var;
        if (!sets[i].n)
            continue;
        st = RF_OK;
        if (v->push_busy)
            st = cli_push_wait_var(c, v, what);
        if (st == RF_OK)
            st = gather_result(c, v, sets, what);
        if (st != RF_OK && first == RF_OK) {
            first = st;
            snprintf(first_err, sizeof first_err, "%s", rf_error_message());
        }
    }
    if (first != RF_OK)
        return rf_error_set(first, "%s", first_err);
    return RF_OK;
}

rf_status rf_ps_gather_rows(rf_ps_client *c, const rf_ps_rows *sets,
                            size_t nsets)
{
    return cli_rows_locked(c, gather_rows, sets, nsets, "rf_ps_gather_rows");
}
