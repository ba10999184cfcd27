/* tools/trainer/flags.c: the flag table and parser of rf-trainer (see
 * flags.h). One row per flag: its name, value kind, range and help; the
 * parser handles the syntax, the kinds handle the values, and every error
 * names the flag ("--batch_size: 0 is out of range [1, 65536]"). */
#include "flags.h"

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/data.h"
#include "rdmaflow/env.h"
#include "rdmaflow/status.h"

typedef enum flag_kind {
    FK_INT,    /* int64_t field in [min, max] */
    FK_FLOAT,  /* double field, finite, in [min, max] (min excluded when
                  min_open) */
    FK_STRING, /* const char * field, non-empty */
    FK_BOOL,   /* bool field */
    FK_CUSTOM, /* parsed by fn */
} flag_kind;

typedef int (*flag_fn)(tr_flags *f, const char *value, char *err,
                       size_t errlen);

typedef struct flag_def {
    const char *name;
    flag_kind kind;
    size_t offset; /* field in tr_flags (not FK_CUSTOM) */
    double min, max;
    bool min_open;
    bool f32; /* FK_FLOAT stored as a float32: must not round to 0 or inf */
    flag_fn fn;
    bool distributed;    /* meaningful only in a distributed run */
    bool optional_value; /* "--name" alone means "--name=true" */
    bool ctr;            /* only with --model=wide_deep */
    bool image;          /* only with the Fashion-MNIST models */
    const char *arg;     /* value placeholder in --help */
    const char *help;
} flag_def;

/* ---- custom values ------------------------------------------------------ */

static int set_model(tr_flags *f, const char *v, char *err, size_t errlen)
{
    if (tr_model_parse(v, &f->model, err, errlen) != 0)
        return -1;
    snprintf(f->model_text, sizeof f->model_text, "%s", v);
    return 0;
}

static int set_optimizer(tr_flags *f, const char *v, char *err, size_t errlen)
{
    rf_optim_config cfg;
    if (rf_optim_parse(v, &cfg) != RF_OK) {
        snprintf(err, errlen, "%s", rf_error_message());
        return -1;
    }
    f->optimizer = v;
    f->optimizer_given = true;
    return 0;
}

static int set_ctr_spec(tr_flags *f, const char *v, char *err, size_t errlen)
{
    if (rf_ctr_spec_parse(v, &f->ctr_spec) != RF_OK) {
        snprintf(err, errlen, "%s", rf_error_message());
        return -1;
    }
    return 0;
}

/* "W1,W2,..." as mlp's widths */
static int set_hidden(tr_flags *f, const char *v, char *err, size_t errlen)
{
    char text[512];
    if (snprintf(text, sizeof text, "mlp:%s", v) >= (int)sizeof text) {
        snprintf(err, errlen, "too long");
        return -1;
    }
    if (tr_model_parse(text, &f->hidden, err, errlen) != 0)
        return -1;
    return 0;
}

/* Any uint64: the graph seed and the shuffling seed. */
static int set_seed(tr_flags *f, const char *v, char *err, size_t errlen)
{
    char *end = NULL;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (*v < '0' || *v > '9' || *end != '\0') {
        snprintf(err, errlen, "'%s' is not a non-negative integer", RF_ECHO(v));
        return -1;
    }
    if (errno == ERANGE) {
        snprintf(err, errlen, "%s is out of range [0, %" PRIu64 "]", RF_ECHO(v),
                 UINT64_MAX);
        return -1;
    }
    f->seed = (uint64_t)x;
    return 0;
}

static int one_of(const char *v, const char *const *choices, char *err,
                  size_t errlen)
{
    for (int i = 0; choices[i]; i++)
        if (!strcmp(v, choices[i]))
            return 0;
    int off = snprintf(err, errlen, "'%s' is not one of", RF_ECHO(v));
    for (int i = 0; choices[i] && off >= 0 && (size_t)off < errlen; i++)
        off += snprintf(err + off, errlen - (size_t)off, "%s %s", i ? "," : "",
                        choices[i]);
    return -1;
}

/* The cluster flags are kept as given: rf_cluster_resolve checks them
 * together with TF_CONFIG and names the flag in its errors. */
static int set_ps_hosts(tr_flags *f, const char *v, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    f->ps_hosts = v;
    return 0;
}

static int set_worker_hosts(tr_flags *f, const char *v, char *err,
                            size_t errlen)
{
    (void)err, (void)errlen;
    f->worker_hosts = v;
    return 0;
}

static int set_job_name(tr_flags *f, const char *v, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    f->job_name = v;
    return 0;
}

static int set_task_index(tr_flags *f, const char *v, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    f->task_index = v;
    return 0;
}

static int set_num_ps(tr_flags *f, const char *v, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    f->num_ps = v;
    return 0;
}

static int set_port_base(tr_flags *f, const char *v, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    f->port_base = v;
    return 0;
}

static int set_apply(tr_flags *f, const char *v, char *err, size_t errlen)
{
    static const char *const modes[] = {"ps", "worker", NULL};
    if (one_of(v, modes, err, errlen) != 0)
        return -1;
    f->apply = v;
    f->apply_mode = strcmp(v, "ps") ? RF_PS_APPLY_WORKER : RF_PS_APPLY_PS;
    return 0;
}

