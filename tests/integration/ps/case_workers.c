/* tests/integration/ps/case_workers.c: several worker processes at once:
 * concurrent apply=ps pushes with the global step, apply=worker with
 * use_locking (no lost update) against its control without use_locking,
 * which must be seen losing updates (else the test proves nothing and
 * fails), and the non-chief's wait for init flags. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/integration/ps/cases.h"
#include "tests/integration/ps/specs.h"

/* Elements of "counter" on each ps (case_locking makes them more). */
#define COUNTER_N 16
static int counter_n = COUNTER_N;

/* One round: 2 push workers (ids 1, 2) on "counter" on every ps, started
 * together: each waits after STARTED until global_step passes its value
 * before the round (the chief adds 1 once both are ready), pushes `steps`
 * times and, with overlap, goes on until the other has pushed `overlap`
 * times (helper.c: a loaded host may run one worker alone at first). With
 * watch, the chief pulls the counters meanwhile. */
typedef struct push_round {
    int steps, overlap;
    const char *mode; /* "ps" or "worker" */
    bool locking, watch;
    /* results */
    int64_t pushes; /* by both workers: each element's final value */
    int64_t gs_end; /* global_step after the round */
    int pulls, mid, down, torn;
    int64_t *seen_gs; /* watch(): global_step after each pull that saw a */
    int seen;         /* counter above 0 */
} push_round;

/* Fails: a consistent pull saw ps p's counters at now, below the `was` of
 * an earlier one. Three more pulls say whether memory holds the lower
 * value (an update written over a newer one) or the pull returned it. */
static void went_down(pt_cluster *cl, rf_ps_xfer *x, pt_buf *b, size_t p,
                      float was, int pull)
{
    float now = b[p].p[0], again[3];
    for (int k = 0; k < 3; k++) {
        CHECK_OK(rf_ps_read(cl->chief, x, cl->n));
        again[k] = b[p].p[0];
    }
    CHECK(false,
          "the counters on ps %zu went from %.1f to %.1f in pull %d, all "
          "%d of them (then %.1f, %.1f, %.1f)",
          p, was, now, pull, counter_n, again[0], again[1], again[2]);
}

/* While the workers run, the chief pulls the counters again and again
 * (one-sided reads racing the updates, as in Hogwild training). A pull is
 * a plain READ: racing a WRITE of the record it may return part old, part
 * new counters, and where the responder copies byte by byte (rxe under
 * TCG) even a float mixed from two values (0.5 between 1.0 and 2.0). Every
 * update changes all of a shard's counters alike, so a pull whose counters
 * on a ps all agree is consistent there, and one whose do not is counted
 * in r->torn. With use_locking or apply=ps the consistent pulls only ever
 * grow (checked); without use_locking a lost update can make an element go
 * down (counted in r->down). Returns once global_step reached total (or
 * after 20 s, scaled); r->pulls is the number of pulls. For each pull that
 * saw a counter above 0 (and with the check, was consistent) it keeps
 * global_step read just after it: run_pushers() counts in r->mid the pulls
 * that saw the counters part-way (global_step then at least 3 below its
 * final value: some worker had a push still to come), without which the
 * check compared nothing. */
