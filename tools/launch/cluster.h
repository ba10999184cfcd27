/* tools/launch/cluster.h: the task table of one launch. */
#ifndef RF_LAUNCH_CLUSTER_H
#define RF_LAUNCH_CLUSTER_H

#include "launch.h"

/* Creates the tasks in start order: ps0.., then the chief, then worker0..;
 * each gets secret (the job's own cluster secret, or NULL: the user's);
 * reserves a port for each (lt_ports_reserve) and builds each task's argv
 * (PROGRAM ARGS... then, in flags mode, --ps_hosts= (when there are ps
 * tasks) --worker_hosts= --job_name= --task_index=, and --trace=FILE.<task>
 * .json with --trace) and, in TF_CONFIG mode, its TF_CONFIG JSON. Returns 0,
 * or -1 with err set (-2: --host does not resolve, a usage error). */
int lt_cluster_create(const lt_opts *o, const struct lt_secret *secret,
                      lt_task **tasks, int *n, char *err, size_t errlen);

/* An elastic job (o->elastic) gets a new worker at t[*n], the table having
 * room for cap tasks (lt_cluster_create made it): the next worker index
 * never used, a port reserved on o->host, its argv and TF_CONFIG as the
 * other workers' with a worker list that ends with it. Increments *n.
 * Returns 0, or -1 with err saying why (no room left, no port). */
int lt_cluster_add_worker(const lt_opts *o, lt_task *t, int *n, int cap,
                          char *err, size_t errlen);

/* The table's capacity as lt_cluster_create made it for o. */
int lt_cluster_capacity(const lt_opts *o);

/* Closes any reservation socket left and frees the table. */
void lt_cluster_free(lt_task *tasks, int n);

#endif
