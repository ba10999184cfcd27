/* tests/fabric/pattern.c: the seeded data pattern (see pattern.h). */
#include "tests/fabric/pattern.h"

uint64_t pat_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t word(uint64_t seed, uint64_t index)
{
    return pat_mix(index ^ (seed * 0xd6e8feb86659fd93ull));
}

uint8_t pat_byte(uint64_t seed, uint64_t pos)
{
    return (uint8_t)(word(seed, pos >> 3) >> ((pos & 7) * 8));
}

RT_NO_TSAN void pat_fill(void *buf, size_t len, uint64_t seed, uint64_t pos0)
{
    unsigned char *p = buf;
    size_t i = 0;
    while (i < len) {
        uint64_t pos = pos0 + i;
        uint64_t w = word(seed, pos >> 3);
        for (unsigned b = (unsigned)(pos & 7); b < 8 && i < len; b++, i++)
            p[i] = (unsigned char)(w >> (b * 8));
    }
}

RT_NO_TSAN size_t pat_check(const void *buf, size_t len, uint64_t seed,
                            uint64_t pos0)
{
    const unsigned char *p = buf;
    size_t i = 0;
    while (i < len) {
        uint64_t pos = pos0 + i;
        uint64_t w = word(seed, pos >> 3);
        for (unsigned b = (unsigned)(pos & 7); b < 8 && i < len; b++, i++)
            if (p[i] != (unsigned char)(w >> (b * 8)))
                return i;
    }
    return PAT_OK;
}

RT_NO_TSAN uint64_t rt_peek_u64(const void *p)
{
    return *(const volatile uint64_t *)p;
}

RT_NO_TSAN void rt_poke_u64(void *p, uint64_t v)
{
    *(volatile uint64_t *)p = v;
}