static void watch(pt_cluster *cl, rf_ps_var **vars, int64_t total,
                  push_round *r)
{
    pt_buf b[PT_MAX_PS];
    rf_ps_xfer x[PT_MAX_PS];
    float *last = calloc(PT_MAX_PS * (size_t)counter_n, sizeof *last);
    float steady[PT_MAX_PS] = {0}; /* the last consistent pull's counters */
    CHECK_TRUE(last);
    for (size_t p = 0; p < cl->n; p++) {
        pt_buf_alloc(cl->chief, &b[p], counter_n);
        x[p] = (rf_ps_xfer){.var = vars[p],
                            .field = RF_PS_FIELD_VALUES,
                            .buf = b[p].p,
                            .len = (size_t)counter_n * 4,
                            .mr = b[p].mr};
    }
    bool must_grow = r->locking || strcmp(r->mode, "ps") == 0;
    long long deadline = rf_now_ms() + rft_ms(20000);
    int cap = 0;
    for (;;) {
        CHECK_OK(rf_ps_read(cl->chief, x, cl->n));
        int64_t gs;
        CHECK_OK(rf_ps_global_step_read(cl->chief, &gs));
        r->pulls++;
        bool started = false, down = false, torn = false;
        for (size_t p = 0; p < cl->n; p++) {
            bool same = true;
            for (int i = 0; i < counter_n; i++) {
                float *was = &last[p * (size_t)counter_n + (size_t)i];
                down |= b[p].p[i] < *was;
                *was = b[p].p[i];
                started |= b[p].p[i] > 0;
                same &= b[p].p[i] == b[p].p[0];
            }
            torn |= !same;
            if (must_grow && same) {
                if (b[p].p[0] < steady[p])
                    went_down(cl, x, b, p, steady[p], r->pulls);
                steady[p] = b[p].p[0];
            }
        }
        r->down += down;
        r->torn += torn;
        /* with must_grow only a pull the check could use counts */
        if (started && !(must_grow && torn)) {
            if (r->seen == cap) {
                cap = cap ? 2 * cap : 1024;
                r->seen_gs = realloc(r->seen_gs, (size_t)cap * sizeof(int64_t));
                CHECK_TRUE(r->seen_gs);
            }
            r->seen_gs[r->seen++] = gs;
        }
        if (gs >= total || rf_now_ms() > deadline)
            break;
    }
    free(last);
}

static void run_pushers(pt_cluster *cl, rf_ps_var **vars, push_round *r)
{
    char list[700], st[16], n[16], go[32], ov[16];
    snprintf(list, sizeof list, "%s", cl->addrs[0]);
    for (size_t i = 1; i < cl->n; i++) {
        size_t used = strlen(list);
        snprintf(list + used, sizeof list - used, ",%s", cl->addrs[i]);
    }
    int64_t gs0;
    CHECK_OK(rf_ps_global_step_read(cl->chief, &gs0));
    snprintf(st, sizeof st, "%d", r->steps);
    snprintf(n, sizeof n, "%d", counter_n);
    snprintf(go, sizeof go, "%lld", (long long)gs0 + 1);
    snprintf(ov, sizeof ov, "%d", r->overlap);
    rft_child w[2];
    for (int i = 0; i < 2; i++) {
        char id[8], name[16];
        snprintf(id, sizeof id, "%d", i + 1);
        snprintf(name, sizeof name, "worker%d", i + 1);
        const char *args[] = {"push",
                              "--ps",
                              list,
                              "--id",
                              id,
                              "--steps",
                              st,
                              "--mode",
                              r->mode,
                              "--locking",
                              r->locking ? "1" : "0",
                              "--n",
                              n,
                              "--go",
                              go,
                              "--overlap",
                              ov,
                              NULL};
        pt_spawn(&w[i], name, args);
    }
    char rest[64];
    for (int i = 0; i < 2; i++)
        rft_expect(&w[i], "STARTED", rest, sizeof rest, rft_ms(20000));
    int64_t old;
    CHECK_OK(rf_ps_global_step_add(cl->chief, 1, &old));
    r->pulls = r->mid = r->down = r->torn = r->seen = 0;
    r->seen_gs = NULL;
    if (r->watch)
        watch(cl, vars, gs0 + 1 + 2 * r->steps, r);
    r->pushes = 0;
    for (int i = 0; i < 2; i++) {
        rft_expect(&w[i], "DONE ", rest, sizeof rest, rft_ms(40000));
        long long done = 0;
        CHECK(sscanf(rest, "%lld", &done) == 1 && done >= r->steps,
              "worker%d: DONE %s (%d pushes asked)", i + 1, rest, r->steps);
        r->pushes += done;
        rft_wait_ok(&w[i], rft_ms(10000));
    }
    r->gs_end = gs0 + 1 + r->pushes;
    for (int k = 0; k < r->seen; k++)
        r->mid += r->seen_gs[k] < r->gs_end - 2;
    free(r->seen_gs);
    r->seen_gs = NULL;
    if (r->watch)
        rft_note("the chief pulled %d times while the workers pushed, %d "
                 "part-way, %d saw a counter go down, %d torn",
                 r->pulls, r->mid, r->down, r->torn);
}

