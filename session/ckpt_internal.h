/* session/ckpt_internal.h: what the checkpoint files of the session layer
 * (ckpt_*.c, include/rdmaflow/checkpoint.h) share: the opened-file struct,
 * the atomic file writer, dtype names, the CRC metadata keys and the
 * directory's state file. */
#ifndef RF_SESSION_CKPT_INTERNAL_H
#define RF_SESSION_CKPT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmaflow/checkpoint.h"
#include "rdmaflow/file.h"

#define CKPT_CRC_PREFIX "crc32c/"
/* Not under CKPT_CRC_PREFIX, so no tensor name can collide with it; caller
 * keys starting with CKPT_RESERVED are refused. */
#define CKPT_HEADER_CRC_KEY "crc32c.header"
#define CKPT_RESERVED       "crc32c"
/* The header CRC's value as it appears in the JSON text (PLAIN output). */
#define CKPT_HEADER_CRC_TEXT "\"" CKPT_HEADER_CRC_KEY "\":\""
#define CKPT_MAX_HEADER      ((uint64_t)100 << 20)
#define CKPT_STATE_NAME      "checkpoint"

struct rf_ckpt {
    char *path;
    unsigned char *buf; /* the whole file (read, or mapped if mapped) */
    size_t size;
    bool mapped;
    rf_ckpt_entry *e; /* sorted by name */
    size_t n;
    char **meta; /* key, value, key, value, ... (2 * nmeta) */
    size_t nmeta;
    bool has_crc;
    char *note; /* never NULL once opened */
};

/* Files of at least this many bytes are mapped, not read (ckpt_read.c). */
#define CKPT_MAP_MIN ((uint64_t)64 << 20)
/* Drops the pages of [p, p + len) of a mapped file from this process (a
 * later access reads them again); nothing for a file read into memory. */
void ckpt_release(const rf_ckpt *ck, const void *p, size_t len);

/* One piece of a file's contents. */
typedef rf_file_chunk ckpt_chunk;

/* Writes the chunks to a temporary file beside path (beside the target of
 * a symbolic link), fsyncs it, renames it to path and fsyncs the directory:
 * rf_file_write_atomic (rdmaflow/file.h). */
rf_status ckpt_atomic_write(const char *path, const ckpt_chunk *c, size_t n);

/* rf_ckpt_open on len bytes already in memory (a copy is kept), name
 * standing for the path in messages: what the fuzzer drives. */
rf_status ckpt_open_buffer(const char *name, const void *data, size_t len,
                           rf_ckpt **out);

/* "F32", "I32", "I64", "BOOL" (safetensors' names); NULL if unknown. */
const char *ckpt_dtype_st(rf_dtype d);
bool ckpt_dtype_parse(const char *s, rf_dtype *out);

/* 8 lowercase hex digits and a NUL. */
void ckpt_hex8(uint32_t v, char out[9]);
/* Parses exactly 8 lowercase hex digits. */
bool ckpt_parse_hex8(const char *s, uint32_t *out);

/* crc (a finished CRC32C of earlier bytes, 0 for none) continued over
 * len more bytes: rf_ckpt_crc32c of the concatenation. */
uint32_t ckpt_crc32c_update(uint32_t crc, const void *data, size_t len);

/* CRC32C of a header of len bytes whose header-CRC digits (8 bytes) start
 * at digits_at, counted as "00000000". */
uint32_t ckpt_header_crc(const char *hdr, size_t len, size_t digits_at);

/* malloc'd "dir/name" (dir "" or NULL: name); NULL if out of memory. */
char *ckpt_join(const char *dir, const char *name);

/* The "checkpoint" state file (ckpt_state.c): the newest checkpoint and every
 * kept one, oldest first, as written (names relative to the directory, or
 * absolute paths). */
typedef struct ckpt_state {
    char *latest;
    char **all;
    size_t n;
} ckpt_state;

/* Reads DIR/checkpoint. *found is false (and s empty, RF_OK) when there is
 * none; RF_ERR_CORRUPT with the path and line when it is malformed. */
rf_status ckpt_state_read(const char *dir, ckpt_state *s, bool *found);
/* Appends a copy of name to s->all. */
rf_status ckpt_state_add(ckpt_state *s, const char *name);
void ckpt_state_free(ckpt_state *s);
/* The file's text (malloc'd), or NULL if out of memory. */
char *ckpt_state_format(const ckpt_state *s);

#endif
