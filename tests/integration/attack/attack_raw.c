/* tests/integration/attack/attack_raw.c: the attacks below the ps
 * protocol, on the sock wire format (fabric/sock/sock_frame.h): one-sided
 * READ / WRITE / FETCH_AND_ADD / CMP_AND_SWP on connections that never
 * authenticated (guessed rkeys, and the real ones an insider leaked),
 * holding many idle connections, malformed frames and ps messages, and
 * huge READs whose replies are never read, followed by a write into the
 * bytes they cover. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ps/proto.h"
#include "rdmaflow/clock.h"
#include "tests/integration/attack/attack.h"

#define MIB (1024ull * 1024ull)

void at_one_sided(const at_opts *o, uint32_t id, uint32_t flags,
                  const rf_sock_hdr *req, const void *payload, const char *what)
{
    rsock s;
    if (!at_open_accepted(o, &s, id, flags, what))
        return;
    rs_result r = rs_frame(&s, req, payload);
    rf_sock_hdr h = {0};
    unsigned char data[8] = {0};
    size_t n = 0;
    while (r == RS_OK) {
        r = rs_next(&s, &h, data, sizeof data, &n, o->timeout_ms);
        if (r != RS_OK || h.op != RF_SOCK_SEND_REQ)
            break;
    }
    if (s.ps_msgs)
        at_succeeded("%s: the ps sent %u message(s)", what, s.ps_msgs);
    if (r != RS_OK) {
        at_refused("%s: %s", what, rs_result_name(r));
    } else if (h.op == RF_SOCK_ERROR) {
        at_refused("%s: ERROR frame (%s)", what,
                   rf_status_string(rf_sock_hdr_status(&h)));
    } else if (rf_sock_hdr_status(&h) != 0) {
        at_refused("%s: %s", what, rf_status_string(rf_sock_hdr_status(&h)));
    } else {
        uint64_t v = h.op == RF_SOCK_ATOMIC_RESP ? h.addr : 0;
        if (h.op == RF_SOCK_READ_RESP && n == 8)
            memcpy(&v, data, 8);
        at_succeeded("%s: executed (%s, value 0x%llx)", what,
                     rf_sock_op_name(h.op), (unsigned long long)v);
    }
    rs_close(&s);
}

/* READ 8, WRITE 8 (zeros; at the last 8 bytes of the region when it is
 * known: an arena chunk's unused tail), FETCH_AND_ADD 0 and a CMP_AND_SWP
 * that swaps in what it compares (no change whatever it finds) on rkey at
 * addr: if the target executes them, the attacker could have read or
 * written anything, yet the job is not disturbed. */
static void four_ops(const at_opts *o, uint32_t rkey, uint64_t addr,
                     uint64_t write_addr, const char *kind)
{
    static const unsigned char zeros[8];
    char what[128];
    rf_sock_hdr rd = {
        .op = RF_SOCK_READ_REQ, .key = rkey, .aux = 8, .addr = addr};
    snprintf(what, sizeof what, "READ %s rkey 0x%x", kind, rkey);
    at_one_sided(o, o->id, PS_CONN_FLAG_AUTH, &rd, NULL, what);
    rf_sock_hdr wr = {
        .op = RF_SOCK_WRITE_REQ, .key = rkey, .len = 8, .addr = write_addr};
    snprintf(what, sizeof what, "WRITE %s rkey 0x%x", kind, rkey);
    at_one_sided(o, o->id, PS_CONN_FLAG_AUTH, &wr, zeros, what);
    rf_sock_hdr fa = {.op = RF_SOCK_FADD_REQ, .key = rkey, .addr = addr};
    snprintf(what, sizeof what, "FETCH_AND_ADD %s rkey 0x%x", kind, rkey);
    at_one_sided(o, o->id, PS_CONN_FLAG_AUTH, &fa, NULL, what);
    rf_sock_hdr cs = {.op = RF_SOCK_CSWAP_REQ,
                      .key = rkey,
                      .addr = addr,
                      .arg0 = 0x5a5a5a5a5a5a5a5aull,
                      .arg1 = 0x5a5a5a5a5a5a5a5aull};
    snprintf(what, sizeof what, "CMP_AND_SWP %s rkey 0x%x", kind, rkey);
    at_one_sided(o, o->id, PS_CONN_FLAG_AUTH, &cs, NULL, what);
}