static int set_ps_strategy(tr_flags *f, const char *v, char *err, size_t errlen)
{
    static const char *const kinds[] = {"round_robin", "greedy", NULL};
    if (one_of(v, kinds, err, errlen) != 0)
        return -1;
    f->ps_strategy = v;
    f->ps_strategy_kind =
        strcmp(v, "greedy") ? RF_PS_ROUND_ROBIN : RF_PS_GREEDY;
    return 0;
}

/* --explain (text), --explain=text|json|true|false, --noexplain. */
static int set_explain(tr_flags *f, const char *v, char *err, size_t errlen)
{
    static const char *const kinds[] = {"text", "json", "true", "false", NULL};
    if (one_of(v, kinds, err, errlen) != 0)
        return -1;
    f->explain = !strcmp(v, "json")    ? TR_EXPLAIN_JSON
                 : !strcmp(v, "false") ? TR_EXPLAIN_NONE
                                       : TR_EXPLAIN_TEXT;
    return 0;
}

/* ---- the table ---------------------------------------------------------- */

#define FIELD(x) offsetof(tr_flags, x)

static const flag_def flag_table[] = {
    {.name = "model",
     .kind = FK_CUSTOM,
     .fn = set_model,
     .arg = "MODEL",
     .help = "softmax | mlp[:W1,W2,...] | cnn[:C1,C2,D] | wide_deep "
             "(default mlp:256,128; cnn means cnn:16,32,128; wide_deep "
             "trains on the synthetic click-through data)"},
    {.name = "ctr_spec",
     .kind = FK_CUSTOM,
     .fn = set_ctr_spec,
     .ctr = true,
     .arg = "SPEC",
     .help = "wide_deep: the click-through data set, NAME=VALUE;... over "
             "the default (rf-ctr-data(1); default: 8 categorical features, "
             "vocabularies to 1e9, 4 dense)"},
    {.name = "hash_buckets",
     .kind = FK_INT,
     .offset = FIELD(hash_buckets),
     .min = 1,
     .max = 1e8,
     .ctr = true,
     .arg = "N",
     .help = "wide_deep: a feature whose vocabulary is larger is hashed "
             "into N buckets, else its ids are used as they are (default "
             "100000)"},
    {.name = "embedding_dim",
     .kind = FK_INT,
     .offset = FIELD(embedding_dim),
     .min = 1,
     .max = 1024,
     .ctr = true,
     .arg = "N",
     .help = "wide_deep: the deep part's embedding width (default 8)"},
    {.name = "hidden",
     .kind = FK_CUSTOM,
     .fn = set_hidden,
     .ctr = true,
     .arg = "W1,W2,...",
     .help = "wide_deep: the deep part's relu layers (default 64,32)"},
    {.name = "eval_examples",
     .kind = FK_INT,
     .offset = FIELD(eval_examples),
     .min = 2,
     .max = 1e8,
     .ctr = true,
     .arg = "N",
     .help = "wide_deep: test examples for AUC and log loss, the first N "
             "of the test split (default 100000, at most the split)"},
    {.name = "embedding_partitions",
     .kind = FK_INT,
     .offset = FIELD(embedding_partitions),
     .min = 1,
     .max = 64,
     .ctr = true,
     .arg = "P",
     .help = "wide_deep: each embedding table in P parts (fixed_size_"
             "partitioner, ids to parts by \"mod\"; default 1, distributed the "
             "ps count)"},
    {.name = "optimizer",
     .kind = FK_CUSTOM,
     .fn = set_optimizer,
     .arg = "NAME",
     .help = "sgd | momentum | adagrad | adam | rmsprop | ftrl (default "
             "adam; wide_deep: ftrl 1.0 for the wide part and adagrad 0.1 "
             "for the deep part, or the one given for both)"},
    {.name = "learning_rate",
     .kind = FK_FLOAT,
     .offset = FIELD(learning_rate),
     .min = 0,
     .min_open = true,
     .f32 = true,
     .max = 1e6,
     .arg = "LR",
     .help = "learning rate > 0 (default per optimizer: sgd 0.1, momentum "
             "0.01, adagrad 0.1, adam 0.001, rmsprop 0.001, ftrl 0.1)"},
    {.name = "momentum",
     .kind = FK_FLOAT,
     .offset = FIELD(momentum),
     .min = 0,
     .f32 = true,
     .max = 1,
     .arg = "M",
     .help = "momentum in [0, 1] for momentum (default 0.9) and rmsprop "
             "(default 0)"},
    {.name = "initial_accumulator_value",
     .kind = FK_FLOAT,
     .offset = FIELD(initial_accumulator_value),
     .min = 0,
     .min_open = true,
     .f32 = true,
     .max = 1e6,
     .arg = "A",
     .help = "initial accumulator > 0 for adagrad and ftrl (default 0.1)"},
    {.name = "learning_rate_power",
     .kind = FK_FLOAT,
     .offset = FIELD(learning_rate_power),
     .min = -1e6,
     .f32 = true,
     .max = 0,
     .arg = "P",
     .help = "ftrl's learning rate power <= 0 (default -0.5; 0 is a fixed "
             "learning rate)"},
    {.name = "l1_regularization_strength",
     .kind = FK_FLOAT,
     .offset = FIELD(l1_regularization_strength),
     .min = 0,
     .f32 = true,
     .max = 1e6,
     .arg = "L1",
     .help = "ftrl's L1 regularization strength >= 0 (default 0)"},
    {.name = "l2_regularization_strength",
     .kind = FK_FLOAT,
     .offset = FIELD(l2_regularization_strength),
     .min = 0,
     .f32 = true,
     .max = 1e6,
     .arg = "L2",
     .help = "ftrl's L2 regularization strength >= 0 (default 0)"},
    {.name = "l2_shrinkage_regularization_strength",
     .kind = FK_FLOAT,
     .offset = FIELD(l2_shrinkage_regularization_strength),
     .min = 0,
     .f32 = true,
     .max = 1e6,
     .arg = "S",
     .help = "ftrl's L2 shrinkage strength >= 0 (default 0; > 0 uses "
             "ApplyFtrlV2)"},
    {.name = "batch_size",
     .kind = FK_INT,
     .offset = FIELD(batch_size),
     .min = 1,
     .max = 65536,
     .arg = "N",
     .help = "training examples per step (default 250; cnn 100)"},
    {.name = "train_steps",
     .kind = FK_INT,
     .offset = FIELD(train_steps),
     .min = 0,
     .max = 1e9,
     .arg = "N",
     .help = "train until global_step reaches N (StopAtStepHook last_step; "
             "default 4800, i.e. 20 epochs; cnn 4200, 7 epochs)"},
    {.name = "seed",
     .kind = FK_CUSTOM,
     .fn = set_seed,
     .arg = "S",
     .help = "graph seed (initial weights) and shuffling seed (default 1)"},
    {.name = "threads",
     .kind = FK_INT,
     .offset = FIELD(threads),
     .min = 0,
     .max = 256,
     .arg = "N",
     .help = "executor compute threads, 0 = online CPUs (default 0)"},
    {.name = "data_dir",
     .kind = FK_STRING,
     .offset = FIELD(data_dir),
     .image = true,
     .arg = "DIR",
     .help = "Fashion-MNIST IDX files (default $RF_FASHION_MNIST_DIR "
             "or " RF_FASHION_MNIST_DIR ")"},
    {.name = "trace",
     .kind = FK_STRING,
     .offset = FIELD(trace_path),
     .arg = "FILE",
     .help = "write a Chrome trace (JSON, Perfetto) of the executor"},
    {.name = "trace_steps",
     .kind = FK_INT,
     .offset = FIELD(trace_steps),
     .min = 1,
     .max = 1e9,
     .arg = "N",
     .help = "with --trace, trace the first N training steps (default 100)"},
    {.name = "log_every",
     .kind = FK_INT,
     .offset = FIELD(log_every),
     .min = 0,
     .max = 1e9,
     .arg = "N",
     .help = "progress line every N steps, 0 = none (default 500)"},
    {.name = "eval_batch_size",
     .kind = FK_INT,
     .offset = FIELD(eval_batch_size),
     .min = 1,
     .max = 10000,
     .arg = "N",
     .help = "test examples per evaluation step (default 1000)"},
    {.name = "variables_out",
     .kind = FK_STRING,
     .offset = FIELD(variables_out),
     .arg = "FILE",
     .help = "write the final variables (values, optimizer slots, "
             "global_step) as safetensors; distributed: the chief, after "
             "every worker is done"},
    /* metrics files (README "Metrics files") */
    {.name = "metrics_out",
     .kind = FK_STRING,
     .offset = FIELD(metrics_out),
     .arg = "FILE",
     .help = "write this task's metrics as JSON lines: a line every "
             "--metrics_every_steps steps (loss, accuracy, examples/s, "
             "global_step/sec, bytes) and a summary at the end"},
    {.name = "metrics_every_steps",
     .kind = FK_INT,
     .offset = FIELD(metrics_every_steps),
     .min = 1,
     .max = 1e9,
     .arg = "N",
     .help = "with --metrics_out, a line every N steps of this task "
             "(default 100)"},
    /* distributed training (TensorFlow's classic trainer flags; TF_CONFIG
     * is read too, the flags override it field by field) */
    {.name = "ps_hosts",
     .kind = FK_CUSTOM,
     .fn = set_ps_hosts,
     .distributed = true,
     .arg = "H:P,...",
     .help = "parameter-server tasks, in task order"},
    {.name = "cluster_secret_file",
     .kind = FK_STRING,
     .offset = FIELD(cluster_secret_file),
     .distributed = true,
     .arg = "FILE",
     .help = "the cluster's shared secret (a file of 32 to 4096 bytes "
             "readable by its owner only): every connection to a ps task "
             "authenticates with it; overrides RF_CLUSTER_SECRET_FILE"},
    {.name = "require_secret",
     .kind = FK_BOOL,
     .offset = FIELD(require_secret),
     .distributed = true,
     .help = "refuse to start without a cluster secret (as "
             "RF_REQUIRE_SECRET=1); without this, a task with none warns "
             "once that its cluster is unauthenticated"},
    {.name = "worker_hosts",
     .kind = FK_CUSTOM,
     .fn = set_worker_hosts,
     .distributed = true,
     .arg = "H:P,...",
     .help = "worker tasks, in task order (worker 0 is the chief)"},
    {.name = "job_name",
     .kind = FK_CUSTOM,
     .fn = set_job_name,
     .distributed = true,
     .arg = "ps|worker",
     .help = "this task's job"},
    {.name = "task_index",
     .kind = FK_CUSTOM,
     .fn = set_task_index,
     .distributed = true,
     .arg = "I",
     .help = "this task's index in its job"},
    /* launchers: the cluster and the task from Slurm's or MPI's rank
     * (SlurmClusterResolver; rf_cluster_resolve_env checks them) */
    {.name = "num_ps",
     .kind = FK_CUSTOM,
     .fn = set_num_ps,
     .distributed = true,
     .arg = "N",
     .help = "under srun or mpirun: ranks 0..N-1 are the ps tasks, the "
             "others the workers (SLURM_PROCID, OMPI_COMM_WORLD_RANK or "
             "PMIX_RANK; hosts from Slurm's node list or RF_MPI_HOSTS, else "
             "127.0.0.1)"},
    {.name = "port_base",
     .kind = FK_CUSTOM,
     .fn = set_port_base,
     .distributed = true,
     .arg = "P",
     .help = "with --num_ps, the k-th task on a host listens on port P + k "
             "(default 8888)"},
    {.name = "bind_addr",
     .kind = FK_STRING,
     .offset = FIELD(bind_addr),
     .distributed = true,
     .arg = "ADDR",
     .help = "a ps task listens on this local address (0.0.0.0: every "
             "address) instead of its cluster address, which still picks "
             "the RDMA device and NUMA node; overrides RF_BIND_ADDR"},
    {.name = "apply",
     .kind = FK_CUSTOM,
     .fn = set_apply,
     .distributed = true,
     .arg = "ps|worker",
     .help = "where the optimizer runs: ps = the ps task applies the pushed "
             "gradient (default), worker = read, apply here, write back"},
    {.name = "use_locking",
     .kind = FK_BOOL,
     .offset = FIELD(use_locking),
     .distributed = true,
     .help = "with --apply=worker, hold each shard's lock word "
             "(compare-and-swap) during its update"},
    {.name = "ps_strategy",
     .kind = FK_CUSTOM,
     .fn = set_ps_strategy,
     .distributed = true,
     .arg = "round_robin|greedy",
     .help = "how replica_device_setter picks each variable's ps task: "
             "round_robin, or greedy = the least loaded by bytes so far "
             "(GreedyLoadBalancingStrategy, byte_size_load_fn) "
             "(default " TR_DEFAULT_PS_STRATEGY ")"},
    {.name = "partition_min_slice_bytes",
     .kind = FK_INT,
     .offset = FIELD(partition_min_slice_bytes),
     .min = 0,
     .max = 1e15,
     .distributed = true,
     .arg = "N",
     .help = "partition each variable along its first axis into at most one "
             "part per ps task, each at least N bytes "
             "(min_max_variable_partitioner); 0 = no partitioning "
             "(default " TR_DEFAULT_PARTITION_STR ")"},
    /* MonitoredTrainingSession's */
    {.name = "checkpoint_dir",
     .kind = FK_STRING,
     .offset = FIELD(checkpoint_dir),
     .distributed = true,
     .arg = "DIR",
     .help = "the chief restores the newest checkpoint of DIR that verifies "
             "and saves model.ckpt-<step>.safetensors there (created if "
             "missing); an evaluator task evaluates each new one (test "
             "accuracy; wide_deep: AUC and log loss)"},
    {.name = "save_checkpoint_steps",
     .kind = FK_INT,
     .offset = FIELD(save_checkpoint_steps),
     .min = 0,
     .max = 1e9,
     .distributed = true,
     .arg = "N",
     .help = "with --checkpoint_dir, save every N global steps (then "
             "--save_checkpoint_secs is not used)"},
    {.name = "save_checkpoint_secs",
     .kind = FK_FLOAT,
     .offset = FIELD(save_checkpoint_secs),
     .min = 0,
     .max = 1e9,
     .distributed = true,
     .arg = "S",
     .help = "with --checkpoint_dir, save every S seconds, at the start and "
             "at the end (default 600; 0 without --save_checkpoint_steps: "
             "never save, only restore)"},
    {.name = "max_to_keep",
     .kind = FK_INT,
     .offset = FIELD(max_to_keep),
     .min = 1,
     .max = 1e6,
     .distributed = true,
     .arg = "N",
     .help = "checkpoints kept, older ones deleted (default 5)"},
    {.name = "log_step_count_steps",
     .kind = FK_INT,
     .offset = FIELD(log_step_count_steps),
     .min = 0,
     .max = 1e9,
     .distributed = true,
     .arg = "N",
     .help = "the chief prints global_step/sec and examples/sec every N "
             "global steps, 0 = never (default 100)"},
    {.name = "max_wait_secs",
     .kind = FK_INT,
     .offset = FIELD(max_wait_secs),
     .min = 1,
     .max = 1e7,
     .distributed = true,
     .arg = "S",
     .help = "how long a task waits for the cluster to be ready (ps tasks "
             "up, variables initialised), at the start and after a failure "
             "(default 7200)"},
    {.name = "stop_grace_secs",
     .kind = FK_INT,
     .offset = FIELD(stop_grace_secs),
     .min = 0,
     .max = 1e7,
     .distributed = true,
     .arg = "S",
     .help = "how long the chief waits at the end for the other workers "
             "to finish before it names the missing ones, saves, shuts the "
             "ps tasks down and exits 1 (default 120)"},
    {.name = "sync_replicas",
     .kind = FK_BOOL,
     .offset = FIELD(sync_replicas),
     .distributed = true,
     .help = "synchronous training (SyncReplicasOptimizer): each step the "
             "ps applies the mean of --replicas_to_aggregate workers' "
             "gradients once, stale gradients are dropped, workers wait for "
             "the step (needs --apply=ps)"},
    {.name = "replicas_to_aggregate",
     .kind = FK_INT,
     .offset = FIELD(replicas_to_aggregate),
     .min = 0,
     .max = RF_PS_MAX_SYNC_REPLICAS,
     .distributed = true,
     .arg = "N",
     .help = "with --sync_replicas, gradients averaged per step, 1 to "
             "--total_num_replicas (default 0: every worker)"},
    {.name = "total_num_replicas",
     .kind = FK_INT,
     .offset = FIELD(total_num_replicas),
     .min = 0,
     .max = RF_PS_MAX_SYNC_REPLICAS,
     .distributed = true,
     .arg = "M",
     .help = "with --sync_replicas, the workers pushing: the cluster's "
             "training workers (default 0: them); M - N are backup workers"},
    {.name = "staleness",
     .kind = FK_INT,
     .offset = FIELD(staleness),
     .min = 0,
     .max = 1000000000,
     .distributed = true,
     .arg = "K",
     .help = "stale synchronous parallel (async training only, not with "
             "--sync_replicas): a worker more than K steps ahead of the "
             "slowest training worker waits before its next step (clock "
             "words on ps task 0, one-sided READs and FETCH_AND_ADD; 0: "
             "no worker starts step c+1 before every worker finished step "
             "c); default off"},
    {.name = "explain",
     .kind = FK_CUSTOM,
     .fn = set_explain,
     .optional_value = true,
     .arg = "[text|json]",
     .help = "before training, print the cluster, each variable's shard "
             "placement, the fabric and NUMA binding, and the operations "
             "of one step (json: one JSON document, on stdout alone: the "
             "trainer's other lines then go to stderr; or to "
             "--explain_out)"},
    {.name = "explain_only",
     .kind = FK_BOOL,
     .offset = FIELD(explain_only),
     .help = "print the explanation of every task of the cluster (what "
             "each ps, worker and the chief does) from the flags alone, "
             "connecting to nothing, and exit (implies --explain; local "
             "mode: this process's)"},
    {.name = "explain_out",
     .kind = FK_STRING,
     .offset = FIELD(explain_out),
     .arg = "FILE",
     .help = "write the --explain output to FILE instead of stdout ('-': "
             "stdout)"},
};

