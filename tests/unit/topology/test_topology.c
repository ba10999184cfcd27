/* tests/unit/topology/test_topology.c: the NUMA choice honours RF_BIND,
 * rejects malformed values and absent nodes, binds the calling thread to the
 * chosen node's CPUs and allocates zeroed, page-aligned memory. Run on every
 * host; inside the rxe guest (2 NUMA nodes) it also binds to node 1. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rdmaflow/status.h"
#include "rdmaflow/topology.h"
#include "tests/common/check.h"

/* The calling thread's allowed CPU list as the kernel reports it. */
static void allowed_cpus(char *out, size_t len)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/self/task/%ld/status",
             (long)syscall(SYS_gettid));
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        char list[200];
        if (strncmp(line, "Cpus_allowed_list:", 18) == 0 &&
            sscanf(line + 18, "%199s", list) == 1) {
            snprintf(out, len, "%s", list);
            break;
        }
    }
    fclose(f);
}

static void check_alloc(rf_topology *topo, const rf_binding *b)
{
    void *p = NULL;
    size_t len = 3 * 4096 + 5;
    CHECK(rf_topology_alloc(topo, b, len, &p) == RF_OK && p, "alloc");
    if (!p)
        return;
    CHECK((uintptr_t)p % 4096 == 0, "not page aligned: %p", p);
    unsigned char *c = p;
    size_t nonzero = 0;
    for (size_t i = 0; i < len; i++)
        nonzero += c[i] != 0;
    CHECK(nonzero == 0, "%zu non-zero bytes", nonzero);
    memset(p, 0xab, len);
    rf_topology_free(topo, p, len);
    CHECK(rf_topology_alloc(topo, b, 0, &p) == RF_ERR_INVALID_ARG,
          "zero length accepted");
}

int main(void)
{
    rf_topology *topo = NULL;
    CHECK_OK(rf_topology_open(&topo));
    int nodes = rf_topology_numa_nodes(topo);
    CHECK(nodes >= 1, "%d nodes", nodes);
    printf("NUMA nodes: %d\n", nodes);

    rf_binding b;
    unsetenv("RF_BIND");
    CHECK(rf_topology_choose(topo, "127.0.0.1", &b) == RF_OK, "choose lo");
    CHECK(b.mode == RF_BIND_NIC && b.numa_node >= 0, "mode %d node %d",
          (int)b.mode, b.numa_node);
    CHECK(strstr(b.why, "127.0.0.1 on lo") && strstr(b.why, "no PCI locality"),
          "why '%s' must name the address and its interface", b.why);
    printf("default: node %d cpus %s (%s)\n", b.numa_node, b.cpus, b.why);
    CHECK(b.cpus[0] != '\0', "no cpus for node %d", b.numa_node);
    check_alloc(topo, &b);

    setenv("RF_BIND", "none", 1);
    CHECK(rf_topology_choose(topo, NULL, &b) == RF_OK && b.numa_node == -1 &&
              b.mode == RF_BIND_NONE,
          "none gave node %d", b.numa_node);
    char before[256], after[256];
    allowed_cpus(before, sizeof before);
    CHECK(rf_topology_bind_thread(topo, &b) == RF_OK, "bind none");
    allowed_cpus(after, sizeof after);
    CHECK(strcmp(before, after) == 0, "RF_BIND=none changed affinity %s -> %s",
          before, after);
    check_alloc(topo, &b);

    for (int node = 0; node < nodes && node < 2; node++) {
        char v[32];
        snprintf(v, sizeof v, "node:%d", node);
        setenv("RF_BIND", v, 1);
        CHECK(rf_topology_choose(topo, "eth-does-not-exist", &b) == RF_OK &&
                  b.numa_node == node && b.mode == RF_BIND_NODE,
              "%s gave node %d", v, b.numa_node);
        CHECK(rf_topology_bind_thread(topo, &b) == RF_OK, "bind %s", v);
        allowed_cpus(after, sizeof after);
        CHECK(strcmp(after, b.cpus) == 0,
              "bound to node %d: allowed cpus %s, node cpus %s", node, after,
              b.cpus);
        check_alloc(topo, &b);
    }

    setenv("RF_BIND", "node:999", 1);
    CHECK(rf_topology_choose(topo, NULL, &b) == RF_ERR_INVALID_ARG,
          "absent node accepted");
    CHECK(strstr(rf_error_message(), "node:999") != NULL, "message '%s'",
          rf_error_message());
    setenv("RF_BIND", "node:x", 1);
    CHECK(rf_topology_choose(topo, NULL, &b) == RF_ERR_INVALID_ARG,
          "node:x accepted");
    setenv("RF_BIND", "numa", 1);
    CHECK(rf_topology_choose(topo, NULL, &b) == RF_ERR_INVALID_ARG,
          "bogus mode accepted");
    CHECK(strstr(rf_error_message(), "nic|none|node:N") != NULL, "message '%s'",
          rf_error_message());
    unsetenv("RF_BIND");

    rf_topology_close(topo);
    printf("topology tests passed\n");
    return 0;
}
