/* optim/dedup.c: rf_optim_dedup(), TF's _deduplicate_indexed_slices
 * (python/training/optimizer.py): array_ops.unique of the indices (order of
 * first appearance) and unsorted_segment_sum of the gradient rows per unique
 * index (in order of appearance, from +0.0f), dropping the -1 entries of a
 * partitioned variable's other parts. An open-addressing table of positions
 * in the caller's scratch makes it O(n) expected, without allocation. */
#include <inttypes.h>
#include <stdint.h>

#include "rdmaflow/optim.h"
#include "rdmaflow/status.h"

static const char FN[] = "rf_optim_dedup";

/* Table capacity: the power of two >= 2n (load <= 1/2); 0 for n = 0 or a
 * size that does not fit. */
static size_t table_capacity(size_t n)
{
    if (n == 0 || n > SIZE_MAX / 4 / sizeof(size_t))
        return 0;
    size_t cap = 2;
    while (cap < 2 * n)
        cap *= 2;
    return cap;
}

size_t rf_optim_dedup_scratch_bytes(size_t n)
{
    if (n > SIZE_MAX / 4 / sizeof(size_t))
        return SIZE_MAX; /* no buffer is that large: rf_optim_dedup refuses */
    return table_capacity(n) * sizeof(size_t);
}

/* Fibonacci hashing of the index into [0, cap). */
static size_t slot_of(int64_t idx, size_t cap)
{
    uint64_t h = (uint64_t)idx * UINT64_C(0x9e3779b97f4a7c15);
    return (size_t)(h ^ (h >> 32)) & (cap - 1);
}

rf_status rf_optim_dedup(const int64_t *indices, size_t n, const float *grad,
                         size_t width, void *scratch, int64_t *out_indices,
                         float *out_grad, size_t *out_n)
{
    if (!out_n)
        return rf_error_set(RF_ERR_INVALID_ARG, "%s: out_n NULL", FN);
    *out_n = 0;
    if (n == 0)
        return RF_OK;
    const size_t cap = table_capacity(n);
    if (cap == 0 || (width > 0 && n > SIZE_MAX / sizeof(float) / width))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: n = %zu (width %zu) is too large", FN, n,
                            width);
    if (!indices || !scratch || !out_indices ||
        (width > 0 && (!grad || !out_grad)))
        return rf_error_set(RF_ERR_INVALID_ARG, "%s: %s NULL with n = %zu", FN,
                            !indices       ? "indices"
                            : !scratch     ? "scratch"
                            : !out_indices ? "out_indices"
                            : !grad        ? "grad"
                                           : "out_grad",
                            n);
    for (size_t i = 0; i < n; i++)
        if (indices[i] < -1)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "%s: indices[%zu] = %" PRId64
                                " is negative (only -1, an id of another "
                                "partition, may be)",
                                FN, i, indices[i]);

    /* table[s] = 1 + the unique position of the index hashed near s, or 0 */
    size_t *table = scratch;
    for (size_t s = 0; s < cap; s++)
        table[s] = 0;
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        const int64_t idx = indices[i];
        if (idx == -1)
            continue;
        size_t s = slot_of(idx, cap);
        while (table[s] != 0 && out_indices[table[s] - 1] != idx)
            s = (s + 1) & (cap - 1);
        const float *g = width > 0 ? grad + i * width : grad;
        if (table[s] == 0) {
            /* a new unique index: its row starts at +0.0f (setZero), then
             * += the first row (read before writing: out may be in) */
            const size_t pos = count++;
            table[s] = pos + 1;
            out_indices[pos] = idx;
            float *o = out_grad + pos * width;
            for (size_t j = 0; j < width; j++) {
                const float gj = g[j];
                o[j] = 0.0f + gj;
            }
        } else {
            float *o = out_grad + (table[s] - 1) * width;
            for (size_t j = 0; j < width; j++)
                o[j] = o[j] + g[j];
        }
    }
    *out_n = count;
    return RF_OK;
}