#define NFLAGS (sizeof flag_table / sizeof flag_table[0])

static const flag_def *find_flag(const char *name, size_t len)
{
    for (size_t i = 0; i < NFLAGS; i++)
        if (strlen(flag_table[i].name) == len &&
            !strncmp(flag_table[i].name, name, len))
            return &flag_table[i];
    return NULL;
}

/* ---- values ------------------------------------------------------------- */

static rf_status parse_int(const char *v, int64_t min, int64_t max,
                           int64_t *out, char *err, size_t errlen)
{
    char *end = NULL;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (!*v || end == v || *end != '\0' ||
        (*v != '-' && *v != '+' && (*v < '0' || *v > '9'))) {
        snprintf(err, errlen, "'%s' is not an integer", RF_ECHO(v));
        return RF_ERR_INVALID_ARG;
    }
    if (errno == ERANGE || x < min || x > max) {
        snprintf(err, errlen, "%s is out of range [%" PRId64 ", %" PRId64 "]",
                 RF_ECHO(v), min, max);
        return RF_ERR_INVALID_ARG;
    }
    *out = x;
    return RF_OK;
}

static int set_float(const flag_def *d, double *out, const char *v, char *err,
                     size_t errlen)
{
    char *end = NULL;
    errno = 0;
    double x = strtod(v, &end);
    if (!*v || end == v || *end != '\0' ||
        (*v != '-' && *v != '+' && *v != '.' && (*v < '0' || *v > '9'))) {
        snprintf(err, errlen, "'%s' is not a number", RF_ECHO(v));
        return -1;
    }
    bool below = d->min_open ? !(x > d->min) : !(x >= d->min);
    if (errno == ERANGE || !isfinite(x) || below || x > d->max) {
        snprintf(err, errlen, "%s is out of range %c%g, %g]", RF_ECHO(v),
                 d->min_open ? '(' : '[', d->min, d->max);
        return -1;
    }
    /* a float32 hyper-parameter: a value that becomes 0 or infinity (or
     * loses all but a few bits as a subnormal) would train with something
     * else than what was asked */
    if (d->f32 && x != 0 &&
        (!isfinite((float)x) || fabsf((float)x) < FLT_MIN)) {
        snprintf(err, errlen,
                 "%s is out of range: it %s in float32 (the smallest normal "
                 "float32 is %g, the largest %g)",
                 RF_ECHO(v),
                 (float)x == 0     ? "rounds to 0"
                 : isinf((float)x) ? "rounds to infinity"
                                   : "is subnormal",
                 (double)FLT_MIN, (double)FLT_MAX);
        return -1;
    }
    *out = x;
    return 0;
}

