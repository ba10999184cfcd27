/* fabric/sock/sock_provider.c: the sock provider's ops table, opening and
 * closing a fabric (configuration, progress mode, epoll set, progress
 * thread) and the command channel to the progress thread. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/log.h"
#include "fabric/sock/sock.h"
#include "rdmaflow/env.h"
#include "rdmaflow/status.h"

static rf_status sock_probe(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return rf_error_set(RF_ERR_UNAVAILABLE, "sock: no TCP sockets: %s",
                            strerror(errno));
    close(fd);
    return RF_OK;
}

static rf_status read_config(sock_fabric *fab, const rf_fabric_attr *attr)
{
    int64_t v;
    rf_status st = rf_setting_int("RF_RNR_TIMEOUT_MS", &v);
    if (st != RF_OK)
        return st;
    fab->rnr_timeout_ms = (int)v;
    st = rf_setting_int("RF_PEER_TIMEOUT_MS", &v);
    if (st != RF_OK)
        return st;
    fab->peer_timeout_ms = (int)v;
    st = rf_setting_int("RF_SOCK_HANDSHAKE_TIMEOUT_MS", &v);
    if (st != RF_OK)
        return st;
    fab->hs_timeout_ms = (int)v;
    st = rf_setting_int("RF_SOCK_SERVE_MAX", &v);
    if (st != RF_OK)
        return st;
    if (v > RF_SOCK_MAX_QUEUE) /* the table's range is the wire's limit */
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "RF_SOCK_SERVE_MAX: the settings table allows "
                            "%lld, above the wire format's %u",
                            (long long)v, RF_SOCK_MAX_QUEUE);
    fab->serve_max = (uint32_t)v;
    fab->drain_timeout_ms =
        fab->peer_timeout_ms < 2000 ? fab->peer_timeout_ms : 2000;
    st = rf_setting_int("RF_SOCK_DIRECT", &v);
    if (st != RF_OK)
        return st;
    fab->direct = (int)v;
    st = rf_setting_int("RF_SOCK_RTO_MIN_US", &v);
    if (st != RF_OK)
        return st;
    fab->rto_min_us = (int)v;
    /* RF_SOCK_PROGRESS: attr (the program's choice), auto or manual */
    int progress;
    st = rf_setting_choice("RF_SOCK_PROGRESS", &progress);
    if (st != RF_OK)
        return st;
    fab->manual =
        progress == 0 ? attr->progress == RF_PROGRESS_MANUAL : progress == 2;
    fab->base.progress = fab->manual ? RF_PROGRESS_MANUAL : RF_PROGRESS_AUTO;
    return RF_OK;
}

void sock_fab_wake(sock_fabric *fab)
{
    uint64_t one = 1;
    ssize_t r;
    do {
        r = write(fab->wakefd, &one, sizeof one);
    } while (r < 0 && errno == EINTR);
    /* EAGAIN: the counter is saturated, the thread is awake anyway. */
}

void sock_fab_command(sock_fabric *fab, int type, void *obj)
{
    sock_cmd cmd = {.type = type, .obj = obj};
    pthread_mutex_lock(&fab->mu);
    sock_cmd **p = &fab->cmds;
    while (*p)
        p = &(*p)->next;
    *p = &cmd;
    sock_fab_wake(fab);
    while (!cmd.done)
        pthread_cond_wait(&fab->cmd_cond, &fab->mu);
    pthread_mutex_unlock(&fab->mu);
}

static void fabric_free(sock_fabric *fab)
{
    if (fab->epfd >= 0)
        close(fab->epfd);
    if (fab->wakefd >= 0)
        close(fab->wakefd);
    free(fab->mr_buckets);
    pthread_rwlock_destroy(&fab->mr_mu);
    pthread_mutex_destroy(&fab->mu);
    pthread_mutex_destroy(&fab->kick_mu);
    pthread_cond_destroy(&fab->cmd_cond);
    free(fab);
}

