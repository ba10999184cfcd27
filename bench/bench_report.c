/* bench/bench_report.c: text (perftest's layout) and JSON output of
 * rf-bench results. */
#include "bench_report.h"

#include <inttypes.h>
#include <stdio.h>

#include "bench_clock.h"

#define RULE                                                                   \
    "---------------------------------------------------------------------"    \
    "------------------\n"

/* perftest's RESULT_FMT_LAT and RESULT_FMT (with MiB, which is what
 * perftest computes: its format_factor is 0x100000). */
#define LAT_COLUMNS                                                            \
    " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]  "     \
    "  t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% "           \
    "percentile[usec] \n"
#define BW_COLUMNS                                                             \
    " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   "    \
    "MsgRate[Mpps]\n"

/* How completions were awaited, for the header. */
static const char *completions(const bench_opts *o)
{
    if (!o->events)
        return "busy poll";
    if (o->spin_us == 0)
        return "rf_cq_wait, no spin";
    return "rf_cq_wait, spin";
}

void bench_report_header(const bench_report_ctx *c)
{
    if (c->o->json)
        return;
    printf(RULE);
    printf("                    %s Test (rf-bench)\n", c->t->title);
    printf(" Provider        : %-14s Peer           : %s\n", c->provider,
           c->peer);
    printf(" Iterations      : %-14" PRIu32 " TX depth       : %" PRIu32 "\n",
           c->iters, c->tx_depth);
    if (c->t->bw)
        printf(" CQ Moderation   : %-14" PRIu32 " Peak BW        : %s\n",
               c->cq_mod, c->o->no_peak ? "off" : "on");
    if (c->t->verb == BENCH_VERB_WRITE || c->t->verb == BENCH_VERB_WRITE_IMM)
        printf(" Inline hint     : %" PRIu32 "[B]\n", c->inline_size);
    if (bench_clock_use_tsc)
        printf(" Completions     : %-14s Timer          : rdtsc, %.3f GHz "
               "(vs CLOCK_MONOTONIC)\n",
               completions(c->o), 1.0 / bench_clock_ns_per_tick());
    else
        printf(" Completions     : %-14s Timer          : "
               "CLOCK_MONOTONIC\n",
               completions(c->o));
    if (c->t->pingpong)
        printf(" Latency         : ping-pong round trip / 2\n");
    else if (!c->t->bw)
        printf(" Latency         : full round trip (post to completion)\n");
    printf(RULE);
    printf("%s", c->t->bw ? BW_COLUMNS : LAT_COLUMNS);
    fflush(stdout);
}

void bench_report_lat(const bench_report_ctx *c, uint64_t size,
                      const bench_lat_stats *st)
{
    if (c->o->json) {
        printf("{\"test\":\"%s\",\"provider\":\"%s\",\"bytes\":%" PRIu64
               ",\"iterations\":%" PRIu32 ",\"t_min_usec\":%.3f,"
               "\"t_max_usec\":%.3f,\"t_typical_usec\":%.3f,"
               "\"t_avg_usec\":%.3f,\"t_stdev_usec\":%.3f,"
               "\"p99_usec\":%.3f,\"p99_9_usec\":%.3f,\"timer\":\"%s\","
               "\"verified\":true}\n",
               c->t->name, c->provider, size, c->iters, st->t_min, st->t_max,
               st->t_typical, st->t_avg, st->t_stdev, st->p99, st->p99_9,
               bench_clock_name());
    } else {
        printf(" %-7" PRIu64 " %-10" PRIu32 "    %-7.2f        %-7.2f      "
               "%-7.2f          %-7.2f        %-7.2f          %-7.2f        "
               "         %-7.2f\n",
               size, c->iters, st->t_min, st->t_max, st->t_typical, st->t_avg,
               st->t_stdev, st->p99, st->p99_9);
    }
    fflush(stdout);
}

void bench_report_bw(const bench_report_ctx *c, uint64_t size, uint32_t cq_mod,
                     const bench_bw_stats *st)
{
    if (c->o->json) {
        printf("{\"test\":\"%s\",\"provider\":\"%s\",\"bytes\":%" PRIu64
               ",\"iterations\":%" PRIu32 ",\"tx_depth\":%" PRIu32
               ",\"cq_mod\":%" PRIu32 ",\"bw_peak_mib_per_sec\":%.2f,"
               "\"bw_avg_mib_per_sec\":%.2f,\"msg_rate_mpps\":%.6f,"
               "\"timer\":\"%s\",\"verified\":true}\n",
               c->t->name, c->provider, size, c->iters, c->tx_depth, cq_mod,
               st->bw_peak, st->bw_avg, st->msg_rate, bench_clock_name());
    } else {
        printf(" %-7" PRIu64 "    %-10" PRIu32 "     %-7.2f             "
               "%-7.2f               %-7.6f\n",
               size, c->iters, st->bw_peak, st->bw_avg, st->msg_rate);
    }
    fflush(stdout);
}

void bench_report_footer(const bench_report_ctx *c)
{
    if (!c->o->json) {
        printf(RULE);
        fflush(stdout);
    }
}
