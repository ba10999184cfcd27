/* tools/trainer/flags.h: rf-trainer's command line. TensorFlow/absl style:
 * "--name=value" or "--name value"; booleans "--name", "--name=true|false",
 * "--noname". Every flag is one row of a flag table in flags.c
 * (rdmaflow/flags.h, read in its tf_style). The cluster flags
 * (--ps_hosts, --worker_hosts, --job_name, --task_index, and --num_ps,
 * --port_base for srun/mpirun) are kept as text and checked by
 * rf_cluster_resolve_env together with TF_CONFIG and the rank variables. */
#ifndef RF_TRAINER_FLAGS_H
#define RF_TRAINER_FLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "exit_status.h"
#include "model.h"
#include "rdmaflow/ctr_data.h"
#include "rdmaflow/device.h"
#include "rdmaflow/optim.h"
#include "rdmaflow/ps.h"

/* TR_EXIT_USAGE (2) for a usage error (unknown flag, malformed or
 * out-of-range value): exit_status.h. */

/* Distributed placement by default: greedy by bytes with
 * min_max_variable_partitioner's default slice, which balances the bytes
 * each ps holds (default MLP, 2 ps: 1.60 / 1.22 MB instead of round-robin's
 * 0.00 / 2.82 MB). On this 2-core host, where every task shares the same
 * cores, bench/train/dist-throughput could not tell the placements apart
 * (bench/train/README.md, "Placement"). */
#define TR_DEFAULT_PS_STRATEGY   "greedy"
#define TR_DEFAULT_PARTITION_STR "262144" /* bytes, the row's default */

/* --model=wide_deep's defaults: 1.5 passes over the default spec's 10^6
 * training examples, within 0.01 of the hidden model's test AUC
 * (tools/trainer/README.md has the run). The optimizers are
 * DNNLinearCombinedClassifier's kinds (FTRL for the wide part, Adagrad for
 * the deep part) at larger rates than its 0.2 and 0.05: the loss is a mean
 * over the batch, so a table row's gradient is ~1/batch of an example's
 * and both accumulators' initial 0.1 dominates their sum for a long time;
 * at 0.2/0.05 one pass reached 0.749, at 1.0/0.1 0.765. */
#define TR_WD_DEFAULT_BATCH 512
#define TR_WD_DEFAULT_STEPS 3000
#define TR_WD_WIDE_LR       1.0
#define TR_WD_DEEP_LR       0.1

typedef enum tr_explain {
    TR_EXPLAIN_NONE = 0,
    TR_EXPLAIN_TEXT,
    TR_EXPLAIN_JSON,
} tr_explain;

