/* cluster/cluster_internal.h: what the cluster files share: the four
 * jobs, the job lists being parsed (with the source each came from, for
 * messages), and the rf_cluster object. See include/rdmaflow/cluster.h. */
#ifndef RF_GRAPH_DIST_CLUSTER_INTERNAL_H
#define RF_GRAPH_DIST_CLUSTER_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "rdmaflow/cluster.h"

/* In name order, the order of TF's ClusterDef and of every printout. */
enum { CL_CHIEF, CL_EVALUATOR, CL_PS, CL_WORKER, CL_NJOBS };

extern const char *const cl_job_names[CL_NJOBS];

/* Index of a job name, -1 if unknown. */
int cl_job_lookup(const char *name);

/* rf_error_set for an unknown job name: `<where>: unknown job "<name>"
 * (expected ...)`. */
rf_status cl_unknown_job(const char *where, const char *name);

/* Text for quoting in a message, escaped (rf_escape's RF_ESCAPE_ALL,
 * rdmaflow/escape.h) into buf: whole when it fits, else cut between two
 * escapes and ended with "...". */
const char *cl_quote(const char *text, size_t len, char buf[80]);

/* One job's task list. where: "--ps_hosts" or "TF_CONFIG: cluster.ps". */
typedef struct cl_job {
    bool present;
    bool from_json;
    /* TFJob's sparseCluster: tasks holds only the known tasks, each with
     * its own index (not its position); rf_cluster_num_tasks counts the
     * slots up to the highest known index. */
    bool sparse;
    int n;
    rf_cluster_task *tasks; /* job, index, address, host, port filled */
    char **keys;            /* canonical address keys (duplicate check) */
    char where[48];
} cl_job;

typedef struct cl_jobs {
    cl_job job[CL_NJOBS];
} cl_jobs;

void cl_jobs_free(cl_jobs *jobs);

/* Starts job `job` of jobs with its source name for messages. */
void cl_job_begin(cl_jobs *jobs, int job, const char *where, bool from_json);

/* Parses one "host:port" and appends it to the job; entry messages are
 * "<where>: task <i> ..." (flags) or "<where>[<i>] ..." (JSON). len is the
 * length of text (it need not be NUL-terminated). */
rf_status cl_job_add(cl_job *j, const char *text, size_t len);

/* The same for a sparse job's entry of task `index` ("<where>[\"3\"]"). */
rf_status cl_job_add_at(cl_job *j, int index, const char *text, size_t len);

/* A sparse job's task of `index`, NULL if not known. */
rf_cluster_task *cl_job_find(const cl_job *j, int index);

/* Slots of a job: n, or 1 + the highest known index of a sparse job. */
int cl_job_slots(const cl_job *j);

/* Cluster-wide checks once every job is parsed: no duplicate address, at
 * most one chief and one evaluator, at least one ps and one training task.
 * what names the cluster's source ("TF_CONFIG: cluster"). */
rf_status cl_jobs_check(const cl_jobs *jobs, const char *what);

/* Canonical address key for duplicate detection (malloc'd): IPv4 and IPv6
 * by value, hostnames lower-cased without a final dot; plus the port. */
char *cl_address_key(const char *host, uint16_t port);

/* Parses a task index text ("--task_index", "TF_CONFIG: task.index"):
 * decimal digits only, >= 0, <= INT_MAX. */
rf_status cl_parse_index(const char *text, const char *where, int *out);

/* --ps_hosts / --worker_hosts value into job `job`. */
rf_status cl_parse_host_list(const char *flag, const char *value, int job,
                             cl_jobs *jobs);

/* What TF_CONFIG said, once parsed and checked on its own. */
typedef struct cl_tfconfig {
    bool set;         /* TF_CONFIG non-empty */
    bool has_cluster; /* "cluster" or "sparseCluster" present, not {} */
    bool sparse;      /* it was TFJob's "sparseCluster" */
    cl_jobs jobs;
    bool has_task;  /* "task" present */
    int task_job;   /* CL_*, -1 if task.type is absent */
    bool has_index; /* task.index present */
    int task_index;
} cl_tfconfig;

/* Parses TF_CONFIG text (non-empty). Every type and address is checked;
 * whether the task is in the cluster is left to the resolver. */
rf_status cl_parse_tfconfig(const char *text, cl_tfconfig *out);

/* Launchers (cluster_launcher.c) ----------------------------------------- */

/* The value of variable name in envp ("NAME=value" entries), NULL if unset. */
const char *cl_getenv(char *const *envp, const char *name);

/* Whether a Slurm or MPI rank variable is set. */
bool cl_launcher_present(char *const *envp);

/* --num_ps (required) and --port_base (default 8888) checked. */
rf_status cl_launcher_flags(const rf_cluster_flags *f, int *num_ps,
                            int *port_base);

/* Tasks per node "2(x3),1" -> {2, 2, 2, 1} (malloc'd). */
rf_status cl_tasks_per_node(const char *text, const char *what, int **counts,
                            size_t *n);

/* What a launcher said: every host, its number of ranks, this rank. */
typedef struct cl_launch {
    char **hosts;
    size_t nhosts;
    int *counts;
    size_t ncounts;
    int rank, size;
    int job, index; /* this task */
    char source[128];
} cl_launch;

void cl_launch_free(cl_launch *l);

/* The cluster (ps = ranks 0..num_ps-1, worker = the rest) into jobs and
 * this task into out->job/index, from Slurm's or MPI's variables. */
rf_status cl_resolve_launcher(char *const *envp, int num_ps, int port_base,
                              cl_launch *out, cl_jobs *jobs);

struct rf_cluster {
    cl_jobs jobs;
    const rf_cluster_task *self; /* into jobs, or &outside */
    rf_cluster_task outside;     /* an evaluator not listed (TFJob style) */
    const rf_cluster_task *chief;
    rf_cluster_task unknown_chief; /* sparse: worker 0, address unknown */
    bool sparse;                   /* from TFJob's "sparseCluster" */
    char source[256];
    rf_cluster_job desc[CL_NJOBS];
    size_t num_desc;
};

#endif
