/* tests/common/suite.h: what a multi-process suite's driver program shares:
 * its table of cases (each suite lists them in a cases.def) and how one
 * case runs. A suite's main parses its own command line (--case NAME,
 * --list, its options), finds the case and hands it to rft_case_run; the
 * suite itself only describes cases. */
#ifndef RF_TESTS_COMMON_SUITE_H
#define RF_TESTS_COMMON_SUITE_H

#include <stddef.h>

typedef struct rft_case {
    const char *name;
    int budget_s; /* watchdog budget, before the time scale */
    int flags;    /* the suite's own (the fabric suite: RT_SOCK_ONLY) */
    const char *desc;
    void (*run)(void); /* returns when every check passed */
} rft_case;

/* The case called name, or NULL. */
const rft_case *rft_case_find(const rft_case *cases, size_t n,
                              const char *name);

/* Runs c in this process: notes "case <name> (<context>): <desc>", arms the
 * watchdog with c's budget, calls c->run (a failure inside exits 1),
 * disarms the watchdog, kills any child the case left running and prints
 * "PASS <name> (<seconds> s)" on stdout. Returns 0, the exit status of a
 * pass. */
int rft_case_run(const rft_case *c, const char *context);

#endif
