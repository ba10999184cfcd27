/* bench/pullpush/pp_model.h: the benchmark's model and its data. An MLP of
 * width w (4 dense layers [w,w] with biases [w], logits [w,10] and [10]),
 * w the largest whole number with 16 w^2 <= the nominal size, so the
 * float32 kernels are the nominal size for 1M/16M/256M (w 256/1024/4096)
 * and the biases add 56 w + 40 bytes. Variables are placed on the ps tasks
 * as rf-trainer places them by default: replica_device_setter's greedy
 * strategy (least bytes so far, ties to the lowest task), in creation
 * order. Values and gradients are deterministic, so the check after the
 * rounds recomputes what the ps must hold: the initial values with the
 * optimizer applied once per push. */
#ifndef RF_BENCH_PP_MODEL_H
#define RF_BENCH_PP_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "rdmaflow/optim.h"
#include "rdmaflow/ps.h"
#include "rdmaflow/status.h"

#define PP_MAX_VARS 10

typedef struct pp_var {
    char name[32];
    int64_t dims[2];
    int rank;
    size_t ps_task;
    size_t bytes; /* float32 values */
    size_t off;   /* offset in the model's buffers (64-byte aligned) */
} pp_var;

typedef struct pp_model {
    int64_t width;
    size_t nvars;
    pp_var v[PP_MAX_VARS];
    size_t bytes;       /* sum of the variables' bytes */
    size_t span;        /* buffer size holding them all, aligned */
    size_t ps_bytes[2]; /* bytes per ps task */
    size_t ps_vars[2];
} pp_model;

/* Builds the model for a nominal size (>= 4096) and places it on
 * num_ps (2) ps tasks. RF_ERR_INVALID_ARG / RF_ERR_NO_MEMORY with a
 * message. */
rf_status pp_model_build(uint64_t size, size_t num_ps, pp_model *m);

/* The shard spec of variable i (trainable float32 with optimizer). */
rf_ps_shard_spec pp_model_spec(const pp_model *m, size_t i,
                               const rf_optim_config *optim);

/* Initial value and gradient of element e of variable i. */
float pp_initial(size_t i, size_t e);
float pp_gradient(size_t i, size_t e);

/* Fills buf (span bytes) with every variable's initial values or
 * gradients at their offsets. */
void pp_fill(const pp_model *m, unsigned char *buf, int gradients);

/* Checks that buf holds, for every variable, the initial values with
 * optim applied `pushes` times with the variable's gradient (each apply
 * advancing the variable's own scalars, as the ps record does), bitwise.
 * RF_OK, or RF_ERR_CORRUPT naming the first variable and element that
 * differ and both values. */
rf_status pp_verify(const pp_model *m, const unsigned char *buf,
                    const rf_optim_config *optim, unsigned pushes);

#endif
