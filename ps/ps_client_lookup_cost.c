/* ps/ps_client_lookup_cost.c: the cost model of a table shard's two lookup
 * ways (rf_ps_lookup_cost, rdmaflow/ps.h): one-sided row READs
 * (rf_ps_read_rows) against the ps-side gather (rf_ps_gather_rows),
 * measured by timing both against the shard's own ps, a line per way
 * through two probe sizes. The session's embedding_lookup=auto
 * (session/session_lookup_way.c) and bench/emblookup decide from it; it
 * only times public calls, so it knows nothing of how either way works. */
#include <stdlib.h>

#include "rdmaflow/clock.h"
#include "rdmaflow/ps.h"
#include "rdmaflow/status.h"

/* At most this many rows; each size timed this many times. */
#define PROBE_MAX_ROWS 256u
#define PROBE_REPS     7

enum { WAY_ROWS = 0, WAY_GATHER = 1 };

static rf_status probe_once(rf_ps_client *c, rf_ps_rows *set, int way, size_t n,
                            uint64_t *ns)
{
    set->n = n;
    uint64_t t0 = rf_now_ns();
    rf_status st = way == WAY_GATHER ? rf_ps_gather_rows(c, set, 1)
                                     : rf_ps_read_rows(c, set, 1);
    *ns = rf_now_ns() - t0;
    return st;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The line through (1, t1) and (n, tn), neither part negative. */
static void fit(double t1, double tn, size_t n, double *fixed, double *per)
{
    *per = n > 1 && tn > t1 ? (tn - t1) / (double)(n - 1) : 0;
    *fixed = t1 > *per ? t1 - *per : 0;
}

rf_status rf_ps_lookup_cost_measure(rf_ps_client *c, rf_ps_var *var, void *buf,
                                    rf_mr *mr, size_t max_rows,
                                    rf_ps_lookup_cost *out)
{
    if (!c || !var || !buf || !mr || !out || !max_rows)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_lookup_cost_measure: client, var, buf, mr, "
                            "out and max_rows > 0 are required");
    rf_ps_var_info info;
    rf_ps_var_get_info(var, &info);
    size_t n = max_rows < PROBE_MAX_ROWS ? max_rows : PROBE_MAX_ROWS;
    if (info.rows < n)
        n = info.rows;
    if (info.max_push_rows < n)
        n = info.max_push_rows;
    if (n < 1)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_lookup_cost_measure: '%s' part %u is not "
                            "an embedding table with rows",
                            info.name, info.part);
    /* rows spread over the whole shard, as a batch's are (the first rows
     * alone would stay in the caches and flatter the READs of a large
     * table) */
    int64_t rows[PROBE_MAX_ROWS];
    size_t stride = info.rows / n;
    for (size_t r = 0; r < n; r++)
        rows[r] = (int64_t)(r * stride);
    rf_ps_rows set = {.var = var,
                      .field = RF_PS_FIELD_VALUES,
                      .rows = rows,
                      .buf = buf,
                      .mr = mr};
    uint64_t ns[2][2][PROBE_REPS], one;
    rf_status st = RF_OK;
    for (int w = 0; w < 2 && st == RF_OK; w++) /* warm-up: first requests */
        st = probe_once(c, &set, w, n, &one);
    for (int r = 0; r < PROBE_REPS && st == RF_OK; r++)
        for (int k = 0; k < 2 && st == RF_OK; k++)
            for (int w = 0; w < 2 && st == RF_OK; w++)
                st = probe_once(c, &set, w, k ? n : 1, &ns[w][k][r]);
    if (st != RF_OK)
        return rf_error_set(st, "measuring the lookups of '%s' part %u: %s",
                            info.name, info.part, rf_error_message());
    double t[2][2];
    for (int w = 0; w < 2; w++)
        for (int k = 0; k < 2; k++) {
            qsort(ns[w][k], PROBE_REPS, sizeof ns[w][k][0], cmp_u64);
            t[w][k] = (double)ns[w][k][PROBE_REPS / 2] / 1e3;
        }
    out->probe_rows = (uint32_t)n;
    fit(t[WAY_ROWS][0], t[WAY_ROWS][1], n, &out->rows_fixed_us,
        &out->rows_per_row_us);
    fit(t[WAY_GATHER][0], t[WAY_GATHER][1], n, &out->gather_fixed_us,
        &out->gather_per_row_us);
    return RF_OK;
}

bool rf_ps_lookup_cost_gather_cheaper(const rf_ps_lookup_cost *c, double n)
{
    return c->gather_fixed_us + c->gather_per_row_us * n <
           c->rows_fixed_us + c->rows_per_row_us * n;
}
