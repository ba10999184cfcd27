/* fabric/verbs/verbs_fabric.c: opening and closing a verbs fabric (device,
 * protection domain, event thread) and the transport parameters derived
 * from RF_PEER_TIMEOUT_MS and RF_RNR_TIMEOUT_MS.
 *
 * Dead peer: a QP gives up after (retry_cnt + 1) attempts of 4.096 us *
 * 2^timeout each. retry_cnt is 6 (7 would be infinite on rxe, which treats
 * it like rnr_retry 7), and timeout is the largest exponent with
 * 7 * 4.096 us * 2^t <= RF_PEER_TIMEOUT_MS: 18 for the default 10 s, i.e.
 * 1.07 s per attempt and 7.5 s in all. A killed peer process is reported
 * faster: its kernel sends a DREQ and we get RDMA_CM_EVENT_DISCONNECTED.
 * Receiver not ready: rnr_retry is 6 and we ask peers to wait min_rnr_timer
 * (the IB table of 0.01 .. 655 ms) with 6 * timer <= RF_RNR_TIMEOUT_MS:
 * 327.68 ms for the default 2 s, i.e. 1.97 s in all. The most a finite
 * rnr_retry allows is 6 * 655.36 ms = 3.93 s: larger RF_RNR_TIMEOUT_MS
 * values are capped there (with a warning). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fabric/verbs/verbs_internal.h"
#include "rdmaflow/env.h"

/* IB min_rnr_timer encoding -> microseconds. */
static const uint32_t rnr_usec[32] = {
    655360, 10,    20,    30,     40,     60,     80,     120,
    160,    240,   320,   480,    640,    960,    1280,   1920,
    2560,   3840,  5120,  7680,   10240,  15360,  20480,  30720,
    40960,  61440, 81920, 122880, 163840, 245760, 327680, 491520};

static rf_status qp_params(vqp_params *p)
{
    int64_t peer_ms, rnr_ms;
    rf_status st = rf_setting_int("RF_PEER_TIMEOUT_MS", &peer_ms);
    if (st == RF_OK)
        st = rf_setting_int("RF_RNR_TIMEOUT_MS", &rnr_ms);
    if (st != RF_OK)
        return st;
    p->peer_timeout_ms = (int)peer_ms;
    p->rnr_timeout_ms = (int)rnr_ms;

    p->retry_cnt = 6;
    /* Largest t with (retry_cnt + 1) * 4096 ns * 2^t <= peer timeout. */
    uint64_t per_try_ns = (uint64_t)peer_ms * 1000000u / (p->retry_cnt + 1u);
    int t = 0;
    while (t < 31 && (4096ull << (t + 1)) <= per_try_ns)
        t++;
    if (t < 8)
        t = 8; /* ~1 ms: below that real fabrics retry spuriously */
    p->timeout = (uint8_t)t;

    if (rnr_ms == 0) {
        p->rnr_retry = 0;
        p->min_rnr_timer = 1;
    } else {
        p->rnr_retry = 6;
        uint64_t budget_us = (uint64_t)rnr_ms * 1000u;
        int best = 1;
        for (int c = 0; c < 32; c++)
            if ((uint64_t)p->rnr_retry * rnr_usec[c] <= budget_us &&
                rnr_usec[c] > rnr_usec[best])
                best = c;
        p->min_rnr_timer = (uint8_t)best;
        uint64_t max_us = (uint64_t)p->rnr_retry * rnr_usec[0];
        if (budget_us > max_us)
            RF_LOG_WARN("verbs: RF_RNR_TIMEOUT_MS=%lld exceeds what RC "
                        "receiver-not-ready retries can wait (%llu ms: %u "
                        "retries of at most 655 ms; 7 would be infinite); "
                        "using %llu ms",
                        (long long)rnr_ms, (unsigned long long)(max_us / 1000),
                        p->rnr_retry, (unsigned long long)(max_us / 1000));
    }
    RF_LOG_DEBUG("verbs: QP timeout %u (%.1f ms x %u tries), rnr timer %u "
                 "(%.2f ms x %u retries)",
                 p->timeout, 4.096e-3 * (double)(1ull << p->timeout),
                 p->retry_cnt + 1u, p->min_rnr_timer,
                 rnr_usec[p->min_rnr_timer] / 1000.0, p->rnr_retry);
    return RF_OK;
}

static void fabric_free(vfab *fab)
{
    verbs_event_stop(fab);
    if (fab->objs)
        RF_LOG_WARN("verbs: fabric closed with endpoints or listeners still "
                    "open");
    if (fab->ch)
        rdma_destroy_event_channel(fab->ch);
    if (fab->pd) {
        int rc = ibv_dealloc_pd(fab->pd);
        if (rc)
            RF_LOG_WARN("verbs: ibv_dealloc_pd: %s (memory regions or "
                        "endpoints still open?)",
                        strerror(rc));
    }
    if (fab->devlist)
        rdma_free_devices(fab->devlist);
    if (fab->wake_fd >= 0)
        close(fab->wake_fd);
    pthread_mutex_destroy(&fab->reg_lock);
    pthread_mutex_destroy(&fab->cm_lock);
    free(fab);
}

rf_status verbs_fabric_open(const rf_fabric_attr *attr, rf_fabric **out)
{
    verbs_fork_init();
    vfab *fab = calloc(1, sizeof *fab);
    if (!fab)
        return rf_error_set(RF_ERR_NO_MEMORY, "verbs: out of memory");
    fab->wake_fd = -1;
    pthread_mutex_init(&fab->reg_lock, NULL);
    pthread_mutex_init(&fab->cm_lock, NULL);

    /* RF_VERBS_CQ_MODE's choices are poll (0) and event (1) */
    rf_status st = rf_setting_choice("RF_VERBS_CQ_MODE", &fab->cq_event_mode);
    int64_t inline_cap = 256;
    if (st == RF_OK)
        st = rf_setting_int("RF_VERBS_MAX_INLINE", &inline_cap);
    fab->inline_cap = (uint32_t)inline_cap;
    if (st == RF_OK)
        st = qp_params(&fab->qp);
    if (st == RF_OK)
        st = verbs_select_device(fab, attr);
    if (st == RF_OK) {
        fab->pd = ibv_alloc_pd(fab->ctx);
        if (!fab->pd)
            st = rf_error_set(verbs_errno_status(errno), "ibv_alloc_pd(%s): %s",
                              fab->devname, strerror(errno));
    }
    if (st == RF_OK)
        st = verbs_event_start(fab);
    if (st != RF_OK) {
        fabric_free(fab);
        return st;
    }
    *out = &fab->base;
    return RF_OK;
}

void verbs_fabric_close(rf_fabric *fabric)
{
    fabric_free((vfab *)fabric);
}
