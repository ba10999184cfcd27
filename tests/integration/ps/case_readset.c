/* tests/integration/ps/case_readset.c: prepared read sets (the trainer's
 * per-step pull with per-variable waits) and the workers-done bitmap.
 *
 * read_set: six shards of different sizes on 2 ps, read by a second client
 * through one set: waits from two threads at once in reverse order, every
 * byte checked, a second post sees the chief's new values, misuse refused
 * (a post while the last is not waited for, an index out of range, a wait
 * before any post, a bad transfer at create), a stopped ps makes the wait
 * time out within op_timeout_ms naming the variable and the ps (the others
 * still arrive, and after SIGCONT + reconnect the set works again), and a
 * killed ps fails its transfers with an error naming it, without a hang;
 * and the waits go on while another thread's call on the client sleeps.
 *
 * workers_done: worker processes with client ids 1, 2 and 70 (a second
 * bitmap word) announce they finished, id 2 twice; the chief's wait for
 * {1, 2, 70} returns with exactly those bits set, a wait that also wants
 * id 3 times out naming it (3 of 4), the bitmap is a block of its own
 * (global_step untouched, and the other way round), and the chief's merge
 * ORs bits in. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "tests/integration/ps/cases.h"
#include "tests/integration/ps/specs.h"

#define RS_N 6
static const int64_t rs_len[RS_N] = {1000, 37, 4096, 5, 20000, 256};

typedef struct rs_fixture {
    rf_ps_var *vars[RS_N];  /* the reader's handles */
    rf_ps_var *chief[RS_N]; /* the chief's */
    size_t off[RS_N];       /* each shard's floats in the buffer */
    size_t total;           /* floats in all */
    pt_buf buf;             /* the reader's registered buffer */
    rf_ps_xfer x[RS_N];
} rs_fixture;

static rf_ps_shard_spec rs_spec(int k, char *name, size_t cap)
{
    snprintf(name, cap, "rs%d", k);
    return pt_counter_spec(name, rs_len[k]);
}

/* The chief writes seed base + k into shard k (rf_ps_write). */
static void rs_write_all(rf_ps_client *chief, rf_ps_var **vars, uint64_t base)
{
    for (int k = 0; k < RS_N; k++) {
        pt_buf b;
        pt_buf_alloc(chief, &b, (size_t)rs_len[k]);
        pt_fill(b.p, (size_t)rs_len[k], base + (uint64_t)k);
        rf_ps_xfer x = {.var = vars[k],
                        .field = RF_PS_FIELD_VALUES,
                        .buf = b.p,
                        .len = (size_t)rs_len[k] * 4,
                        .mr = b.mr};
        CHECK_OK(rf_ps_write(chief, &x, 1));
        rf_ps_client_deregister(chief, b.mr);
    }
}

/* Shard k of the reader's buffer holds seed base + k, bit for bit. */
static void rs_check(const rs_fixture *f, int k, uint64_t base,
                     const char *when)
{
    size_t n = (size_t)rs_len[k];
    float *want = malloc(n * sizeof *want);
    CHECK(want, "out of memory");
    pt_fill(want, n, base + (uint64_t)k);
    const float *got = f->buf.p + f->off[k];
    for (size_t i = 0; i < n; i++)
        CHECK(memcmp(&got[i], &want[i], 4) == 0,
              "%s: shard rs%d [%zu] = %a, want %a", when, k, i, (double)got[i],
              (double)want[i]);
    free(want);
}

/* Poisons the reader's buffer so that a read that did not land shows. */
static void rs_poison(rs_fixture *f)
{
    memset(f->buf.p, 0xff, f->total * sizeof(float));
}

/* The reader's side of the fixture (lookups, buffer, transfers); with cl,
 * the chief first creates the shards (seed 100 + k), else the chief's
 * handles in f are kept. */
