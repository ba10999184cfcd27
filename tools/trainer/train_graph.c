/* tools/trainer/train_graph.c: builds the training graph and its executor
 * (see train_graph.h). */
#include "train_graph.h"

#include "rdmaflow/device.h"

#include <stdio.h>
#include <string.h>

int tr_session_create(const tr_flags *f, int rows, int cols, int classes,
                      rf_replica_device_setter *setter, tr_session *s,
                      char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->example_dim = (size_t)rows * (size_t)cols;
    rf_status st = rf_graph_create(&s->g);
    if (st != RF_OK) {
        snprintf(err, errlen, "creating the graph: %s", rf_error_message());
        return -1;
    }
    rf_graph *g = s->g;
    rf_graph_set_seed(g, f->seed);
    if (setter && rf_graph_push_replica_device_setter(g, setter) != RF_OK) {
        snprintf(err, errlen, "replica_device_setter: %s", rf_error_message());
        goto fail;
    }
    /* variable_scope(partitioner=min_max_variable_partitioner(
     * max_partitions=<ps tasks>, min_slice_size=N)) around the model */
    if (setter && f->partition_min_slice_bytes > 0) {
        rf_partitioner p;
        if (rf_min_max_variable_partitioner(
                rf_replica_device_setter_ps_tasks(setter), 0,
                f->partition_min_slice_bytes,
                RF_BYTES_PER_STRING_ELEMENT_DEFAULT, &p) != RF_OK ||
            rf_graph_set_partitioner(g, &p) != RF_OK) {
            snprintf(err, errlen, "--partition_min_slice_bytes: %s",
                     rf_error_message());
            goto fail;
        }
    }
    /* get_or_create_global_step first, as the classic trainer does: with
     * round-robin placement it lands on ps task 0, where the cluster's
     * global_step word is. */
    s->global_step = rf_global_step(g);
    s->x =
        rf_placeholder(g, RF_F32, RF_SHAPE(-1, (int64_t)s->example_dim), "x");
    s->y = rf_placeholder(g, RF_I32, RF_SHAPE(-1), "y");
    s->logits = tr_model_build(g, &f->model, s->x, rows, cols, classes);
    rf_graph_set_partitioner(g, NULL); /* the model's variables only */
    s->loss = rf_reduce_mean(
        g,
        rf_sparse_softmax_cross_entropy_with_logits(g, s->y, s->logits, NULL),
        NULL, 0, false, "loss");
    /* correct = Sum(Cast(Equal(ArgMax(logits), y))) */
    rf_node *pred = rf_argmax(g, s->logits, -1, RF_I32, "prediction");
    s->correct = rf_reduce_sum(
        g, rf_cast(g, rf_equal(g, pred, s->y, NULL), RF_F32, NULL), NULL, 0,
        false, "correct");
    /* the batch's accuracy, for --metrics_out (fetched only there) */
    s->accuracy = rf_accuracy(g, s->logits, s->y, "batch_accuracy");
    if (rf_graph_status(g) != RF_OK) {
        snprintf(err, errlen, "building the model: %s", rf_graph_error(g));
        goto fail;
    }
    if (!s->global_step || rf_minimize(g, &f->optim, s->loss, s->global_step,
                                       &s->train_op) != RF_OK) {
        snprintf(err, errlen, "building the optimizer: %s", rf_error_message());
        goto fail;
    }
    if (setter)
        rf_device_fn_pop(g);
    if (rf_graph_initialize_variables(g) != RF_OK) {
        snprintf(err, errlen, "initializing variables: %s", rf_error_message());
        goto fail;
    }
    rf_executor_options eo = {.threads = (int)f->threads};
    if (rf_executor_create(&eo, &s->ex) != RF_OK) {
        snprintf(err, errlen, "creating the executor: %s", rf_error_message());
        goto fail;
    }
    return 0;
fail:
    tr_session_destroy(s);
    return -1;
}

void tr_session_destroy(tr_session *s)
{
    rf_executor_destroy(s->ex);
    rf_graph_destroy(s->g);
    memset(s, 0, sizeof *s);
}
