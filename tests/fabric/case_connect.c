/* tests/fabric/case_connect.c: connection management. Private data both
 * ways (0..RF_MAX_PRIVATE_DATA bytes; the target answers each byte with
 * bit 7 set, so the reply proves what it received), rejection
 * (RF_ERR_UNAVAILABLE with the reject's private data, listener unharmed), a
 * port without listener (RF_ERR_UNAVAILABLE within the timeout), and oversize
 * private data (RF_ERR_INVALID_ARG on both sides).
 *
 * Lengths: rdma_cm delivers connect private data padded with zeros to its
 * fixed size, so a reported length may exceed what was sent; the suite sends
 * only non-zero bytes and accepts a longer report if the excess is zeros. */
#include <stdio.h>
#include <string.h>

#include "tests/common/budget.h"
#include "tests/common/check.h"
#include "tests/fabric/cases.h"
#include "tests/fabric/conn.h"
#include "tests/fabric/opts.h"
#include "tests/fabric/target.h"

/* Non-zero bytes 1..127, first byte `first`. */
static void make_priv(unsigned char *p, size_t len, unsigned char first,
                      unsigned salt)
{
    for (size_t i = 0; i < len; i++)
        p[i] = (unsigned char)(1 + (i * 37 + salt) % 127);
    if (len)
        p[0] = first;
}

static void check_reply(const rt_conn *c, const unsigned char *sent, size_t len)
{
    size_t got_len = 99;
    const unsigned char *got = rf_ep_peer_private_data(c->ep, &got_len);
    CHECK(got_len >= len && got_len <= RF_MAX_PRIVATE_DATA,
          "accept reply has %zu bytes, sent %zu", got_len, len);
    CHECK(len == 0 || got != NULL, "accept reply data is NULL");
    for (size_t i = 0; i < got_len; i++) {
        unsigned want = i < len ? (sent[i] | 0x80u) : 0;
        CHECK(got[i] == want,
              "accept reply byte %zu of %zu is 0x%02x, expected 0x%02x "
              "(connect data byte 0x%02x | 0x80)",
              i, got_len, got[i], want, i < len ? sent[i] : 0);
    }
}

void case_connect_private_data(void)
{
    rt_target t;
    tgt_start(&t);
    rf_mr_desc d;
    tgt_region(&t, 0, 8192, RF_ACCESS_ALL, 4096, &d);
    rf_fabric *f = rt_fabric_open();
    rt_buf b;
    rt_buf_alloc(f, &b, 8192, RF_ACCESS_LOCAL_WRITE);
    static const size_t lens[] = {1, 2, 7, 8, 20, 55, RF_MAX_PRIVATE_DATA, 0};
    long accepted = 0;
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        unsigned char priv[RF_MAX_PRIVATE_DATA];
        make_priv(priv, lens[i], 'p', (unsigned)i);
        rt_conn c;
        rf_status st =
            rt_try_connect(f, t.port, priv, lens[i], rft_ms(10000), &c);
        CHECK(st == RF_OK, "connect with %zu bytes of private data: %s",
              lens[i], rf_status_string(st));
        accepted++;
        check_reply(&c, priv, lens[i]);
        /* The endpoint works. */
        rt_roundtrip(&c, &b, &d, 64 * i, 64, 10 + i);
        rt_conn_close(&c);
    }
    tgt_stats s = tgt_wait_handled(&t, accepted);
    CHECK(s.accepted == accepted && s.rejected == 0 && s.accept_errors == 0,
          "target accepted %ld (expected %ld), rejected %ld, accept errors "
          "%ld",
          s.accepted, accepted, s.rejected, s.accept_errors);
    rt_buf_free(&b);
    rf_fabric_close(f);
    tgt_stop(&t);
}

