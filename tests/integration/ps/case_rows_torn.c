/* tests/integration/ps/case_rows_torn.c: self-verifying rows under one
 * writer and many readers of one row, as fast as they can.
 *
 * One writer (a client in a thread) keeps pushing a gradient whose
 * elements are all equal to row 0 of a table of wide rows (32 KiB), so
 * every whole row has all its elements equal and a mixed row is a torn
 * one. Meanwhile:
 *   - the unprotected control: CONTROLS raw peers (each its own fabric and
 *     connection, threads) READ row 0's record with one plain READ each
 *     and look at the row bytes without the check; it runs until it has
 *     seen a few torn rows (bounded by time and tries: if it never tears the
 *     case fails, since it could then not show that the check does
 *     anything) and reports how many tries the first tear took. Every
 *     torn copy it saw is also put through the check the readers use
 *     (ps_row_check): none may pass it;
 *   - the protected path: PROTECTED clients (threads) call
 *     rf_ps_read_rows on row 0, at the same time, at least as many times
 *     as the control needed for its first tear (and at least
 *     MIN_PROTECTED): no call may return a mixed row;
 *     the torn and owned records they saw and read again are reported
 *     (rf_ps_client_row_counters).
 * The writer is the ps's sparse apply (apply=ps), the case the done-when
 * asks on every provider: the ps service thread writes the row in place
 * while the provider serves READs (sock: its progress thread; shm: the
 * reader copies from the shared segment; verbs: the NIC). Then the same
 * with an apply=worker writer (the row update engine's WRITEs): the
 * protected path must never return a mixed row; its control must tear
 * too except on sock, where one progress thread serves the writer's
 * WRITEs and the readers' READs one after the other, so no READ can
 * overlap a WRITE there (reported, not required).
 * Finally, with everything quiet, the fabric's counters: one row READ by
 * rf_ps_read_rows is one work request (a READ), a range read of the table
 * one READ. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ps/ps_layout.h"
#include "rdmaflow/clock.h"
#include "tests/integration/ps/cases.h"
#include "tests/integration/ps/raw_peer.h"

enum {
    ROWS = 4,
    WIDTH = 8192, /* 32 KiB rows: many cache lines, long copies */
    CONTROLS = 2,
    PROTECTED = 2,
    MIN_PROTECTED = 2000,
    TEARS_WANTED = 5, /* control tears before stopping early */
    MAX_CONTROL_TRIES = 2000000
};

typedef struct shared {
    atomic_bool stop;
    atomic_ullong control_tries, control_torn, first_tear_try;
    atomic_ullong false_accepts; /* torn copies the check passed */
    atomic_ullong protected_reads;
} shared;

/* Buffers are allocated by the main thread before the threads start
 * (pt_buf_alloc is not thread-safe). */
typedef struct writer {
    rf_ps_client *c;
    rf_ps_var *v;
    pt_buf b;
    rf_ps_apply_mode mode;
    shared *sh;
    uint64_t pushes;
    rf_status st;
    char err[400];
} writer;

static void *write_loop(void *arg)
{
    writer *w = arg;
    pt_buf b = w->b;
    int64_t *idx = (int64_t *)(void *)b.p;
    float *g = b.p + 2;
    idx[0] = 0;
    for (uint64_t step = 0; !atomic_load(&w->sh->stop); step++) {
        /* +-1 and +-2 in turn: the row stays small integers, exact */
        float x = (float)((int)(step % 4) - 2 + (step % 4 >= 2));
        for (size_t j = 0; j < WIDTH; j++)
            g[j] = x;
        rf_status st =
            pt_push_sparse(w->c, w->v, idx, 1, g, b.mr, w->mode, false);
        if (st == RF_OK && w->mode == RF_PS_APPLY_PS)
            st = rf_ps_push_wait(w->c);
        if (st != RF_OK) {
            w->st = st;
            snprintf(w->err, sizeof w->err, "%s", rf_error_message());
            atomic_store(&w->sh->stop, true);
            break;
        }
        w->pushes++;
    }
    return NULL;
}

/* Whether the WIDTH floats at row are not all equal. */
static bool mixed(const float *row)
{
    for (size_t j = 1; j < WIDTH; j++)
        if (memcmp(&row[0], &row[j], 4) != 0)
            return true;
    return false;
}

/* A control reader: a raw peer on its own fabric, connected and told the
 * table's record by the main thread (the raw peer's setup calls share
 * static buffers), then READing in its thread. */
