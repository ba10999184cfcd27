/* tests/unit/data/test_ctr.c: the synthetic click-through data set
 * (rdmaflow/ctr_data.h) and its metrics: examples as pure functions of
 * (spec, split, i), shards partitioning a split, disjoint splits, ids in
 * range for vocabularies 1 to 10^9, the Zipf sampler against the exact pmf
 * (and a wrong exponent refused by the same bound), the rank-to-id
 * bijection, AUC and log loss against hand-computed and brute-force
 * references, the hidden model's figures, spec parsing and its errors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/data/rng.h"
#include "graph/data/zipf.h"
#include "rdmaflow/ctr_data.h"
#include "tests/common/budget.h"
#include "tests/common/check.h"

static rf_ctr_spec small_spec(void)
{
    rf_ctr_spec s;
    CHECK_OK(rf_ctr_spec_parse("vocab=1000,1e5,1e9;dense=3;seed=11;"
                               "train=1000;test=500",
                               &s));
    return s;
}

typedef struct ex {
    int64_t ids[RF_CTR_MAX_CAT];
    float dense[RF_CTR_MAX_DENSE];
    float label;
    double p;
} ex;

static ex get(const rf_ctr_spec *s, rf_data_split split, uint64_t i)
{
    ex e;
    memset(&e, 0, sizeof e);
    CHECK_OK(rf_ctr_example(s, split, i, e.ids, e.dense, &e.label, &e.p));
    return e;
}

static int same(const ex *a, const ex *b, const rf_ctr_spec *s)
{
    return memcmp(a->ids, b->ids, s->num_cat * sizeof a->ids[0]) == 0 &&
           memcmp(a->dense, b->dense, s->num_dense * sizeof a->dense[0]) == 0 &&
           a->label == b->label && a->p == b->p;
}

/* The same example whatever the order of the calls; batches agree with
 * single examples. */
static void test_determinism(void)
{
    rf_ctr_spec s = small_spec();
    enum { N = 300 };
    static ex fwd[N];
    for (uint64_t i = 0; i < N; i++)
        fwd[i] = get(&s, RF_DATA_TRAIN, i);
    for (uint64_t i = N; i-- > 0;) {
        ex e = get(&s, RF_DATA_TRAIN, i);
        CHECK(same(&e, &fwd[i], &s), "example %llu differs in reverse order",
              (unsigned long long)i);
    }
    /* Not constant: examples differ from one another. */
    int differ = 0;
    for (uint64_t i = 1; i < N; i++)
        differ += !same(&fwd[i], &fwd[0], &s);
    CHECK(differ == N - 1, "%d of %d examples differ from example 0", differ,
          N - 1);

    int64_t ids[7 * 3];
    float dense[7 * 3], labels[7];
    double p[7];
    CHECK_OK(
        rf_ctr_batch(&s, RF_DATA_TRAIN, 2, 5, 3, 7, ids, dense, labels, p));
    for (size_t j = 0; j < 7; j++) {
        uint64_t i = ((3 * 7 + j) * 5 + 2) % s.train_size;
        ex e = get(&s, RF_DATA_TRAIN, i);
        CHECK(memcmp(ids + 3 * j, e.ids, 3 * sizeof ids[0]) == 0 &&
                  memcmp(dense + 3 * j, e.dense, 3 * sizeof dense[0]) == 0 &&
                  labels[j] == e.label && p[j] == e.p,
              "batch row %zu is not example %llu", j, (unsigned long long)i);
    }
    /* A different seed gives different data. */
    rf_ctr_spec t = s;
    t.seed++;
    ex a = get(&s, RF_DATA_TRAIN, 0), b = get(&t, RF_DATA_TRAIN, 0);
    CHECK(!same(&a, &b, &s), "seeds %llu and %llu give the same example 0",
          (unsigned long long)s.seed, (unsigned long long)t.seed);
}

/* 4 shards, batch 10, 25 steps: 1000 examples, each of the split's once;
 * step 25 wraps to the start. */
