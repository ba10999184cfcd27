/* ps/ps_ledger.c: the shard ledger's logic (ps_ledger.h). A shard is
 * shard_batches consecutive batches of the training set in its stored
 * order (the last shard may be shorter); epoch e deals its shards in an
 * order shuffled by seed + e. The outstanding tasks are the shards dealt
 * and not finished; a finished shard is forgotten, so an epoch is done
 * when all of its shards were dealt and none is outstanding. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ps/ps_ledger.h"

void ps_ledger_init(ps_ledger *l)
{
    memset(l, 0, sizeof *l);
}

void ps_ledger_free(ps_ledger *l)
{
    free(l->order);
    free(l->tasks);
    ps_ledger_init(l);
}

static uint64_t mix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* epoch e's deal order: a Fisher-Yates shuffle of the shard ids drawn
 * from splitmix64 seeded by seed + e (the small modulo bias is harmless
 * for an order of shards) */
void ps_ledger_deal_order(ps_ledger *l)
{
    uint64_t x = l->geom.seed + l->epoch;
    for (uint32_t i = 0; i < l->num_shards; i++)
        l->order[i] = i;
    for (uint32_t i = l->num_shards; i > 1; i--) {
        uint32_t j = (uint32_t)(mix(&x) % i), t = l->order[i - 1];
        l->order[i - 1] = l->order[j];
        l->order[j] = t;
    }
    l->cursor = 0;
}

static void describe(const rf_ps_shard_geometry *g, char *buf, size_t len)
{
    snprintf(buf, len,
             "%" PRIu64 " examples, batch_size %u, %u batches per shard, "
             "seed %" PRIu64,
             g->num_examples, g->batch_size, g->shard_batches, g->seed);
}

rf_status ps_ledger_set_geometry(ps_ledger *l, const rf_ps_shard_geometry *g)
{
    char d[200];
    describe(g, d, sizeof d);
    if (!g->batch_size || !g->shard_batches || g->num_examples < g->batch_size)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "shard ledger: %s is not one whole batch", d);
    uint64_t nb = g->num_examples / g->batch_size;
    uint64_t ns = (nb + g->shard_batches - 1) / g->shard_batches;
    if (nb > UINT32_MAX || ns > PS_LEDGER_MAX_SHARDS)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "shard ledger: %s makes %" PRIu64 " shards "
                            "(at most %u)",
                            d, ns, PS_LEDGER_MAX_SHARDS);
    l->order = malloc(ns * sizeof *l->order);
    if (!l->order)
        return rf_error_set(RF_ERR_NO_MEMORY,
                            "shard ledger: %" PRIu64 " shards", ns);
    l->geom = *g;
    l->num_batches = (uint32_t)nb;
    l->num_shards = (uint32_t)ns;
    l->set = true;
    ps_ledger_deal_order(l);
    return RF_OK;
}

static bool same_geometry(const rf_ps_shard_geometry *a,
                          const rf_ps_shard_geometry *b)
{
    return a->num_examples == b->num_examples &&
           a->batch_size == b->batch_size &&
           a->shard_batches == b->shard_batches && a->seed == b->seed;
}

uint32_t ps_ledger_shard_len(const ps_ledger *l, uint32_t shard)
{
    uint32_t first = shard * l->geom.shard_batches;
    uint32_t left = l->num_batches - first;
    return left < l->geom.shard_batches ? left : l->geom.shard_batches;
}

static ps_ledger_task *find(ps_ledger *l, uint32_t epoch, uint32_t shard)
{
    for (uint32_t i = 0; i < l->ntasks; i++)
        if (l->tasks[i].epoch == epoch && l->tasks[i].shard == shard)
            return &l->tasks[i];
    return NULL;
}

static void drop(ps_ledger *l, ps_ledger_task *t)
{
    *t = l->tasks[--l->ntasks];
}

/* Records client's progress on done; RF_OK with *stale when the shard is
 * no longer its own. */
