/* ps/ps_server.c: rf_ps_server_start/join/stop: the listener thread
 * (accepting connections whose private data is a valid ps hello), the
 * service thread (named rf-ps-service, the listener rf-ps-listen; both
 * bound to the chosen NUMA node; it adopts connections, polls
 * the shared completion queue, dispatches control messages and pushes) and
 * the connection lifecycle. A dropped connection is closed at once and
 * freed only after the completion queue has been seen empty, so no
 * completion can refer to freed memory. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "ps/ps_server_internal.h"
#include "rdmaflow/clock.h"
#include "rdmaflow/env.h"
#include "rdmaflow/status.h"

#define DEFAULT_MAX_WORKERS       64
#define DEFAULT_MEMBER_TIMEOUT_MS 10000
/* Each push is acked (one send); a gather also WRITEs its rows (two). */
#define SEND_DEPTH (2 * PS_SRV_RECV_DEPTH + 2 * PS_SRV_REPLY_BUFS + 8)

bool ps_srv_stopping(rf_ps_server *s)
{
    pthread_mutex_lock(&s->mu);
    bool stop = s->stop;
    pthread_mutex_unlock(&s->mu);
    return stop;
}

void ps_conn_label(const ps_server_conn *c, char *buf, size_t len)
{
    snprintf(buf, len, "client %u%s from %s", c->client_id,
             c->chief ? " (chief)" : "", c->peer);
}

static void conn_close(ps_server_conn *c, const char *why)
{
    if (c->state == PS_CONN_DEAD)
        return;
    /* only a live connection holds a client slot (the table never makes a
     * live one closing) */
    bool client = c->state == PS_CONN_LIVE;
    ps_conn_set_state(c, PS_CONN_DEAD, why);
    rf_ep_close(c->ep);
    c->ep = NULL;
    ps_admit_release(c->srv, c->peer, client, c->known);
}

static void conn_drop(ps_server_conn *c, const char *why, bool count)
{
    if (c->state == PS_CONN_DEAD)
        return;
    char text[512], who[160];
    snprintf(text, sizeof text, "%s", why ? why : "");
    ps_conn_label(c, who, sizeof who);
    RF_LOG_WARN("ps %d: dropping the connection of %s (%s): %s",
                c->srv->opt.task_index, who, ps_conn_state_name(c->state),
                text);
    if (count && c->state != PS_CONN_CLOSING)
        PS_COUNT(c->srv, dropped_protocol);
    conn_close(c, text);
}

void ps_conn_drop(ps_server_conn *c, const char *why)
{
    conn_drop(c, why, true);
}

void ps_conn_drop_counted(ps_server_conn *c, const char *why)
{
    conn_drop(c, why, false);
}

static void conn_lost(ps_server_conn *c, rf_status st)
{
    char who[160];
    ps_conn_label(c, who, sizeof who);
    RF_LOG_INFO("ps %d: %s disconnected (%s)", c->srv->opt.task_index, who,
                rf_status_string(st));
    conn_close(c, rf_status_string(st));
}

static void conn_free(ps_server_conn *c)
{
    if (c->ep)
        rf_ep_close(c->ep);
    if (c->mr)
        rf_mr_dereg(c->mr);
    free(c->mem);
    free(c);
}

/* ---- service thread ------------------------------------------------------ */

