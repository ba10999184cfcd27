/* tests/integration/ps/case_rows_write.c: writing table rows from the
 * worker side (rf_ps_write_row_range, rf_ps_mark_initialized,
 * rf_ps_write_rows): the chief fills two tables on 2 ps by contiguous
 * ranges before their init flags (values and a slot), sets the flags
 * alone, then writes scattered rows of both tables in one call inside
 * their seqlocks; the ps holds exactly what was written, the rows read
 * back consistently (rf_ps_read_rows, rf_ps_read_row_range), and misuse (a
 * range past the end, a range into an initialised table, a bad index) is
 * refused before anything is posted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/integration/ps/cases.h"

enum { AR = 1000, AW = 8, BR = 300, BW = 5 };

static rf_ps_var *create(rf_ps_client *c, size_t ps, const char *name,
                         int64_t rows, int64_t width, rf_optimizer_kind k)
{
    rf_optim_config cfg;
    CHECK_OK(rf_optim_defaults(k, &cfg));
    cfg.learning_rate = 0.1f;
    rf_ps_shard_spec spec = {.name = name,
                             .dtype = RF_F32,
                             .shape = {.rank = 2, .dims = {rows, width}},
                             .trainable = true,
                             .optim = cfg,
                             .max_push_rows = 16};
    rf_ps_var *v = NULL;
    CHECK_OK(rf_ps_create(c, ps, &spec, &v));
    return v;
}

static void same(rf_ps_client *c, rf_ps_var *v, rf_ps_field f,
                 const float *want, size_t n, const char *what)
{
    float *got = pt_read_field(c, v, f, n);
    for (size_t i = 0; i < n; i++)
        CHECK(memcmp(&got[i], &want[i], 4) == 0,
              "%s: element %zu is %.9g on the ps, %.9g written", what, i,
              got[i], want[i]);
    free(got);
}

void case_rows_write(void)
{
    pt_cluster cl;
    pt_cluster_start(&cl, 2);
    rf_ps_client *c = cl.chief;
    rf_ps_var *a = create(c, 0, "emb_a", AR, AW, RF_OPTIM_ADAGRAD);
    rf_ps_var *b = create(c, 1, "emb_b", BR, BW, RF_OPTIM_SGD);
    rf_ps_var *both[2] = {a, b};
    pt_buf buf;
    pt_buf_alloc(c, &buf, AR * AW * 2 + BR * BW);
    float *va = buf.p, *sa = buf.p + AR * AW, *vb = buf.p + 2 * AR * AW;
    pt_fill(va, AR * AW, 1);
    pt_fill(sa, AR * AW, 2);
    pt_fill(vb, BR * BW, 3);
    float *slot_want = malloc(AR * AW * sizeof(float));
    CHECK(slot_want, "out of memory");
    rf_optim_config ada;
    CHECK_OK(rf_optim_defaults(RF_OPTIM_ADAGRAD, &ada));
    ada.learning_rate = 0.1f;
    rf_optim_slot_init(&ada, 0, slot_want, AR * AW);
    memcpy(slot_want + 10 * AW, sa + 10 * AW, 10 * AW * sizeof(float));

    /* Before the flags: ranges, one WRITE each. */
    CHECK_OK(
        rf_ps_write_row_range(c, a, RF_PS_FIELD_VALUES, 0, 600, va, buf.mr));
    CHECK_OK(rf_ps_write_row_range(c, a, RF_PS_FIELD_VALUES, 600, AR - 600,
                                   va + 600 * AW, buf.mr));
    CHECK_OK(rf_ps_write_row_range(c, a, RF_PS_FIELD_SLOT0, 10, 10,
                                   sa + 10 * AW, buf.mr));
    CHECK_OK(
        rf_ps_write_row_range(c, b, RF_PS_FIELD_VALUES, 0, BR, vb, buf.mr));
    CHECK_ST(
        rf_ps_write_row_range(c, a, RF_PS_FIELD_VALUES, 990, 20, va, buf.mr),
        RF_ERR_INVALID_ARG);
    CHECK_MSG("rows [990, 1010)");
    CHECK_ST(rf_ps_write_row_range(c, b, RF_PS_FIELD_SLOT0, 0, 1, vb, buf.mr),
             RF_ERR_INVALID_ARG); /* sgd has no slot */
    CHECK_ST(rf_ps_wait_initialized(c, both, 2, 10, 0), RF_ERR_TIMEOUT);
    CHECK_OK(rf_ps_mark_initialized(c, both, 2));
    CHECK_OK(rf_ps_wait_initialized(c, both, 2, 10, 0));
    same(c, a, RF_PS_FIELD_VALUES, va, AR * AW, "emb_a values by ranges");
    same(c, a, RF_PS_FIELD_SLOT0, slot_want, AR * AW, "emb_a slot by range");
    same(c, b, RF_PS_FIELD_VALUES, vb, BR * BW, "emb_b values by range");
    /* an initialised table may be read: ranges refused */
    CHECK_ST(rf_ps_write_row_range(c, a, RF_PS_FIELD_VALUES, 0, 1, va, buf.mr),
             RF_ERR_INVALID_ARG);
    CHECK_MSG("initialised already");

    /* After the flags: scattered rows of both tables, seqlocked. */
    pt_buf rows;
    pt_buf_alloc(c, &rows, 3 * AW + 2 * BW + 3 * AW);
    float *ra = rows.p, *rb = rows.p + 3 * AW, *back = rows.p + 3 * AW + 2 * BW;
    pt_fill(ra, 3 * AW, 4);
    pt_fill(rb, 2 * BW, 5);
    int64_t ia[3] = {5, 999, 17}, ib[2] = {0, 299};
    rf_ps_rows sets[2] = {
        {.var = a,
         .field = RF_PS_FIELD_VALUES,
         .rows = ia,
         .n = 3,
         .buf = ra,
         .mr = rows.mr},
        {.var = b,
         .field = RF_PS_FIELD_VALUES,
         .rows = ib,
         .n = 2,
         .buf = rb,
         .mr = rows.mr},
    };
    CHECK_OK(rf_ps_write_rows(c, sets, 2));
    for (int i = 0; i < 3; i++)
        memcpy(va + ia[i] * AW, ra + i * AW, AW * sizeof(float));
    for (int i = 0; i < 2; i++)
        memcpy(vb + ib[i] * BW, rb + i * BW, BW * sizeof(float));
    same(c, a, RF_PS_FIELD_VALUES, va, AR * AW, "emb_a after write_rows");
    same(c, b, RF_PS_FIELD_VALUES, vb, BR * BW, "emb_b after write_rows");
    /* the written rows' versions are even again: they read consistently */
    rf_ps_rows rd = {.var = a,
                     .field = RF_PS_FIELD_VALUES,
                     .rows = ia,
                     .n = 3,
                     .buf = back,
                     .mr = rows.mr};
    CHECK_OK(rf_ps_read_rows(c, &rd, 1));
    CHECK(!memcmp(back, ra, 3 * AW * sizeof(float)),
          "rows read back differ from those written");

    /* A range read: the whole table in two calls, as written. */
    pt_buf whole;
    pt_buf_alloc(c, &whole, AR * AW);
    CHECK_OK(rf_ps_read_row_range(c, a, RF_PS_FIELD_VALUES, 0, 700, whole.p,
                                  whole.mr));
    CHECK_OK(rf_ps_read_row_range(c, a, RF_PS_FIELD_VALUES, 700, AR - 700,
                                  whole.p + 700 * AW, whole.mr));
    CHECK(!memcmp(whole.p, va, AR * AW * sizeof(float)),
          "rf_ps_read_row_range differs from what was written");
    CHECK_ST(rf_ps_read_row_range(c, a, RF_PS_FIELD_VALUES, 999, 2, whole.p,
                                  whole.mr),
             RF_ERR_INVALID_ARG);
    CHECK_MSG("rows [999, 1001)");

    /* A bad index in the second set: nothing of either set is written. */
    int64_t bad[2] = {3, BR};
    sets[1].rows = bad;
    pt_fill(ra, 3 * AW, 6);
    CHECK_ST(rf_ps_write_rows(c, sets, 2), RF_ERR_INVALID_ARG);
    CHECK_MSG("index 300 at position 1 of set 1");
    same(c, a, RF_PS_FIELD_VALUES, va, AR * AW, "emb_a after a refused write");
    CHECK_OK(rf_ps_write_rows(c, sets, 0));
    free(slot_want);
    pt_cluster_stop(&cl);
    printf("rows write: ok\n");
}