static int set_bool(bool *out, const char *v, char *err, size_t errlen)
{
    if (!strcmp(v, "true") || !strcmp(v, "1")) {
        *out = true;
        return 0;
    }
    if (!strcmp(v, "false") || !strcmp(v, "0")) {
        *out = false;
        return 0;
    }
    snprintf(err, errlen, "'%s' is not a boolean (true, false, 1, 0)",
             RF_ECHO(v));
    return -1;
}

static int set_value(const flag_def *d, tr_flags *f, const char *v, char *err,
                     size_t errlen)
{
    char *field = (char *)f + d->offset;
    switch (d->kind) {
    case FK_INT: {
        int64_t x;
        if (parse_int(v, (int64_t)d->min, (int64_t)d->max, &x, err, errlen) !=
            RF_OK)
            return -1;
        *(int64_t *)(void *)field = x;
        return 0;
    }
    case FK_FLOAT:
        return set_float(d, (double *)(void *)field, v, err, errlen);
    case FK_STRING:
        if (!*v) {
            snprintf(err, errlen, "empty value");
            return -1;
        }
        *(const char **)(void *)field = v;
        return 0;
    case FK_BOOL:
        return set_bool((bool *)(void *)field, v, err, errlen);
    case FK_CUSTOM:
        return d->fn(f, v, err, errlen);
    }
    return -1;
}

