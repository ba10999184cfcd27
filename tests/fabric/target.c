/* tests/fabric/target.c: the target role (see target.h): acceptor thread and
 * command loop. */
#include "tests/fabric/target.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/common/budget.h"
#include "tests/common/check.h"
#include "tests/fabric/conn.h"
#include "tests/fabric/opts.h"
#include "tests/fabric/pattern.h"

#define MAX_REGIONS 64
#define MAX_SLOTS   1024
#define GUARD_SEED  0x6a09e667f3bcc908ull

typedef struct region {
    unsigned char *alloc; /* guard | region | guard */
    size_t size, guard;
    rf_mr *mr;
} region;

typedef struct slot {
    rf_ep *ep;
    rf_cq *cq;
    unsigned char token[RF_MAX_PRIVATE_DATA];
    size_t token_len;
    int closed; /* closed by the reaper after it saw the error state */
    int busy;   /* used by a command: never reaped */
} slot;

static struct {
    rf_fabric *fabric;
    rf_listener *listener;
    pthread_t acceptor;
    atomic_int stop;
    pthread_mutex_t mu;
    slot slots[MAX_SLOTS];
    int nslots;
    long accepted, rejected, accept_errors, oversize_ok, oversize_bad;
    region regions[MAX_REGIONS];
} T = {.mu = PTHREAD_MUTEX_INITIALIZER};

static size_t strip_zeros(const unsigned char *p, size_t n)
{
    /* rdma_cm pads private data with zeros up to its fixed size; the suite
     * only sends non-zero bytes, so trailing zeros are padding. */
    while (n > 0 && p[n - 1] == 0)
        n--;
    return n;
}

/* Closes endpoints that reached the error state. Caller holds T.mu. */
static void reap_locked(void)
{
    for (int i = 0; i < T.nslots; i++) {
        slot *s = &T.slots[i];
        if (s->closed || s->busy || rf_ep_state(s->ep) == RF_OK)
            continue;
        rf_ep_close(s->ep);
        rf_cq_destroy(s->cq);
        s->ep = NULL;
        s->cq = NULL;
        s->closed = 1;
    }
}

/* Slots are never reused, so a token keeps naming its endpoint. */
static slot *free_slot_locked(void)
{
    if (T.nslots < MAX_SLOTS)
        return &T.slots[T.nslots++];
    return NULL;
}

static void handle_request(rf_conn_req *req)
{
    size_t len = 0;
    const unsigned char *priv = rf_conn_req_private_data(req, &len);
    if (len > RF_MAX_PRIVATE_DATA) {
        rft_note("connect request with %zu bytes of private data (max %d)", len,
                 RF_MAX_PRIVATE_DATA);
        len = RF_MAX_PRIVATE_DATA;
    }
    len = priv ? strip_zeros(priv, len) : 0;
    unsigned char reply[RF_MAX_PRIVATE_DATA + 1];
    for (size_t i = 0; i < len; i++)
        reply[i] = priv[i] | 0x80;

    if (len > 0 && priv[0] == 'R') {
        rf_reject(req, reply, len);
        pthread_mutex_lock(&T.mu);
        T.rejected++;
        pthread_mutex_unlock(&T.mu);
        return;
    }
    rf_cq *cq = NULL;
    rf_status st = rf_cq_create(T.fabric, RT_CQ_DEPTH, &cq);
    if (st != RF_OK) {
        rft_note("rf_cq_create: %s", rf_error_message());
        rf_reject(req, NULL, 0);
        pthread_mutex_lock(&T.mu);
        T.accept_errors++;
        pthread_mutex_unlock(&T.mu);
        return;
    }
    rf_ep_attr attr = {.send_cq = cq,
                       .recv_cq = cq,
                       .max_send_wr = RT_SEND_WR,
                       .max_recv_wr = RT_RECV_WR};
    /* 'G': remote access gated until an "enable" command */
    if (len > 0 && priv[0] == 'G')
        attr.flags = RF_EP_REMOTE_ACCESS_OFF;
    rf_ep *ep = NULL;
    if (len > 0 && priv[0] == 'O') {
        memset(reply, 'o', sizeof reply);
        st = rf_accept(req, &attr, reply, RF_MAX_PRIVATE_DATA + 1, &ep);
        pthread_mutex_lock(&T.mu);
        if (st == RF_ERR_INVALID_ARG && ep == NULL) {
            T.oversize_ok++;
        } else {
            rft_note("rf_accept with %d bytes of private data returned %s",
                     RF_MAX_PRIVATE_DATA + 1, rf_status_string(st));
            T.oversize_bad++;
        }
        pthread_mutex_unlock(&T.mu);
        if (ep)
            rf_ep_close(ep);
        rf_cq_destroy(cq);
        return;
    }
    /* Copy the token before rf_accept consumes the request. */
    unsigned char token[RF_MAX_PRIVATE_DATA];
    memcpy(token, priv, len);
    st = rf_accept(req, &attr, reply, len, &ep);
    pthread_mutex_lock(&T.mu);
    if (st != RF_OK) {
        /* Not fatal: the connector may have given up or been killed. */
        rft_note("rf_accept: %s: %s", rf_status_string(st), rf_error_message());
        T.accept_errors++;
        pthread_mutex_unlock(&T.mu);
        rf_cq_destroy(cq);
        return;
    }
    slot *s = free_slot_locked();
    if (!s) {
        pthread_mutex_unlock(&T.mu);
        CHECK(0, "more than %d open endpoints", MAX_SLOTS);
    }
    s->ep = ep;
    s->cq = cq;
    memcpy(s->token, token, len);
    s->token_len = len;
    T.accepted++;
    pthread_mutex_unlock(&T.mu);
}