static rf_status progress(ps_ledger *l, uint32_t client,
                          const rf_ps_shard_grant *done, bool *stale)
{
    ps_ledger_task *t = find(l, done->epoch, done->shard);
    if (!t || t->owner != (int32_t)client) {
        *stale = true;
        return RF_OK;
    }
    if (done->batch < t->next || done->batch > t->len)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "shard ledger: client %u reports batch %u of "
                            "shard %u (epoch %u), which has %u batches and "
                            "%u recorded trained",
                            client, done->batch, done->shard, done->epoch,
                            t->len, t->next);
    l->batches_done += done->batch - t->next;
    t->next = done->batch;
    if (t->next == t->len) {
        l->shards_done++;
        drop(l, t);
    }
    return RF_OK;
}

static ps_ledger_task *add(ps_ledger *l)
{
    if (l->ntasks == l->cap) {
        uint32_t cap = l->cap ? 2 * l->cap : 16;
        ps_ledger_task *t = realloc(l->tasks, cap * sizeof *t);
        if (!t)
            return NULL;
        l->tasks = t;
        l->cap = cap;
    }
    return &l->tasks[l->ntasks++];
}

/* The task client trains now: the one it holds, else the oldest returned
 * one, else the next shard of the epoch being dealt (the next epoch once
 * all of this one's were dealt). */
static ps_ledger_task *deal(ps_ledger *l, uint32_t client)
{
    ps_ledger_task *best = NULL;
    for (uint32_t i = 0; i < l->ntasks; i++) {
        ps_ledger_task *t = &l->tasks[i];
        if (t->owner == (int32_t)client)
            return t;
        if (t->owner < 0 &&
            (!best || t->epoch < best->epoch ||
             (t->epoch == best->epoch && t->shard < best->shard)))
            best = t;
    }
    if (best) {
        best->owner = (int32_t)client;
        return best;
    }
    if (l->cursor == l->num_shards) {
        l->epoch++;
        ps_ledger_deal_order(l);
    }
    ps_ledger_task *t = add(l);
    if (!t)
        return NULL;
    uint32_t shard = l->order[l->cursor++];
    *t = (ps_ledger_task){.epoch = l->epoch,
                          .shard = shard,
                          .len = ps_ledger_shard_len(l, shard),
                          .owner = (int32_t)client};
    return t;
}

uint32_t ps_ledger_epochs_done(const ps_ledger *l)
{
    if (!l->set)
        return 0;
    uint32_t lo = l->epoch + (l->cursor == l->num_shards);
    for (uint32_t i = 0; i < l->ntasks; i++)
        if (l->tasks[i].epoch < lo)
            lo = l->tasks[i].epoch;
    return lo;
}

rf_status ps_ledger_request(ps_ledger *l, uint32_t client,
                            const rf_ps_shard_geometry *g,
                            const rf_ps_shard_grant *done,
                            rf_ps_shard_grant *next, bool *stale)
{
    *stale = false;
    if (client > INT32_MAX)
        return rf_error_set(RF_ERR_INVALID_ARG, "shard ledger: client id %u",
                            client);
    if (!l->set) {
        rf_status st = ps_ledger_set_geometry(l, g);
        if (st != RF_OK)
            return st;
    } else if (!same_geometry(&l->geom, g)) {
        char have[200], want[200];
        describe(&l->geom, have, sizeof have);
        describe(g, want, sizeof want);
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "shard ledger: client %u's data is %s, but the "
                            "job's ledger has %s (every worker must train "
                            "the same data with the same --batch_size, "
                            "--shard_batches and --seed)",
                            client, want, have);
    }
    if (done) {
        rf_status st = progress(l, client, done, stale);
        if (st != RF_OK)
            return st;
    }
    ps_ledger_task *t = deal(l, client);
    if (!t)
        return rf_error_set(RF_ERR_NO_MEMORY, "shard ledger: %u tasks",
                            l->ntasks);
    *next = (rf_ps_shard_grant){
        .epoch = t->epoch,
        .shard = t->shard,
        .batch = t->next,
        .shard_len = t->len,
        .num_shards = l->num_shards,
        .epochs_done = ps_ledger_epochs_done(l),
        .first_example =
            ((uint64_t)t->shard * l->geom.shard_batches + t->next) *
            l->geom.batch_size,
    };
    return RF_OK;
}

uint32_t ps_ledger_release(ps_ledger *l, uint32_t client)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < l->ntasks; i++)
        if (l->tasks[i].owner == (int32_t)client) {
            l->tasks[i].owner = -1;
            n++;
        }
    l->returned += n;
    return n;
}
