/* tests/integration/numa/numa_place.c: rf_numa_place, which asks the kernel
 * where a ps task put a shard and its service thread, rather than trusting
 * what the ps logs. On a machine with 2+ NUMA nodes (the rxe guest: node 0 =
 * cpu 0, node 1 = cpu 1) it starts a ps task (rf_ps_helper, the library's
 * rf_ps_server_start in a process of its own) three times:
 *
 *   1. RF_BIND=node:T, T the last node (1 in the guest): "a NIC on node T".
 *      The guest's rxe0 sits on veth0, which has no PCI locality (no
 *      /sys/class/net/veth0/device, so hwloc sees no NUMA node for it and
 *      RF_BIND=nic falls back to the first node): the override is how a NIC
 *      on node 1 is arranged there, and it takes the same path as a PCI NIC
 *      found on node 1 (rf_topology_choose fills the binding, the arena and
 *      the threads follow it);
 *   2. RF_BIND=nic, the default: the node rf_topology_choose gives for the
 *      ps's address in this process (node 0 in the guest);
 *   3. RF_BIND=none: no binding.
 *
 * Each ps task is started away from node T: on the CPUs of this process
 * but node T's (cpu 0 in the guest), inherited, so that nothing but the
 * ps's own binding can put a page or its service thread on node T (the
 * chunk is zeroed, and a large record's pages faulted in by the verbs
 * registration, by the ps's unbound main thread: without a memory policy
 * they would land on its node). Each time this process, as the chief,
 * creates two shards: "small" (256
 * KiB, inside the arena's first chunk: rf_topology_alloc's
 * hwloc_alloc_membind) and "large" (larger than the helper's 1 MiB chunk: a
 * mapping of its own, ps_arena.c's mbind), and writes their values. The
 * shards' addresses in the ps process are those of its directory (the
 * remote address every worker READs at: each provider's rf_mr_desc.addr is
 * the ps's virtual address). Then the kernel is asked:
 *   - move_pages(ps pid, pages, NULL, status): the node of every page of
 *     each record;
 *   - /proc/PID/maps and /proc/PID/numa_maps: the memory policy of the
 *     mapping holding each record: "bind:N" for the large record (its own
 *     mbind, MPOL_BIND), "prefer (many):N" or "prefer:N" for the chunk
 *     (hwloc_alloc_membind's HWLOC_MEMBIND_BIND is MPOL_PREFERRED(_MANY)
 *     on Linux unless HWLOC_MEMBIND_STRICT is given): a policy naming node
 *     N alone either way;
 *   - the thread named rf-ps-service in /proc/PID/task/<tid>/comm:
 *     sched_getaffinity(tid) (and its Cpus_allowed_list, printed).
 * Run 1 must have every page on node T, both mappings bound to T and the
 * service thread allowed exactly node T's CPUs
 * (/sys/devices/system/node/nodeT/cpulist). Runs 2 and 3 are the controls:
 * each must match its own expectation (node 0's pages, policy and CPUs;
 * policy "default" and the CPUs the ps was started on), and the node-T
 * check, applied to them, must report mismatches, so the check is shown to
 * tell placements apart. Exit 0 when all hold, 1 on a failed check, 77 when
 * the machine has one NUMA node (nothing to tell apart). RF_FABRIC,
 * RF_TEST_HOST, RF_TEST_TIME_SCALE and RF_PS_HELPER as in
 * tests/integration/ps. */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rdmaflow/topology.h"
#include "tests/integration/ps/fixture.h"
#include "tests/integration/ps/specs.h"

#define PAGE         4096u
#define MAX_NODES    64
#define SMALL_FLOATS (64 * 1024)  /* 256 KiB: in the first 1 MiB chunk */
#define LARGE_FLOATS (384 * 1024) /* 1.5 MiB: its own mapping */

/* ---- what the machine is ------------------------------------------------ */

static bool read_text(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = '\0';
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
        buf[--n] = '\0';
    return true;
}

