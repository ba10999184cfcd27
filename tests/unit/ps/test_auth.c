/* tests/unit/ps/test_auth.c: the AUTH_* messages round-trip and are
 * decoded strictly (truncated, trailing bytes, flags, zero incarnation);
 * the two proofs differ by side, verify only with the same key and the same
 * transcript (every field counts); the secret file's key is a function of
 * its bytes, RF_CLUSTER_SECRET_FILE is read and the flag wins. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ps/proto.h"
#include "ps/ps_auth.h"
#include "rdmaflow/byteorder.h"
#include "rdmaflow/secret.h"
#include "tests/common/check.h"

static bool has(const char *needle)
{
    return strstr(rf_error_message(), needle) != NULL;
}

static const char *secret_file(const char *tag, unsigned char fill)
{
    static char paths[4][128];
    static int next;
    char *p = paths[next++ % 4];
    snprintf(p, 128, "/tmp/rf-unit-auth-%s-%d", tag, (int)getpid());
    FILE *f = fopen(p, "w");
    CHECK(f, "cannot create %s", p);
    for (int i = 0; i < 40; i++)
        fputc(fill + i, f);
    fclose(f);
    CHECK(chmod(p, 0600) == 0, "chmod");
    return p;
}

static void test_codec(void)
{
    unsigned char buf[PS_MSG_MAX];
    size_t len;
    ps_auth_req q = {.client_id = 7, .flags = PS_CONN_FLAG_AUTH};
    memset(q.nonce, 0x11, sizeof q.nonce);
    CHECK(ps_enc_auth_req(buf, sizeof buf, 3, &q, &len) == RF_OK, "enc req");
    CHECK(len == PS_MSG_HDR_SIZE + 40, "AUTH_REQ is %zu bytes", len);
    ps_auth_req q2;
    CHECK(ps_dec_auth_req(buf, len, &q2) == RF_OK, "dec req: %s",
          rf_error_message());
    CHECK(q2.client_id == 7 && q2.flags == q.flags &&
              memcmp(q2.nonce, q.nonce, sizeof q.nonce) == 0,
          "AUTH_REQ round trip");
    /* truncated: a header saying one byte less */
    rf_put_le32(buf + 8, (uint32_t)(len - PS_MSG_HDR_SIZE - 1));
    CHECK(ps_dec_auth_req(buf, len - 1, &q2) == RF_ERR_CORRUPT &&
              has("truncated at flags"),
          "truncated AUTH_REQ: %s", rf_error_message());
    /* one trailing byte */
    buf[len] = 0;
    rf_put_le32(buf + 8, (uint32_t)(len - PS_MSG_HDR_SIZE + 1));
    CHECK(ps_dec_auth_req(buf, len + 1, &q2) == RF_ERR_CORRUPT &&
              has("1 trailing bytes"),
          "trailing byte: %s", rf_error_message());
    /* flags without AUTH, and unknown flags */
    q.flags = PS_CONN_FLAG_CHIEF;
    CHECK(ps_enc_auth_req(buf, sizeof buf, 3, &q, &len) == RF_ERR_INVALID_ARG,
          "encoding flags without AUTH");
    q.flags = PS_CONN_FLAG_AUTH;
    CHECK(ps_enc_auth_req(buf, sizeof buf, 3, &q, &len) == RF_OK, "enc");
    rf_put_le32(buf + len - 4, PS_CONN_FLAG_CHIEF);
    CHECK(ps_dec_auth_req(buf, len, &q2) == RF_ERR_CORRUPT &&
              has("lack the authentication flag"),
          "flags without AUTH: %s", rf_error_message());
    rf_put_le32(buf + len - 4, PS_CONN_FLAG_AUTH | 8u);
    CHECK(ps_dec_auth_req(buf, len, &q2) == RF_ERR_CORRUPT &&
              has("unknown flags 0xa"),
          "unknown flags: %s", rf_error_message());

    ps_auth_challenge c = {.ps_index = 2, .incarnation = 0x1234};
    memset(c.nonce, 0x22, sizeof c.nonce);
    memset(c.mac, 0x33, sizeof c.mac);
    CHECK(ps_enc_auth_challenge(buf, sizeof buf, 4, &c, &len) == RF_OK,
          "enc challenge");
    ps_auth_challenge c2;
    CHECK(ps_dec_auth_challenge(buf, len, &c2) == RF_OK && c2.ps_index == 2 &&
              c2.incarnation == 0x1234 &&
              memcmp(c2.mac, c.mac, sizeof c.mac) == 0 &&
              memcmp(c2.nonce, c.nonce, sizeof c.nonce) == 0,
          "AUTH_CHALLENGE round trip");
    rf_put_le64(buf + PS_MSG_HDR_SIZE + 36, 0);
    CHECK(ps_dec_auth_challenge(buf, len, &c2) == RF_ERR_CORRUPT &&
              has("incarnation 0x0"),
          "zero incarnation: %s", rf_error_message());
    /* a challenge is not a proof */
    CHECK(ps_enc_auth_challenge(buf, sizeof buf, 4, &c, &len) == RF_OK, "enc");
    ps_auth_proof p;
    CHECK(ps_dec_auth_proof(buf, len, &p) == RF_ERR_CORRUPT &&
              has("got AUTH_CHALLENGE, expected AUTH_PROOF"),
          "type check: %s", rf_error_message());
    memset(p.mac, 0x44, sizeof p.mac);
    CHECK(ps_enc_auth_proof(buf, sizeof buf, 5, &p, &len) == RF_OK &&
              len == PS_MSG_HDR_SIZE + PS_AUTH_MAC,
          "enc proof");
    ps_auth_proof p2;
    CHECK(ps_dec_auth_proof(buf, len, &p2) == RF_OK &&
              memcmp(p2.mac, p.mac, sizeof p.mac) == 0,
          "AUTH_PROOF round trip");
    CHECK(ps_enc_empty(buf, sizeof buf, PS_MSG_AUTH_OK, 6, &len) == RF_OK &&
              ps_dec_empty(buf, len, PS_MSG_AUTH_OK) == RF_OK,
          "AUTH_OK");
    CHECK(strcmp(ps_msg_type_name(PS_MSG_AUTH_PROOF), "AUTH_PROOF") == 0,
          "type name");
}