static void adopt(rf_ps_server *s, ps_pending *p)
{
    ps_server_conn *c = calloc(1, sizeof *c);
    rf_status st = RF_ERR_NO_MEMORY;
    if (c) {
        c->srv = s;
        c->ep = p->ep;
        c->client_id = p->hello.client_id;
        c->chief = p->hello.flags & PS_CONN_FLAG_CHIEF;
        c->has_token = p->hello.flags & PS_CONN_FLAG_TOKEN;
        memcpy(c->token, p->hello.token, PS_TOKEN_LEN);
        c->known = p->known;
        memcpy(c->peer, p->peer, sizeof c->peer);
        c->stag = (ps_tag){.conn = c, .kind = PS_TAG_SEND};
        c->mem_len = PS_CONN_MEM_LEN;
        c->mem = aligned_alloc(64, c->mem_len);
    }
    if (c && c->mem) {
        memset(c->mem, 0, c->mem_len);
        st = rf_mr_reg(s->fabric, c->mem, c->mem_len, RF_ACCESS_LOCAL_WRITE,
                       &c->mr);
    }
    for (uint32_t i = 0; st == RF_OK && i < PS_SRV_RECV_DEPTH; i++) {
        c->rtag[i] = (ps_tag){.conn = c, .index = i, .kind = PS_TAG_RECV};
        st = rf_post_recv(c->ep, c->mem + (size_t)i * PS_REQ_MAX, PS_REQ_MAX,
                          c->mr, &c->rtag[i]);
    }
    if (st != RF_OK) {
        RF_LOG_WARN("ps %d: cannot set up a connection of client %u: %s",
                    s->opt.task_index, p->hello.client_id, rf_error_message());
        if (c) {
            ps_conn_set_state(c, PS_CONN_DEAD, "cannot set up");
            rf_ep_close(c->ep);
            c->ep = NULL;
            c->next = s->graveyard;
            s->graveyard = c;
        } else {
            rf_ep_close(p->ep);
        }
        ps_admit_release(s, p->peer, false, p->known);
        return;
    }
    c->deadline_ms = rf_now_ms() + s->opt.handshake_timeout_ms;
    ps_conn_set_state(
        c, s->opt.secret ? PS_CONN_WAIT_AUTH_REQ : PS_CONN_WAIT_HELLO,
        "receives posted");
    c->next = s->conns;
    s->conns = c;
    s->num_conns++;
    RF_LOG_INFO("ps %d: client %u%s connected from %s over %s%s",
                s->opt.task_index, c->client_id, c->chief ? " (chief)" : "",
                c->peer, rf_ep_provider(c->ep),
                s->opt.secret ? " (authenticating)" : "");
}

static void handle(rf_ps_server *s, const rf_completion *comp)
{
    (void)s;
    ps_tag *tag = comp->context;
    ps_server_conn *c = tag->conn;
    if (c->state == PS_CONN_DEAD)
        return;
    if (tag->kind == PS_TAG_SEND) {
        c->sends_done++;
        if (comp->status != RF_OK)
            conn_lost(c, comp->status);
        else if (c->state == PS_CONN_CLOSING &&
                 c->sends_done >= c->sends_posted)
            ps_conn_drop(c, "refused (the reason was sent)");
        return;
    }
    if (comp->status != RF_OK) {
        conn_lost(c, comp->status);
        return;
    }
    unsigned char *buf = c->mem + (size_t)tag->index * PS_REQ_MAX;
    bool ok;
    if (comp->op == RF_OP_RECV)
        ok = ps_ctrl_handle(c, buf, comp->len);
    else if (comp->op == RF_OP_RECV_WRITE_IMM)
        ok = ps_apply_push(c, comp->imm, comp->len);
    else
        ok = false, ps_conn_drop(c, "unexpected completion");
    if (!ok || c->state == PS_CONN_DEAD)
        return;
    rf_status st = rf_post_recv(c->ep, buf, PS_REQ_MAX, c->mr, tag);
    if (st != RF_OK)
        conn_lost(c, st);
}

/* Moves dead connections to the graveyard. */
static void sweep(rf_ps_server *s)
{
    ps_server_conn **pp = &s->conns;
    while (*pp) {
        ps_server_conn *c = *pp;
        if (c->state == PS_CONN_DEAD) {
            *pp = c->next;
            c->next = s->graveyard;
            s->graveyard = c;
            s->num_conns--;
        } else {
            pp = &c->next;
        }
    }
}