/* A kernel list ("0-3,8,10-11") into a CPU set; false when malformed. */
static bool parse_list(const char *s, cpu_set_t *set)
{
    CPU_ZERO(set);
    while (*s) {
        char *end;
        long a = strtol(s, &end, 10), b = a;
        if (end == s || a < 0 || a >= CPU_SETSIZE)
            return false;
        s = end;
        if (*s == '-') {
            b = strtol(s + 1, &end, 10);
            if (end == s + 1 || b < a || b >= CPU_SETSIZE)
                return false;
            s = end;
        }
        for (long i = a; i <= b; i++)
            CPU_SET((int)i, set);
        if (*s == ',')
            s++;
        else if (*s)
            return false;
    }
    return true;
}

static void format_set(const cpu_set_t *set, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    for (int i = 0; i < CPU_SETSIZE && n + 8 < cap; i++) {
        if (!CPU_ISSET(i, set))
            continue;
        int j = i;
        while (j + 1 < CPU_SETSIZE && CPU_ISSET(j + 1, set))
            j++;
        n += (size_t)snprintf(out + n, cap - n, "%s%d", n ? "," : "", i);
        if (j > i)
            n += (size_t)snprintf(out + n, cap - n, "-%d", j);
        i = j;
    }
}

/* What one run should find. node -1: no binding (policy "default", the
 * CPUs this process may use). */
typedef struct want {
    const char *what;
    int node;
    cpu_set_t cpus;
    char cpus_text[128];
} want;

static void want_node(want *w, const char *what, int node)
{
    char path[96], text[256];
    w->what = what;
    w->node = node;
    snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist",
             node);
    CHECK(read_text(path, text, sizeof text), "cannot read %s", path);
    CHECK(parse_list(text, &w->cpus), "%s: '%s' is not a CPU list", path, text);
    format_set(&w->cpus, w->cpus_text, sizeof w->cpus_text);
}

static void want_unbound(want *w, const char *what, const cpu_set_t *cpus)
{
    w->what = what;
    w->node = -1;
    w->cpus = *cpus;
    format_set(&w->cpus, w->cpus_text, sizeof w->cpus_text);
}

/* ---- what the kernel says about the ps --------------------------------- */

typedef struct shard_seen {
    const char *name;
    uint64_t addr, bytes;
    unsigned long pages, absent, on[MAX_NODES];
    char policy[64]; /* numa_maps' policy of the mapping holding addr */
} shard_seen;

typedef struct seen {
    shard_seen shard[2];
    long service_tid;
    cpu_set_t service_cpus;
    char service_cpus_text[128];
    char service_allowed[128]; /* Cpus_allowed_list from status */
} seen;

static void pages_of(pid_t pid, shard_seen *s)
{
    uint64_t first = s->addr & ~(uint64_t)(PAGE - 1);
    unsigned long n =
        (unsigned long)((s->addr + s->bytes - first + PAGE - 1) / PAGE);
    void **pages = calloc(n, sizeof *pages);
    int *status = calloc(n, sizeof *status);
    CHECK(pages && status, "out of memory");
    for (unsigned long i = 0; i < n; i++)
        pages[i] = (void *)(uintptr_t)(first + i * PAGE);
    /* nodes NULL: nothing moves, status gets each page's node */
    long rc = syscall(SYS_move_pages, (long)pid, n, pages, NULL, status, 0);
    CHECK(rc == 0, "move_pages(%ld, %lu pages at 0x%llx): %s", (long)pid, n,
          (unsigned long long)first, strerror(errno));
    s->pages = n;
    for (unsigned long i = 0; i < n; i++) {
        if (status[i] >= 0 && status[i] < MAX_NODES)
            s->on[status[i]]++;
        else
            s->absent++; /* -ENOENT: not present; -EFAULT: not mapped */
    }
    free(pages);
    free(status);
}

/* The start of the mapping of pid holding addr (/proc/PID/maps), 0 if
 * none. */
static uint64_t mapping_of(pid_t pid, uint64_t addr)
{
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%ld/maps", (long)pid);
    FILE *f = fopen(path, "r");
    CHECK(f, "cannot open %s: %s", path, strerror(errno));
    uint64_t start = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long long a, b;
        if (sscanf(line, "%llx-%llx", &a, &b) == 2 && a <= addr && addr < b) {
            start = a;
            break;
        }
    }
    fclose(f);
    return start;
}

