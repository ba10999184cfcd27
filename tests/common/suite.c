/* tests/common/suite.c: running one case of a suite (see suite.h). */
#include "tests/common/suite.h"

#include <stdio.h>
#include <string.h>

#include "tests/common/budget.h"
#include "tests/common/check.h"
#include "tests/common/proc.h"

const rft_case *rft_case_find(const rft_case *cases, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(cases[i].name, name) == 0)
            return &cases[i];
    return NULL;
}

int rft_case_run(const rft_case *c, const char *context)
{
    rft_note("case %s (%s): %s", c->name, context, c->desc);
    rft_watchdog(c->name, c->budget_s);
    uint64_t t0 = rf_now_us();
    c->run();
    rft_watchdog(NULL, 0);
    rft_kill_all();
    printf("PASS %s (%.2f s)\n", c->name, (double)(rf_now_us() - t0) / 1e6);
    fflush(stdout);
    return 0;
}