typedef struct tr_flags {
    /* local training */
    tr_model model;              /* --model */
    char model_text[128];        /* as given, for the report */
    const char *optimizer;       /* --optimizer, as given */
    rf_optim_config optim;       /* resolved hyper-parameters */
    double learning_rate;        /* --learning_rate (NAN: tool default) */
    double momentum;             /* --momentum (NAN: tool default) */
    int64_t batch_size;          /* --batch_size */
    int64_t train_steps;         /* --train_steps (StopAtStepHook) */
    uint64_t seed;               /* --seed */
    int64_t threads;             /* --threads (0: online CPUs) */
    const char *data_dir;        /* --data_dir (NULL: library default) */
    const char *trace_path;      /* --trace (NULL: none) */
    int64_t trace_steps;         /* --trace_steps */
    int64_t log_every;           /* --log_every (0: never) */
    int64_t eval_batch_size;     /* --eval_batch_size */
    bool help;                   /* --help / -h */
    bool version;                /* --version */
    const char *variables_out;   /* --variables_out (NULL: none) */
    const char *metrics_out;     /* --metrics_out (NULL: none) */
    int64_t metrics_every_steps; /* --metrics_every_steps (default 100) */
    const char *metrics_port;    /* --metrics_port (NULL: RF_METRICS_PORT) */
    /* --cluster_secret_file (NULL: RF_CLUSTER_SECRET_FILE, else none) */
    const char *cluster_secret_file;
    bool require_secret; /* --require_secret */
    /* --initial_accumulator_value (adagrad, ftrl), --learning_rate_power and
     * --l1/l2/l2_shrinkage_regularization_strength (ftrl); NAN: TF's
     * default */
    double initial_accumulator_value, learning_rate_power;
    double l1_regularization_strength, l2_regularization_strength;
    double l2_shrinkage_regularization_strength;
    /* distributed: the cluster flags as given (NULL: not given) */
    const char *ps_hosts, *worker_hosts, *job_name, *task_index;
    const char *num_ps, *port_base; /* --num_ps, --port_base as given */
    const char *bind_addr; /* --bind_addr (NULL: RF_BIND_ADDR, else none) */
    const char *apply;     /* --apply as given ("ps" by default) */
    rf_ps_apply_mode apply_mode;
    bool use_locking;
    /* --ps_strategy: replica_device_setter's ps_strategy (round_robin or
     * greedy, GreedyLoadBalancingStrategy with byte_size_load_fn) */
    const char *ps_strategy;
    rf_ps_strategy_kind ps_strategy_kind;
    /* --partition_min_slice_bytes: min_max_variable_partitioner(
     * max_partitions=ps tasks, min_slice_size=N) over the model's
     * variables; 0 = no partitioner */
    int64_t partition_min_slice_bytes;
    /* --sync_replicas, --replicas_to_aggregate, --total_num_replicas (0:
     * every training worker) */
    bool sync_replicas;
    int64_t replicas_to_aggregate, total_num_replicas;
    /* --staleness K (stale synchronous parallel; -1: off) */
    int64_t staleness;
    /* --embedding_lookup: how lookups fetch a table's rows (an
     * rf_lookup_way: auto, rows or gather) */
    int embedding_lookup;
    tr_explain explain;
    bool explain_only;       /* --explain_only */
    const char *explain_out; /* --explain_out (NULL or "-": stdout) */
    /* MonitoredTrainingSession's */
    const char *checkpoint_dir;    /* --checkpoint_dir (NULL: none) */
    int64_t save_checkpoint_steps; /* 0: by seconds */
    double save_checkpoint_secs;   /* default 600 */
    int64_t max_to_keep;           /* default 5 */
    int64_t max_failed_saves;      /* default 3; 0: never stop */
    int64_t log_step_count_steps;  /* the chief's StepCounter; default 100 */
    const char *summary_dir;       /* --summary_dir (NULL: checkpoint_dir) */
    int64_t save_summaries_steps;  /* default 100 */
    bool save_summaries_steps_given;
    double save_summaries_secs;   /* alone: replaces the steps' default */
    int64_t max_wait_secs;        /* readiness wait; default 7200 */
    int64_t stop_grace_secs;      /* the chief's wait at the end; 120 */
    bool elastic;                 /* workers join and leave (async) */
    int64_t member_timeout_secs;  /* elastic: a gone worker's bound; 10 */
    int64_t shard_batches;        /* elastic: batches per ledger shard; 16 */
    const char *shards_out;       /* elastic: --shards_out (NULL: none) */
    int64_t ps_idle_exit_secs;    /* a ps that never saw a chief; 0: never */
    const char *distributed_flag; /* first distributed-only flag given */
    /* --model=wide_deep (wide_deep.h) */
    rf_ctr_spec ctr_spec;         /* --ctr_spec (default: the default spec) */
    int64_t hash_buckets;         /* --hash_buckets */
    int64_t embedding_dim;        /* --embedding_dim */
    tr_model hidden;              /* --hidden: the deep part's widths */
    int64_t eval_examples;        /* --eval_examples */
    int64_t embedding_partitions; /* --embedding_partitions (0: not given) */
    bool optimizer_given;         /* --optimizer was given */
    /* the deep part's optimizer (the wide part's is optim): Adagrad 0.05
     * unless --optimizer names one for both */
    rf_optim_config optim_deep;
    const char *ctr_flag;   /* first wide_deep-only flag given */
    const char *image_flag; /* first Fashion-MNIST-only flag given */
} tr_flags;

/* Parses argv into *out (defaults first). On a usage error returns -1 with
 * a message naming the flag and the problem in err ("--batch_size: 'abc'
 * is not an integer"). Resolves the optimizer config (defaults, the tool's
 * learning rate per optimizer, rf_optim_validate). */
int tr_flags_parse(int argc, char **argv, tr_flags *out, char *err,
                   size_t errlen);

/* The flags that depend on the cluster: --replicas_to_aggregate and
 * --total_num_replicas against its num_workers training workers. -1 with
 * a message naming the flag in err (a usage error). */
int tr_flags_check_cluster(const tr_flags *f, int num_workers, char *err,
                           size_t errlen);

/* Prints the flag reference (for --help). */
void tr_flags_usage(FILE *f, const char *prog);

#endif
