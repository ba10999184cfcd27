/* tests/fabric/pattern.h: the seeded data pattern every transfer is checked
 * with. The byte at logical position pos for seed s is a hash of (s, pos), so
 * any sub-range can be produced and verified independently; positions are
 * offsets inside the target region (or receive buffer) the data lands in. */
#ifndef RF_TESTS_FABRIC_PATTERN_H
#define RF_TESTS_FABRIC_PATTERN_H

#include <stddef.h>
#include <stdint.h>

#define PAT_OK SIZE_MAX

/* Memory the fabric writes from its own threads (target regions, like a NIC
 * would) is read and written by the suite without synchronisation a race
 * detector can see; these accessors are not instrumented by ThreadSanitizer.
 * Correct ordering is what the suite checks. */
#if defined(__SANITIZE_THREAD__)
#define RT_NO_TSAN __attribute__((no_sanitize("thread")))
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RT_NO_TSAN __attribute__((no_sanitize("thread")))
#endif
#endif
#ifndef RT_NO_TSAN
#define RT_NO_TSAN
#endif

/* 8-byte load/store of fabric-written memory (p 8-byte aligned). */
uint64_t rt_peek_u64(const void *p);
void rt_poke_u64(void *p, uint64_t v);

/* buf[i] = pattern(seed, pos0 + i) for i < len. */
void pat_fill(void *buf, size_t len, uint64_t seed, uint64_t pos0);

/* Index of the first i < len with buf[i] != pattern(seed, pos0 + i), or
 * PAT_OK. */
size_t pat_check(const void *buf, size_t len, uint64_t seed, uint64_t pos0);

uint8_t pat_byte(uint64_t seed, uint64_t pos);

/* A 64-bit mix, used for seeds and values. */
uint64_t pat_mix(uint64_t x);

#endif
