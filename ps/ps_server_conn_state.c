/* ps/ps_server_conn_state.c: the life of a ps connection as named states
 * and one table. Each row says which control messages the state handles,
 * whether pushes (write_imm) are served, whether the handshake deadline
 * applies, how a message it does not handle is refused (the text the drop
 * logs) and which states may follow. ps_ctrl_handle and ps_apply_push ask
 * it before they dispatch; every change of state goes through
 * ps_conn_set_state, which logs it (debug) with its reason.
 *
 * The life: admitted (receives being posted) -> waiting for the auth
 * request -> waiting for the proof (only when the ps has a cluster secret)
 * -> waiting for HELLO -> live; a refusal sent on the way makes it closing
 * (closed once the reply is out); dead at the end (closed, freed once the
 * completion queue is drained of its work). It is not the wire protocol's
 * definition (ps/proto.h) nor the admission counts (ps_server_admit.c). */
#include <stdio.h>

#include "core/log.h"
#include "ps/ps_server_internal.h"

#define BIT(t)     (1u << (t))
#define TO(s)      (1u << (s))
#define HANDSHAKES (TO(PS_CONN_CLOSING) | TO(PS_CONN_DEAD))

typedef struct ps_conn_state_row {
    const char *name;
    uint32_t requests; /* bit t: control message type t is handled */
    bool pushes;       /* write_imm pushes and gathers are served */
    bool handshake;    /* left by handshake_timeout_ms or dropped */
    /* a control message not handled: dropped with refuse_before, the
     * message's type name (if refuse_names_type), refuse_after; repeated
     * (the message that entered this state) as "a second <type>" */
    const char *refuse_before, *refuse_after;
    bool refuse_names_type;
    uint16_t repeated;
    uint32_t next; /* bit s: the states it may change to */
} ps_conn_state_row;

static const ps_conn_state_row rows[PS_CONN_NUM_STATES] = {
    [PS_CONN_ADMITTED] =
        {
            .name = "admitted",
            .refuse_before = "",
            .refuse_after = " on a connection being set up",
            .refuse_names_type = true,
            .next = TO(PS_CONN_WAIT_AUTH_REQ) | TO(PS_CONN_WAIT_HELLO) |
                    TO(PS_CONN_DEAD),
        },
    [PS_CONN_WAIT_AUTH_REQ] =
        {
            .name = "waiting for the auth request",
            .requests = BIT(PS_MSG_AUTH_REQ),
            .handshake = true,
            .refuse_before = "",
            .refuse_after = " on an unauthenticated connection (expected "
                            "AUTH_REQ)",
            .refuse_names_type = true,
            .next = TO(PS_CONN_WAIT_PROOF) | HANDSHAKES,
        },
    [PS_CONN_WAIT_PROOF] =
        {
            .name = "waiting for the proof",
            .requests = BIT(PS_MSG_AUTH_PROOF),
            .handshake = true,
            .refuse_before = "",
            .refuse_after = " on an unauthenticated connection (expected "
                            "AUTH_PROOF)",
            .refuse_names_type = true,
            .next = TO(PS_CONN_WAIT_HELLO) | HANDSHAKES,
        },
    [PS_CONN_WAIT_HELLO] =
        {
            .name = "waiting for HELLO",
            .requests = BIT(PS_MSG_HELLO),
            .handshake = true,
            .refuse_before = "",
            .refuse_after = " before HELLO",
            .refuse_names_type = true,
            .next = TO(PS_CONN_LIVE) | HANDSHAKES,
        },
    [PS_CONN_LIVE] =
        {
            .name = "live",
            .requests = BIT(PS_MSG_REGIONS_REQ) | BIT(PS_MSG_DIR_REQ) |
                        BIT(PS_MSG_CREATE_REQ) | BIT(PS_MSG_SHUTDOWN_REQ) |
                        BIT(PS_MSG_LEAVE_REQ) | BIT(PS_MSG_SHARD_REQ) |
                        BIT(PS_MSG_LEDGER_REQ),
            .pushes = true,
            .refuse_before = "unexpected ",
            .refuse_after = " (a reply, or a handshake message out of place)",
            .refuse_names_type = true,
            .repeated = PS_MSG_HELLO,
            /* never closing: a live connection holds a client slot, which
             * only its close gives back (ps_admit_release) */
            .next = TO(PS_CONN_DEAD),
        },
    [PS_CONN_CLOSING] =
        {
            .name = "closing",
            .refuse_before = "a request after its connection was refused",
            .refuse_after = "",
            .next = TO(PS_CONN_DEAD),
        },
    [PS_CONN_DEAD] =
        {
            .name = "dead",
            .refuse_before = "",
            .refuse_after = " on a closed connection",
            .refuse_names_type = true,
        },
};

