/* session/push_ps.c: the apply=ps push strategy (TensorFlow's placement:
 * the apply op is colocated with the variable). Each gradient is posted as
 * a WRITE_WITH_IMM into this worker's inbox on the variable's ps
 * (rf_ps_push_inbox) from the executor thread that produced it, while
 * backprop goes on; the ps's apply thread runs the optimizer and
 * acknowledges, and the step waits for every acknowledgement before
 * global_step moves. An embedding table's gradient goes as its staged rows
 * (rf_ps_push_sparse_inbox: indices and rows into the inbox, the ps
 * applies the sparse update). */
#include "session/session_internal.h"

static rf_status push_dense(rf_session *s, const size_t *vars, size_t n)
{
    rf_status st = RF_OK;
    for (size_t k = 0; k < n && st == RF_OK; k++) {
        rf_ps_xfer x = sess_grad_xfer(s, vars[k]);
        st = rf_ps_push_inbox(s->client, &x, 1);
    }
    return st;
}

/* The gradient, the ack. */
static size_t dense_wire(const rf_session *s, const sess_var *v, size_t rows)
{
    (void)s;
    (void)rows;
    return v->info.values_bytes + 8;
}

static rf_status push_rows(rf_session *s, const size_t *vars, size_t n)
{
    rf_status st = RF_OK;
    for (size_t k = 0; k < n && st == RF_OK; k++) {
        sess_var *v = &s->v[vars[k]];
        pthread_mutex_lock(&s->rows.mu);
        st = rf_ps_push_sparse_inbox(s->client, v->shard, v->push_rows,
                                     v->push_n, v->grad_buf, s->block.mem_mr);
        st = sess_rows_pushed(s, v, st);
        pthread_mutex_unlock(&s->rows.mu);
    }
    return st;
}

/* Every push is posted by the executor thread that staged it (no
 * on_gradient), and waited for at the step's end. */
const sess_push_ops sess_push_apply_ps = {
    .name = "ps",
    .push_op = "WRITE_WITH_IMM",
    .wait_op = "WAIT_ACKS",
    .wait_span = "wait apply acks",
    .advance_kind = RF_STEP_FETCH_AND_ADD,
    .advance_op = "FETCH_AND_ADD",
    .dense = {.push = push_dense, .wire_bytes = dense_wire},
    .rows = {.push = push_rows, .wire_bytes = sess_rows_inbox_wire},
    .wait = sess_push_wait_acks,
    .advance = sess_advance_fetch_add,
};
