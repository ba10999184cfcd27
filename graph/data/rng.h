/* graph/data/rng.h: the graph layer's pseudo-random numbers (the data
 * pipeline's and the variable initializers'), specified exactly so that
 * shuffles, shards and initial values are identical on every machine:
 * xoshiro256** (Blackman & Vigna) seeded from splitmix64, Lemire's unbiased
 * bounded integers, and a Fisher-Yates shuffle. */
#ifndef RF_GRAPH_DATA_RNG_H
#define RF_GRAPH_DATA_RNG_H

#include <stddef.h>
#include <stdint.h>

typedef struct rf_rng {
    uint64_t s[4];
} rf_rng;

/* splitmix64: advances *state by 0x9e3779b97f4a7c15 and returns the mixed
 * value. */
uint64_t splitmix64(uint64_t *state);

/* Seeds stream `stream` of `seed`: the four state words are successive
 * splitmix64 outputs starting from seed ^ m, where m is the first splitmix64
 * output from state `stream` (so distinct streams of one seed, e.g. epochs,
 * are unrelated). */
void rng_init(rf_rng *r, uint64_t seed, uint64_t stream);

/* Next xoshiro256** output. */
uint64_t rng_next(rf_rng *r);

/* Uniform integer in [0, bound) for 0 < bound < 2^32, unbiased (Lemire's
 * multiply-and-reject on the high 32 bits of each output). */
uint32_t rng_below(rf_rng *r, uint32_t bound);

/* Uniform double in [0, 1): the top 53 bits of one output times 2^-53. */
double rng_unit(rf_rng *r);

/* Fisher-Yates: for i = n-1 down to 1, swap a[i] with a[rng_below(i+1)]. */
void rng_shuffle(rf_rng *r, uint32_t *a, size_t n);

#endif