static void test_shards_partition(void)
{
    rf_ctr_spec s = small_spec();
    static ex all[1000];
    for (uint64_t i = 0; i < 1000; i++)
        all[i] = get(&s, RF_DATA_TRAIN, i);
    static int seen[1000];
    memset(seen, 0, sizeof seen);
    int64_t ids[10 * 3];
    float dense[10 * 3], labels[10];
    for (uint32_t shard = 0; shard < 4; shard++)
        for (uint64_t step = 0; step < 26; step++) {
            CHECK_OK(rf_ctr_batch(&s, RF_DATA_TRAIN, shard, 4, step, 10, ids,
                                  dense, labels, NULL));
            for (int j = 0; j < 10; j++) {
                /* which example is this row? its ids and dense match one */
                int found = -1;
                for (int i = 0; i < 1000 && found < 0; i++)
                    if (memcmp(all[i].ids, ids + 3 * j, 3 * sizeof ids[0]) ==
                            0 &&
                        memcmp(all[i].dense, dense + 3 * j,
                               3 * sizeof dense[0]) == 0)
                        found = i;
                CHECK(found >= 0, "shard %u step %llu row %d is no example",
                      shard, (unsigned long long)step, j);
                if (step < 25)
                    seen[found]++;
                else
                    CHECK(found == (int)(j * 4 + shard),
                          "step 25 does not wrap: row %d is example %d", j,
                          found);
            }
        }
    for (int i = 0; i < 1000; i++)
        CHECK(seen[i] == 1, "example %d taken %d times by the shards", i,
              seen[i]);
    CHECK_ST(
        rf_ctr_batch(&s, RF_DATA_TRAIN, 4, 4, 0, 10, ids, dense, labels, NULL),
        RF_ERR_INVALID_ARG);
    CHECK_ST(
        rf_ctr_batch(&s, RF_DATA_TRAIN, 0, 1, 0, 0, ids, dense, labels, NULL),
        RF_ERR_INVALID_ARG);
}

/* No test example repeats a training example. */
static void test_splits_disjoint(void)
{
    rf_ctr_spec s = small_spec();
    static ex tr[500];
    for (uint64_t i = 0; i < 500; i++)
        tr[i] = get(&s, RF_DATA_TRAIN, i);
    for (uint64_t i = 0; i < 500; i++) {
        ex e = get(&s, RF_DATA_TEST, i);
        for (int k = 0; k < 500; k++)
            CHECK(memcmp(e.dense, tr[k].dense, 3 * sizeof e.dense[0]) != 0,
                  "test example %llu repeats train example %d",
                  (unsigned long long)i, k);
    }
    float label;
    int64_t ids[3];
    float dense[3];
    CHECK_ST(rf_ctr_example(&s, RF_DATA_TEST, 500, ids, dense, &label, NULL),
             RF_ERR_INVALID_ARG);
    CHECK_MSG("500");
    CHECK_ST(rf_ctr_example(&s, (rf_data_split)2, 0, ids, dense, &label, NULL),
             RF_ERR_INVALID_ARG);
}

static void test_id_range(void)
{
    rf_ctr_spec s;
    CHECK_OK(rf_ctr_spec_parse("vocab=1,2,1e3,1e4,1e5,1e6,1e7,1e8,1e9,"
                               "999999937;zipf=0.5,1,1.1,2,0.3,1,1.1,0.8,0.5,"
                               "1.5;dense=0;train=20000",
                               &s));
    int64_t max_seen[10] = {0};
    for (uint64_t i = 0; i < 20000; i++) {
        int64_t ids[10];
        float label;
        double p;
        CHECK_OK(rf_ctr_example(&s, RF_DATA_TRAIN, i, ids, NULL, &label, &p));
        CHECK(label == 0.0f || label == 1.0f, "label %g", (double)label);
        CHECK(p > 0 && p < 1, "p %g", p);
        for (int f = 0; f < 10; f++) {
            CHECK(ids[f] >= 0 && ids[f] < s.vocab[f],
                  "feature %d: id %lld outside [0, %lld)", f, (long long)ids[f],
                  (long long)s.vocab[f]);
            if (ids[f] > max_seen[f])
                max_seen[f] = ids[f];
        }
    }
    /* the ids are spread: the largest seen is in the upper half */
    for (int f = 1; f < 10; f++)
        CHECK(max_seen[f] >= s.vocab[f] / 2,
              "feature %d: largest id %lld of %lld", f, (long long)max_seen[f],
              (long long)s.vocab[f]);
}

/* Chi-square of 4 10^6 draws against the exact pmf of (n, s_true), binned
 * as ranks 0..49 one by one, 50..999, 1000..n-1. */
