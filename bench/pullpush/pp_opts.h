/* bench/pullpush/pp_opts.h: the command line of rf-bench-pullpush (the
 * client that measures, and the --serve-ps role it re-executes itself in
 * for each ps task). */
#ifndef RF_BENCH_PP_OPTS_H
#define RF_BENCH_PP_OPTS_H

#include <stdbool.h>
#include <stdint.h>

#include "rdmaflow/optim.h"

#define PP_PS_TASKS 2 /* the defaults are in the flag table, pp_opts.c */

typedef struct pp_opts {
    const char *provider; /* as given ("auto" when not); children get it too */
    char host[256];       /* address the ps tasks listen on (127.0.0.1) */
    uint64_t size;        /* nominal model bytes (the shapes are cut to it) */
    int rounds;           /* measured rounds */
    int warmup;           /* rounds run first and not counted */
    rf_optim_config optim;
    int timeout_s; /* bound on every wait (start-up, each operation) */
    /* --inject-extra-push: one apply=ps push the verifier is not told of,
     * so the exactly-once check must fail (the smoke test's proof that it
     * can). */
    bool inject_extra_push;
    /* --serve-ps role */
    bool serve_ps;
    int ps_index;
    int ready_fd;
} pp_opts;

/* Parses argv into *o. Returns 0, 1 after --help (printed), or 2 after a
 * usage error (message printed to stderr). */
int pp_opts_parse(int argc, char **argv, pp_opts *o);

#endif
