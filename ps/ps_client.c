/* ps/ps_client.c: rf_ps_client connect / reconnect / close. Every ps
 * task is tried in turn with exponential backoff (50 ms doubling to 1 s)
 * until the connect deadline, so workers may start before their ps tasks;
 * each connection then says HELLO (registering the ack ring), fetches the
 * arena regions and the directory, and compares the incarnation with the
 * one seen before (a change is RF_ERR_ABORTED). Also the registered memory
 * the client owns: user blocks, a bump pool for per-variable scratch, and
 * scratch words. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "core/log.h"
#include "ps/ps_client_internal.h"
#include "ps/ps_token.h"
#include "rdmaflow/status.h"

#define DEFAULT_TIMEOUT_MS 30000
#define BACKOFF_FIRST_MS   50
#define BACKOFF_MAX_MS     1000

const char *cli_ps_name(const ps_cli_conn *p, char *buf, size_t len)
{
    snprintf(buf, len, "ps task %zu (%s)", p->index, p->addr);
    return buf;
}

void cli_conn_fail(ps_cli_conn *p, const char *fmt, ...)
{
    if (!cli_conn_usable(p))
        return;
    cli_conn_state was = p->state;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->why, sizeof p->why, fmt, ap);
    va_end(ap);
    cli_conn_set_state(p, CLI_CONN_DOWN, p->why);
    char name[340];
    RF_LOG_WARN("%s: connection lost: %s (was %s)",
                cli_ps_name(p, name, sizeof name), p->why,
                cli_conn_state_name(was));
}

rf_status cli_conn_check(ps_cli_conn *p)
{
    if (cli_conn_usable(p))
        return RF_OK;
    char name[340];
    return rf_error_set(RF_ERR_DISCONNECTED,
                        "%s: not connected (%s); call "
                        "rf_ps_client_reconnect",
                        cli_ps_name(p, name, sizeof name),
                        p->why[0] ? p->why : "never connected");
}

/* Pushes that can no longer be acknowledged fail. */
static void fail_pushes(ps_cli_conn *p)
{
    rf_ps_client *c = p->client;
    char name[340];
    cli_ps_name(p, name, sizeof name);
    for (rf_ps_var *v = c->vars; v; v = v->next) {
        if (v->ps != p->index || !v->push_busy)
            continue;
        v->push_busy = false;
        c->pushes_busy--;
        if (c->push_status == RF_OK) {
            c->push_status = RF_ERR_DISCONNECTED;
            snprintf(c->push_err, sizeof c->push_err,
                     "push to '%s' part %u: %s lost before acknowledging (%s)",
                     v->spec.name, v->spec.part, name, p->why);
        }
    }
    p->pushes_inflight = 0;
}

void cli_conn_close(ps_cli_conn *p)
{
    if (!p->ep)
        return;
    if (p->state != CLI_CONN_DOWN)
        cli_conn_set_state(p, CLI_CONN_DOWN, "closed");
    rf_ep *ep = p->ep;
    rf_ep_close(ep);
    p->ep = NULL;
    /* Handle what the close flushed (it is all queued by now). */
    cli_drain(p->client);
    p->sq_used = 0;
    p->reply_ready = false;
    fail_pushes(p);
}

/* ---- registered memory ----------------------------------------------------
 */

rf_status cli_pool_alloc(rf_ps_client *c, size_t len, unsigned char **out,
                         rf_mr **mr)
{
    size_t need = (len + 63) & ~(size_t)63;
    cli_pool_chunk *k = c->pool;
    if (!k || k->len - k->used < need) {
        size_t size = need > PS_CLI_POOL_CHUNK ? need : PS_CLI_POOL_CHUNK;
        k = calloc(1, sizeof *k);
        void *base = NULL;
        if (!k || posix_memalign(&base, 4096, size) != 0) {
            free(k);
            return rf_error_set(RF_ERR_NO_MEMORY, "ps client: out of memory");
        }
        memset(base, 0, size);
        rf_status st =
            rf_mr_reg(c->fabric, base, size, RF_ACCESS_LOCAL_WRITE, &k->mr);
        if (st != RF_OK) {
            free(base);
            free(k);
            return st;
        }
        k->base = base;
        k->len = size;
        k->next = c->pool;
        c->pool = k;
    }
    *out = k->base + k->used;
    *mr = k->mr;
    k->used += need;
    return RF_OK;
}