/* ---- defaults and resolution -------------------------------------------- */

static void set_defaults(tr_flags *f)
{
    memset(f, 0, sizeof *f);
    char ignored[8];
    tr_model_parse("mlp:256,128", &f->model, ignored, sizeof ignored);
    snprintf(f->model_text, sizeof f->model_text, "mlp:256,128");
    f->optimizer = "adam";
    f->learning_rate = NAN;
    f->momentum = NAN;
    f->initial_accumulator_value = NAN;
    f->learning_rate_power = NAN;
    f->l1_regularization_strength = NAN;
    f->l2_regularization_strength = NAN;
    f->l2_shrinkage_regularization_strength = NAN;
    f->batch_size = -1; /* per model, see resolve_model_defaults */
    f->train_steps = -1;
    f->seed = 1;
    f->threads = 0;
    f->trace_steps = 100;
    f->log_every = 500;
    f->metrics_every_steps = 100;
    f->eval_batch_size = 1000;
    f->apply = "ps";
    f->apply_mode = RF_PS_APPLY_PS;
    set_ps_strategy(f, TR_DEFAULT_PS_STRATEGY, NULL, 0);
    f->partition_min_slice_bytes = TR_DEFAULT_PARTITION_BYTES;
    f->save_checkpoint_secs = 600;
    f->max_to_keep = 5;
    f->log_step_count_steps = 100;
    f->max_wait_secs = 7200;
    f->stop_grace_secs = 120;
    f->staleness = -1; /* off */
    rf_ctr_spec_default(&f->ctr_spec);
    f->hash_buckets = 100000;
    f->embedding_dim = 8;
    tr_model_parse("mlp:64,32", &f->hidden, ignored, sizeof ignored);
    f->eval_examples = 100000;
    f->embedding_partitions = 0; /* local 1, distributed the ps count */
}

