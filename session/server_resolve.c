/* session/server_resolve.c: before a task starts its server, the cluster's
 * host names it needs (its own; a worker's ps tasks too) are resolved,
 * retried with backoff until a deadline: in Kubernetes a pod's peers (and
 * its own name) may not be in DNS yet when it starts. Every 10 s of waiting
 * the task says so on stdout, as the monitored session's readiness wait
 * does ("/job:worker/task:0: still waiting for /job:ps/task:1: cannot
 * resolve host ..."). The error at the end names the host and the task it
 * belongs to. Nothing is kept: every connect and reconnect resolves the
 * name again (the fabric's rf_connect), so a peer that comes back with a
 * new address under its name is found there. */
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "core/log.h"
#include "rdmaflow/clock.h"
#include "rdmaflow/cluster.h"
#include "rdmaflow/status.h"
#include "session/server_resolve.h"

#define BACKOFF_FIRST_MS 100
#define BACKOFF_MAX_MS   2000
#define WAIT_NOTE_MS     10000 /* between "still waiting" lines */

/* 0 when host resolves, else getaddrinfo's error. */
static int try_resolve(const char *host)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    int e = getaddrinfo(host, NULL, &hints, &res);
    if (e == 0)
        freeaddrinfo(res);
    return e;
}

static rf_status resolve_one(const rf_cluster_task *self,
                             const rf_cluster_task *t, int64_t deadline,
                             int wait_secs)
{
    int backoff = BACKOFF_FIRST_MS, e, tries = 0;
    int64_t t0 = rf_now_ms(), next_note = t0 + WAIT_NOTE_MS;
    for (;;) {
        tries++;
        e = try_resolve(t->host);
        if (e == 0) {
            if (tries > 1)
                RF_LOG_INFO("cluster: host \"%s\" resolved after %.1f s",
                            t->host, (double)(rf_now_ms() - t0) / 1000.0);
            return RF_OK;
        }
        /* a malformed name or a broken resolver will not heal */
        if (e != EAI_NONAME && e != EAI_AGAIN && e != EAI_FAIL
#ifdef EAI_NODATA
            && e != EAI_NODATA
#endif
        )
            break;
        int left = rf_deadline_left_ms(deadline);
        if (left <= 0)
            break;
        if (tries == 1)
            RF_LOG_INFO("cluster: host \"%s\" does not resolve yet (%s); "
                        "retrying for up to %d s",
                        t->host, gai_strerror(e), left / 1000);
        int64_t now = rf_now_ms();
        if (now >= next_note) {
            printf("/job:%s/task:%d: still waiting for /job:%s/task:%d: "
                   "cannot resolve host \"%s\": %s\n",
                   self->job, self->index, t->job, t->index, t->host,
                   gai_strerror(e));
            fflush(stdout);
            next_note = now + WAIT_NOTE_MS;
        }
        /* wake up for the next line too, not only the next try */
        int64_t nap = backoff < left ? backoff : left;
        rf_sleep_ms(nap < next_note - now ? nap : next_note - now);
        backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
    }
    return rf_error_set(RF_ERR_UNAVAILABLE,
                        "cannot resolve host \"%s\" of /job:%s/task:%d (%s) "
                        "%s %d s (max_wait_secs): %s",
                        t->host, t->job, t->index, t->address,
                        tries > 1 ? "within" : "and did not wait:",
                        tries > 1 ? wait_secs : 0, gai_strerror(e));
}

rf_status sess_resolve_hosts(const rf_cluster *cluster, int wait_secs)
{
    const rf_cluster_task *self = rf_cluster_self(cluster);
    int64_t deadline =
        rf_deadline_ms((int64_t)(wait_secs > 0 ? wait_secs : 0) * 1000);
    rf_status st = resolve_one(self, self, deadline, wait_secs);
    if (st != RF_OK || !strcmp(self->job, "ps"))
        return st;
    for (int i = 0; i < rf_cluster_num_ps(cluster) && st == RF_OK; i++)
        st = resolve_one(self, rf_cluster_task_at(cluster, "ps", i), deadline,
                         wait_secs);
    return st;
}