rf_status cli_words(rf_ps_client *c, size_t n)
{
    if (n <= c->words_cap)
        return RF_OK;
    size_t cap = n < 64 ? 64 : n;
    void *p = NULL;
    if (posix_memalign(&p, 64, cap * 8) != 0)
        return rf_error_set(RF_ERR_NO_MEMORY, "ps client: out of memory");
    memset(p, 0, cap * 8);
    rf_mr *mr;
    rf_status st = rf_mr_reg(c->fabric, p, cap * 8, RF_ACCESS_LOCAL_WRITE, &mr);
    if (st != RF_OK) {
        free(p);
        return st;
    }
    if (c->words_mr)
        rf_mr_dereg(c->words_mr);
    free(c->words);
    c->words = p;
    c->words_mr = mr;
    c->words_cap = cap;
    return RF_OK;
}

static rf_status client_register(rf_ps_client *c, void *addr, size_t len,
                                 bool reply, rf_mr **out)
{
    if (!c || !addr || !len || !out)
        return rf_error_set(RF_ERR_INVALID_ARG, "%s: NULL or empty block",
                            reply ? "rf_ps_client_register_reply"
                                  : "rf_ps_client_register");
    cli_reg *r = calloc(1, sizeof *r);
    if (!r)
        return rf_error_set(RF_ERR_NO_MEMORY, "ps client: out of memory");
    r->reply = reply;
    cli_lock(c);
    uint32_t access = RF_ACCESS_LOCAL_WRITE;
    if (reply)
        access |= RF_ACCESS_REMOTE_WRITE;
    rf_status st = rf_mr_reg(c->fabric, addr, len, access, &r->mr);
    if (st == RF_OK) {
        r->next = c->regs;
        c->regs = r;
        *out = r->mr;
    } else {
        free(r);
    }
    cli_unlock(c);
    return st;
}

rf_status rf_ps_client_register(rf_ps_client *c, void *addr, size_t len,
                                rf_mr **out)
{
    return client_register(c, addr, len, false, out);
}

rf_status rf_ps_client_register_reply(rf_ps_client *c, void *addr, size_t len,
                                      rf_mr **out)
{
    return client_register(c, addr, len, true, out);
}

void rf_ps_client_deregister(rf_ps_client *c, rf_mr *mr)
{
    if (!c || !mr)
        return;
    cli_lock(c);
    for (cli_reg **pp = &c->regs; *pp; pp = &(*pp)->next) {
        if ((*pp)->mr == mr) {
            cli_reg *r = *pp;
            *pp = r->next;
            rf_mr_dereg(r->mr);
            free(r);
            break;
        }
    }
    cli_unlock(c);
}

/* ---- connecting ------------------------------------------------------------
 */

static rf_status parse_addr(const char *addr, char *host, size_t cap,
                            uint16_t *port)
{
    const char *colon = strrchr(addr, ':');
    const char *h = addr;
    size_t hlen = colon ? (size_t)(colon - addr) : 0;
    if (colon && hlen >= 2 && addr[0] == '[' && addr[hlen - 1] == ']') {
        h = addr + 1;
        hlen -= 2;
    }
    char *end = NULL;
    long v = colon ? strtol(colon + 1, &end, 10) : -1;
    if (!colon || hlen == 0 || hlen >= cap || !end || *end ||
        end == colon + 1 || v <= 0 || v > 65535)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "ps client: '%s' is not host:port", addr);
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    *port = (uint16_t)v;
    return RF_OK;
}

typedef enum { TRY_OK, TRY_AGAIN, TRY_FATAL, TRY_RESTARTED } try_result;

