/* tools/trainer/train_graph.h: the training graph and what runs it: input
 * placeholders, the model's logits, the mean cross-entropy loss,
 * Optimizer.minimize with global_step, the number of correct predictions
 * for evaluation, the batch accuracy for the metrics file, and the
 * executor. */
#ifndef RF_TRAINER_TRAIN_GRAPH_H
#define RF_TRAINER_TRAIN_GRAPH_H

#include "flags.h"
#include "rdmaflow/device.h"
#include "rdmaflow/graph.h"

typedef struct tr_session {
    rf_graph *g;
    rf_executor *ex;
    rf_node *x;           /* float32 [?, rows*cols] */
    rf_node *y;           /* int32 [?] */
    rf_node *logits;      /* float32 [?, classes] */
    rf_node *loss;        /* mean sparse softmax cross-entropy, scalar */
    rf_node *train_op;    /* AssignAdd(global_step, 1) after the updates */
    rf_node *global_step; /* int64 scalar variable */
    rf_node *correct;     /* float32 scalar: correct predictions in batch */
    rf_node *accuracy;    /* float32 scalar: correct / batch (metrics) */
    size_t example_dim;
} tr_session;

/* Builds the graph (seeded with f->seed), initializes the variables and
 * creates the executor. With setter (a distributed worker), the whole graph
 * is built under tf.device(replica_device_setter): variables on the ps
 * tasks, everything else on this worker. On error returns -1 with a message
 * in err and leaves nothing allocated. */
int tr_session_create(const tr_flags *f, int rows, int cols, int classes,
                      rf_replica_device_setter *setter, tr_session *s,
                      char *err, size_t errlen);
void tr_session_destroy(tr_session *s);

#endif
