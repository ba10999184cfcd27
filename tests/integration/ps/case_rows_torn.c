/* tests/integration/ps/case_rows_torn.c: row seqlocks. A writer (a second
 * client in a thread: apply=ps pushes, which the ps's service thread
 * applies while its provider serves READs, then apply=worker pushes, which
 * WRITE rows back one-sidedly) keeps setting rows of a table to values
 * where every element of a row is equal; meanwhile rf_ps_read_rows must
 * never return a mixed row, nor may rf_ps_read_row_range of the whole
 * table (its range READ's torn rows read again). A plain rf_ps_read of the
 * whole table (no version words) at the same time counts the mixed rows it
 * sees: reported, not asserted (whether a tear is caught depends on timing; see
 * the report's note when it sees none). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/clock.h"
#include "tests/integration/ps/cases.h"

enum { ROWS = 64, WIDTH = 2048, PUSH = 8, READ = 16 };

typedef struct writer {
    rf_ps_client *c;
    rf_ps_var *v;
    rf_ps_apply_mode mode;
    atomic_bool stop;
    uint64_t pushes;
    rf_status st;
    char err[400];
} writer;

static void *write_loop(void *arg)
{
    writer *w = arg;
    pt_buf b;
    pt_buf_alloc(w->c, &b, 2 * PUSH + PUSH * WIDTH);
    int64_t *idx = (int64_t *)(void *)b.p;
    float *g = b.p + 2 * PUSH;
    for (uint64_t step = 0; !atomic_load(&w->stop); step++) {
        for (size_t i = 0; i < PUSH; i++) {
            idx[i] = (int64_t)((step * PUSH + i * 7) % ROWS);
            float x = (float)((step + i) % 5) - 2.0f;
            for (size_t j = 0; j < WIDTH; j++)
                g[i * WIDTH + j] = x;
        }
        rf_status st =
            rf_ps_push_sparse(w->c, w->v, idx, PUSH, g, b.mr, w->mode, false);
        if (st == RF_OK && w->mode == RF_PS_APPLY_PS)
            st = rf_ps_push_wait(w->c);
        if (st != RF_OK) {
            w->st = st;
            snprintf(w->err, sizeof w->err, "%s", rf_error_message());
            break;
        }
        w->pushes++;
    }
    return NULL;
}

/* The first element of the first mixed row of rows[0..n), or -1. */
static long mixed(const float *rows, size_t n)
{
    for (size_t r = 0; r < n; r++)
        for (size_t j = 1; j < WIDTH; j++)
            if (memcmp(&rows[r * WIDTH], &rows[r * WIDTH + j], 4) != 0)
                return (long)r;
    return -1;
}

static void run_torn(pt_cluster *cl, rf_ps_var *v, rf_ps_client *wc,
                     rf_ps_var *wv, rf_ps_apply_mode mode)
{
    rf_ps_client *c = cl->chief;
    pt_buf rb, all, rng;
    pt_buf_alloc(c, &rb, READ * WIDTH);
    pt_buf_alloc(c, &all, ROWS * WIDTH);
    pt_buf_alloc(c, &rng, ROWS * WIDTH);
    writer w = {.c = wc, .v = wv, .mode = mode};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, write_loop, &w) == 0, "pthread_create");
    int64_t idx[READ];
    uint64_t reads = 0, plain = 0, torn_plain = 0;
    long long end = rf_now_ms() + rft_ms(1500);
    while (rf_now_ms() < end) {
        for (size_t i = 0; i < READ; i++)
            idx[i] = (int64_t)((reads * 5 + i * 3) % ROWS);
        rf_ps_rows s = {.var = v,
                        .field = RF_PS_FIELD_VALUES,
                        .rows = idx,
                        .n = READ,
                        .buf = rb.p,
                        .mr = rb.mr};
        CHECK_OK(rf_ps_read_rows(c, &s, 1));
        long m = mixed(rb.p, READ);
        CHECK(m < 0, "rf_ps_read_rows returned a mixed row %lld (read %llu)",
              (long long)idx[m < 0 ? 0 : m], (unsigned long long)reads);
        reads++;
        if (reads % 4 == 0) {
            rf_ps_xfer x = {.var = v,
                            .field = RF_PS_FIELD_VALUES,
                            .buf = all.p,
                            .len = ROWS * WIDTH * sizeof(float),
                            .mr = all.mr};
            CHECK_OK(rf_ps_read(c, &x, 1));
            plain++;
            for (size_t r = 0; r < ROWS; r++)
                torn_plain += mixed(all.p + r * WIDTH, 1) >= 0;
            CHECK_OK(rf_ps_read_row_range(c, v, RF_PS_FIELD_VALUES, 0, ROWS,
                                          rng.p, rng.mr));
            long rm = mixed(rng.p, ROWS);
            CHECK(rm < 0, "rf_ps_read_row_range returned a mixed row %ld", rm);
        }
    }
    atomic_store(&w.stop, true);
    pthread_join(t, NULL);
    CHECK(w.st == RF_OK, "writer: %s", w.err);
    CHECK(w.pushes > 0 && reads > 0, "%llu pushes, %llu row reads",
          (unsigned long long)w.pushes, (unsigned long long)reads);
    rft_note("%s writer: %llu pushes; %llu rf_ps_read_rows of %d rows, none "
             "mixed; %llu plain reads of the table saw %llu mixed rows",
             mode == RF_PS_APPLY_PS ? "apply=ps" : "apply=worker",
             (unsigned long long)w.pushes, (unsigned long long)reads, READ,
             (unsigned long long)plain, (unsigned long long)torn_plain);
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
                             .max_push_rows = PUSH};
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
    run_torn(&cl, v, wc, wv, RF_PS_APPLY_PS);
    run_torn(&cl, v, wc, wv, RF_PS_APPLY_WORKER);
    rf_ps_client_close(wc);
    pt_cluster_stop(&cl);
}
