/* rdmaflow/checkpoint.h: checkpoint files (session layer, session/ckpt_*.c).
 *
 * A checkpoint is one safetensors file: an 8-byte little-endian header
 * length N, N bytes of JSON (padded with spaces to a multiple of 8) mapping
 * each tensor name to {"dtype","shape","data_offsets"} (offsets relative to
 * the first byte after the header), then the tensors' raw little-endian
 * bytes, contiguous, in the byte order of their names. The header's
 * "__metadata__" map (strings to strings) holds the caller's keys, one
 * "crc32c/<name>" per tensor (CRC32C, the iSCSI polynomial of RFC 3720, of
 * its data, 8 lowercase hex digits) and "crc32c.header", the CRC32C of
 * the whole padded header with that value's 8 digits read as "00000000", so
 * a changed byte anywhere in the file is found. Files are written to a
 * temporary name in the same directory, fsynced, renamed and the directory
 * fsynced (rdmaflow/file.h, which also removes the temporaries of killed
 * writers): a crash leaves the old file or the new one, never a mix. The
 * same tensors and metadata always give the same bytes.
 *
 * A checkpoint directory works like TensorFlow 1.x's tf.train.Saver:
 * model.ckpt-<step>.safetensors files and a "checkpoint" state file in
 * TensorFlow's text format (CheckpointState):
 *   model_checkpoint_path: "model.ckpt-300.safetensors"
 *   all_model_checkpoint_paths: "model.ckpt-200.safetensors"
 *   all_model_checkpoint_paths: "model.ckpt-300.safetensors"
 * (oldest first; the newest is model_checkpoint_path), rewritten atomically
 * after each save, the checkpoints beyond max_to_keep deleted, and any
 * model.ckpt-<step>.safetensors it does not name deleted too. A checkpoint
 * counts as saved only once the state file names it.
 *
 * Usage:
 *   float w[6] = {...};
 *   int64_t step = 300;
 *   rf_ckpt_tensor t[] = {
 *       {"dense/kernel", RF_F32, RF_SHAPE(2, 3), w, sizeof w},
 *       {"global_step", RF_I64, RF_SCALAR, &step, sizeof step},
 *   };
 *   const char *meta[] = {"producer", "rf-trainer", NULL};
 *   char path[4096];
 *   rf_status st = rf_ckpt_dir_save("/ckpt", step, t, 2, meta, 0, path,
 *                                   sizeof path);     // keeps the last 5
 *   ...
 *   rf_ckpt *ck;
 *   st = rf_ckpt_dir_open_latest("/ckpt", &ck, path, sizeof path);
 *   if (st == RF_ERR_UNAVAILABLE)          // no checkpoint yet: start fresh
 *       ...
 *   else if (st == RF_OK) {                // verified (every CRC32C)
 *       if (*rf_ckpt_note(ck))             // a newer one was corrupt
 *           fprintf(stderr, "%s\n", rf_ckpt_note(ck));
 *       const rf_ckpt_entry *e = rf_ckpt_find(ck, "dense/kernel");
 *       memcpy(w, e->t.data, e->t.bytes);  // (dtype and shape checked first)
 *       rf_ckpt_close(ck);
 *   }
 *
 * Errors are rf_status codes with rf_error_message() naming the path and
 * what was wrong: RF_ERR_INVALID_ARG for bad arguments and refused paths,
 * RF_ERR_IO for operating-system I/O errors, RF_ERR_CORRUPT for a file
 * that fails a check (which tensor, which offset). Nothing here exits. */
#ifndef RDMAFLOW_CHECKPOINT_H
#define RDMAFLOW_CHECKPOINT_H

#include "rdmaflow/api.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmaflow/graph.h"
#include "rdmaflow/status.h"
#include "rdmaflow/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The tensor of a chief's checkpoint that holds ps task 0's shard ledger
 * (elastic workers; int32 words of its saved form, ps/ps_ledger.h), when
 * a worker had asked for a shard. */
#define RF_CKPT_SHARD_LEDGER "rdmaflow/shard_ledger"

/* One tensor to write, or one read (then data points into the opened
 * file's memory, valid until rf_ckpt_close, and may be unaligned). bytes
 * must be rf_shape_numel(&shape) * rf_dtype_size(dtype); data may be NULL
 * when bytes is 0. A name is non-empty, unique, not "__metadata__".
 */
typedef struct rf_ckpt_tensor {
    const char *name;
    rf_dtype dtype;
    rf_shape shape;
    const void *data;
    size_t bytes;
} rf_ckpt_tensor;

/* The bytes of a tensor too large to hold (an embedding table on the ps),
 * for rf_ckpt_write_filled: fn(ctx, off, buf, len) puts bytes
 * [off, off + len) of the tensor into buf; it is called in order of off,
 * at most RF_CKPT_FILL_CHUNK bytes at a time. */
typedef struct rf_ckpt_fill {
    rf_status (*fn)(void *ctx, uint64_t off, void *buf, size_t len);
    void *ctx;
} rf_ckpt_fill;
#define RF_CKPT_FILL_CHUNK ((size_t)8 << 20)