/* The defaults are the README's commands: the MLP reaches >= 0.88 test
 * accuracy and the CNN >= 0.90 with them (tools/trainer/README.md). */
static void resolve_model_defaults(tr_flags *f)
{
    if (f->model.kind == TR_MODEL_WIDE_DEEP) {
        if (f->batch_size < 0)
            f->batch_size = TR_WD_DEFAULT_BATCH;
        if (f->train_steps < 0)
            f->train_steps = TR_WD_DEFAULT_STEPS;
        return;
    }
    bool cnn = f->model.kind == TR_MODEL_CNN;
    if (f->batch_size < 0)
        f->batch_size = cnn ? 100 : 250;
    if (f->train_steps < 0)
        f->train_steps = cnn ? 4200 : 4800;
}

static float default_learning_rate(rf_optimizer_kind kind)
{
    switch (kind) {
    case RF_OPTIM_SGD:
        return 0.1f;
    case RF_OPTIM_MOMENTUM:
        return 0.01f;
    case RF_OPTIM_ADAGRAD:
        return 0.1f;
    case RF_OPTIM_ADAM:
        return 0.001f;
    case RF_OPTIM_RMSPROP:
        return 0.001f;
    case RF_OPTIM_FTRL:
        return 0.1f;
    }
    return 0.01f;
}

/* --model=wide_deep: the flags of the other kind of model refused, the
 * evaluation size against the spec, and the two optimizers: by default
 * FTRL for the wide part and Adagrad for the deep part, as
 * DNNLinearCombinedClassifier (rates in flags.h); with --optimizer that
 * one (and --learning_rate) for both. */
