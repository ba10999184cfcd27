/* tests/fabric/case_garbage.c: (sock provider only) hostile TCP input to a
 * listener, built with the provider's own frame encoders
 * (fabric/sock/sock_frame.h): random bytes, a foreign protocol, truncated or
 * malformed handshakes, and valid handshakes followed by garbage, wrong-way
 * or truncated frames. Each such connection must be dropped (end of file or
 * reset) in bounded time, without touching target memory, while two real
 * peers keep doing verified writes and reads and a new real peer can connect
 * while a truncated handshake is pending. */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fabric/sock/sock_frame.h"
#include "tests/common/budget.h"
#include "tests/common/check.h"
#include "tests/fabric/cases.h"
#include "tests/fabric/conn.h"
#include "tests/fabric/opts.h"
#include "tests/fabric/pattern.h"
#include "tests/fabric/target.h"

#define HS_TIMEOUT_MS 1000 /* RF_SOCK_HANDSHAKE_TIMEOUT_MS of the target */
#define PEERS         2
#define SLICE         65536

/* rcvbuf > 0: SO_RCVBUF before connecting (a peer slow to take replies) */
static int tcp_connect_rcvbuf(uint16_t port, int rcvbuf)
{
    char service[8];
    snprintf(service, sizeof service, "%u", (unsigned)port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM};
    struct addrinfo *ai = NULL;
    int rc = getaddrinfo(rt_opts.host, service, &hints, &ai);
    CHECK(rc == 0, "getaddrinfo(%s): %s", rt_opts.host, gai_strerror(rc));
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(fd >= 0, "socket: %s", strerror(errno));
    if (rcvbuf > 0)
        CHECK(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf) ==
                  0,
              "SO_RCVBUF: %s", strerror(errno));
    CHECK(connect(fd, ai->ai_addr, ai->ai_addrlen) == 0, "connect: %s",
          strerror(errno));
    freeaddrinfo(ai);
    return fd;
}

static int tcp_connect(uint16_t port)
{
    return tcp_connect_rcvbuf(port, 0);
}