/* CRC32C (Castagnoli, RFC 3720) of len bytes, with ISA-L's crc32_iscsi:
 * initial value and final xor 0xffffffff (32 zero bytes -> 0x8a9136aa). */
RF_API uint32_t rf_ckpt_crc32c(const void *data, size_t len);

/* Checks that path can be written as a checkpoint file without writing
 * anything (rf_file_check_output, rdmaflow/file.h): not a directory,
 * device node, FIFO or socket, in an existing directory this process can
 * write into; a symbolic link is followed (its target is checked, and
 * written by rf_ckpt_write; the link stays). RF_ERR_INVALID_ARG saying why
 * otherwise. */
RF_API rf_status rf_ckpt_check_path(const char *path);

/* Writes the n tensors t (any order: written sorted by name) to path, as
 * above. meta is NULL or "key", "value", ..., NULL (keys unique, not
 * starting with "crc32c"). On failure the temporary file is removed and
 * an existing file at path is left as it was. */
RF_API rf_status rf_ckpt_write(const char *path, const rf_ckpt_tensor *t,
                               size_t n, const char *const *meta);
/* rf_ckpt_write where a tensor may come in pieces: fills (NULL: none) has
 * n entries; a tensor with data NULL, bytes > 0 and fills[i].fn gets its
 * bytes from fn, never held whole (the chief's memory for a table is one
 * piece). The header goes first with those tensors' CRCs as "00000000" (8
 * hex digits whatever the value: the header's length does not change),
 * then the data, each piece's CRC chained as it is written, then the
 * header again with the CRCs, before the rename. A failing fn fails the
 * write (its status and message; nothing is left at path). */
RF_API rf_status rf_ckpt_write_filled(const char *path, const rf_ckpt_tensor *t,
                                      const rf_ckpt_fill *fills, size_t n,
                                      const char *const *meta);

/* An opened, verified checkpoint file. */
typedef struct rf_ckpt rf_ckpt;

/* One tensor of an opened file: has_crc is false for a file without the
 * CRC metadata (an ordinary safetensors file), whose crc32c is then
 * computed at open instead of verified. */
typedef struct rf_ckpt_entry {
    rf_ckpt_tensor t;
    uint32_t crc32c;
    bool has_crc;
} rf_ckpt_entry;

/* Reads path and validates everything: the header length (inside the file,
 * at most 100 MiB), the JSON, every entry's dtype (F32, I32, I64, BOOL),
 * shape and data_offsets (begin <= end, bytes = elements * dtype size), the
 * tensors contiguous from 0 to the end of the file (no gap, overlap,
 * truncation or trailing bytes), and every CRC32C. A file with no CRC32C
 * at all (a plain safetensors file) opens, has_crc false; one with some
 * but not all of them (every tensor's and the header's) is refused
 * (rf_ckpt_verify, below, refuses the plain one too unless told not to).
 * RF_ERR_CORRUPT or RF_ERR_IO with the path and the reason; *out is NULL
 * on failure. */
RF_API rf_status rf_ckpt_open(const char *path, rf_ckpt **out);
RF_API void rf_ckpt_close(rf_ckpt *ck); /* NULL is fine */

RF_API const char *rf_ckpt_path(const rf_ckpt *ck);
RF_API size_t rf_ckpt_count(const rf_ckpt *ck);
/* The i-th tensor in name order; NULL if i >= count. */
RF_API const rf_ckpt_entry *rf_ckpt_at(const rf_ckpt *ck, size_t i);
/* The tensor called name, or NULL. */
RF_API const rf_ckpt_entry *rf_ckpt_find(const rf_ckpt *ck, const char *name);
/* A caller's metadata value ("crc32c/..." keys included), or NULL. */
RF_API const char *rf_ckpt_meta(const rf_ckpt *ck, const char *key);
/* True if the file carries CRC32Cs (every tensor's was verified). */
RF_API bool rf_ckpt_has_crc(const rf_ckpt *ck);
/* From rf_ckpt_dir_open_latest: the newer checkpoints that were skipped
 * and why ("" if none). */
RF_API const char *rf_ckpt_note(const rf_ckpt *ck);

/* Verifying one checkpoint file (rf-ckpt verify is a client of this).
 * Strict by default: a file verifies only if it passes every check of
 * rf_ckpt_open and carries a CRC32C for every tensor and for its header,
 * each matching (every file rf_ckpt_write makes does). allow_unchecked
 * accepts tensors without a "crc32c/<name>" and a header without
 * "crc32c.header" (a plain safetensors file, or one whose CRCs were
 * stripped), still checking every CRC32C that is there, and counts them
 * in the report. */
typedef struct rf_ckpt_verify_options {
    bool allow_unchecked;
} rf_ckpt_verify_options;

/* What rf_ckpt_verify checked (filled on RF_OK). */
typedef struct rf_ckpt_verify_report {
    size_t tensors;      /* tensors in the file */
    size_t unchecked;    /* of them, without a stored CRC32C */
    bool header_checked; /* the header's CRC32C was there and matched */
    /* RF_CKPT_SHARD_LEDGER was there and checks (rf_ps_ledger_check):
     * what it says */
    char shard_ledger[200];
} rf_ckpt_verify_report;

