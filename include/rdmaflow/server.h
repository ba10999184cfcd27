/* rdmaflow/server.h: the server every task starts (tf.train.Server): a
 * ps task serves its shards until the chief shuts the cluster down, a
 * worker's server holds the fabric and the NUMA binding its sessions use
 * (rdmaflow/session.h shows the whole program). */
#ifndef RDMAFLOW_SERVER_H
#define RDMAFLOW_SERVER_H

#include "rdmaflow/api.h"

#include <stdbool.h>
#include <stdint.h>

#include "rdmaflow/cluster.h"
#include "rdmaflow/fabric.h"
#include "rdmaflow/graph.h"
#include "rdmaflow/ps.h"
#include "rdmaflow/status.h"
#include "rdmaflow/topology.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- server (tf.train.Server) ------------------------------------------ */

typedef struct rf_server rf_server;

typedef struct rf_server_options {
    /* ps tasks: one span per apply=ps update of the first trace_updates
     * updates of each shard is added to this trace (category "ps", thread
     * 0); NULL: none. The caller writes and destroys it after
     * rf_server_stop. */
    rf_trace *trace;
    uint64_t trace_updates;
    /* The cluster secret (rdmaflow/secret.h; --cluster_secret_file): NULL
     * or "" means RF_CLUSTER_SECRET_FILE, and neither means an
     * unauthenticated cluster. Loaded once by rf_server_start; a ps task
     * then authenticates every connection, a worker's sessions
     * authenticate to every ps. */
    const char *cluster_secret_file;
    /* Without a secret (neither of the above), rf_server_start logs one
     * warning line per process saying that the cluster is unauthenticated
     * and what that exposes. require_secret (--require_secret), or
     * RF_REQUIRE_SECRET=1, makes it fail with RF_ERR_AUTH instead. */
    bool require_secret;
    /* The local address a ps task listens on (--bind_addr): NULL or ""
     * means RF_BIND_ADDR, and neither the task's cluster host. "0.0.0.0"
     * or "::" listens on every address, e.g. in a Kubernetes pod whose
     * own name resolves to a service address rather than its interface;
     * the cluster address still chooses the fabric's RDMA device and the
     * NUMA node. A worker listens on nothing: it is accepted (the same
     * command line serves every task) and changes nothing there. */
    const char *bind_addr;
    /* How long rf_server_start retries the cluster's host names that do
     * not resolve yet (this task's; a worker's ps tasks' too), as a
     * Kubernetes pod's peers at start (--max_wait_secs); 0: one try. The
     * error at the end names the host and its task. */
    int resolve_wait_secs;
    /* Elastic workers (async training; implied by a sparse cluster,
     * rf_cluster_is_sparse): a ps task then admits any worker id below
     * RF_PS_MAX_DONE_WORKERS (the chief's id stays bound to the chief), so
     * workers the cluster did not list may join; member_timeout_ms (0:
     * 10000) is how long a worker's closed connection keeps it a member
     * (rdmaflow/ps.h, members). */
    bool elastic;
    int member_timeout_ms;
    /* A ps task's life without its chief (rf_ps_server_options, 0:
     * unbounded): it stops with RF_ERR_TIMEOUT once a chief it has seen
     * has had no connection for chief_gone_exit_ms, or idle_exit_ms after
     * its start if no chief ever came. */
    int chief_gone_exit_ms;
    int idle_exit_ms;
} rf_server_options;

/* Starts this task's server, for the task rf_cluster_self(cluster) names:
 * - every task first resolves the host names it needs (resolve_wait_secs);
 * - every task binds the calling thread to the NUMA node nearest its
 *   cluster address (RF_BIND; threads created afterwards, the executor's
 *   and the fabric's, inherit it) and opens the fabric on that address
 *   (RF_FABRIC);
 * - a ps task also starts serving on its address, or on bind_addr
 *   (rf_ps_server_start): the
 *   chief will create its shards. Its roles are bound to the cluster: only
 *   the chief's worker id may claim the chief's role, only training
 *   workers' ids may connect, and with a cluster secret every connection
 *   must authenticate.
 * options may be NULL. The cluster must outlive the server. */
RF_API rf_status rf_server_start(const rf_cluster *cluster,
                                 const rf_server_options *options,
                                 rf_server **out);
/* A ps task: blocks until the chief shut the cluster down (RF_OK) or the
 * server failed. RF_ERR_INVALID_ARG on a worker's server. */
RF_API rf_status rf_server_join(rf_server *server);
/* Stops serving and frees the server (every session on it must be
 * destroyed first). NULL is ignored. */
RF_API void rf_server_stop(rf_server *server);

/* A ps task's refused and dropped connections so far (all zero on a
 * worker's server). */
RF_API void rf_server_ps_counters(rf_server *server,
                                  rf_ps_server_counters *out);
RF_API rf_fabric *rf_server_fabric(const rf_server *server);
RF_API const rf_cluster *rf_server_cluster(const rf_server *server);
/* Whether the job is elastic: options.elastic or a sparse cluster. */
RF_API bool rf_server_elastic(const rf_server *server);
RF_API const rf_binding *rf_server_binding(const rf_server *server);
/* A ps task's listening port (0 on a worker). */
RF_API uint16_t rf_server_port(const rf_server *server);
/* A ps task's arena NUMA node and why (rf_ps_server_numa_node); -1 and ""
 * on a worker. */
RF_API int rf_server_numa_node(const rf_server *server, const char **why);

#ifdef __cplusplus
}
#endif
#endif