int at_onesided(const at_opts *o)
{
    /* Guesses: small rkeys (what a verbs HCA may hand out) at an address
     * of the region if known, else a typical heap address. */
    uint64_t a = o->have_target ? o->target.addr : 0x7f0000000000ull;
    for (uint32_t k = 1; k <= 4; k++)
        four_ops(o, k, a, a, "guessed");
    /* A zero-length WRITE_IMM needs no rkey; its immediate reaches the ps
     * as a push notification (apply the gradient of shard 0), which a
     * connection that never authenticated (so never said HELLO) must not
     * get applied: the ps must drop it. */
    rsock s;
    const char *imm = "WRITE_IMM of 0 bytes (a push of shard 0)";
    if (at_open_accepted(o, &s, o->id, PS_CONN_FLAG_AUTH, imm)) {
        rf_sock_hdr wi = {.op = RF_SOCK_WRITE_IMM_REQ, .key = 1, .aux = 0};
        rs_frame(&s, &wi, NULL);
        at_expect_dropped(o, &s, 0, imm);
    }
    if (o->have_target) {
        uint64_t g = o->have_globals ? o->globals.addr : o->target.addr;
        four_ops(o, o->target.rkey, g, o->target.addr + o->target.len - 8,
                 "leaked");
    }
    return 0;
}

int at_bigread(const at_opts *o)
{
    uint32_t rkey = o->have_target ? o->target.rkey : 1;
    uint64_t addr = o->have_target ? o->target.addr : 0x7f0000000000ull;
    uint64_t len =
        o->have_target && o->target.len < 64 * MIB ? o->target.len : 64 * MIB;
    int n = o->count < 1 ? 1 : o->count > 60 ? 60 : o->count;
    char what[128];
    snprintf(what, sizeof what, "%d READs of %llu MiB, replies unread", n,
             (unsigned long long)(len / MIB));
    rsock s;
    if (!at_open_accepted(o, &s, o->id, PS_CONN_FLAG_AUTH, what))
        return 0;
    rf_sock_hdr rd = {.op = RF_SOCK_READ_REQ,
                      .key = rkey,
                      .aux = (uint32_t)len,
                      .addr = addr};
    int sent = 0;
    while (sent < n && rs_frame(&s, &rd, NULL) == RS_OK)
        sent++;
    /* A write into what the reads cover: a target that copies pending read
     * data before an overlapping write copies all of it. */
    static const unsigned char zeros[8];
    rf_sock_hdr wr = {
        .op = RF_SOCK_WRITE_REQ, .key = rkey, .len = 8, .addr = addr + len - 8};
    rs_frame(&s, &wr, zeros);
    rf_sleep_ms(o->hold_ms);
    rf_sock_hdr h;
    rs_result r = rs_next(&s, &h, NULL, 0, NULL, o->timeout_ms);
    if (r == RS_OK && h.op == RF_SOCK_READ_RESP && rf_sock_hdr_status(&h) == 0)
        at_succeeded("%s: %d sent, the first answered with %u bytes", what,
                     sent, h.len);
    else if (r == RS_OK)
        at_refused("%s: %s %s", what, rf_sock_op_name(h.op),
                   rf_status_string(rf_sock_hdr_status(&h)));
    else
        at_refused("%s: %s", what, rs_result_name(r));
    rs_close(&s);
    return 0;
}

