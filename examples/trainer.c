/* examples/trainer.c: the classic trainer of TensorFlow's "Distributed
 * TensorFlow" tutorial ("Putting it all together: example trainer
 * program"), in C on rdmaflow's public headers only. It is documentation
 * by example: a small MLP (784-128-10) trained with Adagrad on
 * Fashion-MNIST by ps and worker tasks; tools/trainer (rf-trainer) is the
 * full tool (models, optimizers, apply modes, --explain, traces, export).
 *
 * The same program runs once per task, here 2 ps and 2 workers on
 * localhost:
 *
 *   C="--ps_hosts=localhost:2222,localhost:2223
 *      --worker_hosts=localhost:2224,localhost:2225"
 *   rf-example-trainer $C --job_name=ps --task_index=0
 *   rf-example-trainer $C --job_name=ps --task_index=1
 *   rf-example-trainer $C --job_name=worker --task_index=0
 *   rf-example-trainer $C --job_name=worker --task_index=1
 *
 * (TF_CONFIG can give the cluster and the task instead of the four flags;
 * under srun or mpirun, --num_ps=N takes them from the rank: ranks 0..N-1
 * are the ps tasks, the others the workers, ports from --port_base.)
 * What each step of the tutorial's Python becomes:
 *   cluster = tf.train.ClusterSpec(...)      rf_cluster_resolve_env
 *   server = tf.train.Server(cluster, ...)   rf_server_start
 *   server.join()                            rf_server_join (ps tasks)
 *   with tf.device(replica_device_setter(    make_setter() and
 *       worker_device=..., cluster=...)):    build_graph() below
 *     global_step, model, loss, train_op
 *   MonitoredTrainingSession(is_chief=...,   rf_monitored_session_create
 *       checkpoint_dir=..., hooks=[          (create_session() below)
 *       StopAtStepHook(last_step)])
 *   while not mon_sess.should_stop():        train() below
 *       mon_sess.run(train_op)
 * and at the end the workers finish, the chief waits for them (at most 120
 * s), saves the last checkpoint, evaluates the test set and shuts the ps
 * tasks down, so the whole cluster exits by itself. With --checkpoint_dir
 * the job survives a task's death: restarted (by hand, or by rf-launch
 * --restart_on_failure), a ps is restored from the newest checkpoint, a
 * worker rejoins, the chief restores and goes on.
 *
 * Its flags are TensorFlow's (tf.app.flags): one row each in a flag table
 * (rdmaflow/flags.h), which reads them and prints --help.
 *
 * Exit status: 0 success, 1 runtime error, 2 bad flags. */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/clock.h"
#include "rdmaflow/cluster.h"
#include "rdmaflow/data.h"
#include "rdmaflow/device.h"
#include "rdmaflow/env.h"
#include "rdmaflow/fabric.h"
#include "rdmaflow/flags.h"
#include "rdmaflow/graph.h"
#include "rdmaflow/monitored_session.h"
#include "rdmaflow/optim.h"
#include "rdmaflow/session.h"
#include "rdmaflow/version.h"

#define PROG         "rf-example-trainer"
#define HIDDEN_UNITS 128
#define LOG_EVERY    1000 /* local steps between progress lines */
#define EVAL_BATCH   1000

/* ---- flags -------------------------------------------------------------- */

typedef struct flags {
    rf_cluster_flags cluster; /* the four cluster flags, as given */
    const char *data_dir;     /* NULL: RF_FASHION_MNIST_DIR or the default */
    int64_t train_steps;      /* StopAtStepHook's last_step */
    int64_t batch_size;
    double learning_rate;
    int64_t seed;               /* initial weights and the data's shuffling */
    const char *checkpoint_dir; /* NULL: no checkpoints */
    int64_t save_checkpoint_steps;
    const char *cluster_secret_file; /* NULL: RF_CLUSTER_SECRET_FILE */
    bool require_secret;             /* --require_secret */
    const char *metrics_out;         /* NULL: no metrics file */
    bool help, version;              /* --help (or -h), --version */
} flags;

static const char usage[] =
    "usage: " PROG " --ps_hosts=H:P,... --worker_hosts=H:P,...\n"
    "         --job_name=ps|worker --task_index=N  (or TF_CONFIG,\n"
    "         or under srun/mpirun: --num_ps=N [--port_base=P])\n"
    "         [flags]\n"
    "       " PROG " --help | --version\n"
    "flags:\n";