static try_result handshake(ps_cli_conn *p, const ps_conn_welcome *w)
{
    rf_ps_client *c = p->client;
    rf_status st = cli_post_receives(p);
    if (st != RF_OK) {
        cli_conn_fail(p, "posting receives: %s", rf_error_message());
        return TRY_AGAIN;
    }
    if (c->opt.secret && (st = cli_authenticate(p, w)) != RF_OK) {
        if (st == RF_ERR_AUTH) {
            p->fatal = RF_ERR_AUTH;
            return TRY_FATAL;
        }
        return st == RF_ERR_CORRUPT ? TRY_FATAL : TRY_AGAIN;
    }
    if (c->opt.secret)
        cli_conn_set_state(p, CLI_CONN_HELLO, "authenticated");
    uint64_t *ring = (uint64_t *)(void *)(cli_req_buf(p) + PS_REQ_MAX);
    ps_hello h = {.client_id = c->opt.client_id,
                  .flags = c->opt.is_chief ? PS_CONN_FLAG_CHIEF : 0,
                  .recv_depth = PS_CLI_RECV_DEPTH,
                  .ring_slots = PS_CLI_RECV_DEPTH};
    rf_mr_desc all;
    rf_mr_describe(p->mr, &all);
    h.ring = (rf_mr_desc){.addr = all.addr +
                                  (uint64_t)((unsigned char *)ring - p->mem),
                          .len = 8u * PS_CLI_RECV_DEPTH,
                          .rkey = all.rkey};
    size_t len;
    if ((st = ps_enc_hello(cli_req_buf(p), PS_REQ_MAX, cli_next_req_id(p), &h,
                           &len)) != RF_OK)
        return TRY_FATAL;
    const unsigned char *reply;
    size_t rlen;
    if ((st = cli_rpc(p, len, PS_MSG_HELLO_REPLY, &reply, &rlen)) != RF_OK)
        return st == RF_ERR_CORRUPT ? TRY_FATAL : TRY_AGAIN;
    ps_hello_reply r;
    st = ps_dec_hello_reply(reply, rlen, &r);
    cli_rpc_done(p);
    char name[340];
    cli_ps_name(p, name, sizeof name);
    if (st != RF_OK || r.incarnation != w->incarnation) {
        char why[400];
        snprintf(why, sizeof why, "%s",
                 st != RF_OK ? rf_error_message()
                             : "HELLO_REPLY incarnation differs from the "
                               "accept's");
        cli_conn_fail(p, "protocol error: %s", why);
        rf_error_set(RF_ERR_CORRUPT, "%s: protocol error: %s", name, why);
        return TRY_FATAL;
    }
    if (r.ps_index != (int32_t)p->index)
        RF_LOG_WARN("%s says it is ps task %d", name, (int)r.ps_index);
    p->ps_recv_depth = r.recv_depth;
    p->globals = r.globals;
    bool restarted = p->incarnation && p->incarnation != r.incarnation;
    if (restarted) {
        RF_LOG_WARN("%s restarted: incarnation 0x%016llx, was 0x%016llx", name,
                    (unsigned long long)r.incarnation,
                    (unsigned long long)p->incarnation);
        cli_vars_invalidate(c, p->index);
    }
    uint64_t old = p->incarnation;
    p->incarnation = r.incarnation;
    if ((st = cli_fetch_regions(p)) != RF_OK ||
        (st = cli_fetch_dir(p)) != RF_OK)
        return st == RF_ERR_CORRUPT ? TRY_FATAL : TRY_AGAIN;
    if (restarted) {
        rf_error_set(RF_ERR_ABORTED,
                     "%s restarted (incarnation 0x%016llx, was 0x%016llx): "
                     "its variables are gone until the chief recreates and "
                     "restores them",
                     name, (unsigned long long)r.incarnation,
                     (unsigned long long)old);
        return TRY_RESTARTED;
    }
    return TRY_OK;
}

