/* tests/integration/ps/main.c: rf_ps_itest, the ps data-plane integration
 * tests. `rf_ps_itest --case NAME` runs one case of cases.def under a
 * watchdog (budget x RF_TEST_TIME_SCALE); `--list` names them. The fabric
 * is RF_FABRIC (default sock) on RF_TEST_HOST (default 127.0.0.1), so the
 * same binary runs in the rxe guest with RF_FABRIC=verbs. Exit 0 pass, 1
 * fail, 2 usage. */
#include <stdio.h>
#include <string.h>

#include "tests/common/suite.h"
#include "tests/integration/ps/cases.h"

static const rft_case cases[] = {
#define PT_CASE(n, b, d)                                                       \
    {.name = #n, .budget_s = b, .desc = d, .run = case_##n},
#include "tests/integration/ps/cases.def"
#undef PT_CASE
};
#define NCASES (sizeof cases / sizeof cases[0])

int main(int argc, char **argv)
{
    rft_set_who("driver");
    rft_proc_init(false);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < NCASES; i++)
            printf("%s\n", cases[i].name);
        return 0;
    }
    if (argc != 3 || strcmp(argv[1], "--case") != 0) {
        fprintf(stderr, "usage: rf_ps_itest --case NAME | --list\n");
        return 2;
    }
    const rft_case *c = rft_case_find(cases, NCASES, argv[2]);
    if (!c) {
        fprintf(stderr, "rf_ps_itest: no case '%s' (--list)\n", argv[2]);
        return 2;
    }
    char context[256];
    snprintf(context, sizeof context, "%s, host %s", pt_provider(), pt_host());
    rft_case_run(c, context);
    pt_buf_release_all();
    return 0;
}
