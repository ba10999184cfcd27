/* ps/ps_client_conn_state.c: the life of the worker's connection to one ps
 * task as named states and one table. Each row says whether the connection
 * is usable (work may be posted, an RPC may wait on it), which control
 * requests it may send (cli_rpc asks before it sends, through
 * cli_conn_check_request) and which states may follow; every change goes
 * through cli_conn_set_state, which logs it (debug) with its reason.
 *
 * The life: not connected -> connecting -> authenticating (only with a
 * cluster secret) -> saying HELLO (HELLO, then the regions and the
 * directory) -> live; down from any of them when the connection is lost,
 * refused, shut down by the chief or closed (p->why says why), and
 * connecting again at rf_ps_client_reconnect. The replies each request
 * expects are cli_rpc's business, the wire format ps/proto.h's. */
#include <stdio.h>

#include "core/log.h"
#include "ps/ps_client_internal.h"
#include "rdmaflow/status.h"

#define BIT(t) (1u << (t))
#define TO(s)  (1u << (s))

typedef struct cli_conn_state_row {
    const char *name;
    bool usable;       /* work may be posted and waited for */
    uint32_t requests; /* bit t: control requests of type t may be sent */
    uint32_t next;     /* bit s: the states it may change to */
} cli_conn_state_row;

static const cli_conn_state_row rows[CLI_CONN_NUM_STATES] = {
    [CLI_CONN_NOT_CONNECTED] = {.name = "not connected",
                                .next = TO(CLI_CONN_CONNECTING)},
    [CLI_CONN_CONNECTING] = {.name = "connecting",
                             .next = TO(CLI_CONN_AUTHENTICATING) |
                                     TO(CLI_CONN_HELLO) | TO(CLI_CONN_DOWN)},
    [CLI_CONN_AUTHENTICATING] = {.name = "authenticating",
                                 .usable = true,
                                 .requests = BIT(PS_MSG_AUTH_REQ) |
                                             BIT(PS_MSG_AUTH_PROOF),
                                 .next =
                                     TO(CLI_CONN_HELLO) | TO(CLI_CONN_DOWN)},
    [CLI_CONN_HELLO] = {.name = "saying HELLO",
                        .usable = true,
                        .requests = BIT(PS_MSG_HELLO) |
                                    BIT(PS_MSG_REGIONS_REQ) |
                                    BIT(PS_MSG_DIR_REQ),
                        .next = TO(CLI_CONN_LIVE) | TO(CLI_CONN_DOWN)},
    [CLI_CONN_LIVE] = {.name = "live",
                       .usable = true,
                       .requests =
                           BIT(PS_MSG_REGIONS_REQ) | BIT(PS_MSG_DIR_REQ) |
                           BIT(PS_MSG_CREATE_REQ) | BIT(PS_MSG_SHUTDOWN_REQ) |
                           BIT(PS_MSG_LEAVE_REQ) | BIT(PS_MSG_SHARD_REQ) |
                           BIT(PS_MSG_LEDGER_REQ),
                       .next = TO(CLI_CONN_DOWN)},
    [CLI_CONN_DOWN] = {.name = "down", .next = TO(CLI_CONN_CONNECTING)},
};

const char *cli_conn_state_name(cli_conn_state st)
{
    return (unsigned)st < CLI_CONN_NUM_STATES ? rows[st].name : "unknown";
}

bool cli_conn_state_usable(cli_conn_state st)
{
    return (unsigned)st < CLI_CONN_NUM_STATES && rows[st].usable;
}

bool cli_conn_state_may_send(cli_conn_state st, uint16_t type)
{
    return (unsigned)st < CLI_CONN_NUM_STATES && type < 32 &&
           (rows[st].requests & BIT(type));
}

bool cli_conn_state_may_follow(cli_conn_state from, cli_conn_state to)
{
    return (unsigned)from < CLI_CONN_NUM_STATES &&
           (unsigned)to < CLI_CONN_NUM_STATES && (rows[from].next & TO(to));
}

void cli_conn_set_state(ps_cli_conn *p, cli_conn_state to, const char *why)
{
    cli_conn_state from = p->state;
    char name[340];
    cli_ps_name(p, name, sizeof name);
    if (!cli_conn_state_may_follow(from, to))
        RF_LOG_ERRORF("%s: connection %s -> %s is not in the state table "
                      "(%s)",
                      name, cli_conn_state_name(from), cli_conn_state_name(to),
                      why);
    else
        RF_LOG_DEBUG("%s: connection %s -> %s (%s)", name,
                     cli_conn_state_name(from), cli_conn_state_name(to), why);
    p->state = to;
}

rf_status cli_conn_check_request(ps_cli_conn *p, size_t len)
{
    rf_status st = cli_conn_check(p);
    if (st != RF_OK)
        return st;
    ps_msg_hdr h;
    if (ps_dec_hdr(cli_req_buf(p), len, &h) != RF_OK)
        return rf_error_set(RF_ERR_INVALID_ARG, "ps client: bad request");
    if (cli_conn_state_may_send(p->state, h.type))
        return RF_OK;
    char name[340];
    return rf_error_set(RF_ERR_INVALID_ARG,
                        "%s: ps client: %s may not be sent on a connection "
                        "that is %s",
                        cli_ps_name(p, name, sizeof name),
                        ps_msg_type_name(h.type),
                        cli_conn_state_name(p->state));
}
