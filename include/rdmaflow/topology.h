/* rdmaflow/topology.h: NUMA placement with hwloc. Finds the NUMA node nearest
 * the network device in use and binds threads and memory (the ps shard arena,
 * progress/apply/compute threads) there. RF_BIND=nic|none|node:N overrides
 * the choice; what was chosen, and why, is kept in rf_binding for logs and
 * --explain. */
#ifndef RDMAFLOW_TOPOLOGY_H
#define RDMAFLOW_TOPOLOGY_H

#include "rdmaflow/api.h"

#include <stddef.h>

#include "rdmaflow/status.h"

typedef struct rf_topology rf_topology;

typedef enum rf_bind_mode {
    RF_BIND_NIC = 0, /* the node nearest the device (default) */
    RF_BIND_NONE,    /* no binding at all */
    RF_BIND_NODE,    /* an explicit node (RF_BIND=node:N) */
} rf_bind_mode;

typedef struct rf_binding {
    rf_bind_mode mode;
    int numa_node; /* OS index of the chosen node; -1 with RF_BIND_NONE */
    char cpus[64]; /* the node's CPUs as a list, e.g. "0-3,8-11" */
    char why[200]; /* how the choice was made, for logs and --explain */
} rf_binding;

RF_API rf_status rf_topology_open(rf_topology **out);
RF_API void rf_topology_close(rf_topology *topo);
/* Number of NUMA nodes hwloc sees (at least 1). */
RF_API int rf_topology_numa_nodes(const rf_topology *topo);

/* RF_BIND read as rf_topology_choose reads it (nic, none or node:N, N a
 * NUMA node of this host): RF_OK, or RF_ERR_INVALID_ARG naming the value;
 * what rf-info reports (rf_setting_check) before a task would refuse it. */
RF_API rf_status rf_topology_check_bind(void);

/* Chooses where to run and allocate. device is a verbs device name ("mlx5_0",
 * "rxe0"), a network interface ("eth0"), a local IPv4/IPv6 address, or NULL.
 * Honours RF_BIND; a malformed RF_BIND or a node that does not exist is
 * RF_ERR_INVALID_ARG. A device without PCI locality (virtual interfaces, rxe,
 * loopback) falls back to the first node, and says so in why. */
RF_API rf_status rf_topology_choose(rf_topology *topo, const char *device,
                                    rf_binding *out);

/* Binds the calling thread to the binding's CPUs (no-op for RF_BIND_NONE). */
RF_API rf_status rf_topology_bind_thread(rf_topology *topo,
                                         const rf_binding *b);

/* Allocates len bytes (page-aligned, zeroed) bound to the binding's node.
 * If the kernel refuses the memory policy (e.g. in a container), the memory
 * is allocated unbound and a warning is logged. Free with
 * rf_topology_free. */
RF_API rf_status rf_topology_alloc(rf_topology *topo, const rf_binding *b,
                                   size_t len, void **out);
RF_API void rf_topology_free(rf_topology *topo, void *p, size_t len);

#endif
