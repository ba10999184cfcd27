/* fabric/shm/shm_mr.c: memory regions of the shm provider. A region with a
 * remote access right lives in a segment: the whole pages it touches, moved
 * in place into a memfd (contents copied, then the memfd mapped over the
 * same addresses with mremap, so the user sees no change); when the last
 * region of a segment is deregistered the pages move back to private
 * anonymous memory the same way. Segments are process-wide (two fabrics
 * registering the same pages share one); a registration inside an existing
 * segment shares it (refcount), a partial overlap is refused. Each fabric
 * publishes its regions in its region table (a memfd peers map read-only),
 * one seqlocked entry per region, found from the rkey in a probe window of
 * SHM_PROBE_WINDOW slots (an rkey this provider picks is found at the first;
 * a caller-chosen one, from the auto provider, anywhere in its window);
 * dereg invalidates the entry, so later
 * operations with that rkey fail at the initiator. Local-only regions need
 * no memfd. */
#include <errno.h>
#include <linux/mempolicy.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/log.h"
#include "fabric/shm/shm.h"

struct shm_seg {
    uint32_t id; /* process-wide, never reused */
    int fd;
    uintptr_t start;
    size_t len;
    int refs;
    shm_seg *next;
};

static pthread_mutex_t seg_mu = PTHREAD_MUTEX_INITIALIZER;
static shm_seg *segs;
static uint32_t next_seg_id = 1;

#define REMOTE_BITS                                                            \
    (RF_ACCESS_REMOTE_READ | RF_ACCESS_REMOTE_WRITE | RF_ACCESS_REMOTE_ATOMIC)

static size_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

/* RF_OK if [start, start+len) is all private anonymous read-write memory
 * (malloc, anonymous mmap; not a stack): the only kind that can be moved into a
 * memfd without changing what it is (a file mapping would stop being the
 * file, a read-only one would become writable). */
static rf_status check_movable(uintptr_t start, size_t len)
{
    /* The calling thread's stack cannot be moved under its own frames (the
     * copy would be stale the moment it is mapped back). */
    pthread_attr_t at;
    if (pthread_getattr_np(pthread_self(), &at) == 0) {
        void *sa = NULL;
        size_t sl = 0;
        int got = pthread_attr_getstack(&at, &sa, &sl) == 0;
        pthread_attr_destroy(&at);
        uintptr_t lo = (uintptr_t)sa, hi = lo + sl;
        if (got && start < hi && start + len > lo)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "shm: rf_mr_reg: [%p, +%zu) is on the calling "
                                "thread's stack; register heap or mmap'd "
                                "memory for remote access",
                                (void *)start, len);
    }
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f)
        return rf_error_set(RF_ERR_IO, "shm: rf_mr_reg: /proc/self/maps: %s",
                            strerror(errno));
    uintptr_t end = start + len, covered = start;
    char line[512];
    rf_status st = RF_OK;
    while (st == RF_OK && covered < end && fgets(line, sizeof line, f)) {
        unsigned long lo, hi, ino;
        char perms[8] = "", path[256] = "";
        if (sscanf(line, "%lx-%lx %7s %*s %*s %lu %255s", &lo, &hi, perms, &ino,
                   path) < 4)
            continue;
        if (hi <= covered || lo >= end)
            continue;
        if (lo > covered)
            break; /* a hole */
        int anon = ino == 0 && (!path[0] || strcmp(path, "[heap]") == 0);
        if (strcmp(perms, "rw-p") != 0 || !anon)
            st = rf_error_set(
                RF_ERR_INVALID_ARG,
                "shm: rf_mr_reg: [%p, +%zu) lies in a %s mapping%s%s; only "
                "private anonymous read-write memory (malloc, anonymous mmap) "
                "can be registered for remote access",
                (void *)start, len, perms, path[0] ? " of " : "", path);
        covered = hi;
    }
    fclose(f);
    if (st == RF_OK && covered < end)
        st = rf_error_set(RF_ERR_INVALID_ARG,
                          "shm: rf_mr_reg: [%p, +%zu) is not all mapped",
                          (void *)start, len);
    return st;
}

