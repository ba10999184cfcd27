/* tests/unit/data/test_dataset.c: the data pipeline's random numbers
 * (pinned to golden values, so shuffles are the same on every machine),
 * per-epoch shuffling, batching across epoch ends, seeking, and sharding,
 * on a synthetic IDX set whose pixels encode each example's index. */
#include <stdbool.h>

#include "fixtures.h"
#include "graph/data/rng.h"
#include "rdmaflow/data.h"

#define N   1000
#define DIM 4

/* Golden values computed once by an independent implementation (Python)
 * of the specification in graph/data/rng.h. splitmix64's first outputs
 * from 0 are also the published reference values. */
static void test_rng_golden(void)
{
    uint64_t s = 0;
    CHECK(splitmix64(&s) == 0xe220a8397b1dcdafu, "splitmix64 #1");
    CHECK(splitmix64(&s) == 0x6e789e6aa1b965f4u, "splitmix64 #2");

    rf_rng r;
    rng_init(&r, 42, 0);
    CHECK(rng_next(&r) == 0x1ff785474f113b15u, "xoshiro #1");
    CHECK(rng_next(&r) == 0x4b7867ceff5d8325u, "xoshiro #2");
    CHECK(rng_next(&r) == 0x90ca7a95a9909966u, "xoshiro #3");

    rng_init(&r, 42, 7);
    const uint32_t below[8] = {1, 8, 2, 3, 5, 6, 4, 6};
    for (int i = 0; i < 8; i++) {
        uint32_t v = rng_below(&r, 10);
        CHECK(v == below[i], "below(10) #%d = %u", i, v);
    }

    uint32_t a[10], want[10] = {2, 0, 1, 3, 7, 4, 9, 8, 5, 6};
    for (uint32_t i = 0; i < 10; i++)
        a[i] = i;
    rng_init(&r, 2024, 3);
    rng_shuffle(&r, a, 10);
    CHECK(memcmp(a, want, sizeof a) == 0, "shuffle(10) of seed 2024 stream 3");

    /* Bounds and a rough uniformity check. */
    rng_init(&r, 7, 7);
    unsigned hist[7] = {0};
    for (int i = 0; i < 70000; i++) {
        uint32_t v = rng_below(&r, 7);
        CHECK(v < 7, "below(7) = %u", v);
        if (v < 7)
            hist[v]++;
    }
    for (int i = 0; i < 7; i++)
        CHECK(hist[i] > 9500 && hist[i] < 10500, "bucket %d: %u", i, hist[i]);
    CHECK(rng_below(&r, 1) == 0, "below(1)");
}

static rf_dataset *load(void)
{
    rf_dataset *ds = NULL;
    CHECK(rf_dataset_load_idx(tmp_path("set-images.gz"),
                              tmp_path("set-labels.gz"), &ds) == RF_OK,
          "load synthetic set");
    return ds;
}

/* Reads `count` examples as batches of `batch`, recording their indices. */
static void read_indices(rf_dataset *ds, size_t count, size_t batch,
                         unsigned *out)
{
    float x[64 * DIM];
    int32_t y[64];
    for (size_t done = 0; done < count; done += batch) {
        CHECK(rf_dataset_next_batch(ds, batch, x, y) == RF_OK, "batch");
        for (size_t b = 0; b < batch && done + b < count; b++) {
            out[done + b] = decode_index(x + b * DIM);
            CHECK(y[b] == (int32_t)(out[done + b] % 10),
                  "label %d of example %u", (int)y[b], out[done + b]);
        }
    }
}

static bool is_permutation(const unsigned *idx, size_t n, size_t universe)
{
    static bool seen[N];
    memset(seen, 0, sizeof seen);
    for (size_t i = 0; i < n; i++) {
        if (idx[i] >= universe || seen[idx[i]])
            return false;
        seen[idx[i]] = true;
    }
    return true;
}