static void *acceptor(void *arg)
{
    (void)arg;
    while (!atomic_load(&T.stop)) {
        rf_conn_req *req = NULL;
        rf_status st = rf_listener_get_request(T.listener, 50, &req);
        if (st == RF_OK) {
            CHECK(req != NULL, "rf_listener_get_request: RF_OK but no request");
            handle_request(req);
        } else if (st != RF_ERR_TIMEOUT) {
            rft_note("rf_listener_get_request: %s: %s", rf_status_string(st),
                     rf_error_message());
            rf_sleep_ms(10);
        }
        pthread_mutex_lock(&T.mu);
        reap_locked();
        pthread_mutex_unlock(&T.mu);
    }
    return NULL;
}

/* --- command loop -------------------------------------------------------- */

static char *next_word(char **save)
{
    char *w = strtok_r(NULL, " \t", save);
    CHECK(w != NULL, "target command: missing argument");
    return w;
}

static uint64_t next_u64(char **save)
{
    char *w = next_word(save), *end = NULL;
    unsigned long long v = strtoull(w, &end, 0);
    CHECK(*end == '\0', "target command: bad number '%s'", w);
    return v;
}

static region *get_region(char **save)
{
    uint64_t id = next_u64(save);
    CHECK(id < MAX_REGIONS && T.regions[id].alloc, "no region %llu",
          (unsigned long long)id);
    return &T.regions[id];
}

/* Finds the open (or closed) endpoint whose connector sent token, waiting
 * for the acceptor to register it. Marks it busy when mark_busy. */
static slot *find_slot(const char *token, int mark_busy)
{
    size_t len = strlen(token);
    uint64_t deadline = rf_now_us() + (uint64_t)rft_ms(10000) * 1000;
    for (;;) {
        pthread_mutex_lock(&T.mu);
        for (int i = T.nslots - 1; i >= 0; i--) {
            slot *s = &T.slots[i];
            if (s->token_len == len && memcmp(s->token, token, len) == 0) {
                int closed = s->closed;
                if (mark_busy)
                    s->busy = 1;
                pthread_mutex_unlock(&T.mu);
                CHECK(!mark_busy || !closed,
                      "endpoint '%s' entered the error state and was closed "
                      "before this command could use it",
                      token);
                return s;
            }
        }
        pthread_mutex_unlock(&T.mu);
        CHECK(rf_now_us() < deadline, "no endpoint with token '%s'", token);
        rf_sleep_ms(2);
    }
}

