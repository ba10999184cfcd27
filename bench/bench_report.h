/* bench/bench_report.h: rf-bench's output. Text mode prints perftest's
 * banner and column layout (so the same parser reads both); --json prints
 * one JSON object per result row and nothing else on stdout. */
#ifndef RF_BENCH_REPORT_H
#define RF_BENCH_REPORT_H

#include <stdint.h>

#include <rdmaflow/fabric_info.h>

#include "bench_loops.h"
#include "bench_opts.h"
#include "bench_stats.h"

typedef struct bench_report_ctx {
    const bench_opts *o;
    const bench_test_info *t;
    const char *provider;
    const char *peer; /* "HOST:PORT" */
    /* the RDMA device, port and GID of a verbs endpoint; NULL otherwise */
    const rf_fabric_device *dev;
    uint32_t iters;
    uint32_t tx_depth;
    uint32_t cq_mod;
    uint32_t inline_size;
    rf_progress progress; /* what the fabric does (rf_fabric_progress) */
} bench_report_ctx;

void bench_report_header(const bench_report_ctx *c);
void bench_report_lat(const bench_report_ctx *c, uint64_t size,
                      const bench_lat_stats *st);
void bench_report_bw(const bench_report_ctx *c, uint64_t size, uint32_t cq_mod,
                     const bench_bw_stats *st);
/* -D: perftest's duration report (bandwidth: average only, no peak;
 * latency: t_avg and transactions per second). */
void bench_report_duration(const bench_report_ctx *c, uint64_t size,
                           uint32_t cq_mod, const bench_duration *d);
void bench_report_footer(const bench_report_ctx *c);

#endif
