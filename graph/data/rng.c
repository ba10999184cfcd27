/* graph/data/rng.c: xoshiro256** seeded by splitmix64, unbiased bounded
 * integers and Fisher-Yates, exactly as specified in rng.h. */
#include "graph/data/rng.h"

uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

void rng_init(rf_rng *r, uint64_t seed, uint64_t stream)
{
    uint64_t m = stream;
    uint64_t state = seed ^ splitmix64(&m);
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&state);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t rng_next(rf_rng *r)
{
    uint64_t *s = r->s;
    const uint64_t result = rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint32_t rng_below(rf_rng *r, uint32_t bound)
{
    uint64_t m = (rng_next(r) >> 32) * (uint64_t)bound;
    uint32_t low = (uint32_t)m;
    if (low < bound) {
        uint32_t threshold = (uint32_t)(-bound) % bound;
        while (low < threshold) {
            m = (rng_next(r) >> 32) * (uint64_t)bound;
            low = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}

double rng_unit(rf_rng *r)
{
    return (double)(rng_next(r) >> 11) * 0x1p-53;
}

void rng_shuffle(rf_rng *r, uint32_t *a, size_t n)
{
    for (size_t i = n; i > 1; i--) {
        uint32_t j = rng_below(r, (uint32_t)i);
        uint32_t tmp = a[i - 1];
        a[i - 1] = a[j];
        a[j] = tmp;
    }
}