static int resolve_wide_deep(tr_flags *f, char *err, size_t errlen)
{
    if (f->model.kind != TR_MODEL_WIDE_DEEP) {
        if (f->ctr_flag) {
            snprintf(err, errlen, "--%s: only with --model=wide_deep",
                     f->ctr_flag);
            return -1;
        }
        return 0;
    }
    if (f->image_flag) {
        snprintf(err, errlen,
                 "--%s: not used by --model=wide_deep (it trains on the "
                 "synthetic click-through data of --ctr_spec)",
                 f->image_flag);
        return -1;
    }
    if (f->ctr_spec.num_cat == 0) {
        snprintf(err, errlen,
                 "--ctr_spec: wide_deep needs at least one categorical "
                 "feature");
        return -1;
    }
    if ((uint64_t)f->eval_examples > f->ctr_spec.test_size) {
        snprintf(err, errlen,
                 "--eval_examples: %" PRId64 " is more than the test split's "
                 "%" PRIu64 " examples (--ctr_spec test=N)",
                 f->eval_examples, f->ctr_spec.test_size);
        return -1;
    }
    if (f->optimizer_given)
        return 0;
    if (!isnan(f->learning_rate)) {
        snprintf(err, errlen,
                 "--learning_rate: with --model=wide_deep give --optimizer "
                 "too (the default is FTRL for the wide part and Adagrad "
                 "for the deep part, as DNNLinearCombinedClassifier)");
        return -1;
    }
    f->optimizer = "ftrl";
    f->learning_rate = TR_WD_WIDE_LR;
    return 0;
}

static int resolve_optimizer(tr_flags *f, char *err, size_t errlen)
{
    rf_optim_config *c = &f->optim;
    if (rf_optim_parse(f->optimizer, c) != RF_OK) {
        snprintf(err, errlen, "--optimizer: %s", rf_error_message());
        return -1;
    }
    c->learning_rate = isnan(f->learning_rate) ? default_learning_rate(c->kind)
                                               : (float)f->learning_rate;
    if (!isnan(f->momentum)) {
        if (c->kind != RF_OPTIM_MOMENTUM && c->kind != RF_OPTIM_RMSPROP) {
            snprintf(err, errlen,
                     "--momentum: not used by --optimizer=%s (only momentum "
                     "and rmsprop)",
                     f->optimizer);
            return -1;
        }
        c->momentum = (float)f->momentum;
    } else if (c->kind == RF_OPTIM_MOMENTUM) {
        c->momentum = 0.9f;
    }
    /* FtrlOptimizer's arguments (initial_accumulator_value: Adagrad's too) */
    const struct {
        const char *name;
        double value;
        float *field;
        bool adagrad;
    } ftrl[] = {
        {"initial_accumulator_value", f->initial_accumulator_value,
         &c->initial_accumulator_value, true},
        {"learning_rate_power", f->learning_rate_power, &c->learning_rate_power,
         false},
        {"l1_regularization_strength", f->l1_regularization_strength,
         &c->l1_regularization_strength, false},
        {"l2_regularization_strength", f->l2_regularization_strength,
         &c->l2_regularization_strength, false},
        {"l2_shrinkage_regularization_strength",
         f->l2_shrinkage_regularization_strength,
         &c->l2_shrinkage_regularization_strength, false},
    };
    for (size_t i = 0; i < sizeof ftrl / sizeof ftrl[0]; i++) {
        if (isnan(ftrl[i].value))
            continue;
        if (c->kind != RF_OPTIM_FTRL &&
            !(ftrl[i].adagrad && c->kind == RF_OPTIM_ADAGRAD)) {
            snprintf(err, errlen, "--%s: not used by --optimizer=%s (only %s)",
                     ftrl[i].name, f->optimizer,
                     ftrl[i].adagrad ? "adagrad and ftrl" : "ftrl");
            return -1;
        }
        *ftrl[i].field = (float)ftrl[i].value;
    }
    if (rf_optim_validate(c) != RF_OK) {
        snprintf(err, errlen, "--optimizer=%s: %s", f->optimizer,
                 rf_error_message());
        return -1;
    }
    f->optim_deep = *c;
    if (f->model.kind == TR_MODEL_WIDE_DEEP && !f->optimizer_given) {
        rf_optim_parse("adagrad", &f->optim_deep);
        f->optim_deep.learning_rate = (float)TR_WD_DEEP_LR;
        if (rf_optim_validate(&f->optim_deep) != RF_OK) {
            snprintf(err, errlen, "the deep part's adagrad: %s",
                     rf_error_message());
            return -1;
        }
    }
    return 0;
}

/* The sync flags together (the cluster's part: tr_flags_check_cluster). */
static int check_sync(const tr_flags *f, char *err, size_t errlen)
{
    if (f->sync_replicas && f->staleness >= 0) {
        snprintf(err, errlen,
                 "--staleness: stale synchronous parallel bounds async "
                 "training; not with --sync_replicas, which keeps the "
                 "workers in step already");
        return -1;
    }
    if (!f->sync_replicas) {
        const char *given = f->replicas_to_aggregate ? "replicas_to_aggregate"
                            : f->total_num_replicas  ? "total_num_replicas"
                                                     : NULL;
        if (given) {
            snprintf(err, errlen, "--%s: only with --sync_replicas", given);
            return -1;
        }
        return 0;
    }
    if (f->apply_mode != RF_PS_APPLY_PS) {
        snprintf(err, errlen,
                 "--sync_replicas: the averaged gradient is applied on the "
                 "ps; not with --apply=%s",
                 f->apply);
        return -1;
    }
    if (f->replicas_to_aggregate && f->total_num_replicas &&
        f->replicas_to_aggregate > f->total_num_replicas) {
        snprintf(err, errlen,
                 "--replicas_to_aggregate: %" PRId64 " exceeds "
                 "--total_num_replicas=%" PRId64,
                 f->replicas_to_aggregate, f->total_num_replicas);
        return -1;
    }
    return 0;
}

