/* rdmaflow/cluster.h: the cluster of a distributed run and this process's
 * task in it, as TensorFlow 1.x's tf.train.ClusterSpec plus the task identity
 * that TFConfigClusterResolver / Estimator RunConfig derive.
 *
 * Sources (rf_cluster_resolve):
 *  - the classic trainer flags --ps_hosts=H:P,H:P --worker_hosts=H:P,...
 *    --job_name=ps|worker --task_index=N (TF's mnist_replica.py);
 *  - the TF_CONFIG environment variable, as TensorFlow documents it and as
 *    Kubernetes training operators (Kubeflow TFJob) set it:
 *      {"cluster": {"chief": ["h:p"], "worker": [...], "ps": [...],
 *                   "evaluator": [...]},
 *       "task": {"type": "worker", "index": 0}}
 *    Other top-level keys ("environment", "rpc_layer", ...) and other keys
 *    of "task" are ignored, as TensorFlow does. task.index is a JSON
 *    integer or a string of decimal digits (TF reads int(task["index"]));
 *    a fractional number or a boolean is an error (TF would truncate it).
 *    Each job is a list of strings: TF's sparse {index: address} form cannot
 *    come from JSON (its keys are strings, which ClusterSpec rejects) and is
 *    refused under "cluster". The JSON is parsed by json-c
 *    in strict mode plus UTF-8 validation; text after the value is an error
 *    (Python's "Extra data"); json-c still accepts single-quoted strings.
 *
 *  - TFJob's "sparseCluster" (enableDynamicWorker, training-operator's
 *    SparseTFConfig), instead of "cluster" (both: an error naming both):
 *      {"sparseCluster": {"ps": ["h:p", ...], "worker": {"3": "h:p"}},
 *       "task": {"type": "worker", "index": 3}}
 *    A worker gets every ps task and itself under its index (any index up
 *    to 65535; the worker map may name others too); a ps gets a one-entry
 *    "ps" list, itself at task.index, and an empty worker map. The operator
 *    gives a chief (or evaluator) task no ps addresses at all: such a task
 *    is an error (worker 0 is the chief of a sparse job). Only "ps" and
 *    "worker" may appear. The cluster is then sparse (rf_cluster_is_sparse):
 *    the job lists hold only the known tasks: rf_cluster_num_tasks counts
 *    slots up to the highest known index and rf_cluster_task_at is NULL for
 *    an unknown one; rf_cluster_num_workers is -1 (unknown: workers come
 *    and go, see the ps's members, rdmaflow/ps.h) and so is
 *    rf_cluster_num_ps on a ps task; the chief is worker 0, with address
 *    NULL when this task is not worker 0. A sparse job is elastic.
 *
 * Precedence: explicit flags override TF_CONFIG, field by field, like
 * TFConfigClusterResolver(task_type=, task_id=):
 *  - the cluster comes from --ps_hosts/--worker_hosts when either is given
 *    (then both are required and TF_CONFIG's "cluster" is ignored whole: the
 *    jobs are never mixed), else from TF_CONFIG's "cluster";
 *  - the job from --job_name, else TF_CONFIG's task.type;
 *  - the index from --task_index, else TF_CONFIG's task.index.
 * A TF_CONFIG that is set is always parsed and checked, even where flags
 * override it: a malformed variable is an error, never silently ignored.
 * An overridden TF_CONFIG value is logged at info level.
 *
 * Jobs: "ps", "worker", "chief" (optional, at most one task) and "evaluator"
 * (at most one task; accepted but never part of training). Any other job
 * name is an error (TF's multi_worker_util accepts only these four; the
 * legacy "master" job of old Estimators is rejected with a hint to rename it
 * "chief"). A cluster needs at least one ps task and at least one training
 * task (chief or worker).
 *
 * The chief is the "chief" job's task if there is one, else worker 0
 * (multi_worker_util.is_chief; the classic trainer's task_index == 0;
 * Estimator's RunConfig would instead require a chief job). An
 * evaluator is never the chief here (TF's is_chief calls the evaluator
 * "chief of its own partition"; it does not initialise training variables).
 * Training workers are chief + worker tasks (RunConfig.num_worker_replicas,
 * multi_worker_util.worker_count); this is SyncReplicasOptimizer's default
 * replicas_to_aggregate / total_num_replicas. A training task's worker_id is
 * multi_worker_util.id_in_cluster: the chief 0, worker i is i + (number of
 * chief tasks).
 *
 * Launchers (rf_cluster_resolve_env), TensorFlow's SlurmClusterResolver(
 * jobs={"ps": N, "worker": size - N}, port_base=P): opted into with
 * --num_ps N (and --port_base P, default 8888, as TensorFlow). Without
 * --num_ps the rank variables are ignored (a local run inside an sbatch
 * allocation stays local; the decision is logged at info level).
 *  - Slurm, when SLURM_PROCID is set: the rank is SLURM_PROCID, the number
 *    of tasks SLURM_STEP_NUM_TASKS (srun's step), else SLURM_NTASKS; the
 *    hosts SLURM_STEP_NODELIST, else SLURM_JOB_NODELIST, else SLURM_NODELIST,
 *    expanded as `scontrol show hostnames` (rf_hostlist_expand); the tasks
 *    on each node SLURM_STEP_TASKS_PER_NODE, else SLURM_TASKS_PER_NODE
 *    ("2(x3),1"), else SLURM_NTASKS_PER_NODE (the same on every node).
 *    SLURM_LOCALID and SLURMD_NODENAME, if set (slurmstepd sets them),
 *    must be where that block order puts the rank (srun's default
 *    distribution): a task placed otherwise (srun --distribution=cyclic
 *    or plane over several nodes) is an error naming both places.
 *    PMIX_RANK and OMPI_COMM_WORLD_RANK, if set too (srun --mpi=pmix), must
 *    agree with SLURM_PROCID.
 *  - Open MPI / PMIx, otherwise: the rank is OMPI_COMM_WORLD_RANK, else
 *    PMIX_RANK; the number of ranks OMPI_COMM_WORLD_SIZE (required; PMIx
 *    exports none). The ranks learn each other's addresses from
 *    RF_MPI_HOSTS, a host list in Slurm's syntax with OMPI_COMM_WORLD_
 *    LOCAL_SIZE ranks on each host in rank order (mpirun's --map-by slot
 *    with equal slots, or ppr:N:node); without RF_MPI_HOSTS every rank must
 *    be on this host (OMPI_COMM_WORLD_LOCAL_SIZE, if set, equal to
 *    OMPI_COMM_WORLD_SIZE) and the host is 127.0.0.1. OMPI_COMM_WORLD_
 *    LOCAL_RANK, if set, must be rank % LOCAL_SIZE.
 * The tasks are placed in rank order, host by host: the k-th task on a host
 * gets port P + k (SlurmClusterResolver's port offsets). Jobs are taken in
 * name order as TensorFlow does (sorted(jobs)): ranks 0..N-1 are ps tasks
 * 0..N-1, the others workers 0..; worker 0 is the chief (there is no chief
 * job). N must leave at least one worker.
 * Precedence: --ps_hosts/--worker_hosts and TF_CONFIG win over the
 * environment: a rank variable is then ignored. Mixing the sources is an
 * error naming both: --num_ps or --port_base with --ps_hosts/--worker_hosts,
 * --job_name, --task_index or a TF_CONFIG (with a cluster or a task);
 * --port_base without --num_ps; --num_ps with no rank variable set; a
 * partial launcher environment (SLURM_PROCID without SLURM_NTASKS, a node
 * list or tasks-per-node, PMIX_RANK without OMPI_COMM_WORLD_SIZE), counts
 * that do not add up, ranks that disagree, or a rank out of range.
 *
 * Addresses are HOST:PORT with HOST a hostname (letters, digits, '-', '_',
 * dot-separated labels of at most 63 characters, 253 in all, an optional
 * final dot), a dotted-quad IPv4 address, or an IPv6 address in brackets
 * ("[::1]:2222", zone allowed: "[fe80::1%eth0]:2222"); PORT is 1-65535 in
 * decimal. The same address twice (within or across jobs) is an error;
 * IPv4/IPv6 addresses compare by value, hostnames without case and final
 * dot. Names are not resolved: "localhost:2222" and "127.0.0.1:2222" are
 * different addresses to this check.
 *
 * Errors are RF_ERR_INVALID_ARG with rf_error_message() naming the source
 * and the offending entry, ready to be printed after "program: ":
 *   --ps_hosts: task 1 "ps1" has no port (expected HOST:PORT)
 *   TF_CONFIG: cluster.worker[2] "w:99999" has a bad port "99999" (must be
 *     1-65535)
 *   TF_CONFIG: invalid JSON at offset 17 (line 1, column 18): unexpected
 *     character; text there: "}"
 * Entries are numbered from 0, as task indices. */
