/* bench/emblookup/el_main.c: rf-bench-emb, embedding lookups three ways
 * (one-sided row READs, whole-shard READs, a ps-side gather) from a table
 * mod-partitioned over two ps tasks (bench/README.md, "Embedding
 * lookups"; bench/emb-lookup runs the sweep). main parses the flags, runs
 * the --serve-ps role, or starts the two ps tasks, runs the measuring
 * worker and reaps the tasks. */
#include <stdio.h>

#include "el_bench.h"
#include "el_opts.h"
#include "el_ps.h"
#include "rdmaflow/env.h"

int main(int argc, char **argv)
{
    if (rf_log_env_check() != RF_OK) {
        fprintf(stderr, "rf-bench-emb: %s\n", rf_error_message());
        return 2;
    }
    el_opts o;
    int rc = el_opts_parse(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : 2;
    if (o.serve_ps)
        return el_ps_serve(&o);
    /* The ps tasks first: nothing is registered yet when they fork. */
    rf_child ps[EL_PS_TASKS] = {0};
    uint16_t ports[EL_PS_TASKS] = {0};
    int started = 0;
    while (started < EL_PS_TASKS &&
           el_ps_spawn(&o, started, &ps[started], &ports[started]) == 0)
        started++;
    rc = started == EL_PS_TASKS ? el_bench_run(&o, ps, ports) : 1;
    for (int i = 0; i < started; i++) {
        int st = el_ps_reap(&ps[i], rc != 0, rc ? 5 : o.timeout_s);
        if (st != 0 && rc == 0) {
            fprintf(stderr, "rf-bench-emb: ps task %d exited with %d\n", i, st);
            rc = 1;
        }
    }
    return rc;
}
