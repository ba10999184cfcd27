/* tests/integration/attack/attack.h: what the attacker's subcommands share
 * (attack_peer.c parses the command line; attack_ps.c holds the ps
 * protocol attacks, attack_raw.c the one-sided, flood and malformed-frame
 * ones): the options, connections to the ps with a connect hello, and the
 * one result line each subcommand prints ("refused: ..." or
 * "SUCCEEDED: ...", followed by the local addresses it connected from, so
 * the driver can find each attempt in the ps's log). */
#ifndef RF_TESTS_INTEGRATION_ATTACK_ATTACK_H
#define RF_TESTS_INTEGRATION_ATTACK_ATTACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmaflow/fabric.h"
#include "tests/integration/attack/rsock.h"

typedef struct at_opts {
    char host[64];
    uint16_t port;
    const char *secret; /* --secret FILE */
    uint32_t id;        /* --id (default 1) */
    bool chief;         /* --chief */
    bool have_target;   /* --target RKEY:ADDR:LEN (a real region) */
    rf_mr_desc target;
    bool have_globals; /* --globals RKEY:ADDR (global_step) */
    rf_mr_desc globals;
    int count;      /* --count: connections or requests */
    int hold_ms;    /* --hold_ms: how long the flood holds */
    int timeout_ms; /* --timeout_ms: how long the ps may take to refuse */
} at_opts;

/* The attempt's verdict; each adds to what at_finish prints. */
void at_refused(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void at_succeeded(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Records a connection's local address for the result line. */
void at_conn(const rsock *s);
/* Prints the result line; returns the exit status: 0 when every attempt
 * was refused, 1 when one succeeded. */
int at_finish(const char *cmd);

/* TCP + sock handshake with a ps connect hello {id, flags}. */
rs_result at_open(const at_opts *o, rsock *s, uint32_t id, uint32_t flags);
/* The same, expecting an ACCEPT (at_succeeded/at_refused are the caller's):
 * returns false, noting why, if the ps did not accept. */
bool at_open_accepted(const at_opts *o, rsock *s, uint32_t id, uint32_t flags,
                      const char *what);
/* The ps must drop s within the timeout without sending it any ps message
 * after the ones it had (msgs_allowed): records the verdict for what. */
void at_expect_dropped(const at_opts *o, rsock *s, uint32_t msgs_allowed,
                       const char *what);

/* A HELLO of id (its chief flag from fl) with a made-up ack ring, into m;
 * returns its length. */
size_t at_hello(uint32_t id, uint32_t fl, unsigned char *m);
/* Sends a ps message on s, then reads the ps's next message into buf (cap
 * bytes), its length in *got. */
rs_result at_rpc(const at_opts *o, rsock *s, const void *msg, size_t len,
                 void *buf, size_t cap, size_t *got);
/* One request frame on a fresh connection that said hello {id, flags} and
 * never authenticated, and the verdict on its reply (attack_raw.c). */
void at_one_sided(const at_opts *o, uint32_t id, uint32_t flags,
                  const rf_sock_hdr *req, const void *payload,
                  const char *what);

/* Subcommands (attack_ps.c). */
int at_nosecret(const at_opts *o);
int at_wrongsecret(const at_opts *o);
int at_chief(const at_opts *o);
int at_dup(const at_opts *o);
int at_insider(const at_opts *o);
/* Subcommand (attack_gap.c): no secret, a restarting task's slot; --count
 * is the global_step it writes. */
int at_gap(const at_opts *o);
/* Subcommands (attack_raw.c). */
int at_onesided(const at_opts *o);
int at_flood(const at_opts *o);
int at_frames(const at_opts *o);
int at_bigread(const at_opts *o);

#endif