static void rs_setup(rs_fixture *f, pt_cluster *cl, rf_ps_client *reader)
{
    rf_ps_var *chief[RS_N];
    memcpy(chief, f->chief, sizeof chief);
    memset(f, 0, sizeof *f);
    if (!cl)
        memcpy(f->chief, chief, sizeof chief);
    for (int k = 0; k < RS_N; k++) {
        f->off[k] = f->total;
        f->total += (size_t)rs_len[k] + 3; /* gaps between the shards */
    }
    pt_buf_alloc(reader, &f->buf, f->total);
    for (int k = 0; k < RS_N; k++) {
        char name[16];
        rf_ps_shard_spec s = rs_spec(k, name, sizeof name);
        if (cl)
            f->chief[k] =
                pt_make_var(cl->chief, (size_t)k % 2, &s, 100 + k, NULL);
        CHECK_OK(rf_ps_lookup(reader, (size_t)k % 2, &s, &f->vars[k]));
        f->x[k] = (rf_ps_xfer){.var = f->vars[k],
                               .field = RF_PS_FIELD_VALUES,
                               .buf = f->buf.p + f->off[k],
                               .len = (size_t)rs_len[k] * 4,
                               .mr = f->buf.mr};
    }
}

/* Stops a ps process (SIGSTOP) and waits until it is stopped, so that it
 * serves nothing more: its connections stay open, its answers stop. */
static void rs_stop(pt_ps *ps)
{
    CHECK(kill(ps->child.pid, SIGSTOP) == 0, "SIGSTOP");
    int status = 0;
    pid_t r;
    while ((r = waitpid(ps->child.pid, &status, WUNTRACED)) < 0 &&
           errno == EINTR)
        ;
    CHECK(r == ps->child.pid && WIFSTOPPED(status),
          "the ps did not stop (status 0x%x)", status);
}

typedef struct rs_waiter {
    rf_ps_read_set *set;
    const int *order; /* transfer indices, -1 ends */
    pthread_barrier_t *start;
    rf_status st[RS_N];
    char msg[RS_N][512];
    long long took_ms[RS_N];
} rs_waiter;

static void *rs_wait_thread(void *arg)
{
    rs_waiter *w = arg;
    pthread_barrier_wait(w->start);
    for (int j = 0; w->order[j] >= 0; j++) {
        int i = w->order[j];
        long long t0 = rf_now_ms();
        w->st[i] = rf_ps_read_set_wait(w->set, (size_t)i);
        w->took_ms[i] = rf_now_ms() - t0;
        snprintf(w->msg[i], sizeof w->msg[i], "%s", rf_error_message());
    }
    return NULL;
}

/* Two threads wait for the transfers in reverse order (5 3 1 and 4 2 0) at
 * once; every wait must return RF_OK. */
static void rs_wait_two_threads(rf_ps_read_set *set)
{
    static const int odd[] = {5, 3, 1, -1}, even[] = {4, 2, 0, -1};
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 3);
    rs_waiter w[2] = {{.set = set, .order = odd, .start = &start},
                      {.set = set, .order = even, .start = &start}};
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < RS_N; i++)
            w[t].st[i] = RF_ERR_CORRUPT; /* not waited */
    pthread_t th[2];
    for (int t = 0; t < 2; t++)
        CHECK(pthread_create(&th[t], NULL, rs_wait_thread, &w[t]) == 0,
              "pthread_create");
    pthread_barrier_wait(&start);
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
    pthread_barrier_destroy(&start);
    for (int t = 0; t < 2; t++)
        for (int j = 0; w[t].order[j] >= 0; j++) {
            int i = w[t].order[j];
            CHECK(w[t].st[i] == RF_OK, "thread %d: wait(%d) returned %s: %s", t,
                  i, rf_status_string(w[t].st[i]), w[t].msg[i]);
        }
}

/* A call that sleeps for its whole length: a lookup of a shard nobody
 * creates, which polls the ps's directory until lookup_timeout_ms. */
typedef struct rs_lookup {
    rf_ps_client *client;
    rf_status st;
    long long took_ms;
} rs_lookup;

static void *rs_lookup_missing(void *arg)
{
    rs_lookup *l = arg;
    rf_ps_shard_spec s = pt_counter_spec("rs_never_created", 8);
    rf_ps_var *v = NULL;
    long long t0 = rf_now_ms();
    l->st = rf_ps_lookup(l->client, 0, &s, &v);
    l->took_ms = rf_now_ms() - t0;
    return NULL;
}