static rf_status sock_fabric_open(const rf_fabric_attr *attr, rf_fabric **out)
{
    /* bind_addr only matters for NUMA placement (later) */
    sock_fabric *fab = calloc(1, sizeof *fab);
    if (!fab)
        return rf_error_set(RF_ERR_NO_MEMORY, "sock: out of memory");
    fab->epfd = fab->wakefd = -1;
    pthread_rwlockattr_t rwa;
    pthread_rwlockattr_init(&rwa);
    pthread_rwlockattr_setkind_np(&rwa,
                                  PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&fab->mr_mu, &rwa);
    pthread_rwlockattr_destroy(&rwa);
    pthread_mutex_init(&fab->mu, NULL);
    pthread_mutex_init(&fab->kick_mu, NULL);
    pthread_cond_init(&fab->cmd_cond, NULL);
    fab->wake_tag.kind = SOCK_POLL_WAKE;

    rf_status st = read_config(fab, attr);
    if (st != RF_OK) {
        fabric_free(fab);
        return st;
    }
    fab->mr_nbuckets = 64;
    fab->mr_buckets = calloc(fab->mr_nbuckets, sizeof *fab->mr_buckets);
    fab->epfd = epoll_create1(EPOLL_CLOEXEC);
    fab->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (!fab->mr_buckets || fab->epfd < 0 || fab->wakefd < 0) {
        int e = errno;
        fabric_free(fab);
        return rf_error_set(RF_ERR_NO_MEMORY,
                            "sock: cannot create the fabric: %s", strerror(e));
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &fab->wake_tag};
    if (epoll_ctl(fab->epfd, EPOLL_CTL_ADD, fab->wakefd, &ev) < 0) {
        int e = errno;
        fabric_free(fab);
        return rf_error_set(RF_ERR_IO, "sock: epoll_ctl: %s", strerror(e));
    }
    int e = pthread_create(&fab->thread, NULL, sock_progress_main, fab);
    if (e) {
        fabric_free(fab);
        return rf_error_set(RF_ERR_NO_MEMORY,
                            "sock: cannot start the progress thread: %s",
                            strerror(e));
    }
    fab->thread_started = 1;
    RF_LOG_DEBUG("sock: fabric open (rnr %d ms, peer timeout %d ms, "
                 "handshake %d ms, %s progress)",
                 fab->rnr_timeout_ms, fab->peer_timeout_ms, fab->hs_timeout_ms,
                 fab->manual ? "manual" : "auto");
    *out = &fab->base;
    return RF_OK;
}

/* Closes every object still open on the fabric (their handles become
 * invalid), stops the progress thread and frees the fabric. */
static void sock_fabric_close(rf_fabric *fabric)
{
    sock_fabric *fab = SOCK_FAB(fabric);
    for (;;) {
        pthread_mutex_lock(&fab->mu);
        sock_ep *ep = fab->eps;
        pthread_mutex_unlock(&fab->mu);
        if (!ep)
            break;
        RF_LOG_WARN("sock: fabric closed with endpoint to %s still open",
                    ep->peer);
        sock_ep_close(&ep->base);
    }
    for (;;) {
        pthread_mutex_lock(&fab->mu);
        sock_listener *l = fab->listeners;
        pthread_mutex_unlock(&fab->mu);
        if (!l)
            break;
        RF_LOG_WARN("sock: fabric closed with a listener still open");
        sock_listener_close(&l->base);
    }
    if (fab->thread_started) {
        sock_fab_command(fab, SOCK_CMD_STOP, NULL);
        pthread_join(fab->thread, NULL);
    }
    while (fab->cqs) {
        sock_cq *cq = fab->cqs;
        fab->cqs = cq->next;
        sock_cq_free(cq);
    }
    sock_mr_free_all(fab);
    fabric_free(fab);
}

const rf_provider_ops rf_sock_provider = {
    .name = "sock",
    .probe = sock_probe,
    .fabric_open = sock_fabric_open,
    .fabric_close = sock_fabric_close,
    .mr_reg = sock_mr_reg,
    .mr_reg_keyed = sock_mr_reg_keyed,
    .mr_dereg = sock_mr_dereg,
    .cq_create = sock_cq_create,
    .cq_destroy = sock_cq_destroy,
    .cq_poll = sock_cq_poll,
    .cq_wait = sock_cq_wait,
    .listen = sock_listen,
    .listener_close = sock_listener_close,
    .get_request = sock_get_request,
    .accept = sock_accept,
    .reject = sock_reject,
    .connect = sock_connect,
    .ep_close = sock_ep_close,
    .ep_state = sock_ep_state,
    .ep_enable_remote_access = sock_ep_enable_remote_access,
    .post = sock_post,
    .post_recv = sock_post_recv,
};
