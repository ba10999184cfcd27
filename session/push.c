/* session/push.c: the one dispatcher of the push strategies (push_ps.c,
 * push_worker.c, push_sync.c): the session calls every slot of its
 * strategy through here, where an empty optional slot does nothing (an
 * empty on_gradient: the gradient is pushed at once), so neither the
 * session nor a strategy tests for one. Also what the strategies share:
 * the wait for every acknowledgement, the FETCH_AND_ADD of global_step and
 * the bookkeeping of a table's rows push. It is not a strategy: which
 * ps-client call carries a gradient is each strategy's alone. */
#include "session/session_internal.h"

rf_status sess_push_configure(rf_session *s)
{
    return s->push->configure ? s->push->configure(s) : RF_OK;
}

rf_status sess_push_start(rf_session *s)
{
    return s->push->start ? s->push->start(s) : RF_OK;
}

void sess_push_stop(rf_session *s)
{
    if (s->push->stop)
        s->push->stop(s);
}

rf_status sess_push_init_shards(rf_session *s)
{
    return s->push->init_shards ? s->push->init_shards(s) : RF_OK;
}

rf_status sess_push_begin(rf_session *s)
{
    return s->push->begin ? s->push->begin(s) : RF_OK;
}

rf_status sess_push_gradient(rf_session *s, size_t i, const char *span, int tid)
{
    if (s->push->on_gradient)
        return s->push->on_gradient(s, i, span, tid);
    uint64_t t0 = rf_now_ns();
    rf_status st = s->v[i].xfer->push(s, &i, 1);
    sess_span(s, span, s->v[i].args, t0, tid);
    return st;
}

rf_status sess_push_drain(rf_session *s)
{
    return s->push->drain ? s->push->drain(s) : RF_OK;
}

rf_status sess_push_wait(rf_session *s)
{
    return s->push->wait(s);
}

rf_status sess_push_advance(rf_session *s, int64_t *step)
{
    return s->push->advance(s, step);
}

void sess_push_name_threads(rf_session *s, rf_trace *t)
{
    if (s->push->name_threads)
        s->push->name_threads(s, t);
}

void sess_push_replicas(const rf_session *s, uint32_t *n, uint32_t *m)
{
    *n = *m = 0;
    if (s->push->replicas)
        s->push->replicas(s, n, m);
}

rf_status sess_push_check_rows(const rf_session *s, const sess_var *v)
{
    return s->push->check_rows ? s->push->check_rows(s, v) : RF_OK;
}

bool sess_push_may_skip_missing(rf_session *s, const uint32_t *ids, size_t n,
                                const uint64_t *done, size_t k)
{
    return s->push->may_skip_missing &&
           s->push->may_skip_missing(s, ids, n, done, k);
}

rf_status sess_push_wait_acks(rf_session *s)
{
    return rf_ps_push_wait(s->client);
}

rf_status sess_advance_fetch_add(rf_session *s, int64_t *step)
{
    int64_t old = 0;
    rf_status st = rf_ps_global_step_add(s->client, 1, &old);
    if (st != RF_OK)
        return rf_error_set(st, "incrementing global_step: %s",
                            rf_error_message());
    *step = old + 1;
    return RF_OK;
}

rf_status sess_rows_pushed(rf_session *s, const sess_var *v, rf_status st)
{
    if (st == RF_OK) {
        s->report.counters.table_rows_pushed += v->push_n;
        s->report.counters.table_bytes_pushed += v->push_n * (v->row_bytes + 8);
        sess_count_bytes(s, v->ps_task, 0,
                         v->xfer->wire_bytes(s, v, v->push_n));
    }
    if (st != RF_OK)
        return rf_error_set(st, "pushing %zu rows of '%s': %s", v->push_n,
                            rf_node_name(v->var), rf_error_message());
    return RF_OK;
}

size_t sess_rows_inbox_wire(const rf_session *s, const sess_var *v, size_t rows)
{
    (void)s;
    return 8 + rows * (8 + v->row_bytes) + 8;
}
