/* ps/ps_layout.c: shard record layout, slot counts and dtype sizes
 * shared by the ps server, the client and the protocol checks, and the
 * self-verifying row records of embedding tables (see ps_layout.h). */
#include "ps/ps_layout.h"

#include <isa-l/crc.h>
#include <string.h>

#include "rdmaflow/status.h"

int64_t ps_shape_numel(const rf_shape *shape)
{
    if (shape->rank < 0 || shape->rank > RF_MAX_RANK)
        return -1;
    const uint64_t limit = PS_MAX_SHARD_BYTES / 8;
    uint64_t n = 1;
    for (int i = 0; i < shape->rank; i++) {
        int64_t d = shape->dims[i];
        if (d < 0 || (uint64_t)d > limit)
            return -1;
        n *= (uint64_t)d;
        if (n > limit)
            return -1;
    }
    return (int64_t)n;
}

static uint64_t align_up(uint64_t v)
{
    return (v + PS_ALIGN - 1) & ~(uint64_t)(PS_ALIGN - 1);
}

rf_status ps_layout_full(uint64_t values_bytes, uint32_t num_slots,
                         uint64_t dim0, uint32_t max_push_rows, bool sync,
                         ps_layout *out)
{
    rf_status st = ps_layout_compute(values_bytes, num_slots, out);
    if (st != RF_OK)
        return st;
    out->inbox_bytes = ps_inbox_bytes(values_bytes, sync);
    if (!max_push_rows)
        return RF_OK;
    if (dim0 == 0 || values_bytes % dim0 || values_bytes / dim0 == 0 ||
        max_push_rows > PS_MAX_PUSH_ROWS)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "a table of %llu rows in %llu bytes pushing up to "
                            "%u rows: needs rows >= 1 of >= 1 element and at "
                            "most %u rows per push",
                            (unsigned long long)dim0,
                            (unsigned long long)values_bytes, max_push_rows,
                            PS_MAX_PUSH_ROWS);
    out->rows = dim0;
    out->row_bytes = values_bytes / dim0;
    out->max_push_rows = max_push_rows;
    /* every field an array of row records (ps_layout.h) */
    out->row_stride = ps_row_stride(out->row_bytes);
    if (dim0 > PS_MAX_SHARD_BYTES / out->row_stride)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "a table of %llu rows of %llu bytes (%llu-byte "
                            "records) is above the limit of %llu bytes",
                            (unsigned long long)dim0,
                            (unsigned long long)out->row_bytes,
                            (unsigned long long)out->row_stride,
                            (unsigned long long)PS_MAX_SHARD_BYTES);
    uint64_t span = align_up(dim0 * out->row_stride);
    out->record_bytes = PS_REC_HEADER + span * (1 + num_slots);
    for (uint32_t i = 0; i < num_slots; i++)
        out->slot_off[i] = PS_REC_HEADER + span * (1 + i);
    out->inbox_bytes = ps_gather_stage_off(max_push_rows, out->row_bytes) +
                       (uint64_t)max_push_rows * out->row_bytes;
    return RF_OK;
}

rf_status ps_layout_compute(uint64_t values_bytes, uint32_t num_slots,
                            ps_layout *out)
{
    if (values_bytes > PS_MAX_SHARD_BYTES || num_slots > RF_OPTIM_MAX_SLOTS)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "shard of %llu bytes with %u slots: the limits "
                            "are %llu bytes and %d slots",
                            (unsigned long long)values_bytes, num_slots,
                            (unsigned long long)PS_MAX_SHARD_BYTES,
                            RF_OPTIM_MAX_SLOTS);
    *out = (ps_layout){.values_bytes = values_bytes,
                       .values_off = PS_REC_HEADER,
                       .num_slots = num_slots};
    uint64_t step = align_up(values_bytes);
    uint64_t off = PS_REC_HEADER + step;
    for (uint32_t i = 0; i < num_slots; i++) {
        out->slot_off[i] = off;
        off += step;
    }
    out->record_bytes = off;
    return RF_OK;
}

rf_status rf_ps_shard_spec_info(const rf_ps_shard_spec *spec, size_t ps_task,
                                rf_ps_var_info *info)
{
    if (!spec || !info)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_shard_spec_info: spec and info required");
    int64_t n = ps_shape_numel(&spec->shape);
    size_t esize = rf_dtype_size(spec->dtype);
    if (n < 0 || esize == 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "shard '%s': bad shape or dtype",
                            spec->name ? spec->name : "");
    rf_optim_layout ol = {0};
    if (spec->trainable) {
        rf_status st = rf_optim_layout_get(&spec->optim, &ol);
        if (st != RF_OK)
            return st;
    }
    ps_layout l = {0};
    if (spec->max_push_rows && spec->shape.rank < 1)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "shard '%s': a table (max_push_rows %u) needs "
                            "rank >= 1",
                            spec->name ? spec->name : "", spec->max_push_rows);
    rf_status st = ps_layout_full(
        (uint64_t)n * esize, ol.num_slots,
        spec->shape.rank >= 1 ? (uint64_t)spec->shape.dims[0] : 0,
        spec->max_push_rows, spec->replicas_to_aggregate > 0, &l);
    if (st != RF_OK)
        return st;
    *info = (rf_ps_var_info){
        .name = spec->name,
        .part = spec->part,
        .ps_task = ps_task,
        .dtype = spec->dtype,
        .shape = spec->shape,
        .values_bytes = (size_t)l.values_bytes,
        .num_slots = l.num_slots,
        .record_bytes = (size_t)l.record_bytes,
        .rmw_bytes = (size_t)(l.record_bytes - PS_REC_RMW_OFF),
        .rows = (size_t)l.rows,
        .row_bytes = (size_t)l.row_bytes,
        .max_push_rows = l.max_push_rows,
        .inbox_bytes = spec->trainable ? (size_t)l.inbox_bytes : 0};
    return RF_OK;
}

uint32_t ps_row_crc(uint64_t version, const void *row, size_t len)
{
    unsigned char v[8];
    memcpy(v, &version, 8);
    uint32_t crc = crc32_iscsi(v, 8, 0);
    return crc32_iscsi((unsigned char *)(uintptr_t)row, (int)len, crc);
}

void ps_row_seal(unsigned char *rec, uint64_t version, size_t len)
{
    uint32_t crc = ps_row_crc(version, rec + PS_ROW_HDR, len);
    memcpy(rec + PS_ROW_CRC_OFF, &crc, 4);
    memset(rec + PS_ROW_CRC_OFF + 4, 0, 4);
    memcpy(rec + PS_ROW_VER_OFF, &version, 8);
}

void ps_row_publish(unsigned char *rec, uint64_t version, size_t len)
{
    uint32_t crc = ps_row_crc(version, rec + PS_ROW_HDR, len);
    memcpy(rec + PS_ROW_CRC_OFF, &crc, 4);
    memset(rec + PS_ROW_CRC_OFF + 4, 0, 4);
    __atomic_store_n((uint64_t *)(void *)(rec + PS_ROW_VER_OFF), version,
                     __ATOMIC_RELEASE);
}

ps_row_state ps_row_check(const unsigned char *rec, size_t len,
                          uint64_t *version)
{
    uint64_t v;
    uint32_t crc;
    memcpy(&v, rec + PS_ROW_VER_OFF, 8);
    memcpy(&crc, rec + PS_ROW_CRC_OFF, 4);
    if (version)
        *version = v;
    if (v & 1)
        return PS_ROW_BUSY;
    return ps_row_crc(v, rec + PS_ROW_HDR, len) == crc ? PS_ROW_OK
                                                       : PS_ROW_TORN;
}
