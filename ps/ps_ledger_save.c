/* ps/ps_ledger_save.c: the shard ledger's saved form (ps_ledger.h), what
 * the chief's checkpoint keeps so that a restarted ps task 0 goes on with
 * the epoch where the checkpoint left it. Held shards are saved returned
 * (owner -1) at their recorded batch: whoever asks first after the load
 * continues them, as after a departure. */
#include <inttypes.h>
#include <isa-l/crc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ps/ps_ledger.h"
#include "rdmaflow/byteorder.h"

#define MAGIC  0x474c4652u /* "RFLG" little-endian */
#define FORMAT 1u

static uint32_t crc(const unsigned char *p, size_t n)
{
    return crc32_iscsi((unsigned char *)(uintptr_t)p, (int)n, 0);
}

static void put32(unsigned char **p, uint32_t v)
{
    rf_put_le32(*p, v);
    *p += 4;
}

static void put64(unsigned char **p, uint64_t v)
{
    rf_put_le64(*p, v);
    *p += 8;
}

static uint32_t get32(const unsigned char **p)
{
    uint32_t v = rf_get_le32(*p);
    *p += 4;
    return v;
}

static uint64_t get64(const unsigned char **p)
{
    uint64_t v = rf_get_le64(*p);
    *p += 8;
    return v;
}

rf_status ps_ledger_save(const ps_ledger *l, unsigned char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    if (!l->set)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "shard ledger: nothing to save (no worker asked "
                            "for a shard yet)");
    if (l->ntasks > PS_LEDGER_SAVE_MAX_TASKS)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "shard ledger: %u outstanding shards (at most "
                            "%u are saved)",
                            l->ntasks, PS_LEDGER_SAVE_MAX_TASKS);
    size_t n = PS_LEDGER_SAVE_HDR + (size_t)l->ntasks * PS_LEDGER_SAVE_TASK + 4;
    unsigned char *buf = malloc(n), *p = buf;
    if (!buf)
        return rf_error_set(RF_ERR_NO_MEMORY, "shard ledger: %zu bytes", n);
    put32(&p, MAGIC);
    put32(&p, FORMAT);
    put64(&p, l->geom.num_examples);
    put32(&p, l->geom.batch_size);
    put32(&p, l->geom.shard_batches);
    put64(&p, l->geom.seed);
    put32(&p, l->epoch);
    put32(&p, l->cursor);
    put64(&p, l->shards_done);
    put64(&p, l->batches_done);
    put64(&p, l->returned);
    put32(&p, l->ntasks);
    for (uint32_t i = 0; i < l->ntasks; i++) {
        put32(&p, l->tasks[i].epoch);
        put32(&p, l->tasks[i].shard);
        put32(&p, l->tasks[i].next);
    }
    put32(&p, crc(buf, n - 4));
    *out = buf;
    *len = n;
    return RF_OK;
}

static int by_place(const void *a, const void *b)
{
    const ps_ledger_task *x = a, *y = b;
    if (x->epoch != y->epoch)
        return x->epoch < y->epoch ? -1 : 1;
    return x->shard < y->shard ? -1 : x->shard > y->shard;
}

#define CORRUPT(...)                                                           \
    rf_error_set(RF_ERR_CORRUPT, "saved shard ledger: " __VA_ARGS__)

/* The tasks from p, checked against the geometry and the deal so far. */
static rf_status load_tasks(ps_ledger *l, const unsigned char *p)
{
    unsigned char *dealt = calloc((l->num_shards + 7) / 8, 1);
    if (!dealt)
        return rf_error_set(RF_ERR_NO_MEMORY, "shard ledger: %u shards",
                            l->num_shards);
    for (uint32_t i = 0; i < l->cursor; i++)
        dealt[l->order[i] / 8] |= (unsigned char)(1u << (l->order[i] % 8));
    rf_status st = RF_OK;
    for (uint32_t i = 0; i < l->ntasks && st == RF_OK; i++) {
        ps_ledger_task *t = &l->tasks[i];
        t->epoch = get32(&p);
        t->shard = get32(&p);
        t->next = get32(&p);
        t->owner = -1;
        if (t->shard >= l->num_shards || t->epoch > l->epoch)
            st = CORRUPT("task %u is shard %u of epoch %u, outside %u "
                         "shards and epochs 0-%u",
                         i, t->shard, t->epoch, l->num_shards, l->epoch);
        else if ((t->len = ps_ledger_shard_len(l, t->shard)) <= t->next)
            st = CORRUPT("task %u (shard %u of epoch %u) has %u of its %u "
                         "batches trained (a finished shard is not saved)",
                         i, t->shard, t->epoch, t->next, t->len);
        else if (t->epoch == l->epoch &&
                 !(dealt[t->shard / 8] & (1u << (t->shard % 8))))
            st = CORRUPT("task %u is shard %u of epoch %u, which the saved "
                         "cursor (%u of %u) has not dealt",
                         i, t->shard, t->epoch, l->cursor, l->num_shards);
    }
    free(dealt);
    if (st != RF_OK)
        return st;
    ps_ledger_task *sorted = malloc(l->ntasks * sizeof *sorted + 1);
    if (!sorted)
        return rf_error_set(RF_ERR_NO_MEMORY, "shard ledger: %u tasks",
                            l->ntasks);
    memcpy(sorted, l->tasks, l->ntasks * sizeof *sorted);
    qsort(sorted, l->ntasks, sizeof *sorted, by_place);
    for (uint32_t i = 1; i < l->ntasks && st == RF_OK; i++)
        if (!by_place(&sorted[i - 1], &sorted[i]))
            st = CORRUPT("shard %u of epoch %u is saved twice", sorted[i].shard,
                         sorted[i].epoch);
    free(sorted);
    return st;
}

