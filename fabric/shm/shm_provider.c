/* fabric/shm/shm_provider.c: the shm provider's ops table, opening and
 * closing a fabric (configuration, region table, epoll set) and the
 * progress thread: it sleeps in epoll_wait (endpoint sockets, doorbell
 * eventfds, the wake eventfd; a timeout only while a message waits for a
 * receive), then runs every endpoint's queued work and ring traffic. It
 * never spins: with nothing runnable it blocks. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/log.h"
#include "fabric/shm/shm.h"
#include "rdmaflow/env.h"

static rf_status shm_probe(void)
{
    int fd = memfd_create("rdmaflow-shm-probe", MFD_CLOEXEC);
    if (fd < 0)
        return rf_error_set(RF_ERR_UNAVAILABLE, "shm: no memfd_create: %s",
                            strerror(errno));
    close(fd);
    return RF_OK;
}

void shm_fab_wake(shm_fabric *fab)
{
    uint64_t one = 1;
    ssize_t r;
    do {
        r = write(fab->wakefd, &one, sizeof one);
    } while (r < 0 && errno == EINTR);
}

static void drain_efd(int fd)
{
    uint64_t v;
    while (read(fd, &v, sizeof v) > 0)
        ;
}

static shm_ep *find_ep(shm_fabric *fab, uint64_t id)
{
    for (shm_ep *ep = fab->eps; ep; ep = ep->next)
        if (ep->id == id)
            return ep;
    return NULL;
}

static void *progress(void *arg)
{
    shm_fabric *fab = arg;
    struct epoll_event evs[64];
    int timeout = -1;
    for (;;) {
        int n = epoll_wait(fab->epfd, evs, 64, timeout);
        if (n < 0 && errno != EINTR) {
            RF_LOG_ERRORF("shm: epoll_wait: %s", strerror(errno));
            n = 0;
        }
        pthread_mutex_lock(&fab->mu);
        if (fab->stop) {
            pthread_mutex_unlock(&fab->mu);
            break;
        }
        for (int i = 0; i < n; i++) {
            uint64_t d = evs[i].data.u64;
            if (d == 0) {
                drain_efd(fab->wakefd);
                continue;
            }
            shm_ep *ep = find_ep(fab, d >> 1);
            if (!ep)
                continue;
            rf_spin_lock(&ep->lock);
            if (d & 1) {
                drain_efd(ep->my_efd);
            } else {
                shm_ep_drain(ep);
            }
            rf_spin_unlock(&ep->lock);
        }
        int more = 0;
        int64_t deadline = RF_DEADLINE_NONE;
        for (shm_ep *ep = fab->eps; ep; ep = ep->next) {
            rf_spin_lock(&ep->lock);
            more |= shm_ep_progress(ep, &deadline);
            rf_spin_unlock(&ep->lock);
        }
        pthread_mutex_unlock(&fab->mu);
        if (more)
            timeout = 0;
        else if (deadline != RF_DEADLINE_NONE)
            timeout = rf_deadline_left_ms(deadline) + 1;
        else
            timeout = -1;
    }
    return NULL;
}

static rf_status shm_fabric_open(const rf_fabric_attr *attr, rf_fabric **out)
{
    (void)attr;
    shm_fabric *fab = calloc(1, sizeof *fab);
    if (!fab)
        return rf_error_set(RF_ERR_NO_MEMORY, "shm: out of memory");
    int64_t v;
    rf_status st = rf_setting_int("RF_RNR_TIMEOUT_MS", &v);
    if (st != RF_OK)
        goto err_free;
    fab->rnr_timeout_ms = (int)v;
    st = rf_setting_int("RF_SHM_HANDSHAKE_TIMEOUT_MS", &v);
    if (st != RF_OK)
        goto err_free;
    fab->hs_timeout_ms = (int)v;
    st = rf_setting_int("RF_PEER_TIMEOUT_MS", &v);
    if (st != RF_OK)
        goto err_free;
    fab->peer_timeout_ms = (int)v;
    st = rf_setting_int("RF_SHM_PACE_MS", &v);
    if (st != RF_OK)
        goto err_free;
    fab->pace_ms = (int)v;
    pthread_mutex_init(&fab->mu, NULL);
    fab->next_ep_id = 1;

    fab->table_fd = shm_memfd_new("rdmaflow-shm-table", SHM_TABLE_BYTES);
    if (fab->table_fd < 0) {
        st = rf_error_set(RF_ERR_NO_RESOURCE, "shm: region table memfd: %s",
                          strerror(errno));
        goto err_table_fd;
    }
    fab->table = mmap(NULL, SHM_TABLE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
                      fab->table_fd, 0);
    if (fab->table == MAP_FAILED) {
        st = rf_error_set(RF_ERR_NO_MEMORY, "shm: mapping the region table: %s",
                          strerror(errno));
        goto err_table_fd;
    }
    /* Peers may only map the table read-only from now on (this process
     * keeps its writable mapping). */
    if (fcntl(fab->table_fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) !=
        0) {
        st = rf_error_set(RF_ERR_UNAVAILABLE,
                          "shm: cannot seal the region table against peer "
                          "writes (F_SEAL_FUTURE_WRITE needs Linux 5.1): %s",
                          strerror(errno));
        munmap(fab->table, SHM_TABLE_BYTES);
        goto err_table_fd;
    }
    fab->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    fab->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (fab->wakefd < 0 || fab->epfd < 0) {
        st = rf_error_set(RF_ERR_NO_RESOURCE, "shm: eventfd/epoll: %s",
                          strerror(errno));
        goto err_fds;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 0};
    if (epoll_ctl(fab->epfd, EPOLL_CTL_ADD, fab->wakefd, &ev) != 0) {
        st = rf_error_set(RF_ERR_NO_RESOURCE, "shm: epoll_ctl: %s",
                          strerror(errno));
        goto err_fds;
    }
    int e = pthread_create(&fab->thread, NULL, progress, fab);
    if (e) {
        st = rf_error_set(RF_ERR_NO_RESOURCE,
                          "shm: cannot start the progress thread: %s",
                          strerror(e));
        goto err_fds;
    }
    fab->base.ops = &rf_shm_provider;
    *out = &fab->base;
    return RF_OK;

