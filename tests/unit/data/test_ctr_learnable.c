/* tests/unit/data/test_ctr_learnable.c: the default click-through spec is
 * learnable, as rdmaflow/ctr_data.h claims: a logistic model on one-hot
 * ids and the dense features (one weight per (feature, id) seen, Adagrad,
 * one pass over the 10^6 training examples) comes within 0.01 of the
 * hidden model's AUC on the 10^5 test examples, and a model trained on a
 * tenth of them does worse than the full one (so the bound measures
 * learning, not a property of any score). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/ctr_data.h"
#include "tests/common/budget.h"
#include "tests/common/check.h"

#define SLOTS (1u << 22) /* > 3x the distinct (feature, id) pairs */
#define BATCH 1000

typedef struct wide {
    int64_t *key; /* (feature << 32) ^ id; -1 empty */
    float *w, *g2;
    double dense_w[RF_CTR_MAX_DENSE], dense_g2[RF_CTR_MAX_DENSE];
    double bias, bias_g2;
} wide;

/* The slot of (f, id), inserted if absent and insert is set; SLOTS if
 * absent otherwise (linear probing). */
static size_t slot(wide *m, uint32_t f, int64_t id, int insert)
{
    int64_t key = (int64_t)f << 32 ^ id; /* ids < 2^30 */
    uint64_t h = (uint64_t)key * 0x9e3779b97f4a7c15u;
    for (size_t i = h >> 42;; i = (i + 1) & (SLOTS - 1)) {
        if (m->key[i] == key)
            return i;
        if (m->key[i] == -1) {
            if (!insert)
                return SLOTS;
            m->key[i] = key;
            return i;
        }
    }
}

static void adagrad(double *w, double *g2, double g, double lr)
{
    *g2 += g * g;
    *w -= lr * g / sqrt(*g2 + 1e-8);
}

static void train(wide *m, const rf_ctr_spec *s, uint64_t n)
{
    const double lr = 0.05;
    uint32_t F = s->num_cat, D = s->num_dense;
    int64_t *ids = malloc(BATCH * F * sizeof *ids);
    float *dense = malloc(BATCH * (D ? D : 1) * sizeof *dense);
    float *y = malloc(BATCH * sizeof *y);
    CHECK_TRUE(ids && dense && y);
    for (uint64_t step = 0; step < n / BATCH; step++) {
        CHECK_OK(rf_ctr_batch(s, RF_DATA_TRAIN, 0, 1, step, BATCH, ids, dense,
                              y, NULL));
        for (size_t j = 0; j < BATCH; j++) {
            size_t at[RF_CTR_MAX_CAT];
            double z = m->bias;
            for (uint32_t f = 0; f < F; f++) {
                at[f] = slot(m, f, ids[j * F + f], 1);
                z += m->w[at[f]];
            }
            for (uint32_t k = 0; k < D; k++)
                z += m->dense_w[k] * dense[j * D + k];
            double g = 1 / (1 + exp(-z)) - y[j]; /* d loss / d z */
            adagrad(&m->bias, &m->bias_g2, g, lr);
            for (uint32_t f = 0; f < F; f++) {
                double w = m->w[at[f]], g2 = m->g2[at[f]];
                adagrad(&w, &g2, g, lr);
                m->w[at[f]] = (float)w;
                m->g2[at[f]] = (float)g2;
            }
            for (uint32_t k = 0; k < D; k++)
                adagrad(&m->dense_w[k], &m->dense_g2[k], g * dense[j * D + k],
                        lr);
        }
    }
    free(ids);
    free(dense);
    free(y);
}

static double test_auc(wide *m, const rf_ctr_spec *s)
{
    size_t n = s->test_size;
    float *score = malloc(n * sizeof *score), *y = malloc(n * sizeof *y);
    CHECK_TRUE(score && y);
    for (size_t i = 0; i < n; i++) {
        int64_t ids[RF_CTR_MAX_CAT];
        float dense[RF_CTR_MAX_DENSE];
        CHECK_OK(rf_ctr_example(s, RF_DATA_TEST, i, ids, dense, &y[i], NULL));
        double z = m->bias;
        for (uint32_t f = 0; f < s->num_cat; f++) {
            size_t at = slot(m, f, ids[f], 0);
            z += at < SLOTS ? m->w[at] : 0;
        }
        for (uint32_t k = 0; k < s->num_dense; k++)
            z += m->dense_w[k] * dense[k];
        score[i] = (float)z;
    }
    double auc;
    CHECK_OK(rf_auc(score, y, n, &auc));
    free(score);
    free(y);
    return auc;
}

static double fit(const rf_ctr_spec *s, uint64_t n)
{
    wide m;
    memset(&m, 0, sizeof m);
    m.key = malloc(SLOTS * sizeof *m.key);
    m.w = calloc(SLOTS, sizeof *m.w);
    m.g2 = calloc(SLOTS, sizeof *m.g2);
    CHECK_TRUE(m.key && m.w && m.g2);
    memset(m.key, 0xff, SLOTS * sizeof *m.key);
    train(&m, s, n);
    double auc = test_auc(&m, s);
    free(m.key);
    free(m.w);
    free(m.g2);
    return auc;
}

int main(void)
{
    rft_watchdog("unit.data.ctr_learnable", 110);
    rf_ctr_spec s;
    rf_ctr_spec_default(&s);
    double hidden, full = fit(&s, s.train_size),
                   tenth = fit(&s, s.train_size / 10);
    CHECK_OK(rf_ctr_hidden_auc(&s, RF_DATA_TEST, s.test_size, &hidden, NULL));
    rft_note("hidden AUC %.4f; wide model on 10^6 examples %.4f, on 10^5 "
             "%.4f",
             hidden, full, tenth);
    CHECK(full > hidden - 0.01, "full: AUC %.4f, more than 0.01 below %.4f",
          full, hidden);
    CHECK(full < hidden + 0.005, "full: AUC %.4f above the Bayes %.4f", full,
          hidden);
    CHECK(tenth < full - 0.005, "a tenth of the data: AUC %.4f, full %.4f",
          tenth, full);
    return 0;
}