static void make_counters(pt_cluster *cl, rf_ps_var **vars)
{
    rf_ps_shard_spec s = pt_counter_spec("counter", counter_n);
    for (size_t p = 0; p < cl->n; p++) {
        CHECK_OK(rf_ps_create(cl->chief, p, &s, &vars[p]));
        pt_buf b;
        pt_buf_alloc(cl->chief, &b, counter_n);
        rf_ps_xfer x = {.var = vars[p],
                        .field = RF_PS_FIELD_VALUES,
                        .buf = b.p,
                        .len = (size_t)counter_n * 4,
                        .mr = b.mr};
        CHECK_OK(rf_ps_init_values(cl->chief, &x, 1));
    }
}

static void check_counters(pt_cluster *cl, rf_ps_var **vars, float want)
{
    for (size_t p = 0; p < cl->n; p++) {
        float *got =
            pt_read_field(cl->chief, vars[p], RF_PS_FIELD_VALUES, counter_n);
        for (int i = 0; i < counter_n; i++)
            CHECK(got[i] == want, "counter on ps %zu [%d] = %.1f, want %.1f", p,
                  i, got[i], want);
        free(got);
    }
}

/* The updates missing from the counters after a round of `want` updates
 * without use_locking (summed over elements and ps). Two writers racing
 * without the lock may also leave an element mixed from both records' bytes
 * where the responder copies byte by byte (rxe under TCG): one that is not
 * a whole number in [0, want] is counted in *mixed instead. */
static long lost_updates(pt_cluster *cl, rf_ps_var **vars, float want,
                         long *mixed)
{
    long lost = 0;
    *mixed = 0;
    for (size_t p = 0; p < cl->n; p++) {
        float *got =
            pt_read_field(cl->chief, vars[p], RF_PS_FIELD_VALUES, counter_n);
        for (int i = 0; i < counter_n; i++) {
            CHECK(got[i] >= 0 && got[i] < 1e30f,
                  "counter on ps %zu [%d] = %g after %.0f updates", p, i,
                  (double)got[i], want);
            if (got[i] > want || got[i] != (float)(long)got[i])
                (*mixed)++;
            else
                lost += (long)(want - got[i]);
        }
        free(got);
    }
    return lost;
}

/* Rounds of 2 workers x 150 async apply=ps pushes on 2 ps, started
 * together, until the chief's pulls saw the counters part-way (at most
 * WATCH_TRIES rounds; most need one). */
enum { WATCH_TRIES = 5 };

void case_concurrent(void)
{
    pt_cluster cl;
    pt_cluster_start(&cl, 2);
    rf_ps_var *vars[2];
    push_round r = {.steps = 150, .mode = "ps", .watch = true};
    for (int rounds = 0; r.mid == 0; rounds++) {
        CHECK(rounds < WATCH_TRIES,
              "the chief's pulls never saw the counters part-way in %d "
              "rounds: their check that the counters only grow compared "
              "nothing",
              rounds);
        make_counters(&cl, vars);
        long long t0 = rf_now_ms();
        run_pushers(&cl, vars, &r);
        rft_note("2 workers x %d async apply=ps updates on 2 ps in %lld ms",
                 r.steps, rf_now_ms() - t0);
        int64_t gs;
        CHECK_OK(rf_ps_global_step_read(cl.chief, &gs));
        CHECK(gs == r.gs_end,
              "global_step %lld, want %lld (%lld updates and the start "
              "signal)",
              (long long)gs, (long long)r.gs_end, (long long)r.pushes);
        /* The ps applies one push at a time: no update is lost. */
        check_counters(&cl, vars, (float)r.pushes);
    }
    pt_cluster_stop(&cl);
}