/* Read-set waits go on while another thread's call on the same client
 * sleeps (the wait engine lets go of the client's mutex while it sleeps;
 * until issue 22 a lookup held it for its whole length). */
static void rs_wait_beside_sleeping_call(rs_fixture *f, pt_cluster *cl)
{
    const int lookup_ms = rft_ms(3000);
    rf_ps_client_options o = {.client_id = 3,
                              .connect_timeout_ms = rft_ms(20000),
                              .op_timeout_ms = rft_ms(20000),
                              .lookup_timeout_ms = lookup_ms};
    rf_ps_client *reader = NULL;
    CHECK_OK(rf_ps_client_connect(cl->f, cl->addrs, 2, &o, &reader));
    rs_setup(f, NULL, reader);
    rf_ps_read_set *set = NULL;
    CHECK_OK(rf_ps_read_set_create(reader, f->x, RS_N, &set));
    rs_write_all(cl->chief, f->chief, 500);
    rs_poison(f);
    CHECK_OK(rf_ps_read_set_post(set));
    rs_lookup l = {.client = reader};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, rs_lookup_missing, &l) == 0,
          "pthread_create");
    rf_sleep_ms(100); /* the lookup is inside its polls */
    long long t0 = rf_now_ms();
    CHECK_OK(rf_ps_read_set_wait_all(set));
    long long took = rf_now_ms() - t0;
    pthread_join(th, NULL);
    rft_note("read-set waits beside a sleeping lookup: %lld ms (the lookup "
             "took %lld ms)",
             took, l.took_ms);
    CHECK(took < lookup_ms / 2,
          "read-set waits took %lld ms while a lookup slept (lookup timeout "
          "%d ms)",
          took, lookup_ms);
    CHECK(l.st == RF_ERR_TIMEOUT, "the missing lookup returned %s",
          rf_status_string(l.st));
    for (int k = 0; k < RS_N; k++)
        rs_check(f, k, 500, "beside a sleeping lookup");
    rf_ps_read_set_destroy(set);
    rf_ps_client_close(reader);
}

