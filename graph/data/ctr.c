/* graph/data/ctr.c: the synthetic click-through data set of
 * rdmaflow/ctr_data.h: examples as pure functions of (spec, split, i), the
 * shard batch filler, the rank-to-id bijections and the hidden logistic
 * model. The spec's text form is in ctr_spec.c, the metrics in metrics.c. */
#include <math.h>
#include <stdlib.h>

#include "graph/data/rng.h"
#include "graph/data/zipf.h"
#include "rdmaflow/ctr_data.h"

/* Tags that keep the hashes of different purposes apart. */
#define RF_TWO_PI 6.283185307179586476925286766559

enum { TAG_PERM = 1, TAG_WEIGHT = 2, TAG_DENSE = 3 };

/* A 64-bit hash of three words: splitmix64 chained over them. */
static uint64_t hash3(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t st = a;
    st = splitmix64(&st) ^ b;
    st = splitmix64(&st) ^ c;
    return splitmix64(&st);
}

/* A standard Gaussian determined by a hash (Box-Muller on two uniforms
 * taken from it). */
static double gauss_of(uint64_t key)
{
    uint64_t st = key;
    double u1 = (double)((splitmix64(&st) >> 11) + 1) * 0x1p-53; /* (0,1] */
    double u2 = (double)(splitmix64(&st) >> 11) * 0x1p-53;
    return sqrt(-2.0 * log(u1)) * cos(RF_TWO_PI * u2);
}

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* a^-1 mod m for gcd(a, m) = 1 (extended Euclid). */
static int64_t inverse_mod(int64_t a, int64_t m)
{
    int64_t r0 = m, r1 = a % m, t0 = 0, t1 = 1;
    while (r1) {
        int64_t q = r0 / r1, t;
        t = r0 - q * r1;
        r0 = r1;
        r1 = t;
        t = t0 - q * t1;
        t0 = t1;
        t1 = t;
    }
    return t0 < 0 ? t0 + m : t0 % m;
}

/* What every example of a spec shares, computed once per call. */
typedef struct ctr_prep {
    const rf_ctr_spec *spec;
    rf_zipf zipf[RF_CTR_MAX_CAT];
    int64_t mul[RF_CTR_MAX_CAT], add[RF_CTR_MAX_CAT], inv[RF_CTR_MAX_CAT];
    double u[RF_CTR_MAX_DENSE];
} ctr_prep;

static void perm_of(const rf_ctr_spec *spec, uint32_t f, int64_t *mul,
                    int64_t *add, int64_t *inv)
{
    int64_t v = spec->vocab[f];
    uint64_t key = hash3(spec->seed, TAG_PERM, f);
    int64_t a = 1;
    if (v > 2) { /* a in [2, v) coprime with v; v > 2 always has one */
        a = 2 + (int64_t)(key % (uint64_t)(v - 2));
        while (gcd64(a, v) != 1)
            a = a + 1 < v ? a + 1 : 2;
    }
    *mul = a;
    *add = (int64_t)(hash3(spec->seed, TAG_PERM, key) % (uint64_t)v);
    *inv = inverse_mod(a, v);
}

static rf_status prep_init(ctr_prep *p, const rf_ctr_spec *spec)
{
    rf_status st = rf_ctr_spec_check(spec);
    if (st != RF_OK)
        return st;
    p->spec = spec;
    for (uint32_t f = 0; f < spec->num_cat; f++) {
        st = zipf_init(&p->zipf[f], spec->vocab[f], spec->zipf[f]);
        if (st != RF_OK)
            return st;
        perm_of(spec, f, &p->mul[f], &p->add[f], &p->inv[f]);
    }
    for (uint32_t j = 0; j < spec->num_dense; j++)
        p->u[j] = spec->dense_scale * gauss_of(hash3(spec->seed, TAG_DENSE, j));
    return RF_OK;
}

/* rank * mul < vocab^2 <= 10^18 < 2^63. */
static int64_t to_id(const ctr_prep *p, uint32_t f, int64_t rank)
{
    return (rank * p->mul[f] + p->add[f]) % p->spec->vocab[f];
}

