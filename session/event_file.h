/* session/event_file.h: TensorBoard event files, as TensorFlow's
 * EventsWriter writes them: DIR/events.out.tfevents.<10-digit unix
 * seconds>.<host name>, a TFRecord file (session/tfrecord.h) of Event
 * protocol buffers (session/proto/tensorboard_event.proto, encoded with
 * protobuf-c) whose first record carries file_version "brain.Event:2" and
 * the others a step's scalar summaries or a SessionLog. The format only:
 * rf_summary_writer (session/summary_writer.c) is the public writer. */
#ifndef RF_SESSION_EVENT_FILE_H
#define RF_SESSION_EVENT_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "rdmaflow/status.h"

typedef struct rf_event_file rf_event_file;

#define RF_EVENT_FILE_VERSION "brain.Event:2"

/* Creates dir (and its parents) if needed and a new event file in it,
 * named for wall_time (seconds since the epoch) and this host; a name
 * already taken (two writers in one second) gets ".1", ".2", ... appended.
 * Writes the file_version record. */
rf_status rf_event_file_create(const char *dir, double wall_time,
                               rf_event_file **out);
/* One Event at step and wall_time whose summary holds n scalars
 * (tags[i], values[i]); tags must be non-empty. */
rf_status rf_event_file_scalars(rf_event_file *f, int64_t step,
                                double wall_time, size_t n,
                                const char *const *tags, const float *values);
/* An Event with SessionLog START at step (see rf_summary_writer_session_start
 * in rdmaflow/summary.h). */
rf_status rf_event_file_session_start(rf_event_file *f, int64_t step,
                                      double wall_time);
/* fsync: the events written survive a crash of the machine. */
rf_status rf_event_file_flush(rf_event_file *f);
/* Closes and frees f (NULL is a no-op); the close's error, if any. */
rf_status rf_event_file_close(rf_event_file *f);
const char *rf_event_file_path(const rf_event_file *f);

#endif
