/* bench/emblookup/el_bench.h: the measuring worker of rf-bench-emb. */
#ifndef RF_BENCH_EL_BENCH_H
#define RF_BENCH_EL_BENCH_H

#include "el_opts.h"
#include "rdmaflow/spawn.h"

/* Runs the whole measurement against the started ps tasks (ports[i] of
 * ps[i]) and reports it; shuts the tasks down at the end. The exit status:
 * 0, or 1 (a failure or a data check that failed, said). */
int el_bench_run(const el_opts *o, rf_child *ps, const uint16_t *ports);

#endif
