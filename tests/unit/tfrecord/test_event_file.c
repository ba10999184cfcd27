/* tests/unit/tfrecord/test_event_file.c: session/event_file.c.
 *   unit       file names (TensorFlow's pattern, ".1" for a second file in
 *              the same second), the refusals (no scalars, an empty tag);
 *   write DIR  the file read_events.py expects: file_version first, then
 *              steps 100, 200 and 300 with the scalars loss = 2 - s/200,
 *              global_step/sec = s/4 and examples/sec = 250 s / 4 (all
 *              exact in float), wall times 1764800000 + s. Prints the path.
 * What the records hold is checked by the independent reader
 * (read_events.py: protoc's Python classes of the same .proto). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "session/event_file.h"
#include "tests/common/check.h"

#define T0 1764800000.0

static void unit(void)
{
    char dir[] = "/tmp/rf-events-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char sub[300];
    snprintf(sub, sizeof sub, "%s/a/b", dir); /* created with its parent */
    rf_event_file *f1 = NULL, *f2 = NULL;
    CHECK_OK(rf_event_file_create(sub, T0, &f1));
    CHECK_OK(rf_event_file_create(sub, T0 + 0.5, &f2));
    char host[256];
    CHECK(gethostname(host, sizeof host) == 0, "gethostname");
    char want[600];
    snprintf(want, sizeof want, "%s/events.out.tfevents.1764800000.%s", sub,
             host);
    CHECK(strcmp(rf_event_file_path(f1), want) == 0, "path %s, want %s",
          rf_event_file_path(f1), want);
    strncat(want, ".1", sizeof want - strlen(want) - 1);
    CHECK(strcmp(rf_event_file_path(f2), want) == 0,
          "second file in the same second: %s, want %s", rf_event_file_path(f2),
          want);
    const char *tags[] = {"loss", ""};
    const float vals[] = {1.0f, 2.0f};
    CHECK_ST(rf_event_file_scalars(f1, 1, T0, 0, tags, vals),
             RF_ERR_INVALID_ARG);
    CHECK_ST(rf_event_file_scalars(f1, 1, T0, 2, tags, vals),
             RF_ERR_INVALID_ARG);
    CHECK(strstr(rf_error_message(), "scalar 1 has no tag") != NULL,
          "message: %s", rf_error_message());
    CHECK_OK(rf_event_file_scalars(f1, 1, T0, 1, tags, vals));
    CHECK_OK(rf_event_file_flush(f1));
    char p1[600], p2[600];
    snprintf(p1, sizeof p1, "%s", rf_event_file_path(f1));
    snprintf(p2, sizeof p2, "%s", rf_event_file_path(f2));
    CHECK_OK(rf_event_file_close(f1));
    CHECK_OK(rf_event_file_close(f2));
    CHECK_OK(rf_event_file_close(NULL));
    unlink(p1);
    unlink(p2);
    rmdir(sub);
    snprintf(sub, sizeof sub, "%s/a", dir);
    rmdir(sub);
    rmdir(dir);
}

static void write_dir(const char *dir)
{
    rf_event_file *f = NULL;
    CHECK_OK(rf_event_file_create(dir, T0, &f));
    const char *tags[] = {"loss", "global_step/sec", "examples/sec"};
    for (int s = 100; s <= 300; s += 100) {
        float vals[] = {2.0f - (float)s / 200.0f, (float)s / 4.0f,
                        250.0f * (float)s / 4.0f};
        CHECK_OK(rf_event_file_scalars(f, s, T0 + s, 3, tags, vals));
    }
    CHECK_OK(rf_event_file_flush(f));
    printf("%s\n", rf_event_file_path(f));
    CHECK_OK(rf_event_file_close(f));
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "unit") == 0) {
        unit();
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "write") == 0) {
        write_dir(argv[2]);
        return 0;
    }
    fprintf(stderr, "usage: rf_test_event_file unit | write DIR\n");
    return 2;
}
