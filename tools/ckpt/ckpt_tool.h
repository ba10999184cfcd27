/* tools/ckpt/ckpt_tool.h: what the rf-ckpt commands share: opening a FILE
 * or the latest checkpoint of a DIR, and the commands (main.c, diff.c). */
#ifndef RF_TOOLS_CKPT_TOOL_H
#define RF_TOOLS_CKPT_TOOL_H

#include "rdmaflow/checkpoint.h"
#include "rdmaflow/escape.h"

/* Opens path: a checkpoint file, or a directory's latest checkpoint (a
 * skipped newer one is reported on stderr). Prints the error and returns
 * NULL on failure. */
rf_ckpt *tool_open(const char *path);

/* rf-ckpt diff: exit 0 when a and b are equal within the tolerances, 1
 * when they differ or one cannot be read. */
int tool_diff(const char *a, const char *b, double rtol, double atol);

#endif