err_fds:
    if (fab->wakefd >= 0)
        close(fab->wakefd);
    if (fab->epfd >= 0)
        close(fab->epfd);
    munmap(fab->table, SHM_TABLE_BYTES);
err_table_fd:
    if (fab->table_fd >= 0)
        close(fab->table_fd);
    pthread_mutex_destroy(&fab->mu);
err_free:
    free(fab);
    return st;
}

static void shm_fabric_close(rf_fabric *base)
{
    shm_fabric *fab = (shm_fabric *)base;
    while (fab->eps)
        shm_ep_close(&fab->eps->base);
    pthread_mutex_lock(&fab->mu);
    fab->stop = 1;
    pthread_mutex_unlock(&fab->mu);
    shm_fab_wake(fab);
    pthread_join(fab->thread, NULL);
    while (fab->mrs) {
        RF_LOG_WARN("shm: rf_fabric_close: region %p+%zu still registered",
                    fab->mrs->base.addr, fab->mrs->base.len);
        shm_mr_dereg(&fab->mrs->base);
    }
    close(fab->wakefd);
    close(fab->epfd);
    munmap(fab->table, SHM_TABLE_BYTES);
    close(fab->table_fd);
    pthread_mutex_destroy(&fab->mu);
    free(fab);
}

const rf_provider_ops rf_shm_provider = {
    .name = "shm",
    .probe = shm_probe,
    .fabric_open = shm_fabric_open,
    .fabric_close = shm_fabric_close,
    .mr_reg = shm_mr_reg,
    .mr_reg_keyed = shm_mr_reg_keyed,
    .mr_dereg = shm_mr_dereg,
    .cq_create = shm_cq_create,
    .cq_destroy = shm_cq_destroy,
    .cq_poll = shm_cq_poll,
    .cq_wait = shm_cq_wait,
    .listen = shm_listen,
    .listener_close = shm_listener_close,
    .get_request = shm_get_request,
    .accept = shm_accept,
    .reject = shm_reject,
    .connect = shm_connect,
    .ep_close = shm_ep_close,
    .ep_state = shm_ep_state,
    .ep_enable_remote_access = shm_ep_enable_remote_access,
    .post = shm_post,
    .post_recv = shm_post_recv,
};
