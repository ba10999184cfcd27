/* tests/fuzz/fuzz_ckpt_state.c: libFuzzer target for the checkpoint
 * directory's "checkpoint" state file (session/ckpt_state.c, TensorFlow's
 * CheckpointState text format). ckpt_state_read takes a directory, so the
 * input is written as DIR/checkpoint in a private temporary directory
 * (libFuzzer's -max_len bounds it; removed at exit). A refusal must say why
 * and leave the state empty; a state that reads must format to a file that
 * reads back to the same latest and list of checkpoints. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "session/ckpt_internal.h"

static char dir[64];
static char file[96];

static void cleanup(void)
{
    unlink(file);
    rmdir(dir);
}

static void put(const void *data, size_t size)
{
    FILE *fp = fopen(file, "wb");
    REQUIRE(fp);
    REQUIRE(fwrite(data, 1, size, fp) == size);
    REQUIRE(fclose(fp) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/fuzz_ckpt_state.XXXXXX",
                 tmp && strlen(tmp) < 32 ? tmp : "/tmp");
        REQUIRE(mkdtemp(dir));
        snprintf(file, sizeof file, "%s/%s", dir, CKPT_STATE_NAME);
        atexit(cleanup);
    }
    put(data, size);
    ckpt_state s;
    bool found = false;
    if (ckpt_state_read(dir, &s, &found) != RF_OK) {
        REQUIRE(found && rf_error_message()[0] && !s.latest && s.n == 0);
        fuzz_require_inert(rf_error_message());
        return 0;
    }
    REQUIRE(found && s.latest);
    char *text = ckpt_state_format(&s);
    REQUIRE(text);
    put(text, strlen(text));
    free(text);
    ckpt_state t;
    REQUIRE(ckpt_state_read(dir, &t, &found) == RF_OK && found);
    REQUIRE(strcmp(s.latest, t.latest) == 0 && s.n == t.n);
    for (size_t i = 0; i < s.n; i++)
        REQUIRE(strcmp(s.all[i], t.all[i]) == 0);
    ckpt_state_free(&t);
    ckpt_state_free(&s);
    return 0;
}
