/* tools/trainer/exit_status.c: rf_status codes to rf-trainer's exit
 * statuses (one table), and the reason the final line gives. Not a place
 * for policy elsewhere: a call site that knows better than the table (the
 * chief whose workers did not finish: the job is over, 1) says so with
 * tr_exit_fail. */
#include "exit_status.h"

#include <stdarg.h>
#include <stdio.h>

/* Indexed by -status. A peer's trouble that outlived the library's own
 * retries (the readiness wait, recovery) is curable by restarting the task
 * once the peer is back; what the user gave (a flag, a setting, a model
 * that differs from the chief's, a secret that differs) is not; the rest
 * (disk, data, numbers, memory) repeats itself. */
static const int exit_of_status[RF_STATUS_COUNT] = {
    [0] = TR_EXIT_OK,
    [-RF_ERR_INVALID_ARG] = TR_EXIT_USAGE,
    [-RF_ERR_NO_MEMORY] = TR_EXIT_FAILED,
    [-RF_ERR_NO_RESOURCE] = TR_EXIT_FAILED,
    [-RF_ERR_UNSUPPORTED] = TR_EXIT_USAGE,
    [-RF_ERR_REMOTE_ACCESS] = TR_EXIT_FAILED,
    [-RF_ERR_TIMEOUT] = TR_EXIT_RETRYABLE,
    [-RF_ERR_DISCONNECTED] = TR_EXIT_RETRYABLE,
    [-RF_ERR_ABORTED] = TR_EXIT_RETRYABLE,
    [-RF_ERR_UNAVAILABLE] = TR_EXIT_RETRYABLE,
    [-RF_ERR_IO] = TR_EXIT_FAILED,
    [-RF_ERR_CORRUPT] = TR_EXIT_FAILED,
    [-RF_ERR_AUTH] = TR_EXIT_USAGE,
    [-RF_ERR_NUMERIC] = TR_EXIT_FAILED,
};

int tr_exit_status(rf_status st)
{
    if (st > 0 || -(int)st >= RF_STATUS_COUNT)
        return TR_EXIT_FAILED; /* RF_INPROGRESS or unknown: not an answer */
    return exit_of_status[-(int)st];
}

const char *tr_exit_kind(int code)
{
    switch (code) {
    case TR_EXIT_OK:
        return "success";
    case TR_EXIT_USAGE:
        return "usage";
    default:
        return code < 128 ? "permanent" : "retryable";
    }
}

static char reason[2048];
static int have_reason;

void tr_exit_reason(const char *fmt, ...)
{
    if (have_reason)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    have_reason = 1;
}

int tr_exit_has_reason(void)
{
    return have_reason;
}

int tr_exit_fail(int code, const char *what, const char *msg)
{
    fprintf(stderr, "rf-trainer: %s: %s\n", what, msg);
    tr_exit_reason("%s: %s", what, msg);
    return code;
}

int tr_exit_fail_status(rf_status st, const char *what, const char *msg)
{
    return tr_exit_fail(tr_exit_status(st), what, msg);
}

void tr_exit_final_line(int code)
{
    FILE *to = code == TR_EXIT_OK ? stdout : stderr;
    fflush(stdout);
    fprintf(to, "rf-trainer: exit %d (%s): %s\n", code, tr_exit_kind(code),
            have_reason ? reason : "see the lines above");
    fflush(to);
}