static try_result try_connect(ps_cli_conn *p, int timeout_ms, char *last,
                              size_t last_len)
{
    rf_ps_client *c = p->client;
    cli_conn_close(p);
    p->fatal = RF_OK;
    unsigned char priv[PS_CONN_HELLO_MAX];
    ps_conn_hello hello = {.client_id = c->opt.client_id,
                           .flags = (c->opt.is_chief ? PS_CONN_FLAG_CHIEF : 0) |
                                    (c->opt.secret ? PS_CONN_FLAG_AUTH : 0) |
                                    PS_CONN_FLAG_TOKEN};
    memcpy(hello.token, c->task_token, PS_TOKEN_LEN);
    ps_conn_hello_encode(&hello, priv);
    /* with a secret, the ps may write our ack ring only once it proved it
     * holds the secret (cli_authenticate) */
    rf_ep_attr attr = {.flags = c->opt.secret ? RF_EP_REMOTE_ACCESS_OFF : 0,
                       .send_cq = c->cq,
                       .recv_cq = c->cq,
                       .max_send_wr = PS_CLI_SQ_DEPTH,
                       .max_recv_wr = PS_CLI_RECV_DEPTH};
    rf_ep *ep = NULL;
    char name[340];
    cli_ps_name(p, name, sizeof name);
    cli_conn_set_state(p, CLI_CONN_CONNECTING, "connect attempt");
    rf_status st = rf_connect(c->fabric, p->host, p->port, &attr, priv,
                              ps_conn_hello_size(&hello), timeout_ms, &ep);
    if (st != RF_OK) {
        cli_conn_set_state(p, CLI_CONN_DOWN, rf_status_string(st));
        size_t rlen = 0;
        const char *data =
            st == RF_ERR_UNAVAILABLE ? rf_connect_reject_data(&rlen) : NULL;
        size_t alen = strlen(PS_REJECT_AUTH);
        if (data && rlen >= alen && memcmp(data, PS_REJECT_AUTH, alen) == 0) {
            cli_auth_refused(p, data, rlen);
            p->fatal = RF_ERR_AUTH;
            return TRY_FATAL;
        }
        size_t blen = strlen(PS_REJECT_BUSY);
        if (data && rlen >= blen && memcmp(data, PS_REJECT_BUSY, blen) == 0) {
            /* the ps is flooded with connections setting up: retried */
            snprintf(last, last_len, "%s is busy: %.*s", name,
                     (int)(rlen - blen), data + blen);
            return TRY_AGAIN;
        }
        if (data && rlen) {
            rf_error_set(RF_ERR_UNAVAILABLE, "%s refused the connection: %.*s",
                         name, (int)rlen, data);
            p->fatal = RF_ERR_UNAVAILABLE;
            return TRY_FATAL;
        }
        snprintf(last, last_len, "%s", rf_error_message());
        if (st == RF_ERR_INVALID_ARG) {
            rf_error_set(st, "%s: %s", name, last);
            p->fatal = st;
            return TRY_FATAL;
        }
        return TRY_AGAIN;
    }
    size_t wlen = 0;
    const void *wdata = rf_ep_peer_private_data(ep, &wlen);
    ps_conn_welcome w;
    if (ps_conn_welcome_decode(wdata, wlen, &w) != RF_OK) {
        char why[400];
        snprintf(why, sizeof why, "%s", rf_error_message());
        rf_ep_close(ep);
        cli_conn_set_state(p, CLI_CONN_DOWN, "not a usable ps task");
        rf_error_set(RF_ERR_CORRUPT, "%s is not a usable ps task: %s", name,
                     why);
        p->fatal = RF_ERR_CORRUPT;
        return TRY_FATAL;
    }
    p->ep = ep;
    p->provider = rf_ep_provider(ep);
    cli_conn_set_state(p,
                       c->opt.secret ? CLI_CONN_AUTHENTICATING : CLI_CONN_HELLO,
                       "connected");
    p->why[0] = '\0';
    p->reply_ready = false;
    p->acks_seen = 0;
    p->sq_used = 0;
    p->pushes_inflight = 0;
    try_result r = handshake(p, &w);
    if (r == TRY_OK || r == TRY_RESTARTED)
        cli_conn_set_state(p, CLI_CONN_LIVE,
                           r == TRY_OK ? "HELLO answered, directory fetched"
                                       : "the ps restarted: HELLO answered, "
                                         "directory fetched");
    if (r == TRY_AGAIN) {
        snprintf(last, last_len, "%s", rf_error_message());
        cli_conn_close(p);
    } else if (r == TRY_FATAL) {
        char why[512];
        snprintf(why, sizeof why, "%s", rf_error_message());
        cli_conn_close(p);
        rf_status fatal =
            p->fatal == RF_ERR_AUTH ? RF_ERR_AUTH : RF_ERR_CORRUPT;
        rf_error_set(fatal, "%s", why);
        p->fatal = fatal;
    }
    return r;
}

/* Connects every ps not up (all of them if force), round robin with a
 * backoff per task, until the connect deadline. */
