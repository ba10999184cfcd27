/* ps/ps_server_admit.c: what a connection may cost a ps task before and
 * after it is a client. A connection is "unadmitted" from its accept until
 * its HELLO (after authentication, with a secret) made it a client: at most
 * PS_SRV_MAX_UNADMITTED of those at once, at most PS_SRV_UNADMITTED_PER_ADDR of
 * them from one address, and each must say HELLO within
 * handshake_timeout_ms or is dropped (ps_admit_expire). They never hold a
 * client slot: the max_workers slots are taken at HELLO. A connection of a
 * known task (its token matches its id's binding or the job token,
 * ps_server_token.c) is not held to those caps but to its own: at most
 * ps_known_unadmitted_max of them (32) setting up, so a flood of anonymous
 * connections never keeps a returning task out (issue 26 item 4). Every refusal
 * and drop is counted (rf_ps_server_counters). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "ps/ps_server_internal.h"
#include "rdmaflow/clock.h"

/* The address part of "host:port" ("[v6]:port" too). */
static void addr_of(const char *peer, char *out, size_t len)
{
    snprintf(out, len, "%s", peer);
    char *colon = strrchr(out, ':');
    if (colon && colon != out)
        *colon = '\0';
}

/* Caller holds s->mu. */
static ps_addr_count *addr_slot(rf_ps_server *s, const char *addr, bool make)
{
    ps_addr_count *free_slot = NULL;
    for (uint32_t i = 0; i < PS_SRV_MAX_UNADMITTED; i++) {
        ps_addr_count *a = &s->addrs[i];
        if (a->count && strcmp(a->addr, addr) == 0)
            return a;
        if (!a->count && !free_slot)
            free_slot = a;
    }
    if (make && free_slot)
        snprintf(free_slot->addr, sizeof free_slot->addr, "%s", addr);
    return make ? free_slot : NULL;
}

const char *ps_admit_connection(rf_ps_server *s, const char *peer, bool known,
                                char *why, size_t len)
{
    char addr[sizeof s->addrs[0].addr];
    addr_of(peer, addr, sizeof addr);
    const char *refused = NULL;
    pthread_mutex_lock(&s->mu);
    ps_addr_count *a = known ? NULL : addr_slot(s, addr, true);
    if (known) {
        if (s->known_unadmitted >= ps_known_unadmitted_max(s)) {
            snprintf(why, len, PS_REJECT_BUSY "%u known tasks are setting up",
                     s->known_unadmitted);
            refused = why;
        } else {
            s->known_unadmitted++;
        }
    } else if (s->unadmitted >= PS_SRV_MAX_UNADMITTED || !a) {
        snprintf(why, len, PS_REJECT_BUSY "%u connections are setting up",
                 s->unadmitted);
        refused = why;
    } else if (a->count >= PS_SRV_UNADMITTED_PER_ADDR) {
        snprintf(why, len,
                 PS_REJECT_BUSY "%u connections from %s are setting up",
                 a->count, addr);
        refused = why;
    } else {
        s->unadmitted++;
        a->count++;
    }
    if (refused)
        s->counters.refused_busy++;
    pthread_mutex_unlock(&s->mu);
    return refused;
}

/* Caller holds s->mu. */
static void release_unadmitted(rf_ps_server *s, const char *peer, bool known)
{
    if (known) {
        if (s->known_unadmitted)
            s->known_unadmitted--;
        return;
    }
    char addr[sizeof s->addrs[0].addr];
    addr_of(peer, addr, sizeof addr);
    ps_addr_count *a = addr_slot(s, addr, false);
    if (a && a->count)
        a->count--;
    if (s->unadmitted)
        s->unadmitted--;
}

void ps_admit_release(rf_ps_server *s, const char *peer, bool client,
                      bool known)
{
    pthread_mutex_lock(&s->mu);
    if (client) {
        if (s->clients)
            s->clients--;
    } else {
        release_unadmitted(s, peer, known);
    }
    pthread_mutex_unlock(&s->mu);
}

bool ps_admit_client(ps_server_conn *c)
{
    rf_ps_server *s = c->srv;
    pthread_mutex_lock(&s->mu);
    bool ok = s->clients < (uint32_t)s->opt.max_workers;
    if (ok) {
        release_unadmitted(s, c->peer, c->known);
        s->clients++;
    } else {
        s->counters.refused_full++;
    }
    pthread_mutex_unlock(&s->mu);
    return ok;
}

void ps_count(rf_ps_server *s, size_t offset)
{
    pthread_mutex_lock(&s->mu);
    (*(uint64_t *)(void *)((char *)&s->counters + offset))++;
    pthread_mutex_unlock(&s->mu);
}

void ps_admit_expire(rf_ps_server *s)
{
    long long now = rf_now_ms();
    if (now < s->next_expiry_check)
        return;
    s->next_expiry_check = now + 100;
    for (ps_server_conn *c = s->conns; c; c = c->next) {
        if (!ps_conn_state_in_handshake(c->state) || now < c->deadline_ms)
            continue;
        char why[160];
        snprintf(why, sizeof why, "no HELLO within %d ms (%s)",
                 s->opt.handshake_timeout_ms,
                 c->state == PS_CONN_WAIT_HELLO ? "idle" : "not authenticated");
        ps_count(s, offsetof(rf_ps_server_counters, dropped_idle));
        ps_conn_drop_counted(c, why); /* not as a protocol drop */
    }
}

void rf_ps_server_get_counters(rf_ps_server *s, rf_ps_server_counters *out)
{
    pthread_mutex_lock(&s->mu);
    *out = s->counters;
    out->clients = s->clients;
    pthread_mutex_unlock(&s->mu);
    out->dense_applies = __atomic_load_n(&s->dense_applies, __ATOMIC_RELAXED);
    out->stale_dropped = __atomic_load_n(&s->stale_dropped, __ATOMIC_RELAXED);
    out->arena_bytes = __atomic_load_n(&s->arena.total, __ATOMIC_RELAXED);
}