/* Gives the new mapping the NUMA policy of the range's first page (e.g.
 * hwloc_alloc_membind), so the pages the copy allocates land where the
 * original ones were meant to. Best effort: raw syscalls, no libnuma. */
#if defined(__SANITIZE_ADDRESS__)
#define SHM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SHM_ASAN 1
#endif
#endif

/* Copies whole pages, bytes outside the caller's object on the same pages
 * included (they move with the pages, on purpose). Under AddressSanitizer
 * that is a read outside a heap block by the rules of C, so the copy is an
 * uninstrumented word loop there (volatile: not turned back into memcpy,
 * which ASan intercepts); elsewhere memcpy. len is a multiple of the page
 * size. */
#ifdef SHM_ASAN
__attribute__((no_sanitize("address"))) static void
copy_pages(void *dst, const void *src, size_t len)
{
    const volatile uint64_t *s = src;
    uint64_t *d = dst;
    for (size_t i = 0; i < len / 8; i++)
        d[i] = s[i];
}
#else
static void copy_pages(void *dst, const void *src, size_t len)
{
    memcpy(dst, src, len);
}
#endif

static void copy_policy(void *tmp, uintptr_t start, size_t len)
{
    int mode = 0;
    unsigned long mask[16] = {0}; /* 1024 nodes */
    unsigned long maxnode = sizeof mask * 8;
    if (syscall(SYS_get_mempolicy, &mode, mask, maxnode, (void *)start,
                MPOL_F_ADDR) != 0 ||
        mode == MPOL_DEFAULT)
        return;
    if (syscall(SYS_mbind, tmp, len, (unsigned long)mode, mask, maxnode, 0) !=
        0)
        RF_LOG_DEBUG("shm: mbind of a new segment (mode %d): %s", mode,
                     strerror(errno));
}

/* Moves [start, start+len) into a new memfd, in place. */
static rf_status seg_create(uintptr_t start, size_t len, shm_seg **out)
{
    rf_status st = check_movable(start, len);
    if (st != RF_OK)
        return st;
    shm_seg *s = calloc(1, sizeof *s);
    if (!s)
        return rf_error_set(RF_ERR_NO_MEMORY, "shm: out of memory");
    int fd = shm_memfd_new("rdmaflow-shm-region", len);
    if (fd < 0) {
        free(s);
        return rf_error_set(RF_ERR_NO_RESOURCE,
                            "shm: memfd of %zu bytes for a region: %s", len,
                            strerror(errno));
    }
    void *tmp = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (tmp == MAP_FAILED) {
        st = rf_error_set(RF_ERR_NO_MEMORY, "shm: mmap memfd of %zu bytes: %s",
                          len, strerror(errno));
        close(fd);
        free(s);
        return st;
    }
    copy_policy(tmp, start, len);
    copy_pages(tmp, (const void *)start, len);
    if (mremap(tmp, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)start) ==
        MAP_FAILED) {
        st = rf_error_set(RF_ERR_NO_MEMORY, "shm: mremap memfd over %p+%zu: %s",
                          (void *)start, len, strerror(errno));
        munmap(tmp, len);
        close(fd);
        free(s);
        return st;
    }
    /* As verbs does for registered memory: a fork()ed child does not
     * inherit the shared pages (it would otherwise share them, not copy). */
    (void)madvise((void *)start, len, MADV_DONTFORK);
    s->id = next_seg_id++;
    s->fd = fd;
    s->start = start;
    s->len = len;
    s->refs = 1;
    *out = s;
    return RF_OK;
}

