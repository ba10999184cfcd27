/* ps/ps_server_gather.c: the ps-side gather of embedding rows
 * (rf_ps_gather_rows), what TensorFlow's Gather colocated with a shard
 * does: the ps CPU copies the rows. It exists as the baseline the
 * one-sided rf_ps_read_rows is measured against (bench/emb-lookup), not as
 * a faster path.
 *
 * The worker WRITEs the row indices into the gather area of its inbox for
 * the table, then WRITE_WITH_IMMs the 64-byte request (ps_layout.h: count,
 * field, the reply buffer's rkey, address and length); the service thread
 * copies the request and the indices out of the inbox (the peer may keep
 * writing it), checks them all (a bad count, field, reserved byte, index
 * or a reply too short for the rows: an error ack carrying the bad
 * position, nothing copied or written), copies each row into the inbox's
 * staging and checks the copy against its record's version and CRC32C
 * (ps_layout.h; re-copied while torn or owned by a writer, bounded),
 * WRITEs the staged rows into the
 * reply (exactly count x row_bytes at the address given, under the rkey
 * given) and acks on the same connection, so the rows land before the
 * ack. Memory: the inbox's gather area, bounded at CREATE by
 * max_inbox_bytes; nothing is allocated per request. */
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "ps/ps_server_internal.h"
#include "rdmaflow/byteorder.h"
#include "rdmaflow/clock.h"
#include "rdmaflow/status.h"

/* How long one row may stay odd (a writer mid-update) before the gather
 * is refused with RF_ERR_TIMEOUT. */
#define GATHER_ROW_WAIT_MS 1000

static void count_gather(rf_ps_server *s, bool ok, uint64_t rows)
{
    ps_count_request(s, &s->counters.gather_requests, &s->counters.gather_rows,
                     &s->counters.gather_refused, ok, rows);
}

/* Copies row r of the field at off into dst consistently: the record's
 * header, then its row into dst, checked as a worker checks a READ of the
 * record (ps_row_check: version even, the CRC that of the version and the
 * row), copied again while it is not, bounded. Which order the two copies
 * see other writers' stores in does not matter: the CRC tells. */
static rf_status copy_row(const ps_shard *sh, uint64_t off, uint64_t r,
                          unsigned char *dst)
{
    const ps_layout *l = &sh->layout;
    const unsigned char *src = sh->rec_ptr + ps_row_off(off, l->row_stride, r);
    size_t rb = (size_t)l->row_bytes;
    long long deadline = 0;
    for (uint64_t tries = 0;; tries++) {
        uint64_t v = __atomic_load_n(
            (const uint64_t *)(const void *)(src + PS_ROW_VER_OFF),
            __ATOMIC_ACQUIRE);
        uint32_t crc;
        memcpy(&crc, src + PS_ROW_CRC_OFF, 4);
        if (!(v & 1)) {
            memcpy(dst, src + PS_ROW_HDR, rb);
            if (ps_row_crc(v, dst, rb) == crc)
                return RF_OK;
        }
        if (tries == 64)
            deadline = rf_now_ms() + GATHER_ROW_WAIT_MS;
        else if (tries > 64 && rf_now_ms() >= deadline)
            return rf_error_set(RF_ERR_TIMEOUT,
                                "row %llu of '%s' part %u still being written "
                                "(or torn) after %d ms",
                                (unsigned long long)r, sh->spec.name,
                                sh->spec.part, GATHER_ROW_WAIT_MS);
    }
}

/* Checks the request and the indices (copied into s->sparse_idx); *bad
 * gets the failing position (UINT64_MAX: none). */