/* A usage error: the message on stderr; returns exit status 2. */
static int usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, PROG ": ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (--help lists the flags)\n");
    va_end(ap);
    return 2;
}

/* --learning_rate: a positive number that stays one as a float32 (a flag
 * with a check of its own: a CALL row). */
static int read_learning_rate(const rf_flag_row *row, const char *text,
                              void *ctx, rf_flag_error *err)
{
    (void)ctx;
    char *end;
    double lr = strtod(text, &end);
    if (end == text || *end || !(lr > 0) || !isfinite(lr))
        return rf_flags_fail(err, "'%s' is not a positive number",
                             RF_ECHO(text));
    /* it is used as a float32: refuse what would become 0 or infinity */
    float lr32 = (float)lr;
    if (!isfinite(lr32) || lr32 < FLT_MIN)
        return rf_flags_fail(err, "%s is out of range: it %s in float32",
                             RF_ECHO(text),
                             isinf(lr32) ? "rounds to infinity"
                             : lr32 == 0 ? "rounds to 0"
                                         : "is subnormal");
    *(double *)row->dest = lr;
    return 0;
}

/* The message of a flag error, in this program's words ("--x: unknown
 * flag", "--x: needs a value", "--x: empty value", "--x: 'v' is not an
 * integer in [1, 9]"); the table's own for the rest. */
static int flag_error(const rf_flag_error *err)
{
    const rf_flag_row *row = err->row;
    switch (err->kind) {
    case RF_FLAG_ERR_MISSING_VALUE:
        return usage_error("--%s: needs a value", row->name);
    case RF_FLAG_ERR_BAD_VALUE:
        if (row->type == RF_FLAG_TYPE_BOOL) /* --require_secret=maybe */
            return usage_error("%s: unknown flag", RF_ECHO(err->arg));
        /* "--data_dir=" would read /, "--cluster_secret_file=" would
         * run without the secret */
        if (err->value && !*err->value)
            return usage_error("--%s: empty value", row->name);
        if (row->type == RF_FLAG_TYPE_INT64)
            return usage_error(
                "--%s: '%s' is not an integer in [%" PRId64 ", %" PRId64 "]",
                row->name, RF_ECHO(err->value), row->min, row->max);
        return usage_error("%s", err->message);
    case RF_FLAG_ERR_UNKNOWN: /* --bogus=1, --notrain_steps */
    case RF_FLAG_ERR_OPERAND: /* extra, -x, --, --=1 */
        return usage_error("%s: unknown flag", RF_ECHO(err->arg));
    default:
        return usage_error("%s", err->message);
    }
}

/* Returns 0, 1 for --help, 3 for --version, or 2 after a message for a bad
 * flag. Flags are TensorFlow's: "--name=value" or "--name value". */