void case_connect_reject(void)
{
    rt_target t;
    tgt_start(&t);
    rf_mr_desc d;
    tgt_region(&t, 0, 8192, RF_ACCESS_ALL, 4096, &d);
    rf_fabric *f = rt_fabric_open();
    rt_buf b;
    rt_buf_alloc(f, &b, 8192, RF_ACCESS_LOCAL_WRITE);
    static const size_t lens[] = {1, 16, RF_MAX_PRIVATE_DATA};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        unsigned char priv[RF_MAX_PRIVATE_DATA];
        make_priv(priv, lens[i], 'R', (unsigned)i);
        rt_conn c;
        uint64_t t0 = rf_now_us();
        rf_status st =
            rt_try_connect(f, t.port, priv, lens[i], rft_ms(10000), &c);
        uint64_t ms = (rf_now_us() - t0) / 1000;
        CHECK(st == RF_ERR_UNAVAILABLE,
              "rejected connect (%zu bytes of private data) returned %s "
              "after %llu ms, expected RF_ERR_UNAVAILABLE",
              lens[i], rf_status_string(st), (unsigned long long)ms);
        /* The reject carries the target's reply: each byte with bit 7 set. */
        size_t rlen = 0;
        const unsigned char *rdata = rf_connect_reject_data(&rlen);
        size_t bad = rlen == lens[i] ? 0 : 1;
        for (size_t k = 0; !bad && k < rlen; k++)
            bad = rdata[k] != (priv[k] | 0x80);
        CHECK(!bad,
              "reject private data: got %zu bytes, expected the %zu-byte "
              "reply",
              rlen, lens[i]);
        rt_conn_close(&c);
        /* A good connection right after works. */
        rt_conn ok;
        rt_connect(f, t.port, "after-reject", &ok);
        rt_roundtrip(&ok, &b, &d, 128 * i, 128, 20 + i);
        rt_conn_close(&ok);
    }
    tgt_stats s = tgt_wait_handled(&t, 6);
    CHECK(s.rejected == 3 && s.accepted == 3,
          "target rejected %ld (expected 3), accepted %ld (expected 3)",
          s.rejected, s.accepted);
    rt_buf_free(&b);
    rf_fabric_close(f);
    tgt_stop(&t);
}

void case_connect_no_listener(void)
{
    rf_fabric *f = rt_fabric_open();
    /* A port that had a listener of this provider a moment ago. */
    rf_listener *l = NULL;
    CHECK_OK(rf_listen(f, rt_opts.host, 0, &l));
    uint16_t port = rf_listener_port(l);
    CHECK(port != 0, "listener port 0");
    rf_listener_close(l);
    static const int timeouts[] = {3000, 10000};
    for (int i = 0; i < 2; i++) {
        int timeout = rft_ms(timeouts[i]);
        rt_conn c;
        uint64_t t0 = rf_now_us();
        rf_status st = rt_try_connect(f, port, "x", 1, timeout, &c);
        uint64_t ms = (rf_now_us() - t0) / 1000;
        CHECK(st == RF_ERR_UNAVAILABLE,
              "connect to %s:%u without listener returned %s after %llu ms, "
              "expected RF_ERR_UNAVAILABLE",
              rt_opts.host, (unsigned)port, rf_status_string(st),
              (unsigned long long)ms);
        CHECK(ms <= (uint64_t)timeout + 1000,
              "connect without listener took %llu ms, timeout %d ms",
              (unsigned long long)ms, timeout);
        rt_conn_close(&c);
    }
    rf_fabric_close(f);
}

void case_connect_oversize(void)
{
    rt_target t;
    tgt_start(&t);
    rf_fabric *f = rt_fabric_open();
    unsigned char priv[RF_MAX_PRIVATE_DATA + 8];
    make_priv(priv, sizeof priv, 'p', 3);
    rt_conn c;
    rf_status st = rt_try_connect(f, t.port, priv, RF_MAX_PRIVATE_DATA + 1,
                                  rft_ms(5000), &c);
    CHECK(st == RF_ERR_INVALID_ARG,
          "connect with %d bytes of private data returned %s",
          RF_MAX_PRIVATE_DATA + 1, rf_status_string(st));
    rt_conn_close(&c);
    /* The target's rf_accept with 57 bytes must fail with
     * RF_ERR_INVALID_ARG; then this connect does not succeed. */
    st = rt_try_connect(f, t.port, "O", 1, rft_ms(5000), &c);
    CHECK(st != RF_OK, "connect answered by an oversize accept succeeded");
    rt_conn_close(&c);
    tgt_stats s = tgt_wait_handled(&t, 1);
    CHECK(s.oversize_ok == 1 && s.oversize_bad == 0 && s.accepted == 0,
          "target: oversize accept refused %ld times, wrongly handled %ld "
          "times; accepted %ld (expected 1, 0, 0)",
          s.oversize_ok, s.oversize_bad, s.accepted);
    /* The listener still works. */
    rt_connect(f, t.port, "fine", &c);
    rt_conn_close(&c);
    rf_fabric_close(f);
    tgt_stop(&t);
}