void case_read_set(void)
{
    pt_cluster cl;
    pt_cluster_start(&cl, 2);
    rf_ps_client *reader = pt_client(cl.f, cl.addrs, 2, 1, false);
    rs_fixture f = {0};
    rs_setup(&f, &cl, reader);

    /* A bad transfer is refused at create, naming it. */
    rf_ps_xfer bad[RS_N];
    memcpy(bad, f.x, sizeof bad);
    bad[2].len -= 4;
    rf_ps_read_set *set = (rf_ps_read_set *)&f; /* must be cleared */
    CHECK_ST(rf_ps_read_set_create(reader, bad, RS_N, &set),
             RF_ERR_INVALID_ARG);
    CHECK_MSG("transfer 2");
    CHECK_MSG("'rs2' part 0");
    CHECK(set == NULL, "create failed but left *out set");

    CHECK_OK(rf_ps_read_set_create(reader, f.x, RS_N, &set));
    CHECK_ST(rf_ps_read_set_wait(set, 0), RF_ERR_INVALID_ARG);
    CHECK_MSG("nothing was posted");
    CHECK_OK(rf_ps_read_set_wait_all(set));

    /* Post 1: two threads wait in reverse order at once. */
    rs_poison(&f);
    CHECK_OK(rf_ps_read_set_post(set));
    CHECK_ST(rf_ps_read_set_post(set), RF_ERR_INVALID_ARG);
    CHECK_MSG("6 transfers of the previous post have not been waited for");
    CHECK_ST(rf_ps_read_set_wait(set, RS_N), RF_ERR_INVALID_ARG);
    CHECK_MSG("transfer 6 of a set of 6");
    rs_wait_two_threads(set);
    for (int k = 0; k < RS_N; k++)
        rs_check(&f, k, 100, "post 1");
    /* A completed transfer's wait returns at once, again and again. */
    long long t0 = rf_now_ms();
    for (int r = 0; r < 100; r++)
        CHECK_OK(rf_ps_read_set_wait(set, (size_t)(r % RS_N)));
    CHECK_OK(rf_ps_read_set_wait_all(set));
    CHECK(rf_now_ms() - t0 < rft_ms(1000),
          "100 waits for completed transfers "
          "took %lld ms",
          rf_now_ms() - t0);

    /* Post 2 after the chief changed every value: the new ones arrive. A
     * post with one transfer not waited for is refused; waiting for it
     * (wait, not wait_all) settles the post. */
    rs_write_all(cl.chief, f.chief, 200);
    rs_poison(&f);
    CHECK_OK(rf_ps_read_set_post(set));
    for (int k = 0; k < RS_N - 1; k++)
        CHECK_OK(rf_ps_read_set_wait(set, (size_t)k));
    CHECK_ST(rf_ps_read_set_post(set), RF_ERR_INVALID_ARG);
    CHECK_MSG("1 transfer of the previous post has not been waited for");
    CHECK_OK(rf_ps_read_set_wait(set, RS_N - 1));
    for (int k = 0; k < RS_N; k++)
        rs_check(&f, k, 200, "post 2");

    /* Post 3..22: the steady state (no checks beyond the data). */
    for (int step = 0; step < 20; step++) {
        rs_write_all(cl.chief, f.chief, 1000 + 10 * (uint64_t)step);
        rs_poison(&f);
        CHECK_OK(rf_ps_read_set_post(set));
        rs_wait_two_threads(set);
        for (int k = 0; k < RS_N; k++)
            rs_check(&f, k, 1000 + 10 * (uint64_t)step, "steady state");
    }
    rf_ps_read_set_destroy(set);
    rf_ps_client_close(reader);
    rs_wait_beside_sleeping_call(&f, &cl);

    /* A stopped ps (sock, whose target side is the ps process): a thread's
     * wait for its transfer times out within the op timeout naming the
     * variable and the ps, and meanwhile another thread's waits for ps 0's
     * transfers return at once (the waiting thread does not hold the
     * client). On verbs and shm, whose one-sided reads need nothing from
     * the ps's CPU, the stopped ps's READs complete. */
    const int op_ms = rft_ms(1500);
    long long took;
    rf_ps_client_options o = {.client_id = 2,
                              .connect_timeout_ms = rft_ms(20000),
                              .op_timeout_ms = op_ms,
                              .lookup_timeout_ms = rft_ms(20000)};
    CHECK_OK(rf_ps_client_connect(cl.f, cl.addrs, 2, &o, &reader));
    rs_setup(&f, NULL, reader);
    rs_write_all(cl.chief, f.chief, 300);
    CHECK_OK(rf_ps_read_set_create(reader, f.x, RS_N, &set));
    rs_poison(&f);
    rs_stop(&cl.ps[1]);
    const bool target_cpu = pt_reads_need_target_cpu();
    if (!target_cpu) {
        /* verbs: a READ is served by the ps host's RNIC (the kernel's rxe
         * driver in the guest), not by the ps process; shm: the reader
         * copies from the segment it maps. Either way a stopped ps still
         * answers every READ: that is what one-sided means. */
        CHECK_OK(rf_ps_read_set_post(set));
        t0 = rf_now_ms();
        CHECK_OK(rf_ps_read_set_wait_all(set));
        for (int k = 0; k < RS_N; k++)
            rs_check(&f, k, 300, "ps 1 stopped (one-sided)");
        rft_note("%s: the stopped ps's READs completed in %lld ms",
                 pt_provider(), rf_now_ms() - t0);
    } else {
        CHECK_OK(rf_ps_read_set_post(set));
        static const int only3[] = {3, -1};
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, 2);
        rs_waiter stuck = {.set = set, .order = only3, .start = &start};
        pthread_t th;
        CHECK(pthread_create(&th, NULL, rs_wait_thread, &stuck) == 0,
              "pthread_create");
        pthread_barrier_wait(&start);
        rf_sleep_ms(100); /* the thread is inside its wait */
        t0 = rf_now_ms();
        for (int k = 0; k < RS_N; k += 2)
            CHECK_OK(rf_ps_read_set_wait(set, (size_t)k));
        took = rf_now_ms() - t0;
        rft_note("ps 0's transfers waited for in %lld ms while another thread "
                 "waited for ps 1's",
                 took);
        CHECK(took < op_ms / 2,
              "waits for arrived transfers took %lld ms while another thread "
              "waited (op timeout %d ms)",
              took, op_ms);
        for (int k = 0; k < RS_N; k += 2)
            rs_check(&f, k, 300, "ps 1 stopped");
        pthread_join(th, NULL);
        pthread_barrier_destroy(&start);
        rft_note("stopped ps: %s (after %lld ms)", stuck.msg[3],
                 stuck.took_ms[3]);
        CHECK(stuck.st[3] == RF_ERR_TIMEOUT, "wait(3) returned %s: %s",
              rf_status_string(stuck.st[3]), stuck.msg[3]);
        CHECK(strstr(stuck.msg[3], "transfer 3") &&
                  strstr(stuck.msg[3], "READ of 'rs3' part 0 from ps task 1") &&
                  strstr(stuck.msg[3], "no completion within"),
              "unclear message: %s", stuck.msg[3]);
        CHECK(stuck.took_ms[3] >= op_ms - 50 &&
                  stuck.took_ms[3] < op_ms + rft_ms(2000),
              "timed out after %lld ms, op timeout %d ms", stuck.took_ms[3],
              op_ms);
        /* ps 1's other transfers were flushed by the close: at once. */
        t0 = rf_now_ms();
        CHECK_ST(rf_ps_read_set_wait(set, 1), RF_ERR_DISCONNECTED);
        CHECK_MSG("'rs1' part 0");
        CHECK_MSG("ps task 1");
        CHECK(rf_ps_read_set_wait_all(set) == RF_ERR_DISCONNECTED,
              "wait_all: %s", rf_error_message());
        CHECK(rf_now_ms() - t0 < rft_ms(1000), "flushed transfers took %lld ms",
              rf_now_ms() - t0);
        CHECK_ST(rf_ps_read_set_post(set), RF_ERR_DISCONNECTED);
        CHECK_MSG("nothing posted");
        CHECK_MSG("ps task 1");
        CHECK_ST(rf_ps_read_set_wait(set, 0), RF_ERR_DISCONNECTED);
        CHECK_MSG("READ of 'rs0' part 0 from ps task 0");
        CHECK_MSG("not posted (the post was refused: ps task 1");
        CHECK_ST(rf_ps_read_set_wait_all(set), RF_ERR_DISCONNECTED);
    }
    CHECK(kill(cl.ps[1].child.pid, SIGCONT) == 0, "SIGCONT ps 1");
    CHECK_OK(rf_ps_client_reconnect(reader, false));
    rs_poison(&f);
    CHECK_OK(rf_ps_read_set_post(set));
    CHECK_OK(rf_ps_read_set_wait_all(set));
    for (int k = 0; k < RS_N; k++)
        rs_check(&f, k, 300, "after SIGCONT and reconnect");

    uint16_t port1 = cl.ps[1].port;
    if (!target_cpu) {
        /* verbs, shm: a stopped ps still serves READs (above), so reads cannot
         * be held in flight by stopping it first. Kill it, then post: its
         * transfers fail naming the ps (the post is refused once the
         * connection is known dead, or the READs fail or time out), and
         * ps 0's arrive. */
        rs_write_all(cl.chief, f.chief, 400);
        rs_poison(&f);
        rft_kill(&cl.ps[1].child);
        rf_status pst = rf_ps_read_set_post(set);
        /* shm only: a read runs in the reader's rf_post, copying from the
         * segment it maps, which outlives the killed ps; one posted before
         * the reader's provider has seen the hang-up completes with the
         * values the ps last held (fabric.h: a dead peer is reported
         * "within a bounded time"), checked below, then the death is. */
        const bool shm = !strcmp(pt_provider(), "shm");
        int stale = 0;
        if (pst == RF_OK) {
            for (int k = 0; k < RS_N; k++) {
                rf_status st = rf_ps_read_set_wait(set, (size_t)k);
                if (k % 2 == 0) {
                    CHECK(st == RF_OK, "wait(%d) for ps 0: %s", k,
                          rf_error_message());
                    rs_check(&f, k, 400, "ps 1 died");
                    continue;
                }
                if (shm && st == RF_OK) {
                    rs_check(&f, k, 400,
                             "ps 1 died (shm, read before the "
                             "hang-up was seen)");
                    stale++;
                    continue;
                }
                CHECK(st == RF_ERR_DISCONNECTED || st == RF_ERR_TIMEOUT,
                      "wait(%d) for the dead ps: %s: %s", k,
                      rf_status_string(st), rf_error_message());
                CHECK_MSG("ps task 1");
            }
            rft_note("%s, reads to a killed ps: %s", pt_provider(),
                     rf_error_message());
        } else {
            CHECK(pst == RF_ERR_DISCONNECTED, "post to a killed ps: %s: %s",
                  rf_status_string(pst), rf_error_message());
            CHECK_MSG("ps task 1");
            rft_note("%s, post to a killed ps: %s", pt_provider(),
                     rf_error_message());
        }
        rf_status wst = rf_ps_read_set_wait_all(set);
        if (stale == RS_N / 2) {
            /* Every read of ps 1 ran before the hang-up was seen: the
             * death must be reported within the peer timeout. */
            CHECK(wst == RF_OK, "wait_all after stale reads: %s",
                  rf_error_message());
            rft_note("shm: %d reads of the killed ps completed before its "
                     "hang-up was seen",
                     stale);
            long long end = rf_now_ms() + rft_ms(10000);
            for (;;) {
                pst = rf_ps_read_set_post(set);
                wst = rf_ps_read_set_wait_all(set);
                if (pst != RF_OK || wst != RF_OK)
                    break;
                CHECK(rf_now_ms() < end,
                      "reads of the killed ps still succeed after 10 s");
                rf_sleep_ms(20);
            }
            CHECK(wst == RF_ERR_DISCONNECTED || wst == RF_ERR_TIMEOUT,
                  "wait_all after the kill was seen: %s: %s",
                  rf_status_string(wst), rf_error_message());
            CHECK_MSG("ps task 1");
        }
        CHECK(wst == RF_ERR_DISCONNECTED || wst == RF_ERR_TIMEOUT,
              "wait_all after the kill: %s", rf_status_string(wst));
    } else {
        /* Reads in flight to a ps that dies: they fail (flushed, well before
         * the op timeout) naming the variable and the ps; ps 0's arrive. */
        rs_write_all(cl.chief, f.chief, 400);
        rs_poison(&f);
        rs_stop(&cl.ps[1]);
        CHECK_OK(rf_ps_read_set_post(set));
        rft_kill(&cl.ps[1].child);
        t0 = rf_now_ms();
        for (int k = 0; k < RS_N; k++) {
            rf_status st = rf_ps_read_set_wait(set, (size_t)k);
            if (k % 2 == 0) {
                CHECK(st == RF_OK, "wait(%d) for ps 0: %s", k,
                      rf_error_message());
                rs_check(&f, k, 400, "ps 1 died");
                continue;
            }
            CHECK(st == RF_ERR_DISCONNECTED, "wait(%d) for the dead ps: %s: %s",
                  k, rf_status_string(st), rf_error_message());
            if (k == 1)
                rft_note("in flight to a dead ps: %s", rf_error_message());
            char want[64];
            snprintf(want, sizeof want, "READ of 'rs%d' part 0 on ps task 1",
                     k);
            CHECK_MSG(want);
            CHECK_MSG("failed");
        }
        took = rf_now_ms() - t0;
        CHECK(took < op_ms, "the dead ps's reads took %lld ms (op timeout %d)",
              took, op_ms);
        CHECK_ST(rf_ps_read_set_wait_all(set), RF_ERR_DISCONNECTED);
    }

    /* ps 1 restarts empty: the handles on it are stale (the post is refused
     * naming one) until the chief recreates the shards and the reader looks
     * them up again; the set then reads from the new records. */
    pt_ps_start(&cl.ps[1], 1, port1);
    CHECK_ST(rf_ps_client_reconnect(reader, false), RF_ERR_ABORTED);
    CHECK_ST(rf_ps_read_set_post(set), RF_ERR_ABORTED);
    CHECK_MSG("nothing posted");
    CHECK_MSG("'rs1' part 0 is gone");
    CHECK_ST(rf_ps_read_set_wait_all(set), RF_ERR_ABORTED);
    /* The chief has not noticed yet: force. */
    CHECK_ST(rf_ps_client_reconnect(cl.chief, true), RF_ERR_ABORTED);
    for (int k = 1; k < RS_N; k += 2) {
        char name[16];
        rf_ps_shard_spec s = rs_spec(k, name, sizeof name);
        rf_ps_var *again = NULL;
        CHECK_OK(rf_ps_create(cl.chief, 1, &s, &again));
        CHECK(again == f.chief[k], "create did not refresh the chief's handle");
    }
    rs_write_all(cl.chief, f.chief, 500);
    for (int k = 1; k < RS_N; k += 2) {
        char name[16];
        rf_ps_shard_spec s = rs_spec(k, name, sizeof name);
        rf_ps_var *again = NULL;
        CHECK_OK(rf_ps_lookup(reader, 1, &s, &again));
        CHECK(again == f.vars[k], "lookup did not refresh the reader's handle");
    }
    rs_poison(&f);
    CHECK_OK(rf_ps_read_set_post(set));
    CHECK_OK(rf_ps_read_set_wait_all(set));
    for (int k = 0; k < RS_N; k++)
        rs_check(&f, k, 500, "after the restart");

    /* A killed ps the provider noticed before the post: ps 0's reads are
     * posted, ps 1 refuses its own, which fail naming it; nothing hangs. */
    rs_write_all(cl.chief, f.chief, 600);
    rs_poison(&f);
    rft_kill(&cl.ps[1].child);
    rf_sleep_ms(200);
    t0 = rf_now_ms();
    rf_status post = rf_ps_read_set_post(set);
    char post_msg[1024] = "";
    if (post != RF_OK) {
        snprintf(post_msg, sizeof post_msg, "%s", rf_error_message());
        CHECK_MSG("ps task 1");
    }
    rft_note("post after the kill: %s%s%s", rf_status_string(post),
             post ? ": " : "", post_msg);
    /* The usual outcome: ps 0's reads posted, ps 1 refused them. */
    bool nothing_posted = strstr(post_msg, "nothing posted") != NULL;
    for (int k = 0; k < RS_N; k++) {
        rf_status st = rf_ps_read_set_wait(set, (size_t)k);
        if (k % 2 == 0 && !nothing_posted) {
            CHECK(st == RF_OK, "wait(%d) for ps 0: %s", k, rf_error_message());
            rs_check(&f, k, 600, "ps 1 killed");
        } else if (k % 2 == 1) {
            CHECK(st != RF_OK, "wait(%d) for the killed ps returned RF_OK", k);
            rft_note("wait(%d): %s", k, rf_error_message());
            CHECK_MSG("ps task 1");
            char want[32];
            snprintf(want, sizeof want, "'rs%d' part 0", k);
            CHECK_MSG(want);
        }
    }
    CHECK(rf_ps_read_set_wait_all(set) != RF_OK, "wait_all after the kill");
    took = rf_now_ms() - t0;
    CHECK(took < op_ms + rft_ms(1000), "the killed ps's reads took %lld ms",
          took);
    rf_ps_read_set_destroy(set);
    rf_ps_client_close(reader);

    /* ps 1 is gone: shut ps 0 down by hand. */
    CHECK_ST(rf_ps_shutdown(cl.chief), RF_ERR_DISCONNECTED);
    char rest[128];
    rft_expect(&cl.ps[0].child, "EXIT ", rest, sizeof rest, rft_ms(10000));
    CHECK(strcmp(rest, "RF_OK") == 0, "ps 0 exited with %s", rest);
    rft_wait_ok(&cl.ps[0].child, rft_ms(10000));
    rf_ps_client_close(cl.chief);
    rf_fabric_close(cl.f);
}