typedef struct control {
    rf_fabric *f;
    raw_peer r;
    rf_wr rd; /* one plain READ of row 0's record */
    size_t rb;
    shared *sh;
} control;

static void control_open(control *k, uint16_t port, uint32_t id, shared *sh)
{
    k->sh = sh;
    k->f = pt_fabric();
    raw_connect_ok(&k->r, k->f, port, id, false);
    raw_hello(&k->r, id, false);
    rf_mr_desc reg = raw_region0(&k->r);
    ps_entry e = raw_dir_entry(&k->r, "emb_torn");
    CHECK(e.record.region == 0, "the table's record is in region %u",
          e.record.region);
    ps_layout lay;
    CHECK_OK(
        ps_layout_full((uint64_t)ROWS * WIDTH * 4, 0, ROWS, 1, false, &lay));
    k->rb = (size_t)lay.row_bytes;
    k->rd =
        (rf_wr){.op = RF_OP_READ,
                .local = k->r.mem + 64 * 1024, /* the sends' half */
                .len = PS_ROW_HDR + k->rb,
                .local_mr = k->r.mr,
                .remote_addr = reg.addr + e.record.offset +
                               ps_row_off(lay.values_off, lay.row_stride, 0),
                .rkey = reg.rkey};
}

static void control_close(control *k)
{
    raw_close(&k->r);
    rf_fabric_close(k->f);
}

/* Plain READs of row 0's record (one work request, no check of the
 * version or CRC) until told to stop or the tries run out. */
static void *control_loop(void *arg)
{
    control *k = arg;
    const unsigned char *rec = k->rd.local;
    while (!atomic_load(&k->sh->stop)) {
        unsigned long long t = atomic_fetch_add(&k->sh->control_tries, 1) + 1;
        if (t > MAX_CONTROL_TRIES)
            break;
        CHECK_OK(raw_do(&k->r, k->rd));
        float row[WIDTH];
        memcpy(row, rec + PS_ROW_HDR, k->rb);
        if (!mixed(row))
            continue;
        unsigned long long zero = 0;
        atomic_compare_exchange_strong(&k->sh->first_tear_try, &zero, t);
        atomic_fetch_add(&k->sh->control_torn, 1);
        if (ps_row_check(rec, k->rb, NULL) == PS_ROW_OK)
            atomic_fetch_add(&k->sh->false_accepts, 1);
    }
    return NULL;
}

typedef struct reader {
    rf_ps_client *c;
    rf_ps_var *v;
    pt_buf b;
    shared *sh;
    uint64_t reads, bad;
    float first_bad[2];
} reader;

static void *read_loop(void *arg)
{
    reader *d = arg;
    pt_buf b = d->b;
    int64_t row = 0;
    rf_ps_rows s = {.var = d->v,
                    .field = RF_PS_FIELD_VALUES,
                    .rows = &row,
                    .n = 1,
                    .buf = b.p,
                    .mr = b.mr};
    while (!atomic_load(&d->sh->stop)) {
        CHECK_OK(rf_ps_read_rows(d->c, &s, 1));
        d->reads++;
        atomic_fetch_add(&d->sh->protected_reads, 1);
        if (mixed(b.p) && d->bad++ == 0) {
            d->first_bad[0] = b.p[0];
            for (size_t j = 1; j < WIDTH; j++)
                if (b.p[j] != b.p[0]) {
                    d->first_bad[1] = b.p[j];
                    break;
                }
        }
    }
    return NULL;
}