/* After SHUTDOWN: true once every reply posted has completed (or 2 s). */
static bool shutdown_flushed(rf_ps_server *s, long long since)
{
    if (rf_now_ms() - since > 2000)
        return true;
    for (ps_server_conn *c = s->conns; c; c = c->next)
        if (c->state != PS_CONN_DEAD && c->sends_done < c->sends_posted)
            return false;
    return true;
}

static void *service_main(void *arg)
{
    rf_ps_server *s = arg;
    /* named, so that tools and tests (tests/integration/numa) find it in
     * /proc/PID/task/TID/comm */
    (void)pthread_setname_np(pthread_self(), "rf-ps-service");
    if (rf_topology_bind_thread(s->topo, &s->binding) != RF_OK)
        RF_LOG_WARN("ps %d: cannot bind the service thread: %s",
                    s->opt.task_index, rf_error_message());
    rf_status result = RF_OK;
    rf_completion comps[64];
    long long shutdown_at = 0;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        bool stop = s->stop;
        ps_pending *pend = s->pending;
        s->pending = NULL;
        pthread_mutex_unlock(&s->mu);
        if (stop)
            break;
        while (pend) {
            ps_pending *next = pend->next;
            adopt(s, pend);
            free(pend);
            pend = next;
        }
        /* before the wait, so that the completions its closes flush are
         * seen before the graveyard is freed below */
        ps_admit_expire(s);
        ps_members_expire(s);
        if ((result = ps_life_check(s)) != RF_OK)
            break;
        int n = rf_cq_wait(s->cq, comps, 64, 20);
        if (n == RF_ERR_TIMEOUT) {
            n = 0;
        } else if (n < 0) {
            result = (rf_status)n;
            RF_LOG_ERRORF("ps %d: completion queue failed: %s",
                          s->opt.task_index, rf_error_message());
            break;
        }
        for (int i = 0; i < n; i++)
            handle(s, &comps[i]);
        sweep(s);
        if (n == 0) {
            /* The queue was empty: nothing refers to closed connections. */
            while (s->graveyard) {
                ps_server_conn *c = s->graveyard;
                s->graveyard = c->next;
                conn_free(c);
            }
        }
        if (s->shutdown) {
            if (!shutdown_at)
                shutdown_at = rf_now_ms();
            if (shutdown_flushed(s, shutdown_at))
                break;
        }
    }
    pthread_mutex_lock(&s->mu);
    s->done = true;
    s->status = result;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ---- listener thread ------------------------------------------------------
 */

static void reject(rf_ps_server *s, rf_conn_req *req, const char *why)
{
    const char *peer = rf_conn_req_peer(req);
    /* the reason travels in the reject's private data: cut it to fit */
    char text[RF_MAX_PRIVATE_DATA + 1];
    size_t n = strnlen(why, RF_MAX_PRIVATE_DATA);
    memcpy(text, why, n);
    text[n] = '\0';
    RF_LOG_WARN("ps %d: rejecting a connection from %s: %s", s->opt.task_index,
                peer, why);
    rf_reject(req, text, strlen(text));
}