#ifndef RDMAFLOW_CLUSTER_H
#define RDMAFLOW_CLUSTER_H

#include "rdmaflow/api.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmaflow/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- HOST:PORT addresses (also for the launcher) ----------------------- */

/* Longest host, with its NUL: 253-character names; IPv6 with a zone. */
#define RF_HOST_MAX 256

/* Parses "host:port" or "[ipv6]:port" (rules above) into host (without the
 * brackets) and port. `what` starts the error message (NULL: "address"):
 *   <what> "<text>" has no port (expected HOST:PORT) */
RF_API rf_status rf_parse_host_port(const char *text, const char *what,
                                    char host[RF_HOST_MAX], uint16_t *port);

/* Formats host and port as "host:port", bracketing a host that contains ':'
 * (IPv6). RF_ERR_INVALID_ARG if len is too small (buf then holds ""). */
RF_API rf_status rf_format_host_port(const char *host, uint16_t port, char *buf,
                                     size_t len);

/* ---- Slurm host lists ------------------------------------------------- */

/* Most hosts (and tasks) a host list may expand to. */
#define RF_HOSTLIST_MAX 65536

/* Expands a Slurm host list as `scontrol show hostnames` does, in order and
 * without removing duplicates: hosts separated by commas, each with any
 * number of bracket groups of comma-separated numbers and N-M ranges whose
 * zero padding (the low bound's width) is kept, the leftmost group varying
 * slowest: "node[01-03,07],gpu-a[1-2]" -> node01 node02 node03 node07
 * gpu-a1 gpu-a2; "r[1-2]n[8-9]" -> r1n8 r1n9 r2n8 r2n9. Malformed lists
 * (unbalanced or nested brackets, empty hosts, ranges or brackets, a range
 * going down, a non-number, blanks, more than RF_HOSTLIST_MAX hosts) are
 * RF_ERR_INVALID_ARG with a message starting with `what` (NULL: "host list")
 * and naming the offset. *hosts is malloc'd: rf_hostlist_free(*hosts, *n). */