static void run_torn(pt_cluster *cl, rf_ps_var *wv, rf_ps_client *wc,
                     const rf_ps_shard_spec *spec, rf_ps_apply_mode mode,
                     bool must_tear)
{
    const char *name = mode == RF_PS_APPLY_PS ? "apply=ps" : "apply=worker";
    shared sh = {0};
    writer w = {.c = wc, .v = wv, .mode = mode, .sh = &sh};
    control k[CONTROLS];
    reader d[PROTECTED];
    pthread_t wt, kt[CONTROLS], dt[PROTECTED];
    for (int i = 0; i < PROTECTED; i++) {
        d[i] = (reader){.sh = &sh};
        d[i].c = pt_client(cl->f, cl->addrs, 1,
                           20 + (uint32_t)i + (mode == RF_PS_APPLY_PS ? 0 : 2),
                           false);
        CHECK_OK(rf_ps_lookup(d[i].c, 0, spec, &d[i].v));
        pt_buf_alloc(d[i].c, &d[i].b, WIDTH);
    }
    pt_buf_alloc(wc, &w.b, 2 + WIDTH);
    for (int i = 0; i < CONTROLS; i++)
        control_open(&k[i], cl->ps[0].port,
                     30 + (uint32_t)i + (mode == RF_PS_APPLY_PS ? 0 : 2), &sh);
    CHECK(pthread_create(&wt, NULL, write_loop, &w) == 0, "pthread_create");
    for (int i = 0; i < CONTROLS; i++)
        CHECK(pthread_create(&kt[i], NULL, control_loop, &k[i]) == 0,
              "pthread_create");
    for (int i = 0; i < PROTECTED; i++)
        CHECK(pthread_create(&dt[i], NULL, read_loop, &d[i]) == 0,
              "pthread_create");
    /* until the control tore TEARS_WANTED times and the protected reads
     * caught up with the tries its first tear took (so that they, running
     * alongside, had about as many chances to meet a tear: enough for a
     * reader without the check to return one), or the bound (20 s where
     * the control must tear, else 3 s) */
    long long t0 = rf_now_ms(), end = t0 + rft_ms(must_tear ? 20000 : 3000);
    while (rf_now_ms() < end && !atomic_load(&sh.stop)) {
        unsigned long long tries = atomic_load(&sh.control_tries);
        if (tries >= MAX_CONTROL_TRIES)
            break;
        unsigned long long first = atomic_load(&sh.first_tear_try);
        if (atomic_load(&sh.control_torn) >= TEARS_WANTED &&
            atomic_load(&sh.protected_reads) >=
                (first > MIN_PROTECTED ? first : MIN_PROTECTED))
            break;
        struct timespec ts = {.tv_nsec = 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    long long ms = rf_now_ms() - t0;
    atomic_store(&sh.stop, true);
    pthread_join(wt, NULL);
    for (int i = 0; i < CONTROLS; i++) {
        pthread_join(kt[i], NULL);
        control_close(&k[i]);
    }
    uint64_t preads = 0, pbad = 0;
    rf_ps_row_counters rc = {0};
    for (int i = 0; i < PROTECTED; i++) {
        pthread_join(dt[i], NULL);
        preads += d[i].reads;
        pbad += d[i].bad;
        rf_ps_row_counters one;
        rf_ps_client_row_counters(d[i].c, &one);
        rc.torn += one.torn;
        rc.busy += one.busy;
        rc.reads += one.reads;
        rf_ps_client_close(d[i].c);
    }
    CHECK(w.st == RF_OK, "%s writer: %s", name, w.err);
    unsigned long long tries = atomic_load(&sh.control_tries),
                       torn = atomic_load(&sh.control_torn),
                       first = atomic_load(&sh.first_tear_try);
    if (tries > MAX_CONTROL_TRIES)
        tries = MAX_CONTROL_TRIES;
    char at[64] = "none";
    if (first)
        snprintf(at, sizeof at, "the first at try %llu", first);
    rft_note("%s writer (%s): %llu pushes in %lld ms; control: %llu plain "
             "READs, %llu torn (%s), %llu passed the check; "
             "rf_ps_read_rows: %llu reads, %llu mixed, %llu torn and %llu "
             "owned records read again",
             name, pt_provider(), (unsigned long long)w.pushes, ms, tries, torn,
             at, (unsigned long long)atomic_load(&sh.false_accepts),
             (unsigned long long)preads, (unsigned long long)pbad,
             (unsigned long long)rc.torn, (unsigned long long)rc.busy);
    CHECK(pbad == 0,
          "%s: rf_ps_read_rows returned %llu mixed rows of row 0 (one had "
          "%g beside %g) in %llu reads",
          name, (unsigned long long)pbad, (double)d[0].first_bad[0],
          (double)d[0].first_bad[1], (unsigned long long)preads);
    CHECK(atomic_load(&sh.false_accepts) == 0,
          "%s: %llu torn copies passed the row check", name,
          (unsigned long long)atomic_load(&sh.false_accepts));
    if (must_tear)
        CHECK(torn > 0,
              "%s: the unprotected control never saw a torn row in %llu "
              "plain READs over %lld ms (%llu pushes): this run cannot show "
              "that the row check does anything",
              name, tries, ms, (unsigned long long)w.pushes);
    CHECK(preads >= MIN_PROTECTED && preads >= first,
          "%s: only %llu protected reads (the control's first tear took %llu "
          "tries) within %lld ms",
          name, (unsigned long long)preads, first, ms);
}

/* With nothing else running: what rf_ps_read_rows and a range read post,
 * counted by the fabric. */
static void count_work_requests(pt_cluster *cl, rf_ps_var *v)
{
    rf_ps_client *c = cl->chief;
    pt_buf b;
    pt_buf_alloc(c, &b, ROWS * WIDTH);
    int64_t idx[ROWS] = {3, 0, 2, 1};
    rf_ps_rows s = {.var = v,
                    .field = RF_PS_FIELD_VALUES,
                    .rows = idx,
                    .n = ROWS,
                    .buf = b.p,
                    .mr = b.mr};
    rf_fabric_counters a, z;
    rf_fabric_counters_get(cl->f, &a);
    CHECK_OK(rf_ps_read_rows(c, &s, 1));
    rf_fabric_counters_get(cl->f, &z);
    uint64_t all = 0;
    for (int i = 0; i < RF_FABRIC_OPS; i++)
        all += z.posted[i] - a.posted[i];
    uint64_t reads = z.posted[RF_OP_READ] - a.posted[RF_OP_READ];
    CHECK(reads == ROWS && all == ROWS,
          "rf_ps_read_rows of %d rows posted %llu READs and %llu work "
          "requests in all, want one READ per row",
          ROWS, (unsigned long long)reads, (unsigned long long)all);
    CHECK(z.bytes[RF_OP_READ] - a.bytes[RF_OP_READ] ==
              (uint64_t)ROWS * (PS_ROW_HDR + WIDTH * 4),
          "rf_ps_read_rows READ %llu bytes for %d rows of %d bytes",
          (unsigned long long)(z.bytes[RF_OP_READ] - a.bytes[RF_OP_READ]), ROWS,
          WIDTH * 4);
    rf_fabric_counters_get(cl->f, &a);
    CHECK_OK(
        rf_ps_read_row_range(c, v, RF_PS_FIELD_VALUES, 0, ROWS, b.p, b.mr));
    rf_fabric_counters_get(cl->f, &z);
    all = 0;
    for (int i = 0; i < RF_FABRIC_OPS; i++)
        all += z.posted[i] - a.posted[i];
    CHECK(all == 1 && z.posted[RF_OP_READ] - a.posted[RF_OP_READ] == 1,
          "rf_ps_read_row_range of %d rows posted %llu work requests, want "
          "one READ",
          ROWS, (unsigned long long)all);
    rft_note("one row READ is one work request: %d rows read with %d READs "
             "of %d bytes each; a range read of them is one READ",
             ROWS, ROWS, (int)(PS_ROW_HDR + WIDTH * 4));
}

void case_rows_torn(void)
{
    pt_cluster cl;
    pt_cluster_start(&cl, 1);
    rf_ps_client *c = cl.chief;
    rf_optim_config cfg;
    rf_optim_defaults(RF_OPTIM_SGD, &cfg);
    cfg.learning_rate = 1.0f;
    rf_ps_shard_spec spec = {.name = "emb_torn",
                             .dtype = RF_F32,
                             .shape = {.rank = 2, .dims = {ROWS, WIDTH}},
                             .trainable = true,
                             .optim = cfg,
                             .max_push_rows = 1};
    rf_ps_var *v = NULL;
    CHECK_OK(rf_ps_create(c, 0, &spec, &v));
    pt_buf init;
    pt_buf_alloc(c, &init, ROWS * WIDTH);
    for (size_t r = 0; r < ROWS; r++)
        for (size_t j = 0; j < WIDTH; j++)
            init.p[r * WIDTH + j] = (float)r;
    rf_ps_xfer x = {.var = v,
                    .field = RF_PS_FIELD_VALUES,
                    .buf = init.p,
                    .len = ROWS * WIDTH * sizeof(float),
                    .mr = init.mr};
    CHECK_OK(rf_ps_init_values(c, &x, 1));
    rf_ps_client *wc = pt_client(cl.f, cl.addrs, 1, 1, false);
    rf_ps_var *wv = NULL;
    CHECK_OK(rf_ps_lookup(wc, 0, &spec, &wv));
    run_torn(&cl, wv, wc, &spec, RF_PS_APPLY_PS, true);
    run_torn(&cl, wv, wc, &spec, RF_PS_APPLY_WORKER,
             strcmp(pt_provider(), "sock") != 0);
    rf_ps_client_close(wc);
    count_work_requests(&cl, v);
    pt_cluster_stop(&cl);
}