static void policy_of(pid_t pid, shard_seen *s)
{
    uint64_t start = mapping_of(pid, s->addr);
    CHECK(start, "shard '%s' at 0x%llx is in no mapping of the ps (pid %ld)",
          s->name, (unsigned long long)s->addr, (long)pid);
    char path[64], line[1024];
    snprintf(path, sizeof path, "/proc/%ld/numa_maps", (long)pid);
    FILE *f = fopen(path, "r");
    CHECK(f, "cannot open %s: %s", path, strerror(errno));
    s->policy[0] = '\0';
    while (fgets(line, sizeof line, f)) {
        unsigned long long a;
        int at = 0;
        if (sscanf(line, "%llx %n", &a, &at) != 1 || !at || a != start)
            continue;
        line[strcspn(line, "\n")] = '\0';
        printf("  numa_maps: %s\n", line);
        /* the policy is one word ("default", "bind:1", "prefer:1") but
         * for "prefer (many):1" */
        const char *p = line + at;
        size_t skip = strncmp(p, "prefer (many)", 13) == 0 ? 13 : 0;
        size_t len = skip + strcspn(p + skip, " ");
        snprintf(s->policy, sizeof s->policy, "%.*s", (int)len, p);
        break;
    }
    fclose(f);
    CHECK(s->policy[0], "no numa_maps line for the mapping at 0x%llx",
          (unsigned long long)start);
}

/* Whether a numa_maps policy directs the mapping's pages to node alone:
 * MPOL_BIND ("bind:N", ps_arena.c's mbind of a large record) or
 * MPOL_PREFERRED(_MANY) ("prefer:N", "prefer (many):N": what
 * hwloc_alloc_membind's HWLOC_MEMBIND_BIND without HWLOC_MEMBIND_STRICT
 * sets on Linux, rf_topology_alloc's chunks). node -1: no policy. */
static bool policy_is(const char *policy, int node)
{
    if (node < 0)
        return strcmp(policy, "default") == 0;
    char tail[16];
    snprintf(tail, sizeof tail, ":%d", node);
    const char *colon = strchr(policy, ':');
    if (!colon || strcmp(colon, tail) != 0)
        return false;
    size_t mode = (size_t)(colon - policy);
    return (mode == 4 && strncmp(policy, "bind", 4) == 0) ||
           (mode == 6 && strncmp(policy, "prefer", 6) == 0) ||
           (mode == 13 && strncmp(policy, "prefer (many)", 13) == 0);
}

/* The thread of pid named rf-ps-service, its allowed CPUs. */
static void service_thread(pid_t pid, seen *o)
{
    char dir[64], path[384], text[256];
    snprintf(dir, sizeof dir, "/proc/%ld/task", (long)pid);
    DIR *d = opendir(dir);
    CHECK(d, "cannot open %s: %s", dir, strerror(errno));
    int found = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s/comm", dir, e->d_name);
        if (read_text(path, text, sizeof text) &&
            strcmp(text, "rf-ps-service") == 0) {
            o->service_tid = atol(e->d_name);
            found++;
        }
    }
    closedir(d);
    CHECK(found == 1, "%d threads of the ps (pid %ld) are named rf-ps-service",
          found, (long)pid);
    CHECK(sched_getaffinity((pid_t)o->service_tid, sizeof o->service_cpus,
                            &o->service_cpus) == 0,
          "sched_getaffinity(%ld): %s", o->service_tid, strerror(errno));
    format_set(&o->service_cpus, o->service_cpus_text,
               sizeof o->service_cpus_text);
    snprintf(path, sizeof path, "%s/%ld/status", dir, o->service_tid);
    FILE *f = fopen(path, "r");
    CHECK(f, "cannot open %s: %s", path, strerror(errno));
    char line[256];
    o->service_allowed[0] = '\0';
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "Cpus_allowed_list: %127s", o->service_allowed) == 1)
            break;
    fclose(f);
}

/* ---- one ps task -------------------------------------------------------- */

/* Starts a ps task with RF_BIND=bind (NULL: unset) on the CPUs away,
 * creates and writes the two shards, asks the kernel, shuts the ps down. */
