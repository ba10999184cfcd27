/* ps/ps_server_token.c: a task's slot belongs to that task, across its
 * restarts (issue 26 items 1 and 4). Every connect hello may carry the
 * connector's task token (PS_CONN_FLAG_TOKEN, ps_token.c). The ps binds
 * each client id, and the chief's role, to the token of the first
 * connection that said HELLO with it, and remembers it for its whole life
 * (a LEAVE forgets the id's). Without a cluster secret:
 *   - a connect for a bound id (or claiming a bound chief's role) with
 *     another token, or none where the binding has one, is rejected at
 *     once with an "auth: " text (final at the connector) and logged with
 *     the peer's address;
 *   - with RF_JOB_TOKEN in the ps's environment, the token must be the
 *     one derived from it for that id, bound or not.
 * With a secret, the secret is the proof: a new token is accepted and the
 * rebinding logged. Either way every return of a bound id (a reconnect or a
 * restart) is logged with the peer's address as a takeover, and a connect
 * whose token matches its id's binding (or the job token) is "known":
 * ps_server_admit.c lets it past the caps on connections setting up. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "ps/ps_server_internal.h"
#include "ps/ps_token.h"

/* Caller holds s->mu. */
static ps_binding *binding_of(rf_ps_server *s, uint32_t id)
{
    for (uint32_t i = 0; i < s->num_binds; i++)
        if (s->binds[i].id == id)
            return &s->binds[i];
    return NULL;
}

static bool same(bool has, const unsigned char *tok, const ps_binding *b)
{
    return has == b->has_token && (!has || ps_token_equal(tok, b->token));
}

/* Caller holds s->mu. Why h may not have its id or role (in why), or
 * NULL. */
static const char *mismatch(rf_ps_server *s, uint32_t id, bool chief, bool has,
                            const unsigned char *tok, char *why, size_t len)
{
    unsigned char want[PS_TOKEN_LEN];
    if (s->job_token) {
        if (!has || !ps_token_from_job(id, want) || !ps_token_equal(tok, want))
            snprintf(why, len,
                     "client id %u %s (this ps task has the job token, "
                     "RF_JOB_TOKEN)",
                     id,
                     has ? "presents a token not of this job"
                         : "presents no task token");
        else
            return NULL;
        return why;
    }
    ps_binding *b = binding_of(s, id);
    if (b && !same(has, tok, b)) {
        snprintf(why, len,
                 "client id %u belongs to the task first seen from %s, and "
                 "this connection %s",
                 id, b->peer,
                 has ? "presents another task token"
                     : "presents no task token");
        return why;
    }
    if (chief && s->chief.id != UINT32_MAX && !same(has, tok, &s->chief)) {
        snprintf(why, len,
                 "the chief's role belongs to client %u first seen from %s "
                 "(the chief that initialised this job), and this "
                 "connection %s",
                 s->chief.id, s->chief.peer,
                 has ? "presents another task token" : "presents no token");
        return why;
    }
    return NULL;
}

bool ps_token_known(rf_ps_server *s, const ps_conn_hello *h)
{
    if (!(h->flags & PS_CONN_FLAG_TOKEN))
        return false;
    char why[8];
    pthread_mutex_lock(&s->mu);
    bool known = (s->job_token || binding_of(s, h->client_id)) &&
                 !mismatch(s, h->client_id, h->flags & PS_CONN_FLAG_CHIEF, true,
                           h->token, why, sizeof why);
    pthread_mutex_unlock(&s->mu);
    return known;
}

const char *ps_token_admit(rf_ps_server *s, const ps_conn_hello *h,
                           const char *peer, char *text, size_t len)
{
    if (s->opt.secret)
        return NULL; /* the secret proves it; the auth handshake decides */
    char why[400];
    pthread_mutex_lock(&s->mu);
    const char *bad =
        mismatch(s, h->client_id, h->flags & PS_CONN_FLAG_CHIEF,
                 h->flags & PS_CONN_FLAG_TOKEN, h->token, why, sizeof why);
    pthread_mutex_unlock(&s->mu);
    if (!bad)
        return NULL;
    RF_LOG_WARN("ps %d: refusing client %u%s from %s: %s (a stranger in its "
                "place, or a restart that lost its token: see RF_TOKEN_DIR)",
                s->opt.task_index, h->client_id,
                h->flags & PS_CONN_FLAG_CHIEF ? " (chief)" : "", peer, why);
    if (strstr(why, "the chief's role") == why)
        snprintf(text, len,
                 PS_REJECT_AUTH "the chief's role is another task's");
    else
        snprintf(text, len, PS_REJECT_AUTH "client id %u is another task's",
                 h->client_id);
    return text;
}

/* Caller holds s->mu. */
static void bind(ps_binding *b, uint32_t id, const ps_server_conn *c)
{
    b->id = id;
    b->has_token = c->has_token;
    memcpy(b->token, c->token, PS_TOKEN_LEN);
    snprintf(b->peer, sizeof b->peer, "%s", c->peer);
}

const char *ps_token_bind(ps_server_conn *c, char *text, size_t len)
{
    rf_ps_server *s = c->srv;
    char why[400], who[160];
    ps_conn_label(c, who, sizeof who);
    pthread_mutex_lock(&s->mu);
    /* again: two connects of one id may both have passed the listener
     * before either said HELLO */
    const char *bad = s->opt.secret
                          ? NULL
                          : mismatch(s, c->client_id, c->chief, c->has_token,
                                     c->token, why, sizeof why);
    ps_binding *b = bad ? NULL : binding_of(s, c->client_id);
    bool grown = true;
    if (!bad && !b && s->num_binds == s->cap_binds) {
        uint32_t cap = s->cap_binds ? 2 * s->cap_binds : 16;
        ps_binding *nb = realloc(s->binds, cap * sizeof *nb);
        grown = nb != NULL;
        if (nb)
            s->binds = nb, s->cap_binds = cap;
    }
    char before[64] = "";
    bool rebound = false;
    if (!bad && grown) {
        if (b) {
            snprintf(before, sizeof before, "%s", b->peer);
            rebound = !same(c->has_token, c->token, b);
        } else {
            b = &s->binds[s->num_binds++];
        }
        bind(b, c->client_id, c);
        if (c->chief) {
            if (s->chief.id != UINT32_MAX &&
                !same(c->has_token, c->token, &s->chief))
                rebound = true;
            bind(&s->chief, c->client_id, c);
        }
    }
    pthread_mutex_unlock(&s->mu);
    if (bad) {
        RF_LOG_WARN("ps %d: refusing %s at HELLO: %s", s->opt.task_index, who,
                    why);
        snprintf(text, len, "%s", why);
        return text;
    }
    if (!grown) {
        snprintf(text, len, "ps task %d: out of memory binding client %u",
                 s->opt.task_index, c->client_id);
        return text;
    }
    if (rebound)
        RF_LOG_WARN("ps %d: %s takes the slot of another task token (before "
                    "from %s): allowed, it proved the cluster secret",
                    s->opt.task_index, who, before);
    else if (*before) /* a takeover: logged whoever it is */
        RF_LOG_WARN("ps %d: %s takes its slot back (the same task token; "
                    "before from %s)",
                    s->opt.task_index, who, before);
    return NULL;
}

void ps_token_forget(rf_ps_server *s, uint32_t id)
{
    pthread_mutex_lock(&s->mu);
    ps_binding *b = binding_of(s, id);
    if (b)
        *b = s->binds[--s->num_binds];
    pthread_mutex_unlock(&s->mu);
}
