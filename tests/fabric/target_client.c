/* tests/fabric/target_client.c: the driver's side of the target role's line
 * protocol (see target.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/common/budget.h"
#include "tests/common/check.h"
#include "tests/fabric/opts.h"
#include "tests/fabric/target.h"

void tgt_start(rt_target *t)
{
    static const char *const args[] = {"--role", "target", NULL};
    rt_spawn(&t->proc, "target", args);
    char line[128];
    rft_line(&t->proc, line, sizeof line, rft_ms(20000));
    unsigned port = 0;
    CHECK(sscanf(line, "port %u", &port) == 1 && port > 0 && port < 65536,
          "target's first line is '%s', expected 'port N'", line);
    t->port = (uint16_t)port;
}

void tgt_stop(rt_target *t)
{
    char reply[64];
    tgt_cmd(t, reply, sizeof reply, "quit");
    rft_wait_ok(&t->proc, rft_ms(20000));
}

void tgt_send(rt_target *t, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    rft_send(&t->proc, "%s", line);
}

void tgt_reply(rt_target *t, char *reply, size_t cap, int timeout_ms)
{
    char line[1024];
    rft_line(&t->proc, line, sizeof line, timeout_ms);
    CHECK(strncmp(line, "ok", 2) == 0 && (line[2] == '\0' || line[2] == ' '),
          "target replied: %s", line);
    const char *rest = line[2] ? line + 3 : "";
    CHECK(strlen(rest) < cap, "target reply too long");
    strcpy(reply, rest);
}

void tgt_cmd(rt_target *t, char *reply, size_t cap, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    rft_send(&t->proc, "%s", line);
    char tmp[1024];
    rft_line(&t->proc, tmp, sizeof tmp, rft_ms(30000));
    CHECK(strncmp(tmp, "ok", 2) == 0 && (tmp[2] == '\0' || tmp[2] == ' '),
          "target command '%s' replied: %s", line, tmp);
    const char *rest = tmp[2] ? tmp + 3 : "";
    CHECK(strlen(rest) < cap, "target reply too long");
    strcpy(reply, rest);
}

void tgt_region(rt_target *t, int id, size_t size, uint32_t access,
                size_t guard, rf_mr_desc *desc)
{
    char r[256];
    tgt_cmd(t, r, sizeof r, "region %d %zu %u %zu", id, size, access, guard);
    unsigned long long addr, len;
    unsigned rkey;
    CHECK(sscanf(r, "%llu %llu %u", &addr, &len, &rkey) == 3,
          "bad region reply '%s'", r);
    CHECK(len == size, "region %d: descriptor length %llu, registered %zu", id,
          len, size);
    desc->addr = addr;
    desc->len = len;
    desc->rkey = rkey;
}

void tgt_fill(rt_target *t, int id, uint64_t seed)
{
    char r[64];
    tgt_cmd(t, r, sizeof r, "fill %d %llu", id, (unsigned long long)seed);
}

void tgt_verify(rt_target *t, int id, uint64_t off, uint64_t len,
                uint64_t seed_in, uint64_t seed_out)
{
    char r[64];
    tgt_cmd(t, r, sizeof r, "verify %d %llu %llu %llu %llu", id,
            (unsigned long long)off, (unsigned long long)len,
            (unsigned long long)seed_in, (unsigned long long)seed_out);
}

uint64_t tgt_get(rt_target *t, int id, uint64_t off)
{
    char r[64];
    tgt_cmd(t, r, sizeof r, "get %d %llu", id, (unsigned long long)off);
    return strtoull(r, NULL, 10);
}

void tgt_set(rt_target *t, int id, uint64_t off, uint64_t value)
{
    char r[64];
    tgt_cmd(t, r, sizeof r, "set %d %llu %llu", id, (unsigned long long)off,
            (unsigned long long)value);
}

int tgt_ep_disconnected(rt_target *t, const char *token, int timeout_ms)
{
    char r[64];
    tgt_send(t, "epstate %s %d", token, timeout_ms);
    tgt_reply(t, r, sizeof r, timeout_ms + rft_ms(15000));
    return strcmp(r, "disconnected") == 0;
}

tgt_stats tgt_get_stats(rt_target *t)
{
    char r[256];
    tgt_cmd(t, r, sizeof r, "stats");
    tgt_stats s;
    CHECK(sscanf(r, "%ld %ld %ld %ld %ld %ld", &s.accepted, &s.rejected,
                 &s.accept_errors, &s.open, &s.oversize_ok,
                 &s.oversize_bad) == 6,
          "bad stats reply '%s'", r);
    return s;
}

tgt_stats tgt_wait_handled(rt_target *t, long n)
{
    uint64_t deadline = rf_now_us() + (uint64_t)rft_ms(10000) * 1000;
    for (;;) {
        tgt_stats s = tgt_get_stats(t);
        long handled = s.accepted + s.rejected + s.accept_errors +
                       s.oversize_ok + s.oversize_bad;
        if (handled >= n || rf_now_us() > deadline)
            return s;
        rf_sleep_ms(5);
    }
}
