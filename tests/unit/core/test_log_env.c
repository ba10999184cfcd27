/* tests/unit/core/test_log_env.c: the logger's environment and its rate
 * limit, one case per process (the logger reads RF_LOG_* once):
 *   bad    a malformed RF_LOG_LEVEL is RF_ERR_INVALID_ARG from
 *          rf_log_env_check and from rf_fabric_open, naming the variable,
 *          the value and the accepted values
 *   file   an RF_LOG_FILE that cannot be opened is RF_ERR_IO naming it
 *   limit  rf_log_limit_pass's accounting (every call either prints or is
 *          counted, and the count is handed to the next printed line), and
 *          100000 calls of one RF_LOG_DEBUG_LIMITED site and of
 *          rf_error_set(RF_ERR_TIMEOUT) at RF_LOG_LEVEL=debug write a
 *          bounded number of lines (about one a second, counted) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "rdmaflow/clock.h"
#include "rdmaflow/env.h"
#include "rdmaflow/fabric.h"
#include "rdmaflow/status.h"
#include "tests/common/check.h"

static void case_bad(void)
{
    setenv("RF_LOG_LEVEL", "verbose", 1);
    CHECK_ST(rf_log_env_check(), RF_ERR_INVALID_ARG);
    CHECK_MSG("RF_LOG_LEVEL=verbose");
    CHECK_MSG("error|warn|info|debug|trace");
    rf_fabric *fab = NULL;
    CHECK_ST(rf_fabric_open("sock", NULL, &fab), RF_ERR_INVALID_ARG);
    CHECK_MSG("RF_LOG_LEVEL=verbose is not one of");
    CHECK(fab == NULL, "a fabric was opened");
}

static void case_file(void)
{
    setenv("RF_LOG_FILE", "/nonexistent-rf-dir/x.log", 1);
    CHECK_ST(rf_log_env_check(), RF_ERR_IO);
    CHECK_MSG("RF_LOG_FILE=/nonexistent-rf-dir/x.log: cannot open");
}

static long count_lines(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "cannot read %s", path);
    char line[2048];
    long n = 0;
    while (fgets(line, sizeof line, f))
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

static void case_limit(void)
{
    /* the accounting, without the clock: a fresh limit passes once, then
     * counts; forcing it open hands the count over */
    rf_log_limit lim = {0};
    unsigned sup = 99;
    CHECK(rf_log_limit_pass(&lim, &sup) == 1 && sup == 0, "first: sup %u", sup);
    /* each call prints or is counted; a print hands over the count */
    unsigned passed = 0, handed = 0;
    for (int i = 0; i < 1000; i++)
        if (rf_log_limit_pass(&lim, &sup)) {
            passed++;
            handed += sup;
        }
    unsigned held = lim.suppressed;
    CHECK(passed + handed + held == 1000, "passed %u + handed %u + held %u",
          passed, handed, held);
    CHECK(held > 0, "nothing suppressed in 1000 calls");
    lim.next_ns = 0;
    CHECK(rf_log_limit_pass(&lim, &sup) == 1, "forced open did not pass");
    CHECK(sup == held, "handed over %u, held %u", sup, held);

    char path[] = "/tmp/rf-test-log-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    close(fd);
    setenv("RF_LOG_FILE", path, 1);
    setenv("RF_LOG_LEVEL", "debug", 1);
    CHECK_OK(rf_log_env_check());
    uint64_t t0 = rf_now_ns();
    for (int i = 0; i < 100000; i++)
        RF_LOG_DEBUG_LIMITED("idle loop %d", i);
    for (int i = 0; i < 100000; i++)
        (void)rf_error_set(RF_ERR_TIMEOUT, "idle wait %d", i);
    uint64_t secs = (rf_now_ns() - t0) / 1000000000u;
    long loop = count_lines(path, "idle loop");
    long wait = count_lines(path, "idle wait");
    /* one line per second per site, plus the first */
    CHECK(loop >= 1 && (uint64_t)loop <= secs + 2,
          "%ld lines from one limited site in %llu s", loop,
          (unsigned long long)secs);
    CHECK(wait >= 1 && (uint64_t)wait <= secs + 2,
          "%ld timeout lines in %llu s", wait, (unsigned long long)secs);
    /* an error that is not a timeout is never suppressed */
    for (int i = 0; i < 3; i++)
        (void)rf_error_set(RF_ERR_IO, "real error %d", i);
    CHECK(count_lines(path, "real error") == 3, "an RF_ERR_IO line was lost");
    unlink(path);
}

int main(int argc, char **argv)
{
    const char *c = argc > 1 ? argv[1] : "";
    unsetenv("RF_LOG_LEVEL");
    unsetenv("RF_LOG_FILE");
    if (strcmp(c, "bad") == 0)
        case_bad();
    else if (strcmp(c, "file") == 0)
        case_file();
    else if (strcmp(c, "limit") == 0)
        case_limit();
    else {
        fprintf(stderr, "usage: rf_test_log_env bad|file|limit\n");
        return 2;
    }
    printf("log_env %s passed\n", c);
    return 0;
}
