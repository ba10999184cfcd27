/* tests/unit/ps/test_ledger.c: the shard ledger's logic (ps/ps_ledger.c)
 * driven directly: the geometry (shards of whole batches, the short last
 * shard) and its refusals, the deal and the per-batch progress, a
 * departed client's shard returned at its recorded batch and preferred to
 * a new one, stale progress not recorded, progress going back refused,
 * epochs rolling over in a different order, and a random membership walk
 * in which every batch of every completed epoch is trained exactly once.
 * Also the SHARD_REQ / SHARD_REPLY codec round trip and its refusals. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ps/proto.h"
#include "ps/ps_ledger.h"
#include "tests/common/check.h"

/* 1055 examples of batch 10: 105 batches (the last 5 examples are not
 * trained), shards of 4: 27 shards, the last one of a single batch. */
static const rf_ps_shard_geometry G = {
    .num_examples = 1055, .batch_size = 10, .shard_batches = 4, .seed = 7};
#define NB 105u
#define NS 27u

static rf_ps_shard_grant ask(ps_ledger *l, uint32_t client,
                             const rf_ps_shard_grant *done, bool *stale)
{
    rf_ps_shard_grant g;
    bool st_;
    CHECK_OK(ps_ledger_request(l, client, &G, done, &g, stale ? stale : &st_));
    CHECK(g.batch < g.shard_len && g.shard < NS && g.num_shards == NS,
          "grant batch %u/%u shard %u", g.batch, g.shard_len, g.shard);
    CHECK_EQ_U64(g.first_example,
                 ((uint64_t)g.shard * G.shard_batches + g.batch) *
                     G.batch_size);
    return g;
}

/* the client trained g's batch: its report */
static rf_ps_shard_grant trained(rf_ps_shard_grant g)
{
    g.batch++;
    return g;
}

static void test_geometry(void)
{
    ps_ledger l;
    ps_ledger_init(&l);
    rf_ps_shard_grant g = ask(&l, 1, NULL, NULL);
    CHECK(l.num_batches == NB && l.num_shards == NS, "%u batches %u shards",
          l.num_batches, l.num_shards);
    CHECK(g.epoch == 0 && g.batch == 0, "first grant epoch %u batch %u",
          g.epoch, g.batch);
    CHECK(g.shard_len == (g.shard == NS - 1 ? 1u : 4u), "shard %u len %u",
          g.shard, g.shard_len);
    rf_ps_shard_geometry bad = G;
    bad.batch_size = 20;
    bool stale;
    CHECK_ST(ps_ledger_request(&l, 2, &bad, NULL, &g, &stale),
             RF_ERR_INVALID_ARG);
    CHECK_MSG("batch_size 20");
    CHECK_MSG("batch_size 10");
    bad = G;
    bad.num_examples = 1000;
    CHECK_ST(ps_ledger_request(&l, 2, &bad, NULL, &g, &stale),
             RF_ERR_INVALID_ARG);
    CHECK_MSG("1000 examples");
    bad = G;
    bad.shard_batches = 8;
    CHECK_ST(ps_ledger_request(&l, 2, &bad, NULL, &g, &stale),
             RF_ERR_INVALID_ARG);
    bad = G;
    bad.seed = 8;
    CHECK_ST(ps_ledger_request(&l, 2, &bad, NULL, &g, &stale),
             RF_ERR_INVALID_ARG);
    ps_ledger_free(&l);
    ps_ledger_init(&l);
    bad = G;
    bad.num_examples = 9; /* not one batch */
    CHECK_ST(ps_ledger_request(&l, 1, &bad, NULL, &g, &stale),
             RF_ERR_INVALID_ARG);
    CHECK_MSG("not one whole batch");
    CHECK(!l.set, "a refused geometry set the ledger");
    ps_ledger_free(&l);
}