static int64_t to_rank(const ctr_prep *p, uint32_t f, int64_t id)
{
    int64_t v = p->spec->vocab[f];
    return ((id - p->add[f] + v) % v) * p->inv[f] % v;
}

static double weight(const rf_ctr_spec *spec, uint32_t f, int64_t rank,
                     int64_t id)
{
    double scale = rank < spec->head ? spec->cat_scale : spec->tail_scale;
    return scale * gauss_of(hash3(spec->seed, TAG_WEIGHT,
                                  ((uint64_t)f << 32) ^ (uint64_t)id));
}

uint64_t rf_ctr_split_size(const rf_ctr_spec *spec, rf_data_split split)
{
    return split == RF_DATA_TRAIN ? spec->train_size : spec->test_size;
}

static rf_status check_split(rf_data_split split)
{
    if (split != RF_DATA_TRAIN && split != RF_DATA_TEST)
        return rf_error_set(RF_ERR_INVALID_ARG, "ctr: unknown split %d",
                            (int)split);
    return RF_OK;
}

/* Example i, drawn in this order from stream 2 * i + split: each feature's
 * Zipf rank, the dense features in Box-Muller pairs, the label's uniform. */
static void example(const ctr_prep *p, rf_data_split split, uint64_t i,
                    int64_t *ids, float *dense, float *label, double *p_true)
{
    const rf_ctr_spec *spec = p->spec;
    rf_rng r;
    rng_init(&r, spec->seed, 2 * i + (uint64_t)split);
    double logit = spec->bias;
    for (uint32_t f = 0; f < spec->num_cat; f++) {
        int64_t rank = zipf_draw(&p->zipf[f], &r);
        int64_t id = to_id(p, f, rank);
        ids[f] = id;
        logit += weight(spec, f, rank, id);
    }
    for (uint32_t j = 0; j < spec->num_dense; j += 2) {
        double rad = sqrt(-2.0 * log(1.0 - rng_unit(&r)));
        double ang = RF_TWO_PI * rng_unit(&r);
        double x[2] = {rad * cos(ang), rad * sin(ang)};
        for (uint32_t k = 0; k < 2 && j + k < spec->num_dense; k++) {
            dense[j + k] = (float)x[k];
            logit += p->u[j + k] * (double)(float)x[k];
        }
    }
    double prob = 1.0 / (1.0 + exp(-logit));
    *label = rng_unit(&r) < prob ? 1.0f : 0.0f;
    if (p_true)
        *p_true = prob;
}

static rf_status check_outputs(const rf_ctr_spec *spec, const void *ids,
                               const void *dense, const void *label,
                               const char *who)
{
    if ((!ids && spec->num_cat > 0) || (!dense && spec->num_dense > 0) ||
        !label)
        return rf_error_set(RF_ERR_INVALID_ARG, "%s: a NULL output", who);
    return RF_OK;
}

rf_status rf_ctr_example(const rf_ctr_spec *spec, rf_data_split split,
                         uint64_t i, int64_t *ids, float *dense, float *label,
                         double *p_true)
{
    ctr_prep p;
    rf_status st = prep_init(&p, spec);
    if (st == RF_OK)
        st = check_split(split);
    if (st == RF_OK)
        st = check_outputs(spec, ids, dense, label, "rf_ctr_example");
    if (st != RF_OK)
        return st;
    uint64_t size = rf_ctr_split_size(spec, split);
    if (i >= size)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ctr_example: example %llu of a split of %llu",
                            (unsigned long long)i, (unsigned long long)size);
    example(&p, split, i, ids, dense, label, p_true);
    return RF_OK;
}