static int parse_flags(int argc, char **argv, flags *f)
{
    rf_cluster_flags *c = &f->cluster;
    const unsigned text = RF_FLAG_NONEMPTY;
    const rf_flag_row rows[] = {
        RF_FLAG_STRING("ps_hosts", &c->ps_hosts, NULL, "H:P,...",
                       "the ps tasks", .bits = text),
        RF_FLAG_STRING("worker_hosts", &c->worker_hosts, NULL, "H:P,...",
                       "the worker tasks", .bits = text),
        RF_FLAG_STRING("job_name", &c->job_name, NULL, "ps|worker",
                       "this task's job", .bits = text),
        RF_FLAG_STRING("task_index", &c->task_index, NULL, "N",
                       "this task's index in its job", .bits = text),
        /* under srun or mpirun: the cluster and task from the rank */
        RF_FLAG_STRING("num_ps", &c->num_ps, NULL, "N",
                       "srun/mpirun: ranks 0..N-1 are the ps tasks",
                       .bits = text),
        RF_FLAG_STRING("port_base", &c->port_base, NULL, "P",
                       "srun/mpirun: the first port (default 8888)",
                       .bits = text),
        RF_FLAG_STRING("data_dir", &f->data_dir, NULL, "DIR",
                       "Fashion-MNIST (default RF_FASHION_MNIST_DIR)",
                       .bits = text),
        RF_FLAG_INT64("train_steps", &f->train_steps, "8000", 1, 1000000000,
                      "N", "the global step to stop at"),
        RF_FLAG_INT64("batch_size", &f->batch_size, "100", 1, 60000, "N",
                      "examples per step"),
        RF_FLAG_CALL("learning_rate", read_learning_rate, "0.05", "LR",
                     "Adagrad's learning rate", .dest = &f->learning_rate),
        RF_FLAG_INT64("seed", &f->seed, "1", 0, 1000000000, "N",
                      "initial weights and the data's shuffling"),
        RF_FLAG_STRING("checkpoint_dir", &f->checkpoint_dir, NULL, "DIR",
                       "save and restore checkpoints there", .bits = text),
        RF_FLAG_INT64("save_checkpoint_steps", &f->save_checkpoint_steps,
                      "1000", 1, 1000000000, "N", "steps between checkpoints"),
        RF_FLAG_STRING("cluster_secret_file", &f->cluster_secret_file, NULL,
                       "FILE", "the cluster secret (RF_CLUSTER_SECRET_FILE)",
                       .bits = text),
        /* no secret is an error instead of a warning (RF_REQUIRE_SECRET=1) */
        RF_FLAG_BOOL("require_secret", &f->require_secret,
                     "refuse to run without a cluster secret"),
        RF_FLAG_STRING("metrics_out", &f->metrics_out, NULL, "FILE",
                       "a JSON line of metrics every 100 steps", .bits = text),
        RF_FLAG_STOP("help", &f->help, "this help"),
        RF_FLAG_STOP("version", &f->version, "the version"),
        {0},
    };
    rf_flag_table table = {.rows = rows, .tf_style = true};
    memset(f, 0, sizeof *f);
    rf_flag_error err;
    int noperands;
    int rc = rf_flags_parse(&table, argc, argv, &noperands, &err);
    if (rc < 0 && err.kind == RF_FLAG_ERR_OPERAND && !strcmp(err.arg, "-h"))
        rc = RF_FLAGS_STOPPED; /* "-h" is --help */
    if (rc < 0)
        return flag_error(&err);
    if (rc == RF_FLAGS_STOPPED && f->version)
        return 3;
    if (rc == RF_FLAGS_STOPPED) { /* --help (or -h) */
        printf("%s", usage);
        rf_flags_print_help(stdout, &table);
        return 1;
    }
    return 0;
}

/* ---- the ps task: server.join() ----------------------------------------- */

static int fail(const char *what)
{
    fprintf(stderr, PROG ": %s: %s\n", what, rf_error_message());
    return 1;
}

/* --metrics_out (rdmaflow/metrics.h's writer) for this task, named
 * "JOB:INDEX" in the file; *out stays NULL without the flag. */
static rf_status open_metrics(const flags *f, const rf_cluster_task *self,
                              rf_metrics_writer **out)
{
    *out = NULL;
    if (!f->metrics_out)
        return RF_OK;
    char task[64];
    snprintf(task, sizeof task, "%s:%d", self->job, self->index);
    rf_metrics_options mo;
    rf_metrics_options_init(&mo);
    mo.path = f->metrics_out;
    mo.task = task;
    mo.every_n_steps = LOG_EVERY / 10;
    mo.examples_per_step = f->batch_size;
    return rf_metrics_writer_open(&mo, out);
}

static int run_ps(const flags *f, const rf_cluster *cluster)
{
    const rf_cluster_task *self = rf_cluster_self(cluster);
    rf_server *server;
    rf_metrics_writer *metrics; /* a ps trains nothing: a summary only */
    if (open_metrics(f, self, &metrics) != RF_OK)
        return fail("--metrics_out");
    rf_server_options so = {.cluster_secret_file = f->cluster_secret_file,
                            .require_secret = f->require_secret};
    if (rf_server_start(cluster, &so, &server) != RF_OK) {
        rf_metrics_writer_close(metrics);
        return fail("starting the ps server");
    }
    printf("ps task %d: serving on %s (fabric %s)\n", self->index,
           self->address, rf_fabric_provider(rf_server_fabric(server)));
    fflush(stdout);
    int rc = 0;
    if (rf_server_join(server) == RF_OK)
        printf("ps task %d: shut down by the chief\n", self->index);
    else
        rc = fail("serving");
    rf_server_stop(server);
    if (metrics && rf_metrics_writer_summary(metrics, NAN) != RF_OK)
        rc = fail("--metrics_out");
    rf_metrics_writer_close(metrics);
    return rc;
}