static void *listen_main(void *arg)
{
    rf_ps_server *s = arg;
    (void)pthread_setname_np(pthread_self(), "rf-ps-listen");
    if (rf_topology_bind_thread(s->topo, &s->binding) != RF_OK)
        RF_LOG_DEBUG("ps %d: cannot bind the listener thread",
                     s->opt.task_index);
    while (!ps_srv_stopping(s)) {
        rf_conn_req *req = NULL;
        rf_status st = rf_listener_get_request(s->listener, 100, &req);
        if (st == RF_ERR_TIMEOUT)
            continue;
        if (st != RF_OK) {
            RF_LOG_WARN("ps %d: listener: %s", s->opt.task_index,
                        rf_error_message());
            rf_sleep_ms(20);
            continue;
        }
        size_t len = 0;
        const void *priv = rf_conn_req_private_data(req, &len);
        ps_pending *p = calloc(1, sizeof *p);
        if (!p) {
            reject(s, req, "ps out of memory");
            continue;
        }
        if (ps_conn_hello_decode(priv, len, &p->hello) != RF_OK) {
            char why[300];
            snprintf(why, sizeof why, "%s", rf_error_message());
            reject(s, req, why);
            free(p);
            continue;
        }
        snprintf(p->peer, sizeof p->peer, "%s", rf_conn_req_peer(req));
        char text[RF_MAX_PRIVATE_DATA + 1];
        const char *refused =
            ps_auth_admit(s, &p->hello, p->peer, text, sizeof text);
        if (!refused)
            refused = ps_token_admit(s, &p->hello, p->peer, text, sizeof text);
        if (refused) {
            PS_COUNT(s, refused_auth);
            rf_reject(req, refused, strlen(refused));
            free(p);
            continue;
        }
        char busy[160];
        p->known = ps_token_known(s, &p->hello);
        if (ps_admit_connection(s, p->peer, p->known, busy, sizeof busy)) {
            reject(s, req, busy);
            free(p);
            continue;
        }
        unsigned char welcome[PS_CONN_WELCOME_SIZE];
        ps_conn_welcome w = {.ps_index = s->opt.task_index,
                             .incarnation = s->incarnation};
        ps_conn_welcome_encode(&w, welcome);
        /* one-sided access waits for the peer's proof (a secret) or its
         * HELLO (its task token bound, ps_server_token.c) */
        rf_ep_attr attr = {.flags = RF_EP_REMOTE_ACCESS_OFF,
                           .send_cq = s->cq,
                           .recv_cq = s->cq,
                           .max_send_wr = SEND_DEPTH,
                           .max_recv_wr = PS_SRV_RECV_DEPTH};
        st = rf_accept(req, &attr, welcome, sizeof welcome, &p->ep);
        if (st != RF_OK) {
            RF_LOG_WARN("ps %d: accepting client %u: %s", s->opt.task_index,
                        p->hello.client_id, rf_error_message());
            ps_admit_release(s, p->peer, false, p->known);
            free(p);
            continue;
        }
        pthread_mutex_lock(&s->mu);
        p->next = s->pending;
        s->pending = p;
        pthread_mutex_unlock(&s->mu);
    }
    return NULL;
}

/* ---- start / join / stop ----------------------------------------------------
 */

static rf_status read_options(const rf_ps_server_options *in,
                              rf_ps_server_options *out)
{
    *out = in ? *in : (rf_ps_server_options){0};
    if (out->task_index < 0 || out->max_workers < 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_server_start: task_index %d, max_workers %d",
                            out->task_index, out->max_workers);
    int64_t v;
    rf_status st;
    if (!out->chunk_bytes) {
        st = rf_setting_int("RF_PS_CHUNK_MB", &v);
        if (st != RF_OK)
            return st;
        out->chunk_bytes = (size_t)v << 20;
    }
    if (!out->max_bytes) {
        st = rf_setting_int("RF_PS_ARENA_MAX_MB", &v);
        if (st != RF_OK)
            return st;
        out->max_bytes = (size_t)v << 20;
    }
    if (out->max_bytes && out->max_bytes < out->chunk_bytes)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_server_start: arena limit %zu bytes is "
                            "below one chunk (%zu)",
                            out->max_bytes, out->chunk_bytes);
    if (!out->max_workers)
        out->max_workers = DEFAULT_MAX_WORKERS;
    if (!out->max_inbox_bytes) {
        st = rf_setting_int("RF_PS_MAX_INBOX_MB", &v);
        if (st != RF_OK)
            return st;
        out->max_inbox_bytes = (size_t)v << 20;
    }
    if (!out->max_accum_bytes) {
        st = rf_setting_int("RF_PS_MAX_ACCUM_MB", &v);
        if (st != RF_OK)
            return st;
        out->max_accum_bytes = (size_t)v << 20;
    }
    if (out->handshake_timeout_ms < 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_server_start: handshake_timeout_ms %d",
                            out->handshake_timeout_ms);
    if (!out->handshake_timeout_ms) {
        st = rf_setting_int("RF_PS_HANDSHAKE_TIMEOUT_MS", &v);
        if (st != RF_OK)
            return st;
        out->handshake_timeout_ms = (int)v;
    }
    if (out->bind_roles &&
        (out->num_workers == 0 || out->chief_id >= out->num_workers))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_server_start: role binding with chief id "
                            "%u of %u workers",
                            out->chief_id, out->num_workers);
    if (out->chief_gone_exit_ms < 0 || out->idle_exit_ms < 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_server_start: chief_gone_exit_ms %d, "
                            "idle_exit_ms %d (0: never; not negative)",
                            out->chief_gone_exit_ms, out->idle_exit_ms);
    if (out->member_timeout_ms < 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_server_start: member_timeout_ms %d is "
                            "negative",
                            out->member_timeout_ms);
    if (!out->member_timeout_ms)
        out->member_timeout_ms = DEFAULT_MEMBER_TIMEOUT_MS;
    if (out->max_workers > 1024)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_server_start: max_workers %d exceeds 1024",
                            out->max_workers);
    return RF_OK;
}

