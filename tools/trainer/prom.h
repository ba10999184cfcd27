/* tools/trainer/prom.h: rf-trainer's Prometheus endpoint (--metrics_port,
 * RF_METRICS_PORT): one registry and HTTP server per task process, started
 * before the task's job runs and stopped after it; the ps, worker and
 * evaluator code add their metrics to tr_prom_registry(). */
#ifndef RF_TRAINER_PROM_H
#define RF_TRAINER_PROM_H

#include <stdint.h>

#include "flags.h"
#include "rdmaflow/cluster.h"
#include "rdmaflow/prometheus.h"

/* Starts serving if --metrics_port or RF_METRICS_PORT is set (not 0):
 * on the task's cluster host (--bind_addr or RF_BIND_ADDR instead when
 * given; an evaluator outside the cluster: this machine's host name), on
 * the port plus the task's rank among the cluster's tasks of the same host
 * (chief, ps, worker, evaluator order), and prints where. A host name that
 * does not resolve is tried again for --max_wait_secs. Returns 0, or the
 * exit status having said what failed (2: a bad port, a port in use, an
 * address that is not this machine's; 138: a name that never resolved). */
int tr_prom_start(const tr_flags *f, const rf_cluster *cluster);
/* The registry, NULL when not serving. */
rf_prom_registry *tr_prom_registry(void);
/* From now on GET /ready answers 200: a ps serves, a worker's session is
 * ready, an evaluator has its model (a Kubernetes readiness probe). */
void tr_prom_ready(void);
/* The evaluator evaluated the checkpoint of global_step step. */
void tr_prom_evaluated(int64_t step);
/* Stops serving and frees the registry (after the job's hooks are gone). */
void tr_prom_stop(void);

#endif