/* ---- the worker task ---------------------------------------------------- */

/* What a worker holds; destroy_worker frees it in reverse order. */
typedef struct worker {
    const flags *f;
    const rf_cluster *cluster;
    const rf_cluster_task *self;
    rf_server *server;
    rf_replica_device_setter *setter;
    rf_graph *g;
    rf_executor *ex;
    rf_monitored_session *session;
    rf_metrics_writer *metrics; /* --metrics_out, or NULL */
    rf_dataset *train, *test;   /* train: this worker's shard */
    rf_node *x, *y, *global_step, *loss, *correct, *accuracy, *train_op;
} worker;

/* A fully connected layer in its own name scope, as TF's mnist.py writes
 * it: weights (glorot uniform) and biases (zeros), x * weights + biases. */
static rf_node *dense(rf_graph *g, const char *scope, rf_node *x, int64_t in,
                      int64_t out, bool relu)
{
    rf_name_scope_push(g, scope);
    rf_node *w = rf_variable(g, RF_F32, RF_SHAPE(in, out),
                             rf_init_glorot_uniform(), "weights");
    rf_node *b =
        rf_variable(g, RF_F32, RF_SHAPE(out), rf_init_zeros(), "biases");
    rf_node *h =
        rf_bias_add(g, rf_matmul(g, x, w, false, false, NULL), b, NULL);
    if (relu)
        h = rf_relu(g, h, NULL);
    rf_name_scope_pop(g);
    return h;
}

/* tf.train.replica_device_setter(worker_device="/job:worker/task:%d",
 * cluster=cluster): variables go round-robin to the ps tasks, every other op
 * to this worker. */
static rf_status make_setter(worker *w)
{
    rf_cluster_desc desc;
    rf_cluster_device_desc(w->cluster, &desc);
    char worker_device[64];
    snprintf(worker_device, sizeof worker_device, "/job:%s/task:%d",
             w->self->job, w->self->index);
    rf_replica_device_setter_options o;
    rf_replica_device_setter_options_init(&o);
    o.cluster = &desc;
    o.worker_device = worker_device;
    return rf_replica_device_setter_create(&o, &w->setter);
}

/* with tf.device(setter): global_step (first, so it lands on ps 0), the
 * inputs, the model, the loss and Adagrad's train op. */
static rf_status build_graph(worker *w, int64_t pixels, int64_t classes)
{
    rf_status st = make_setter(w);
    if (st == RF_OK)
        st = rf_graph_create(&w->g);
    if (st == RF_OK)
        st = rf_graph_push_replica_device_setter(w->g, w->setter);
    if (st != RF_OK)
        return st;
    rf_graph *g = w->g;
    rf_graph_set_seed(g, (uint64_t)w->f->seed);

    w->global_step = rf_global_step(g);
    w->x = rf_placeholder(g, RF_F32, RF_SHAPE(-1, pixels), "images");
    w->y = rf_placeholder(g, RF_I32, RF_SHAPE(-1), "labels");
    rf_node *hidden = dense(g, "hidden", w->x, pixels, HIDDEN_UNITS, true);
    rf_node *logits =
        dense(g, "softmax_linear", hidden, HIDDEN_UNITS, classes, false);
    rf_node *xent =
        rf_sparse_softmax_cross_entropy_with_logits(g, w->y, logits, NULL);
    w->loss = rf_reduce_mean(g, xent, NULL, 0, false, "loss");
    rf_node *right = rf_equal(g, rf_argmax(g, logits, -1, RF_I32, NULL), w->y,
                              NULL); /* prediction == label */
    w->correct = rf_reduce_sum(g, rf_cast(g, right, RF_F32, NULL), NULL, 0,
                               false, "correct");
    w->accuracy = rf_accuracy(g, logits, w->y, NULL); /* of a batch */
    if (rf_graph_status(g) != RF_OK)
        return rf_graph_status(g);

    rf_optim_config adagrad; /* initial_accumulator_value 0.1 */
    rf_optim_defaults(RF_OPTIM_ADAGRAD, &adagrad);
    adagrad.learning_rate = (float)w->f->learning_rate;
    st = rf_minimize(g, &adagrad, w->loss, w->global_step, &w->train_op);
    rf_device_fn_pop(g);
    if (st != RF_OK)
        return st;
    return rf_graph_initialize_variables(g); /* the chief's values count */
}

