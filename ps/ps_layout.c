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
