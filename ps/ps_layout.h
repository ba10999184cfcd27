/* ps/ps_layout.h: the data-plane layouts both sides compute the same
 * way: the shard record (header words, values, slots; see rdmaflow/ps.h),
 * the globals block (PS_GLOBALS_BYTES at the start of a ps's first chunk,
 * zero when the ps starts: global_step at 0, the workers-done bitmap at 8,
 * the stale-synchronous-parallel clock words at PS_CLOCKS_OFF, the rest
 * reserved; the cluster's are ps task 0's), the write_imm immediates of
 * pushes and acks, the ack word and the inbox of a sync-replicas shard.
 * Pure functions, shared by server, client and the protocol checks. */
#ifndef RF_GRAPH_DIST_PS_LAYOUT_H
#define RF_GRAPH_DIST_PS_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "rdmaflow/optim.h"
#include "rdmaflow/ps.h"
#include "rdmaflow/status.h"
#include "rdmaflow/types.h"

#define PS_ALIGN 64u

/* Record header. */
#define PS_REC_INIT_OFF    0u
#define PS_REC_VERSION_OFF 8u
#define PS_REC_LOCK_OFF    16u
#define PS_REC_SCALARS_OFF 32u /* beta1_power f32, beta2_power f32 */
#define PS_REC_UPDATES_OFF 40u
/* Sync replicas (ps/ps_server_sync.c): the step whose gradients the
 * shard's accumulator takes (int64; the chief sets it, the ps advances it
 * after each averaged update: the publication workers READ), and the
 * gradients dropped as stale (u64). Zero and unused on async shards. */
#define PS_REC_SYNC_STEP_OFF  48u
#define PS_REC_SYNC_STALE_OFF 56u
#define PS_REC_HEADER         64u
_Static_assert(PS_REC_SYNC_STALE_OFF + 8 <= PS_REC_HEADER,
               "the header words fit the record header");
/* apply=worker reads and writes back [PS_REC_SCALARS_OFF, record end). */
#define PS_REC_RMW_OFF PS_REC_SCALARS_OFF

#define PS_INIT_DONE 1u

/* Globals block (PS_GLOBALS_BYTES at the start of a ps's first chunk,
 * zeroed when the arena is allocated; 64 bytes before the clock words). */
#define PS_GLOBAL_STEP_OFF 0u /* int64 global_step */
/* RF_PS_DONE_WORDS u64: the bitmap of client ids that announced they
 * finished (rf_ps_worker_done) */
#define PS_WORKERS_DONE_OFF 8u
/* RF_PS_MAX_CLOCKS int64: each client id's stale-synchronous-parallel
 * clock (rf_ps_clock_advance, rf_ps_clocks_read) */
#define PS_CLOCKS_OFF 64u
/* RF_PS_DONE_WORDS u64: the members bitmap (ps_server_members.c), written
 * by the ps's service thread with the CPU only, never by NIC atomics (on a
 * real NIC the two are not coherent on one word): clients READ it. Its own
 * cache line, after the clock words. */
#define PS_MEMBERS_OFF 3648u
/* u64: sync replicas' chief epoch, bumped (FETCH_AND_ADD, a NIC atomic
 * only) by the chief each time it sets the shards' sync steps (its start
 * or restore, rf_ps_sync_epoch_bump); a waiting worker READs it and runs
 * its step again when it changed. Its own cache line. */
#define PS_SYNC_EPOCH_OFF 3712u
#define PS_GLOBALS_BYTES  4096u
_Static_assert(PS_CLOCKS_OFF + 8 * RF_PS_MAX_CLOCKS <= PS_MEMBERS_OFF,
               "the members words come after the clock words");
_Static_assert(PS_MEMBERS_OFF % 64 == 0 &&
                   PS_MEMBERS_OFF + 8 * RF_PS_DONE_WORDS <= PS_GLOBALS_BYTES,
               "the members words fit the globals block, on their own line");