/* The training data of this worker: its shard, shuffled every epoch. The
 * chief also loads the test set. */
static rf_status load_data(worker *w)
{
    rf_dataset *all;
    rf_status st =
        rf_dataset_load_fashion_mnist(w->f->data_dir, RF_DATA_TRAIN, &all);
    if (st != RF_OK)
        return st;
    int workers = rf_cluster_num_workers(w->cluster);
    uint32_t id = (uint32_t)w->self->worker_id;
    uint64_t seed = (uint64_t)w->f->seed;
    /* a sparse cluster (-1: workers come and go): the whole set each */
    uint32_t n = workers > 0 ? (uint32_t)workers : 1;
    st = rf_dataset_shard(all, n, n == 1 ? 0 : id, seed, &w->train);
    rf_dataset_free(all); /* the shard keeps the storage */
    if (st != RF_OK)
        return st;
    rf_dataset_set_shuffle(w->train, true, seed + id);
    if (!w->self->is_chief)
        return RF_OK;
    return rf_dataset_load_fashion_mnist(w->f->data_dir, RF_DATA_TEST,
                                         &w->test);
}

static rf_status no_memory(size_t batch)
{
    return rf_error_set(RF_ERR_NO_MEMORY, "no memory for a batch of %zu",
                        batch);
}

/* while not mon_sess.should_stop(): mon_sess.run(train_op). StopAtStepHook
 * stops once the cluster's global_step (shared by every worker) reaches
 * --train_steps. */
static rf_status train(worker *w)
{
    size_t bs = (size_t)w->f->batch_size;
    size_t dim = rf_dataset_example_dim(w->train);
    float *images = malloc(bs * dim * sizeof *images);
    int32_t *labels = malloc(bs * sizeof *labels);
    rf_node *feeds[] = {w->x, w->y}, *fetches[] = {w->loss, w->train_op};
    rf_tensor in[2] = {
        rf_tensor_make(RF_F32, RF_SHAPE((int64_t)bs, (int64_t)dim), images),
        rf_tensor_make(RF_I32, RF_SHAPE((int64_t)bs), labels),
    };
    rf_tensor out[2];
    int64_t step = 0, local = 0;
    double t0 = rf_now_s();
    rf_status st = images && labels ? RF_OK : no_memory(bs);
    bool ended = false; /* the job ended while this task recovered */
    while (st == RF_OK && !rf_monitored_session_should_stop(w->session)) {
        st = rf_dataset_next_batch(w->train, bs, images, labels);
        if (st == RF_OK)
            st = rf_monitored_session_run(w->session, feeds, in, 2, fetches, 2,
                                          out, &step, &ended);
        if (st == RF_OK && ended)
            break;
        if (st == RF_OK && ++local % LOG_EVERY == 0)
            printf("worker %d: step %" PRId64 " (global step %" PRId64
                   "), loss %.4f\n",
                   w->self->index, local, step, *rf_tensor_f32(&out[0]));
    }
    if (st == RF_OK)
        printf("worker %d: %" PRId64 " steps in %.1f s, global step %" PRId64
               "\n",
               w->self->index, local, rf_now_s() - t0, step);
    fflush(stdout);
    free(images);
    free(labels);
    return st;
}

/* The chief, after rf_monitored_session_close pulled the trained variables
 * back:
 * the number of correct predictions over the test set, by a local plan. */
