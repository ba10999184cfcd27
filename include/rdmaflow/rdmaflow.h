/* rdmaflow/rdmaflow.h: every public header of rdmaflow, for programs that
 * want the whole library with one include. Layers, bottom up (each may use
 * only those before it; docs/DESIGN.md section 1):
 *   core     status.h (rf_status, rf_error_set), types.h (dtypes, shapes),
 *            clock.h, byteorder.h, env.h, escape.h (printing untrusted
 *            text), spawn.h (fork + exec of
 *            programs), topology.h (hwloc NUMA binding), version.h
 *            (rf_version), api.h (RF_API, the export mark), flags.h
 *            (the flag table programs read their command line with)
 *   fabric   fabric.h (RDMA-shaped transport: verbs, sock)
 *   optim    optim.h (TensorFlow 1.x update rules)
 *   ps       ps.h (ps server and worker client)
 *   cluster  cluster.h (ClusterSpec from flags or TF_CONFIG)
 *   graph    graph.h, device.h (device strings, replica_device_setter),
 *            data.h (datasets), ctr_data.h (synthetic click-through data,
 *            AUC and log loss)
 *   session  server.h (tf.train.Server), session.h (the worker's
 *            session), monitored_session.h (MonitoredTrainingSession and
 *            its hooks), metrics.h (metrics files), checkpoint.h
 *            (checkpoint files) */
#ifndef RDMAFLOW_RDMAFLOW_H
#define RDMAFLOW_RDMAFLOW_H

#include "rdmaflow/api.h"
#include "rdmaflow/byteorder.h"
#include "rdmaflow/checkpoint.h"
#include "rdmaflow/clock.h"
#include "rdmaflow/cluster.h"
#include "rdmaflow/ctr_data.h"
#include "rdmaflow/data.h"
#include "rdmaflow/device.h"
#include "rdmaflow/env.h"
#include "rdmaflow/escape.h"
#include "rdmaflow/fabric.h"
#include "rdmaflow/fabric_info.h"
#include "rdmaflow/file.h"
#include "rdmaflow/flags.h"
#include "rdmaflow/graph.h"
#include "rdmaflow/metrics.h"
#include "rdmaflow/monitored_session.h"
#include "rdmaflow/optim.h"
#include "rdmaflow/prometheus.h"
#include "rdmaflow/ps.h"
#include "rdmaflow/secret.h"
#include "rdmaflow/server.h"
#include "rdmaflow/session.h"
#include "rdmaflow/spawn.h"
#include "rdmaflow/status.h"
#include "rdmaflow/summary.h"
#include "rdmaflow/topology.h"
#include "rdmaflow/types.h"
#include "rdmaflow/version.h"

#endif
