/* tests/integration/ps/case_sync.c: a sync-replicas shard (replicas_to_
 * aggregate 2 of 3; ps/ps_server_sync.c) driven by three clients, each
 * push waited for, so every outcome is deterministic: a gradient of the
 * shard's step is taken and the mean of two applied once (SGD with rate 1:
 * the values move by minus the mean), the step word published; a stale tag
 * is dropped and counted in the record; a second gradient of a client for
 * one step is dropped and the first kept; the chief's one-sided rewrite of
 * the step empties the accumulator; a tag ahead of the step drops only that
 * connection; pushes of the wrong kind, a lookup with other sync counts and
 * a non-chief's step write are refused; global_step CMP_AND_SWP swaps only
 * from the expected value. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/integration/ps/cases.h"
#include "tests/integration/ps/specs.h"

#define NEL 8

typedef struct sworker {
    rf_ps_client *c;
    rf_ps_var *v;
    pt_buf g;
} sworker;

/* A gradient of NEL times val, tagged with tag, acknowledged. */
static void push(sworker *w, float val, int64_t tag)
{
    for (int i = 0; i < NEL; i++)
        w->g.p[i] = val;
    rf_ps_xfer x = {.var = w->v,
                    .field = RF_PS_FIELD_VALUES,
                    .buf = w->g.p,
                    .len = NEL * sizeof(float),
                    .mr = w->g.mr};
    CHECK_OK(rf_ps_push_sync(w->c, &x, 1, tag));
    CHECK_OK(rf_ps_push_wait(w->c));
}

static void expect(sworker *w, float value, int64_t step, uint64_t stale,
                   const char *when)
{
    float *got = pt_read_field(w->c, w->v, RF_PS_FIELD_VALUES, NEL);
    for (int i = 0; i < NEL; i++)
        CHECK(got[i] == value, "%s: value [%d] %.3f, want %.3f", when, i,
              got[i], value);
    free(got);
    int64_t s = -1;
    uint64_t n = 0;
    CHECK_OK(rf_ps_sync_read(w->c, &w->v, 1, &s, &n));
    CHECK(s == step && n == stale, "%s: step %lld, %llu stale; want %lld, %llu",
          when, (long long)s, (unsigned long long)n, (long long)step,
          (unsigned long long)stale);
}

static void expect_counts(sworker *w, uint64_t accepted, uint64_t stale,
                          const char *who)
{
    uint64_t a = 0, s = 0;
    rf_ps_sync_counts(w->c, &a, &s);
    CHECK(a == accepted && s == stale,
          "%s: %llu accepted, %llu stale acks; want %llu, %llu", who,
          (unsigned long long)a, (unsigned long long)s,
          (unsigned long long)accepted, (unsigned long long)stale);
}