/* Verifies the file at path; opts NULL is strict (all zero). A shard
 * ledger tensor that does not check is RF_ERR_CORRUPT. Strictly, a
 * file lacking any tensor's or the header's CRC32C is RF_ERR_CORRUPT with
 * a message naming the file, how many tensors lack one and the first of
 * them, and whether the header does; any other failure is rf_ckpt_open's
 * status and message. report may be NULL. */
RF_API rf_status rf_ckpt_verify(const char *path,
                                const rf_ckpt_verify_options *opts,
                                rf_ckpt_verify_report *report);

/* Saves t as DIR/model.ckpt-<step>.safetensors (dir must exist), then
 * rewrites DIR/checkpoint with it as the newest (a step saved again moves to
 * the end), then deletes the checkpoints beyond the newest max_to_keep (0
 * means 5, TensorFlow's default) and every regular file of DIR named
 * model.ckpt-<decimal step>.safetensors that the new state file does not
 * name (nothing of another name is touched). path_out (if not NULL)
 * receives the file's path. If the state file cannot be written, the new
 * file is removed again unless the state file on disk names it, and the
 * error says so. A missing or malformed state file (the latter with a
 * warning) is rebuilt from DIR's files of that pattern, oldest step
 * first, then the new one. */
RF_API rf_status rf_ckpt_dir_save(const char *dir, int64_t step,
                                  const rf_ckpt_tensor *t, size_t n,
                                  const char *const *meta, int max_to_keep,
                                  char *path_out, size_t len);
/* rf_ckpt_dir_save with pieces (rf_ckpt_write_filled). */
RF_API rf_status rf_ckpt_dir_save_filled(const char *dir, int64_t step,
                                         const rf_ckpt_tensor *t,
                                         const rf_ckpt_fill *fills, size_t n,
                                         const char *const *meta,
                                         int max_to_keep, char *path_out,
                                         size_t len);

/* Creates dir and its missing parents (as TensorFlow's Saver does for a
 * checkpoint directory); RF_OK if it exists already. Refused: a path that
 * is not a directory, or one this process cannot write into. */
RF_API rf_status rf_ckpt_dir_create(const char *dir);

/* The kept checkpoints of a directory, newest first, as paths (DIR/name for
 * a relative name in the state file). */
typedef struct rf_ckpt_list {
    size_t n;
    char **paths;
} rf_ckpt_list;

/* Reads DIR/checkpoint. No state file or no directory: RF_OK with n == 0
 * (no checkpoint);
 * a malformed one: RF_ERR_CORRUPT with its path and line. */
RF_API rf_status rf_ckpt_dir_list(const char *dir, rf_ckpt_list *out);
RF_API void rf_ckpt_list_free(rf_ckpt_list *list);

/* Opens the newest checkpoint of dir that opens and verifies, trying the
 * older ones in turn: each one skipped is logged (RF_LOG_WARN, path and
 * reason) and named in rf_ckpt_note. path_out (if not NULL) receives the
 * path opened. RF_ERR_UNAVAILABLE when dir has no checkpoint at all (no
 * state file), RF_ERR_CORRUPT when every one is bad (their names and the
 * newest's reason; each reason is logged) or the state file is malformed
 * (an empty one too, as TensorFlow's get_checkpoint_state refuses it). */
RF_API rf_status rf_ckpt_dir_open_latest(const char *dir, rf_ckpt **out,
                                         char *path_out, size_t len);

/* Graph variables as checkpoint tensors, as TF's Saver names them: each
 * under rf_variable_checkpoint_name, the parts of a partitioned variable
 * (and their slots) assembled into one tensor of the whole shape, so a
 * checkpoint restores into any partitioning. Add every variable with the
 * bytes to save for it (its value, or a snapshot of it; read when added),
 * then write rf_ckpt_vars_tensors. A whole some of whose parts were never
 * added is an error there. */
typedef struct rf_ckpt_vars rf_ckpt_vars;
RF_API rf_status rf_ckpt_vars_create(size_t max_vars, rf_ckpt_vars **out);
RF_API rf_status rf_ckpt_vars_add(rf_ckpt_vars *b, const rf_node *var,
                                  const void *data);
RF_API rf_status rf_ckpt_vars_tensors(const rf_ckpt_vars *b,
                                      const rf_ckpt_tensor **t, size_t *n);
RF_API void rf_ckpt_vars_free(rf_ckpt_vars *b); /* NULL is fine */

/* Restoring one variable: copies its value (a part's slice of the whole
 * tensor) from ck into dst (rf_variable_bytes(var) bytes). The tensor
 * named rf_variable_checkpoint_name(var) must exist with var's dtype and
 * shape (the whole's, for a part): RF_ERR_INVALID_ARG naming the file and
 * the tensor otherwise. */
RF_API rf_status rf_ckpt_read_variable(const rf_ckpt *ck, const rf_node *var,
                                       void *dst);

#ifdef __cplusplus
}
#endif

#endif