int at_flood(const at_opts *o)
{
    int n = o->count < 2 ? 2 : o->count;
    rsock *s = calloc((size_t)n, sizeof *s);
    if (!s)
        return 2;
    int accepted = 0, rejected = 0, bounded = 0, other = 0;
    char full_reason[64] = "", other_reason[64] = "";
    /* Half only open TCP; half finish the sock handshake (the ps accepts
     * them and waits for AUTH_REQ) and then say nothing. */
    for (int i = 0; i < n; i++) {
        rs_result r;
        if (i % 2 == 0) {
            r = rs_tcp(&s[i], o->host, o->port, o->timeout_ms);
            at_conn(&s[i]);
            continue;
        }
        r = at_open(o, &s[i], o->id, PS_CONN_FLAG_AUTH);
        if (r == RS_OK) {
            accepted++;
        } else if (r == RS_REJECTED) {
            /* a ps that turns the flood away is right to; one whose client
             * slots the flood has taken is not */
            char *why = full_reason;
            if (!memmem(s[i].priv, s[i].priv_len, "is full", 7)) {
                why = other_reason;
                bounded++;
            } else {
                rejected++;
            }
            snprintf(why, sizeof full_reason, "%.*s", (int)s[i].priv_len,
                     (const char *)s[i].priv);
            rs_close(&s[i]);
        } else {
            other++;
            rs_close(&s[i]);
        }
    }
    /* Hold them; the ps should close every one by the timeout. */
    int64_t deadline = rf_deadline_ms(o->timeout_ms);
    int open_tcp = 0, open_acc = 0;
    for (;;) {
        open_tcp = open_acc = 0;
        for (int i = 0; i < n; i++) {
            if (s[i].fd <= 0)
                continue;
            struct pollfd p = {.fd = s[i].fd, .events = POLLIN};
            char c[256];
            if (poll(&p, 1, 0) == 1 && read(s[i].fd, c, sizeof c) <= 0) {
                rs_close(&s[i]);
                continue;
            }
            if (i % 2)
                open_acc++;
            else
                open_tcp++;
        }
        if ((open_tcp == 0 && open_acc == 0) || rf_deadline_passed(deadline))
            break;
        rf_sleep_ms(100);
    }
    if (rejected)
        at_succeeded("%d of %d handshakes rejected because the flood held "
                     "the ps's client slots ('%s')",
                     rejected, n / 2, full_reason);
    if (open_tcp)
        at_succeeded("%d of %d bare TCP connections still open after %d ms",
                     open_tcp, (n + 1) / 2, o->timeout_ms);
    if (open_acc)
        at_succeeded("%d of %d accepted connections that never authenticated "
                     "still open after %d ms",
                     open_acc, accepted, o->timeout_ms);
    if (!rejected && !open_tcp && !open_acc)
        at_refused("%d connections (%d bare TCP, %d accepted, %d rejected "
                   "('%s'), %d other) all closed by the ps within %d ms",
                   n, (n + 1) / 2, accepted, bounded, other_reason, other,
                   o->timeout_ms);
    for (int i = 0; i < n; i++)
        rs_close(&s[i]);
    free(s);
    return 0;
}

/* A ps message header with the given fields and len bytes after it. */
static size_t ps_raw(unsigned char *m, uint16_t version, uint16_t type,
                     uint32_t len, size_t total)
{
    memset(m, 0, total);
    uint32_t magic = PS_PROTO_MAGIC, req = 1;
    memcpy(m, &magic, 4); /* the test runs little-endian, like the format */
    memcpy(m + 4, &version, 2);
    memcpy(m + 6, &type, 2);
    memcpy(m + 8, &len, 4);
    memcpy(m + 12, &req, 4);
    return total;
}

