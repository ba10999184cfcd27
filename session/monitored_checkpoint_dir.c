/* session/monitored_checkpoint_dir.c: the check of a monitored session's
 * checkpoint directory before any work
 * (rf_monitored_session_check_checkpoint_dir, rdmaflow/monitored_session.h):
 * the directory made, and the CheckpointSaver's state file writable. */
#include <stdio.h>

#include "rdmaflow/checkpoint.h"
#include "rdmaflow/env.h"
#include "rdmaflow/file.h"
#include "rdmaflow/monitored_session.h"

rf_status rf_monitored_session_check_checkpoint_dir(const char *dir)
{
    if (!dir)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_monitored_session_check_checkpoint_dir: "
                            "NULL directory");
    char state[4096];
    int n = snprintf(state, sizeof state, "%s/checkpoint", dir);
    if (n < 0 || (size_t)n >= sizeof state)
        return rf_error_set(RF_ERR_INVALID_ARG, "'%s' is too long",
                            RF_ECHO(dir));
    rf_status st = rf_ckpt_dir_create(dir);
    if (st == RF_OK)
        st = rf_file_check_output(state);
    return st;
}
