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
#define BW_COLUMNS_GBITS                                                       \
    " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   "      \
    "MsgRate[Mpps]\n"
/* perftest's duration latency columns */
#define LAT_DURATION_COLUMNS                                                   \
    " #bytes        #iterations       t_avg[usec]    tps average\n"
#define BW_COLUMNS                                                             \
    " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   "    \
    "MsgRate[Mpps]\n"

/* --report_gbits: MiB/s as perftest's Gb/s (10^9 bits per second). */
static double gbits(double mib_per_sec)
{
    return mib_per_sec * 1048576.0 * 8.0 / 1e9;
}

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
    printf(" Number of qps   : %-14" PRIu32 " Transport type : %s\n", c->o->qps,
           c->dev ? "IB" : c->provider);
    if (c->dev) {
        /* perftest's device lines */
        printf(" Device          : %-14s Port           : %d\n", c->dev->device,
               c->dev->port);
        printf(" Mtu             : %d[B]\n", c->dev->active_mtu);
        printf(" Link type       : %s\n", c->dev->link_layer);
        printf(" GID index       : %d\n", c->dev->gid_index);
        printf(" GID             : %s (%s%s%s)\n", c->dev->gid,
               c->dev->gid_type, c->dev->netdev[0] ? ", netdev " : "",
               c->dev->netdev);
    }
    if (c->o->duration_s) {
        char dur[24];
        snprintf(dur, sizeof dur, "%" PRIu32 " s", c->o->duration_s);
        printf(" Duration        : %-14s TX depth       : %" PRIu32 "\n"
               " Margins         : %" PRIu32 " s (not measured, at either "
               "end)\n",
               dur, c->tx_depth,
               c->o->margin_s ? c->o->margin_s : BENCH_DEFAULT_MARGIN);
    } else
        printf(" Iterations      : %-14" PRIu32 " TX depth       : %" PRIu32
               "\n",
               c->iters, c->tx_depth);
    if (c->t->bw)
        printf(" CQ Moderation   : %-14" PRIu32 " Peak BW        : %s\n",
               c->cq_mod, c->o->no_peak || c->o->duration_s ? "off" : "on");
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
    if (c->progress == RF_PROGRESS_MANUAL)
        printf(" Progress        : manual (served while polling)\n");
    else if (c->o->progress == RF_PROGRESS_MANUAL)
        printf(" Progress        : auto (%s makes its own progress; manual "
               "asked)\n",
               c->provider);
    if (c->t->pingpong)
        printf(" Latency         : ping-pong round trip / 2\n");
    else if (!c->t->bw)
        printf(" Latency         : full round trip (post to completion)\n");
    printf(RULE);
    if (c->o->duration_s && !c->t->bw)
        printf("%s", LAT_DURATION_COLUMNS);
    else if (c->t->bw)
        printf("%s", c->o->report_gbits ? BW_COLUMNS_GBITS : BW_COLUMNS);
    else
        printf("%s", LAT_COLUMNS);
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
               "\"bw_avg_mib_per_sec\":%.2f,\"msg_rate_mpps\":%.6f,",
               c->t->name, c->provider, size, c->iters, c->tx_depth, cq_mod,
               st->bw_peak, st->bw_avg, st->msg_rate);
        if (c->o->report_gbits)
            printf("\"bw_peak_gbit_per_sec\":%.2f,"
                   "\"bw_avg_gbit_per_sec\":%.2f,",
                   gbits(st->bw_peak), gbits(st->bw_avg));
        /* -q: iterations is per endpoint (perftest's -n), the rates are
         * all endpoints' */
        printf("\"qps\":%" PRIu32 ",\"operations\":%" PRIu64 ",", c->o->qps,
               (uint64_t)c->iters * c->o->qps);
        printf("\"timer\":\"%s\",\"verified\":true}\n", bench_clock_name());
    } else {
        double k = c->o->report_gbits ? gbits(1.0) : 1.0;
        printf(" %-7" PRIu64 "    %-10" PRIu32 "     %-7.2f             "
               "%-7.2f               %-7.6f\n",
               size, c->iters, st->bw_peak * k, st->bw_avg * k, st->msg_rate);
    }
    fflush(stdout);
}

void bench_report_duration(const bench_report_ctx *c, uint64_t size,
                           uint32_t cq_mod, const bench_duration *d)
{
    double secs = (double)d->sample_ticks * bench_clock_ns_per_tick() / 1e9;
    double rate = secs > 0 ? (double)d->sample_ops / secs : 0;
    if (!c->t->bw) {
        double t_avg = d->sample_ops ? secs * 1e6 / (double)d->sample_ops /
                                           c->t->rtt_factor
                                     : 0;
        if (c->o->json)
            printf("{\"test\":\"%s\",\"provider\":\"%s\",\"bytes\":%" PRIu64
                   ",\"duration_s\":%" PRIu32 ",\"iterations\":%" PRIu64
                   ",\"t_avg_usec\":%.3f,\"tps\":%.2f,\"timer\":\"%s\","
                   "\"verified\":true}\n",
                   c->t->name, c->provider, size, c->o->duration_s,
                   d->sample_ops, t_avg, rate, bench_clock_name());
        else
            printf(" %-7" PRIu64 "       %-10" PRIu64 "        %-7.2f        "
                   "%-7.2f\n",
                   size, d->sample_ops, t_avg, rate);
        fflush(stdout);
        return;
    }
    bench_bw_stats st = {.bw_peak = 0,
                         .bw_avg = rate * (double)size / 1048576.0,
                         .msg_rate = rate / 1e6};
    if (c->o->json) {
        printf("{\"test\":\"%s\",\"provider\":\"%s\",\"bytes\":%" PRIu64
               ",\"duration_s\":%" PRIu32 ",\"iterations\":%" PRIu64
               ",\"tx_depth\":%" PRIu32 ",\"cq_mod\":%" PRIu32
               ",\"bw_avg_mib_per_sec\":%.2f,\"msg_rate_mpps\":%.6f,",
               c->t->name, c->provider, size, c->o->duration_s, d->sample_ops,
               c->tx_depth, cq_mod, st.bw_avg, st.msg_rate);
        if (c->o->report_gbits)
            printf("\"bw_avg_gbit_per_sec\":%.2f,", gbits(st.bw_avg));
        printf("\"qps\":%" PRIu32 ",\"operations_run\":%" PRIu64 ",", c->o->qps,
               d->done);
        printf("\"timer\":\"%s\",\"verified\":true}\n", bench_clock_name());
    } else {
        double k = c->o->report_gbits ? gbits(1.0) : 1.0;
        printf(" %-7" PRIu64 "    %-10" PRIu64 "     %-7.2f             "
               "%-7.2f               %-7.6f\n",
               size, d->sample_ops, 0.0, st.bw_avg * k, st.msg_rate);
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
