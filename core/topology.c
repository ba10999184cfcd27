/* core/topology.c: hwloc-based NUMA choice and binding (see topology.h). */
#include "rdmaflow/topology.h"

#include <arpa/inet.h>
#include <errno.h>
#include <hwloc.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "rdmaflow/env.h"
#include "rdmaflow/status.h"

struct rf_topology {
    hwloc_topology_t topo;
};

rf_status rf_topology_open(rf_topology **out)
{
    *out = NULL;
    rf_topology *t = calloc(1, sizeof *t);
    if (!t)
        return rf_error_set(RF_ERR_NO_MEMORY,
                            "rf_topology_open: out of memory");
    if (hwloc_topology_init(&t->topo) != 0) {
        free(t);
        return rf_error_set(RF_ERR_IO, "hwloc_topology_init: %s",
                            strerror(errno));
    }
    /* Keep PCI devices and their OS devices (network, OpenFabrics). */
    hwloc_topology_set_io_types_filter(t->topo,
                                       HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    /* Not the optional plugins (Debian's libhwloc-plugins, pulled in by
     * Open MPI): Linux's own component finds the PCI devices and NICs from
     * sysfs; the libpciaccess one adds nothing here and leaks about 600 KB
     * per load (hwloc 2.9), and the GPU ones (OpenCL, GL) would start GPU
     * runtimes for nothing. */
    static const char *const skip[] = {"pci",  "opencl", "gl",       "cuda",
                                       "nvml", "rsmi",   "levelzero"};
    for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++)
        hwloc_topology_set_components(
            t->topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, skip[i]);
    if (hwloc_topology_load(t->topo) != 0) {
        int err = errno;
        hwloc_topology_destroy(t->topo);
        free(t);
        return rf_error_set(RF_ERR_IO, "hwloc_topology_load: %s",
                            strerror(err));
    }
    *out = t;
    return RF_OK;
}

void rf_topology_close(rf_topology *topo)
{
    if (!topo)
        return;
    hwloc_topology_destroy(topo->topo);
    free(topo);
}

int rf_topology_numa_nodes(const rf_topology *topo)
{
    int n = hwloc_get_nbobjs_by_type(topo->topo, HWLOC_OBJ_NUMANODE);
    return n > 0 ? n : 1;
}

/* Name of the local interface carrying address addr, or 0 if none. */
static int interface_of_address(const char *addr, char *name, size_t len)
{
    unsigned char want[16];
    int family;
    if (inet_pton(AF_INET, addr, want) == 1)
        family = AF_INET;
    else if (inet_pton(AF_INET6, addr, want) == 1)
        family = AF_INET6;
    else
        return 0;
    struct ifaddrs *list = NULL;
    if (getifaddrs(&list) != 0)
        return 0;
    int found = 0;
    for (struct ifaddrs *i = list; i && !found; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != family)
            continue;
        const void *have =
            family == AF_INET
                ? (const void *)&((struct sockaddr_in *)i->ifa_addr)->sin_addr
                : (const void *)&((struct sockaddr_in6 *)i->ifa_addr)
                      ->sin6_addr;
        if (memcmp(have, want, family == AF_INET ? 4 : 16) == 0) {
            snprintf(name, len, "%s", i->ifa_name);
            found = 1;
        }
    }
    freeifaddrs(list);
    return found;
}

static hwloc_obj_t find_osdev(hwloc_topology_t topo, const char *name)
{
    hwloc_obj_t obj = NULL;
    while ((obj = hwloc_get_next_osdev(topo, obj)) != NULL)
        if (obj->name && strcmp(obj->name, name) == 0)
            return obj;
    return NULL;
}

static void fill_node(rf_topology *topo, int node, rf_binding *out)
{
    out->numa_node = node;
    out->cpus[0] = '\0';
    hwloc_obj_t obj =
        hwloc_get_numanode_obj_by_os_index(topo->topo, (unsigned)node);
    if (obj && obj->cpuset)
        hwloc_bitmap_list_snprintf(out->cpus, sizeof out->cpus, obj->cpuset);
}

static rf_status parse_bind(rf_binding *out, int *node)
{
    const char *v = rf_setting_str("RF_BIND");
    if (strcmp(v, "nic") == 0) {
        out->mode = RF_BIND_NIC;
        return RF_OK;
    }
    if (strcmp(v, "none") == 0) {
        out->mode = RF_BIND_NONE;
        return RF_OK;
    }
    if (strncmp(v, "node:", 5) == 0) {
        int64_t n;
        rf_status st = rf_parse_int(v + 5, 0, 1 << 20, "RF_BIND=node:N", &n);
        if (st != RF_OK)
            return st;
        out->mode = RF_BIND_NODE;
        *node = (int)n;
        return RF_OK;
    }
    return rf_error_set(RF_ERR_INVALID_ARG,
                        "RF_BIND=%s is not one of nic|none|node:N", v);
}