static int count_bits(const uint64_t bits[RF_PS_DONE_WORDS])
{
    int n = 0;
    for (int w = 0; w < RF_PS_DONE_WORDS; w++)
        n += __builtin_popcountll(bits[w]);
    return n;
}

void case_workers_done(void)
{
    pt_cluster cl;
    pt_cluster_start(&cl, 2);
    uint64_t bits[RF_PS_DONE_WORDS];
    const uint32_t want[] = {1, 2, 70}, more[] = {1, 2, 3, 70};
    /* Empty when the ps starts. */
    CHECK_ST(rf_ps_wait_workers_done(cl.chief, want, 1, 10, 0, bits),
             RF_ERR_TIMEOUT);
    CHECK(count_bits(bits) == 0, "%d workers done before any announced",
          count_bits(bits));
    CHECK_MSG("0 of 1 workers");
    CHECK_MSG("missing client id 1");
    CHECK_OK(rf_ps_global_step_add(cl.chief, 7, NULL));

    char list[700];
    snprintf(list, sizeof list, "%s,%s", cl.addrs[0], cl.addrs[1]);
    /* the second "2" after the first finished: one connection per id */
    const char *ids[] = {"1", "2", "70", "2"};
    rft_child w[4];
    char rest[64];
    for (int i = 0; i < 4; i++) {
        char name[16];
        snprintf(name, sizeof name, "worker%d", i + 1);
        const char *args[] = {"done", "--ps", list, "--id", ids[i], NULL};
        pt_spawn(&w[i], name, args);
        if (i == 2) {
            CHECK_OK(rf_ps_wait_workers_done(cl.chief, want, 3, 20,
                                             rft_ms(20000), bits));
            for (int k = 0; k <= i; k++) {
                rft_expect(&w[k], "DONE", rest, sizeof rest, rft_ms(10000));
                rft_wait_ok(&w[k], rft_ms(10000));
            }
        }
    }
    rft_expect(&w[3], "DONE", rest, sizeof rest, rft_ms(10000));
    rft_wait_ok(&w[3], rft_ms(10000));
    CHECK_OK(rf_ps_workers_done_read(cl.chief, bits));
    CHECK(count_bits(bits) == 3, "%d bits set, want 3 (ids 1, 2, 70)",
          count_bits(bits));
    for (int i = 0; i < 3; i++)
        CHECK(rf_ps_worker_is_done(bits, want[i]), "id %u not done", want[i]);
    CHECK(bits[1] == 1ull << 6, "word 1 is 0x%llx, want bit 6 (id 70)",
          (unsigned long long)bits[1]);
    /* A wait that also wants id 3 times out naming it, within its bound. */
    long long t0 = rf_now_ms();
    CHECK_ST(rf_ps_wait_workers_done(cl.chief, more, 4, 20, 300, bits),
             RF_ERR_TIMEOUT);
    long long took = rf_now_ms() - t0;
    rft_note("wait for 4: %s (after %lld ms)", rf_error_message(), took);
    CHECK_MSG("3 of 4 workers");
    CHECK_MSG("missing client id 3");
    CHECK(took >= 290 && took < rft_ms(3000), "timeout after %lld ms", took);
    /* Its own words: global_step untouched, and the other way round. */
    int64_t gs = 0;
    CHECK_OK(rf_ps_global_step_read(cl.chief, &gs));
    CHECK(gs == 7, "global_step %lld, want 7", (long long)gs);
    CHECK_OK(rf_ps_global_step_write(cl.chief, 100));
    CHECK_OK(rf_ps_wait_workers_done(cl.chief, want, 3, 20, 0, bits));
    CHECK(count_bits(bits) == 3, "%d bits after a global_step write",
          count_bits(bits));
    CHECK_OK(rf_ps_wait_workers_done(cl.chief, NULL, 0, 20, 0, bits));
    /* The chief writes back bits it saw (after ps 0 restarted): ORed in. */
    uint64_t back[RF_PS_DONE_WORDS] = {1ull << 5, 0, 1ull << 2};
    CHECK_OK(rf_ps_workers_done_merge(cl.chief, back));
    CHECK_OK(rf_ps_workers_done_read(cl.chief, bits));
    CHECK(count_bits(bits) == 5 && rf_ps_worker_is_done(bits, 5) &&
              rf_ps_worker_is_done(bits, 130) && rf_ps_worker_is_done(bits, 70),
          "%d bits after the merge, want 5 (1, 2, 5, 70, 130)",
          count_bits(bits));
    pt_cluster_stop(&cl);
}
