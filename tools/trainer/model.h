/* tools/trainer/model.h: the --model values and the graphs they build.
 *   softmax            logits = x W + b (multinomial logistic regression)
 *   mlp[:W1,W2,...]    dense(Wi, relu)... then dense(10); default 256,128
 *   cnn[:C1,C2,D]      conv5x5(C1, SAME, relu) maxpool2 conv5x5(C2, SAME,
 *                      relu) maxpool2 flatten dense(D, relu) dense(10);
 *                      default 16,32,128
 *   wide_deep          the click-through model on the synthetic CTR data
 *                      (wide_deep.h; --hidden, --embedding_dim, ...)
 * Every layer is tf.layers-style (glorot_uniform kernels, zero biases).
 * The CNN default is the small one because it is the fastest to 0.90 on two
 * cores: at batch 100 with Adam it passes 0.91 after 7 epochs (about 3000
 * examples/s), while cnn:32,64,256 needs 5 epochs at a third of the speed
 * (tools/trainer/README.md has the measurements). */
#ifndef RF_TRAINER_MODEL_H
#define RF_TRAINER_MODEL_H

#include <stddef.h>

#include "rdmaflow/graph.h"

#define TR_MODEL_MAX_LAYERS 16
#define TR_MODEL_MAX_WIDTH  65536

typedef enum tr_model_kind {
    TR_MODEL_SOFTMAX = 0,
    TR_MODEL_MLP,
    TR_MODEL_CNN,
    TR_MODEL_WIDE_DEEP,
} tr_model_kind;

typedef struct tr_model {
    tr_model_kind kind;
    int nwidths;
    int widths[TR_MODEL_MAX_LAYERS]; /* mlp: hidden widths; cnn: C1, C2, D */
} tr_model;

/* Parses a --model value. -1 with the problem in err (without the flag
 * name) on error. */
int tr_model_parse(const char *text, tr_model *out, char *err, size_t errlen);

/* Canonical description, e.g. "mlp:256,128 (784-256-128-10)". */
int tr_model_describe(const tr_model *m, char *buf, size_t len);

/* Builds the model on x [-1, rows*cols] (images rows x cols, one channel)
 * and returns the logits [-1, classes], or NULL with the graph's error. */
rf_node *tr_model_build(rf_graph *g, const tr_model *m, rf_node *x, int rows,
                        int cols, int classes);

/* Number of trainable parameters in g. */
size_t tr_model_num_params(const rf_graph *g);

#endif
