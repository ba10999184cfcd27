/* ps/ps_auth.h: the handshake's cryptography (ps/ps_auth.c), shared by the
 * ps (ps_server_auth.c) and the worker (ps_client_auth.c): nonces and the
 * two HMAC-SHA256 proofs over one transcript, with the cluster secret's
 * key (rdmaflow/secret.h). */
#ifndef RF_PS_AUTH_H
#define RF_PS_AUTH_H

#include <stdbool.h>
#include <stdint.h>

#include "ps/proto.h"
#include "rdmaflow/secret.h"

/* What both proofs cover: both nonces, the worker's claimed identity
 * (client id, connect flags), the ps's (task index, incarnation) and the
 * protocol version. */
typedef struct ps_auth_transcript {
    unsigned char client_nonce[PS_AUTH_NONCE];
    unsigned char ps_nonce[PS_AUTH_NONCE];
    uint32_t client_id;
    uint32_t flags;
    int32_t ps_index;
    uint64_t incarnation;
} ps_auth_transcript;

typedef enum { PS_AUTH_BY_PS, PS_AUTH_BY_WORKER } ps_auth_side;

/* Fills a nonce from libsodium's CSPRNG. */
void ps_auth_nonce(unsigned char nonce[PS_AUTH_NONCE]);
/* HMAC-SHA256(key, label(side) || transcript), label "rdmaflow ps" or
 * "rdmaflow worker", so that neither side's proof can be reflected. */
void ps_auth_mac(const rf_cluster_secret *secret, ps_auth_side side,
                 const ps_auth_transcript *t, unsigned char mac[PS_AUTH_MAC]);
/* Constant-time check of a received proof. */
bool ps_auth_verify(const rf_cluster_secret *secret, ps_auth_side side,
                    const ps_auth_transcript *t,
                    const unsigned char mac[PS_AUTH_MAC]);

#endif
