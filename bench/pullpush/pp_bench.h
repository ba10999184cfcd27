/* bench/pullpush/pp_bench.h: the client side of rf-bench-pullpush: connect
 * to the ps tasks as the chief, create and initialise the model's shards,
 * check a pull and one push of each mode, run the interleaved rounds, check
 * again and print the results, then shut the ps tasks down. */
#ifndef RF_BENCH_PP_BENCH_H
#define RF_BENCH_PP_BENCH_H

#include <stdint.h>

#include "pp_model.h"
#include "pp_opts.h"

/* 0 after a run whose checks passed, 1 otherwise (message printed). */
int pp_bench_run(const pp_opts *o, const pp_model *m,
                 const uint16_t ports[PP_PS_TASKS]);

#endif
