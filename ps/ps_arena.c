/* ps/ps_arena.c: NUMA-bound, once-registered chunks and 64-byte
 * aligned bump allocation inside them (see ps_arena.h). */
#include "ps/ps_arena.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <stdio.h>

#include "core/log.h"
#include "ps/ps_layout.h"
#include "rdmaflow/clock.h"
#include "rdmaflow/status.h"

#define PAGE 4096u
#define HUGE (2u << 20)

/* A large record's chunk: huge pages where the kernel has them, bound to
 * the arena's node (as rf_topology_alloc binds the others), untouched.
 * MAP_HUGETLB without MAP_NORESERVE: the mapping fails unless the pool
 * holds enough huge pages (with it, a touch past the pool is SIGBUS). */
static rf_status map_large(ps_arena *a, size_t len, bool try_huge, void **out,
                           bool *huge)
{
    void *p = MAP_FAILED;
    *huge = false;
#ifdef MAP_HUGETLB
    if (try_huge && len % HUGE == 0) {
        p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
        *huge = p != MAP_FAILED;
    }
#endif
    if (p == MAP_FAILED) {
        p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
        if (p == MAP_FAILED)
            return rf_error_set(RF_ERR_NO_MEMORY,
                                "ps arena: mapping %zu bytes: %s", len,
                                strerror(errno));
#ifdef MADV_HUGEPAGE
        (void)madvise(p, len, MADV_HUGEPAGE); /* a hint: THP may be off */
#endif
    }
    int node = a->binding.numa_node;
    if (a->binding.mode != RF_BIND_NONE && node >= 0 && node < 1024) {
        unsigned long mask[1024 / (8 * sizeof(unsigned long))] = {0};
        mask[node / (8 * sizeof(unsigned long))] |=
            1ul << (node % (8 * sizeof(unsigned long)));
        /* MPOL_BIND = 2 (linux/mempolicy.h) */
        if (syscall(SYS_mbind, p, len, 2, mask, 1024ul, 0u) != 0)
            RF_LOG_WARN("ps arena: binding %zu bytes to NUMA node %d refused "
                        "(%s); left unbound",
                        len, node, strerror(errno));
    }
    *out = p;
    return RF_OK;
}

static rf_status add_chunk(ps_arena *a, size_t len)
{
    if (a->n >= PS_MAX_REGIONS)
        return rf_error_set(RF_ERR_NO_MEMORY,
                            "ps arena: %u chunks, the limit a directory can "
                            "describe (%u)",
                            a->n, PS_MAX_REGIONS);
    if (a->max_bytes && (len > a->max_bytes || a->total > a->max_bytes - len))
        return rf_error_set(RF_ERR_NO_MEMORY,
                            "ps arena: %zu more bytes would exceed the limit "
                            "of %zu (RF_PS_ARENA_MAX_MB); %zu in use",
                            len, a->max_bytes, a->total);
    if (a->n == a->cap) {
        uint32_t cap = a->cap ? 2 * a->cap : 16;
        ps_chunk *c = realloc(a->chunks, cap * sizeof *c);
        if (!c)
            return rf_error_set(RF_ERR_NO_MEMORY, "ps arena: out of memory");
        a->chunks = c;
        a->cap = cap;
    }
    void *p = NULL;
    bool mapped = len > a->chunk_bytes, huge = false;
    rf_status st = mapped ? map_large(a, len, true, &p, &huge)
                          : rf_topology_alloc(a->topo, &a->binding, len, &p);
    if (st != RF_OK)
        return st;
    rf_mr *mr = NULL;
    long long t0 = rf_now_ms();
    st = rf_mr_reg(a->fabric, p, len, RF_ACCESS_ALL, &mr);
    if (st != RF_OK && huge) {
        /* a provider that takes only ordinary anonymous memory (shm moves
         * it into a memfd): the same without MAP_HUGETLB */
        RF_LOG_WARN("ps arena: registering %zu bytes of MAP_HUGETLB memory "
                    "failed (%s); using ordinary pages",
                    len, rf_error_message());
        munmap(p, len);
        if ((st = map_large(a, len, false, &p, &huge)) != RF_OK)
            return st;
        st = rf_mr_reg(a->fabric, p, len, RF_ACCESS_ALL, &mr);
    }
    if (st != RF_OK) {
        if (mapped)
            munmap(p, len);
        else
            rf_topology_free(a->topo, p, len);
        return rf_error_prefix(st, "ps arena: registering a chunk of %zu bytes",
                               len);
    }
    ps_chunk *c = &a->chunks[a->n++];
    *c = (ps_chunk){
        .base = p, .len = len, .mr = mr, .mapped = mapped, .huge = huge};
    rf_mr_describe(mr, &c->desc);
    /* atomic: rf_ps_server_get_counters reads it from other threads */
    __atomic_store_n(&a->total, a->total + len, __ATOMIC_RELAXED);
    RF_LOG_INFO("ps arena: chunk %u of %zu bytes (node %d%s), registered in "
                "%lld ms, %zu bytes in all",
                a->n - 1, len, a->binding.numa_node,
                !mapped ? ""
                : huge  ? ", its own mapping, MAP_HUGETLB"
                        : ", its own mapping, MADV_HUGEPAGE",
                rf_now_ms() - t0, a->total);
    return RF_OK;
}