static void observe(rf_fabric *f, const char *bind, const cpu_set_t *away,
                    seen *o)
{
    memset(o, 0, sizeof *o);
    if (bind)
        setenv("RF_BIND", bind, 1);
    else
        unsetenv("RF_BIND");
    pt_ps ps;
    cpu_set_t mine; /* the child inherits the spawning thread's affinity */
    CHECK(sched_getaffinity(0, sizeof mine, &mine) == 0 &&
              sched_setaffinity(0, sizeof *away, away) == 0,
          "setting this thread's affinity: %s", strerror(errno));
    pt_ps_start(&ps, 0, 0);
    CHECK(sched_setaffinity(0, sizeof mine, &mine) == 0,
          "restoring this thread's affinity: %s", strerror(errno));
    pid_t pid = ps.child.pid;
    const char *addr = pt_addr(ps.port);
    rf_ps_client *c = pt_client(f, &addr, 1, 0, true);
    const struct {
        const char *name;
        int64_t n;
    } shards[2] = {{"small", SMALL_FLOATS}, {"large", LARGE_FLOATS}};
    for (int i = 0; i < 2; i++) {
        rf_ps_shard_spec spec = pt_counter_spec(shards[i].name, shards[i].n);
        rf_ps_var *v = NULL;
        CHECK_OK(rf_ps_create(c, 0, &spec, &v));
        pt_buf b;
        pt_buf_alloc(c, &b, (size_t)shards[i].n);
        pt_fill(b.p, b.n, (uint64_t)i + 1);
        /* every page of the values written, so every one is present */
        rf_ps_xfer x = {.var = v,
                        .field = RF_PS_FIELD_VALUES,
                        .buf = b.p,
                        .len = b.n * sizeof(float),
                        .mr = b.mr};
        CHECK_OK(rf_ps_init_values(c, &x, 1));
        rf_ps_var_info vi;
        rf_ps_var_get_info(v, &vi);
        o->shard[i] = (shard_seen){
            .name = shards[i].name,
            .addr = vi.remote_addr,
            .bytes = vi.record_bytes,
        };
    }
    printf("ps pid %ld, RF_BIND=%s:\n", (long)pid, bind ? bind : "(unset)");
    for (int i = 0; i < 2; i++) {
        shard_seen *s = &o->shard[i];
        pages_of(pid, s);
        policy_of(pid, s);
        printf("  shard %-5s at 0x%llx, %llu bytes, %lu pages:", s->name,
               (unsigned long long)s->addr, (unsigned long long)s->bytes,
               s->pages);
        for (int n = 0; n < MAX_NODES; n++)
            if (s->on[n])
                printf(" node%d=%lu", n, s->on[n]);
        printf(" absent=%lu, policy %s\n", s->absent, s->policy);
    }
    service_thread(pid, o);
    printf("  thread rf-ps-service (tid %ld): sched_getaffinity %s, "
           "Cpus_allowed_list %s\n",
           o->service_tid, o->service_cpus_text, o->service_allowed);
    fflush(stdout);
    CHECK_OK(rf_ps_shutdown(c));
    rf_ps_client_close(c);
    pt_buf_release_all();
    rft_wait_ok(&ps.child, rft_ms(20000));
}

/* How many ways o differs from w (each printed when verbose). */
static int mismatches(const seen *o, const want *w, bool verbose)
{
    int bad = 0;
    for (int i = 0; i < 2; i++) {
        const shard_seen *s = &o->shard[i];
        if (w->node >= 0 && s->on[w->node] != s->pages) {
            bad++;
            if (verbose)
                printf("  MISMATCH (%s): shard %s: %lu of %lu pages on node "
                       "%d\n",
                       w->what, s->name, s->on[w->node], s->pages, w->node);
        }
        if (!policy_is(s->policy, w->node)) {
            bad++;
            if (verbose && w->node < 0)
                printf("  MISMATCH (%s): shard %s: policy %s, not default\n",
                       w->what, s->name, s->policy);
            else if (verbose)
                printf("  MISMATCH (%s): shard %s: policy %s, not bind or "
                       "prefer to node %d alone\n",
                       w->what, s->name, s->policy, w->node);
        }
    }
    if (!CPU_EQUAL(&o->service_cpus, &w->cpus)) {
        bad++;
        if (verbose)
            printf("  MISMATCH (%s): rf-ps-service may run on CPUs %s, not "
                   "%s\n",
                   w->what, o->service_cpus_text, w->cpus_text);
    }
    return bad;
}