/* apply=worker is a read-modify-write of the whole record (READ, apply,
 * WRITE back): without use_locking two workers updating one shard at once
 * lose updates, with it none. The control (no use_locking) runs first,
 * round after round, each twice as long as the one before (from LOCK_STEPS
 * to LOCK_STEPS_MAX pushes per worker, each going on until the other has
 * pushed half as many: on shm a round of 100 takes a few ms, and a loaded
 * host may run one worker alone for that long), until a round loses an
 * update; if none does within LOCK_TRIES rounds or LOCK_CONTROL_MS
 * (scaled), the case fails: workers that never overlapped would make the
 * locked rounds prove nothing. The locked path then runs the same rounds
 * and LOCK_EXTRA more as long as the last (more, up to LOCK_TRIES, until
 * the chief's pulls saw the counters part-way), and must lose none: a
 * round of the control loses updates most of the time, not always, so the
 * locked path gets more chances than the control needed (with use_locking
 * ignored in the push, this case failed 50 of 50 runs on shm and 35 of
 * 35 on sock, 45 of them three at a time). The counters are LOCK_N floats,
 * so that a push spends most of its time between its READ and its WRITE.
 * The chief pulls the counters during both, so that both run alike.
 * global_step (FETCH_AND_ADD) is exact in both. */
enum {
    LOCK_N = 1024,
    LOCK_STEPS = 100,
    LOCK_STEPS_MAX = 3200,
    LOCK_TRIES = 12,
    LOCK_CONTROL_MS = 15000,
    LOCK_EXTRA = 2
};

static push_round lock_round(int i, bool locking) /* round i = 0, 1, ... */
{
    int steps = i >= 5 ? LOCK_STEPS_MAX : LOCK_STEPS << i;
    return (push_round){.steps = steps,
                        .overlap = steps / 2,
                        .mode = "worker",
                        .locking = locking,
                        .watch = true};
}

void case_locking(void)
{
    counter_n = LOCK_N;
    pt_cluster cl;
    pt_cluster_start(&cl, 2);
    rf_ps_var *vars[2];
    int tries = 0;
    long lost = 0, pushes = 0, mixed = 0;
    push_round r = {0};
    long long t0 = rf_now_ms(), give_up = t0 + rft_ms(LOCK_CONTROL_MS);
    while (lost == 0) {
        CHECK(tries < LOCK_TRIES && rf_now_ms() < give_up,
              "the control never raced: 2 workers pushing apply=worker "
              "without use_locking lost no update in %d rounds (%ld pushes, "
              "%lld ms), so this test cannot show that use_locking prevents "
              "lost updates",
              tries, pushes, rf_now_ms() - t0);
        r = lock_round(tries++, false);
        make_counters(&cl, vars);
        run_pushers(&cl, vars, &r);
        pushes += (long)r.pushes;
        int64_t gs;
        CHECK_OK(rf_ps_global_step_read(cl.chief, &gs));
        CHECK(gs == r.gs_end,
              "without use_locking: global_step %lld, want %lld", (long long)gs,
              (long long)r.gs_end);
        lost = lost_updates(&cl, vars, (float)r.pushes, &mixed);
    }
    rft_note("control without use_locking: %ld of %lld element updates lost "
             "in round %d of at most %d (2 workers, %lld pushes x %zu ps x %d "
             "elements; %d pulls saw a counter go down; %ld elements mixed "
             "from two writes), %ld pushes in all (%lld ms)",
             lost, (long long)r.pushes * (long long)cl.n * counter_n, tries,
             LOCK_TRIES, (long long)r.pushes, cl.n, counter_n, r.down, mixed,
             pushes, rf_now_ms() - t0);

    t0 = rf_now_ms();
    int mid = 0, i = 0;
    pushes = 0;
    for (; i < tries + LOCK_EXTRA || (mid == 0 && i < LOCK_TRIES); i++) {
        r = lock_round(i < tries ? i : tries - 1, true);
        make_counters(&cl, vars);
        run_pushers(&cl, vars, &r);
        check_counters(&cl, vars, (float)r.pushes);
        int64_t gs;
        CHECK_OK(rf_ps_global_step_read(cl.chief, &gs));
        CHECK(gs == r.gs_end, "global_step %lld, want %lld", (long long)gs,
              (long long)r.gs_end);
        mid += r.mid;
        pushes += (long)r.pushes;
    }
    CHECK(mid > 0,
          "the chief's pulls never saw the counters part-way in %d locked "
          "rounds: their check that the counters only grow compared nothing",
          i);
    rft_note("with use_locking: %d round(s) (the control's %d), %ld pushes, "
             "none lost (%lld ms)",
             i, tries, pushes, rf_now_ms() - t0);
    pt_cluster_stop(&cl);
}