static void test_unshuffled_batches(void)
{
    rf_dataset *ds = load();
    if (!ds)
        return;
    /* 7 batches of 300: file order, wrapping around the epoch end. */
    static unsigned got[2100];
    read_indices(ds, 2100, 60, got);
    for (size_t i = 0; i < 2100; i++)
        CHECK(got[i] == i % N, "position %zu has %u", i, got[i]);
    uint64_t epoch;
    size_t off;
    rf_dataset_position(ds, &epoch, &off);
    CHECK(epoch == 2 && off == 100, "position %llu/%zu",
          (unsigned long long)epoch, off);

    /* A batch straddling the end: 950..999 then 0..49. */
    float x[100 * DIM];
    CHECK(rf_dataset_seek(ds, 5, 950) == RF_OK, "seek");
    CHECK(rf_dataset_next_batch(ds, 100, x, NULL) == RF_OK, "batch, no y");
    CHECK(decode_index(x) == 950 && decode_index(x + 49 * DIM) == 999 &&
              decode_index(x + 50 * DIM) == 0 &&
              decode_index(x + 99 * DIM) == 49,
          "wrap %u %u %u %u", decode_index(x), decode_index(x + 49 * DIM),
          decode_index(x + 50 * DIM), decode_index(x + 99 * DIM));
    rf_dataset_position(ds, &epoch, &off);
    CHECK(epoch == 6 && off == 50, "after wrap %llu/%zu",
          (unsigned long long)epoch, off);
    /* A batch larger than the dataset spans several epochs. */
    int32_t y[2500];
    CHECK(rf_dataset_next_batch(ds, 2500, NULL, y) == RF_OK, "big batch");
    CHECK(y[0] == 0 && y[949] == (999 % 10) && y[950] == 0,
          "big batch labels %d %d %d", (int)y[0], (int)y[949], (int)y[950]);
    rf_dataset_position(ds, &epoch, &off);
    CHECK(epoch == 8 && off == 550, "after big batch %llu/%zu",
          (unsigned long long)epoch, off);

    CHECK(rf_dataset_next_batch(ds, 0, x, y) == RF_ERR_INVALID_ARG, "size 0");
    CHECK(rf_dataset_next_batch(NULL, 1, x, y) == RF_ERR_INVALID_ARG, "NULL");
    CHECK(rf_dataset_seek(ds, 0, N) == RF_ERR_INVALID_ARG, "seek past end");
    rf_dataset_free(ds);
}

static void test_shuffled_epochs(void)
{
    rf_dataset *a = load(), *b = load(), *c = load();
    if (!a || !b || !c)
        return;
    rf_dataset_set_shuffle(a, true, 1234);
    rf_dataset_set_shuffle(b, true, 1234);
    rf_dataset_set_shuffle(c, true, 1235);
    static unsigned ea[3][N], eb[3][N], ec[N];
    for (int e = 0; e < 3; e++) {
        read_indices(a, N, 50, ea[e]);
        read_indices(b, N, 40, eb[e]); /* other batch size, same order */
        CHECK(is_permutation(ea[e], N, N), "epoch %d is a permutation", e);
        CHECK(memcmp(ea[e], eb[e], sizeof ea[e]) == 0,
              "epoch %d: same seed, same order", e);
    }
    size_t fixed = 0;
    for (size_t i = 0; i < N; i++)
        fixed += ea[0][i] == i;
    CHECK(fixed < 20, "epoch 0 barely shuffled (%zu fixed points)", fixed);
    CHECK(memcmp(ea[0], ea[1], sizeof ea[0]) != 0 &&
              memcmp(ea[1], ea[2], sizeof ea[1]) != 0,
          "epochs differ");
    read_indices(c, N, 50, ec);
    CHECK(is_permutation(ec, N, N), "seed 1235 permutation");
    CHECK(memcmp(ea[0], ec, sizeof ec) != 0, "different seeds differ");

    /* Seeking to (epoch 1, 300) continues exactly as the run did. */
    static unsigned resumed[N - 300];
    CHECK(rf_dataset_seek(c, 1, 300) == RF_OK, "seek");
    rf_dataset_set_shuffle(c, true, 1234); /* rewinds */
    CHECK(rf_dataset_seek(c, 1, 300) == RF_OK, "seek");
    read_indices(c, N - 300, 50, resumed);
    CHECK(memcmp(resumed, ea[1] + 300, sizeof resumed) == 0,
          "resume at epoch 1 offset 300");

    /* set_shuffle rewinds to epoch 0 of the new seed. */
    rf_dataset_set_shuffle(a, true, 1234);
    static unsigned again[N];
    read_indices(a, N, 50, again);
    CHECK(memcmp(again, ea[0], sizeof again) == 0, "rewound");
    rf_dataset_free(a);
    rf_dataset_free(b);
    rf_dataset_free(c);
}

static void shard_sources(const rf_dataset *s, size_t *out)
{
    for (size_t i = 0; i < rf_dataset_size(s); i++) {
        int32_t y;
        CHECK(rf_dataset_example(s, i, NULL, &y, &out[i]) == RF_OK, "example");
        CHECK(y == (int32_t)(out[i] % 10), "shard label");
    }
}