static double zipf_chi2(int64_t n, double s_draw, double s_true, uint64_t seed,
                        int *df)
{
    enum { DRAWS = 4000000, NB = 52 };
    rf_zipf z;
    CHECK_OK(zipf_init(&z, n, s_draw));
    double count[NB] = {0};
    rf_rng r;
    rng_init(&r, seed, 0);
    for (int i = 0; i < DRAWS; i++) {
        int64_t k = zipf_draw(&z, &r);
        CHECK(k >= 0 && k < n, "rank %lld of %lld", (long long)k, (long long)n);
        count[k < 50 ? k : k < 1000 ? 50 : 51] += 1;
    }
    long double norm = 0, prob[NB] = {0};
    for (int64_t k = n; k-- > 0;) { /* smallest terms first */
        long double t = powl((long double)(k + 1), -(long double)s_true);
        norm += t;
        prob[k < 50 ? k : k < 1000 ? 50 : 51] += t;
    }
    double chi2 = 0;
    *df = -1;
    for (int b = 0; b < NB; b++) {
        double e = (double)(prob[b] / norm) * DRAWS;
        if (e < 5) /* too few expected for the statistic: fold in */
            continue;
        chi2 += (count[b] - e) * (count[b] - e) / e;
        ++*df;
    }
    return chi2;
}

static void test_zipf_pmf(void)
{
    const double exps[] = {0.5, 1.0, 1.1, 2.0};
    for (size_t k = 0; k < sizeof exps / sizeof exps[0]; k++) {
        double s = exps[k];
        int df;
        /* far in the tail of chi-square(df): a right sampler fails it with
         * probability below 10^-6, a sampler off by 0.03 in the
         * exponent (or by one in the rank) every time */
        double chi2 = zipf_chi2(100000, s, s, 100 + k, &df);
        double bound = df + 7.0 * sqrt(2.0 * df);
        rft_note("zipf n=1e5 s=%g: chi2 %.1f on %d dof (bound %.1f)", s, chi2,
                 df, bound);
        CHECK(chi2 < bound, "s=%g: chi2 %.1f >= %.1f", s, chi2, bound);
        double wrong = zipf_chi2(100000, s + 0.03, s, 200 + k, &df);
        CHECK(wrong > bound,
              "s=%g: draws with exponent %g pass as %g (chi2 %.1f < %.1f)", s,
              s + 0.03, s, wrong, bound);
    }
    /* 10^9 ranks: the top 20's proportions, given their total, are
     * (k + 1)^-s normalised over them (no normalisation over 10^9 terms) */
    rf_zipf z;
    CHECK_OK(zipf_init(&z, 1000000000, 1.1));
    rf_rng r;
    rng_init(&r, 5, 5);
    double c[20] = {0}, total = 0;
    int64_t maxk = 0;
    for (int i = 0; i < 1000000; i++) {
        int64_t k = zipf_draw(&z, &r);
        CHECK(k >= 0 && k < 1000000000, "rank %lld", (long long)k);
        if (k > maxk)
            maxk = k;
        if (k < 20)
            c[k] += 1, total += 1;
    }
    double norm = 0, chi2 = 0;
    for (int k = 0; k < 20; k++)
        norm += pow(k + 1, -1.1);
    for (int k = 0; k < 20; k++) {
        double e = total * pow(k + 1, -1.1) / norm;
        chi2 += (c[k] - e) * (c[k] - e) / e;
    }
    CHECK(chi2 < 19 + 7 * sqrt(38), "1e9 ranks: top-20 chi2 %.1f", chi2);
    /* P(rank >= 10^7) is about 0.2 at s = 1.1: the far tail is reached */
    CHECK(maxk > 100000000, "1e9 ranks: largest rank drawn %lld",
          (long long)maxk);
    CHECK_ST(zipf_init(&z, 0, 1.1), RF_ERR_INVALID_ARG);
    CHECK_ST(zipf_init(&z, 10, 0), RF_ERR_INVALID_ARG);
    CHECK_ST(zipf_init(&z, 10, NAN), RF_ERR_INVALID_ARG);
}

/* Through the public API: feature 0's most frequent id (rank 0) occurs at
 * its pmf's rate. */