static void reply(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void reply(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

static void cmd_region(char **save)
{
    uint64_t id = next_u64(save), size = next_u64(save);
    uint64_t access = next_u64(save), guard = next_u64(save);
    CHECK(id < MAX_REGIONS && !T.regions[id].alloc && size > 0 &&
              guard % 4096 == 0,
          "bad region command");
    region *r = &T.regions[id];
    size_t total = (guard * 2 + size + 4095) & ~(size_t)4095;
    r->alloc = aligned_alloc(4096, total);
    CHECK(r->alloc != NULL, "out of memory");
    r->size = size;
    r->guard = guard;
    pat_fill(r->alloc, guard, GUARD_SEED, 0);
    memset(r->alloc + guard, 0, size);
    pat_fill(r->alloc + guard + size, total - guard - size, GUARD_SEED,
             guard + size);
    CHECK_OK(
        rf_mr_reg(T.fabric, r->alloc + guard, size, (uint32_t)access, &r->mr));
    rf_mr_desc d;
    rf_mr_describe(r->mr, &d);
    reply("ok %llu %llu %u", (unsigned long long)d.addr,
          (unsigned long long)d.len, d.rkey);
}

static int guards_ok(const region *r, char *why, size_t cap)
{
    size_t total = (r->guard * 2 + r->size + 4095) & ~(size_t)4095;
    size_t bad = pat_check(r->alloc, r->guard, GUARD_SEED, 0);
    if (bad != PAT_OK) {
        snprintf(why, cap, "guard before the region changed at offset -%zu",
                 r->guard - bad);
        return 0;
    }
    size_t after = r->guard + r->size;
    bad = pat_check(r->alloc + after, total - after, GUARD_SEED, after);
    if (bad != PAT_OK) {
        snprintf(why, cap, "guard after the region changed at end+%zu", bad);
        return 0;
    }
    return 1;
}

static void cmd_verify(char **save)
{
    region *r = get_region(save);
    uint64_t off = next_u64(save), len = next_u64(save);
    uint64_t seed_in = next_u64(save), seed_out = next_u64(save);
    CHECK(off <= r->size && len <= r->size - off, "verify range outside");
    char why[256];
    if (!guards_ok(r, why, sizeof why)) {
        reply("fail %s", why);
        return;
    }
    const unsigned char *p = r->alloc + r->guard;
    struct {
        uint64_t from, len, seed;
    } parts[3] = {{0, off, seed_out},
                  {off, len, seed_in},
                  {off + len, r->size - off - len, seed_out}};
    for (int i = 0; i < 3; i++) {
        size_t bad = pat_check(p + parts[i].from, parts[i].len, parts[i].seed,
                               parts[i].from);
        if (bad != PAT_OK) {
            uint64_t at = parts[i].from + bad;
            reply("fail region byte %llu is 0x%02x, expected 0x%02x (%s the "
                  "written range [%llu, %llu))",
                  (unsigned long long)at, p[at], pat_byte(parts[i].seed, at),
                  i == 1 ? "inside" : "outside", (unsigned long long)off,
                  (unsigned long long)(off + len));
            return;
        }
    }
    reply("ok");
}

/* Only [off, off+len) (position-seeded) and the guards are checked. */
static void cmd_verifyrange(char **save)
{
    region *r = get_region(save);
    uint64_t off = next_u64(save), len = next_u64(save);
    uint64_t seed = next_u64(save);
    CHECK(off <= r->size && len <= r->size - off, "verify range outside");
    char why[256];
    if (!guards_ok(r, why, sizeof why)) {
        reply("fail %s", why);
        return;
    }
    const unsigned char *p = r->alloc + r->guard;
    size_t bad = pat_check(p + off, len, seed, off);
    if (bad != PAT_OK)
        reply("fail region byte %llu is 0x%02x, expected 0x%02x",
              (unsigned long long)(off + bad), p[off + bad],
              pat_byte(seed, off + bad));
    else
        reply("ok");
}

static void cmd_postrecv(char **save)
{
    slot *s = find_slot(next_word(save), 1);
    region *r = get_region(save);
    uint64_t off = next_u64(save), len = next_u64(save);
    uint64_t ctx = next_u64(save);
    CHECK(off <= r->size && len <= r->size - off && r->mr,
          "recv range outside or region deregistered");
    CHECK_OK(rf_post_recv(s->ep, r->alloc + r->guard + off, len, r->mr,
                          (void *)(uintptr_t)ctx));
    reply("ok");
}

static void cmd_waitrecv(char **save)
{
    slot *s = find_slot(next_word(save), 1);
    int timeout = (int)next_u64(save);
    rf_completion c;
    int n = rf_cq_wait(s->cq, &c, 1, timeout);
    if (n != 1) {
        reply("fail rf_cq_wait returned %d (%s)", n,
              n < 0 ? rf_status_string((rf_status)n) : "count");
        return;
    }
    reply("ok %d %d %u %u %llu", (int)c.op, (int)c.status, c.len, c.imm,
          (unsigned long long)(uintptr_t)c.context);
}

/* Receives n write_imms: the k-th must carry imm k, and slot k (8 bytes at
 * offset 8k of the region) must already hold its value when the completion
 * is polled. */
static void cmd_immstream(char **save)
{
    slot *s = find_slot(next_word(save), 1);
    uint64_t n = next_u64(save);
    region *r = get_region(save);
    int timeout = (int)next_u64(save);
    uint64_t magic = next_u64(save);
    CHECK(n * 8 <= r->size && n <= RT_RECV_WR, "immstream too long");
    for (uint64_t k = 0; k < n; k++)
        CHECK_OK(rf_post_recv(s->ep, NULL, 0, NULL, (void *)(uintptr_t)k));
    reply("ok ready");
    const unsigned char *slots = r->alloc + r->guard;
    rf_completion comps[64];
    uint64_t deadline = rf_now_us() + (uint64_t)timeout * 1000;
    for (uint64_t k = 0; k < n;) {
        if (rf_now_us() > deadline) {
            reply("fail only %llu of %llu write_imm completions in %d ms",
                  (unsigned long long)k, (unsigned long long)n, timeout);
            return;
        }
        int got = rf_cq_wait(s->cq, comps, 64, 100);
        if (got == RF_ERR_TIMEOUT)
            continue;
        if (got < 0) {
            reply("fail rf_cq_wait: %s", rf_status_string((rf_status)got));
            return;
        }
        for (int i = 0; i < got; i++, k++) {
            const rf_completion *c = &comps[i];
            uint64_t seen = rt_peek_u64(slots + 8 * k);
            if (c->status != RF_OK || c->op != RF_OP_RECV_WRITE_IMM ||
                c->imm != (uint32_t)k || c->context != (void *)(uintptr_t)k ||
                c->len != 8) {
                reply("fail completion %llu: status %s op %s imm %u context "
                      "%p len %u",
                      (unsigned long long)k, rf_status_string(c->status),
                      rf_wr_op_name(c->op), c->imm, c->context, c->len);
                return;
            }
            if (seen != (magic ^ k)) {
                reply("fail write_imm %llu completed but its slot holds "
                      "0x%llx, expected 0x%llx",
                      (unsigned long long)k, (unsigned long long)seen,
                      (unsigned long long)(magic ^ k));
                return;
            }
        }
    }
    reply("ok done");
}

static void cmd_epstate(char **save)
{
    slot *s = find_slot(next_word(save), 0);
    int timeout = (int)next_u64(save);
    uint64_t deadline = rf_now_us() + (uint64_t)timeout * 1000;
    for (;;) {
        pthread_mutex_lock(&T.mu);
        int dead = s->closed || rf_ep_state(s->ep) == RF_ERR_DISCONNECTED;
        pthread_mutex_unlock(&T.mu);
        if (dead) {
            reply("ok disconnected");
            return;
        }
        if (rf_now_us() > deadline) {
            reply("ok connected");
            return;
        }
        rf_sleep_ms(2);
    }
}

static void cmd_stats(void)
{
    pthread_mutex_lock(&T.mu);
    long open = 0;
    for (int i = 0; i < T.nslots; i++)
        open += !T.slots[i].closed;
    reply("ok %ld %ld %ld %ld %ld %ld", T.accepted, T.rejected, T.accept_errors,
          open, T.oversize_ok, T.oversize_bad);
    pthread_mutex_unlock(&T.mu);
}

static void shutdown_target(void)
{
    atomic_store(&T.stop, 1);
    pthread_join(T.acceptor, NULL);
    for (int i = 0; i < T.nslots; i++) {
        if (!T.slots[i].closed) {
            rf_ep_close(T.slots[i].ep);
            rf_cq_destroy(T.slots[i].cq);
        }
    }
    rf_listener_close(T.listener);
    for (int i = 0; i < MAX_REGIONS; i++) {
        if (T.regions[i].mr)
            CHECK_OK(rf_mr_dereg(T.regions[i].mr));
        free(T.regions[i].alloc);
    }
    rf_fabric_close(T.fabric);
}

int rt_target_main(void)
{
    rft_set_who("target");
    T.fabric = rt_fabric_open();
    CHECK_OK(rf_listen(T.fabric, rt_opts.host, 0, &T.listener));
    CHECK(rf_listener_port(T.listener) != 0, "listener on port 0");
    CHECK(pthread_create(&T.acceptor, NULL, acceptor, NULL) == 0,
          "pthread_create");
    reply("port %u", (unsigned)rf_listener_port(T.listener));

    char line[1024];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\r\n")] = '\0';
        char *save = NULL;
        char *cmd = strtok_r(line, " \t", &save);
        if (!cmd)
            continue;
        if (strcmp(cmd, "quit") == 0) {
            break;
        } else if (strcmp(cmd, "region") == 0) {
            cmd_region(&save);
        } else if (strcmp(cmd, "fill") == 0) {
            region *r = get_region(&save);
            pat_fill(r->alloc + r->guard, r->size, next_u64(&save), 0);
            reply("ok");
        } else if (strcmp(cmd, "dereg") == 0) {
            /* The memory stays (guards and content can still be checked). */
            region *r = get_region(&save);
            CHECK(r->mr, "region already deregistered");
            CHECK_OK(rf_mr_dereg(r->mr));
            r->mr = NULL;
            reply("ok");
        } else if (strcmp(cmd, "verify") == 0) {
            cmd_verify(&save);
        } else if (strcmp(cmd, "verifyrange") == 0) {
            cmd_verifyrange(&save);
        } else if (strcmp(cmd, "get") == 0) {
            region *r = get_region(&save);
            uint64_t off = next_u64(&save), v;
            CHECK(off % 8 == 0 && off + 8 <= r->size, "bad get offset");
            v = rt_peek_u64(r->alloc + r->guard + off);
            reply("ok %llu", (unsigned long long)v);
        } else if (strcmp(cmd, "set") == 0) {
            region *r = get_region(&save);
            uint64_t off = next_u64(&save), v = next_u64(&save);
            CHECK(off % 8 == 0 && off + 8 <= r->size, "bad set offset");
            rt_poke_u64(r->alloc + r->guard + off, v);
            reply("ok");
        } else if (strcmp(cmd, "postrecv") == 0) {
            cmd_postrecv(&save);
        } else if (strcmp(cmd, "waitrecv") == 0) {
            cmd_waitrecv(&save);
        } else if (strcmp(cmd, "immstream") == 0) {
            cmd_immstream(&save);
        } else if (strcmp(cmd, "hwm") == 0) {
            /* peak resident memory, kB */
            FILE *st = fopen("/proc/self/status", "r");
            char l[256];
            long kb = -1;
            while (st && fgets(l, sizeof l, st))
                if (sscanf(l, "VmHWM: %ld", &kb) == 1)
                    break;
            if (st)
                fclose(st);
            CHECK(kb >= 0, "no VmHWM in /proc/self/status");
            reply("ok %ld", kb);
        } else if (strcmp(cmd, "enable") == 0) {
            slot *s = find_slot(next_word(&save), 1);
            rf_status st = rf_ep_enable_remote_access(s->ep);
            if (st == RF_OK)
                reply("ok");
            else
                reply("fail %s: %s", rf_status_string(st), rf_error_message());
        } else if (strcmp(cmd, "epstate") == 0) {
            cmd_epstate(&save);
        } else if (strcmp(cmd, "stats") == 0) {
            cmd_stats();
        } else {
            CHECK(0, "unknown target command '%s'", cmd);
        }
    }
    shutdown_target();
    reply("ok bye");
    return 0;
}