static rf_status connect_all(rf_ps_client *c, bool force)
{
    size_t n = c->num_ps;
    long long *next = calloc(n, sizeof *next);
    int *backoff = calloc(n, sizeof *backoff);
    char(*last)[400] = calloc(n, sizeof *last);
    bool *retry_ps = calloc(n, sizeof *retry_ps);
    if (!next || !backoff || !last || !retry_ps) {
        free(next), free(backoff), free(last), free(retry_ps);
        return rf_error_set(RF_ERR_NO_MEMORY, "ps client: out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        retry_ps[i] = force || !cli_conn_usable(&c->conns[i]);
        backoff[i] = BACKOFF_FIRST_MS;
        snprintf(last[i], sizeof last[i], "no answer");
    }
    long long start = rf_now_ms();
    long long deadline = start + c->opt.connect_timeout_ms;
    rf_status result = RF_OK;
    char restarted[600] = "";
    for (;;) {
        bool pending = false;
        long long wake = deadline;
        for (size_t i = 0; i < n; i++) {
            if (!retry_ps[i])
                continue;
            long long now = rf_now_ms();
            /* an attempt with almost no time left could only time out,
             * hiding why the earlier ones failed */
            if (now >= next[i] && deadline - now >= 100) {
                long long left = deadline - now;
                try_result r =
                    try_connect(&c->conns[i], left > 5000 ? 5000 : (int)left,
                                last[i], sizeof last[i]);
                if (r == TRY_OK || r == TRY_RESTARTED) {
                    retry_ps[i] = false;
                    if (r == TRY_RESTARTED) {
                        size_t used = strlen(restarted);
                        snprintf(restarted + used, sizeof restarted - used,
                                 "%s%s", used ? "; " : "", rf_error_message());
                    }
                    continue;
                }
                if (r == TRY_FATAL) {
                    /* The message is already set by try_connect. */
                    result = c->conns[i].fatal;
                    goto out;
                }
                next[i] = rf_now_ms() + backoff[i];
                backoff[i] = backoff[i] * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS
                                                             : backoff[i] * 2;
            }
            pending = true;
            if (next[i] < wake && next[i] > now)
                wake = next[i];
        }
        if (!pending)
            break;
        if (rf_now_ms() >= deadline) {
            char list[1200] = "";
            size_t count = 0;
            for (size_t i = 0; i < n; i++) {
                if (!retry_ps[i])
                    continue;
                size_t used = strlen(list);
                snprintf(list + used, sizeof list - used, "%s%zu (%s)",
                         count ? ", " : "", i, c->conns[i].addr);
                count++;
            }
            double secs = c->opt.connect_timeout_ms / 1000.0;
            size_t first = 0;
            while (!retry_ps[first])
                first++;
            if (c->opt.unreachable)
                *c->opt.unreachable = (int)first;
            result =
                rf_error_set(RF_ERR_UNAVAILABLE,
                             "ps task%s %s did not come up within %g s "
                             "(last attempt: %s)",
                             count > 1 ? "s" : "", list, secs, last[first]);
            goto out;
        }
        /* the backoff passes through the engine, without the client mutex:
         * read-set waiters and other connections' completions go on */
        long long pause_ms = wake - rf_now_ms();
        if (pause_ms > 0 &&
            (result = cli_pause_us(c, (uint32_t)pause_ms * 1000u,
                                   "ps client: reconnect backoff")) != RF_OK)
            goto out;
    }
    if (restarted[0])
        result = rf_error_set(RF_ERR_ABORTED, "%s", restarted);
out:
    free(next), free(backoff), free(last), free(retry_ps);
    return result;
}

rf_status rf_ps_client_connect(rf_fabric *fabric, const char *const *ps_addrs,
                               size_t num_ps,
                               const rf_ps_client_options *options,
                               rf_ps_client **out)
{
    if (!fabric || !ps_addrs || !num_ps || !out)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_client_connect: NULL argument or no ps "
                            "task");
    *out = NULL;
    if (num_ps > RF_PS_MAX_TASKS)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_client_connect: %zu ps tasks, above the "
                            "limit of %d",
                            num_ps, RF_PS_MAX_TASKS);
    rf_ps_client *c = calloc(1, sizeof *c);
    if (!c)
        return rf_error_set(RF_ERR_NO_MEMORY, "ps client: out of memory");
    pthread_mutex_init(&c->mu, NULL);
    rf_cond_init_monotonic(&c->progress_cv);
    pthread_cond_init(&c->call_cv, NULL);
    c->fabric = fabric;
    c->opt = options ? *options : (rf_ps_client_options){0};
    int *ms[] = {&c->opt.connect_timeout_ms, &c->opt.op_timeout_ms,
                 &c->opt.lock_timeout_ms, &c->opt.lookup_timeout_ms};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
        if (*ms[i] <= 0)
            *ms[i] = i == 2 ? 10000 : DEFAULT_TIMEOUT_MS;
    uint32_t rnd = 0;
    if (getrandom(&rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
        rnd = (uint32_t)rf_now_ms();
    c->lock_token = ((uint64_t)(rnd | 1) << 32) | c->opt.client_id;
    /* the same for every run of this task: how a ps tells its restart from
     * a stranger in its place (ps_token.c) */
    ps_token_for(c->opt.client_id, ps_addrs[0], c->task_token, c->token_src,
                 sizeof c->token_src);
    RF_LOG_DEBUG("client %u: task token %s", c->opt.client_id, c->token_src);
    c->num_ps = num_ps;
    c->conns = calloc(num_ps, sizeof *c->conns);
    rf_status st =
        c->conns ? RF_OK
                 : rf_error_set(RF_ERR_NO_MEMORY, "ps client: out of memory");
    if (st == RF_OK)
        st = rf_cq_create(
            fabric, (uint32_t)num_ps * (PS_CLI_SQ_DEPTH + PS_CLI_RECV_DEPTH),
            &c->cq);
    for (size_t i = 0; st == RF_OK && i < num_ps; i++) {
        ps_cli_conn *p = &c->conns[i];
        p->client = c;
        p->index = i;
        snprintf(p->addr, sizeof p->addr, "%s", ps_addrs[i] ? ps_addrs[i] : "");
        if ((st = parse_addr(p->addr, p->host, sizeof p->host, &p->port)) !=
            RF_OK)
            break;
        p->mem_len = (size_t)PS_CLI_RECV_DEPTH * PS_MSG_MAX + PS_REQ_MAX +
                     8u * PS_CLI_RECV_DEPTH;
        void *mem = NULL;
        if (posix_memalign(&mem, 4096, p->mem_len) != 0) {
            st = rf_error_set(RF_ERR_NO_MEMORY, "ps client: out of memory");
            break;
        }
        memset(mem, 0, p->mem_len);
        p->mem = mem;
        st = rf_mr_reg(fabric, p->mem, p->mem_len,
                       RF_ACCESS_LOCAL_WRITE | RF_ACCESS_REMOTE_WRITE, &p->mr);
    }
    if (st == RF_OK) {
        cli_lock(c);
        st = connect_all(c, true);
        cli_unlock(c);
    }
    if (st != RF_OK) {
        char why[1400];
        snprintf(why, sizeof why, "%s", rf_error_message());
        rf_ps_client_close(c);
        return rf_error_set(st, "%s", why);
    }
    *out = c;
    return RF_OK;
}

rf_status rf_ps_client_reconnect(rf_ps_client *c, bool force)
{
    if (!c)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_ps_client_reconnect: NULL");
    cli_lock(c);
    rf_status st = connect_all(c, force);
    cli_unlock(c);
    return st;
}

size_t rf_ps_client_num_ps(const rf_ps_client *c)
{
    return c ? c->num_ps : 0;
}

uint64_t rf_ps_client_incarnation(const rf_ps_client *c, size_t ps)
{
    return c && ps < c->num_ps ? c->conns[ps].incarnation : 0;
}

const char *rf_ps_client_provider(const rf_ps_client *c, size_t ps)
{
    return c && ps < c->num_ps && c->conns[ps].provider ? c->conns[ps].provider
                                                        : "";
}

void rf_ps_client_close(rf_ps_client *c)
{
    if (!c)
        return;
    for (size_t i = 0; c->conns && i < c->num_ps; i++)
        cli_conn_close(&c->conns[i]);
    for (size_t i = 0; c->conns && i < c->num_ps; i++) {
        ps_cli_conn *p = &c->conns[i];
        if (p->mr)
            rf_mr_dereg(p->mr);
        free(p->mem);
        free(p->regions);
        free(p->dir);
        free(p->by_shard);
    }
    free(c->conns);
    while (c->vars) {
        rf_ps_var *v = c->vars;
        c->vars = v->next;
        free(v);
    }
    while (c->pool) {
        cli_pool_chunk *k = c->pool;
        c->pool = k->next;
        rf_mr_dereg(k->mr);
        free(k->base);
        free(k);
    }
    while (c->regs) {
        cli_reg *r = c->regs;
        c->regs = r->next;
        rf_mr_dereg(r->mr);
        free(r);
    }
    if (c->rmw_mr)
        rf_mr_dereg(c->rmw_mr);
    free(c->rmw_buf);
    if (c->rec_mr)
        rf_mr_dereg(c->rec_mr);
    free(c->rec_buf);
    free(c->rmw_hash);
    free(c->rmw_rows);
    free(c->gt_done);
    free(c->rmw_local);
    free(c->rs_wrs);
    free(c->batch_wrs), free(c->batch_ops), free(c->batch_remote);
    free(c->rs_items);
    free(c->rs_ops);
    if (c->words_mr)
        rf_mr_dereg(c->words_mr);
    free(c->words);
    if (c->cq)
        rf_cq_destroy(c->cq);
    pthread_cond_destroy(&c->progress_cv);
    pthread_cond_destroy(&c->call_cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}