/* RF_BIND=node:N names a NUMA node this host has. */
static rf_status check_node(rf_topology *topo, int node)
{
    if (!hwloc_get_numanode_obj_by_os_index(topo->topo, (unsigned)node))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "RF_BIND=node:%d: this host has %d NUMA "
                            "node(s)",
                            node, rf_topology_numa_nodes(topo));
    return RF_OK;
}

rf_status rf_topology_check_bind(void)
{
    rf_binding b;
    int node = -1;
    rf_status st = parse_bind(&b, &node);
    if (st != RF_OK || b.mode != RF_BIND_NODE)
        return st;
    rf_topology *topo = NULL;
    if ((st = rf_topology_open(&topo)) != RF_OK)
        return st;
    st = check_node(topo, node);
    rf_topology_close(topo);
    return st;
}

static int first_node(rf_topology *topo)
{
    hwloc_obj_t obj = hwloc_get_obj_by_type(topo->topo, HWLOC_OBJ_NUMANODE, 0);
    return obj ? (int)obj->os_index : 0;
}

rf_status rf_topology_choose(rf_topology *topo, const char *device,
                             rf_binding *out)
{
    memset(out, 0, sizeof *out);
    int node = -1;
    rf_status st = parse_bind(out, &node);
    if (st != RF_OK)
        return st;
    if (out->mode == RF_BIND_NONE) {
        out->numa_node = -1;
        snprintf(out->why, sizeof out->why, "RF_BIND=none: no binding");
        return RF_OK;
    }
    if (out->mode == RF_BIND_NODE) {
        if ((st = check_node(topo, node)) != RF_OK)
            return st;
        fill_node(topo, node, out);
        snprintf(out->why, sizeof out->why, "RF_BIND=node:%d", node);
        return RF_OK;
    }

    char ifname[64] = "";
    const char *name = device;
    if (device && interface_of_address(device, ifname, sizeof ifname))
        name = ifname;
    hwloc_obj_t osdev = name && *name ? find_osdev(topo->topo, name) : NULL;
    hwloc_obj_t anc =
        osdev ? hwloc_get_non_io_ancestor_obj(topo->topo, osdev) : NULL;
    if (anc && anc->nodeset && !hwloc_bitmap_iszero(anc->nodeset)) {
        int n = hwloc_bitmap_first(anc->nodeset);
        fill_node(topo, n, out);
        snprintf(out->why, sizeof out->why, "%s%s%s is local to NUMA node %d",
                 device, name != device ? " on " : "",
                 name != device ? name : "", n);
        return RF_OK;
    }
    node = first_node(topo);
    fill_node(topo, node, out);
    snprintf(out->why, sizeof out->why,
             "%s%s%s has no PCI locality; using NUMA node %d",
             device && *device ? device : "no device",
             name && name != device ? " on " : "",
             name && name != device ? name : "", node);
    return RF_OK;
}

rf_status rf_topology_bind_thread(rf_topology *topo, const rf_binding *b)
{
    if (b->mode == RF_BIND_NONE || b->numa_node < 0)
        return RF_OK;
    hwloc_obj_t obj =
        hwloc_get_numanode_obj_by_os_index(topo->topo, (unsigned)b->numa_node);
    if (!obj || !obj->cpuset || hwloc_bitmap_iszero(obj->cpuset))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "NUMA node %d has no CPUs to bind to",
                            b->numa_node);
    if (hwloc_set_cpubind(topo->topo, obj->cpuset, HWLOC_CPUBIND_THREAD) != 0)
        return rf_error_set(RF_ERR_IO,
                            "binding thread to node %d (cpus %s): %s",
                            b->numa_node, b->cpus, strerror(errno));
    return RF_OK;
}

rf_status rf_topology_alloc(rf_topology *topo, const rf_binding *b, size_t len,
                            void **out)
{
    *out = NULL;
    if (len == 0)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_topology_alloc: length 0");
    void *p = NULL;
    if (b->mode != RF_BIND_NONE && b->numa_node >= 0) {
        hwloc_obj_t obj = hwloc_get_numanode_obj_by_os_index(
            topo->topo, (unsigned)b->numa_node);
        if (obj)
            p = hwloc_alloc_membind(topo->topo, len, obj->nodeset,
                                    HWLOC_MEMBIND_BIND,
                                    HWLOC_MEMBIND_BYNODESET);
        if (!p)
            RF_LOG_WARN("memory binding to NUMA node %d refused (%s); "
                        "allocating %zu bytes unbound",
                        b->numa_node, strerror(errno), len);
    }
    if (!p)
        p = hwloc_alloc(topo->topo, len);
    if (!p)
        return rf_error_set(RF_ERR_NO_MEMORY, "allocating %zu bytes: %s", len,
                            strerror(errno));
    memset(p, 0, len);
    *out = p;
    return RF_OK;
}

void rf_topology_free(rf_topology *topo, void *p, size_t len)
{
    if (p)
        hwloc_free(topo->topo, p, len);
}
