/* tools/trainer/export.h: writing a graph's variables to a safetensors
 * checkpoint file (--variables_out, with rdmaflow/checkpoint.h). */
#ifndef RF_TRAINER_EXPORT_H
#define RF_TRAINER_EXPORT_H

#include <stddef.h>

#include "rdmaflow/graph.h"

/* Writes every variable of g (sorted by name) to path with rf_ckpt_write;
 * -1 with err on failure (path is then untouched). */
int tr_export_variables(rf_graph *g, const char *path, char *err,
                        size_t errlen);

#endif
