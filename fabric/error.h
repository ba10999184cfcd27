/* fabric/error.h: setting the per-thread error message that goes with an
 * rf_status (read back with rf_error_message()). Used by every layer. */
#ifndef RF_FABRIC_ERROR_H
#define RF_FABRIC_ERROR_H

#include "rdmaflow/status.h"

/* Formats the calling thread's error message, logs it at debug level and
 * returns status, so a failure reads `return rf_set_error(RF_ERR_X, ...)`. */
rf_status rf_set_error(rf_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
