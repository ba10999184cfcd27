/* rdmaflow/ctr_data.h: a synthetic click-through data set generated from a
 * seed (no files), for training embedding tables, and the metrics that go
 * with it (exact ROC AUC, log loss).
 *
 * An example has num_cat categorical ids (feature f's id in [0, vocab[f]),
 * vocabularies of 1 to 10^9), num_dense float features and a 0/1 label.
 * Each id is a Zipf rank r (P(r) proportional to (r + 1)^-zipf[f], r = 0 the
 * most frequent; drawn by Hoermann and Derflinger's rejection-inversion, so
 * O(1) per draw with no table) mapped to an id by a fixed bijection of
 * [0, vocab) (an affine map r * a + b mod vocab with gcd(a, vocab) = 1, a
 * and b from the seed), so that frequent ids are spread over the table and
 * over any "id mod P" partition. Dense features are independent N(0, 1).
 *
 * The label comes from a hidden logistic model:
 *   logit = bias + sum_f w_f(id_f) + sum_j u_j x_j,  label ~ Bernoulli(p),
 *   p = sigmoid(logit),
 * where w_f(id) = scale(rank) * g(seed, f, id), g a standard Gaussian drawn
 * from a hash of its arguments, and u_j = dense_scale * g(seed, "dense", j).
 * scale(rank) is cat_scale for the head (rank < head) and tail_scale for the
 * rest. Why: a weight can only be learned from the training set if its id
 * occurs often enough there. With the defaults (zipf 1.1, head 200, 10^6
 * training examples) the rarest head id of the largest vocabulary still
 * occurs about 300 times, so its weight is estimable to about +-0.15
 * against cat_scale 0.5, while the head carries 50 to 85 % of each
 * feature's draws; the tail's weights (which a model cannot learn: most
 * tail ids are seen once or never) get tail_scale 0.05, under 1 % of the
 * logit's variance. The model is additive in the features, so a
 * wide-and-deep model (whose wide part alone can represent it) trained on
 * ~10^6 examples can come within 0.01 of the hidden model's AUC: a plain
 * logistic model on one-hot ids (Adagrad, one pass over the default's 10^6
 * training examples) reaches 0.766 against the hidden 0.7725 on the test
 * split, 0.749 from 10^5 examples (tests/unit/data/test_ctr_learnable.c
 * checks the 0.01). The bias -1.5 puts the click rate near 0.25 (0.259
 * on the default's test split; rf-ctr-data prints a spec's actual rate,
 * tests/unit/data/test_ctr.c bounds the default's).
 *
 * Example i of a split is a pure function of (spec, split, i): its draws
 * come from the project's generator (xoshiro256** seeded by splitmix64,
 * graph/data/rng.h) seeded with (seed, stream 2 * i + split), so any worker
 * generates any example, in any order, without files, and the two splits'
 * streams are disjoint. The Bayes-optimal score of an example is its p, so
 * the hidden model's AUC and log loss (rf_ctr_hidden_auc) are the best a
 * model can reach.
 *
 * Nothing here keeps state: every function may be called from any thread.
 * Each call checks the spec and sets up its samplers, so rf_ctr_batch (one
 * set-up per batch) is the way to make many examples. */
#ifndef RDMAFLOW_CTR_DATA_H
#define RDMAFLOW_CTR_DATA_H

#include "rdmaflow/api.h"

#include <stddef.h>
#include <stdint.h>

#include "rdmaflow/data.h"
#include "rdmaflow/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RF_CTR_MAX_CAT   32
#define RF_CTR_MAX_DENSE 64
#define RF_CTR_MAX_VOCAB 1000000000LL
#define RF_CTR_MAX_SIZE  (1ULL << 40) /* examples per split */

typedef struct rf_ctr_spec {
    uint64_t seed;
    uint32_t num_cat;               /* categorical features, <= MAX_CAT */
    int64_t vocab[RF_CTR_MAX_CAT];  /* 1 .. RF_CTR_MAX_VOCAB */
    double zipf[RF_CTR_MAX_CAT];    /* Zipf exponent, (0, 10] */
    uint32_t num_dense;             /* dense features, <= MAX_DENSE */
    int64_t head;                   /* ranks < head get cat_scale, >= 0 */
    double cat_scale;               /* head weights' standard deviation */
    double tail_scale;              /* tail weights' standard deviation */
    double dense_scale;             /* dense weights' standard deviation */
    double bias;                    /* the logit's constant */
    uint64_t train_size, test_size; /* examples, 1 .. RF_CTR_MAX_SIZE */
} rf_ctr_spec;

/* The default: seed 1; 8 categorical features with vocabularies 10^3,
 * 10^4, 10^5, 10^6, 10^7, 10^3, 10^5, 10^9, all with Zipf exponent 1.1; 4
 * dense features; head 200, cat_scale 0.5, tail_scale 0.05, dense_scale
 * 0.5, bias -1.5; 10^6 training and 10^5 test examples. */
RF_API void rf_ctr_spec_default(rf_ctr_spec *spec);