int at_frames(const at_opts *o)
{
    rsock s;
    /* The sock handshake itself: garbage, then a truncated one. */
    if (rs_tcp(&s, o->host, o->port, o->timeout_ms) == RS_OK) {
        at_conn(&s);
        unsigned char junk[RF_SOCK_HS_SIZE];
        memset(junk, 0x41, sizeof junk);
        rs_write(&s, junk, sizeof junk);
        at_expect_dropped(o, &s, 0, "garbage handshake");
    }
    if (rs_tcp(&s, o->host, o->port, o->timeout_ms) == RS_OK) {
        at_conn(&s);
        unsigned char hs[RF_SOCK_HS_SIZE];
        rf_sock_hs h = {.type = RF_SOCK_HS_CONNECT, .max_send_wr = 8};
        rf_sock_hs_encode(&h, hs);
        rs_write(&s, hs, 10);
        at_expect_dropped(o, &s, 0, "truncated handshake");
    }
    /* Frames after the handshake. */
    static unsigned char buf[8192];
    struct {
        const char *what;
        unsigned char bytes[RF_SOCK_HDR_SIZE];
        size_t extra; /* payload bytes sent after the header */
    } f[4];
    rf_sock_hdr h;
    memset(f, 0, sizeof f);
    f[0].what = "frame with a bad magic";
    memset(f[0].bytes, 0x42, RF_SOCK_HDR_SIZE);
    f[1].what = "SEND_REQ of 4 GiB - 256";
    h = (rf_sock_hdr){.op = RF_SOCK_SEND_REQ, .len = 0xffffff00u};
    rf_sock_hdr_encode(&h, f[1].bytes);
    f[1].extra = 4096;
    f[2].what = "WRITE_REQ of 2 GiB to a guessed rkey";
    h = (rf_sock_hdr){.op = RF_SOCK_WRITE_REQ,
                      .key = 1,
                      .len = 0x7fffffffu,
                      .addr = 0x7f0000000000ull};
    rf_sock_hdr_encode(&h, f[2].bytes);
    f[2].extra = 4096;
    f[3].what = "READ_REQ of 4 GiB - 1 from a guessed rkey";
    h = (rf_sock_hdr){.op = RF_SOCK_READ_REQ,
                      .key = 1,
                      .aux = 0xffffffffu,
                      .addr = 0x7f0000000000ull};
    rf_sock_hdr_encode(&h, f[3].bytes);
    for (int i = 0; i < 4; i++) {
        if (!at_open_accepted(o, &s, o->id, PS_CONN_FLAG_AUTH, f[i].what))
            continue;
        rs_write(&s, f[i].bytes, RF_SOCK_HDR_SIZE);
        memset(buf, 0x43, sizeof buf);
        if (f[i].extra)
            rs_write(&s, buf, f[i].extra);
        at_expect_dropped(o, &s, 0, f[i].what);
    }
    /* ps control messages: bad version, unknown type, oversized, a length
     * that disagrees with the message. */
    struct {
        const char *what;
        uint16_t version, type;
        uint32_t len;
        size_t total;
    } m[] = {
        {"ps message with version 99", 99, PS_MSG_AUTH_REQ, 40, 56},
        {"ps message of type 999", PS_PROTO_VERSION, 999, 0, 16},
        {"ps message of 8192 bytes", PS_PROTO_VERSION, PS_MSG_AUTH_REQ,
         8192 - 16, 8192},
        {"ps message claiming 100 payload bytes, with 10", PS_PROTO_VERSION,
         PS_MSG_AUTH_REQ, 100, 26},
        {"ps message claiming 4 GiB - 1 payload bytes", PS_PROTO_VERSION,
         PS_MSG_AUTH_REQ, 0xffffffffu, 56},
    };
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        if (!at_open_accepted(o, &s, o->id, PS_CONN_FLAG_AUTH, m[i].what))
            continue;
        size_t n = ps_raw(buf, m[i].version, m[i].type, m[i].len, m[i].total);
        rf_sock_hdr sh = {.op = RF_SOCK_SEND_REQ, .len = (uint32_t)n};
        rs_frame(&s, &sh, buf);
        at_expect_dropped(o, &s, 0, m[i].what);
    }
    return 0;
}
