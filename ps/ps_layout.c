/* ps/ps_layout.c: shard record layout, slot counts and dtype sizes
 * shared by the ps server, the client and the protocol checks (see
 * ps_layout.h). */
#include "ps/ps_layout.h"

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

rf_status ps_layout_compute(uint64_t values_bytes, uint32_t num_slots,
                            ps_layout *out)
{
    if (values_bytes > PS_MAX_SHARD_BYTES || num_slots > RF_OPTIM_MAX_SLOTS)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "shard of %llu bytes with %u slots is too large",
                            (unsigned long long)values_bytes, num_slots);
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
    rf_status st = ps_layout_compute((uint64_t)n * esize, ol.num_slots, &l);
    if (st != RF_OK)
        return st;
    *info = (rf_ps_var_info){.name = spec->name,
                             .part = spec->part,
                             .ps_task = ps_task,
                             .dtype = spec->dtype,
                             .shape = spec->shape,
                             .values_bytes = (size_t)l.values_bytes,
                             .num_slots = l.num_slots,
                             .record_bytes = (size_t)l.record_bytes,
                             .rmw_bytes =
                                 (size_t)(l.record_bytes - PS_REC_RMW_OFF)};
    return RF_OK;
}