static rf_status evaluate(worker *w, double *accuracy)
{
    size_t n = rf_dataset_size(w->test), dim = rf_dataset_example_dim(w->test);
    float *images = malloc(EVAL_BATCH * dim * sizeof *images);
    int32_t *labels = malloc(EVAL_BATCH * sizeof *labels);
    rf_node *feeds[] = {w->x, w->y};
    rf_plan *plan = NULL;
    rf_status st = images && labels ? RF_OK : no_memory(EVAL_BATCH);
    if (st == RF_OK)
        st = rf_plan_create(w->ex, w->g, &w->correct, 1, feeds, 2, NULL, 0,
                            &plan);
    double correct = 0;
    for (size_t done = 0; st == RF_OK && done < n;) {
        size_t b = n - done < EVAL_BATCH ? n - done : EVAL_BATCH;
        rf_tensor in[2] = {
            rf_tensor_make(RF_F32, RF_SHAPE((int64_t)b, (int64_t)dim), images),
            rf_tensor_make(RF_I32, RF_SHAPE((int64_t)b), labels),
        };
        rf_tensor out;
        st = rf_dataset_next_batch(w->test, b, images, labels);
        if (st == RF_OK)
            st = rf_plan_run(plan, in, &out);
        if (st == RF_OK)
            correct += *rf_tensor_f32(&out);
        done += b;
    }
    *accuracy = correct / (double)n;
    rf_plan_destroy(plan);
    free(images);
    free(labels);
    return st;
}

/* The end of the job: a worker says it is done; the chief waits for the
 * others (a worker that never finishes is named, and the chief still
 * evaluates and stops the ps tasks, then exits 1). */
static int finish(worker *w)
{
    rf_status st = rf_monitored_session_close(w->session);
    if (st != RF_OK && (st != RF_ERR_TIMEOUT || !w->self->is_chief))
        return fail("finishing");
    char missing[1024] = "";
    if (st != RF_OK)
        snprintf(missing, sizeof missing, "%s", rf_error_message());
    if (!w->self->is_chief) {
        printf("worker %d: done\n", w->self->index);
        if (w->metrics && rf_metrics_writer_summary(w->metrics, NAN) != RF_OK)
            return fail("--metrics_out");
        return 0;
    }
    double accuracy;
    if (evaluate(w, &accuracy) != RF_OK)
        return fail("evaluating the test set");
    printf("test accuracy: %.4f\n", accuracy);
    if (w->metrics && rf_metrics_writer_summary(w->metrics, accuracy) != RF_OK)
        return fail("--metrics_out");
    if (rf_monitored_session_shutdown_cluster(w->session) != RF_OK)
        return fail("shutting the cluster down");
    printf("chief: ps tasks shut down\n");
    if (missing[0]) {
        fprintf(stderr, PROG ": %s\n", missing);
        return 1;
    }
    return 0;
}

static void destroy_worker(worker *w)
{
    rf_monitored_session_destroy(w->session); /* before graph, executor */
    rf_metrics_writer_close(w->metrics);      /* after its hook */
    rf_executor_destroy(w->ex);
    rf_graph_destroy(w->g);
    rf_replica_device_setter_destroy(w->setter);
    rf_server_stop(w->server);
    rf_dataset_free(w->train);
    rf_dataset_free(w->test);
}

/* MonitoredTrainingSession(master=server.target, is_chief=...,
 * checkpoint_dir=..., hooks=[StopAtStepHook(last_step=...)]): the chief
 * restores the newest checkpoint or creates and initialises the variables
 * on the ps tasks, the others wait for that. */
static rf_status create_session(worker *w)
{
    rf_executor_options eo = {.threads = 0}; /* every CPU */
    rf_status st = rf_executor_create(&eo, &w->ex);
    if (st != RF_OK)
        return st;
    rf_monitored_session_options mo;
    rf_monitored_session_options_init(&mo); /* apply=ps: the ps runs Adagrad */
    mo.session.train_op = w->train_op;
    mo.session.global_step = w->global_step;
    mo.checkpoint_dir = w->f->checkpoint_dir;
    mo.save_checkpoint_steps = w->f->save_checkpoint_steps;
    mo.examples_per_step = w->f->batch_size;
    mo.log_step_count_steps = LOG_EVERY;
    rf_hook *hooks[2] = {NULL, NULL};
    st = rf_stop_at_step_hook_create(0, w->f->train_steps, &hooks[0]);
    /* --metrics_out: a JSON line every 100 steps (loss, batch accuracy,
     * examples/s, bytes) through MetricsHook, a summary at the end */
    if (st == RF_OK)
        st = open_metrics(w->f, w->self, &w->metrics);
    if (st == RF_OK && w->metrics)
        st =
            rf_metrics_hook_create(w->metrics, w->loss, w->accuracy, &hooks[1]);
    if (st != RF_OK) {
        rf_hook_destroy(hooks[0]);
        return st;
    }
    mo.hooks = hooks; /* the session owns them now */
    mo.num_hooks = w->metrics ? 2 : 1;
    return rf_monitored_session_create(w->server, w->g, w->ex, &mo,
                                       &w->session);
}

