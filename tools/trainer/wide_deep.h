/* tools/trainer/wide_deep.h: --model=wide_deep, a wide-and-deep
 * click-through model (TF's DNNLinearCombinedClassifier) on the synthetic
 * data of rdmaflow/ctr_data.h.
 *
 * Columns. Categorical feature f (ids in [0, vocab_f)) is an identity
 * column when vocab_f <= --hash_buckets N (bucket = id), else a hashed one
 * (categorical_column_with_hash_bucket's idea; TF hashes the id's string
 * with Fingerprint64, here the integer goes through splitmix64's
 * finalizer): bucket = mix(id) mod N with
 *   mix(z): z += 0x9e3779b97f4a7c15; z = (z ^ z >> 30) * 0xbf58476d1ce4e5b9;
 *           z = (z ^ z >> 27) * 0x94d049bb133111eb; z ^= z >> 31.
 * The dense features are numeric columns.
 *
 * Graph (TF's variable names):
 *   wide  = sum_f lookup(linear/linear_model/C<f>/weights [buckets_f, 1])
 *           + dense x linear/linear_model/dense/weights [num_dense, 1]
 *           + linear/linear_model/bias_weights [1]      (all zeros at first)
 *   deep  = concat(lookup(dnn/input_from_feature_columns/C<f>_embedding/
 *           embedding_weights [buckets_f, dim]) ..., dense) through
 *           dnn/hiddenlayer_<i> (relu) and dnn/logits (1 unit); embeddings
 *           truncated_normal(0, 1/sqrt(dim)) as embedding_column's
 *   logit = wide + deep, loss = mean sigmoid_cross_entropy_with_logits.
 * Every table is read with rf_embedding_lookup ("mod" over its parts when
 * --embedding_partitions P > 1: fixed_size_partitioner(P), or one part for a
 * table of fewer than P rows). The wide part's variables ("linear/...")
 * take the wide optimizer (f->optim), the deep part's (f->optim_deep),
 * each with its own apply_gradients, then global_step += 1. */
#ifndef RF_TRAINER_WIDE_DEEP_H
#define RF_TRAINER_WIDE_DEEP_H

#include <stdint.h>
#include <stdio.h>

#include "flags.h"
#include "rdmaflow/ctr_data.h"
#include "rdmaflow/session.h"
#include "train_graph.h"

typedef struct tr_wd_session {
    tr_session base; /* g, ex, logits [?, 1], loss, train_op, global_step */
    uint32_t num_cat, num_dense;
    int64_t buckets[RF_CTR_MAX_CAT]; /* table rows of each feature */
    bool hashed[RF_CTR_MAX_CAT];
    rf_node *ids[RF_CTR_MAX_CAT]; /* int64 [?], bucket ids */
    rf_node *dense;               /* float32 [?, num_dense] (NULL if none) */
    rf_node *labels;              /* float32 [?, 1] */
    rf_node *prob;                /* sigmoid(logits) [?, 1] */
    /* The tables' variables (their parts): graph variables
     * [table_first[k], table_end[k]) of each of the 2 num_cat tables. */
    size_t table_first[2 * RF_CTR_MAX_CAT], table_end[2 * RF_CTR_MAX_CAT];
    size_t num_tables;
} tr_wd_session;

/* P of the tables' partitioner: --embedding_partitions, else the ps count
 * (num_ps; 1 in local mode). */
int tr_wd_partitions(const tr_flags *f, int num_ps);

/* A feature's bucket of id (see above). */
int64_t tr_wd_bucket(int64_t id, int64_t vocab, int64_t buckets);

/* Builds the graph (seeded with f->seed), initializes the variables and
 * creates the executor; -1 with err on failure, nothing left allocated.
 * With setter (a distributed worker) the graph is built under
 * replica_device_setter; partitions is P of the tables' partitioner; the
 * tables and their optimizer slots are then left uninitialised (they live
 * on the ps as table shards: the chief's session writes their initial
 * rows there in chunks, so no worker touches a table's pages). */
int tr_wd_session_create(const tr_flags *f, rf_replica_device_setter *setter,
                         int partitions, tr_wd_session *s, char *err,
                         size_t errlen);
void tr_wd_session_destroy(tr_wd_session *s);

/* Host buffers for batches of up to cap examples: the ids as rf_ctr_batch
 * writes them, the bucket columns fed to the graph, dense and labels. */
typedef struct tr_wd_batch {
    size_t cap, n;
    int64_t *raw;          /* [cap, num_cat] */
    int64_t *cols;         /* [num_cat][cap] */
    float *dense, *labels; /* [cap, num_dense], [cap] */
    rf_tensor feeds[RF_CTR_MAX_CAT + 2];
    rf_node *feed_nodes[RF_CTR_MAX_CAT + 2];
    size_t nfeeds;
} tr_wd_batch;
int tr_wd_batch_init(const tr_wd_session *s, size_t cap, tr_wd_batch *b);
void tr_wd_batch_free(tr_wd_batch *b);
/* The graph's fed placeholders in the order a batch feeds them (the
 * bucket ids of each feature, dense if any, labels) into nodes
 * [RF_CTR_MAX_CAT + 2]; their number. */
size_t tr_wd_feed_nodes(const tr_wd_session *s, rf_node **nodes);
/* Fills b with rows [first, first + n) of the raw buffers already made
 * (hashing into columns) and sets the feeds for n rows. */
void tr_wd_batch_feed(const tr_flags *f, const tr_wd_session *s, tr_wd_batch *b,
                      size_t first, size_t n);

/* The test AUC and log loss of s's variables beside the hidden model's
 * (wide_deep_run.c), printed as "test AUC A (hidden model H), log loss L
 * (hidden HL) on N examples in S s". */
typedef struct tr_wd_eval {
    double auc, log_loss, hidden_auc, hidden_log_loss, seconds;
} tr_wd_eval;
int tr_wd_evaluate(const tr_flags *f, tr_wd_session *s, tr_wd_eval *ev,
                   char *err, size_t errlen);

/* The end of a local run and of the chief's: tr_wd_evaluate, the metrics
 * summary with the evaluation (metrics may be NULL) and --variables_out.
 * 0, or -1 with *what naming the step that failed ("evaluation",
 * "--metrics_out", "--variables_out") and err the reason. */
int tr_wd_finish(const tr_flags *f, tr_wd_session *s,
                 rf_metrics_writer *metrics, const char **what, char *err,
                 size_t errlen);

/* --model=wide_deep's worker task (dist_wide_deep.c); exit status. */
int tr_wd_run_worker(const tr_flags *f, rf_cluster *cluster, FILE *explain);

/* The local run of --model=wide_deep (and its --explain_only); exit
 * status. */
int tr_wd_run_local(const tr_flags *f, FILE *explain);

#endif