RF_API rf_status rf_hostlist_expand(const char *text, const char *what,
                                    char ***hosts, size_t *n);
RF_API void rf_hostlist_free(char **hosts, size_t n);

/* ---- The cluster ------------------------------------------------------- */

typedef struct rf_cluster rf_cluster;

/* One task of the cluster. Strings are owned by the cluster. */
typedef struct rf_cluster_task {
    const char *job;     /* "chief", "evaluator", "ps" or "worker" */
    int index;           /* task index in its job */
    const char *address; /* "host:port" as given; NULL only for an evaluator
                            that is not listed in the cluster (TFJob style) */
    const char *host;    /* without IPv6 brackets; NULL with address */
    uint16_t port;       /* 0 with address NULL */
    bool is_chief;       /* the chief (see above) */
    int worker_id;       /* chief/worker: id_in_cluster; otherwise -1 */
} rf_cluster_task;

/* The classic flags, as the text given on the command line; NULL = flag not
 * given. (An empty string is a given, empty value, and an error.) */
typedef struct rf_cluster_flags {
    const char *ps_hosts;
    const char *worker_hosts;
    const char *job_name;
    const char *task_index;
    /* launchers (rf_cluster_resolve_env): --num_ps N, --port_base P */
    const char *num_ps;
    const char *port_base;
} rf_cluster_flags;

/* Builds the cluster and this task from the flags and the TF_CONFIG text
 * (pass getenv("TF_CONFIG"); NULL or "" = unset), with the precedence above.
 * flags may be NULL (none given).
 * - Nothing distributed configured (no cluster flag, no --job_name/
 *   --task_index, TF_CONFIG unset, "{}" or without "cluster" and with at most
 *   the task {"type": "worker", "index": 0}, Estimator's local mode): RF_OK
 *   with *out = NULL, a local run.
 * - Otherwise RF_OK with a cluster whose own task is set, or
 *   RF_ERR_INVALID_ARG (message as above) with *out = NULL; RF_ERR_NO_MEMORY
 *   if an allocation fails. */
RF_API rf_status rf_cluster_resolve(const rf_cluster_flags *flags,
                                    const char *tf_config, rf_cluster **out);

