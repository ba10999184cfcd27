/* rdmaflow/summary.h: TensorBoard summaries (tf.summary.FileWriter and
 * scalar summaries): event files TensorBoard and TensorFlow's readers
 * decode, written by the chief's SummarySaverHook and StepCounterHook
 * (rdmaflow/monitored_session.h), by the evaluator, or by a program's own
 * calls; and read back, event by event, by rf_summary_reader
 * (tf.compat.v1.train.summary_iterator), which reads TensorFlow's own
 * event files too. */
#ifndef RDMAFLOW_SUMMARY_H
#define RDMAFLOW_SUMMARY_H

#include "rdmaflow/api.h"

#include <stdbool.h>
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
/* The event file's path (NULL before the first write of the monitored
 * session's own writer, which makes its file then). */
RF_API const char *rf_summary_writer_path(const rf_summary_writer *w);

/* A reader of one event file, as tf.compat.v1.train.summary_iterator(path):
 * each record's tensorflow.Event in file order. The file is untrusted
 * input: every record's framing and both CRC32Cs are checked, a record
 * longer than 64 MiB is refused, and decoding one is bounded in memory.
 * Errors name the file, the record (counted from 0) and its byte offset.
 * A scalar value is a simple_value (TensorFlow 1's tf.summary.scalar,
 * rdmaflow's writer) or a rank-0 float32, float64, int32 or int64 tensor
 * of the "scalars" plugin (TensorFlow 2's tf.summary.scalar), returned as
 * a float. Fields the reader does not know are skipped: events carrying a
 * graph, run metadata or a log message come back as
 * RF_SUMMARY_EVENT_OTHER, and summary values that are not scalars
 * (images, histograms, audio, other tensors) are counted in num_skipped. One
 * reader is used by one thread at a time.
 *
 *   rf_summary_reader *r;
 *   if (rf_summary_reader_open(path, &r) != RF_OK)
 *       return fail(rf_error_message());
 *   rf_summary_event ev;
 *   bool end = false;
 *   rf_status st;
 *   while ((st = rf_summary_reader_next(r, &ev, &end)) == RF_OK && !end)
 *       for (size_t i = 0; i < ev.num_values; i++)
 *           printf("%lld %s %g\n", (long long)ev.step, ev.tags[i],
 *                  ev.values[i]);
 *   rf_summary_reader_close(r);
 */
typedef struct rf_summary_reader rf_summary_reader;

/* What an event holds (Event's "what"). */
typedef enum rf_summary_event_kind {
    RF_SUMMARY_EVENT_OTHER = 0,    /* none the reader knows: a graph, run
                                      metadata, a log message, or nothing */
    RF_SUMMARY_EVENT_FILE_VERSION, /* a file's first: "brain.Event:2" */
    RF_SUMMARY_EVENT_SUMMARY,      /* summary values at step */
    RF_SUMMARY_EVENT_SESSION_LOG,  /* a session started, stopped or saved */
} rf_summary_event_kind;

/* SessionLog.status, TensorFlow's numbers. */
typedef enum rf_summary_session_status {
    RF_SUMMARY_SESSION_UNSPECIFIED = 0,
    RF_SUMMARY_SESSION_START = 1,
    RF_SUMMARY_SESSION_STOP = 2,
    RF_SUMMARY_SESSION_CHECKPOINT = 3,
} rf_summary_session_status;

/* One event. Pointers stay valid until the next rf_summary_reader_next or
 * the close. */
typedef struct rf_summary_event {
    double wall_time; /* seconds since the Unix epoch */
    int64_t step;
    rf_summary_event_kind kind;
    /* FILE_VERSION: the version text; NULL for the other kinds */
    const char *file_version;
    /* SESSION_LOG: its status (another number as the file holds it) */
    int session_status;
    /* SUMMARY: its scalars, (tags[i], values[i]) in the file's order; tags are
     * the file's bytes up to a NUL, not checked as UTF-8 (print them escaped:
     * they come from a file) */
    size_t num_values;
    const char *const *tags;
    const float *values;
    size_t num_skipped; /* SUMMARY: values of other kinds, left out */
    uint64_t record;    /* the record's number in the file, from 0 */
} rf_summary_event;

/* Opens an event file. RF_ERR_INVALID_ARG for a NULL or empty path,
 * RF_ERR_IO (naming the path and the system's reason) when it cannot be
 * opened or is not a regular file (a directory, FIFO, device or socket).
 * Nothing is read before the first rf_summary_reader_next. */
RF_API rf_status rf_summary_reader_open(const char *path,
                                        rf_summary_reader **out);
/* The next event into *ev, or *end true when the file ends after a whole
 * record. RF_ERR_CORRUPT, naming the file, the record and its offset,
 * when a record is cut short at the end of the file (a torn last record:
 * a writer killed mid-record, or one still writing), when a length or
 * data CRC32C does not match, when a length is above 64 MiB, or when a
 * record is not a tensorflow.Event (or would take more memory to decode
 * than 1 MiB + 16 bytes per byte of the record, at most 256 MiB);
 * RF_ERR_IO for a read error. After an error, every later call returns
 * the same error. */
RF_API rf_status rf_summary_reader_next(rf_summary_reader *r,
                                        rf_summary_event *ev, bool *end);
/* The file's path as given to rf_summary_reader_open. */
RF_API const char *rf_summary_reader_path(const rf_summary_reader *r);
/* Closes and frees r (NULL is a no-op). */
RF_API void rf_summary_reader_close(rf_summary_reader *r);

#ifdef __cplusplus
}
#endif
#endif
