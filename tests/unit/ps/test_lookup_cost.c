/* tests/unit/ps/test_lookup_cost.c: the pure parts of the lookups' choice
 * (docs/DESIGN.md "Lookups that pick the cheaper way"): the cost model's
 * comparison (rf_ps_lookup_cost_gather_cheaper: the cheaper line at n
 * rows, row READs on a tie, a crossing where the lines cross), its
 * measure's refusals before anything is posted, and the way names of the
 * session option (rf_lookup_way_parse and _name: exactly "auto", "rows"
 * and "gather", anything else refused naming the accepted ones). The
 * measure itself and the session's use of it run against real ps tasks
 * (session.emb_lookup_ways, bench.emb_lookup_smoke). */
#include <stdio.h>
#include <string.h>

#include "rdmaflow/ps.h"
#include "rdmaflow/session.h"
#include "tests/common/check.h"

static void test_compare(void)
{
    /* READs 10 us + 0.25 us/row, gather 70 us + 0.05 us/row: the lines
     * cross at 300 rows */
    rf_ps_lookup_cost c = {.probe_rows = 256,
                           .rows_fixed_us = 10,
                           .rows_per_row_us = 0.25,
                           .gather_fixed_us = 70,
                           .gather_per_row_us = 0.05};
    CHECK(!rf_ps_lookup_cost_gather_cheaper(&c, 1), "1 row: READs");
    CHECK(!rf_ps_lookup_cost_gather_cheaper(&c, 299), "299 rows: READs");
    CHECK(!rf_ps_lookup_cost_gather_cheaper(&c, 300), "300 rows: a tie");
    CHECK(rf_ps_lookup_cost_gather_cheaper(&c, 301), "301 rows: gather");
    CHECK(rf_ps_lookup_cost_gather_cheaper(&c, 1e6), "10^6 rows: gather");
    /* a gather cheaper per request and per row wins everywhere */
    rf_ps_lookup_cost g = {.rows_fixed_us = 5,
                           .rows_per_row_us = 1,
                           .gather_fixed_us = 1,
                           .gather_per_row_us = 0.5};
    CHECK(rf_ps_lookup_cost_gather_cheaper(&g, 1), "gather at 1 row");
    /* equal lines: READs (they cost the ps nothing) */
    rf_ps_lookup_cost e = {.rows_fixed_us = 3,
                           .rows_per_row_us = 0.1,
                           .gather_fixed_us = 3,
                           .gather_per_row_us = 0.1};
    CHECK(!rf_ps_lookup_cost_gather_cheaper(&e, 100), "a tie: READs");
}

static void test_measure_refusals(void)
{
    rf_ps_lookup_cost c;
    char buf[64];
    CHECK_ST(rf_ps_lookup_cost_measure(NULL, NULL, buf, NULL, 4, &c),
             RF_ERR_INVALID_ARG);
    CHECK_MSG("rf_ps_lookup_cost_measure");
    CHECK_MSG("max_rows > 0");
}

static void test_way_names(void)
{
    static const struct {
        const char *name;
        rf_lookup_way way;
    } ok[] = {{"auto", RF_LOOKUP_AUTO},
              {"rows", RF_LOOKUP_ROWS},
              {"gather", RF_LOOKUP_GATHER}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        rf_lookup_way w = (rf_lookup_way)-1;
        CHECK_OK(rf_lookup_way_parse(ok[i].name, &w));
        CHECK(w == ok[i].way, "%s parsed as %d", ok[i].name, (int)w);
        CHECK(!strcmp(rf_lookup_way_name(ok[i].way), ok[i].name),
              "the name of %d is %s", (int)ok[i].way,
              rf_lookup_way_name(ok[i].way));
    }
    CHECK(RF_LOOKUP_AUTO == 0, "auto is the zeroed options' way");
    static const char *bad[] = {"", "Rows", "row", "gather ", "fast"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rf_lookup_way w = RF_LOOKUP_GATHER;
        CHECK_ST(rf_lookup_way_parse(bad[i], &w), RF_ERR_INVALID_ARG);
        CHECK(w == RF_LOOKUP_GATHER, "'%s' changed the way", bad[i]);
        CHECK_MSG("embedding_lookup");
        CHECK_MSG("not one of auto, rows, gather");
    }
    CHECK_ST(rf_lookup_way_parse(NULL, NULL), RF_ERR_INVALID_ARG);
    CHECK(rf_lookup_way_name((rf_lookup_way)7) == NULL, "name of 7");
    rf_session_options o;
    rf_session_options_init(&o);
    CHECK(o.embedding_lookup == RF_LOOKUP_AUTO, "the default is auto");
}

int main(int argc, char **argv)
{
    static const rft_group groups[] = {
        {"compare", test_compare},
        {"measure_refusals", test_measure_refusals},
        {"way_names", test_way_names},
    };
    return rft_groups_run(groups, sizeof groups / sizeof groups[0], argc, argv);
}
