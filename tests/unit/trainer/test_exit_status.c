/* tests/unit/trainer/test_exit_status.c: rf-trainer's exit statuses
 * (tools/trainer/exit_status.c): every rf_status code's status, the
 * retryable ones >= 128 and the permanent ones in 1..127 (Kubeflow's
 * restartPolicy: ExitCode), values outside the enum, the kinds' words, and
 * the final line: the first reason kept, on stderr for a failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exit_status.h"
#include "tests/common/check.h"

static void check_table(void)
{
    static const struct {
        rf_status st;
        int want;
    } rows[] = {
        {RF_OK, 0},
        {RF_ERR_INVALID_ARG, 2},
        {RF_ERR_NO_MEMORY, 1},
        {RF_ERR_NO_RESOURCE, 1},
        {RF_ERR_UNSUPPORTED, 2},
        {RF_ERR_REMOTE_ACCESS, 1},
        {RF_ERR_TIMEOUT, 138},
        {RF_ERR_DISCONNECTED, 138},
        {RF_ERR_ABORTED, 138},
        {RF_ERR_UNAVAILABLE, 138},
        {RF_ERR_IO, 1},
        {RF_ERR_CORRUPT, 1},
        {RF_ERR_AUTH, 2},
        {RF_ERR_NUMERIC, 1},
    };
    size_t n = sizeof rows / sizeof rows[0];
    CHECK(n == RF_STATUS_COUNT - 1,
          "%zu rows for %d codes (RF_INPROGRESS "
          "aside): a new code needs its row",
          n, RF_STATUS_COUNT);
    for (size_t i = 0; i < n; i++) {
        int got = tr_exit_status(rows[i].st);
        CHECK(got == rows[i].want, "%s: exit %d, want %d",
              rf_status_string(rows[i].st), got, rows[i].want);
        CHECK(got == 0 || (got >= 1 && got <= 127) ==
                              (strcmp(tr_exit_kind(got), "retryable") != 0),
              "%s: exit %d is %s", rf_status_string(rows[i].st), got,
              tr_exit_kind(got));
    }
    CHECK(tr_exit_status(RF_INPROGRESS) == 1, "RF_INPROGRESS: exit %d",
          tr_exit_status(RF_INPROGRESS));
    CHECK(tr_exit_status((rf_status)-99) == 1, "-99: exit %d",
          tr_exit_status((rf_status)-99));
    CHECK(tr_exit_status((rf_status)-RF_STATUS_COUNT) == 1, "-COUNT: exit %d",
          tr_exit_status((rf_status)-RF_STATUS_COUNT));
    CHECK(!strcmp(tr_exit_kind(0), "success"), "%s", tr_exit_kind(0));
    CHECK(!strcmp(tr_exit_kind(1), "permanent"), "%s", tr_exit_kind(1));
    CHECK(!strcmp(tr_exit_kind(2), "usage"), "%s", tr_exit_kind(2));
    CHECK(!strcmp(tr_exit_kind(138), "retryable"), "%s", tr_exit_kind(138));
    CHECK(!strcmp(tr_exit_kind(143), "retryable"), "%s", tr_exit_kind(143));
    CHECK(!strcmp(tr_exit_kind(127), "permanent"), "%s", tr_exit_kind(127));
}

/* The final line of a failure whose first reason was a lost ps: stderr
 * (redirected to a file) ends with it, the later failure not named. */
static void check_final_line(void)
{
    char path[] = "/tmp/rf_exit_status_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    CHECK(dup2(fd, STDERR_FILENO) >= 0, "dup2");
    CHECK(!tr_exit_has_reason(), "a reason before any failure");
    int rc = tr_exit_fail_status(RF_ERR_TIMEOUT, "worker 1",
                                 "gave up after max_wait_secs=2 waiting for "
                                 "/job:ps/task:1");
    int rc2 = tr_exit_fail(1, "--trace", "a later failure");
    tr_exit_final_line(rc);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    CHECK(rc == 138 && rc2 == 1, "returned %d and %d", rc, rc2);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "reopening %s", path);
    char line[512], last[512] = "";
    int lines = 0;
    while (fgets(line, sizeof line, f)) {
        snprintf(last, sizeof last, "%s", line);
        lines++;
    }
    fclose(f);
    unlink(path);
    CHECK(lines == 3, "%d lines on stderr, want 3", lines);
    const char *want = "rf-trainer: exit 138 (retryable): worker 1: gave up "
                       "after max_wait_secs=2 waiting for /job:ps/task:1\n";
    CHECK(!strcmp(last, want), "last line '%s', want '%s'", last, want);
}

int main(void)
{
    check_table();
    check_final_line();
    printf("exit_status passed\n");
    return 0;
}