static void test_zipf_through_examples(void)
{
    rf_ctr_spec s;
    CHECK_OK(rf_ctr_spec_parse("vocab=1000;zipf=1.3;dense=0;train=40000", &s));
    int64_t top;
    CHECK_OK(rf_ctr_rank_to_id(&s, 0, 0, &top));
    double norm = 0;
    for (int k = 1000; k >= 1; k--)
        norm += pow(k, -1.3);
    double p0 = 1 / norm, hits = 0;
    for (uint64_t i = 0; i < 40000; i++) {
        int64_t id;
        float label;
        CHECK_OK(rf_ctr_example(&s, RF_DATA_TRAIN, i, &id, NULL, &label, NULL));
        hits += id == top;
    }
    double sd = sqrt(40000 * p0 * (1 - p0));
    CHECK(fabs(hits - 40000 * p0) < 6 * sd,
          "rank 0's id: %g draws, %g expected", hits, 40000 * p0);
}

static void test_bijection(void)
{
    const int64_t vocabs[] = {1, 2, 3, 997, 1000, 1024, 30030};
    for (size_t v = 0; v < sizeof vocabs / sizeof vocabs[0]; v++) {
        rf_ctr_spec s;
        rf_ctr_spec_default(&s);
        s.num_cat = 2;
        s.vocab[1] = vocabs[v];
        int64_t n = vocabs[v];
        char *hit = calloc((size_t)n, 1);
        CHECK_TRUE(hit != NULL);
        int64_t ident = 0;
        for (int64_t r = 0; r < n; r++) {
            int64_t id, back;
            CHECK_OK(rf_ctr_rank_to_id(&s, 1, r, &id));
            CHECK(id >= 0 && id < n, "vocab %lld: id %lld", (long long)n,
                  (long long)id);
            CHECK(!hit[id], "vocab %lld: id %lld twice", (long long)n,
                  (long long)id);
            hit[id] = 1;
            CHECK_OK(rf_ctr_id_to_rank(&s, 1, id, &back));
            CHECK(back == r, "vocab %lld: rank %lld -> id %lld -> rank %lld",
                  (long long)n, (long long)r, (long long)id, (long long)back);
            ident += id == r;
        }
        free(hit);
        if (n >= 997)
            CHECK(ident < n / 10, "vocab %lld: %lld ranks are their own id",
                  (long long)n, (long long)ident);
    }
    /* 10^9: round trips, and the top 64 ranks spread over the table and
     * over id mod 8 */
    rf_ctr_spec s;
    rf_ctr_spec_default(&s);
    uint32_t f = 7;
    CHECK_EQ_U64(s.vocab[f], 1000000000);
    int octants = 0, residues = 0;
    int oct[8] = {0}, res[8] = {0};
    for (int64_t r = 0; r < 64; r++) {
        int64_t id;
        CHECK_OK(rf_ctr_rank_to_id(&s, f, r, &id));
        oct[id / 125000000]++;
        res[id % 8]++;
    }
    for (int k = 0; k < 8; k++)
        octants += oct[k] > 0, residues += res[k] > 0;
    CHECK(octants >= 6 && residues >= 6,
          "top 64 ids: %d of 8 octants, %d of 8 residues mod 8", octants,
          residues);
    rf_rng r;
    rng_init(&r, 3, 3);
    for (int k = 0; k < 10000; k++) {
        int64_t rank = k == 0   ? 0
                       : k == 1 ? 999999999
                                : (int64_t)(rng_next(&r) % 1000000000);
        int64_t id, back;
        CHECK_OK(rf_ctr_rank_to_id(&s, f, rank, &id));
        CHECK(id >= 0 && id < 1000000000, "id %lld", (long long)id);
        CHECK_OK(rf_ctr_id_to_rank(&s, f, id, &back));
        CHECK(back == rank, "1e9: rank %lld -> %lld -> %lld", (long long)rank,
              (long long)id, (long long)back);
    }
    int64_t id;
    CHECK_ST(rf_ctr_rank_to_id(&s, f, 1000000000, &id), RF_ERR_INVALID_ARG);
    CHECK_ST(rf_ctr_rank_to_id(&s, 8, 0, &id), RF_ERR_INVALID_ARG);
    CHECK_ST(rf_ctr_id_to_rank(&s, f, -1, &id), RF_ERR_INVALID_ARG);
}