/* ---- parsing ------------------------------------------------------------ */

int tr_flags_parse(int argc, char **argv, tr_flags *f, char *err, size_t errlen)
{
    set_defaults(f);
    char msg[384];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help") || !strcmp(a, "-help")) {
            f->help = true;
            continue;
        }
        if (!strcmp(a, "--version")) {
            f->version = true;
            continue;
        }
        if (strncmp(a, "--", 2) != 0 || a[2] == '\0' || a[2] == '=') {
            snprintf(err, errlen,
                     "unexpected argument '%s' (flags are --name=value or "
                     "--name value; see --help)",
                     RF_ECHO(a));
            return -1;
        }
        const char *body = a + 2;
        const char *eq = strchr(body, '=');
        size_t nlen = eq ? (size_t)(eq - body) : strlen(body);
        const flag_def *d = find_flag(body, nlen);
        const char *value = eq ? eq + 1 : NULL;
        if (!d && !eq && nlen > 2 && !strncmp(body, "no", 2)) {
            d = find_flag(body + 2, nlen - 2);
            if (d && d->kind != FK_BOOL && !d->optional_value) {
                snprintf(err, errlen, "--%s: --no%s is only for boolean flags",
                         d->name, d->name);
                return -1;
            }
            value = "false";
        }
        if (!d) {
            snprintf(err, errlen, "--%.*s%s: unknown flag (see --help)",
                     nlen > RF_ECHO_MAX ? RF_ECHO_MAX : (int)nlen, body,
                     nlen > RF_ECHO_MAX ? "..." : "");
            return -1;
        }
        if (!value && (d->kind == FK_BOOL || d->optional_value))
            value = "true";
        if (!value) {
            if (i + 1 >= argc || !strncmp(argv[i + 1], "--", 2)) {
                snprintf(err, errlen, "--%s: missing value", d->name);
                return -1;
            }
            value = argv[++i];
        }
        if (set_value(d, f, value, msg, sizeof msg) != 0) {
            snprintf(err, errlen, "--%s: %s", d->name, msg);
            return -1;
        }
        if (d->distributed && !f->distributed_flag)
            f->distributed_flag = d->name;
        if (d->ctr && !f->ctr_flag)
            f->ctr_flag = d->name;
        if (d->image && !f->image_flag)
            f->image_flag = d->name;
    }
    if (f->help)
        return 0;
    resolve_model_defaults(f);
    if (check_sync(f, err, errlen) != 0 ||
        resolve_wide_deep(f, err, errlen) != 0)
        return -1;
    return resolve_optimizer(f, err, errlen);
}

int tr_flags_check_cluster(const tr_flags *f, int num_workers, char *err,
                           size_t errlen)
{
    if (!f->sync_replicas)
        return 0;
    int64_t n = f->replicas_to_aggregate, m = f->total_num_replicas;
    if (m && m != num_workers) {
        snprintf(err, errlen,
                 "--total_num_replicas: %" PRId64 ", but the cluster has %d "
                 "training worker%s, which all push gradients (give %d, or "
                 "leave it out)",
                 m, num_workers, num_workers == 1 ? "" : "s", num_workers);
        return -1;
    }
    if (n > num_workers) {
        snprintf(err, errlen,
                 "--replicas_to_aggregate: %" PRId64 " is more than the "
                 "cluster's %d training worker%s",
                 n, num_workers, num_workers == 1 ? "" : "s");
        return -1;
    }
    return 0;
}

void tr_flags_usage(FILE *out, const char *prog)
{
    fprintf(out,
            "usage: %s [--flag=value | --flag value]...\n"
            "Trains a model on Fashion-MNIST and reports test accuracy (or, "
            "with\n--model=wide_deep, a click-through model on synthetic data "
            "and its test AUC): in\nthis process, or as one task of a "
            "ps/worker cluster "
            "(--ps_hosts, --worker_hosts, --job_name,\n--task_index, or "
            "TF_CONFIG, or --num_ps under srun or mpirun; run the same\n"
            "command once per task).\n\nflags:\n",
            prog);
    for (size_t i = 0; i < NFLAGS; i++) {
        const flag_def *d = &flag_table[i];
        char lhs[64];
        if (d->arg)
            snprintf(lhs, sizeof lhs, "--%s=%s", d->name, d->arg);
        else
            snprintf(lhs, sizeof lhs, "--[no]%s", d->name);
        fprintf(out, "  %-28s %s\n", lhs, d->help);
    }
    fprintf(out, "  %-28s %s\n", "--help", "this message");
    fprintf(out, "  %-28s %s\n", "--version", "print the version and exit");
    fprintf(out, "\nexit status: 0 success, 1 runtime error, 2 usage error\n");
}
