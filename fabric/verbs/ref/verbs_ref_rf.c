/* fabric/verbs/ref/verbs_ref_rf.c: rf-bench-verbs-ref's rdmaflow side: the
 * same two endpoints through rf_fabric_open("verbs"), rf_listen/rf_accept
 * (on a thread) and rf_connect, and the posts and polls with rf_post /
 * rf_cq_poll as rf-bench calls them. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <valgrind/callgrind.h>

#include "rdmaflow/clock.h"
#include "rdmaflow/status.h"
#include "verbs_ref.h"

static void *rfs_accept(void *arg)
{
    rfs *s = arg;
    rf_conn_req *req;
    rf_ep_attr a = {.send_cq = s->scq};
    s->accept_st = rf_listener_get_request(s->l, 10000, &req);
    if (s->accept_st == RF_OK)
        s->accept_st = rf_accept(req, &a, NULL, 0, &s->srv);
    if (s->accept_st != RF_OK)
        snprintf(s->accept_msg, sizeof s->accept_msg, "%s", rf_error_message());
    return NULL;
}

static int rfs_check(rf_status st, const char *what)
{
    if (st != RF_OK)
        vref_fail("rdmaflow: %s: %s: %s", what, rf_status_string(st),
                  rf_error_message());
    return st == RF_OK ? 0 : -1;
}

int vref_rf_open(rfs *s, const char *host)
{
    rf_fabric_attr fa = {.bind_addr = host};
    if (rfs_check(rf_fabric_open("verbs", &fa, &s->fab), "rf_fabric_open") ||
        rfs_check(rf_cq_create(s->fab, 2 * QDEPTH, &s->ccq), "rf_cq_create") ||
        rfs_check(rf_cq_create(s->fab, 2 * QDEPTH, &s->scq), "rf_cq_create") ||
        rfs_check(rf_mr_reg(s->fab, s->cbuf, BUF_SIZE, RF_ACCESS_LOCAL_WRITE,
                            &s->cmr),
                  "rf_mr_reg") ||
        rfs_check(rf_mr_reg(s->fab, s->sbuf, BUF_SIZE, RF_ACCESS_ALL, &s->smr),
                  "rf_mr_reg") ||
        rfs_check(rf_listen(s->fab, host, 0, &s->l), "rf_listen"))
        return -1;
    pthread_t t;
    if (pthread_create(&t, NULL, rfs_accept, s)) {
        vref_fail("pthread_create vref_failed");
        return -1;
    }
    rf_ep_attr a = {.send_cq = s->ccq, .max_send_wr = QDEPTH};
    rf_status st = rf_connect(s->fab, host, rf_listener_port(s->l), &a, NULL, 0,
                              10000, &s->cli);
    pthread_join(t, NULL);
    if (rfs_check(st, "rf_connect"))
        return -1;
    if (s->accept_st != RF_OK) {
        vref_fail("rdmaflow: rf_accept: %s: %s", rf_status_string(s->accept_st),
                  s->accept_msg);
        return -1;
    }
    for (int i = 0; i < QDEPTH; i++)
        if (rfs_check(rf_post_recv(s->srv, NULL, 0, NULL, NULL),
                      "rf_post_recv"))
            return -1;
    return 0;
}

void vref_rf_close(rfs *s)
{
    if (s->cli)
        rf_ep_close(s->cli);
    if (s->srv)
        rf_ep_close(s->srv);
    if (s->l)
        rf_listener_close(s->l);
    if (s->cmr)
        rf_mr_dereg(s->cmr);
    if (s->smr)
        rf_mr_dereg(s->smr);
    if (s->ccq)
        rf_cq_destroy(s->ccq);
    if (s->scq)
        rf_cq_destroy(s->scq);
    if (s->fab)
        rf_fabric_close(s->fab);
}

static rf_wr rfs_wr(rfs *s, int op)
{
    static const rf_op ops[NOPS] = {RF_OP_READ, RF_OP_WRITE, RF_OP_WRITE_IMM,
                                    RF_OP_FETCH_ADD, RF_OP_CMP_SWAP};
    rf_mr_desc d;
    rf_mr_describe(s->smr, &d);
    rf_wr w = {.op = ops[op],
               .local = s->cbuf + LOCAL_OFF(op),
               .len = 8,
               .local_mr = s->cmr,
               .remote_addr = (uintptr_t)(s->sbuf + REMOTE_OFF(op)),
               .rkey = d.rkey};
    if (op == OP_FETCH_ADD)
        w.compare_add = 1;
    return w;
}

static int rfs_target(rfs *s, int op)
{
    if (op != OP_WRITE_IMM)
        return 0;
    rf_completion c;
    int n = rf_cq_wait(s->scq, &c, 1, 10000);
    if (n != 1 || c.status != RF_OK || c.op != RF_OP_RECV_WRITE_IMM) {
        vref_fail("rdmaflow: write_imm receive: %s",
                  n == 1 ? rf_status_string(c.status) : rf_error_message());
        return -1;
    }
    return rfs_check(rf_post_recv(s->srv, NULL, 0, NULL, NULL), "rf_post_recv");
}

long vref_rf_loop(rfs *s, int op, int iters, int count, uint64_t *seq)
{
    rf_wr w = rfs_wr(s, op);
    long polls = 0;
    for (int i = 0; i < iters; i++, (*seq)++) {
        w.context = (void *)(uintptr_t)*seq;
        w.imm = (uint32_t)*seq;
        if (op == OP_CMP_SWAP) {
            w.compare_add = *seq;
            w.swap = *seq + 1;
        }
        rf_status st;
        if (count == 1)
            CALLGRIND_TOGGLE_COLLECT;
        st = rf_post(s->cli, &w, 1, NULL);
        if (count == 1)
            CALLGRIND_TOGGLE_COLLECT;
        if (rfs_check(st, "rf_post"))
            return -1;
        rf_sleep_ms(1);
        rf_completion c;
        int n;
        int64_t deadline = rf_deadline_ms(10000);
        do {
            if (count == 2)
                CALLGRIND_TOGGLE_COLLECT;
            n = rf_cq_poll(s->ccq, &c, 1);
            if (count == 2)
                CALLGRIND_TOGGLE_COLLECT;
            polls++;
        } while (n == 0 && rf_deadline_left_ms(deadline) != 0);
        if (n != 1 || c.status != RF_OK || c.context != w.context) {
            vref_fail("rdmaflow: %s %llu: %s", vref_op_name[op],
                      (unsigned long long)*seq,
                      n == 1 ? rf_status_string(c.status) : "no completion");
            return -1;
        }
        if (rfs_target(s, op))
            return -1;
    }
    return polls;
}

long vref_rf_empty(rfs *s, int iters)
{
    rf_completion c;
    long found = 0;
    for (int i = 0; i < iters; i++) {
        CALLGRIND_TOGGLE_COLLECT;
        int n = rf_cq_poll(s->ccq, &c, 1);
        CALLGRIND_TOGGLE_COLLECT;
        found += n;
    }
    return found;
}
