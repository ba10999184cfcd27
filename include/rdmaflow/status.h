/* rdmaflow/status.h: the rf_status error codes shared by every layer, and the
 * per-thread message that explains the last error a call returned (set with
 * rf_error_set, read with rf_error_message). Implemented in core/status.c. */
#ifndef RDMAFLOW_STATUS_H
#define RDMAFLOW_STATUS_H

#include "rdmaflow/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rf_status {
    RF_OK = 0,
    RF_INPROGRESS = 1,       /* started; completion reported later */
    RF_ERR_INVALID_ARG = -1, /* bad argument or malformed request */
    RF_ERR_NO_MEMORY = -2,   /* allocation or registration failed */
    RF_ERR_NO_RESOURCE = -3, /* queue full or receiver not ready: retry later */
    RF_ERR_UNSUPPORTED = -4, /* the provider lacks this operation */
    RF_ERR_REMOTE_ACCESS =
        -5,              /* bad rkey, out of bounds or missing access right */
    RF_ERR_TIMEOUT = -6, /* nothing happened within the deadline */
    RF_ERR_DISCONNECTED = -7, /* peer gone or endpoint in error state */
    RF_ERR_ABORTED = -8,      /* operation cancelled (e.g. peer restarted) */
    RF_ERR_UNAVAILABLE = -9,  /* peer not reachable (yet) */
    RF_ERR_IO = -10,          /* operating-system I/O error */
    RF_ERR_CORRUPT = -11,     /* data failed a consistency check */
    RF_ERR_AUTH = -12,        /* authentication failed */
    RF_ERR_NUMERIC = -13,     /* NaN or infinity where a number was needed */
} rf_status;

/* Number of distinct codes, for tables indexed by -status. */
#define RF_STATUS_COUNT 15

/* Short constant name of a code, e.g. "RF_ERR_TIMEOUT"; "RF_ERR_UNKNOWN" for
 * a value outside the enum. Never NULL. */
RF_API const char *rf_status_string(rf_status status);

/* Exit statuses for programs built on rdmaflow, after Kubeflow's
 * restartPolicy: ExitCode (1-127 permanent, 128-255 retryable; 138 = 128 +
 * SIGUSR1, the code reserved for a program asking to be retried). */
#define RF_EXIT_OK        0   /* success */
#define RF_EXIT_FAILED    1   /* a permanent failure: a restart repeats it */
#define RF_EXIT_USAGE     2   /* a usage or configuration error */
#define RF_EXIT_RETRYABLE 138 /* a failure a restart can cure */

/* The exit status a program ends with after a failure with status (RF_OK:
 * 0): RF_EXIT_RETRYABLE for a peer's trouble that outlived the library's
 * own retries (RF_ERR_TIMEOUT, RF_ERR_DISCONNECTED, RF_ERR_ABORTED,
 * RF_ERR_UNAVAILABLE); RF_EXIT_USAGE for what the user gave
 * (RF_ERR_INVALID_ARG, RF_ERR_UNSUPPORTED, RF_ERR_AUTH: a flag, a setting,
 * a model or a secret that disagrees with the cluster's); RF_EXIT_FAILED
 * for the rest (disk, data, numbers, memory) and any value outside the
 * enum. core/status_exit.c. */
RF_API int rf_status_exit_code(rf_status status);

/* Human-readable explanation of the most recent error set on this thread
 * (e.g. "rf_mr_reg: length 0 is invalid"). Empty string when none. The
 * pointer stays valid until the next failing call on the same thread. */
RF_API const char *rf_error_message(void);

/* Clears the calling thread's error message. */
RF_API void rf_error_clear(void);

/* Sets the calling thread's error message (printf-style), logs it at debug
 * level and returns status, so a failure is one line:
 *   return rf_error_set(RF_ERR_INVALID_ARG, "batch size %d is not positive",
 *                       n);
 * The arguments may include rf_error_message() to wrap a cause:
 *   return rf_error_set(st, "reading '%s': %s", name, rf_error_message());
 * For libraries and programs built on rdmaflow as much as for its layers. */
RF_API rf_status rf_error_set(rf_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Puts context in front of the calling thread's error message, in place
 * ("<context>: <message>"; just the context when the message is empty),
 * logs and returns status as rf_error_set does: a caller wraps what a
 * callee said without copying its text aside first, even after cleanup
 * calls that set no error:
 *   if ((st = read_header(f)) != RF_OK) {
 *       fclose(f);
 *       return rf_error_prefix(st, "reading '%s'", path);
 *   } */
RF_API rf_status rf_error_prefix(rf_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif
#endif
