/* tests/integration/attack/attack_peer.c: the attacker of the attack test
 * (attack_test.sh). One subcommand per attack against one ps task:
 *
 *   attack_peer CMD --ps HOST:PORT [--secret FILE] [--id N] [--chief]
 *       [--target RKEY:ADDR:LEN] [--globals RKEY:ADDR] [--count N]
 *       [--hold_ms MS] [--timeout_ms MS]
 *
 * CMD: nosecret, wrongsecret, chief, dup, onesided, flood, frames, bigread,
 * gap (attack_gap.c: a restarting task's slot without a secret) (each prints
 * one line "refused: ..." or "SUCCEEDED: ..." and exits 0 or 1), and insider
 * (with the secret, as a compromised worker: prints the ps's regions and
 * global_step location, "target ..." and "globals ...", for the others'
 * --target and --globals). Exit 2: usage or local error. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ps/proto.h"
#include "tests/integration/attack/attack.h"

static char verdicts[8192];
static char froms[8192];
static bool any_success;

__attribute__((format(printf, 2, 0))) static void
add(const char *tag, const char *fmt, va_list ap)
{
    size_t n = strlen(verdicts);
    if (n + 4 >= sizeof verdicts)
        return;
    n += (size_t)snprintf(verdicts + n, sizeof verdicts - n, "%s%s",
                          n ? "; " : "", tag);
    if (n < sizeof verdicts)
        vsnprintf(verdicts + n, sizeof verdicts - n, fmt, ap);
}

void at_refused(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add("", fmt, ap);
    va_end(ap);
}

void at_succeeded(const char *fmt, ...)
{
    any_success = true;
    va_list ap;
    va_start(ap, fmt);
    add("GOT ", fmt, ap);
    va_end(ap);
}

void at_conn(const rsock *s)
{
    size_t n = strlen(froms);
    if (s->local[0] && n + strlen(s->local) + 2 < sizeof froms)
        snprintf(froms + n, sizeof froms - n, "%s%s", n ? "," : "", s->local);
}

int at_finish(const char *cmd)
{
    printf("%s %s: %s [from %s]\n",
           any_success ? "SUCCEEDED:" : "refused:", cmd, verdicts,
           froms[0] ? froms : "-");
    fflush(stdout);
    return any_success ? 1 : 0;
}

rs_result at_open(const at_opts *o, rsock *s, uint32_t id, uint32_t flags)
{
    unsigned char priv[PS_CONN_HELLO_SIZE];
    ps_conn_hello h = {.client_id = id, .flags = flags};
    ps_conn_hello_encode(&h, priv);
    rs_result r = rs_tcp(s, o->host, o->port, o->timeout_ms);
    at_conn(s);
    if (r == RS_OK)
        r = rs_handshake(s, priv, sizeof priv, o->timeout_ms);
    return r;
}

bool at_open_accepted(const at_opts *o, rsock *s, uint32_t id, uint32_t flags,
                      const char *what)
{
    rs_result r = at_open(o, s, id, flags);
    if (r == RS_OK)
        return true;
    at_refused("%s: not accepted (%s%s%.*s)", what, rs_result_name(r),
               s->priv_len ? ": " : "", (int)s->priv_len,
               (const char *)s->priv);
    rs_close(s);
    return false;
}

rs_result at_rpc(const at_opts *o, rsock *s, const void *msg, size_t len,
                 void *buf, size_t cap, size_t *got)
{
    rs_result r = rs_ps_send(s, msg, len, o->timeout_ms);
    if (r == RS_OK)
        r = rs_ps_recv(s, buf, cap, got, o->timeout_ms);
    return r;
}

void at_expect_dropped(const at_opts *o, rsock *s, uint32_t msgs_allowed,
                       const char *what)
{
    rs_result r = rs_wait_closed(s, o->timeout_ms);
    if (s->ps_msgs > msgs_allowed)
        at_succeeded("%s: the ps sent %u message(s)", what,
                     s->ps_msgs - msgs_allowed);
    else if (r == RS_CLOSED)
        at_refused("%s: dropped", what);
    else
        at_succeeded("%s: connection still open after %d ms", what,
                     o->timeout_ms);
    rs_close(s);
}

static bool parse_desc(const char *arg, rf_mr_desc *d, bool with_len)
{
    unsigned long long a = 0, l = 0;
    unsigned k = 0;
    int n = with_len ? sscanf(arg, "%x:%llx:%llu", &k, &a, &l)
                     : sscanf(arg, "%x:%llx", &k, &a);
    d->rkey = k;
    d->addr = a;
    d->len = l;
    return n == (with_len ? 3 : 2);
}

static int usage(const char *why)
{
    fprintf(stderr, "attack_peer: %s\n(see the top of attack_peer.c)\n", why);
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage("no subcommand");
    const char *cmd = argv[1];
    at_opts o = {.id = 1, .count = 200, .hold_ms = 4000, .timeout_ms = 10000};
    bool have_ps = false;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--chief")) {
            o.chief = true;
            continue;
        }
        if (!v)
            return usage("a flag lacks its value");
        i++;
        if (!strcmp(a, "--ps")) {
            const char *colon = strrchr(v, ':');
            if (!colon || (size_t)(colon - v) >= sizeof o.host)
                return usage("--ps HOST:PORT");
            memcpy(o.host, v, (size_t)(colon - v));
            o.port = (uint16_t)atoi(colon + 1);
            have_ps = o.port != 0;
        } else if (!strcmp(a, "--secret")) {
            o.secret = v;
        } else if (!strcmp(a, "--id")) {
            o.id = (uint32_t)strtoul(v, NULL, 10);
        } else if (!strcmp(a, "--target")) {
            if (!(o.have_target = parse_desc(v, &o.target, true)))
                return usage("--target RKEY:ADDR:LEN (hex:hex:decimal)");
        } else if (!strcmp(a, "--globals")) {
            if (!(o.have_globals = parse_desc(v, &o.globals, false)))
                return usage("--globals RKEY:ADDR (hex:hex)");
        } else if (!strcmp(a, "--count")) {
            o.count = atoi(v);
        } else if (!strcmp(a, "--hold_ms")) {
            o.hold_ms = atoi(v);
        } else if (!strcmp(a, "--timeout_ms")) {
            o.timeout_ms = atoi(v);
        } else {
            return usage("unknown flag");
        }
    }
    if (!have_ps)
        return usage("--ps HOST:PORT is required");
    static const struct {
        const char *name;
        int (*run)(const at_opts *);
    } cmds[] = {
        {"nosecret", at_nosecret}, {"wrongsecret", at_wrongsecret},
        {"chief", at_chief},       {"dup", at_dup},
        {"insider", at_insider},   {"onesided", at_onesided},
        {"flood", at_flood},       {"frames", at_frames},
        {"bigread", at_bigread},   {"gap", at_gap},
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(cmd, cmds[i].name)) {
            int rc = cmds[i].run(&o);
            if (rc == 2 || cmds[i].run == at_insider)
                return rc; /* the insider prints what it learnt instead */
            return at_finish(cmd);
        }
    return usage("unknown subcommand");
}
