/* rdmaflow/file.h: output files that cannot lose or clobber anything, and
 * input files that are checked (core layer, core/file.c). Every file the
 * library and the tools write (checkpoints and their state file, traces,
 * --variables_out, rf-launch's merged trace) goes through one writer:
 *
 *   - the path is checked before any long work (rf_file_check_output): a
 *     directory, a device node, FIFO or socket, a missing parent directory,
 *     a parent that is not a directory, or a directory this process cannot
 *     write into is refused with RF_ERR_INVALID_ARG naming the path and
 *     why. An existing symbolic link is followed (chains too, at most 40
 *     links): its target is checked and written, the link stays a link.
 *   - the bytes go to a temporary file in the target's own directory named
 *     ".NAME.tmp.PID.N" (NAME the target's base name, PID the writer's
 *     process id, N a per-process counter), which is fsynced, renamed over
 *     the target and the directory fsynced: a crash leaves the old file or
 *     the new one, never a mix. An existing target keeps its permission
 *     bits; a new one is created 0644 (less the umask).
 *   - a failed write names the errno and removes the temporary file; the
 *     target is left as it was.
 *   - a killed writer leaves its temporary behind; the next writer of the
 *     same target removes every ".NAME.tmp.PID.N" whose PID is not a live
 *     process of this host (kill(PID, 0) fails with ESRCH), logging each.
 *     Readers never look at temporaries (a checkpoint directory is read
 *     through its state file), so one left by a live or foreign process is
 *     harmless too; a name already taken (this process's PID reused) moves
 *     the writer to the next N.
 *
 * Usage:
 *   if (rf_file_check_output(path) != RF_OK) ... // before training: exit 2
 *   ...
 *   rf_file_chunk c[] = {{hdr, hlen}, {data, dlen}};
 *   rf_status st = rf_file_write_atomic(path, c, 2);
 * or, for a writer that formats as it goes:
 *   rf_file_out *o;
 *   if ((st = rf_file_out_open(path, &o)) == RF_OK) {
 *       fprintf(rf_file_out_stream(o), ...);
 *       st = rf_file_out_commit(o); // or rf_file_out_abort(o)
 *   }
 *
 * Test hook: when RF_TEST_CKPT_STOP_BEFORE_RENAME names a marker file
 * whose first line is the target's base name, the marker is removed and
 * the writer stops itself (SIGSTOP) with its temporary written and synced
 * but not yet renamed, so a test can kill it at exactly that instant. */
#ifndef RDMAFLOW_FILE_H
#define RDMAFLOW_FILE_H

#include "rdmaflow/api.h"

#include <stddef.h>
#include <stdio.h>

#include "rdmaflow/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One piece of a file's contents. */
typedef struct rf_file_chunk {
    const void *p;
    size_t len;
} rf_file_chunk;

/* Checks that path can be written by the writer below, writing nothing:
 * RF_OK, or RF_ERR_INVALID_ARG with rf_error_message() saying why ("X is a
 * directory", "X is not a regular file (a device, FIFO or socket)",
 * "X: directory D does not exist (...)", "X: D is not a directory",
 * "X: directory D is not writable (...)"). A symbolic link is followed and
 * the message then names its target as well. */
RF_API rf_status rf_file_check_output(const char *path);

/* Checks that path is an existing regular file (symbolic links followed)
 * that this process can read, without opening it, so that a FIFO never
 * blocks: RF_ERR_IO with the path and why for a missing or unreadable
 * file, a directory, FIFO, device or socket. A reader should still fstat
 * what it opens (with O_NONBLOCK): the path may change in between. */
RF_API rf_status rf_file_check_input(const char *path);

/* Writes the n chunks to path as described above (the output check
 * included). RF_ERR_INVALID_ARG for a refused path, RF_ERR_IO naming the
 * errno for a failed create, write, fsync or rename, RF_ERR_NO_MEMORY. */
RF_API rf_status rf_file_write_atomic(const char *path, const rf_file_chunk *c,
                                      size_t n);

/* A file being written: a stdio stream on the temporary file. */
typedef struct rf_file_out rf_file_out;

/* Checks path, removes stale temporaries of it and creates a new
 * temporary; *out is NULL on failure. */
RF_API rf_status rf_file_out_open(const char *path, rf_file_out **out);
/* The stream to write to (do not close it). */
RF_API FILE *rf_file_out_stream(rf_file_out *o);
/* Flushes, fsyncs, renames over the target and fsyncs the directory;
 * frees o whatever the outcome (on failure the temporary is removed). */
RF_API rf_status rf_file_out_commit(rf_file_out *o);
/* Removes the temporary and frees o (NULL is fine). */
RF_API void rf_file_out_abort(rf_file_out *o);

#ifdef __cplusplus
}
#endif

#endif
