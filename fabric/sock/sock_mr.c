/* fabric/sock/sock_mr.c: memory regions of the sock provider. A hash table
 * from rkey to region (random, non-zero, unique 32-bit keys), looked up by
 * threads serving endpoints with fab->mr_mu held shared. Registration and
 * deregistration take it exclusively, so dereg waits for any access in
 * progress, and then detaches the region from
 * every endpoint (pending read data copied or failed) before returning. */
#include <stdlib.h>
#include <sys/random.h>
#include <unistd.h>

#include "core/log.h"
#include "fabric/sock/sock.h"
#include "rdmaflow/status.h"

static uint32_t random_u32(void)
{
    uint32_t v;
    if (getrandom(&v, sizeof v, 0) == (ssize_t)sizeof v)
        return v;
    /* No getrandom: a splitmix64 step over time, pid and a counter. */
    static uint64_t counter;
    uint64_t t = rf_now_ns();
    uint64_t z =
        __atomic_add_fetch(&counter, 0x9e3779b97f4a7c15ull, __ATOMIC_RELAXED) ^
        (t << 20) ^ (t >> 30) ^ ((uint64_t)getpid() << 40);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (uint32_t)(z ^ (z >> 31));
}

static size_t bucket_of(const sock_fabric *fab, uint32_t rkey)
{
    uint32_t h = rkey * 0x9e3779b1u;
    return (h ^ (h >> 16)) & (fab->mr_nbuckets - 1);
}

sock_mr *sock_mr_find(sock_fabric *fab, uint32_t rkey)
{
    for (sock_mr *m = fab->mr_buckets[bucket_of(fab, rkey)]; m; m = m->next)
        if (m->base.rkey == rkey)
            return m;
    return NULL;
}

static void grow_table(sock_fabric *fab)
{
    size_t n = fab->mr_nbuckets * 2;
    sock_mr **b = calloc(n, sizeof *b);
    if (!b)
        return; /* keep the longer chains */
    sock_mr **old = fab->mr_buckets;
    size_t oldn = fab->mr_nbuckets;
    fab->mr_buckets = b;
    fab->mr_nbuckets = n;
    for (size_t i = 0; i < oldn; i++) {
        while (old[i]) {
            sock_mr *m = old[i];
            old[i] = m->next;
            size_t k = bucket_of(fab, m->base.rkey);
            m->next = b[k];
            b[k] = m;
        }
    }
    free(old);
}

rf_status sock_mr_reg(rf_fabric *fabric, void *addr, size_t len,
                      uint32_t access, rf_mr **out)
{
    return sock_mr_reg_keyed(fabric, addr, len, access, 0, out);
}

rf_status sock_mr_reg_keyed(rf_fabric *fabric, void *addr, size_t len,
                            uint32_t access, uint32_t want_rkey, rf_mr **out)
{
    sock_fabric *fab = SOCK_FAB(fabric);
    sock_mr *mr = calloc(1, sizeof *mr);
    if (!mr)
        return rf_error_set(RF_ERR_NO_MEMORY, "rf_mr_reg: out of memory");
    mr->base.fabric = fabric;
    mr->base.addr = addr;
    mr->base.len = len;
    mr->base.access = access;
    mr->base.remote_addr = (uint64_t)(uintptr_t)addr;

    pthread_rwlock_wrlock(&fab->mr_mu);
    uint32_t key = want_rkey;
    if (key && sock_mr_find(fab, key)) {
        pthread_rwlock_unlock(&fab->mr_mu);
        free(mr);
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_mr_reg: rkey 0x%x is registered already", key);
    }
    while (key == 0 || sock_mr_find(fab, key))
        key = random_u32();
    mr->base.rkey = key;
    if (fab->mr_count >= fab->mr_nbuckets)
        grow_table(fab);
    size_t b = bucket_of(fab, key);
    mr->next = fab->mr_buckets[b];
    fab->mr_buckets[b] = mr;
    fab->mr_count++;
    pthread_rwlock_unlock(&fab->mr_mu);
    *out = &mr->base;
    return RF_OK;
}

rf_status sock_mr_dereg(rf_mr *base)
{
    sock_mr *mr = (sock_mr *)base;
    sock_fabric *fab = SOCK_FAB(base->fabric);
    pthread_rwlock_wrlock(&fab->mr_mu);
    sock_mr **p = &fab->mr_buckets[bucket_of(fab, base->rkey)];
    while (*p && *p != mr)
        p = &(*p)->next;
    if (!*p) {
        pthread_rwlock_unlock(&fab->mr_mu);
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_mr_dereg: region is not registered");
    }
    *p = mr->next;
    fab->mr_count--;
    /* Peers can no longer find it; make sure no endpoint still points into
     * it (queued read data, a write payload being received). */
    pthread_mutex_lock(&fab->mu);
    for (sock_ep *ep = fab->eps; ep; ep = ep->next) {
        pthread_mutex_lock(&ep->mu);
        sock_tgt_region_gone(ep, mr);
        pthread_mutex_unlock(&ep->mu);
    }
    pthread_mutex_unlock(&fab->mu);
    pthread_rwlock_unlock(&fab->mr_mu);
    free(mr);
    return RF_OK;
}

void sock_mr_free_all(sock_fabric *fab)
{
    for (size_t i = 0; i < fab->mr_nbuckets; i++) {
        while (fab->mr_buckets[i]) {
            sock_mr *m = fab->mr_buckets[i];
            fab->mr_buckets[i] = m->next;
            free(m);
        }
    }
    fab->mr_count = 0;
}
