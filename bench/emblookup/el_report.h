/* bench/emblookup/el_report.h: rf-bench-emb's output: a banner stating
 * every setting and the CPU, one fixed-column row per way, the ratios,
 * and (--json FILE) the same figures as one JSON object. */
#ifndef RF_BENCH_EL_REPORT_H
#define RF_BENCH_EL_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "el_opts.h"
#include "rdmaflow/ps.h"

/* auto: each step and shard by the cheaper way of the shard's cost model
 * (rf_ps_lookup_cost, measured before the steps), as the session's
 * embedding_lookup=auto does */
enum { EL_ROWS = 0, EL_DENSE, EL_GATHER, EL_AUTO, EL_WAYS };

typedef struct el_way_result {
    const char *name;
    bool skipped;
    char why[200]; /* skipped: the reason */
    int steps;     /* measured */
    double median_us, p99_us, examples_per_s;
    double wire_bytes;               /* per step, from what was posted */
    double ps_cpu_us;                /* per step, both ps processes */
    double gather_rows;              /* per step, the ps counters' delta */
    double gather_reqs;              /* per step */
    double worker_faults, ps_faults; /* minor page faults per step */
    double rows_checked; /* rows compared with the table pattern, in all */
    double rows_per_s;   /* unique rows per median step time */
    double wrs_per_row;  /* work requests the worker posted per unique row
                            (the fabric's counters) */
    /* totals over the measured steps, for exact checks; gather_asked:
     * the rows this way asked the ps to gather (auto: of the shards whose
     * lookup took the gather) */
    uint64_t unique_total, wire_total, gathered_total, wrs_total;
    uint64_t gather_asked_total;
    /* auto: shard lookups (a step's lookup of one shard) by the gather,
     * of all */
    uint64_t auto_gathered, auto_lookups;
} el_way_result;

typedef struct el_run_info {
    const el_opts *o;
    const char *provider; /* what the connection to ps 0 uses */
    int64_t part_rows[2];
    uint64_t row_bytes;
    double unique_rows;        /* per step, both shards */
    double ids;                /* per step */
    double part_unique[2];     /* per step, each shard */
    rf_ps_lookup_cost cost[2]; /* each shard's, for auto */
    char cpu[256];
    char date[64];
} el_run_info;

/* The CPU's model name (/proc/cpuinfo), or "unknown". */
void el_cpu_model(char *buf, size_t len);
void el_report_text(const el_run_info *r, const el_way_result *w);
/* auto's choice over its steps: "rows", "gather" or "mixed". */
const char *el_auto_choice(const el_way_result *x);
/* 0, or -1 (said) when the file cannot be written. */
int el_report_json(const el_run_info *r, const el_way_result *w,
                   const char *path);

#endif