static void test_deal_progress_return(void)
{
    ps_ledger l;
    ps_ledger_init(&l);
    rf_ps_shard_grant a = ask(&l, 1, NULL, NULL);
    rf_ps_shard_grant b = ask(&l, 2, NULL, NULL);
    CHECK(a.shard != b.shard, "two clients dealt shard %u", a.shard);
    /* asking again without progress: the shard it holds, where it is */
    rf_ps_shard_grant a2 = ask(&l, 1, NULL, NULL);
    CHECK(a2.shard == a.shard && a2.batch == 0, "re-ask: shard %u batch %u",
          a2.shard, a2.batch);
    /* progress per batch: the next batch of the same shard */
    a2 = ask(
        &l, 1,
        &(rf_ps_shard_grant){.epoch = a.epoch, .shard = a.shard, .batch = 1},
        NULL);
    CHECK(a2.shard == a.shard && a2.batch == 1, "after 1: %u/%u", a2.shard,
          a2.batch);
    a2 = ask(
        &l, 1,
        &(rf_ps_shard_grant){.epoch = a.epoch, .shard = a.shard, .batch = 3},
        NULL);
    CHECK(a2.batch == 3, "after 3: batch %u", a2.batch);
    /* progress going back, or past the shard, is refused */
    rf_ps_shard_grant g;
    bool stale;
    CHECK_ST(ps_ledger_request(&l, 1, &G,
                               &(rf_ps_shard_grant){.epoch = a.epoch,
                                                    .shard = a.shard,
                                                    .batch = 2},
                               &g, &stale),
             RF_ERR_INVALID_ARG);
    CHECK_MSG("3 recorded trained");
    CHECK_ST(ps_ledger_request(&l, 1, &G,
                               &(rf_ps_shard_grant){.epoch = a.epoch,
                                                    .shard = a.shard,
                                                    .batch = 9},
                               &g, &stale),
             RF_ERR_INVALID_ARG);
    /* client 1 leaves at batch 3 of its shard: returned there */
    CHECK(ps_ledger_release(&l, 1) == 1, "release count");
    CHECK(ps_ledger_release(&l, 1) == 0, "second release count");
    rf_ps_shard_grant c = ask(&l, 3, NULL, NULL);
    CHECK(c.shard == a.shard && c.epoch == a.epoch && c.batch == 3,
          "returned shard %u dealt as %u batch %u", a.shard, c.shard, c.batch);
    /* client 1 back with its old progress: stale, not recorded */
    g = ask(
        &l, 1,
        &(rf_ps_shard_grant){.epoch = a.epoch, .shard = a.shard, .batch = 4},
        &stale);
    CHECK(stale, "progress on a returned shard was not stale");
    CHECK(g.shard != a.shard, "client 1 got its returned shard back");
    c = ask(
        &l, 3,
        &(rf_ps_shard_grant){.epoch = c.epoch, .shard = c.shard, .batch = 4},
        &stale);
    CHECK(!stale && c.shard != a.shard && c.batch == 0,
          "after finishing: shard %u batch %u", c.shard, c.batch);
    CHECK(l.shards_done == 1, "shards done %llu",
          (unsigned long long)l.shards_done);
    ps_ledger_free(&l);
}

/* Random walk: up to 6 clients train, join, leave (release) and report
 * stale progress; counts[epoch][batch] must be 1 for every completed
 * epoch. */
#define EPOCHS 4
static void test_random_walk(void)
{
    ps_ledger l;
    ps_ledger_init(&l);
    static unsigned counts[EPOCHS + 2][NB];
    memset(counts, 0, sizeof counts);
    rf_ps_shard_grant held[6];
    bool has[6] = {0};
    unsigned seed = 12345;
    uint32_t order0[NS], order1[NS], n0 = 0, n1 = 0;
    for (unsigned step = 0; ps_ledger_epochs_done(&l) < EPOCHS; step++) {
        CHECK(step < 100000, "%u epochs done after %u requests",
              ps_ledger_epochs_done(&l), step);
        seed = seed * 1103515245u + 12345u;
        uint32_t c = (seed >> 16) % 6;
        if (((seed >> 8) & 31) == 0) { /* leaves */
            ps_ledger_release(&l, c);
            has[c] = false;
            continue;
        }
        rf_ps_shard_grant done, g;
        bool stale;
        if (has[c]) {
            done = trained(held[c]);
            /* the batch was trained: counted, even if stale later */
            counts[held[c].epoch]
                  [held[c].shard * G.shard_batches + held[c].batch]++;
        }
        CHECK_OK(
            ps_ledger_request(&l, c, &G, has[c] ? &done : NULL, &g, &stale));
        CHECK(!stale, "client %u stale without a release", c);
        if (g.batch == 0 && g.epoch == 0 && n0 < NS &&
            (!has[c] || held[c].shard != g.shard))
            order0[n0++] = g.shard;
        if (g.batch == 0 && g.epoch == 1 && n1 < NS &&
            (!has[c] || held[c].shard != g.shard))
            order1[n1++] = g.shard;
        held[c] = g;
        has[c] = true;
    }
    for (uint32_t e = 0; e < EPOCHS; e++)
        for (uint32_t b = 0; b < NB; b++)
            CHECK(counts[e][b] == 1, "epoch %u batch %u trained %u times", e, b,
                  counts[e][b]);
    CHECK(n0 >= 2 && n1 >= 2 && memcmp(order0, order1, 2 * sizeof *order0),
          "epochs 0 and 1 dealt in the same order");
    CHECK(l.returned > 0, "the walk returned no shard");
    ps_ledger_free(&l);
}

