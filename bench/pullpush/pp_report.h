/* bench/pullpush/pp_report.h: rf-bench-pullpush's output: a banner that
 * states every setting, the model's variables, and one fixed-column row
 * per operation (bench/README.md, "Pull and push per provider"). */
#ifndef RF_BENCH_PP_REPORT_H
#define RF_BENCH_PP_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pp_model.h"
#include "pp_opts.h"

typedef enum pp_op {
    PP_MEMCPY = 0,
    PP_PULL,
    PP_PUSH_PS,
    PP_PUSH_WORKER,
    PP_OPS
} pp_op;

extern const char *const pp_op_names[PP_OPS];

typedef struct pp_results {
    const char *provider; /* the fabric's name */
    uint16_t ports[2];
    int rounds;
    double t_s[PP_OPS][1000]; /* seconds per measured round */
    uint64_t wire[PP_OPS];    /* payload bytes posted per operation */
    bool have_tcp;
    double tcp[PP_OPS][1000]; /* kernel TCP bytes per measured round */
} pp_results;

void pp_report_banner(const pp_opts *o, const pp_model *m, const pp_results *r);
void pp_report_table(const pp_model *m, const pp_results *r);

#endif
