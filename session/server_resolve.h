/* session/server_resolve.h: resolving the cluster's host names before a
 * server starts, retried until a deadline (server_resolve.c). */
#ifndef RF_SESSION_SERVER_RESOLVE_H
#define RF_SESSION_SERVER_RESOLVE_H

#include "rdmaflow/cluster.h"
#include "rdmaflow/status.h"

/* Resolves this task's host and, for a worker, every ps task's host,
 * retrying a name that does not resolve (yet) for up to wait_secs seconds
 * in all (0: once). RF_ERR_UNAVAILABLE naming the host and its task. */
rf_status sess_resolve_hosts(const rf_cluster *cluster, int wait_secs);

#endif