/* A client that is released while it trains a batch (a SIGKILL after the
 * push, before its report) makes that batch be trained twice: the bound
 * the trainer documents is one batch per killed worker. */
static void test_kill_bound(void)
{
    ps_ledger l;
    ps_ledger_init(&l);
    rf_ps_shard_grant a = ask(&l, 1, NULL, NULL);
    a = ask(&l, 1,
            &(rf_ps_shard_grant){.epoch = 0, .shard = a.shard, .batch = 1},
            NULL);
    /* client 1 trained batch 1 and was killed before reporting it */
    ps_ledger_release(&l, 1);
    rf_ps_shard_grant b = ask(&l, 2, NULL, NULL);
    CHECK(b.shard == a.shard && b.batch == 1,
          "after the kill: shard %u batch %u (want %u batch 1)", b.shard,
          b.batch, a.shard);
    ps_ledger_free(&l);
}

static void test_codec(void)
{
    unsigned char buf[PS_MSG_MAX];
    size_t len;
    ps_shard_req q = {.geom = G,
                      .has_done = true,
                      .done = {.epoch = 3, .shard = 5, .batch = 2}},
                 q2;
    CHECK_OK(ps_enc_shard_req(buf, sizeof buf, 9, &q, &len));
    CHECK_OK(ps_dec_shard_req(buf, len, &q2));
    CHECK(q2.has_done && q2.done.epoch == 3 && q2.done.shard == 5 &&
              q2.done.batch == 2 && q2.geom.num_examples == G.num_examples &&
              q2.geom.seed == G.seed,
          "SHARD_REQ round trip");
    buf[len - 13] = 2; /* flags: a reserved bit */
    CHECK_ST(ps_dec_shard_req(buf, len, &q2), RF_ERR_CORRUPT);
    ps_shard_reply r = {.next = {.epoch = 2,
                                 .shard = 26,
                                 .batch = 0,
                                 .shard_len = 1,
                                 .num_shards = NS,
                                 .epochs_done = 1},
                        .stale = true},
                   r2;
    CHECK_OK(ps_enc_shard_reply(buf, sizeof buf, 9, &r, &len));
    CHECK_OK(ps_dec_shard_reply(buf, len, &r2, 10, 4));
    CHECK(r2.stale && r2.next.shard == 26 && r2.next.first_example == 1040,
          "SHARD_REPLY round trip: first_example %llu",
          (unsigned long long)r2.next.first_example);
    r.next.batch = 1; /* past its shard */
    CHECK_OK(ps_enc_shard_reply(buf, sizeof buf, 9, &r, &len));
    CHECK_ST(ps_dec_shard_reply(buf, len, &r2, 10, 4), RF_ERR_CORRUPT);
    CHECK(strcmp(ps_msg_type_name(20), "unknown") == 0 &&
              strcmp(ps_msg_type_name(PS_MSG_SHARD_REQ), "SHARD_REQ") == 0,
          "type names");
    ps_msg_hdr h;
    CHECK_OK(ps_enc_empty(buf, sizeof buf, PS_MSG_LEAVE_REQ, 1, &len));
    buf[6] = 20; /* a type in the gap */
    CHECK_ST(ps_dec_hdr(buf, len, &h), RF_ERR_CORRUPT);
}

int main(int argc, char **argv)
{
    static const rft_group groups[] = {
        {"geometry", test_geometry}, {"deal", test_deal_progress_return},
        {"walk", test_random_walk},  {"kill_bound", test_kill_bound},
        {"codec", test_codec},
    };
    return rft_groups_run(groups, sizeof groups / sizeof *groups, argc, argv);
}
