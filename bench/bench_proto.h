/* bench/bench_proto.h: what rf-bench's client and server say to each other.
 * The client's connect private data (hello) names the test and carries its
 * region descriptor; the server's accept private data (welcome) carries the
 * server's. Per message size they then exchange fixed 32-byte control
 * messages over send/recv: RUN (client), READY, the measured loop, DONE
 * (client), RESULT (server's verification), and finally BYE. All fields are
 * little-endian at fixed offsets. */
#ifndef RF_BENCH_PROTO_H
#define RF_BENCH_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include <rdmaflow/fabric.h>

/* Version 2: the hello carries the run's endpoint count (-q), this
 * endpoint's index and the client's token; the welcome the server's bound. */
#define BENCH_PROTO_VERSION 2

/* A run of -q N opens N connections, one hello each: index 0 first, then
 * 1 .. N-1, all with the same test, parameters and token. */
typedef struct bench_hello {
    uint8_t test;      /* bench_test */
    uint32_t iters;    /* iterations per size (per endpoint) */
    uint32_t tx_depth; /* client's outstanding operations per endpoint */
    uint64_t max_size; /* largest message size of the run */
    rf_mr_desc region; /* client's registered region (this endpoint's) */
    uint16_t qps;      /* endpoints of the run (-q), >= 1 */
    uint16_t qp_index; /* this endpoint's, < qps */
    uint32_t token;    /* the same on every endpoint of one run */
} bench_hello;
#define BENCH_HELLO_SIZE 52

typedef enum bench_welcome_status {
    BENCH_WELCOME_OK = 0,
    BENCH_WELCOME_REFUSED,  /* not a valid hello of this version */
    BENCH_WELCOME_TOO_MANY, /* more endpoints than the server's bound */
} bench_welcome_status;

typedef struct bench_welcome {
    uint8_t status;    /* bench_welcome_status */
    rf_mr_desc region; /* server's registered region (accepted only) */
    uint32_t max_qps;  /* the server's bound on endpoints per run */
} bench_welcome;
#define BENCH_WELCOME_SIZE 32

typedef enum bench_msg_type {
    BENCH_MSG_RUN = 1, /* client: prepare size/iters */
    BENCH_MSG_READY,   /* server: prepared (status 0) */
    BENCH_MSG_DONE,    /* client: measured loop finished */
    BENCH_MSG_RESULT,  /* server: status 0 = data verified, value = detail */
    BENCH_MSG_BYE,     /* client: no more sizes */
} bench_msg_type;

/* RESULT status: what the server's verification found. */
typedef enum bench_check {
    BENCH_CHECK_OK = 0,
    BENCH_CHECK_DATA,    /* written bytes differ; value = first bad offset */
    BENCH_CHECK_COUNTER, /* atomic word wrong; value = its content */
    BENCH_CHECK_IMM,     /* write_imm count or order; value = arrivals */
    BENCH_CHECK_PROTO,   /* bad RUN parameters or out-of-order message */
} bench_check;

typedef struct bench_msg {
    uint8_t type;   /* bench_msg_type */
    uint8_t status; /* 0 ok; else a bench_check code */
    uint32_t iters;
    uint64_t size;
    uint64_t value; /* RUN: inline threshold; RESULT: check detail */
} bench_msg;
#define BENCH_MSG_SIZE 32

void bench_hello_pack(const bench_hello *h,
                      unsigned char out[BENCH_HELLO_SIZE]);
/* 0, or -1 if the bytes are not a hello of this version. */
int bench_hello_unpack(const void *in, size_t len, bench_hello *h);

void bench_welcome_pack(const bench_welcome *w,
                        unsigned char out[BENCH_WELCOME_SIZE]);
int bench_welcome_unpack(const void *in, size_t len, bench_welcome *w);

void bench_msg_pack(const bench_msg *m, unsigned char out[BENCH_MSG_SIZE]);
int bench_msg_unpack(const void *in, size_t len, bench_msg *m);

const char *bench_msg_name(uint8_t type);

#endif