/* The same from an environment: envp is a NULL-terminated array of
 * "NAME=value" strings (NULL: the process's environ). TF_CONFIG is read from
 * it, and with flags->num_ps the Slurm or MPI rank variables (above).
 * rf_cluster_resolve(flags, tf_config, out) is this with an environment
 * holding TF_CONFIG only. */
RF_API rf_status rf_cluster_resolve_env(const rf_cluster_flags *flags,
                                        char *const *envp, rf_cluster **out);

RF_API void rf_cluster_destroy(rf_cluster *c);

/* This process's task: the same pointer as rf_cluster_task_at() gives
 * for it (an evaluator outside the cluster has its own). */
RF_API const rf_cluster_task *rf_cluster_self(const rf_cluster *c);

/* The chief task (chief job's task, else worker 0). */
RF_API const rf_cluster_task *rf_cluster_chief(const rf_cluster *c);

/* Number of tasks of a job; 0 for a job not in the cluster or unknown. In a
 * sparse cluster (above), the slots up to the highest known index: some of
 * them may be unknown (rf_cluster_task_at NULL). */
RF_API int rf_cluster_num_tasks(const rf_cluster *c, const char *job);

/* Task `index` of `job`, NULL if there is none. */
RF_API const rf_cluster_task *rf_cluster_task_at(const rf_cluster *c,
                                                 const char *job, int index);

/* Its "host:port", NULL if there is none (tf.train.ClusterSpec
 * .task_address). */
RF_API const char *rf_cluster_task_address(const rf_cluster *c, const char *job,
                                           int index);

/* Number of ps tasks (RunConfig.num_ps_replicas); -1 on a ps task of a
 * sparse cluster (it knows only itself). */
RF_API int rf_cluster_num_ps(const rf_cluster *c);

/* Number of training workers: chief + worker tasks; -1 (unknown) in a
 * sparse cluster, whose workers may join and leave. */
RF_API int rf_cluster_num_workers(const rf_cluster *c);

/* Whether the cluster came from TFJob's "sparseCluster" (above). */
RF_API bool rf_cluster_is_sparse(const rf_cluster *c);

/* Where the cluster and the task came from, e.g. "cluster from
 * --ps_hosts/--worker_hosts, task from --job_name/--task_index". */
RF_API const char *rf_cluster_source(const rf_cluster *c);

/* A job of a cluster (tf.train.ClusterSpec) as far as placement needs it. */
typedef struct rf_cluster_job {
    const char *name;
    int num_tasks;
} rf_cluster_job;

typedef struct rf_cluster_desc {
    const rf_cluster_job *jobs;
    size_t num_jobs;
} rf_cluster_desc;

/* The cluster as rf_replica_device_setter (rdmaflow/device.h) needs it: every
 * job present, in name order (chief, evaluator, ps, worker), with its number
 * of tasks. out->jobs points into c and is valid while c lives. */
RF_API void rf_cluster_device_desc(const rf_cluster *c, rf_cluster_desc *out);

/* Human-readable description for --explain: a summary line, one line per
 * task in name order with its device string, address and marks (chief,
 * not training, this task), then this task and the sources:
 *   cluster: 2 ps, 2 training workers; chief /job:worker/task:0 (no chief
 *     job: worker 0)
 *     /job:ps/task:0      ps0:2222
 *     /job:ps/task:1      ps1:2222
 *     /job:worker/task:0  w0:2222   chief
 *     /job:worker/task:1  w1:2222   this task
 *   this task: /job:worker/task:1 (w1:2222); cluster from
 *     --ps_hosts/--worker_hosts, task from --job_name/--task_index
 * (the summary and last lines are single lines). Returns a malloc'd string
 * (free it), NULL if out of memory or c is NULL. */
RF_API char *rf_cluster_format(const rf_cluster *c);

/* The same as JSON; also a valid TF_CONFIG that resolves to the same cluster
 * and task (keys beyond "cluster" and task.type/index are ignored by
 * TensorFlow and by rf_cluster_resolve):
 *   {"cluster": {"ps": [...], "worker": [...]},
 *    "task": {"type": "worker", "index": 1, "address": "w1:2222",
 *             "is_chief": false, "worker_id": 1},
 *    "chief": {"type": "worker", "index": 0},
 *    "num_ps": 2, "num_workers": 2, "source": "..."}
 * Jobs in name order. pretty: indented over several lines, else one line.
 * Returns a malloc'd string (free it), NULL if out of memory. */
RF_API char *rf_cluster_to_json(const rf_cluster *c, bool pretty);

#ifdef __cplusplus
}
#endif
#endif