/* The chief makes (or checks) --checkpoint_dir before any work
 * (rf_monitored_session_check_checkpoint_dir): a file, a FIFO or an
 * unwritable place is a usage error now, not a failure after loading the
 * data and waiting for the ps tasks. */
static int check_checkpoint_dir(const flags *f, const rf_cluster_task *self)
{
    if (!self->is_chief || !f->checkpoint_dir)
        return 0;
    if (rf_monitored_session_check_checkpoint_dir(f->checkpoint_dir) != RF_OK)
        return usage_error("--checkpoint_dir: %s", rf_error_message());
    return 0;
}

static int run_worker(const flags *f, const rf_cluster *cluster)
{
    worker w = {.f = f, .cluster = cluster, .self = rf_cluster_self(cluster)};
    int rc = check_checkpoint_dir(f, w.self);
    if (rc != 0)
        return rc;
    rc = 1;
    rf_server_options so = {.cluster_secret_file = f->cluster_secret_file,
                            .require_secret = f->require_secret};
    if (rf_server_start(cluster, &so, &w.server) != RF_OK)
        rc = fail("starting the server");
    else if (load_data(&w) != RF_OK)
        rc = fail("loading Fashion-MNIST (--data_dir)");
    else if (build_graph(&w, (int64_t)rf_dataset_example_dim(w.train),
                         rf_dataset_num_classes(w.train)) != RF_OK)
        rc = fail("building the graph");
    else if (create_session(&w) != RF_OK)
        rc = fail("creating the session");
    else if (train(&w) != RF_OK)
        rc = fail("training");
    else
        rc = finish(&w);
    destroy_worker(&w);
    return rc;
}

int main(int argc, char **argv)
{
    /* A malformed RF_LOG_LEVEL (or an RF_LOG_FILE that cannot be opened)
     * is a usage error, before anything runs. */
    if (rf_log_env_check() != RF_OK) {
        fprintf(stderr, "rf-example-trainer: %s\n", rf_error_message());
        return 2;
    }
    flags f;
    int rc = parse_flags(argc, argv, &f);
    if (rc == 3)
        printf(PROG " (rdmaflow) %s\n", rf_version());
    if (rc)
        return rc == 2 ? 2 : 0;
    rf_cluster *cluster;
    rf_status st = rf_cluster_resolve_env(&f.cluster, NULL, &cluster);
    if (st != RF_OK) {
        fprintf(stderr, PROG ": %s\n", rf_error_message());
        return st == RF_ERR_INVALID_ARG ? 2 : 1;
    }
    if (!cluster)
        return usage_error("no cluster: give --ps_hosts, --worker_hosts, "
                           "--job_name and --task_index, or TF_CONFIG");
    /* an output that cannot be written fails now, before any work */
    if (f.metrics_out && rf_metrics_check_output(f.metrics_out) != RF_OK) {
        rc = usage_error("--metrics_out: %s", rf_error_message());
        rf_cluster_destroy(cluster);
        return rc;
    }
    const char *job = rf_cluster_self(cluster)->job;
    if (!strcmp(job, "ps"))
        rc = run_ps(&f, cluster);
    else if (!strcmp(job, "worker") || !strcmp(job, "chief"))
        rc = run_worker(&f, cluster);
    else
        /* TF_CONFIG's "evaluator" task: evaluating the chief's
         * checkpoints is rf-trainer's (tools/trainer/dist_eval.c); this
         * example keeps to the four classic processes. */
        rc = usage_error("this task is the %s (%s): the example trainer runs "
                         "ps and worker tasks only; rf-trainer "
                         "--job_name=evaluator evaluates the chief's "
                         "checkpoints",
                         job, f.cluster.job_name ? "--job_name" : "TF_CONFIG");
    rf_cluster_destroy(cluster);
    return rc;
}