_Static_assert(PS_SYNC_EPOCH_OFF % 64 == 0 &&
                   PS_MEMBERS_OFF + 8 * RF_PS_DONE_WORDS <= PS_SYNC_EPOCH_OFF &&
                   PS_SYNC_EPOCH_OFF + 8 <= PS_GLOBALS_BYTES,
               "the sync epoch word: after the members, its own line");
_Static_assert(PS_WORKERS_DONE_OFF + 8 * RF_PS_DONE_WORDS <= PS_CLOCKS_OFF,
               "the workers-done words come before the clock words");
_Static_assert(PS_CLOCKS_OFF + 8 * RF_PS_MAX_CLOCKS <= PS_GLOBALS_BYTES,
               "the globals words fit the globals block");
_Static_assert(PS_GLOBALS_BYTES % PS_ALIGN == 0,
               "the first record after the globals block is aligned");

/* A table's row record (one per row of every field; ps_layout.row_stride
 * bytes apart, 16-byte aligned): the version (u64, host order: the word
 * apply=worker and rf_ps_write_rows take with CMP_AND_SWP, odd while a
 * writer owns the row), the CRC32C (u32, ISA-L's crc32_iscsi, seed 0)
 * over the version's 8 bytes then the row's row_bytes, 4 reserved zero
 * bytes, then the row. One READ of a record tells whether it is whole
 * whatever order its cache lines were fetched in (docs/DESIGN.md,
 * "Self-verifying rows"). An all-zero record (a row never written) is
 * whole: version 0, CRC 0 (the CRC of zeros with seed 0). Every field
 * record of a row carries the values record's version after each write. */
#define PS_ROW_HDR     16u
#define PS_ROW_VER_OFF 0u
#define PS_ROW_CRC_OFF 8u
/* The optimizer's scalars (Adam's beta powers) in a record's scalar words
 * at PS_REC_SCALARS_OFF, loaded for an update and stored after it. */
static inline void ps_rec_scalars_load(const unsigned char *rec,
                                       rf_optim_scalars *sc)
{
    memcpy(&sc->beta1_power, rec + PS_REC_SCALARS_OFF, 4);
    memcpy(&sc->beta2_power, rec + PS_REC_SCALARS_OFF + 4, 4);
}

static inline void ps_rec_scalars_store(unsigned char *rec,
                                        const rf_optim_scalars *sc)
{
    memcpy(rec + PS_REC_SCALARS_OFF, &sc->beta1_power, 4);
    memcpy(rec + PS_REC_SCALARS_OFF + 4, &sc->beta2_power, 4);
}

static inline uint64_t ps_row_stride(uint64_t row_bytes)
{
    return (PS_ROW_HDR + row_bytes + 15) & ~(uint64_t)15;
}
/* The CRC of a row record for version and the row's len bytes. */
uint32_t ps_row_crc(uint64_t version, const void *row, size_t len);
/* Writes the header of the record rec (the row at rec + PS_ROW_HDR, len
 * bytes): its CRC for version, the reserved bytes, then the version. A
 * writer in local memory that readers may READ stores the version last
 * with release order (ps_row_publish). */
void ps_row_seal(unsigned char *rec, uint64_t version, size_t len);
/* Seals rec for version and publishes the version with release order (the
 * ps's own writes, which readers may be READing). */
void ps_row_publish(unsigned char *rec, uint64_t version, size_t len);
/* Whether a copy of a record is whole: its version even and its CRC that
 * of its version and row; *version gets the version. A torn record passes
 * with probability about 2^-32. */
typedef enum ps_row_state {
    PS_ROW_OK = 0,
    PS_ROW_BUSY, /* version odd: a writer owns the row */
    PS_ROW_TORN  /* the CRC does not match: read while being written */
} ps_row_state;
ps_row_state ps_row_check(const unsigned char *rec, size_t len,
                          uint64_t *version);
