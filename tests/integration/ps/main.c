/* tests/integration/ps/main.c: rf_ps_itest, the ps data-plane integration
 * tests. `rf_ps_itest --case NAME` runs one case of cases.def under a
 * watchdog (budget x RF_TEST_TIME_SCALE); `--list` names them. The fabric
 * is RF_FABRIC (default sock) on RF_TEST_HOST (default 127.0.0.1), so the
 * same binary runs in the rxe guest with RF_FABRIC=verbs. Exit 0 pass, 1
 * fail, 2 usage. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdmaflow/ps.h"
#include "tests/integration/ps/cases.h"

typedef struct pt_case {
    const char *name;
    int budget_s;
    const char *desc;
    void (*run)(void);
} pt_case;

static const pt_case cases[] = {
#define PT_CASE(n, b, d) {#n, b, d, case_##n},
#include "tests/integration/ps/cases.def"
#undef PT_CASE
};
#define NCASES (sizeof cases / sizeof cases[0])

static const char *running = "";

static void on_alarm(int sig)
{
    (void)sig;
    static const char a[] = "FAIL: watchdog: case ";
    static const char b[] = " exceeded its budget; killing children\n";
    (void)!write(2, a, sizeof a - 1);
    (void)!write(2, running, strlen(running));
    (void)!write(2, b, sizeof b - 1);
    pt_kill_all();
    _exit(1);
}

int main(int argc, char **argv)
{
    pt_proc_init(false);
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
    for (size_t i = 0; i < NCASES; i++) {
        if (strcmp(cases[i].name, argv[2]) != 0)
            continue;
        running = cases[i].name;
        signal(SIGALRM, on_alarm);
        alarm((unsigned)(cases[i].budget_s * pt_scale()));
        pt_note("case %s (%s, host %s): %s", cases[i].name, pt_provider(),
                pt_host(), cases[i].desc);
        long long t0 = pt_now_ms();
        cases[i].run();
        pt_kill_all();
        pt_buf_release_all();
        printf("PASS %s (%.1f s)\n", cases[i].name,
               (pt_now_ms() - t0) / 1000.0);
        return 0;
    }
    fprintf(stderr, "rf_ps_itest: no case '%s' (--list)\n", argv[2]);
    return 2;
}
