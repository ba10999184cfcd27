/* tools/trainer/flags.c: rf-trainer's flags (see flags.h): one row per
 * flag in a flag table (rdmaflow/flags.h) read TensorFlow style
 * (tf_style), with its default, its range and its help; then the checks
 * that take several flags together (the model's defaults, the optimizer,
 * the sync flags). Every error names the flag ("--batch_size: 0 is out of
 * range [1, 65536]"). */
#include "flags.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/data.h"
#include "rdmaflow/env.h"
#include "rdmaflow/flags.h"
#include "rdmaflow/session.h"
#include "rdmaflow/status.h"

/* Row bits of the flags that only some runs use: the first one given is
 * named if the run has no use for it. */
#define TR_DISTRIBUTED 0x010000u /* only in a distributed run */
#define TR_CTR         0x020000u /* only with --model=wide_deep */
#define TR_IMAGE       0x040000u /* only with the Fashion-MNIST models */

/* ---- values that need more than a row ---------------------------------- */

static int call_model(const rf_flag_row *row, const char *v, void *ctx,
                      rf_flag_error *err)
{
    tr_flags *f = ctx;
    char msg[256];
    (void)row;
    if (tr_model_parse(v, &f->model, msg, sizeof msg) != 0)
        return rf_flags_fail(err, "%s", msg);
    snprintf(f->model_text, sizeof f->model_text, "%s", v);
    return 0;
}

static int call_optimizer(const rf_flag_row *row, const char *v, void *ctx,
                          rf_flag_error *err)
{
    rf_optim_config cfg;
    (void)row;
    if (rf_optim_parse(v, &cfg) != RF_OK)
        return rf_flags_fail(err, "%s", rf_error_message());
    ((tr_flags *)ctx)->optimizer = v;
    return 0;
}

static int call_ctr_spec(const rf_flag_row *row, const char *v, void *ctx,
                         rf_flag_error *err)
{
    (void)row;
    if (rf_ctr_spec_parse(v, &((tr_flags *)ctx)->ctr_spec) != RF_OK)
        return rf_flags_fail(err, "%s", rf_error_message());
    return 0;
}

/* "W1,W2,..." as mlp's widths */
static int call_hidden(const rf_flag_row *row, const char *v, void *ctx,
                       rf_flag_error *err)
{
    char text[512], msg[256];
    (void)row;
    if (snprintf(text, sizeof text, "mlp:%s", v) >= (int)sizeof text)
        return rf_flags_fail(err, "too long");
    if (tr_model_parse(text, &((tr_flags *)ctx)->hidden, msg, sizeof msg) != 0)
        return rf_flags_fail(err, "%s", msg);
    return 0;
}

/* Any uint64: the graph seed and the shuffling seed. */
static int call_seed(const rf_flag_row *row, const char *v, void *ctx,
                     rf_flag_error *err)
{
    char *end = NULL;
    (void)row;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (*v < '0' || *v > '9' || *end != '\0')
        return rf_flags_fail(err, "'%s' is not a non-negative integer",
                             RF_ECHO(v));
    if (errno == ERANGE)
        return rf_flags_fail(err, "%s is out of range [0, %" PRIu64 "]",
                             RF_ECHO(v), UINT64_MAX);
    ((tr_flags *)ctx)->seed = (uint64_t)x;
    return 0;
}

static const rf_flag_choice apply_modes[] = {
    {"ps", RF_PS_APPLY_PS}, {"worker", RF_PS_APPLY_WORKER}, {NULL, 0}};
static const rf_flag_choice lookup_ways[] = {{"auto", RF_LOOKUP_AUTO},
                                             {"rows", RF_LOOKUP_ROWS},
                                             {"gather", RF_LOOKUP_GATHER},
                                             {NULL, 0}};
static const rf_flag_choice ps_strategies[] = {
    {"round_robin", RF_PS_ROUND_ROBIN}, {"greedy", RF_PS_GREEDY}, {NULL, 0}};