const char *ps_conn_state_name(ps_conn_state st)
{
    return (unsigned)st < PS_CONN_NUM_STATES ? rows[st].name : "unknown";
}

bool ps_conn_state_accepts(ps_conn_state st, uint16_t type)
{
    return (unsigned)st < PS_CONN_NUM_STATES && type < 32 &&
           (rows[st].requests & BIT(type));
}

bool ps_conn_state_serves_pushes(ps_conn_state st)
{
    return (unsigned)st < PS_CONN_NUM_STATES && rows[st].pushes;
}

bool ps_conn_state_in_handshake(ps_conn_state st)
{
    return (unsigned)st < PS_CONN_NUM_STATES && rows[st].handshake;
}

bool ps_conn_state_may_follow(ps_conn_state from, ps_conn_state to)
{
    return (unsigned)from < PS_CONN_NUM_STATES &&
           (unsigned)to < PS_CONN_NUM_STATES && (rows[from].next & TO(to));
}

void ps_conn_state_refusal(ps_conn_state st, uint16_t type, char *buf,
                           size_t len)
{
    if ((unsigned)st >= PS_CONN_NUM_STATES) {
        snprintf(buf, len, "%s in an unknown state", ps_msg_type_name(type));
        return;
    }
    const ps_conn_state_row *r = &rows[st];
    if (r->repeated && type == r->repeated)
        snprintf(buf, len, "a second %s", ps_msg_type_name(type));
    else
        snprintf(buf, len, "%s%s%s", r->refuse_before,
                 r->refuse_names_type ? ps_msg_type_name(type) : "",
                 r->refuse_after);
}

void ps_conn_set_state(ps_server_conn *c, ps_conn_state to, const char *why)
{
    ps_conn_state from = c->state;
    char who[160];
    ps_conn_label(c, who, sizeof who);
    if (!ps_conn_state_may_follow(from, to))
        RF_LOG_ERRORF("ps %d: connection of %s: %s -> %s is not in the "
                      "state table (%s)",
                      c->srv->opt.task_index, who, ps_conn_state_name(from),
                      ps_conn_state_name(to), why);
    else
        RF_LOG_DEBUG("ps %d: connection of %s: %s -> %s (%s)",
                     c->srv->opt.task_index, who, ps_conn_state_name(from),
                     ps_conn_state_name(to), why);
    c->state = to;
    if (from == PS_CONN_LIVE && to == PS_CONN_DEAD)
        ps_members_gone(c->srv, c->client_id);
    if (c->chief && from != to && (to == PS_CONN_LIVE || from == PS_CONN_LIVE))
        ps_life_chief(c->srv, to == PS_CONN_LIVE);
}

bool ps_conn_accepts(ps_server_conn *c, uint16_t type)
{
    if (ps_conn_state_accepts(c->state, type))
        return true;
    char why[160];
    ps_conn_state_refusal(c->state, type, why, sizeof why);
    ps_conn_drop(c, why);
    return false;
}

bool ps_conn_accepts_push(ps_server_conn *c)
{
    if (ps_conn_state_serves_pushes(c->state))
        return true;
    ps_conn_drop(c, "a push before HELLO");
    return false;
}