void case_init_wait(void)
{
    pt_cluster cl;
    pt_cluster_start(&cl, 1);
    rf_ps_shard_spec s = pt_w_spec();
    rf_ps_var *v;
    CHECK_OK(rf_ps_create(cl.chief, 0, &s, &v));
    const char *args[] = {"wait-init", "--ps",      cl.addrs[0], "--id",
                          "1",         "--timeout", "20000",     NULL};
    rft_child w;
    pt_spawn(&w, "waiter", args);
    char rest[512];
    rft_expect(&w, "WAITING", rest, sizeof rest, rft_ms(20000));
    rf_sleep_ms(400);
    pt_buf b;
    pt_buf_alloc(cl.chief, &b, 12);
    double sum = 0;
    for (int i = 0; i < 12; i++)
        sum += b.p[i] = (float)(i + 1) * 0.25f;
    rf_ps_xfer x = {.var = v,
                    .field = RF_PS_FIELD_VALUES,
                    .buf = b.p,
                    .len = 48,
                    .mr = b.mr};
    CHECK_OK(rf_ps_init_values(cl.chief, &x, 1));
    rft_expect(&w, "INIT-", rest, sizeof rest, rft_ms(10000));
    double got = 0;
    CHECK(sscanf(rest, "OK %lf", &got) == 1, "waiter: INIT-%s", rest);
    CHECK(got == sum, "waiter read sum %.6f, chief wrote %.6f", got, sum);
    rft_wait_ok(&w, rft_ms(10000));
    pt_cluster_stop(&cl);
}

void case_init_timeout(void)
{
    pt_cluster cl;
    pt_cluster_start(&cl, 1);
    rf_ps_shard_spec s = pt_w_spec();
    rf_ps_var *v;
    CHECK_OK(rf_ps_create(cl.chief, 0, &s, &v));
    const char *args[] = {"wait-init", "--ps",      cl.addrs[0], "--id",
                          "1",         "--timeout", "1500",      NULL};
    rft_child w;
    pt_spawn(&w, "waiter", args);
    char rest[1024];
    rft_expect(&w, "WAITING", rest, sizeof rest, rft_ms(20000));
    long long t0 = rf_now_ms();
    rft_expect(&w, "INIT-", rest, sizeof rest, rft_ms(10000));
    long long took = rf_now_ms() - t0;
    rft_note("waiter: INIT-%s (after %lld ms)", rest, took);
    CHECK(strncmp(rest, "FAIL RF_ERR_TIMEOUT", 19) == 0, "waiter: INIT-%s",
          rest);
    CHECK(strstr(rest, "not initialised by the chief within 1.5 s") &&
              strstr(rest, "'w' part 0 (ps task 0)"),
          "unclear message: %s", rest);
    CHECK(took < rft_ms(5000), "timeout took %lld ms", took);
    rft_wait_ok(&w, rft_ms(10000));
    pt_cluster_stop(&cl);
}