/* --explain (text), --explain=text|json|true|false, --noexplain */
static const rf_flag_choice explain_kinds[] = {{"text", TR_EXPLAIN_TEXT},
                                               {"json", TR_EXPLAIN_JSON},
                                               {"true", TR_EXPLAIN_TEXT},
                                               {"false", TR_EXPLAIN_NONE},
                                               {NULL, 0}};

/* The table's given call: the first flag of each kind that only some runs
 * use, for the checks after parsing. */
static void note_given(const rf_flag_row *row, void *ctx)
{
    tr_flags *f = ctx;
    if ((row->bits & TR_DISTRIBUTED) && !f->distributed_flag)
        f->distributed_flag = row->name;
    if ((row->bits & TR_CTR) && !f->ctr_flag)
        f->ctr_flag = row->name;
    if ((row->bits & TR_IMAGE) && !f->image_flag)
        f->image_flag = row->name;
}

/* ---- the table ---------------------------------------------------------- */

#define DIST     (RF_FLAG_NONEMPTY | TR_DISTRIBUTED)
#define DIST_ANY TR_DISTRIBUTED /* the cluster flags: "" is checked later */
#define CTR      TR_CTR
#define F32      RF_FLAG_FLOAT32

#define TR_FLAG_ROWS 68
static void tr_flag_rows(rf_flag_row rows[TR_FLAG_ROWS], tr_flags *f)
{
    const rf_flag_row table[] = {
        RF_FLAG_CALL("model", call_model, "mlp:256,128", "MODEL",
                     "softmax | mlp[:W1,W2,...] | cnn[:C1,C2,D] | wide_deep "
                     "(cnn means cnn:16,32,128; wide_deep trains on the "
                     "synthetic click-through data)"),
        RF_FLAG_CALL(
            "ctr_spec", call_ctr_spec, NULL, "SPEC",
            "wide_deep: the click-through data set, NAME=VALUE;... over "
            "the default (rf-ctr-data(1); default: 8 categorical "
            "features, vocabularies to 1e9, 4 dense)",
            .bits = CTR),
        RF_FLAG_INT64(
            "hash_buckets", &f->hash_buckets, "100000", 1, 100000000, "N",
            "wide_deep: a feature whose vocabulary is larger is hashed "
            "into N buckets, else its ids are used as they are",
            .bits = CTR),
        RF_FLAG_INT64("embedding_dim", &f->embedding_dim, "8", 1, 1024, "N",
                      "wide_deep: the deep part's embedding width",
                      .bits = CTR),
        RF_FLAG_CALL("hidden", call_hidden, "64,32", "W1,W2,...",
                     "wide_deep: the deep part's relu layers", .bits = CTR),
        RF_FLAG_INT64(
            "eval_examples", &f->eval_examples, "100000", 2, 100000000, "N",
            "wide_deep: test examples for AUC and log loss, the first "
            "N of the test split, at most all of it",
            .bits = CTR),
        RF_FLAG_INT64("embedding_partitions", &f->embedding_partitions, NULL, 1,
                      64, "P",
                      "wide_deep: each embedding table in P parts (fixed_size_"
                      "partitioner, ids to parts by \"mod\"; default 1, "
                      "distributed the ps count)",
                      .bits = CTR),
        RF_FLAG_CALL("optimizer", call_optimizer, "adam", "NAME",
                     "sgd | momentum | adagrad | adam | rmsprop | ftrl "
                     "(wide_deep: ftrl 1.0 for the wide part and adagrad 0.1 "
                     "for the deep part, or the one given for both)",
                     .seen = &f->optimizer_given),
        RF_FLAG_DOUBLE("learning_rate", &f->learning_rate, NULL, 0, 1e6, "LR",
                       "learning rate > 0 (default per optimizer: sgd 0.1, "
                       "momentum 0.01, adagrad 0.1, adam 0.001, rmsprop 0.001, "
                       "ftrl 0.1)",
                       .bits = F32 | RF_FLAG_MIN_OPEN),
        RF_FLAG_DOUBLE("momentum", &f->momentum, NULL, 0, 1, "M",
                       "momentum in [0, 1] for momentum (default 0.9) and "
                       "rmsprop (default 0)",
                       .bits = F32),
        RF_FLAG_DOUBLE("initial_accumulator_value",
                       &f->initial_accumulator_value, NULL, 0, 1e6, "A",
                       "initial accumulator > 0 for adagrad and ftrl (default "
                       "0.1)",
                       .bits = F32 | RF_FLAG_MIN_OPEN),
        RF_FLAG_DOUBLE("learning_rate_power", &f->learning_rate_power, NULL,
                       -1e6, 0, "P",
                       "ftrl's learning rate power <= 0 (default -0.5; 0 is a "
                       "fixed learning rate)",
                       .bits = F32),
        RF_FLAG_DOUBLE("l1_regularization_strength",
                       &f->l1_regularization_strength, NULL, 0, 1e6, "L1",
                       "ftrl's L1 regularization strength >= 0 (default 0)",
                       .bits = F32),
        RF_FLAG_DOUBLE("l2_regularization_strength",
                       &f->l2_regularization_strength, NULL, 0, 1e6, "L2",
                       "ftrl's L2 regularization strength >= 0 (default 0)",
                       .bits = F32),
        RF_FLAG_DOUBLE("l2_shrinkage_regularization_strength",
                       &f->l2_shrinkage_regularization_strength, NULL, 0, 1e6,
                       "S",
                       "ftrl's L2 shrinkage strength >= 0 (default 0; > 0 uses "
                       "ApplyFtrlV2)",
                       .bits = F32),
        RF_FLAG_INT64("batch_size", &f->batch_size, NULL, 1, 65536, "N",
                      "training examples per step (default 250; cnn 100)"),
        RF_FLAG_INT64("train_steps", &f->train_steps, NULL, 0, 1000000000, "N",
                      "train until global_step reaches N (StopAtStepHook "
                      "last_step; default 4800, i.e. 20 epochs; cnn 4200, 7 "
                      "epochs)"),
        RF_FLAG_CALL("seed", call_seed, "1", "S",
                     "graph seed (initial weights) and shuffling seed"),
        RF_FLAG_INT64("threads", &f->threads, "0", 0, 256, "N",
                      "executor compute threads, 0 = online CPUs"),
        RF_FLAG_STRING("data_dir", &f->data_dir, NULL, "DIR",
                       "Fashion-MNIST IDX files (default $RF_FASHION_MNIST_DIR "
                       "or " RF_FASHION_MNIST_DIR ")",
                       .bits = RF_FLAG_NONEMPTY | TR_IMAGE),
        RF_FLAG_STRING("trace", &f->trace_path, NULL, "FILE",
                       "write a Chrome trace (JSON, Perfetto) of the executor",
                       .bits = RF_FLAG_NONEMPTY),
        RF_FLAG_INT64("trace_steps", &f->trace_steps, "100", 1, 1000000000, "N",
                      "with --trace, trace the first N training steps"),
        RF_FLAG_INT64("log_every", &f->log_every, "500", 0, 1000000000, "N",
                      "progress line every N steps, 0 = none"),
        RF_FLAG_INT64("eval_batch_size", &f->eval_batch_size, "1000", 1, 10000,
                      "N", "test examples per evaluation step"),
        RF_FLAG_STRING("variables_out", &f->variables_out, NULL, "FILE",
                       "write the final variables (values, optimizer slots, "
                       "global_step) as safetensors; distributed: the chief, "
                       "after every worker is done",
                       .bits = RF_FLAG_NONEMPTY),
        /* metrics files (README "Metrics files") */
        RF_FLAG_STRING(
            "metrics_out", &f->metrics_out, NULL, "FILE",
            "write this task's metrics as JSON lines: a line every "
            "--metrics_every_steps steps (loss, accuracy, examples/s, "
            "global_step/sec, bytes) and a summary at the end",
            .bits = RF_FLAG_NONEMPTY),
        RF_FLAG_INT64("metrics_every_steps", &f->metrics_every_steps, "100", 1,
                      1000000000, "N",
                      "with --metrics_out, a line every N steps of this task"),
        RF_FLAG_STRING(
            "metrics_port", &f->metrics_port, NULL, "P",
            "serve Prometheus metrics at http://HOST:P+k/metrics, HOST "
            "this task's cluster host (or --bind_addr), k its rank among "
            "the tasks of that host (0 in Kubernetes); 0: off (the "
            "default; overrides RF_METRICS_PORT)",
            .bits = DIST),
        /* distributed training (TensorFlow's classic trainer flags;
         * TF_CONFIG is read too, the flags override it field by field;
         * rf_cluster_resolve_env checks the cluster flags) */
        RF_FLAG_STRING("ps_hosts", &f->ps_hosts, NULL, "H:P,...",
                       "parameter-server tasks, in task order",
                       .bits = DIST_ANY),
        RF_FLAG_STRING(
            "cluster_secret_file", &f->cluster_secret_file, NULL, "FILE",
            "the cluster's shared secret (a file of 32 to 4096 bytes "
            "readable by its owner only): every connection to a ps "
            "task authenticates with it; overrides "
            "RF_CLUSTER_SECRET_FILE",
            .bits = DIST),
        RF_FLAG_BOOL(
            "require_secret", &f->require_secret,
            "refuse to start without a cluster secret (as "
            "RF_REQUIRE_SECRET=1); without this, a task with none warns "
            "once that its cluster is unauthenticated",
            .bits = RF_FLAG_NEGATABLE | TR_DISTRIBUTED),
        RF_FLAG_STRING("worker_hosts", &f->worker_hosts, NULL, "H:P,...",
                       "worker tasks, in task order (worker 0 is the chief)",
                       .bits = DIST_ANY),
        RF_FLAG_STRING("job_name", &f->job_name, NULL, "ps|worker",
                       "this task's job", .bits = DIST_ANY),
        RF_FLAG_STRING("task_index", &f->task_index, NULL, "I",
                       "this task's index in its job", .bits = DIST_ANY),
        /* launchers: the cluster and the task from Slurm's or MPI's rank
         * (SlurmClusterResolver) */
        RF_FLAG_STRING(
            "num_ps", &f->num_ps, NULL, "N",
            "under srun or mpirun: ranks 0..N-1 are the ps tasks, the "
            "others the workers (SLURM_PROCID, OMPI_COMM_WORLD_RANK "
            "or PMIX_RANK; hosts from Slurm's node list or "
            "RF_MPI_HOSTS, else 127.0.0.1)",
            .bits = DIST_ANY),
        RF_FLAG_STRING("port_base", &f->port_base, NULL, "P",
                       "with --num_ps, the k-th task on a host listens on port "
                       "P + k (default 8888)",
                       .bits = DIST_ANY),
        RF_FLAG_STRING(
            "bind_addr", &f->bind_addr, NULL, "ADDR",
            "a ps task listens on this local address (0.0.0.0: every "
            "address) instead of its cluster address, which still "
            "picks the RDMA device and NUMA node; overrides "
            "RF_BIND_ADDR",
            .bits = DIST),
        RF_FLAG_CHOICE("apply", &f->apply, "ps", apply_modes, "ps|worker",
                       "where the optimizer runs: ps = the ps task applies the "
                       "pushed gradient, worker = read, apply here, write back",
                       .bits = DIST),
        RF_FLAG_BOOL("use_locking", &f->use_locking,
                     "with --apply=worker, hold each shard's lock word "
                     "(compare-and-swap) during its update",
                     .bits = RF_FLAG_NEGATABLE | TR_DISTRIBUTED),
        RF_FLAG_CHOICE(
            "ps_strategy", &f->ps_strategy, TR_DEFAULT_PS_STRATEGY,
            ps_strategies, "round_robin|greedy",
            "how replica_device_setter picks each variable's ps task: "
            "round_robin, or greedy = the least loaded by bytes so far "
            "(GreedyLoadBalancingStrategy, byte_size_load_fn)",
            .bits = DIST),
        RF_FLAG_INT64(
            "partition_min_slice_bytes", &f->partition_min_slice_bytes,
            TR_DEFAULT_PARTITION_STR, 0, 1000000000000000, "N",
            "partition each variable along its first axis into at most "
            "one part per ps task, each at least N bytes "
            "(min_max_variable_partitioner); 0 = no partitioning",
            .bits = DIST),
        /* MonitoredTrainingSession's */
        RF_FLAG_STRING("checkpoint_dir", &f->checkpoint_dir, NULL, "DIR",
                       "the chief restores the newest checkpoint of DIR that "
                       "verifies and saves model.ckpt-<step>.safetensors there "
                       "(created if missing); an evaluator task evaluates each "
                       "new one (test accuracy; wide_deep: AUC and log loss)",
                       .bits = DIST),
        RF_FLAG_INT64("save_checkpoint_steps", &f->save_checkpoint_steps, NULL,
                      0, 1000000000, "N",
                      "with --checkpoint_dir, save every N global steps (then "
                      "--save_checkpoint_secs is not used)",
                      .bits = DIST),
        RF_FLAG_DOUBLE(
            "save_checkpoint_secs", &f->save_checkpoint_secs, "600", 0, 1e9,
            "S",
            "with --checkpoint_dir, save every S seconds, at the start "
            "and at the end (0 without --save_checkpoint_steps: never "
            "save, only restore)",
            .bits = DIST),
        RF_FLAG_INT64("max_to_keep", &f->max_to_keep, "5", 1, 1000000, "N",
                      "checkpoints kept, older ones deleted (and files "
                      "model.ckpt-<step>.safetensors the state file does "
                      "not name)",
                      .bits = DIST),
        RF_FLAG_INT64("max_failed_saves", &f->max_failed_saves, "3", 0,
                      1000000000, "N",
                      "the chief stops (exit 1) once N checkpoint saves in "
                      "a row have failed; a failed save is logged and "
                      "training goes on (0 = never stop; the final save's "
                      "failure always fails the job)",
                      .bits = DIST),
        RF_FLAG_INT64(
            "log_step_count_steps", &f->log_step_count_steps, "100", 0,
            1000000000, "N",
            "the chief prints global_step/sec and examples/sec every N "
            "global steps, 0 = never",
            .bits = DIST),
        RF_FLAG_STRING("summary_dir", &f->summary_dir, NULL, "DIR",
                       "the chief writes TensorBoard summaries (loss, batch "
                       "accuracy, global_step/sec, examples/sec) into an "
                       "event file in DIR (default: --checkpoint_dir; an "
                       "evaluator writes into its eval folder)",
                       .bits = DIST),
        RF_FLAG_INT64("save_summaries_steps", &f->save_summaries_steps, "100",
                      0, 1000000000, "N",
                      "write the loss and accuracy summaries every N global "
                      "steps (0 = never, or by --save_summaries_secs)",
                      .seen = &f->save_summaries_steps_given, .bits = DIST),
        RF_FLAG_DOUBLE("save_summaries_secs", &f->save_summaries_secs, "0", 0,
                       1e9, "S",
                       "write the summaries every S seconds instead (when "
                       "--save_summaries_steps is not given or 0)",
                       .bits = DIST),
        RF_FLAG_INT64(
            "max_wait_secs", &f->max_wait_secs, "7200", 1, 10000000, "S",
            "how long a task waits for the cluster to be ready (ps "
            "tasks up, variables initialised), at the start and after "
            "a failure",
            .bits = DIST),
        RF_FLAG_INT64(
            "stop_grace_secs", &f->stop_grace_secs, "120", 0, 10000000, "S",
            "how long the chief waits at the end for the other workers "
            "to finish before it names the missing ones, saves, shuts "
            "the ps tasks down and exits 1",
            .bits = DIST),
        RF_FLAG_BOOL(
            "elastic", &f->elastic,
            "elastic workers (async training only; implied by a TF_CONFIG "
            "sparseCluster): workers may join the running job and leave "
            "it (SIGTERM: finish the step, LEAVE, exit 0); the chief waits "
            "at the end only for the workers that are members then",
            .bits = RF_FLAG_NEGATABLE | TR_DISTRIBUTED),
        RF_FLAG_INT64(
            "ps_idle_exit_secs", &f->ps_idle_exit_secs, "0", 0, 2000000, "S",
            "a ps task that no chief has connected to S seconds after its "
            "start exits 138 (0: it waits for its chief forever; once a "
            "chief came, a ps exits 138 after --max_wait_secs without one)",
            .bits = DIST),
        RF_FLAG_INT64(
            "member_timeout_secs", &f->member_timeout_secs, "10", 1, 86400, "S",
            "elastic: how long a ps keeps a worker whose connection closed "
            "(killed, lost) as a member the chief waits for",
            .bits = DIST),
        RF_FLAG_INT64(
            "shard_batches", &f->shard_batches, "16", 1, 1048576, "N",
            "elastic: the shard ledger of ps task 0 deals the training set "
            "in shards of N batches (the same for every worker)",
            .bits = DIST),
        RF_FLAG_STRING(
            "shards_out", &f->shards_out, NULL, "FILE",
            "elastic: append a JSON line per batch trained (worker, epoch, "
            "shard, batch, global_step), written before the batch's "
            "progress reaches the ledger",
            .bits = DIST),
        RF_FLAG_BOOL(
            "sync_replicas", &f->sync_replicas,
            "synchronous training (SyncReplicasOptimizer): each step the "
            "ps applies the mean of --replicas_to_aggregate workers' "
            "gradients once, stale gradients are dropped, workers wait "
            "for the step (needs --apply=ps)",
            .bits = RF_FLAG_NEGATABLE | TR_DISTRIBUTED),
        RF_FLAG_INT64("replicas_to_aggregate", &f->replicas_to_aggregate, NULL,
                      0, RF_PS_MAX_SYNC_REPLICAS, "N",
                      "with --sync_replicas, gradients averaged per step, 1 to "
                      "--total_num_replicas (default 0: every worker)",
                      .bits = DIST),
        RF_FLAG_INT64(
            "total_num_replicas", &f->total_num_replicas, NULL, 0,
            RF_PS_MAX_SYNC_REPLICAS, "M",
            "with --sync_replicas, the workers pushing: the cluster's "
            "training workers (default 0: them); M - N are backup "
            "workers",
            .bits = DIST),
        RF_FLAG_INT64(
            "staleness", &f->staleness, NULL, 0, 1000000000, "K",
            "stale synchronous parallel (async training only, not with "
            "--sync_replicas): a worker more than K steps ahead of the "
            "slowest training worker waits before its next step (clock "
            "words on ps task 0, one-sided READs and FETCH_AND_ADD; 0: "
            "no worker starts step c+1 before every worker finished "
            "step c); default off",
            .bits = DIST),
        RF_FLAG_ENUM(
            "embedding_lookup", &f->embedding_lookup, "auto", lookup_ways,
            "auto|rows|gather",
            "how a step's embedding lookups fetch a table's rows: rows = "
            "one-sided row READs by the worker, gather = the ps copies "
            "them (TensorFlow's Gather on the ps), auto = per table and "
            "lookup the cheaper of the two by a cost model measured when "
            "the session starts (docs/DESIGN.md)",
            .bits = DIST),
        RF_FLAG_ENUM(
            "explain", &f->explain, NULL, explain_kinds, "[text|json]",
            "before training, print the cluster, each variable's shard "
            "placement, the fabric and NUMA binding, and the operations "
            "of one step (json: one JSON document, on stdout alone: the "
            "trainer's other lines then go to stderr; or to "
            "--explain_out)",
            .bits = RF_FLAG_OPTIONAL),
        RF_FLAG_BOOL(
            "explain_only", &f->explain_only,
            "print the explanation of every task of the cluster (what "
            "each ps, worker and the chief does) from the flags alone, "
            "connecting to nothing, and exit (implies --explain; local "
            "mode: this process's)",
            .bits = RF_FLAG_NEGATABLE),
        RF_FLAG_STRING("explain_out", &f->explain_out, NULL, "FILE",
                       "write the --explain output to FILE instead of stdout "
                       "('-': stdout)",
                       .bits = RF_FLAG_NONEMPTY),
        RF_FLAG_BOOL("help", &f->help, "this message"),
        RF_FLAG_BOOL("version", &f->version, "print the version and exit"),
        {0},
    };
    _Static_assert(sizeof table <= sizeof(rf_flag_row[TR_FLAG_ROWS]),
                   "TR_FLAG_ROWS is too small");
    memcpy(rows, table, sizeof table);
}