static void test_shards(void)
{
    rf_dataset *ds = load();
    if (!ds)
        return;
    static size_t src[3][N], again[N];
    rf_dataset *sh[3] = {0};
    int count[N] = {0};
    for (uint32_t t = 0; t < 3; t++) {
        CHECK(rf_dataset_shard(ds, 3, t, 99, &sh[t]) == RF_OK, "shard %u", t);
        if (!sh[t])
            return;
        CHECK(rf_dataset_size(sh[t]) == (t == 0 ? 334u : 333u),
              "shard %u size %zu", t, rf_dataset_size(sh[t]));
        CHECK(rf_dataset_example_dim(sh[t]) == DIM, "dim");
        shard_sources(sh[t], src[t]);
        for (size_t i = 0; i < rf_dataset_size(sh[t]); i++)
            count[src[t][i]]++;
    }
    for (size_t i = 0; i < N; i++)
        CHECK(count[i] == 1, "example %zu is in %d shards", i, count[i]);

    /* Deterministic per (seed, task); another seed deals differently. */
    rf_dataset *s = NULL;
    CHECK(rf_dataset_shard(ds, 3, 1, 99, &s) == RF_OK, "again");
    shard_sources(s, again);
    CHECK(memcmp(again, src[1], 333 * sizeof *again) == 0, "same shard");
    rf_dataset_free(s);
    CHECK(rf_dataset_shard(ds, 3, 1, 100, &s) == RF_OK, "seed 100");
    shard_sources(s, again);
    CHECK(memcmp(again, src[1], 333 * sizeof *again) != 0, "seed matters");
    rf_dataset_free(s);

    /* Iterating a shard visits exactly its examples, shuffled per epoch. */
    rf_dataset_set_shuffle(sh[2], true, 5);
    static unsigned it[333];
    read_indices(sh[2], 333, 37, it);
    int in_shard[N] = {0};
    for (size_t i = 0; i < 333; i++)
        in_shard[src[2][i]] = 1;
    CHECK(is_permutation(it, 333, N), "shard epoch has no repeats");
    for (size_t i = 0; i < 333; i++)
        CHECK(in_shard[it[i]], "example %u is not in shard 2", it[i]);

    /* Shards of a shard partition it; shards outlive their parent. */
    rf_dataset *sub[2] = {0};
    CHECK(rf_dataset_shard(sh[0], 2, 0, 1, &sub[0]) == RF_OK &&
              rf_dataset_shard(sh[0], 2, 1, 1, &sub[1]) == RF_OK,
          "sub-shards");
    rf_dataset_free(ds);
    rf_dataset_free(sh[0]);
    if (sub[0] && sub[1]) {
        static size_t s0[167], s1[167];
        CHECK(rf_dataset_size(sub[0]) == 167 && rf_dataset_size(sub[1]) == 167,
              "sub sizes");
        shard_sources(sub[0], s0);
        shard_sources(sub[1], s1);
        int seen[N] = {0};
        for (size_t i = 0; i < 167; i++) {
            seen[s0[i]]++;
            seen[s1[i]]++;
        }
        for (size_t i = 0; i < 334; i++)
            CHECK(seen[src[0][i]] == 1, "sub-shard partition at %zu", i);
        float x[10 * DIM];
        CHECK(rf_dataset_next_batch(sub[1], 10, x, NULL) == RF_OK,
              "batch from a shard whose parent is freed");
    }
    rf_dataset_free(sub[0]);
    rf_dataset_free(sub[1]);

    /* Bad arguments. */
    s = (rf_dataset *)&not_a_dataset;
    CHECK(rf_dataset_shard(sh[1], 0, 0, 1, &s) == RF_ERR_INVALID_ARG &&
              s == NULL,
          "0 tasks");
    CHECK(rf_dataset_shard(sh[1], 3, 3, 1, &s) == RF_ERR_INVALID_ARG,
          "index == tasks");
    CHECK(rf_dataset_shard(sh[1], 400, 399, 1, &s) == RF_ERR_INVALID_ARG &&
              strstr(rf_error_message(), "empty"),
          "empty shard: '%s'", rf_error_message());
    CHECK(rf_dataset_shard(sh[1], 333, 332, 1, &s) == RF_OK &&
              rf_dataset_size(s) == 1,
          "one-example shards");
    rf_dataset_free(s);
    rf_dataset_free(sh[1]);
    rf_dataset_free(sh[2]);
}

int main(void)
{
    make_tmp_dir();
    write_indexed_set(tmp_path("set-images.gz"), tmp_path("set-labels.gz"), N,
                      2, 2, 10);
    test_rng_golden();
    test_unshuffled_batches();
    test_shuffled_epochs();
    test_shards();
    remove_tmp_dir();
    printf("unit.data.dataset: all checks passed\n");
    return 0;
}