/* Parses a compact spec, for a command-line flag: fields separated by ';',
 * each NAME=VALUE, over the default (fields not named keep the default's
 * value), e.g. "vocab=1000,10000,1e7;zipf=1.1;dense=4;seed=7". Names:
 *   vocab=V,V,...  the vocabularies (sets num_cat); integers or 1eN forms
 *   zipf=Z[,Z...]  one exponent for all features or one per feature
 *   dense=N  seed=N  head=N  train=N  test=N  (integers; sizes as 1eN too)
 *   scale=X  tail=X  dense_scale=X  bias=X  (reals)
 * An empty text is the default. On error *spec is unchanged and the status
 * is RF_ERR_INVALID_ARG with a message naming the field and the problem. */
RF_API rf_status rf_ctr_spec_parse(const char *text, rf_ctr_spec *spec);

/* RF_OK if every field is in its range, else RF_ERR_INVALID_ARG naming
 * the field. Every function below checks its spec this way. */
RF_API rf_status rf_ctr_spec_check(const rf_ctr_spec *spec);

/* Writes spec in the form rf_ctr_spec_parse reads (every field, so that
 * parsing it gives spec back; reals in the fewest of 15 to 17 significant
 * digits that read back exactly) to buf. RF_ERR_INVALID_ARG if it does not fit
 * in size bytes (1024 always do). */
RF_API rf_status rf_ctr_spec_format(const rf_ctr_spec *spec, char *buf,
                                    size_t size);

/* Examples in split (train_size or test_size). */
RF_API uint64_t rf_ctr_split_size(const rf_ctr_spec *spec, rf_data_split split);

/* Example i < split size: ids[num_cat], dense[num_dense] (may be NULL if
 * num_dense is 0), *label 0 or 1; p_true (may be NULL) gets the hidden
 * model's probability of a click. */
RF_API rf_status rf_ctr_example(const rf_ctr_spec *spec, rf_data_split split,
                                uint64_t i, int64_t *ids, float *dense,
                                float *label, double *p_true);

/* Fills a batch of shard shard_index of num_shards: row j is example
 * ((step * batch + j) * num_shards + shard_index) mod the split size, so
 * the shards of one step take disjoint examples and, while
 * step * batch * num_shards stays below the split size, the shards
 * partition the split. ids_out is [batch, num_cat] row-major, dense_out
 * [batch, num_dense] (may be NULL if num_dense is 0), labels_out [batch],
 * p_out [batch] (may be NULL) the hidden probabilities. */
RF_API rf_status rf_ctr_batch(const rf_ctr_spec *spec, rf_data_split split,
                              uint32_t shard_index, uint32_t num_shards,
                              uint64_t step, size_t batch, int64_t *ids_out,
                              float *dense_out, float *labels_out,
                              double *p_out);

/* The bijection of feature f: the id of Zipf rank `rank` (0-based) and the
 * rank of an id, both in [0, vocab[f]). RF_ERR_INVALID_ARG outside. */
RF_API rf_status rf_ctr_rank_to_id(const rf_ctr_spec *spec, uint32_t f,
                                   int64_t rank, int64_t *id);
RF_API rf_status rf_ctr_id_to_rank(const rf_ctr_spec *spec, uint32_t f,
                                   int64_t id, int64_t *rank);

/* The hidden model's weight of feature f's id (w_f above). */
RF_API rf_status rf_ctr_weight(const rf_ctr_spec *spec, uint32_t f, int64_t id,
                               double *w);

/* The hidden model's AUC and log loss (rf_auc and rf_log_loss with eps
 * 1e-7, over the p_true rounded to float) on the first n examples of split:
 * the best figures a model can reach there. Either output may be NULL.
 * RF_ERR_INVALID_ARG if n exceeds the split or the n labels are one class. */
RF_API rf_status rf_ctr_hidden_auc(const rf_ctr_spec *spec, rf_data_split split,
                                   uint64_t n, double *auc, double *logloss);

/* Exact ROC AUC of scores against 0/1 labels: the probability that a
 * random positive scores above a random negative, ties counting half (the
 * Mann-Whitney U statistic over n_pos * n_neg), by sorting, O(n log n).
 * RF_ERR_INVALID_ARG if a label is not 0 or 1 or the labels are one class
 * (the AUC is undefined), RF_ERR_NUMERIC for a NaN score. */
RF_API rf_status rf_auc(const float *scores, const float *labels, size_t n,
                        double *auc);

/* Mean binary cross-entropy -(y log q + (1 - y) log(1 - q)) with q = p
 * clipped to [eps, 1 - eps] (scikit-learn's log_loss convention;
 * TensorFlow's tf.losses.log_loss adds eps inside the logs instead, which
 * differs by O(eps)). 0 <= eps < 0.5; labels 0 or 1 (RF_ERR_INVALID_ARG
 * otherwise, or for n = 0); RF_ERR_NUMERIC for a NaN p or, with eps 0, an
 * infinite loss (p = 0 with label 1, or p = 1 with label 0). */
RF_API rf_status rf_log_loss(const float *p, const float *labels, size_t n,
                             double eps, double *out);

#ifdef __cplusplus
}
#endif
#endif
