/* session/server_secret.h: the cluster secret a task's server starts with
 * (server_secret.c), required or warned about. */
#ifndef RF_SESSION_SERVER_SECRET_H
#define RF_SESSION_SERVER_SECRET_H

#include <stdbool.h>

#include "rdmaflow/secret.h"

/* Loads the secret of flag_path or RF_CLUSTER_SECRET_FILE into *out
 * (rf_secret_load_default). Without either, *out = NULL and: with require
 * or RF_REQUIRE_SECRET=1, RF_ERR_AUTH saying that the cluster would be
 * unauthenticated; otherwise RF_OK after one warning line, logged once
 * per process, naming what an unauthenticated cluster exposes. A
 * malformed RF_REQUIRE_SECRET (not 0 or 1) is RF_ERR_INVALID_ARG naming
 * it, secret or not. */
rf_status sess_server_secret(const char *flag_path, bool require,
                             rf_cluster_secret **out);

#endif