/* What the rows do not set: the values that mean "not given". */
static void set_defaults(tr_flags *f)
{
    memset(f, 0, sizeof *f);
    f->learning_rate = NAN;
    f->momentum = NAN;
    f->initial_accumulator_value = NAN;
    f->learning_rate_power = NAN;
    f->l1_regularization_strength = NAN;
    f->l2_regularization_strength = NAN;
    f->l2_shrinkage_regularization_strength = NAN;
    f->batch_size = -1; /* per model, see resolve_model_defaults */
    f->train_steps = -1;
    f->staleness = -1; /* off */
    rf_ctr_spec_default(&f->ctr_spec);
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

/* "-h" and "-help" are spellings of --help (absl's). */
static void spell_help(int argc, char **argv)
{
    static char help[] = "--help";
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "-help"))
            argv[i] = help;
}

int tr_flags_parse(int argc, char **argv, tr_flags *f, char *err, size_t errlen)
{
    set_defaults(f);
    rf_flag_row rows[TR_FLAG_ROWS];
    tr_flag_rows(rows, f);
    rf_flag_table t = {
        .rows = rows, .ctx = f, .tf_style = true, .given = note_given};
    rf_flag_error fe;
    int noperands;
    spell_help(argc, argv);
    if (rf_flags_parse(&t, argc, argv, &noperands, &fe) != RF_FLAGS_OK) {
        snprintf(err, errlen, "%s%s", fe.message,
                 fe.kind == RF_FLAG_ERR_OPERAND
                     ? " (flags are --name=value or --name value; see --help)"
                     : "");
        return -1;
    }
    if (f->help)
        return 0;
    f->apply_mode =
        strcmp(f->apply, "ps") ? RF_PS_APPLY_WORKER : RF_PS_APPLY_PS;
    f->ps_strategy_kind =
        strcmp(f->ps_strategy, "greedy") ? RF_PS_ROUND_ROBIN : RF_PS_GREEDY;
    resolve_model_defaults(f);
    if (check_sync(f, err, errlen) != 0 ||
        resolve_wide_deep(f, err, errlen) != 0)
        return -1;
    return resolve_optimizer(f, err, errlen);
}

int tr_flags_check_cluster(const tr_flags *f, int num_workers, char *err,
                           size_t errlen)
{
    /* num_workers < 0: a sparse cluster (TFJob enableDynamicWorker) */
    bool elastic = f->elastic || num_workers < 0;
    if (elastic && f->sync_replicas) {
        snprintf(err, errlen,
                 "--sync_replicas: not with elastic workers (%s): "
                 "SyncReplicasOptimizer needs a fixed number of replicas, "
                 "and workers joining or leaving would change it; train "
                 "asynchronously",
                 f->elastic ? "--elastic" : "a TF_CONFIG sparseCluster");
        return -1;
    }
    if (elastic && f->staleness >= 0) {
        snprintf(err, errlen,
                 "--staleness: not with elastic workers (%s): stale "
                 "synchronous parallel waits for a fixed set of workers",
                 f->elastic ? "--elastic" : "a TF_CONFIG sparseCluster");
        return -1;
    }
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
    tr_flags f;
    rf_flag_row rows[TR_FLAG_ROWS];
    tr_flag_rows(rows, &f);
    rf_flags_print_help(out, &(rf_flag_table){.rows = rows, .tf_style = true});
    fprintf(out, "\nexit status: 0 success, 1 runtime error, 2 usage error\n");
}
