/* tools/trainer/dist.h: rf-trainer's distributed mode (TensorFlow 1.x's
 * classic ps/worker trainer). A ps task serves an empty arena until the
 * chief shuts it down (dist_ps.c). A worker builds the model under
 * replica_device_setter, so every variable is placed on a ps task
 * (round-robin in creation order, global_step first, on ps 0) and every
 * other op on the worker, then turns the placed graph into its per-step
 * work (dist_setup.c):
 *  - each ps-resident variable read by a worker op becomes an RDMA READ
 *    straight into the variable's (registered) storage, all posted at the
 *    start of the step; an op that consumes the variable waits for that one
 *    read only (an executor hook), so the first layers compute while later
 *    reads are in flight;
 *  - each optimizer apply on a ps-resident variable becomes a remote apply
 *    (--apply=ps: WRITE_WITH_IMM of the gradient, applied by the ps;
 *    --apply=worker: READ, apply here, WRITE back, on a pusher thread),
 *    issued by a hook as soon as backprop produced that gradient, so pushes
 *    of upper layers overlap the backprop of lower ones;
 *  - the AssignAdd(global_step, 1) becomes a FETCH_AND_ADD on ps 0, after
 *    the step's applies completed.
 * The step loop is dist_step.c; --explain is dist_explain.c; the worker's
 * life (connect, create or look up shards, initialise or wait, train,
 * announce done, and for the chief: wait for the others, evaluate, export,
 * shut the ps tasks down) is dist_worker.c. */
#ifndef RF_TRAINER_DIST_H
#define RF_TRAINER_DIST_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "flags.h"
#include "rdmaflow/cluster.h"
#include "rdmaflow/data.h"
#include "rdmaflow/ps.h"
#include "rdmaflow/topology.h"
#include "session.h"
#include "train.h"

/* A trainable variable that lives on a ps task. */
typedef struct tr_rvar {
    rf_node *var;        /* the worker graph's variable */
    rf_node *grad;       /* its gradient node (fetched, hooked) */
    rf_apply_info apply; /* the optimizer apply it stands for */
    size_t ps_task;
    char device[RF_DEVICE_MAX]; /* as replica_device_setter placed it */
    rf_ps_var *shard;
    rf_ps_var_info info;
    float *grad_buf; /* registered staging the push is sent from */
    uint64_t t_post; /* when this step's read was posted */
    atomic_int read_traced;
    char read_span[300], push_span[300], args[96];
} tr_rvar;

typedef struct tr_dist {
    const tr_flags *f;
    rf_cluster *cluster;
    const rf_cluster_task *self;
    int num_ps, num_workers, worker_id;
    bool chief;
    rf_topology *topo;
    rf_binding binding;
    rf_fabric *fabric;
    rf_ps_client *client;
    tr_session *s;
    rf_node *global_step_var;
    char global_step_device[RF_DEVICE_MAX];
    tr_rvar *v;
    size_t nv;
    unsigned char *mem; /* values and gradient staging, registered once */
    size_t mem_len;
    rf_mr *mem_mr;
    rf_ps_read_set *reads;

    /* the step plan and its hooks */
    rf_plan *plan;
    rf_tensor *fetched; /* the plan's outputs: loss, then the gradients */
    size_t nnodes;      /* graph nodes when the plan was made */
    uint32_t *wait_off; /* CSR by node id: remote variables it waits for */
    uint32_t *wait_var;
    int32_t *grad_var; /* node id -> index in v of the gradient, or -1 */

    rf_trace *trace; /* non-NULL while tracing */
    uint64_t step;
    int pusher_tid;

    /* apply=worker: the pusher thread and its queue of variable indices */
    pthread_t pusher;
    bool pusher_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t *queue;
    size_t qhead, qlen;
    rf_ps_xfer *push_x; /* the pusher's batch */
    bool busy, stop;
    rf_status push_st;
    char push_err[512];
} tr_dist;

/* dist_ps.c: the ps job: serves until the chief's shutdown (exit status). */
int tr_run_ps(const tr_flags *f, rf_cluster *cluster);

/* dist_worker.c: the worker job (and the chief); exit status. */
int tr_run_worker(const tr_flags *f, rf_cluster *cluster);

/* dist_setup.c */
/* Binds this thread (and so the executor and fabric threads created after)
 * to the NUMA node nearest this task's address, opens the fabric. */
int tr_dist_open(tr_dist *d, char *err, size_t errlen);
/* Maps the placed graph to shards: every variable on /job:ps must be
 * global_step (ps 0), a trainable variable with an optimizer apply, or one
 * of their slots or beta powers; anything else is refused. */
int tr_dist_map(tr_dist *d, char *err, size_t errlen);
/* Connects to the ps tasks, registers the variables' storage, creates
 * (chief) or looks up the shards, and initialises them (chief) or waits
 * for the chief's init flags (others); then prepares the per-step reads. */
int tr_dist_connect(tr_dist *d, char *err, size_t errlen);
/* Reads every variable (values; with slots also the optimizer slots and
 * beta powers, and global_step) from the ps tasks into the local graph. */
int tr_dist_fetch_all(tr_dist *d, bool slots, char *err, size_t errlen);
void tr_dist_close(tr_dist *d);

/* dist_step.c: the step plan (forward + backward, fetching the loss and
 * every gradient, with the read-wait and push hooks); made once. */
int tr_dist_plan(tr_dist *d, char *err, size_t errlen);
/* dist_step.c: the training loop (StopAtStepHook on the cluster's
 * global_step). */
int tr_dist_train(tr_dist *d, rf_dataset *train, rf_trace *trace, FILE *out,
                  tr_train_result *res, char *err, size_t errlen);

/* dist_explain.c: --explain (text) and --explain=json, before training. */
int tr_dist_explain(const tr_dist *d, FILE *out, char *err, size_t errlen);

#endif