static rf_status load(ps_ledger *l, const unsigned char *buf, size_t len)
{
    if (len < PS_LEDGER_SAVE_HDR + 4)
        return CORRUPT("%zu bytes, shorter than its %u-byte header", len,
                       PS_LEDGER_SAVE_HDR + 4);
    const unsigned char *p = buf;
    uint32_t magic = get32(&p), format = get32(&p);
    if (magic != MAGIC)
        return CORRUPT("magic 0x%08x is not \"RFLG\"", magic);
    if (format != FORMAT)
        return CORRUPT("format %u (this build reads %u)", format, FORMAT);
    uint32_t want = rf_get_le32(buf + len - 4), got = crc(buf, len - 4);
    rf_ps_shard_geometry g;
    g.num_examples = get64(&p);
    g.batch_size = get32(&p);
    g.shard_batches = get32(&p);
    g.seed = get64(&p);
    uint32_t epoch = get32(&p), cursor = get32(&p);
    uint64_t shards_done = get64(&p), batches_done = get64(&p),
             returned = get64(&p);
    uint32_t ntasks = get32(&p);
    if (ntasks > PS_LEDGER_SAVE_MAX_TASKS ||
        len != PS_LEDGER_SAVE_HDR + (size_t)ntasks * PS_LEDGER_SAVE_TASK + 4)
        return CORRUPT("%zu bytes for %u tasks (at most %u, %u bytes each "
                       "after a %u-byte header, then a CRC32C)",
                       len, ntasks, PS_LEDGER_SAVE_MAX_TASKS,
                       PS_LEDGER_SAVE_TASK, PS_LEDGER_SAVE_HDR);
    if (want != got)
        return CORRUPT("CRC32C 0x%08x, its bytes give 0x%08x", want, got);
    if (ps_ledger_set_geometry(l, &g) != RF_OK)
        return CORRUPT("%s", rf_error_message());
    l->epoch = epoch;
    ps_ledger_deal_order(l);
    if (cursor > l->num_shards)
        return CORRUPT("cursor %u past the %u shards of an epoch", cursor,
                       l->num_shards);
    l->cursor = cursor;
    l->shards_done = shards_done;
    l->batches_done = batches_done;
    l->returned = returned;
    if (ntasks) {
        l->tasks = calloc(ntasks, sizeof *l->tasks);
        if (!l->tasks)
            return rf_error_set(RF_ERR_NO_MEMORY, "shard ledger: %u tasks",
                                ntasks);
        l->ntasks = l->cap = ntasks;
    }
    return load_tasks(l, p);
}

rf_status ps_ledger_load(ps_ledger *l, const void *buf, size_t len)
{
    if (l->set)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "shard ledger: set already (epoch %u, %u of %u "
                            "shards dealt); a saved one loads only into an "
                            "unset ledger",
                            l->epoch, l->cursor, l->num_shards);
    rf_status st = load(l, buf, len);
    if (st != RF_OK)
        ps_ledger_free(l);
    return st;
}

rf_status rf_ps_ledger_check(const void *buf, size_t len, char *desc,
                             size_t cap)
{
    if (!buf && len)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_ps_ledger_check: NULL");
    ps_ledger l;
    ps_ledger_init(&l);
    rf_status st = ps_ledger_load(&l, buf, len);
    if (st == RF_OK && desc && cap)
        snprintf(desc, cap,
                 "shard ledger: epoch %u (%u of %u shards dealt), %u "
                 "shards outstanding, %" PRIu64 " batches recorded trained",
                 l.epoch, l.cursor, l.num_shards, l.ntasks, l.batches_done);
    ps_ledger_free(&l);
    return st;
}