/* The record of row r of a field at field_off (a table's values_off or
 * slot_off[i]). */
static inline uint64_t ps_row_off(uint64_t field_off, uint64_t row_stride,
                                  uint64_t r)
{
    return field_off + r * row_stride;
}

/* Largest values size of one shard (bytes). */
#define PS_MAX_SHARD_BYTES (1ull << 40)

typedef struct ps_layout {
    uint64_t values_bytes;
    uint32_t values_off; /* PS_REC_HEADER */
    uint32_t num_slots;
    uint64_t slot_off[RF_OPTIM_MAX_SLOTS];
    uint64_t record_bytes; /* multiple of PS_ALIGN */
    /* Embedding tables (max_push_rows > 0; 0 and unused otherwise): rows
     * (dims[0]) of row_bytes each. Each field (values, every slot) is an
     * array of self-verifying row records, row_stride bytes apart, at
     * values_off / slot_off[i] (PS_ROW_HDR: version and CRC32C, then the
     * row; ps_row_seal, ps_row_check), and the sparse inbox (see
     * PS_SPARSE_IDX_OFF). values_bytes stays the logical size. */
    uint64_t rows, row_bytes, row_stride;
    uint32_t max_push_rows;
    /* Bytes of one worker's inbox for the shard. */
    uint64_t inbox_bytes;
} ps_layout;

/* numel of a fully known shape with every dim >= 0 and a product that fits
 * PS_MAX_SHARD_BYTES / 8; -1 otherwise. */
int64_t ps_shape_numel(const rf_shape *shape);

/* Record layout for values_bytes of data and num_slots slots of the same
 * size each. RF_ERR_INVALID_ARG if too large. */
rf_status ps_layout_compute(uint64_t values_bytes, uint32_t num_slots,
                            ps_layout *out);

/* The full layout of a shard: values_bytes of data, num_slots slots, and
 * for a table (max_push_rows > 0) dim0 rows, every field an array of row
 * records, and a sparse inbox; sync dense shards' inboxes hold the tag (a sync
 * table's travels in its push header, PS_SPARSE_SYNC_HDR_BYTES).
 * RF_ERR_INVALID_ARG if too large or not a table (dim0 0, a row of 0 bytes). */
rf_status ps_layout_full(uint64_t values_bytes, uint32_t num_slots,
                         uint64_t dim0, uint32_t max_push_rows, bool sync,
                         ps_layout *out);

/* A table shard's sparse push (rf_ps_push_sparse_inbox) in its
 * worker's inbox: the count (u64 little-endian) at 0, the row indices
 * (int64) at PS_SPARSE_IDX_OFF, the gradient rows at ps_sparse_rows_off.
 * The worker WRITEs the indices and the rows, then WRITE_WITH_IMMs the
 * count (8 bytes): RC ordering places the others before the ps sees its
 * completion. */
#define PS_SPARSE_IDX_OFF 64u
/* A sync table's sparse push (rf_ps_push_sparse_sync) WRITE_WITH_IMMs 16
 * bytes: the count, then the tag (the worker's local step, int64
 * little-endian) at 8; an async table's is the count alone. */
#define PS_SPARSE_SYNC_HDR_BYTES 16u
/* Most rows one sparse push may carry (the protocol's bound; the ps's
 * max_inbox_bytes is usually the tighter one). */
#define PS_MAX_PUSH_ROWS (1u << 24)
static inline uint64_t ps_sparse_rows_off(uint32_t max_push_rows)
{
    return (PS_SPARSE_IDX_OFF + 8ull * max_push_rows + PS_ALIGN - 1) &
           ~(uint64_t)(PS_ALIGN - 1);
}