/* Moves the segment's pages back to private anonymous memory. */
static void seg_destroy(shm_seg *s)
{
    size_t pages = s->len / page_size();
    unsigned char *vec = malloc(pages ? pages : 1);
    int hole =
        vec && mincore((void *)s->start, s->len, vec) != 0 && errno == ENOMEM;
    free(vec);
    if (hole) { /* the user unmapped (freed) it before rf_mr_dereg */
        RF_LOG_WARN("shm: rf_mr_dereg: %p+%zu was unmapped while registered",
                    (void *)s->start, s->len);
        close(s->fd);
        free(s);
        return;
    }
    void *tmp = mmap(NULL, s->len, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (tmp == MAP_FAILED) {
        RF_LOG_ERRORF("shm: rf_mr_dereg: no memory to move %zu bytes at %p "
                      "back to private memory (%s); they stay shared",
                      s->len, (void *)s->start, strerror(errno));
    } else {
        copy_policy(tmp, s->start, s->len);
        copy_pages(tmp, (const void *)s->start, s->len);
        if (mremap(tmp, s->len, s->len, MREMAP_MAYMOVE | MREMAP_FIXED,
                   (void *)s->start) == MAP_FAILED) {
            RF_LOG_ERRORF("shm: rf_mr_dereg: mremap back to %p: %s",
                          (void *)s->start, strerror(errno));
            munmap(tmp, s->len);
        }
    }
    close(s->fd);
    free(s);
}

/* Finds or creates the segment for [start, end) (seg_mu held). */
static rf_status seg_get(uintptr_t start, uintptr_t end, shm_seg **out)
{
    for (shm_seg *s = segs; s; s = s->next) {
        uintptr_t se = s->start + s->len;
        if (start >= s->start && end <= se) {
            s->refs++;
            *out = s;
            return RF_OK;
        }
        if (start < se && end > s->start)
            return rf_error_set(
                RF_ERR_INVALID_ARG,
                "shm: rf_mr_reg: pages [%p, %p) partly overlap those of an "
                "existing remote-access region [%p, %p); register one region "
                "covering both, or regions inside it",
                (void *)start, (void *)end, (void *)s->start, (void *)se);
    }
    shm_seg *s = NULL;
    rf_status st = seg_create(start, end - start, &s);
    if (st != RF_OK)
        return st;
    s->next = segs;
    segs = s;
    *out = s;
    return RF_OK;
}

static void seg_put(shm_seg *seg)
{
    if (--seg->refs > 0)
        return;
    for (shm_seg **p = &segs; *p; p = &(*p)->next) {
        if (*p == seg) {
            *p = seg->next;
            break;
        }
    }
    seg_destroy(seg);
}

/* Writes table entry i (fab->mu held). */
static void table_write(shm_fabric *fab, uint32_t i, const shm_mr *mr,
                        int valid)
{
    shm_tentry *e = &fab->table[i];
    uint64_t seq = __atomic_load_n(&e->seq, __ATOMIC_RELAXED);
    __atomic_store_n(&e->seq, seq + 1, __ATOMIC_RELAXED);
    /* Release stores (no fences: ThreadSanitizer does not model them): a
     * reader that sees any new field also sees the odd sequence. */
    if (valid) {
        __atomic_store_n(&e->addr, mr->base.remote_addr, __ATOMIC_RELEASE);
        __atomic_store_n(&e->len, (uint64_t)mr->base.len, __ATOMIC_RELEASE);
        __atomic_store_n(&e->seg_off,
                         (uint64_t)((uintptr_t)mr->base.addr - mr->seg->start),
                         __ATOMIC_RELEASE);
        __atomic_store_n(&e->rkey, mr->base.rkey, __ATOMIC_RELEASE);
        __atomic_store_n(&e->access, mr->base.access, __ATOMIC_RELEASE);
        __atomic_store_n(&e->seg_id, mr->seg->id, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&e->valid, (uint32_t)valid, __ATOMIC_RELEASE);
    __atomic_store_n(&e->seq, seq + 2, __ATOMIC_RELEASE);
}

static int fabric_uses_seg(shm_fabric *fab, const shm_seg *seg)
{
    for (shm_mr *m = fab->mrs; m; m = m->next)
        if (m->seg == seg)
            return 1;
    return 0;
}

static void send_seg(shm_ep *ep, const shm_seg *seg)
{
    int fd = seg->fd;
    int e =
        shm_msg_send(ep->sock, SHM_MSG_SEG, seg->id, seg->len, NULL, 0, &fd, 1);
    if (e)
        shm_ep_fail(ep, RF_OK, 0, RF_OK,
                    "cannot pass a segment to the peer (socket full or "
                    "closed)");
}

rf_status shm_grant(shm_ep *ep)
{
    shm_fabric *fab = ep->fab;
    int fd = fab->table_fd;
    int e = shm_msg_send(ep->sock, SHM_MSG_TABLE, 0, SHM_TABLE_BYTES, NULL, 0,
                         &fd, 1);
    if (e) {
        shm_ep_fail(ep, RF_OK, 0, RF_OK, "cannot pass the region table");
        return rf_error_set(RF_ERR_DISCONNECTED,
                            "shm: passing the region table to %s: %s", ep->peer,
                            strerror(e));
    }
    ep->granted = 1;
    for (shm_mr *m = fab->mrs; m && ep->state == SHM_EP_OK; m = m->next) {
        int dup = 0;
        for (shm_mr *p = fab->mrs; p != m; p = p->next)
            dup |= p->seg == m->seg;
        if (!dup)
            send_seg(ep, m->seg);
    }
    return ep->state == SHM_EP_OK
               ? RF_OK
               : rf_error_set(RF_ERR_DISCONNECTED,
                              "shm: passing segments to %s failed", ep->peer);
}

/* A free slot for rkey `want` (0: choose one and the rkey) in its probe
 * window; fab->mu held. Returns SHM_TABLE_ENTRIES if there is none or the
 * wanted rkey is registered already. */
static uint32_t pick_slot(shm_fabric *fab, uint32_t want, uint32_t *rkey)
{
    if (want) {
        uint32_t h = want & (SHM_TABLE_ENTRIES - 1),
                 free_idx = SHM_TABLE_ENTRIES;
        for (uint32_t i = 0; i < SHM_PROBE_WINDOW; i++) {
            uint32_t j = (h + i) & (SHM_TABLE_ENTRIES - 1);
            if (fab->slot_used[j] && fab->table[j].rkey == want)
                return SHM_TABLE_ENTRIES;
            if (!fab->slot_used[j] && free_idx == SHM_TABLE_ENTRIES)
                free_idx = j;
        }
        *rkey = want;
        return free_idx;
    }
    for (uint32_t i = 0; i < SHM_TABLE_ENTRIES; i++) {
        uint32_t j = (fab->next_gen + i) % SHM_TABLE_ENTRIES;
        if (fab->slot_used[j])
            continue;
        /* rkey = generation << SHM_TABLE_BITS | index: found at the first
         * probe. A generation whose rkey a keyed registration holds in this
         * window is skipped. */
        for (int tries = 0; tries < 64; tries++) {
            fab->next_gen++;
            uint32_t gen = fab->next_gen & ((1u << (32 - SHM_TABLE_BITS)) - 1);
            if (gen == 0)
                continue;
            uint32_t k = gen << SHM_TABLE_BITS | j;
            int taken = 0;
            for (uint32_t w = 0; w < SHM_PROBE_WINDOW && !taken; w++) {
                uint32_t x = (j + w) & (SHM_TABLE_ENTRIES - 1);
                taken = fab->slot_used[x] && fab->table[x].rkey == k;
            }
            if (!taken) {
                *rkey = k;
                return j;
            }
        }
    }
    return SHM_TABLE_ENTRIES;
}

rf_status shm_mr_reg(rf_fabric *fabric, void *addr, size_t len, uint32_t access,
                     rf_mr **out)
{
    return shm_mr_reg_keyed(fabric, addr, len, access, 0, out);
}

rf_status shm_mr_reg_keyed(rf_fabric *fabric, void *addr, size_t len,
                           uint32_t access, uint32_t want_rkey, rf_mr **out)
{
    shm_fabric *fab = (shm_fabric *)fabric;
    shm_mr *mr = calloc(1, sizeof *mr);
    if (!mr)
        return rf_error_set(RF_ERR_NO_MEMORY, "shm: rf_mr_reg: out of memory");
    mr->base.fabric = fabric;
    mr->base.addr = addr;
    mr->base.len = len;
    mr->base.access = access;
    mr->base.remote_addr = (uint64_t)(uintptr_t)addr;
    if (!(access & REMOTE_BITS)) {
        mr->base.rkey = 0;
        *out = &mr->base;
        return RF_OK;
    }
    uintptr_t a = (uintptr_t)addr, pg = page_size();
    if (a + len < a || a + len + pg < a + len) {
        free(mr);
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "shm: rf_mr_reg: %p+%zu wraps around", addr, len);
    }
    uintptr_t start = a & ~(pg - 1), end = (a + len + pg - 1) & ~(pg - 1);

    pthread_mutex_lock(&seg_mu);
    pthread_mutex_lock(&fab->mu);
    /* A free slot from this process's own bitmap (the shared table is
     * only ever written here, never trusted). */
    uint32_t rkey = 0;
    uint32_t idx = pick_slot(fab, want_rkey, &rkey);
    rf_status st = RF_OK;
    if (idx == SHM_TABLE_ENTRIES && want_rkey)
        st = rf_error_set(RF_ERR_NO_RESOURCE,
                          "shm: rf_mr_reg: rkey 0x%x is registered already or "
                          "its %u table slots are in use",
                          want_rkey, SHM_PROBE_WINDOW);
    else if (idx == SHM_TABLE_ENTRIES)
        st = rf_error_set(RF_ERR_NO_RESOURCE,
                          "shm: rf_mr_reg: all %u remote-access regions of "
                          "this fabric are in use",
                          SHM_TABLE_ENTRIES);
    if (st == RF_OK)
        st = seg_get(start, end, &mr->seg);
    if (st != RF_OK) {
        pthread_mutex_unlock(&fab->mu);
        pthread_mutex_unlock(&seg_mu);
        free(mr);
        return st;
    }
    mr->index = idx;
    fab->slot_used[idx] = 1;
    mr->base.rkey = rkey;
    /* The peers get the segment before the entry is valid, so an initiator
     * that sees the entry finds the segment's message on its socket. */
    int new_for_fabric = !fabric_uses_seg(fab, mr->seg);
    mr->next = fab->mrs;
    fab->mrs = mr;
    if (new_for_fabric) {
        for (shm_ep *ep = fab->eps; ep; ep = ep->next) {
            rf_spin_lock(&ep->lock);
            if (ep->granted && ep->state == SHM_EP_OK)
                send_seg(ep, mr->seg);
            rf_spin_unlock(&ep->lock);
        }
    }
    table_write(fab, idx, mr, 1);
    pthread_mutex_unlock(&fab->mu);
    pthread_mutex_unlock(&seg_mu);
    RF_LOG_DEBUG("shm: registered %p+%zu access 0x%x rkey 0x%x (segment %u)",
                 addr, len, access, mr->base.rkey, mr->seg->id);
    *out = &mr->base;
    return RF_OK;
}

rf_status shm_mr_dereg(rf_mr *base)
{
    shm_mr *mr = (shm_mr *)base;
    shm_fabric *fab = (shm_fabric *)base->fabric;
    if (!mr->seg) {
        free(mr);
        return RF_OK;
    }
    pthread_mutex_lock(&seg_mu);
    pthread_mutex_lock(&fab->mu);
    table_write(fab, mr->index, mr, 0);
    fab->slot_used[mr->index] = 0;
    for (shm_mr **p = &fab->mrs; *p; p = &(*p)->next) {
        if (*p == mr) {
            *p = mr->next;
            break;
        }
    }
    if (!fabric_uses_seg(fab, mr->seg)) {
        for (shm_ep *ep = fab->eps; ep; ep = ep->next) {
            rf_spin_lock(&ep->lock);
            if (ep->granted && ep->state == SHM_EP_OK)
                (void)shm_msg_send(ep->sock, SHM_MSG_SEG_GONE, mr->seg->id, 0,
                                   NULL, 0, NULL, 0);
            rf_spin_unlock(&ep->lock);
        }
    }
    pthread_mutex_unlock(&fab->mu);
    seg_put(mr->seg);
    pthread_mutex_unlock(&seg_mu);
    free(mr);
    return RF_OK;
}
