/* fabric/fabric_tally.c: rf_fabric_counters without an atomic
 * read-modify-write per rf_post. Each thread counts its posts on a fabric
 * in a block of its own (a relaxed load and store per op kind: one writer),
 * linked into the fabric's list the first time the thread posts there and
 * found again through a one-entry thread-local cache keyed by the fabric's
 * id (ids are never reused, so a closed fabric's entry never matches).
 * rf_fabric_counters_get sums the blocks. A block outlives its thread (a
 * new thread with the same pthread_t takes it over: still one writer) and
 * is freed with the fabric. If a block cannot be allocated, the thread
 * counts with atomic adds on the fabric's shared counters instead. */
#include <pthread.h>
#include <stdlib.h>

#include "fabric/provider.h"

struct rf_post_tally {
    rf_post_tally *next;
    pthread_t owner;
    uint64_t posted[RF_FABRIC_OPS], bytes[RF_FABRIC_OPS];
};

static uint64_t next_fabric_id = 1;

static _Thread_local struct {
    uint64_t fabric_id;
    rf_post_tally *tally;
} tl_cache;

void rf_fabric_tally_init(rf_fabric *f)
{
    f->tally_id = __atomic_fetch_add(&next_fabric_id, 1, __ATOMIC_RELAXED);
    f->tallies = NULL;
    pthread_mutex_init(&f->tally_mu, NULL);
    for (int i = 0; i < RF_FABRIC_OPS; i++)
        f->posted[i] = f->posted_bytes[i] = 0;
}

void rf_fabric_tally_free(rf_fabric *f)
{
    if (!f->tally_id)
        return; /* opened by another provider, not by rf_fabric_open */
    for (rf_post_tally *t = f->tallies, *next; t; t = next) {
        next = t->next;
        free(t);
    }
    f->tallies = NULL;
    pthread_mutex_destroy(&f->tally_mu);
}

/* This thread's block on f, NULL if none could be allocated. */
static rf_post_tally *own_tally(rf_fabric *f)
{
    if (tl_cache.fabric_id == f->tally_id)
        return tl_cache.tally;
    pthread_t self = pthread_self();
    pthread_mutex_lock(&f->tally_mu);
    rf_post_tally *t = f->tallies;
    while (t && !pthread_equal(t->owner, self))
        t = t->next;
    if (!t && (t = calloc(1, sizeof *t)) != NULL) {
        t->owner = self;
        t->next = f->tallies;
        f->tallies = t;
    }
    pthread_mutex_unlock(&f->tally_mu);
    if (t) {
        tl_cache.fabric_id = f->tally_id;
        tl_cache.tally = t;
    }
    return t;
}

static void bump(uint64_t *counter, uint64_t by)
{
    __atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + by,
                     __ATOMIC_RELAXED);
}

void rf_fabric_tally_add(rf_fabric *f, const rf_wr *wrs, size_t n)
{
    rf_post_tally *t = own_tally(f);
    for (size_t i = 0; i < n; i++) {
        unsigned op = (unsigned)wrs[i].op;
        if (op >= RF_FABRIC_OPS)
            continue;
        if (t) {
            bump(&t->posted[op], 1);
            bump(&t->bytes[op], wrs[i].len);
        } else {
            __atomic_fetch_add(&f->posted[op], 1, __ATOMIC_RELAXED);
            __atomic_fetch_add(&f->posted_bytes[op], wrs[i].len,
                               __ATOMIC_RELAXED);
        }
    }
}

void rf_fabric_tally_sum(rf_fabric *f, rf_fabric_counters *out)
{
    for (int i = 0; i < RF_FABRIC_OPS; i++) {
        out->posted[i] = __atomic_load_n(&f->posted[i], __ATOMIC_RELAXED);
        out->bytes[i] = __atomic_load_n(&f->posted_bytes[i], __ATOMIC_RELAXED);
    }
    if (!f->tally_id)
        return;
    pthread_mutex_lock(&f->tally_mu);
    for (const rf_post_tally *t = f->tallies; t; t = t->next)
        for (int i = 0; i < RF_FABRIC_OPS; i++) {
            out->posted[i] += __atomic_load_n(&t->posted[i], __ATOMIC_RELAXED);
            out->bytes[i] += __atomic_load_n(&t->bytes[i], __ATOMIC_RELAXED);
        }
    pthread_mutex_unlock(&f->tally_mu);
}
