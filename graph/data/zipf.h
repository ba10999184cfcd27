/* graph/data/zipf.h: Zipf variates over a vocabulary of up to 10^9 ranks
 * without tables, by rejection-inversion (W. Hoermann and G. Derflinger,
 * "Rejection-inversion to generate variates from monotone discrete
 * distributions", ACM TOMACS 6(3), 1996): O(1) per draw, drawing from the
 * project's generator (rng.h). */
#ifndef RF_GRAPH_DATA_ZIPF_H
#define RF_GRAPH_DATA_ZIPF_H

#include <stdint.h>

#include "graph/data/rng.h"
#include "rdmaflow/status.h"

/* P(rank r) proportional to (r + 1)^-s for r in [0, n). */
typedef struct rf_zipf {
    int64_t n;
    double s;
    double area_lo; /* H(1.5) - h(1): the hat's area starts here */
    double area_hi; /* H(n + 0.5) */
} rf_zipf;

/* RF_ERR_INVALID_ARG unless 1 <= n <= 2^53 and 0 < s <= 10. */
rf_status zipf_init(rf_zipf *z, int64_t n, double s);

/* A rank in [0, n). */
int64_t zipf_draw(const rf_zipf *z, rf_rng *r);

#endif
