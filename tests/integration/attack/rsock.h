/* tests/integration/attack/rsock.h: a raw peer of the sock provider over a
 * plain TCP socket, for the attack test: it speaks the wire format of
 * fabric/sock/sock_frame.h by hand (handshake, request frames, replies) and
 * carries ps control messages in SEND_REQ frames, so it can send what no
 * rdmaflow endpoint would (guessed rkeys, huge lengths, bad frames) and
 * knows its own address (which the ps logs). Never fatal: every call
 * returns what happened. */
#ifndef RF_TESTS_INTEGRATION_ATTACK_RSOCK_H
#define RF_TESTS_INTEGRATION_ATTACK_RSOCK_H

#include <stddef.h>
#include <stdint.h>

#include "fabric/sock/sock_frame.h"

typedef enum rs_result {
    RS_OK = 0,
    RS_REJECTED, /* handshake answered with REJECT */
    RS_CLOSED,   /* the peer closed or reset the connection */
    RS_TIMEOUT,  /* nothing within the timeout */
    RS_BAD,      /* bytes that do not parse, or a local error */
} rs_result;

const char *rs_result_name(rs_result r);

typedef struct rsock {
    int fd;
    char local[64]; /* "127.0.0.1:40312": what the ps logs */
    unsigned char priv[RF_SOCK_HS_PRIV]; /* ACCEPT/REJECT private data */
    size_t priv_len;
    uint32_t ps_msgs; /* ps messages (SEND_REQ) received so far */
} rsock;

/* TCP connect to host:port within timeout_ms; fills local. */
rs_result rs_tcp(rsock *s, const char *host, uint16_t port, int timeout_ms);
/* The CONNECT handshake with priv and the answer: RS_OK (ACCEPT, priv
 * holds the welcome), RS_REJECTED (priv holds the reason), RS_CLOSED... */
rs_result rs_handshake(rsock *s, const void *priv, size_t len, int timeout_ms);
/* Both. */
rs_result rs_open(rsock *s, const char *host, uint16_t port, const void *priv,
                  size_t len, int timeout_ms);
/* len bytes as they are. */
rs_result rs_write(rsock *s, const void *buf, size_t len);
/* A frame: header then payload (h->len bytes of payload, may be NULL when
 * h->len is 0). */
rs_result rs_frame(rsock *s, const rf_sock_hdr *h, const void *payload);
/* The next frame from the peer that is not one of its SEND_REQs (those are
 * ACKed and counted in ps_msgs, their bytes kept in *msg if msg is given;
 * then RS_OK returns with h->op == RF_SOCK_SEND_REQ). Payload bytes up to
 * cap land in payload; the rest is skipped. */
rs_result rs_next(rsock *s, rf_sock_hdr *h, void *payload, size_t cap,
                  size_t *plen, int timeout_ms);
/* A ps control message in one SEND_REQ, and its ACK. */
rs_result rs_ps_send(rsock *s, const void *msg, size_t len, int timeout_ms);
/* The next ps message (a SEND_REQ from the ps), ACKed; other frames are
 * errors (RS_BAD), an ERROR frame RS_CLOSED. */
rs_result rs_ps_recv(rsock *s, void *buf, size_t cap, size_t *len,
                     int timeout_ms);
/* Waits until the peer closes: RS_CLOSED, or RS_TIMEOUT if it is still
 * open; frames that arrive meanwhile are read (and SEND_REQs ACKed). */
rs_result rs_wait_closed(rsock *s, int timeout_ms);
void rs_close(rsock *s);

#endif