static uint64_t random_incarnation(void)
{
    uint64_t v = 0;
    while (v == 0) {
        if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            v = ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec ^
                ((uint64_t)getpid() << 16);
        }
    }
    return v;
}

static void server_free(rf_ps_server *s)
{
    ps_ledger_free(&s->ledger);
    free(s->ledger_snap);
    free(s->ledger_stage);
    for (ps_server_conn *c = s->conns; c;) {
        ps_server_conn *n = c->next;
        if (c->ep && c->state != PS_CONN_DEAD)
            rf_ep_close(c->ep);
        c->ep = NULL;
        c = n;
    }
    while (s->pending) {
        ps_pending *p = s->pending;
        s->pending = p->next;
        rf_ep_close(p->ep);
        free(p);
    }
    if (s->listener)
        rf_listener_close(s->listener);
    if (s->cq)
        rf_cq_destroy(s->cq);
    ps_server_conn *lists[2] = {s->conns, s->graveyard};
    for (int i = 0; i < 2; i++) {
        for (ps_server_conn *c = lists[i]; c;) {
            ps_server_conn *n = c->next;
            conn_free(c);
            c = n;
        }
    }
    ps_shards_free(s);
    if (s->arena.chunks)
        ps_arena_destroy(&s->arena);
    if (s->topo)
        rf_topology_close(s->topo);
    free(s->binds);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cond);
    free(s);
}