rf_status rf_ctr_batch(const rf_ctr_spec *spec, rf_data_split split,
                       uint32_t shard_index, uint32_t num_shards, uint64_t step,
                       size_t batch, int64_t *ids_out, float *dense_out,
                       float *labels_out, double *p_out)
{
    ctr_prep p;
    rf_status st = prep_init(&p, spec);
    if (st == RF_OK)
        st = check_split(split);
    if (st == RF_OK)
        st =
            check_outputs(spec, ids_out, dense_out, labels_out, "rf_ctr_batch");
    if (st != RF_OK)
        return st;
    if (num_shards == 0 || shard_index >= num_shards)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_ctr_batch: shard %u of %u",
                            shard_index, num_shards);
    if (batch == 0)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_ctr_batch: empty batch");
    unsigned __int128 size = rf_ctr_split_size(spec, split);
    for (size_t j = 0; j < batch; j++) {
        unsigned __int128 k =
            ((unsigned __int128)step * batch + j) * num_shards + shard_index;
        uint64_t i = (uint64_t)(k % size);
        example(&p, split, i, ids_out + j * spec->num_cat,
                dense_out ? dense_out + j * spec->num_dense : NULL,
                labels_out + j, p_out ? p_out + j : NULL);
    }
    return RF_OK;
}

static rf_status check_feature(const rf_ctr_spec *spec, uint32_t f, int64_t x,
                               const char *what, const char *who)
{
    if (f >= spec->num_cat)
        return rf_error_set(RF_ERR_INVALID_ARG, "%s: feature %u of %u", who, f,
                            spec->num_cat);
    if (x < 0 || x >= spec->vocab[f])
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: %s %lld is outside [0, %lld)", who, what,
                            (long long)x, (long long)spec->vocab[f]);
    return RF_OK;
}

rf_status rf_ctr_rank_to_id(const rf_ctr_spec *spec, uint32_t f, int64_t rank,
                            int64_t *id)
{
    ctr_prep p;
    rf_status st = prep_init(&p, spec);
    if (st == RF_OK)
        st = check_feature(spec, f, rank, "rank", "rf_ctr_rank_to_id");
    if (st == RF_OK)
        *id = to_id(&p, f, rank);
    return st;
}

rf_status rf_ctr_id_to_rank(const rf_ctr_spec *spec, uint32_t f, int64_t id,
                            int64_t *rank)
{
    ctr_prep p;
    rf_status st = prep_init(&p, spec);
    if (st == RF_OK)
        st = check_feature(spec, f, id, "id", "rf_ctr_id_to_rank");
    if (st == RF_OK)
        *rank = to_rank(&p, f, id);
    return st;
}

rf_status rf_ctr_weight(const rf_ctr_spec *spec, uint32_t f, int64_t id,
                        double *w)
{
    ctr_prep p;
    rf_status st = prep_init(&p, spec);
    if (st == RF_OK)
        st = check_feature(spec, f, id, "id", "rf_ctr_weight");
    if (st == RF_OK)
        *w = weight(spec, f, to_rank(&p, f, id), id);
    return st;
}

rf_status rf_ctr_hidden_auc(const rf_ctr_spec *spec, rf_data_split split,
                            uint64_t n, double *auc, double *logloss)
{
    ctr_prep p;
    rf_status st = prep_init(&p, spec);
    if (st == RF_OK)
        st = check_split(split);
    if (st != RF_OK)
        return st;
    if (n == 0 || n > rf_ctr_split_size(spec, split))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ctr_hidden_auc: %llu examples of a split of "
                            "%llu",
                            (unsigned long long)n,
                            (unsigned long long)rf_ctr_split_size(spec, split));
    float *score = malloc(n * sizeof *score);
    float *label = malloc(n * sizeof *label);
    if (!score || !label) {
        free(score);
        free(label);
        return rf_error_set(RF_ERR_NO_MEMORY,
                            "rf_ctr_hidden_auc: %llu examples",
                            (unsigned long long)n);
    }
    int64_t ids[RF_CTR_MAX_CAT];
    float dense[RF_CTR_MAX_DENSE];
    for (uint64_t i = 0; i < n; i++) {
        double prob;
        example(&p, split, i, ids, dense, &label[i], &prob);
        score[i] = (float)prob;
    }
    st = RF_OK;
    if (auc)
        st = rf_auc(score, label, n, auc);
    if (st == RF_OK && logloss)
        st = rf_log_loss(score, label, n, 1e-7, logloss);
    free(score);
    free(label);
    return st;
}