/* The brute-force definition: pairs, ties half. */
static double auc_pairs(const float *sc, const float *y, size_t n)
{
    double u = 0, pairs = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            if (y[i] == 1 && y[j] == 0) {
                pairs += 1;
                u += sc[i] > sc[j] ? 1 : sc[i] == sc[j] ? 0.5 : 0;
            }
    return u / pairs;
}

static void test_auc(void)
{
    double a;
    const float y[4] = {0, 0, 1, 1};
    const float up[4] = {0.1f, 0.2f, 0.8f, 0.9f};
    const float down[4] = {0.9f, 0.8f, 0.2f, 0.1f};
    const float tie[4] = {0.3f, 0.3f, 0.3f, 0.3f};
    CHECK_OK(rf_auc(up, y, 4, &a));
    CHECK(a == 1.0, "perfect: %g", a);
    CHECK_OK(rf_auc(down, y, 4, &a));
    CHECK(a == 0.0, "reversed: %g", a);
    CHECK_OK(rf_auc(tie, y, 4, &a));
    CHECK(a == 0.5, "all ties: %g", a);
    /* positives 0.4, 0.35, 0.8 against negatives 0.1, 0.4: 1 + 0.5 + 1 + 0
     * + 1 + 1 = 4.5 of 6 pairs */
    const float s5[5] = {0.1f, 0.4f, 0.4f, 0.35f, 0.8f};
    const float y5[5] = {0, 0, 1, 1, 1};
    CHECK_OK(rf_auc(s5, y5, 5, &a));
    CHECK(a == 0.75, "hand case: %g", a);

    enum { N = 700 };
    static float sc[N], yy[N];
    rf_rng r;
    rng_init(&r, 9, 9);
    for (int i = 0; i < N; i++) {
        yy[i] = (float)(rng_below(&r, 3) == 0);
        /* few distinct values, so many ties; informative about the label */
        sc[i] = (float)(rng_below(&r, 8) + 3 * (int)yy[i]) / 10.0f;
    }
    CHECK_OK(rf_auc(sc, yy, N, &a));
    double want = auc_pairs(sc, yy, N);
    CHECK(fabs(a - want) < 1e-12, "random ties: %.15g, pairs give %.15g", a,
          want);
    CHECK(a > 0.6 && a < 0.99, "random ties: %g", a);

    const float one[3] = {1, 1, 1};
    CHECK_ST(rf_auc(up, one, 3, &a), RF_ERR_INVALID_ARG);
    CHECK_MSG("both classes");
    const float half[2] = {0, 0.5f};
    CHECK_ST(rf_auc(up, half, 2, &a), RF_ERR_INVALID_ARG);
    const float nan_s[2] = {NAN, 0.5f};
    const float y2[2] = {0, 1};
    CHECK_ST(rf_auc(nan_s, y2, 2, &a), RF_ERR_NUMERIC);
}

static void test_log_loss(void)
{
    double l;
    const float p[2] = {0.9f, 0.2f}, y[2] = {1, 0};
    CHECK_OK(rf_log_loss(p, y, 2, 1e-7, &l));
    double want = -(log((double)0.9f) + log(1.0 - (double)0.2f)) / 2;
    CHECK(fabs(l - want) < 1e-12, "log loss %.15g, want %.15g", l, want);
    /* clipping: a certain wrong answer costs -ln(eps) */
    const float pc[2] = {0.0f, 1.0f};
    CHECK_OK(rf_log_loss(pc, y, 2, 1e-7, &l));
    CHECK(fabs(l - (-log(1e-7))) < 1e-9, "clipped: %g", l);
    CHECK_OK(rf_log_loss(pc, (const float[]){0, 1}, 2, 0, &l));
    CHECK(l == 0, "certain and right: %g", l);
    CHECK_ST(rf_log_loss(pc, y, 2, 0, &l), RF_ERR_NUMERIC);
    CHECK_ST(rf_log_loss(p, y, 2, 0.5, &l), RF_ERR_INVALID_ARG);
    CHECK_ST(rf_log_loss(p, y, 0, 1e-7, &l), RF_ERR_INVALID_ARG);
    CHECK_ST(rf_log_loss(p, (const float[]){2, 0}, 2, 1e-7, &l),
             RF_ERR_INVALID_ARG);
}

/* The default spec's hidden model on 20000 test examples: its AUC and log
 * loss are rf_auc and rf_log_loss over the examples' p; it beats the base
 * rate and a model that knows only the dense features' part. */
