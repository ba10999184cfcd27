/* session/push_ps.c: the apply=ps push strategy (TensorFlow's placement:
 * the apply op is colocated with the variable). Each gradient is posted as
 * a WRITE_WITH_IMM into this worker's inbox on the variable's ps from the
 * executor thread that produced it, while backprop goes on; the ps's apply
 * thread runs the optimizer and acknowledges, and the step waits for every
 * acknowledgement before global_step moves. An embedding table's gradient
 * goes as its staged rows (rf_ps_push_sparse: indices and rows into the
 * inbox, the ps applies the sparse update). */
#include "session/session_internal.h"

static void stop_nothing(rf_session *s)
{
    (void)s;
}

static rf_status on_gradient(rf_session *s, size_t i, const char *span, int tid)
{
    uint64_t t0 = rf_now_ns();
    rf_status st;
    if (s->v[i].table) { /* the rows staged by session_rows.c */
        st = sess_rows_push(s, i, RF_PS_APPLY_PS, -1);
    } else {
        rf_ps_xfer x = sess_grad_xfer(s, i);
        st = rf_ps_push_inbox(s->client, &x, 1);
    }
    sess_span(s, span, s->v[i].args, t0, tid);
    return st;
}

/* Every push was posted by on_gradient itself. */
static rf_status drain_nothing(rf_session *s)
{
    (void)s;
    return RF_OK;
}

static rf_status wait_acks(rf_session *s)
{
    return rf_ps_push_wait(s->client);
}

static void no_threads(rf_session *s, rf_trace *t)
{
    (void)s;
    (void)t;
}

const sess_push_ops sess_push_apply_ps = {
    .name = "ps",
    .push_op = "WRITE_WITH_IMM",
    .wait_op = "WAIT_ACKS",
    .wait_span = "wait apply acks",
    .advance_kind = RF_STEP_FETCH_AND_ADD,
    .advance_op = "FETCH_AND_ADD",
    .configure = sess_push_nothing,
    .start = sess_push_nothing,
    .stop = stop_nothing,
    .init_shards = sess_push_nothing,
    .begin = sess_push_nothing,
    .on_gradient = on_gradient,
    .drain = drain_nothing,
    .wait = wait_acks,
    .advance = sess_advance_fetch_add,
    .name_threads = no_threads,
};
