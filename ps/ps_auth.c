/* ps/ps_auth.c: the handshake's cryptography (see ps_auth.h), all of it
 * libsodium's: randombytes_buf for nonces, crypto_auth_hmacsha256 and its
 * constant-time _verify for the proofs. The transcript is serialised
 * little-endian in a fixed order:
 *   label (NUL-terminated) | client nonce | ps nonce | client id u32 |
 *   flags u32 | ps index i32 | incarnation u64 | PS_PROTO_VERSION u16 */
#include "ps/ps_auth.h"

#include <sodium.h>
#include <string.h>

#include "rdmaflow/byteorder.h"

#define LABEL_MAX 16u
#define MSG_MAX   (LABEL_MAX + 2u * PS_AUTH_NONCE + 4u + 4u + 4u + 8u + 2u)

static size_t serialise(ps_auth_side side, const ps_auth_transcript *t,
                        unsigned char out[MSG_MAX])
{
    const char *label =
        side == PS_AUTH_BY_PS ? "rdmaflow ps" : "rdmaflow worker";
    size_t n = strlen(label) + 1;
    memcpy(out, label, n);
    memcpy(out + n, t->client_nonce, PS_AUTH_NONCE);
    n += PS_AUTH_NONCE;
    memcpy(out + n, t->ps_nonce, PS_AUTH_NONCE);
    n += PS_AUTH_NONCE;
    rf_put_le32(out + n, t->client_id);
    rf_put_le32(out + n + 4, t->flags);
    rf_put_le32(out + n + 8, (uint32_t)t->ps_index);
    rf_put_le64(out + n + 12, t->incarnation);
    rf_put_le16(out + n + 20, PS_PROTO_VERSION);
    return n + 22;
}

void ps_auth_nonce(unsigned char nonce[PS_AUTH_NONCE])
{
    /* Only called with a secret, so rf_secret_load ran sodium_init. */
    randombytes_buf(nonce, PS_AUTH_NONCE);
}

void ps_auth_mac(const rf_cluster_secret *secret, ps_auth_side side,
                 const ps_auth_transcript *t, unsigned char mac[PS_AUTH_MAC])
{
    _Static_assert(crypto_auth_hmacsha256_BYTES == PS_AUTH_MAC, "mac size");
    _Static_assert(crypto_auth_hmacsha256_KEYBYTES == RF_SECRET_KEY_BYTES,
                   "key size");
    unsigned char msg[MSG_MAX];
    size_t n = serialise(side, t, msg);
    crypto_auth_hmacsha256(mac, msg, n, rf_secret_key(secret));
}

bool ps_auth_verify(const rf_cluster_secret *secret, ps_auth_side side,
                    const ps_auth_transcript *t,
                    const unsigned char mac[PS_AUTH_MAC])
{
    unsigned char msg[MSG_MAX];
    size_t n = serialise(side, t, msg);
    return crypto_auth_hmacsha256_verify(mac, msg, n, rf_secret_key(secret)) ==
           0;
}