rf_status rf_ps_server_start(rf_fabric *fabric, const char *host, uint16_t port,
                             const rf_ps_server_options *options,
                             rf_ps_server **out)
{
    if (!fabric || !host || !out)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_server_start: NULL argument");
    *out = NULL;
    rf_ps_server *s = calloc(1, sizeof *s);
    if (!s)
        return rf_error_set(RF_ERR_NO_MEMORY, "rf_ps_server_start: no memory");
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cond, NULL);
    s->fabric = fabric;
    snprintf(s->host, sizeof s->host, "%s", host);
    s->chief.id = UINT32_MAX;
    const char *job = rf_env_str("RF_JOB_TOKEN", NULL);
    s->job_token = job && *job;
    rf_status st = read_options(options, &s->opt);
    if (st != RF_OK)
        goto fail;
    s->incarnation =
        s->opt.incarnation ? s->opt.incarnation : random_incarnation();
    if ((st = rf_topology_open(&s->topo)) != RF_OK)
        goto fail;
    if ((st = rf_topology_choose(s->topo, host, &s->binding)) != RF_OK) {
        RF_LOG_WARN("ps %d: no NUMA choice from '%s' (%s); using the default",
                    s->opt.task_index, host, rf_error_message());
        if ((st = rf_topology_choose(s->topo, NULL, &s->binding)) != RF_OK)
            goto fail;
    }
    st = ps_arena_init(&s->arena, fabric, s->topo, &s->binding,
                       s->opt.chunk_bytes, s->opt.max_bytes);
    if (st != RF_OK)
        goto fail;
    if ((st = ps_shards_init(s)) != RF_OK)
        goto fail;
    ps_members_init(s);
    /* every connection's receives and sends may complete at once (a
     * close flushes them): clients and those still setting up, known
     * tasks' (ps_known_unadmitted_max, ps_server_admit.c) and others' */
    uint32_t depth = ((uint32_t)s->opt.max_workers +
                      ps_known_unadmitted_max(s) + PS_SRV_MAX_UNADMITTED) *
                     (PS_SRV_RECV_DEPTH + SEND_DEPTH);
    if ((st = rf_cq_create(fabric, depth, &s->cq)) != RF_OK)
        goto fail;
    const char *lhost =
        options && options->listen_host ? options->listen_host : host;
    if ((st = rf_listen(fabric, lhost, port, &s->listener)) != RF_OK) {
        if (lhost != host)
            st = rf_error_set(st, "listening on %s (bind address): %s", lhost,
                              rf_error_message());
        goto fail;
    }
    s->port = rf_listener_port(s->listener);
    s->started_ms = rf_now_ms(); /* serving from now (idle_exit_ms) */
    if (pthread_create(&s->service_thread, NULL, service_main, s) != 0) {
        st = rf_error_set(RF_ERR_NO_RESOURCE, "ps: pthread_create failed");
        goto fail;
    }
    s->service_started = true;
    if (pthread_create(&s->listen_thread, NULL, listen_main, s) != 0) {
        st = rf_error_set(RF_ERR_NO_RESOURCE, "ps: pthread_create failed");
        rf_ps_server_stop(s);
        return st;
    }
    s->listen_started = true;
    RF_LOG_INFO("ps %d: serving on %s:%u (%s%s%s), incarnation 0x%016llx, "
                "arena chunks of %zu bytes on NUMA node %d (%s)",
                s->opt.task_index, host, s->port, rf_fabric_provider(fabric),
                lhost != host ? ", listening on " : "",
                lhost != host ? lhost : "", (unsigned long long)s->incarnation,
                s->opt.chunk_bytes, s->binding.numa_node, s->binding.why);
    *out = s;
    return RF_OK;
fail:;
    char why[512];
    snprintf(why, sizeof why, "%s", rf_error_message());
    server_free(s);
    return rf_error_set(st, "ps task: cannot start on %s:%u: %s", host, port,
                        why);
}

uint16_t rf_ps_server_port(const rf_ps_server *s)
{
    return s ? s->port : 0;
}

uint64_t rf_ps_server_incarnation(const rf_ps_server *s)
{
    return s ? s->incarnation : 0;
}

rf_status rf_ps_server_join(rf_ps_server *s)
{
    if (!s)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_ps_server_join: NULL");
    pthread_mutex_lock(&s->mu);
    while (!s->done)
        pthread_cond_wait(&s->cond, &s->mu);
    rf_status st = s->status;
    char why[sizeof s->stop_why];
    snprintf(why, sizeof why, "%s", s->stop_why);
    pthread_mutex_unlock(&s->mu);
    if (st != RF_OK)
        return rf_error_set(st, "ps task %d stopped: %s", s->opt.task_index,
                            *why ? why : rf_status_string(st));
    return RF_OK;
}

void rf_ps_server_stop(rf_ps_server *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_mutex_unlock(&s->mu);
    if (s->listen_started)
        pthread_join(s->listen_thread, NULL);
    if (s->service_started)
        pthread_join(s->service_thread, NULL);
    server_free(s);
}

int rf_ps_server_numa_node(const rf_ps_server *s, const char **why)
{
    if (why)
        *why = s ? s->binding.why : "";
    return s ? s->binding.numa_node : -1;
}