static void test_hidden_model(void)
{
    rf_ctr_spec s;
    rf_ctr_spec_default(&s);
    enum { N = 20000 };
    static float p[N], y[N], dense_only[N];
    /* A weaker score: the dense features weighted by their covariance
     * with the true logit (so it knows nothing of the ids). */
    double u[RF_CTR_MAX_DENSE] = {0};
    double clicks = 0;
    for (uint64_t i = 0; i < N; i++) {
        ex e = get(&s, RF_DATA_TEST, i);
        p[i] = (float)e.p;
        y[i] = e.label;
        clicks += e.label;
        double logit = log(e.p / (1 - e.p));
        for (uint32_t j = 0; j < s.num_dense; j++)
            u[j] += logit * e.dense[j];
    }
    for (uint64_t i = 0; i < N; i++) {
        ex e = get(&s, RF_DATA_TEST, i);
        double d = 0;
        for (uint32_t j = 0; j < s.num_dense; j++)
            d += u[j] * e.dense[j];
        dense_only[i] = (float)d;
    }
    double auc, ll, want_auc, want_ll, dense_auc;
    CHECK_OK(rf_ctr_hidden_auc(&s, RF_DATA_TEST, N, &auc, &ll));
    CHECK_OK(rf_auc(p, y, N, &want_auc));
    CHECK_OK(rf_log_loss(p, y, N, 1e-7, &want_ll));
    CHECK(auc == want_auc && ll == want_ll,
          "hidden AUC %.12g / log loss %.12g, over p: %.12g / %.12g", auc, ll,
          want_auc, want_ll);
    double rate = clicks / N;
    double base = -(rate * log(rate) + (1 - rate) * log(1 - rate));
    CHECK_OK(rf_auc(dense_only, y, N, &dense_auc));
    rft_note("default spec: click rate %.4f, hidden AUC %.4f, log loss %.4f "
             "(base rate %.4f), dense-only AUC %.4f",
             rate, auc, ll, base, dense_auc);
    CHECK(rate > 0.15 && rate < 0.35, "click rate %g", rate);
    CHECK(auc > 0.5 && auc < 1, "hidden AUC %g", auc);
    CHECK(ll < base, "hidden log loss %g, base rate's %g", ll, base);
    CHECK(dense_auc > 0.5 && dense_auc < auc, "dense-only AUC %g, hidden %g",
          dense_auc, auc);
    /* with no signal at all the hidden AUC is near 0.5 */
    rf_ctr_spec flat = s;
    flat.cat_scale = flat.tail_scale = flat.dense_scale = 0;
    CHECK_OK(rf_ctr_hidden_auc(&flat, RF_DATA_TEST, N, &auc, NULL));
    CHECK(auc == 0.5, "no signal: hidden AUC %g (all p equal: 0.5)", auc);
    CHECK_ST(rf_ctr_hidden_auc(&s, RF_DATA_TEST, s.test_size + 1, &auc, &ll),
             RF_ERR_INVALID_ARG);
    /* the weights the header describes: head ids get the larger scale */
    double head2 = 0, tail2 = 0;
    for (int64_t r = 0; r < 200; r++) {
        int64_t id_h, id_t;
        double wh, wt;
        CHECK_OK(rf_ctr_rank_to_id(&s, 4, r, &id_h));
        CHECK_OK(rf_ctr_rank_to_id(&s, 4, 5000 + r, &id_t));
        CHECK_OK(rf_ctr_weight(&s, 4, id_h, &wh));
        CHECK_OK(rf_ctr_weight(&s, 4, id_t, &wt));
        head2 += wh * wh, tail2 += wt * wt;
    }
    CHECK(sqrt(head2 / 200) > 0.35 && sqrt(head2 / 200) < 0.65 &&
              sqrt(tail2 / 200) < 0.07,
          "weight rms: head %g, tail %g", sqrt(head2 / 200), sqrt(tail2 / 200));
}

static void bad_spec(const char *text, const char *needle)
{
    rf_ctr_spec s, before;
    memset(&s, 0x5a, sizeof s);
    before = s;
    CHECK(rf_ctr_spec_parse(text, &s) == RF_ERR_INVALID_ARG, "'%s' parsed",
          text);
    CHECK(strstr(rf_error_message(), needle) != NULL,
          "'%s': message '%s' lacks '%s'", text, rf_error_message(), needle);
    CHECK(memcmp(&s, &before, sizeof s) == 0, "'%s' changed the spec", text);
}

