/* tests/unit/graph/graph_test.h: shared helpers of the graph unit tests (their
 * checks are tests/common/check.h): a deterministic test RNG and one-shot
 * evaluation of a node. */
#ifndef RF_TEST_GRAPH_TEST_H
#define RF_TEST_GRAPH_TEST_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/graph.h"
#include "tests/common/check.h"

static uint64_t test_rng_state = 0x12345678abcdefull;

static inline void test_seed(uint64_t s)
{
    test_rng_state = s * 0x9e3779b97f4a7c15ull + 1;
}

static inline double test_uniform(void) /* [0, 1) */
{
    test_rng_state =
        test_rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(test_rng_state >> 11) * 0x1.0p-53;
}

static inline void test_fill(float *x, size_t n, double lo, double hi)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(lo + (hi - lo) * test_uniform());
}

/* Runs one fetch with up to 4 feeds on ex; copies the result (float, int32,
 * int64 or bool as 0/1) into out as doubles. Returns the element count or
 * -1 on error. */
static inline int64_t test_eval(rf_executor *ex, rf_graph *g, rf_node *fetch,
                                rf_node *const *feeds,
                                const rf_tensor *feed_values, size_t nfeed,
                                double *out, size_t cap)
{
    rf_plan *p = NULL;
    rf_tensor t;
    if (rf_plan_create(ex, g, &fetch, 1, feeds, nfeed, NULL, 0, &p) != RF_OK)
        return -1;
    if (rf_plan_run(p, feed_values, &t) != RF_OK) {
        rf_plan_destroy(p);
        return -1;
    }
    int64_t n = rf_shape_numel(&t.shape);
    for (int64_t i = 0; i < n && (size_t)i < cap; i++) {
        switch (t.dtype) {
        case RF_F32:
            out[i] = ((float *)t.data)[i];
            break;
        case RF_I32:
            out[i] = ((int32_t *)t.data)[i];
            break;
        case RF_I64:
            out[i] = (double)((int64_t *)t.data)[i];
            break;
        case RF_BOOL:
            out[i] = ((uint8_t *)t.data)[i];
            break;
        }
    }
    rf_plan_destroy(p);
    return n;
}

#endif
