/* session/tfrecord.h: TFRecord files (TensorFlow's record framing, the
 * container of TensorBoard's event files): each record is its length as a
 * little-endian u64, the masked CRC32C of those 8 bytes as a u32, the
 * data, and the masked CRC32C of the data. The mask is TensorFlow's
 * (core/lib/hash/crc32c.h): rotate right by 15, add 0xa282ead8. A writer
 * creates a new file (never an existing one) and appends whole records;
 * a record that could not be written whole (a full disk) is cut off
 * again, so the file always ends with a whole record and a later write
 * may succeed; if even that fails, every later write fails, so a reader
 * never finds data behind a torn record. A reader (tfrecord_read.c)
 * checks every record's framing and both CRCs, bounds a record's length,
 * and tells a clean end of the file from a last record cut short; its
 * errors name the file, the record and its byte offset. */
#ifndef RF_SESSION_TFRECORD_H
#define RF_SESSION_TFRECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmaflow/status.h"

typedef struct rf_tfrecord_writer rf_tfrecord_writer;
typedef struct rf_tfrecord_reader rf_tfrecord_reader;

/* The longest record a reader accepts unless told otherwise: 64 MiB (an
 * event file's records are a few bytes to a few MiB for an image), so a
 * damaged or hostile length never makes a reader allocate much. */
#define RF_TFRECORD_MAX_RECORD ((size_t)64 << 20)

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

/* Opens path to read its records; a record longer than max_len bytes (0:
 * RF_TFRECORD_MAX_RECORD) is an error. RF_ERR_IO (naming the path and the
 * system's reason) when it cannot be opened or is not a regular file (a
 * FIFO is refused, never waited on). */
rf_status rf_tfrecord_open(const char *path, size_t max_len,
                           rf_tfrecord_reader **out);
/* The next record: RF_OK with *data and *len (valid until the next call
 * or the close), or RF_OK with *end true when the file ends cleanly after
 * a whole record. RF_ERR_CORRUPT, the message naming the file, the record
 * (counted from 0) and the byte offset it starts at, for: a record cut
 * short at the end of the file (its header or its data and CRC), a length
 * whose CRC does not match, a length above max_len, data whose CRC does
 * not match. RF_ERR_IO for a read error. Memory grows with the bytes
 * actually read, never with a length alone. After an error, every later
 * call returns the same error. */
rf_status rf_tfrecord_read(rf_tfrecord_reader *r, const void **data,
                           size_t *len, bool *end);
/* The number (from 0) and byte offset of the record last returned, or of
 * the one that failed; the next one's before any. */
uint64_t rf_tfrecord_reader_record(const rf_tfrecord_reader *r);
uint64_t rf_tfrecord_reader_offset(const rf_tfrecord_reader *r);
const char *rf_tfrecord_reader_path(const rf_tfrecord_reader *r);
/* Closes and frees r (NULL is a no-op). */
void rf_tfrecord_reader_close(rf_tfrecord_reader *r);

#endif
