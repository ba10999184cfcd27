/* ps/ps_arena.h: the ps shard arena. Large chunks allocated on the
 * chosen NUMA node (rf_topology_alloc), each registered once as one memory
 * region with every remote access right; allocations are 64-byte aligned
 * bump allocations inside a chunk (first fit), zeroed, never freed while the
 * server lives. A request larger than the chunk size gets a chunk of its
 * own: mmap'd (MAP_HUGETLB when the kernel has huge pages reserved, else
 * transparent huge pages asked for with madvise(MADV_HUGEPAGE)), bound to
 * the node with mbind, never touched here (anonymous memory is zero), so a
 * table of several GiB costs only the pages its rows use. The first
 * PS_GLOBALS_BYTES of chunk 0 are the globals block (global_step, the
 * workers-done bitmap, the clock words). Used only by the server's
 * service thread after start. */
#ifndef RF_GRAPH_DIST_PS_ARENA_H
#define RF_GRAPH_DIST_PS_ARENA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ps/proto.h"
#include "rdmaflow/fabric.h"
#include "rdmaflow/topology.h"

typedef struct ps_chunk {
    unsigned char *base;
    size_t len, used;
    rf_mr *mr;
    rf_mr_desc desc;
    bool mapped; /* its own mmap (a large record): munmap'd */
    bool huge;   /* MAP_HUGETLB */
} ps_chunk;

typedef struct ps_arena {
    rf_fabric *fabric;
    rf_topology *topo;
    rf_binding binding;
    size_t chunk_bytes, max_bytes, total;
    ps_chunk *chunks;
    uint32_t n, cap;
} ps_arena;

/* Creates the arena with its first chunk (and the globals block). */
rf_status ps_arena_init(ps_arena *a, rf_fabric *fabric, rf_topology *topo,
                        const rf_binding *binding, size_t chunk_bytes,
                        size_t max_bytes);
void ps_arena_destroy(ps_arena *a);
/* bytes (> 0) of zeroed memory, 64-byte aligned; *loc and *ptr locate it. */
rf_status ps_arena_alloc(ps_arena *a, uint64_t bytes, ps_loc *loc, void **ptr);
void *ps_arena_ptr(const ps_arena *a, ps_loc loc);

#endif
