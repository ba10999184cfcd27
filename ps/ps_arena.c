/* ps/ps_arena.c: NUMA-bound, once-registered chunks and 64-byte
 * aligned bump allocation inside them (see ps_arena.h). */
#include "ps/ps_arena.h"

#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "ps/ps_layout.h"
#include "rdmaflow/status.h"

#define PAGE 4096u

static rf_status add_chunk(ps_arena *a, size_t len)
{
    if (a->n >= PS_MAX_REGIONS)
        return rf_error_set(RF_ERR_NO_MEMORY,
                            "ps arena: %u chunks, the most a directory can "
                            "describe",
                            a->n);
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
    rf_status st = rf_topology_alloc(a->topo, &a->binding, len, &p);
    if (st != RF_OK)
        return st;
    rf_mr *mr = NULL;
    st = rf_mr_reg(a->fabric, p, len, RF_ACCESS_ALL, &mr);
    if (st != RF_OK) {
        rf_topology_free(a->topo, p, len);
        return st;
    }
    ps_chunk *c = &a->chunks[a->n++];
    *c = (ps_chunk){.base = p, .len = len, .mr = mr};
    rf_mr_describe(mr, &c->desc);
    a->total += len;
    RF_LOG_INFO("ps arena: chunk %u of %zu bytes (node %d), %zu bytes in all",
                a->n - 1, len, a->binding.numa_node, a->total);
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
        rf_topology_free(a->topo, a->chunks[i].base, a->chunks[i].len);
    }
    free(a->chunks);
    memset(a, 0, sizeof *a);
}

rf_status ps_arena_alloc(ps_arena *a, uint64_t bytes, ps_loc *loc, void **ptr)
{
    if (bytes == 0 || bytes > PS_MAX_SHARD_BYTES * (RF_OPTIM_MAX_SLOTS + 2))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "ps arena: cannot allocate %llu bytes",
                            (unsigned long long)bytes);
    uint64_t need = (bytes + PS_ALIGN - 1) & ~(uint64_t)(PS_ALIGN - 1);
    uint32_t i = 0;
    for (; i < a->n; i++)
        if (a->chunks[i].len - a->chunks[i].used >= need)
            break;
    if (i == a->n) {
        size_t len = need > a->chunk_bytes
                         ? (size_t)((need + PAGE - 1) / PAGE * PAGE)
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