/* Sends everything unless the peer already dropped us (returns -1 then). */
static int send_all(int fd, const void *p, size_t n)
{
    const unsigned char *b = p;
    while (n) {
        ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Reads exactly n bytes within timeout_ms; returns 0, or -1 if the
 * connection ended first. */
static int recv_exact(int fd, void *p, size_t n, int timeout_ms)
{
    unsigned char *b = p;
    uint64_t deadline = rf_now_us() + (uint64_t)timeout_ms * 1000;
    while (n) {
        uint64_t now = rf_now_us();
        CHECK(now < deadline, "no handshake reply within %d ms", timeout_ms);
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        if (poll(&pf, 1, (int)((deadline - now) / 1000) + 1) <= 0)
            continue;
        ssize_t r = recv(fd, b, n, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        b += r;
        n -= (size_t)r;
    }
    return 0;
}

/* Waits for the listener side to drop the connection (end of file or
 * reset), discarding whatever it sends first. Fails after timeout_ms. */
static void expect_dropped(int fd, const char *what, int timeout_ms)
{
    uint64_t t0 = rf_now_us();
    uint64_t deadline = t0 + (uint64_t)timeout_ms * 1000;
    unsigned char sink[4096];
    for (;;) {
        uint64_t now = rf_now_us();
        CHECK(now < deadline, "%s: connection still open after %d ms", what,
              timeout_ms);
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int pr = poll(&pf, 1, (int)((deadline - now) / 1000) + 1);
        if (pr <= 0)
            continue;
        ssize_t r = recv(fd, sink, sizeof sink, 0);
        if (r == 0 || (r < 0 && (errno == ECONNRESET || errno == EPIPE)))
            break;
        CHECK(r > 0 || errno == EINTR || errno == EAGAIN, "%s: recv: %s", what,
              strerror(errno));
    }
    close(fd);
    rft_note("garbage: %s: dropped after %llu ms", what,
             (unsigned long long)((rf_now_us() - t0) / 1000));
}

static void encode_connect(unsigned char out[RF_SOCK_HS_SIZE],
                           const char *token)
{
    rf_sock_hs hs = {.type = RF_SOCK_HS_CONNECT,
                     .priv_len = (uint8_t)strlen(token),
                     .max_send_wr = 16,
                     .serve_max = 16};
    memcpy(hs.priv, token, strlen(token));
    rf_sock_hs_encode(&hs, out);
}

/* A raw connection with a completed, valid handshake. */
static int raw_connected(uint16_t port, const char *token)
{
    int fd = tcp_connect(port);
    unsigned char hs[RF_SOCK_HS_SIZE];
    encode_connect(hs, token);
    CHECK(send_all(fd, hs, sizeof hs) == 0, "sending a valid handshake");
    unsigned char reply[RF_SOCK_HS_SIZE];
    CHECK(recv_exact(fd, reply, sizeof reply, rft_ms(10000)) == 0,
          "%s: listener closed instead of answering a valid handshake", token);
    rf_sock_hs got;
    rf_sock_parse p = rf_sock_hs_decode(reply, sizeof reply, &got);
    CHECK(p == RF_SOCK_PARSE_OK && got.type == RF_SOCK_HS_ACCEPT,
          "%s: handshake reply: %s, type %d", token, rf_sock_parse_string(p),
          got.type);
    return fd;
}

static void random_bytes(unsigned char *p, size_t n, uint64_t seed)
{
    pat_fill(p, n, seed, 0);
}

/* --- real peers running during the attacks ------------------------------ */

typedef struct peer {
    int index;
    pthread_t thread;
    rf_fabric *fabric;
    uint16_t port;
    rf_mr_desc data;
    atomic_long rounds;
} peer;

static atomic_int stop_peers;

static void *peer_main(void *arg)
{
    peer *p = arg;
    char token[16];
    snprintf(token, sizeof token, "real%d", p->index);
    rt_conn c;
    rt_connect(p->fabric, p->port, token, &c);
    rt_buf b;
    rt_buf_alloc(p->fabric, &b, 2 * SLICE, RF_ACCESS_LOCAL_WRITE);
    rf_mr_desc slice = {.addr = p->data.addr + (uint64_t)p->index * SLICE,
                        .len = SLICE,
                        .rkey = p->data.rkey};
    for (uint64_t i = 0; !atomic_load(&stop_peers); i++) {
        size_t len = 1 + (size_t)(pat_mix(i) % SLICE);
        rt_roundtrip(&c, &b, &slice, 0, len, 100000 * (uint64_t)p->index + i);
        atomic_fetch_add(&p->rounds, 1);
    }
    CHECK_OK(rf_ep_state(c.ep));
    rt_buf_free(&b);
    rt_conn_close(&c);
    return NULL;
}

/* Waits until every peer completed at least one more round than in
 * `before`, proving the listener's fabric kept serving them. */
static void peers_progress(peer *peers, const long *before, const char *when)
{
    uint64_t deadline = rf_now_us() + (uint64_t)rft_ms(20000) * 1000;
    for (int i = 0; i < PEERS; i++) {
        while (atomic_load(&peers[i].rounds) <= before[i]) {
            CHECK(rf_now_us() < deadline, "real peer %d made no progress %s", i,
                  when);
            rf_sleep_ms(1);
        }
    }
}

void case_sock_garbage(void)
{
    setenv("RF_SOCK_HANDSHAKE_TIMEOUT_MS", "1000", 1); /* for the target */
    rt_target t;
    tgt_start(&t);
    unsetenv("RF_SOCK_HANDSHAKE_TIMEOUT_MS");
    rf_mr_desc data, guarded, scratch;
    tgt_region(&t, 0, PEERS * SLICE, RF_ACCESS_ALL, 4096, &data);
    tgt_region(&t, 1, 65536, RF_ACCESS_ALL, 4096, &guarded);
    tgt_region(&t, 2, 1 << 20, RF_ACCESS_ALL, 4096, &scratch);
    tgt_fill(&t, 1, 31);
    rf_fabric *f = rt_fabric_open();

    peer peers[PEERS];
    long before[PEERS];
    for (int i = 0; i < PEERS; i++) {
        peers[i].index = i;
        peers[i].fabric = f;
        peers[i].port = t.port;
        peers[i].data = data;
        atomic_init(&peers[i].rounds, 0);
        CHECK(pthread_create(&peers[i].thread, NULL, peer_main, &peers[i]) == 0,
              "pthread_create");
    }
    for (int i = 0; i < PEERS; i++)
        before[i] = 0;
    peers_progress(peers, before, "before the attacks");

    const int drop_ms = rft_ms(HS_TIMEOUT_MS + 4000);
    unsigned char buf[8192], hs[RF_SOCK_HS_SIZE];
    int fd, pending;

    /* 1. Random bytes instead of a handshake. */
    for (int k = 0; k < 5; k++) {
        fd = tcp_connect(t.port);
        random_bytes(buf, 512 + 997 * (size_t)k, 77 + (uint64_t)k);
        send_all(fd, buf, 512 + 997 * (size_t)k);
        expect_dropped(fd, "random bytes", drop_ms);
    }
    /* 2. Another protocol. */
    fd = tcp_connect(t.port);
    static const char http[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    send_all(fd, http, sizeof http - 1);
    expect_dropped(fd, "an HTTP request", drop_ms);

    /* 3. A truncated handshake left pending: a real peer connects and works
     * meanwhile, then the listener drops the pending one. */
    pending = tcp_connect(t.port);
    encode_connect(hs, "trunc");
    send_all(pending, hs, 40);
    {
        rt_conn c;
        rt_buf b;
        rt_buf_alloc(f, &b, 8192, RF_ACCESS_LOCAL_WRITE);
        rt_connect(f, t.port, "meanwhile", &c);
        rt_roundtrip(&c, &b, &guarded, 0, 4096, 31); /* same bytes as fill */
        rt_conn_close(&c);
        rt_buf_free(&b);
    }
    expect_dropped(pending, "a handshake truncated after 40 bytes", drop_ms);

    /* 4. Handshakes that are malformed in one field each. */
    struct {
        const char *what;
        size_t at;
        unsigned char value;
    } bad_hs[] = {
        {"handshake with a wrong magic", 0, 'X'},
        {"handshake with version 99", 4, 99},
        {"handshake of type ACCEPT sent to a listener", 5, RF_SOCK_HS_ACCEPT},
        {"handshake of unknown type 9", 5, 9},
        {"handshake with private data length 57", 6, 57},
        {"handshake with private data length 255", 6, 255},
        {"handshake with a non-zero reserved byte", 7, 1},
        {"handshake with non-zero padding after the private data", 70, 1},
    };
    for (size_t k = 0; k < sizeof bad_hs / sizeof bad_hs[0]; k++) {
        encode_connect(hs, "badhs");
        hs[bad_hs[k].at] = bad_hs[k].value;
        fd = tcp_connect(t.port);
        send_all(fd, hs, sizeof hs);
        expect_dropped(fd, bad_hs[k].what, drop_ms);
    }
    /* max_send_wr of 0 (little-endian at offset 8). */
    encode_connect(hs, "badhs");
    memset(hs + 8, 0, 4);
    fd = tcp_connect(t.port);
    send_all(fd, hs, sizeof hs);
    expect_dropped(fd, "handshake with max_send_wr 0", drop_ms);
    /* serving no request at once (offset 12) */
    encode_connect(hs, "badhs");
    memset(hs + 12, 0, 4);
    fd = tcp_connect(t.port);
    send_all(fd, hs, sizeof hs);
    expect_dropped(fd, "handshake with serve_max 0", drop_ms);
    /* A peer that declares the largest queue, then sends 20000 zero-length
     * reads (no rkey needed) and takes no reply: the target serves only
     * its own limit (RF_SOCK_SERVE_MAX, 4096) outstanding and drops it,
     * instead of queueing a reply per request the peer declared. */
    {
        rf_sock_hs big = {.type = RF_SOCK_HS_CONNECT,
                          .priv_len = 3,
                          .max_send_wr = RF_SOCK_MAX_QUEUE,
                          .serve_max = 16};
        memcpy(big.priv, "big", 3);
        rf_sock_hs_encode(&big, hs);
        fd = tcp_connect_rcvbuf(t.port, 4096);
        CHECK(send_all(fd, hs, sizeof hs) == 0, "sending the handshake");
        unsigned char reply[RF_SOCK_HS_SIZE];
        CHECK(recv_exact(fd, reply, sizeof reply, rft_ms(10000)) == 0,
              "no handshake reply");
        static unsigned char reads[20000 * RF_SOCK_HDR_SIZE];
        rf_sock_hdr rd = {.op = RF_SOCK_READ_REQ};
        for (size_t k = 0; k < 20000; k++)
            rf_sock_hdr_encode(&rd, reads + k * RF_SOCK_HDR_SIZE);
        send_all(fd, reads, sizeof reads); /* may be cut short: dropped */
        expect_dropped(fd, "20000 reads outstanding, no reply taken",
                       rft_ms(10000));
    }

    /* 5. Connections that close at once, or mid-handshake. */
    for (int k = 0; k < 50; k++) {
        fd = tcp_connect(t.port);
        if (k % 2) {
            encode_connect(hs, "gone");
            send_all(fd, hs, (size_t)(k % RF_SOCK_HS_SIZE));
        }
        close(fd);
    }

    /* 6. Valid handshakes followed by bad frames. The target's endpoint
     * (found by token) must fail as well. */
    rf_sock_hdr h;
    struct {
        const char *what;
        int kind;
    } bad_frames[] = {
        {"valid handshake, then random bytes", 0},
        {"valid handshake, then a header with a wrong magic", 1},
        {"valid handshake, then a reply opcode (ACK) from the initiator", 2},
        {"valid handshake, then an unknown opcode", 3},
        {"valid handshake, then a READ_REQ with payload", 4},
        {"valid handshake, then a FADD_REQ with a non-zero unused field", 5},
        {"valid handshake, then a write with an unknown rkey", 6},
        {"valid handshake, then a write past the region end", 7},
    };
    for (size_t k = 0; k < sizeof bad_frames / sizeof bad_frames[0]; k++) {
        char token[16];
        snprintf(token, sizeof token, "g%zu", k);
        fd = raw_connected(t.port, token);
        memset(&h, 0, sizeof h);
        size_t n = RF_SOCK_HDR_SIZE;
        switch (bad_frames[k].kind) {
        case 0:
            random_bytes(buf, 300, 999);
            n = 300;
            break;
        case 1:
            h = (rf_sock_hdr){.op = RF_SOCK_WRITE_REQ,
                              .len = 8,
                              .key = guarded.rkey,
                              .addr = guarded.addr};
            rf_sock_hdr_encode(&h, buf);
            buf[0] ^= 0xff;
            n += 8;
            break;
        case 2:
            h = (rf_sock_hdr){.op = RF_SOCK_ACK};
            rf_sock_hdr_encode(&h, buf);
            break;
        case 3:
            h = (rf_sock_hdr){.op = RF_SOCK_WRITE_REQ};
            rf_sock_hdr_encode(&h, buf);
            buf[3] = 0x7e;
            break;
        case 4:
            h = (rf_sock_hdr){.op = RF_SOCK_READ_REQ,
                              .key = guarded.rkey,
                              .aux = 8,
                              .addr = guarded.addr};
            rf_sock_hdr_encode(&h, buf);
            buf[4] = 8; /* len = 8 bytes of payload, not allowed */
            n += 8;
            break;
        case 5:
            h = (rf_sock_hdr){.op = RF_SOCK_FADD_REQ,
                              .key = guarded.rkey,
                              .addr = guarded.addr,
                              .arg0 = 1};
            rf_sock_hdr_encode(&h, buf);
            buf[32] = 1; /* arg1 must be 0 */
            break;
        case 6:
            h = (rf_sock_hdr){.op = RF_SOCK_WRITE_REQ,
                              .len = 64,
                              .key = guarded.rkey ^ 0x5a5a5a5au,
                              .addr = guarded.addr};
            rf_sock_hdr_encode(&h, buf);
            random_bytes(buf + n, 64, 5);
            n += 64;
            break;
        default:
            h = (rf_sock_hdr){.op = RF_SOCK_WRITE_REQ,
                              .len = 64,
                              .key = guarded.rkey,
                              .addr = guarded.addr + guarded.len - 32};
            rf_sock_hdr_encode(&h, buf);
            random_bytes(buf + n, 64, 6);
            n += 64;
            break;
        }
        send_all(fd, buf, n);
        expect_dropped(fd, bad_frames[k].what, drop_ms);
        int bound = rft_ms(rt_opts.peer_timeout_ms + 5000);
        CHECK(tgt_ep_disconnected(&t, token, bound),
              "%s: the target's endpoint is still connected",
              bad_frames[k].what);
    }

    /* 7. Truncated frames: a header cut short, or a write whose payload
     * stops early, then the connection closes. */
    for (int k = 0; k < 4; k++) {
        char token[16];
        snprintf(token, sizeof token, "tr%d", k);
        fd = raw_connected(t.port, token);
        h = (rf_sock_hdr){.op = RF_SOCK_WRITE_REQ,
                          .len = 1 << 20,
                          .key = scratch.rkey,
                          .addr = scratch.addr};
        rf_sock_hdr_encode(&h, buf);
        random_bytes(buf + RF_SOCK_HDR_SIZE, 4096, 7);
        size_t n = k < 2 ? (size_t)(7 + 20 * k) : RF_SOCK_HDR_SIZE + 4096;
        send_all(fd, buf, n);
        rf_sleep_ms(20);
        close(fd);
        int bound = rft_ms(rt_opts.peer_timeout_ms + 5000);
        CHECK(tgt_ep_disconnected(&t, token, bound),
              "truncated frame %d: the target's endpoint is still connected",
              k);
    }

    /* The real peers kept going through all of it. */
    for (int i = 0; i < PEERS; i++)
        before[i] = atomic_load(&peers[i].rounds);
    peers_progress(peers, before, "after the attacks");
    atomic_store(&stop_peers, 1);
    for (int i = 0; i < PEERS; i++)
        pthread_join(peers[i].thread, NULL);
    rft_note("garbage: real peers did %ld and %ld verified rounds",
             atomic_load(&peers[0].rounds), atomic_load(&peers[1].rounds));
    /* Nothing hostile reached the protected region or any guard. */
    tgt_verify(&t, 1, 0, 0, 0, 31);
    char r[64];
    tgt_cmd(&t, r, sizeof r, "verifyrange 0 0 0 0"); /* guards of region 0 */
    tgt_cmd(&t, r, sizeof r, "verifyrange 2 0 0 0"); /* guards of region 2 */
    /* And a new peer still connects. */
    rt_conn c;
    rt_buf b;
    rt_buf_alloc(f, &b, 8192, RF_ACCESS_LOCAL_WRITE);
    rt_connect(f, t.port, "last", &c);
    rt_roundtrip(&c, &b, &data, 0, 4096, 3);
    rt_conn_close(&c);
    rt_buf_free(&b);
    rf_fabric_close(f);
    tgt_stop(&t);
}
