/* core/status.c: names of the rf_status codes and the per-thread error
 * message buffer behind rf_error_message()/rf_error_set(). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rdmaflow/escape.h"

#include "core/log.h"
#include "rdmaflow/status.h"

static const char *const status_names[RF_STATUS_COUNT] = {
    [0] = "RF_OK",
    [1] = "RF_ERR_INVALID_ARG",
    [2] = "RF_ERR_NO_MEMORY",
    [3] = "RF_ERR_NO_RESOURCE",
    [4] = "RF_ERR_UNSUPPORTED",
    [5] = "RF_ERR_REMOTE_ACCESS",
    [6] = "RF_ERR_TIMEOUT",
    [7] = "RF_ERR_DISCONNECTED",
    [8] = "RF_ERR_ABORTED",
    [9] = "RF_ERR_UNAVAILABLE",
    [10] = "RF_ERR_IO",
    [11] = "RF_ERR_CORRUPT",
    [12] = "RF_ERR_AUTH",
    [13] = "RF_ERR_NUMERIC",
    [14] = NULL, /* slot kept so RF_STATUS_COUNT covers RF_INPROGRESS */
};
_Static_assert(-RF_ERR_NUMERIC + 1 == RF_STATUS_COUNT - 1,
               "status_names must list every rf_status");

const char *rf_status_string(rf_status status)
{
    if (status == RF_INPROGRESS)
        return "RF_INPROGRESS";
    if (status <= 0 && -status < RF_STATUS_COUNT - 1)
        return status_names[-status];
    return "RF_ERR_UNKNOWN";
}

static _Thread_local char error_message[512];

const char *rf_error_message(void)
{
    return error_message;
}

void rf_error_clear(void)
{
    error_message[0] = '\0';
}

/* Makes text the thread's message and logs it. */
static rf_status set_text(rf_status status, const char *text)
{
    /* a name from a file or a peer in the message cannot act on the
     * terminal or log it reaches (rdmaflow/escape.h) */
    rf_escape(error_message, sizeof error_message, text, strlen(text),
              RF_ESCAPE_CONTROLS);
    /* A timeout or a full queue is the normal outcome of a poll or wait
     * that loops while idle (a listener thread, a CQ wait, a retry):
     * those are rate-limited, one limit per status (core/log.h). */
    if (status == RF_ERR_TIMEOUT)
        RF_LOG_DEBUG_LIMITED("%s: %s", rf_status_string(status), error_message);
    else if (status == RF_ERR_NO_RESOURCE)
        RF_LOG_DEBUG_LIMITED("%s: %s", rf_status_string(status), error_message);
    else
        RF_LOG_DEBUG("%s: %s", rf_status_string(status), error_message);
    return status;
}

rf_status rf_error_set(rf_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    /* Formatted aside first: the arguments may include rf_error_message()
     * itself (wrapping a cause: "reading x: %s"), which vsnprintf into the
     * same buffer would overwrite while reading it. */
    char text[sizeof error_message];
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    return set_text(status, text);
}

rf_status rf_error_prefix(rf_status status, const char *fmt, ...)
{
    char context[sizeof error_message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(context, sizeof context, fmt, ap);
    va_end(ap);
    if (!error_message[0])
        return set_text(status, context);
    return rf_error_set(status, "%s: %s", context, error_message);
}