static void test_proofs(void)
{
    rf_cluster_secret *k1 = NULL, *k1b = NULL, *k2 = NULL;
    const char *f1 = secret_file("one", 1);
    CHECK(rf_secret_load(f1, &k1) == RF_OK, "%s", rf_error_message());
    CHECK(rf_secret_load(f1, &k1b) == RF_OK, "%s", rf_error_message());
    CHECK(rf_secret_load(secret_file("two", 2), &k2) == RF_OK, "%s",
          rf_error_message());
    CHECK(memcmp(rf_secret_key(k1), rf_secret_key(k1b), RF_SECRET_KEY_BYTES) ==
              0,
          "the same file gives the same key");
    CHECK(memcmp(rf_secret_key(k1), rf_secret_key(k2), RF_SECRET_KEY_BYTES) !=
              0,
          "other bytes give another key");
    ps_auth_transcript t = {.client_id = 1,
                            .flags = PS_CONN_FLAG_AUTH,
                            .ps_index = 0,
                            .incarnation = 99};
    ps_auth_nonce(t.client_nonce);
    ps_auth_nonce(t.ps_nonce);
    CHECK(memcmp(t.client_nonce, t.ps_nonce, PS_AUTH_NONCE) != 0,
          "two nonces alike");
    unsigned char mp[PS_AUTH_MAC], mw[PS_AUTH_MAC];
    ps_auth_mac(k1, PS_AUTH_BY_PS, &t, mp);
    ps_auth_mac(k1, PS_AUTH_BY_WORKER, &t, mw);
    CHECK(memcmp(mp, mw, sizeof mp) != 0, "the sides' proofs are equal");
    CHECK(ps_auth_verify(k1b, PS_AUTH_BY_PS, &t, mp), "ps proof verifies");
    CHECK(ps_auth_verify(k1b, PS_AUTH_BY_WORKER, &t, mw), "worker verifies");
    CHECK(!ps_auth_verify(k1, PS_AUTH_BY_WORKER, &t, mp),
          "the ps's proof passes for the worker's (reflection)");
    CHECK(!ps_auth_verify(k2, PS_AUTH_BY_PS, &t, mp), "another key verifies");
    for (int field = 0; field < 6; field++) {
        ps_auth_transcript u = t;
        switch (field) {
        case 0:
            u.client_nonce[5] ^= 1;
            break;
        case 1:
            u.ps_nonce[31] ^= 0x80;
            break;
        case 2:
            u.client_id = 2;
            break;
        case 3:
            u.flags |= PS_CONN_FLAG_CHIEF;
            break;
        case 4:
            u.ps_index = 1;
            break;
        default:
            u.incarnation = 100;
            break;
        }
        CHECK(!ps_auth_verify(k1, PS_AUTH_BY_PS, &u, mp),
              "transcript field %d is not covered", field);
    }
    mp[0] ^= 1;
    CHECK(!ps_auth_verify(k1, PS_AUTH_BY_PS, &t, mp), "a flipped bit verifies");
    rf_secret_free(k1);
    rf_secret_free(k1b);
    rf_secret_free(k2);
}

static void test_default(void)
{
    const char *f1 = secret_file("env", 3), *f2 = secret_file("flag", 4);
    rf_cluster_secret *s = NULL, *e = NULL, *g = NULL;
    unsetenv("RF_CLUSTER_SECRET_FILE");
    CHECK(rf_secret_load_default(NULL, &s) == RF_OK && !s, "none by default");
    setenv("RF_CLUSTER_SECRET_FILE", f1, 1);
    CHECK(rf_secret_load_default("", &s) == RF_OK && s, "the variable");
    CHECK(strcmp(rf_secret_path(s), f1) == 0, "path %s", rf_secret_path(s));
    CHECK(rf_secret_load(f1, &e) == RF_OK, "load");
    CHECK(rf_secret_load_default(f2, &g) == RF_OK && g &&
              strcmp(rf_secret_path(g), f2) == 0,
          "the flag wins");
    setenv("RF_CLUSTER_SECRET_FILE", "/nonexistent/rf-secret", 1);
    rf_cluster_secret *x = NULL;
    CHECK(rf_secret_load_default(NULL, &x) == RF_ERR_IO &&
              has("/nonexistent/rf-secret"),
          "missing file: %s", rf_error_message());
    setenv("RF_CLUSTER_SECRET_FILE", "", 1);
    CHECK(rf_secret_load_default(NULL, &x) == RF_ERR_INVALID_ARG && !x &&
              has("RF_CLUSTER_SECRET_FILE is set but empty"),
          "set but empty: %s", rf_error_message());
    CHECK(rf_secret_load_default(f2, &x) == RF_OK && x,
          "the flag wins over an empty variable");
    rf_secret_free(x);
    unsetenv("RF_CLUSTER_SECRET_FILE");
    rf_secret_free(s);
    rf_secret_free(e);
    rf_secret_free(g);
    rf_secret_free(NULL);
}

int main(void)
{
    test_codec();
    test_proofs();
    test_default();
    printf("unit.ps.auth: all checks passed\n");
    return 0;
}