static rf_status check_request(rf_ps_server *s, const ps_shard *sh,
                               const unsigned char *req,
                               const unsigned char *idx_src, uint64_t *count,
                               uint64_t *field_off, uint64_t *dst,
                               uint32_t *rkey, uint64_t *bad)
{
    const ps_layout *l = &sh->layout;
    *bad = UINT64_MAX;
    *count = rf_get_le64(req);
    uint32_t field = rf_get_le32(req + 8);
    *rkey = rf_get_le32(req + 12);
    *dst = rf_get_le64(req + 16);
    uint64_t dst_len = rf_get_le64(req + 24);
    for (size_t i = 32; i < PS_GATHER_REQ_BYTES; i++)
        if (req[i])
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "ps %d: gather from '%s' part %u refused: "
                                "reserved byte %zu of the request is not zero",
                                s->opt.task_index, sh->spec.name, sh->spec.part,
                                i);
    if (*count > l->max_push_rows)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "ps %d: gather of %llu rows from '%s' part %u "
                            "(max_push_rows %u) refused",
                            s->opt.task_index, (unsigned long long)*count,
                            sh->spec.name, sh->spec.part, l->max_push_rows);
    if (field == RF_PS_FIELD_VALUES)
        *field_off = l->values_off;
    else if (field >= RF_PS_FIELD_SLOT0 &&
             field < RF_PS_FIELD_SLOT0 + l->num_slots)
        *field_off = l->slot_off[field - RF_PS_FIELD_SLOT0];
    else
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "ps %d: gather from '%s' part %u refused: no row "
                            "field %u (%u slots)",
                            s->opt.task_index, sh->spec.name, sh->spec.part,
                            field, l->num_slots);
    if (dst_len < *count * l->row_bytes)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "ps %d: gather of %llu rows from '%s' part %u "
                            "refused: the reply buffer has %llu bytes, the "
                            "rows %llu",
                            s->opt.task_index, (unsigned long long)*count,
                            sh->spec.name, sh->spec.part,
                            (unsigned long long)dst_len,
                            (unsigned long long)(*count * l->row_bytes));
    return ps_indices_copy(s, sh, idx_src, *count, "gather from", bad);
}

bool ps_gather_serve(ps_server_conn *c, ps_shard *sh, ps_inbox *ib,
                     uint32_t imm)
{
    rf_ps_server *s = c->srv;
    const ps_layout *l = &sh->layout;
    unsigned char *area =
        ib->ptr + ps_gather_off(l->max_push_rows, l->row_bytes);
    unsigned char req[PS_GATHER_REQ_BYTES];
    memcpy(req, area, sizeof req);
    uint64_t count = 0, off = 0, dst = 0, bad = UINT64_MAX;
    uint32_t rkey = 0;
    rf_status st = check_request(s, sh, req, area + PS_GATHER_REQ_BYTES, &count,
                                 &off, &dst, &rkey, &bad);
    unsigned char *stage =
        ib->ptr + ps_gather_stage_off(l->max_push_rows, l->row_bytes);
    for (uint64_t i = 0; st == RF_OK && i < count; i++)
        st = copy_row(sh, off, (uint64_t)s->sparse_idx[i],
                      stage + i * l->row_bytes);
    if (st == RF_OK && count) {
        /* The rows, then (below) the ack on the same connection: the
         * worker sees them before the ack's completion. */
        rf_mr *mr = s->arena.chunks[ib->loc.region].mr;
        rf_status ws = rf_write(c->ep, stage, (size_t)(count * l->row_bytes),
                                mr, dst, rkey, &c->stag);
        if (ws != RF_OK) {
            char why[300];
            snprintf(why, sizeof why, "writing gathered rows: %s",
                     rf_error_message());
            ps_conn_drop(c, why);
            return false;
        }
        c->sends_posted++;
    }
    uint64_t word;
    if (st == RF_OK) {
        count_gather(s, true, count);
        word = ps_ack_ok(count);
    } else {
        count_gather(s, false, 0);
        RF_LOG_WARN("%s", rf_error_message());
        word = bad == UINT64_MAX ? ps_ack_err(st) : ps_ack_err_at(st, bad);
    }
    return ps_send_ack(c, imm, word);
}