rf_status ps_arena_init(ps_arena *a, rf_fabric *fabric, rf_topology *topo,
                        const rf_binding *binding, size_t chunk_bytes,
                        size_t max_bytes)
{
    memset(a, 0, sizeof *a);
    a->fabric = fabric;
    a->topo = topo;
    a->binding = *binding;
    a->chunk_bytes = (chunk_bytes + PAGE - 1) / PAGE * PAGE;
    a->max_bytes = max_bytes;
    rf_status st = add_chunk(a, a->chunk_bytes);
    if (st != RF_OK) {
        ps_arena_destroy(a);
        return st;
    }
    a->chunks[0].used = PS_GLOBALS_BYTES;
    return RF_OK;
}

void ps_arena_destroy(ps_arena *a)
{
    for (uint32_t i = 0; i < a->n; i++) {
        rf_mr_dereg(a->chunks[i].mr);
        if (a->chunks[i].mapped)
            munmap(a->chunks[i].base, a->chunks[i].len);
        else
            rf_topology_free(a->topo, a->chunks[i].base, a->chunks[i].len);
    }
    free(a->chunks);
    memset(a, 0, sizeof *a);
}

rf_status ps_arena_alloc(ps_arena *a, uint64_t bytes, ps_loc *loc, void **ptr)
{
    if (bytes == 0 || bytes > PS_MAX_SHARD_BYTES * (RF_OPTIM_MAX_SLOTS + 2))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "ps arena: cannot allocate %llu bytes (1 to "
                            "%llu)",
                            (unsigned long long)bytes,
                            (unsigned long long)(PS_MAX_SHARD_BYTES *
                                                 (RF_OPTIM_MAX_SLOTS + 2)));
    uint64_t need = (bytes + PS_ALIGN - 1) & ~(uint64_t)(PS_ALIGN - 1);
    uint32_t i = 0;
    for (; i < a->n; i++)
        if (a->chunks[i].len - a->chunks[i].used >= need)
            break;
    if (i == a->n) {
        /* a large record: its own chunk, whole huge pages */
        size_t len = need > a->chunk_bytes
                         ? (size_t)((need + HUGE - 1) / HUGE * HUGE)
                         : a->chunk_bytes;
        rf_status st = add_chunk(a, len);
        if (st != RF_OK)
            return st;
    }
    ps_chunk *c = &a->chunks[i];
    loc->region = i;
    loc->offset = c->used;
    *ptr = c->base + c->used;
    c->used += need;
    return RF_OK;
}

void *ps_arena_ptr(const ps_arena *a, ps_loc loc)
{
    return a->chunks[loc.region].base + loc.offset;
}