static void test_spec_parse(void)
{
    rf_ctr_spec s, d;
    rf_ctr_spec_default(&d);
    CHECK_OK(rf_ctr_spec_parse("", &s));
    CHECK(memcmp(&s, &d, sizeof s) == 0, "%s", "empty text is not the default");
    CHECK(d.num_cat == 8 && d.vocab[0] == 1000 && d.vocab[7] == 1000000000 &&
              d.num_dense == 4,
          "%s", "the default is not the documented one");

    CHECK_OK(
        rf_ctr_spec_parse("vocab=1000,10000,1e7;zipf=1.1;dense=4;seed=7", &s));
    CHECK(s.num_cat == 3 && s.vocab[0] == 1000 && s.vocab[1] == 10000 &&
              s.vocab[2] == 10000000 && s.zipf[0] == 1.1 && s.zipf[2] == 1.1 &&
              s.num_dense == 4 && s.seed == 7 && s.head == d.head &&
              s.train_size == d.train_size,
          "%s", "the brief's example parsed wrong");
    CHECK_OK(rf_ctr_spec_parse("vocab=5,6;zipf=0.5,2;head=3;scale=0.25;"
                               "tail=0;dense_scale=1.5;bias=-2;train=1e3;"
                               "test=77;seed=0xff;dense=0",
                               &s));
    CHECK(s.zipf[0] == 0.5 && s.zipf[1] == 2 && s.head == 3 &&
              s.cat_scale == 0.25 && s.tail_scale == 0 &&
              s.dense_scale == 1.5 && s.bias == -2 && s.train_size == 1000 &&
              s.test_size == 77 && s.seed == 255 && s.num_dense == 0,
          "%s", "every field parsed wrong");
    /* format, then parse, gives the spec back */
    char text[1024];
    const rf_ctr_spec *both[2] = {&s, &d};
    for (int k = 0; k < 2; k++) {
        rf_ctr_spec back;
        CHECK_OK(rf_ctr_spec_format(both[k], text, sizeof text));
        CHECK_OK(rf_ctr_spec_parse(text, &back));
        char again[1024];
        CHECK_OK(rf_ctr_spec_format(&back, again, sizeof again));
        CHECK(strcmp(text, again) == 0, "'%s' reads back as '%s'", text, again);
        ex a = get(both[k], RF_DATA_TEST, 3), b = get(&back, RF_DATA_TEST, 3);
        CHECK(same(&a, &b, both[k]), "'%s' reads back as other data", text);
    }
    CHECK_ST(rf_ctr_spec_format(&d, text, 20), RF_ERR_INVALID_ARG);

    bad_spec("vocab=0", "vocab");
    bad_spec("vocab=2e9", "vocab");
    bad_spec("vocab=1000,abc", "'abc'");
    bad_spec("vocab=1.5,1e3", "vocab: '1.5' is not an integer");
    bad_spec("zipf=0", "zipf");
    bad_spec("zipf=-1", "zipf");
    bad_spec("vocab=10,20,30;zipf=1,2", "2 exponents for 3");
    bad_spec("dense=65", "dense");
    bad_spec("dense=x", "dense");
    bad_spec("seed=-1", "seed");
    bad_spec("train=0", "train");
    bad_spec("test=1e13", "test");
    bad_spec("bias=nan", "bias");
    bad_spec("scale=-1", "scale");
    bad_spec("head=", "head");
    bad_spec("nonsense", "'nonsense' is not NAME=VALUE");
    bad_spec("colour=red", "unknown field 'colour'");
    bad_spec("seed=1;seed=2", "seed: given twice");
    bad_spec("vocab=;dense=0", "no categorical and no dense");
}

int main(void)
{
    rft_watchdog("unit.data.ctr", 120);
    test_determinism();
    test_shards_partition();
    test_splits_disjoint();
    test_id_range();
    test_zipf_pmf();
    test_zipf_through_examples();
    test_bijection();
    test_auc();
    test_log_loss();
    test_hidden_model();
    test_spec_parse();
    rft_note("unit.data.ctr: ok");
    return 0;
}
