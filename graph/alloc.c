/* graph/alloc.c: the counted allocator every allocation of the graph library
 * goes through, so tests can check that steady-state steps allocate nothing
 * (rf_graph_alloc_stats_get). */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "graph/graph_internal.h"

static atomic_uint_fast64_t n_allocs, n_frees;
static atomic_int_fast64_t live_bytes;

/* A 16-byte header in front of every block keeps its size for the
 * live-bytes count (and keeps malloc's 16-byte alignment). */
#define HDR 16

void *gmalloc(size_t n)
{
    unsigned char *p = malloc(n + HDR);
    if (!p)
        return NULL;
    memcpy(p, &n, sizeof n);
    atomic_fetch_add(&n_allocs, 1);
    atomic_fetch_add(&live_bytes, (int_fast64_t)n);
    return p + HDR;
}

void *gcalloc(size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size)
        return NULL;
    void *p = gmalloc(count * size);
    if (p)
        memset(p, 0, count * size);
    return p;
}

void *grealloc(void *p, size_t n)
{
    if (!p)
        return gmalloc(n);
    unsigned char *base = (unsigned char *)p - HDR;
    size_t old;
    memcpy(&old, base, sizeof old);
    unsigned char *q = realloc(base, n + HDR);
    if (!q)
        return NULL;
    memcpy(q, &n, sizeof n);
    atomic_fetch_add(&n_allocs, 1);
    atomic_fetch_add(&live_bytes, (int_fast64_t)n - (int_fast64_t)old);
    return q + HDR;
}

void gfree(void *p)
{
    if (!p)
        return;
    unsigned char *base = (unsigned char *)p - HDR;
    size_t n;
    memcpy(&n, base, sizeof n);
    atomic_fetch_add(&n_frees, 1);
    atomic_fetch_sub(&live_bytes, (int_fast64_t)n);
    free(base);
}

char *gstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = gmalloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* Zeroed blocks this large are anonymous mappings: zero pages the kernel
 * provides on first touch, so a buffer never written costs no memory (a
 * distributed worker's graph variable of an embedding table, which lives
 * on the ps). */
#define MMAP_MIN ((size_t)4 << 20)

void *galloc_aligned(size_t n)
{
    void *p = NULL;
    size_t len = rf_align_up(n ? n : 1, RF_ALIGN);
    if (len >= MMAP_MIN) {
        p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
        if (p == MAP_FAILED)
            return NULL;
    } else {
        if (posix_memalign(&p, RF_ALIGN, len) != 0)
            return NULL;
        memset(p, 0, len);
    }
    atomic_fetch_add(&n_allocs, 1);
    atomic_fetch_add(&live_bytes, (int_fast64_t)n);
    return p;
}

void gfree_aligned(void *p, size_t n)
{
    if (!p)
        return;
    atomic_fetch_add(&n_frees, 1);
    atomic_fetch_sub(&live_bytes, (int_fast64_t)n);
    size_t len = rf_align_up(n ? n : 1, RF_ALIGN);
    if (len >= MMAP_MIN)
        munmap(p, len);
    else
        free(p);
}

rf_graph_alloc_stats rf_graph_alloc_stats_get(void)
{
    rf_graph_alloc_stats s = {
        .allocations = atomic_load(&n_allocs),
        .frees = atomic_load(&n_frees),
        .live_bytes = atomic_load(&live_bytes),
    };
    return s;
}
