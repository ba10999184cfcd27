/* bench/pullpush/pp_main.c: rf-bench-pullpush, pull and push of every
 * variable of a model held by two ps tasks, per provider, beside memcpy
 * (bench/README.md, "Pull and push per provider"). main parses the flags,
 * runs the --serve-ps role, or builds the model, starts the two ps tasks
 * (child processes), runs the measuring client and reaps the tasks. */
#include <stdio.h>

#include "pp_bench.h"
#include "pp_model.h"
#include "pp_opts.h"
#include "pp_ps.h"
#include "rdmaflow/env.h"

int main(int argc, char **argv)
{
    /* A malformed RF_LOG_LEVEL (or an RF_LOG_FILE that cannot be opened)
     * is a usage error, before anything runs. */
    if (rf_log_env_check() != RF_OK) {
        fprintf(stderr, "rf-bench-pullpush: %s\n", rf_error_message());
        return 2;
    }
    pp_opts o;
    int rc = pp_opts_parse(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : 2;
    if (o.serve_ps)
        return pp_ps_serve(&o);
    pp_model m;
    if (pp_model_build(o.size, PP_PS_TASKS, &m) != RF_OK) {
        fprintf(stderr, "rf-bench-pullpush: %s\n", rf_error_message());
        return 1;
    }
    /* The ps tasks first: nothing is registered yet when they fork. */
    rf_child ps[PP_PS_TASKS] = {0};
    uint16_t ports[PP_PS_TASKS] = {0};
    int started = 0;
    while (started < PP_PS_TASKS &&
           pp_ps_spawn(&o, started, &ps[started], &ports[started]) == 0)
        started++;
    rc = started == PP_PS_TASKS ? pp_bench_run(&o, &m, ports) : 1;
    /* After a good run the tasks exit on SHUTDOWN; otherwise stop them. */
    for (int i = 0; i < started; i++) {
        int st = pp_ps_reap(&ps[i], rc != 0, rc ? 5 : o.timeout_s);
        if (st != 0 && rc == 0) {
            fprintf(stderr, "rf-bench-pullpush: ps task %d exited with %d\n", i,
                    st);
            rc = 1;
        }
    }
    return rc;
}
