/* core/status_exit.c: rf_status_exit_code, the one table from rf_status
 * codes to the exit statuses of rdmaflow/status.h (RF_EXIT_*), shared by
 * rf-trainer and the Python front end's tf.app.run, so that a cluster
 * manager restarts a task exactly when a restart can cure it. */
#include "rdmaflow/status.h"

/* Indexed by -status. */
static const int exit_of_status[RF_STATUS_COUNT] = {
    [0] = RF_EXIT_OK,
    [-RF_ERR_INVALID_ARG] = RF_EXIT_USAGE,
    [-RF_ERR_NO_MEMORY] = RF_EXIT_FAILED,
    [-RF_ERR_NO_RESOURCE] = RF_EXIT_FAILED,
    [-RF_ERR_UNSUPPORTED] = RF_EXIT_USAGE,
    [-RF_ERR_REMOTE_ACCESS] = RF_EXIT_FAILED,
    [-RF_ERR_TIMEOUT] = RF_EXIT_RETRYABLE,
    [-RF_ERR_DISCONNECTED] = RF_EXIT_RETRYABLE,
    [-RF_ERR_ABORTED] = RF_EXIT_RETRYABLE,
    [-RF_ERR_UNAVAILABLE] = RF_EXIT_RETRYABLE,
    [-RF_ERR_IO] = RF_EXIT_FAILED,
    [-RF_ERR_CORRUPT] = RF_EXIT_FAILED,
    [-RF_ERR_AUTH] = RF_EXIT_USAGE,
    [-RF_ERR_NUMERIC] = RF_EXIT_FAILED,
};

int rf_status_exit_code(rf_status status)
{
    if (status > 0 || -(int)status >= RF_STATUS_COUNT)
        return RF_EXIT_FAILED; /* RF_INPROGRESS or unknown: not an answer */
    return exit_of_status[-(int)status];
}
