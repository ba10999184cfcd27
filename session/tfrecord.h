/* session/tfrecord.h: TFRecord files (TensorFlow's record framing, the
 * container of TensorBoard's event files): each record is its length as a
 * little-endian u64, the masked CRC32C of those 8 bytes as a u32, the
 * data, and the masked CRC32C of the data. The mask is TensorFlow's
 * (core/lib/hash/crc32c.h): rotate right by 15, add 0xa282ead8. A writer
 * creates a new file (never an existing one) and appends whole records;
 * a record that could not be written whole (a full disk) is cut off
 * again, so the file always ends with a whole record and a later write
 * may succeed; if even that fails, every later write fails, so a reader
 * never finds data behind a torn record. */
#ifndef RF_SESSION_TFRECORD_H
#define RF_SESSION_TFRECORD_H

#include <stddef.h>
#include <stdint.h>

#include "rdmaflow/status.h"

typedef struct rf_tfrecord_writer rf_tfrecord_writer;

/* TensorFlow's masked CRC32C of data. */
uint32_t rf_tfrecord_masked_crc(const void *data, size_t len);

/* Creates path (O_EXCL: an existing file is an error naming it, never
 * overwritten). */
rf_status rf_tfrecord_create(const char *path, rf_tfrecord_writer **out);
/* Appends one record (one writev, repeated over partial writes). */
rf_status rf_tfrecord_write(rf_tfrecord_writer *w, const void *data,
                            size_t len);
/* fsync: what was written survives a crash of the machine. */
rf_status rf_tfrecord_sync(rf_tfrecord_writer *w);
/* Closes and frees w (NULL is a no-op); the close's error, if any. */
rf_status rf_tfrecord_close(rf_tfrecord_writer *w);
/* The file's path as given to rf_tfrecord_create. */
const char *rf_tfrecord_path(const rf_tfrecord_writer *w);

#endif
