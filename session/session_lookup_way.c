/* session/session_lookup_way.c: which way a lookup fetches an embedding
 * table shard's rows (rf_session_options.embedding_lookup): one-sided row
 * READs (rf_ps_read_rows) or the ps-side gather (rf_ps_gather_rows).
 * rows and gather force the way; auto measures, once per shard when the
 * session is created, what each way costs against the shard's own ps
 * (rf_ps_lookup_cost_measure: a line per way, cost(n) = fixed + per_row
 * * n, through timed probes of 1 and up to 256 rows). A step's lookup
 * then takes, per shard, the cheaper line at the step's distinct rows of
 * that shard (sess_way_of); the lines cross at most once, so the choice
 * is a threshold, logged once per shard with its numbers. The rows are
 * the same either way (both check each row's CRC32C), so the choice
 * changes nothing but the time and where the CPU work is done. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "session/session_internal.h"

const char *rf_lookup_way_name(rf_lookup_way way)
{
    switch (way) {
    case RF_LOOKUP_AUTO:
        return "auto";
    case RF_LOOKUP_ROWS:
        return "rows";
    case RF_LOOKUP_GATHER:
        return "gather";
    }
    return NULL;
}

rf_status rf_lookup_way_parse(const char *text, rf_lookup_way *out)
{
    static const rf_lookup_way all[] = {RF_LOOKUP_AUTO, RF_LOOKUP_ROWS,
                                        RF_LOOKUP_GATHER};
    for (size_t i = 0; text && i < sizeof all / sizeof all[0]; i++)
        if (!strcmp(text, rf_lookup_way_name(all[i]))) {
            if (out)
                *out = all[i];
            return RF_OK;
        }
    return rf_error_set(RF_ERR_INVALID_ARG,
                        "embedding_lookup: '%s' is not one of auto, rows, "
                        "gather",
                        text ? text : "(null)");
}

rf_lookup_way sess_way_of(const sess_var *v, size_t n)
{
    const rf_session_lookup_info *w = &v->way;
    return w->switch_rows && n >= w->switch_rows ? w->above : w->below;
}

/* The table's first lookup (its gathered buffer, registered for both
 * ways, holds the probes' rows), or NULL. */
static const sess_lookup *lookup_of_table(const rf_session *s, size_t vi)
{
    for (size_t k = 0; k < s->rows.nlookups; k++) {
        const sess_lookup *L = &s->rows.lookups[k];
        for (size_t p = 0; p < L->nparts; p++)
            if (L->part_var[p] == vi)
                return L;
    }
    return NULL;
}

static rf_ps_lookup_cost model_of(const rf_session_lookup_info *w)
{
    return (rf_ps_lookup_cost){.probe_rows = w->probe_rows,
                               .rows_fixed_us = w->rows_fixed_us,
                               .rows_per_row_us = w->rows_per_row_us,
                               .gather_fixed_us = w->gather_fixed_us,
                               .gather_per_row_us = w->gather_per_row_us};
}

static rf_lookup_way cheaper(const rf_session_lookup_info *w, double n)
{
    rf_ps_lookup_cost m = model_of(w);
    return rf_ps_lookup_cost_gather_cheaper(&m, n) ? RF_LOOKUP_GATHER
                                                   : RF_LOOKUP_ROWS;
}

/* The threshold from the fitted lines over [1, bound]. */
static void decide(rf_session_lookup_info *w, size_t bound)
{
    w->below = cheaper(w, 1);
    w->above = cheaper(w, (double)bound);
    w->switch_rows = 0;
    if (w->below == w->above)
        return;
    size_t lo = 1, hi = bound; /* cheaper(lo) == below, cheaper(hi) == above */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (cheaper(w, (double)mid) == w->above)
            hi = mid;
        else
            lo = mid;
    }
    w->switch_rows = hi;
}

static const char *way_words(rf_lookup_way way)
{
    return way == RF_LOOKUP_GATHER ? "the ps-side gather" : "row READs";
}

