/* tests/unit/checkpoint/ckpt_test.h: what the checkpoint unit tests share:
 * the fixture tensors (every dtype, scalars, empty tensors), a scratch
 * directory, raw file helpers, and the cases of each file. */
#ifndef RF_TESTS_UNIT_CKPT_TEST_H
#define RF_TESTS_UNIT_CKPT_TEST_H

#include <stdbool.h>
#include <stddef.h>

#include "rdmaflow/checkpoint.h"

#define FIX_N 8
/* The fixture, deliberately not in name order; step sets global_step. */
void fix_tensors(rf_ckpt_tensor t[FIX_N], long long step);
/* The fixture's tensor called name, or NULL. */
const rf_ckpt_tensor *fix_find(const rf_ckpt_tensor *t, size_t n,
                               const char *name);

/* A fresh scratch directory (removed with scratch_done). */
const char *scratch(void);
void scratch_done(void);
/* "scratch/name" in a static rotating buffer. */
const char *sp(const char *name);
/* Number of entries of a directory (without . and ..). */
int dir_entries(const char *dir);

/* Whole-file helpers; slurp's result is malloc'd (NULL if unreadable). */
unsigned char *slurp(const char *path, size_t *len);
void spill(const char *path, const void *p, size_t len);
/* A raw safetensors file: 8-byte length, json padded with spaces, data. */
void write_raw(const char *path, const char *json, const void *data,
               size_t dlen);

/* The cases (test_ckpt_file.c, test_ckpt_corrupt.c, test_ckpt_dir.c,
 * test_ckpt_verify.c). */
void case_crc(void);
void case_roundtrip(void);
void case_determinism(void);
void case_paths(void);
void case_links(void);
void case_stale(void);
void case_corrupt(void);
void case_malformed(void);
void case_filled(void);
void case_dir(void);
void case_dir_latest(void);
void case_dir_state(void);
void case_dir_orphans(void);
void case_verify(void);
/* Writes the files the script tests read into dir (test_checkpoint.c). */
void emit_fixtures(const char *dir);

#endif