/* A table inbox ends with the ps-side gather area (rf_ps_gather_rows,
 * ps/ps_server_gather.c), after the sparse push's rows:
 *   ps_gather_off      the request: PS_GATHER_REQ_BYTES, little-endian:
 *                      count u64, field u32, the reply's rkey u32, its
 *                      address u64 and length u64, 32 reserved zero bytes;
 *                      the worker WRITE_WITH_IMMs it (the length tells it
 *                      from a sparse push's 8-byte count)
 *   + PS_GATHER_REQ_BYTES  the row indices (int64, up to max_push_rows),
 *                      WRITten before the request
 *   ps_gather_stage_off the ps's reply staging: up to max_push_rows rows,
 *                      copied there and WRITten from there into the reply.
 * So one worker's gather costs the ps at most the table's inbox, which
 * max_inbox_bytes bounds at CREATE. */
#define PS_GATHER_REQ_BYTES 64u
static inline uint64_t ps_gather_off(uint32_t max_push_rows, uint64_t row_bytes)
{
    return (ps_sparse_rows_off(max_push_rows) +
            (uint64_t)max_push_rows * row_bytes + PS_ALIGN - 1) &
           ~(uint64_t)(PS_ALIGN - 1);
}
static inline uint64_t ps_gather_stage_off(uint32_t max_push_rows,
                                           uint64_t row_bytes)
{
    return (ps_gather_off(max_push_rows, row_bytes) + PS_GATHER_REQ_BYTES +
            8ull * max_push_rows + PS_ALIGN - 1) &
           ~(uint64_t)(PS_ALIGN - 1);
}

/* Immediates: bits 0..23 shard id, bits 24..31 sequence. */
#define PS_MAX_SHARDS (1u << 24)
static inline uint32_t ps_imm_make(uint32_t shard, uint32_t seq)
{
    return (shard & 0xffffffu) | ((seq & 0xffu) << 24);
}
static inline uint32_t ps_imm_shard(uint32_t imm)
{
    return imm & 0xffffffu;
}
static inline uint32_t ps_imm_seq(uint32_t imm)
{
    return imm >> 24;
}

/* A sync-replicas push (rf_ps_push_sync) is two writes on one connection:
 * a WRITE of the tag (the worker's local step, int64 little-endian) into
 * the first PS_SYNC_TAG_BYTES of its inbox, then the WRITE_WITH_IMM of the
 * gradient right after it; RC ordering places the tag before the ps sees
 * the gradient's completion. An async shard's inbox is the gradient
 * alone. */
#define PS_SYNC_TAG_BYTES 8u
static inline uint64_t ps_inbox_bytes(uint64_t values_bytes, bool sync)
{
    return values_bytes + (sync ? PS_SYNC_TAG_BYTES : 0);
}

/* Ack word written into the worker's ack ring: the shard's version after
 * the update (a sync push: the shard's step after it, with PS_ACK_STALE
 * when the gradient was dropped as stale), or bit 63 set and the negated
 * rf_status in the low 32 bits. */
#define PS_ACK_ERROR (1ull << 63)
#define PS_ACK_STALE (1ull << 62)
static inline uint64_t ps_ack_ok(uint64_t version)
{
    return version & ~PS_ACK_ERROR;
}
static inline uint64_t ps_ack_sync(bool stale, uint64_t step)
{
    return (step & ~(PS_ACK_ERROR | PS_ACK_STALE)) | (stale ? PS_ACK_STALE : 0);
}
static inline uint64_t ps_ack_err(rf_status st)
{
    return PS_ACK_ERROR | (uint32_t)(-(int32_t)st);
}
/* A refused gather's ack also carries the position of the bad index + 1
 * in bits 32..56 (0: none), so the worker can name the index. */
static inline uint64_t ps_ack_err_at(rf_status st, uint64_t pos)
{
    return ps_ack_err(st) | (((pos + 1) & 0x1ffffffull) << 32);
}
static inline uint64_t ps_ack_err_pos(uint64_t word)
{
    return (word >> 32) & 0x1ffffffull;
}

#endif