static void explain(rf_session_lookup_info *w, size_t bound)
{
    int k;
    if (w->configured != RF_LOOKUP_AUTO) {
        snprintf(w->reason, sizeof w->reason,
                 "table '%s' (ps %zu): %s, as embedding_lookup=%s says",
                 w->table, w->ps_task, way_words(w->below),
                 rf_lookup_way_name(w->configured));
        return;
    }
    k = snprintf(w->reason, sizeof w->reason,
                 "table '%s' (ps %zu): auto: row READs %.1f us + %.3f "
                 "us/row, gather %.1f us + %.3f us/row (probes of 1 and %u "
                 "rows): ",
                 w->table, w->ps_task, w->rows_fixed_us, w->rows_per_row_us,
                 w->gather_fixed_us, w->gather_per_row_us, w->probe_rows);
    if (k < 0 || (size_t)k >= sizeof w->reason)
        return;
    if (!w->switch_rows)
        snprintf(w->reason + k, sizeof w->reason - (size_t)k,
                 "%s, the cheaper at 1 to %zu rows", way_words(w->below),
                 bound);
    else
        snprintf(w->reason + k, sizeof w->reason - (size_t)k,
                 "%s below %llu rows, %s from there to %zu",
                 way_words(w->below), (unsigned long long)w->switch_rows,
                 way_words(w->above), bound);
}

/* The table's bound: the most distinct rows of it one lookup may have. */
static size_t bound_of(const sess_var *v)
{
    size_t b = v->max_push_rows ? v->max_push_rows : 1;
    return v->rows && v->rows < b ? v->rows : b;
}

static rf_status choose_one(rf_session *s, size_t vi)
{
    sess_var *v = &s->v[vi];
    rf_session_lookup_info *w = &v->way;
    *w = (rf_session_lookup_info){.table = rf_node_name(v->var),
                                  .ps_task = v->ps_task,
                                  .configured = s->opt.embedding_lookup,
                                  .below = RF_LOOKUP_ROWS,
                                  .above = RF_LOOKUP_ROWS};
    size_t bound = bound_of(v);
    const sess_lookup *L = lookup_of_table(s, vi);
    if (w->configured != RF_LOOKUP_AUTO) {
        w->below = w->above = w->configured;
        explain(w, bound);
        return RF_OK;
    }
    if (s->offline || !L || !L->cap) {
        snprintf(w->reason, sizeof w->reason,
                 "table '%s' (ps %zu): auto: %s; row READs", w->table,
                 w->ps_task,
                 s->offline ? "measured when a session connects"
                            : "no lookup of it has ids to measure with");
        return RF_OK;
    }
    rf_ps_lookup_cost m;
    rf_status st = rf_ps_lookup_cost_measure(s->client, v->shard, L->gathered,
                                             s->rows.gathered_mr, L->cap, &m);
    if (st != RF_OK)
        return rf_error_set(st, "table '%s': %s", rf_node_name(v->var),
                            rf_error_message());
    w->probe_rows = m.probe_rows;
    w->rows_fixed_us = m.rows_fixed_us;
    w->rows_per_row_us = m.rows_per_row_us;
    w->gather_fixed_us = m.gather_fixed_us;
    w->gather_per_row_us = m.gather_per_row_us;
    decide(w, bound);
    explain(w, bound);
    return RF_OK;
}

rf_status sess_lookup_ways_choose(rf_session *s)
{
    for (size_t i = 0; i < s->nv; i++) {
        if (!s->v[i].table)
            continue;
        rf_status st = choose_one(s, i);
        if (st != RF_OK)
            return st;
        if (!s->offline) /* --explain_only measures nothing to say */
            RF_LOG_INFO("session: embedding lookups of %s", s->v[i].way.reason);
    }
    return RF_OK;
}

size_t rf_session_lookup_info_get(const rf_session *s,
                                  rf_session_lookup_info *out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; s && i < s->nv; i++) {
        if (!s->v[i].table)
            continue;
        if (out && n < max)
            out[n] = s->v[i].way;
        n++;
    }
    return n;
}