int main(void)
{
    rft_set_who("numa");
    rft_proc_init(false);
    rft_watchdog("numa_place", 120);
    setvbuf(stdout, NULL, _IOLBF, 0);

    rf_topology *topo = NULL;
    CHECK_OK(rf_topology_open(&topo));
    int nodes = rf_topology_numa_nodes(topo);
    char online[128] = "";
    (void)read_text("/sys/devices/system/node/online", online, sizeof online);
    cpu_set_t node_set; /* node numbers, not CPUs: the same list syntax */
    CHECK(online[0] && parse_list(online, &node_set),
          "/sys/devices/system/node/online: '%s'", online);
    if (nodes < 2 || CPU_COUNT(&node_set) < 2) {
        printf("SKIP: %d NUMA node(s) (online: %s): no placement to tell "
               "apart\n",
               nodes, online);
        rf_topology_close(topo);
        return 77;
    }
    int target = -1;
    for (int i = 0; i < MAX_NODES; i++)
        if (CPU_ISSET(i, &node_set))
            target = i;

    /* What RF_BIND=nic chooses for the ps's address (the ps chooses from
     * the same address, in its own process). */
    unsetenv("RF_BIND");
    rf_binding nic;
    CHECK_OK(rf_topology_choose(topo, pt_host(), &nic));
    rf_topology_close(topo);
    printf("NUMA nodes online: %s; the NIC on node %d is RF_BIND=node:%d; "
           "RF_BIND=nic gives node %d (%s)\n",
           online, target, target, nic.numa_node, nic.why);

    want on_target, on_nic, unbound;
    want_node(&on_target, "NIC on the last node", target);
    want_node(&on_nic, "RF_BIND=nic", nic.numa_node);
    /* the ps tasks start on every CPU of ours but node T's */
    cpu_set_t away;
    CHECK(sched_getaffinity(0, sizeof away, &away) == 0,
          "sched_getaffinity: %s", strerror(errno));
    for (int i = 0; i < CPU_SETSIZE; i++)
        if (CPU_ISSET(i, &on_target.cpus))
            CPU_CLR(i, &away);
    CHECK(CPU_COUNT(&away) > 0,
          "this process may run only on node %d's CPUs (%s): no CPU to start "
          "the ps away from it",
          target, on_target.cpus_text);
    want_unbound(&unbound, "RF_BIND=none", &away);
    printf("ps tasks start on CPUs %s, away from node %d\n", unbound.cpus_text,
           target);

    rf_fabric *f = pt_fabric();
    char bind[32];
    snprintf(bind, sizeof bind, "node:%d", target);
    seen o;

    /* 1. The NIC on node T. */
    observe(f, bind, &away, &o);
    int bad = mismatches(&o, &on_target, true);
    CHECK(bad == 0,
          "RF_BIND=%s: %d mismatches: the shards' pages and the service "
          "thread are not all on node %d",
          bind, bad, target);
    printf("OK: the shards' pages are on node %d, bound there, and "
           "rf-ps-service may run only on its CPUs (%s)\n",
           target, on_target.cpus_text);

    /* 2. Control: the default (node 0 in the guest: veth0 has no PCI
     * locality). */
    observe(f, NULL, &away, &o);
    bad = mismatches(&o, &on_nic, true);
    CHECK(bad == 0, "RF_BIND=nic: %d mismatches against node %d", bad,
          nic.numa_node);
    if (nic.numa_node != target) {
        bad = mismatches(&o, &on_target, true);
        CHECK(bad > 0,
              "control: the node-%d check accepts a ps placed on node %d",
              target, nic.numa_node);
        printf("OK (control): placed on node %d, which the node-%d check "
               "rejects (%d mismatches)\n",
               nic.numa_node, target, bad);
    } else {
        printf("note: RF_BIND=nic chose node %d too: not a control on "
               "this machine\n",
               target);
    }

    /* 3. Control: no binding. */
    observe(f, "none", &away, &o);
    bad = mismatches(&o, &unbound, true);
    CHECK(bad == 0, "RF_BIND=none: %d mismatches against no binding", bad);
    bad = mismatches(&o, &on_target, true);
    CHECK(bad > 0, "control: the node-%d check accepts an unbound ps", target);
    printf("OK (control): unbound (policy default, CPUs %s), which the "
           "node-%d check rejects (%d mismatches)\n",
           unbound.cpus_text, target, bad);

    rf_fabric_close(f);
    printf("PASS\n");
    return 0;
}
