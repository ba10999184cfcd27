/* ps/ps_ledger.h: the shard ledger of elastic workers (ps task 0's CPU,
 * docs/DESIGN.md "The shard ledger"): the training set cut into shards of
 * whole batches, dealt to workers, their progress recorded per batch, a
 * departed worker's unfinished shards returned at their recorded batch,
 * epochs dealt one after the other (the next one starts when every shard
 * of the current one has been dealt, as DLRover's BatchDatasetManager
 * does). Pure logic: no I/O, no locks (the ps's service thread owns it),
 * so tests/unit/ps/test_ledger.c drives it directly. */
#ifndef RF_PS_LEDGER_H
#define RF_PS_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmaflow/ps.h"
#include "rdmaflow/status.h"

/* Most shards per epoch (bounds the deal order's memory). */
#define PS_LEDGER_MAX_SHARDS (1u << 24)

/* A shard dealt and not finished: held by owner, or returned (owner -1). */
typedef struct ps_ledger_task {
    uint32_t epoch, shard;
    uint32_t next; /* batches of the shard trained (recorded) */
    uint32_t len;  /* batches in the shard */
    int32_t owner; /* client id, or -1: returned, to be dealt again */
} ps_ledger_task;

typedef struct ps_ledger {
    bool set; /* the first request fixed the geometry */
    rf_ps_shard_geometry geom;
    uint32_t num_batches, num_shards;
    uint32_t epoch;  /* the epoch being dealt */
    uint32_t cursor; /* shards of that epoch dealt (positions of order) */
    uint32_t *order; /* that epoch's deal order (seed + epoch) */
    ps_ledger_task *tasks;
    uint32_t ntasks, cap;
    uint64_t shards_done, batches_done, returned;
} ps_ledger;

void ps_ledger_init(ps_ledger *l);
void ps_ledger_free(ps_ledger *l);
/* One request of client: done (NULL when it holds nothing it reports on)
 * says it trained the batches of done->shard of done->epoch before
 * done->batch; *next is the batch it trains now (its shard, a returned
 * one, or a new one; the next epoch's once this one's are all dealt). A
 * geometry that differs from the ledger's is RF_ERR_INVALID_ARG with the
 * two named; so is progress that goes back or past the shard. Progress
 * on a shard this client no longer holds (it was returned while the
 * client was away) is not recorded: *stale is set and a shard dealt. */
rf_status ps_ledger_request(ps_ledger *l, uint32_t client,
                            const rf_ps_shard_geometry *g,
                            const rf_ps_shard_grant *done,
                            rf_ps_shard_grant *next, bool *stale);
/* A client left or expired: its unfinished shards are returned at their
 * recorded batch. Returns how many. */
uint32_t ps_ledger_release(ps_ledger *l, uint32_t client);
/* Epochs every shard of which was trained (the lowest open epoch). */
uint32_t ps_ledger_epochs_done(const ps_ledger *l);

/* Saving and loading (ps/ps_ledger_save.c; the chief's checkpoint keeps
 * it: docs/DESIGN.md "The shard ledger"). The saved form, little-endian,
 * a multiple of 4 bytes: magic "RFLG", format 1, the geometry, epoch,
 * cursor, the three counters, the task count, per task {epoch, shard,
 * next} (no owner: a held shard is saved returned, at its recorded
 * batch), then the CRC32C of all before it. At most
 * PS_LEDGER_SAVE_MAX_TASKS tasks (one per client that holds or held one:
 * a new shard is dealt only when no returned one is left), so the saved
 * form is at most PS_LEDGER_SAVE_MAX bytes. */
#define PS_LEDGER_SAVE_MAX_TASKS ((uint32_t)RF_PS_MAX_DONE_WORKERS)
#define PS_LEDGER_SAVE_HDR       68u
#define PS_LEDGER_SAVE_TASK      12u
#define PS_LEDGER_SAVE_MAX                                                     \
    (PS_LEDGER_SAVE_HDR + PS_LEDGER_SAVE_TASK * PS_LEDGER_SAVE_MAX_TASKS + 4u)
/* The saved form of a set ledger into a malloc'd *out of *len bytes. */
rf_status ps_ledger_save(const ps_ledger *l, unsigned char **out, size_t *len);
/* Loads a saved form into l, which must be unset (RF_ERR_INVALID_ARG
 * otherwise); a form that is truncated, fails its CRC or is inconsistent
 * (a task outside the geometry, a shard of the current epoch not dealt
 * yet, a task twice) is RF_ERR_CORRUPT naming what, and l stays unset. */
rf_status ps_ledger_load(ps_ledger *l, const void *buf, size_t len);
/* Internal to ps_ledger*.c: fixes the geometry (allocates the order) and
 * computes epoch l->epoch's deal order (cursor 0). */
rf_status ps_ledger_set_geometry(ps_ledger *l, const rf_ps_shard_geometry *g);
void ps_ledger_deal_order(ps_ledger *l);
uint32_t ps_ledger_shard_len(const ps_ledger *l, uint32_t shard);

#endif
