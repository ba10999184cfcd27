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

/* Closes any reservation socket left and frees the table. */
void lt_cluster_free(lt_task *tasks, int n);

#endif