void case_sync(void)
{
    pt_cluster cl;
    pt_cluster_start(&cl, 1);
    rf_ps_shard_spec spec = pt_counter_spec("acc", NEL);
    spec.replicas_to_aggregate = 2;
    spec.total_num_replicas = 3;
    sworker w[3] = {{.c = cl.chief}};
    CHECK_OK(rf_ps_create(cl.chief, 0, &spec, &w[0].v));
    pt_buf zero;
    pt_buf_alloc(cl.chief, &zero, NEL);
    rf_ps_xfer init = {.var = w[0].v,
                       .field = RF_PS_FIELD_VALUES,
                       .buf = zero.p,
                       .len = NEL * sizeof(float),
                       .mr = zero.mr};
    CHECK_OK(rf_ps_sync_set_step(cl.chief, &w[0].v, 1, 5));
    CHECK_OK(rf_ps_init_values(cl.chief, &init, 1));
    for (int i = 1; i < 3; i++) {
        w[i].c = pt_client(cl.f, cl.addrs, 1, (uint32_t)i, false);
        CHECK_OK(rf_ps_lookup(w[i].c, 0, &spec, &w[i].v));
    }
    for (int i = 0; i < 3; i++)
        pt_buf_alloc(w[i].c, &w[i].g, NEL);
    expect(&w[1], 0, 5, 0, "after the chief set step 5");

    /* step 5: two gradients, then a stale one */
    push(&w[1], -1, 5);
    expect(&w[1], 0, 5, 0, "one gradient of 2 taken");
    push(&w[2], -3, 5);
    expect(&w[1], 2, 6, 0, "the mean of -1 and -3 applied");
    push(&w[0], -100, 5);
    expect(&w[1], 2, 6, 1, "a stale gradient");
    expect_counts(&w[0], 0, 1, "the chief");

    /* step 6: a second gradient of worker 1 is dropped, its first kept */
    push(&w[1], -1, 6);
    push(&w[1], -5, 6);
    expect(&w[1], 2, 6, 1, "worker 1 twice: still one gradient of 2");
    push(&w[2], -3, 6);
    expect(&w[1], 4, 7, 1, "the mean of worker 1's first and worker 2's");
    expect_counts(&w[1], 3, 0, "worker 1");

    /* the chief rewrites the step: what the accumulator held is dropped */
    push(&w[1], -1, 7);
    CHECK_OK(rf_ps_sync_set_step(cl.chief, &w[0].v, 1, 8));
    push(&w[1], -1, 8);
    expect(&w[1], 4, 8, 1, "after the rewrite, one gradient of 2");
    push(&w[2], -3, 8);
    expect(&w[1], 6, 9, 1, "the mean of step 8's two gradients");

    /* refusals */
    rf_ps_xfer x = {.var = w[1].v,
                    .field = RF_PS_FIELD_VALUES,
                    .buf = w[1].g.p,
                    .len = NEL * sizeof(float),
                    .mr = w[1].g.mr};
    CHECK_ST(rf_ps_push_inbox(w[1].c, &x, 1), RF_ERR_INVALID_ARG);
    CHECK_MSG("rf_ps_push_sync");
    CHECK_ST(rf_ps_update_rmw(w[1].c, &x, 1), RF_ERR_INVALID_ARG);
    CHECK_ST(rf_ps_push_sync(w[1].c, &x, 1, -1), RF_ERR_INVALID_ARG);
    CHECK_ST(rf_ps_sync_set_step(w[1].c, &w[1].v, 1, 3), RF_ERR_INVALID_ARG);
    CHECK_MSG("only the chief");

    /* the chief epoch: 0 until the chief bumps it, then one more each
     * time, seen by every worker; a worker may not bump it */
    uint64_t e0 = 99, e1 = 0, e2 = 0, seen = 0;
    CHECK_OK(rf_ps_sync_epoch_read(w[2].c, &e0));
    CHECK(e0 == 0, "the chief epoch starts at 0, not %llu",
          (unsigned long long)e0);
    CHECK_OK(rf_ps_sync_epoch_bump(cl.chief, &e1));
    CHECK_OK(rf_ps_sync_epoch_bump(cl.chief, &e2));
    CHECK_OK(rf_ps_sync_epoch_read(w[1].c, &seen));
    CHECK(e1 == 1 && e2 == 2 && seen == 2,
          "the chief epoch bumped to %llu then %llu, read %llu; want 1, 2, 2",
          (unsigned long long)e1, (unsigned long long)e2,
          (unsigned long long)seen);
    CHECK_ST(rf_ps_sync_epoch_bump(w[1].c, NULL), RF_ERR_INVALID_ARG);
    CHECK_MSG("only the chief");
    CHECK_OK(rf_ps_sync_epoch_read(w[2].c, &seen));
    CHECK(seen == 2, "a worker's refused bump moved the epoch to %llu",
          (unsigned long long)seen);
    rf_ps_shard_spec plain = pt_counter_spec("plain", NEL);
    rf_ps_var *pv = NULL;
    CHECK_OK(rf_ps_create(cl.chief, 0, &plain, &pv));
    rf_ps_xfer px = {.var = pv,
                     .field = RF_PS_FIELD_VALUES,
                     .buf = w[0].g.p,
                     .len = NEL * sizeof(float),
                     .mr = w[0].g.mr};
    CHECK_ST(rf_ps_push_sync(cl.chief, &px, 1, 9), RF_ERR_INVALID_ARG);
    CHECK_MSG("an async shard");
    CHECK_ST(rf_ps_sync_read(cl.chief, &pv, 1, NULL, NULL), RF_ERR_INVALID_ARG);
    rf_ps_shard_spec other = spec;
    other.replicas_to_aggregate = 3;
    rf_ps_var *ov = NULL;
    CHECK_ST(rf_ps_lookup(w[2].c, 0, &other, &ov), RF_ERR_INVALID_ARG);
    CHECK_MSG("(replicas_to_aggregate=2, total_num_replicas=3)");
    CHECK_MSG("(replicas_to_aggregate=3, total_num_replicas=3)");

    /* global_step CMP_AND_SWP */
    int64_t old = -1, gs = -1;
    CHECK_OK(rf_ps_global_step_cas(w[1].c, 0, 1, &old));
    CHECK(old == 0, "CMP_AND_SWP 0 -> 1 saw %lld", (long long)old);
    CHECK_OK(rf_ps_global_step_cas(w[2].c, 0, 1, &old));
    CHECK(old == 1, "the second CMP_AND_SWP 0 -> 1 saw %lld", (long long)old);
    CHECK_OK(rf_ps_global_step_read(cl.chief, &gs));
    CHECK(gs == 1, "global_step %lld after one swap", (long long)gs);

    /* a tag ahead of the step: that worker's connection is dropped */
    for (int i = 0; i < NEL; i++)
        w[2].g.p[i] = -1;
    rf_ps_xfer ahead = {.var = w[2].v,
                        .field = RF_PS_FIELD_VALUES,
                        .buf = w[2].g.p,
                        .len = NEL * sizeof(float),
                        .mr = w[2].g.mr};
    CHECK_OK(rf_ps_push_sync(w[2].c, &ahead, 1, 20));
    rf_status st = rf_ps_push_wait(w[2].c);
    CHECK(st == RF_ERR_DISCONNECTED,
          "a push ahead of the step: %s (%s), want the connection dropped",
          rf_status_string(st), rf_error_message());
    expect(&w[1], 6, 9, 1, "the others after the protocol error");
    push(&w[1], -2, 9);
    push(&w[0], -4, 9);
    expect(&w[1], 9, 10, 1, "step 9 from worker 1 and the chief");
    rft_note("sync shard: 4 averaged updates, 1 stale and 1 repeated "
             "gradient dropped, a tag ahead refused");

    for (int i = 1; i < 3; i++)
        rf_ps_client_close(w[i].c);
    pt_cluster_stop(&cl);
}
