/* rdmaflow/summary.h: TensorBoard summaries (tf.summary.FileWriter and
 * scalar summaries): event files TensorBoard and TensorFlow's readers
 * decode, written by the chief's SummarySaverHook and StepCounterHook
 * (rdmaflow/monitored_session.h), by the evaluator, or by a program's own
 * calls. */
#ifndef RDMAFLOW_SUMMARY_H
#define RDMAFLOW_SUMMARY_H

#include "rdmaflow/api.h"

#include <stddef.h>
#include <stdint.h>

#include "rdmaflow/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A writer of one event file, as tf.summary.FileWriter(logdir):
 * logdir/events.out.tfevents.<10-digit unix seconds>.<host name> (".1",
 * ".2", ... appended when two writers start in one second), a TFRecord
 * file (length, masked CRC32C of the length, data, masked CRC32C of the
 * data) of tensorflow.Event protocol buffers; the first record is
 * file_version "brain.Event:2". Records are written when added (a reader
 * sees them at once); flush also makes them durable (fsync). Safe to call
 * from several threads. */
typedef struct rf_summary_writer rf_summary_writer;

/* Creates logdir (and its parents) if needed and a new event file in it.
 * RF_ERR_INVALID_ARG for a NULL or empty logdir, RF_ERR_IO (with the
 * path and the system's reason) when it cannot be created. */
RF_API rf_status rf_summary_writer_open(const char *logdir,
                                        rf_summary_writer **out);
/* One Event at global step `step`, stamped now, whose summary holds n
 * scalar values (tags[i], values[i]): TensorBoard's Scalars dashboard
 * draws each tag. Tags are non-empty strings. */
RF_API rf_status rf_summary_writer_scalars(rf_summary_writer *w, int64_t step,
                                           size_t n, const char *const *tags,
                                           const float *values);
/* SessionLog START at step: a (re)started job from here, as TensorFlow's
 * SummarySaverHook writes before a new session's first summary;
 * TensorBoard discards the events of this file's earlier run past step. */
RF_API rf_status rf_summary_writer_session_start(rf_summary_writer *w,
                                                 int64_t step);
/* Makes every record written so far durable (fsync). */
RF_API rf_status rf_summary_writer_flush(rf_summary_writer *w);
/* Flushes, closes and frees w (NULL is a no-op): the first error, if any. */
RF_API rf_status rf_summary_writer_close(rf_summary_writer *w);
/* The event file's path. */
RF_API const char *rf_summary_writer_path(const rf_summary_writer *w);

#ifdef __cplusplus
}
#endif
#endif
