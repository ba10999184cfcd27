/* bench/bench_opts.c: the test table and command-line parsing of rf-bench.
 * Every malformed or contradictory flag is a usage error (exit 2) with a
 * message naming it; nothing is silently replaced by a default. */
#include "bench_opts.h"
#include "rdmaflow/env.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_clock.h"
#include "bench_stats.h"
#include "rdmaflow/flags.h"
#include <rdmaflow/fabric.h>
#include <rdmaflow/fabric_info.h>
#include <rdmaflow/version.h>

static const bench_test_info tests[BENCH_TEST_COUNT] = {
    [BENCH_READ_LAT] = {"read_lat", "RDMA_Read Latency", BENCH_VERB_READ, false,
                        false, false, 1, 1000},
    [BENCH_WRITE_LAT] = {"write_lat", "RDMA_Write Latency", BENCH_VERB_WRITE,
                         false, false, true, 2, 1000},
    [BENCH_WRITE_IMM_LAT] = {"write_imm_lat", "RDMA_Write_Imm Latency",
                             BENCH_VERB_WRITE_IMM, false, false, true, 2, 1000},
    [BENCH_FETCH_ADD_LAT] = {"fetch_add_lat", "Atomic FETCH_AND_ADD Latency",
                             BENCH_VERB_FETCH_ADD, false, true, false, 1, 1000},
    [BENCH_CMP_SWAP_LAT] = {"cmp_swap_lat", "Atomic CMP_AND_SWAP Latency",
                            BENCH_VERB_CMP_SWAP, false, true, false, 1, 1000},
    [BENCH_READ_BW] = {"read_bw", "RDMA_Read BW", BENCH_VERB_READ, true, false,
                       false, 1, 1000},
    /* perftest's write BW default is DEF_ITERS_WB = 5000 */
    [BENCH_WRITE_BW] = {"write_bw", "RDMA_Write BW", BENCH_VERB_WRITE, true,
                        false, false, 1, 5000},
    [BENCH_WRITE_IMM_BW] = {"write_imm_bw", "RDMA_Write_Imm BW",
                            BENCH_VERB_WRITE_IMM, true, false, false, 1, 5000},
    [BENCH_FETCH_ADD_BW] = {"fetch_add_bw", "Atomic FETCH_AND_ADD BW",
                            BENCH_VERB_FETCH_ADD, true, true, false, 1, 1000},
    [BENCH_CMP_SWAP_BW] = {"cmp_swap_bw", "Atomic CMP_AND_SWAP BW",
                           BENCH_VERB_CMP_SWAP, true, true, false, 1, 1000},
};

const bench_test_info *bench_test_get(bench_test t)
{
    return (unsigned)t < BENCH_TEST_COUNT ? &tests[t] : NULL;
}

int bench_test_find(const char *name)
{
    for (int i = 0; i < BENCH_TEST_COUNT; i++)
        if (strcmp(tests[i].name, name) == 0)
            return i;
    return -1;
}

/* The help before the options (whose lines come from the flag table). */
static const char usage_head[] =
    "Usage:\n"
    "  rf-bench --serve [--host ADDR] [-p PORT] [--provider NAME] "
    "[--max-qps N]\n"
    "  rf-bench --connect HOST[:PORT] [options] TEST\n"
    "  rf-bench --loopback [--host ADDR] [options] TEST\n"
    "\n"
    "Latency and bandwidth microbenchmarks over the rdmaflow fabric API,\n"
    "measured as perftest measures (ib_read_lat, ib_write_bw, ...).\n"
    "--loopback starts the server as a child process (fork+exec of "
    "rf-bench)\non 127.0.0.1 (or --host) and runs the client against it.\n"
    "\n"
    "TEST: read_lat write_lat write_imm_lat fetch_add_lat cmp_swap_lat\n"
    "      read_bw  write_bw  write_imm_bw  fetch_add_bw  cmp_swap_bw\n"
    "\n"
    "Options:\n";

static const char usage_tail[] =
    "\n"
    "Exit status: 0 ok, 1 failure (including data verification), 2 usage "
    "error.\n";

static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints "rf-bench: <message>" and the help hint; returns 2. */
static int bad(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("rf-bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\nTry 'rf-bench --help'.\n", stderr);
    return 2;
}

/* What the flag table's calls share while argv is read. */
typedef struct parse_state {
    bench_opts *o;
    bool host_set;     /* --host, or the host of --connect */
    bool host_flag;    /* --host itself */
    bool connect_port; /* --connect HOST:PORT */
} parse_state;

/* One mode only: --serve, --connect or --loopback. */
static int set_mode(bench_opts *o, bench_mode m, rf_flag_error *err)
{
    if (o->mode != BENCH_MODE_NONE && o->mode != m)
        return rf_flags_fail(err,
                             "only one of --serve, --connect and --loopback");
    o->mode = m;
    return 0;
}

/* --connect HOST, HOST:PORT, [V6] or [V6]:PORT. */
static int call_connect(const rf_flag_row *row, const char *text, void *ctx,
                        rf_flag_error *err)
{
    parse_state *ps = ctx;
    bench_opts *o = ps->o;
    const char *host = text, *port = NULL;
    size_t host_len = strlen(text);
    (void)row;
    if (set_mode(o, BENCH_MODE_CONNECT, err))
        return -1;
    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (!close || (close[1] && close[1] != ':'))
            return rf_flags_fail(err, "malformed address '%s'", RF_ECHO(text));
        host = text + 1;
        host_len = (size_t)(close - host);
        if (close[1] == ':')
            port = close + 2;
    } else {
        const char *colon = strchr(text, ':');
        if (colon && !strchr(colon + 1, ':')) { /* exactly one colon */
            host_len = (size_t)(colon - text);
            port = colon + 1;
        }
    }
    if (host_len == 0 || host_len >= sizeof o->host)
        return rf_flags_fail(err, "bad host in '%s'", RF_ECHO(text));
    memcpy(o->host, host, host_len);
    o->host[host_len] = '\0';
    ps->host_set = true;
    if (port) {
        uint64_t p;
        if (rf_flags_read_uint("--connect port", port, 1, 65535, &p, err))
            return -1;
        o->port = (uint16_t)p;
        ps->connect_port = true;
    }
    return 0;
}

/* --serve and --loopback (no value). */
static int call_mode(const rf_flag_row *row, const char *value, void *ctx,
                     rf_flag_error *err)
{
    (void)value;
    return set_mode(((parse_state *)ctx)->o,
                    !strcmp(row->name, "serve") ? BENCH_MODE_SERVE
                                                : BENCH_MODE_LOOPBACK,
                    err);
}

static int call_host(const rf_flag_row *row, const char *text, void *ctx,
                     rf_flag_error *err)
{
    parse_state *ps = ctx;
    (void)row;
    if (!*text || strlen(text) >= sizeof ps->o->host)
        return rf_flags_fail(err, "bad address '%s'", RF_ECHO(text));
    snprintf(ps->o->host, sizeof ps->o->host, "%s", text);
    ps->host_set = ps->host_flag = true;
    return 0;
}

static int call_provider(const rf_flag_row *row, const char *text, void *ctx,
                         rf_flag_error *err)
{
    (void)row;
    if (!*text)
        return rf_flags_fail(err, "empty name");
    ((parse_state *)ctx)->o->provider = text;
    return 0;
}

static int call_ib_dev(const rf_flag_row *row, const char *text, void *ctx,
                       rf_flag_error *err)
{
    (void)row;
    if (!*text || strlen(text) >= 64)
        return rf_flags_fail(err, "bad device name '%s'", RF_ECHO(text));
    ((parse_state *)ctx)->o->ib_dev = text;
    return 0;
}

/* --poll MODE and -e (--poll events): sets poll, events and spin_us. */
static int call_poll(const rf_flag_row *row, const char *mode, void *ctx,
                     rf_flag_error *err)
{
    bench_opts *o = ((parse_state *)ctx)->o;
    (void)row;
    if (!mode) /* -e */
        mode = "events";
    if (strcmp(mode, "busy") == 0) {
        o->events = false;
        o->spin_us = -1;
        o->poll = "busy";
    } else if (strcmp(mode, "wait") == 0) {
        o->events = true;
        o->spin_us = -1;
        o->poll = "wait";
    } else if (strcmp(mode, "events") == 0) {
        o->events = true;
        o->spin_us = 0;
        o->poll = "events";
    } else {
        return rf_flags_fail(err, "'%s' is not busy, wait or events",
                             RF_ECHO(mode));
    }
    return 0;
}

/* --progress auto|manual: the fabric's data progress mode. */
static int call_progress(const rf_flag_row *row, const char *mode, void *ctx,
                         rf_flag_error *err)
{
    bench_opts *o = ((parse_state *)ctx)->o;
    (void)row;
    if (strcmp(mode, "auto") == 0)
        o->progress = RF_PROGRESS_AUTO;
    else if (strcmp(mode, "manual") == 0)
        o->progress = RF_PROGRESS_MANUAL;
    else
        return rf_flags_fail(err, "'%s' is not auto or manual", RF_ECHO(mode));
    return 0;
}

static int call_timer(const rf_flag_row *row, const char *text, void *ctx,
                      rf_flag_error *err)
{
    bench_opts *o = ((parse_state *)ctx)->o;
    (void)row;
    if (strcmp(text, "clock") == 0)
        o->timer_tsc = false;
    else if (strcmp(text, "tsc") == 0 && BENCH_HAVE_TSC)
        o->timer_tsc = true;
    else
        return rf_flags_fail(err, "'%s' is not %s", RF_ECHO(text),
                             BENCH_HAVE_TSC ? "tsc or clock" : "clock");
    return 0;
}

/* Checks made once every flag is known. */
static int check_combination(bench_opts *o, bool host_set, bool port_set,
                             bool tx_set, bool qps_set, bool max_qps_set)
{
    if (o->mode == BENCH_MODE_NONE)
        return bad("one of --serve, --connect HOST or --loopback is "
                   "required");
    if (o->ib_dev || o->ib_port || o->gid_index >= 0) {
        /* "auto" (and no --provider) is RF_FABRIC's provider when set */
        const char *p = o->provider && strcmp(o->provider, "auto") != 0
                            ? o->provider
                            : rf_env_str("RF_FABRIC", "auto");
        if (strcmp(p, "sock") == 0 || strcmp(p, "shm") == 0)
            return bad("%s: the %s provider uses no RDMA device (-d, -i and "
                       "-x are for --provider verbs or auto)",
                       o->ib_dev    ? "-d/--ib-dev"
                       : o->ib_port ? "-i/--ib-port"
                                    : "-x/--gid-index",
                       p);
    }
    if (o->mode == BENCH_MODE_SERVE) {
        if (o->size_set || o->all_sizes || o->iters_set || tx_set ||
            o->cq_mod_set || o->inline_set || o->no_peak || o->json ||
            o->duration_s || o->margin_s || o->report_gbits || qps_set)
            return bad("--serve: the client chooses the test and its "
                       "parameters; give -s/-a/-n/-t/-Q/-I/-N/-D/-f/-q/"
                       "--report_gbits/--json to the client (--max-qps "
                       "bounds -q)");
        if (!host_set)
            snprintf(o->host, sizeof o->host, "0.0.0.0");
        return 0;
    }
    if (o->forever)
        return bad("--forever applies to --serve only");
    if (max_qps_set)
        return bad("--max-qps applies to --serve only (the server's bound "
                   "on a client's -q)");
    if (o->ready_fd >= 0)
        return bad("--ready-fd applies to --serve only");
    if (o->mode == BENCH_MODE_LOOPBACK) {
        if (port_set)
            return bad("--loopback picks a free port itself; drop -p");
        if (!host_set)
            snprintf(o->host, sizeof o->host, "127.0.0.1");
    }
    const bench_test_info *t = bench_test_get(o->test);
    if (t->atomic) {
        if (o->all_sizes)
            return bad("-a: %s operates on 8-byte words only", t->name);
        if (o->size_set && o->size != 8)
            return bad("-s: %s operates on 8-byte words; the size is 8",
                       t->name);
        if (o->inline_set)
            return bad("-I: %s carries no payload to inline", t->name);
    }
    if (o->all_sizes && o->size_set)
        return bad("-a and -s exclude each other");
    if (!t->bw && (tx_set || o->cq_mod_set || o->no_peak))
        return bad("-t, -Q and -N apply to bandwidth tests; %s runs at TX "
                   "depth 1",
                   t->name);
    if (o->qps > 1 && !t->bw)
        return bad("-q/--qp %u: multiple QPs are only available on bandwidth "
                   "tests, as perftest; %s is a latency test",
                   o->qps, t->name);
    if (t->verb == BENCH_VERB_READ && o->inline_set)
        return bad("-I: a read carries no payload to inline");
    if ((uint64_t)bench_opts_iters(o) * o->qps > 100000000u)
        return bad("-n %u with -q %u: at most 100000000 operations in all "
                   "(-n counts per QP, as perftest)",
                   bench_opts_iters(o), o->qps);
    if (o->report_gbits && !t->bw)
        return bad("--report_gbits applies to bandwidth tests; %s reports "
                   "latency",
                   t->name);
    if (o->margin_s && !o->duration_s)
        return bad("-f/--margin applies to -D/--duration");
    if (o->duration_s) {
        uint32_t margin = o->margin_s ? o->margin_s : BENCH_DEFAULT_MARGIN;
        if (o->all_sizes)
            return bad("-D: duration mode does not run all sizes (-a), as "
                       "perftest");
        if (o->iters_set)
            return bad("-D and -n exclude each other: -D runs for a duration "
                       "instead of -n iterations");
        if (o->spin_us == 0)
            return bad("-D: duration mode does not work with events (-e, "
                       "--poll events), as perftest");
        if (o->duration_s <= 2 * margin)
            return bad("-D %u: the duration must be more than twice the "
                       "margin (-f, %u s), as perftest",
                       o->duration_s, margin);
    }
    return 0;
}

#define STR_(x) #x
#define STR(x)  STR_(x) /* a number macro as the text of a default */

/* Whether --help, --version or --providers was given (they stop parsing). */
typedef struct stop_flags {
    bool help, version, providers;
} stop_flags;

/* Flags check_combination needs to know were given. */
typedef struct given_flags {
    bool port, tx, qps, max_qps;
} given_flags;

/* The flag table of rf-bench: one row per flag with its default, its
 * bounds and its help line; perftest's short options are the aliases.
 * The modes are in the usage lines, not among the options. */
#define BENCH_FLAG_ROWS 35
static void bench_flag_rows(rf_flag_row rows[BENCH_FLAG_ROWS], bench_opts *o,
                            given_flags *g, stop_flags *stop)
{
    const rf_flag_row table[BENCH_FLAG_ROWS] = {
        RF_FLAG_CALL("serve", call_mode, NULL, NULL, NULL,
                     .bits = RF_FLAG_NO_VALUE | RF_FLAG_HIDDEN),
        RF_FLAG_CALL("connect", call_connect, NULL, NULL, NULL,
                     .bits = RF_FLAG_HIDDEN),
        RF_FLAG_CALL("loopback", call_mode, NULL, NULL, NULL,
                     .bits = RF_FLAG_NO_VALUE | RF_FLAG_HIDDEN),
        RF_FLAG_CALL("provider", call_provider, NULL, "NAME",
                     "sock, verbs or auto (default: RF_FABRIC, else auto)"),
        RF_FLAG_CALL(
            "host", call_host, NULL, "ADDR",
            "address to listen on (--serve, default 0.0.0.0) or of the "
            "loopback server (default 127.0.0.1)"),
        RF_FLAG_UINT16("port", &o->port, STR(BENCH_DEFAULT_PORT), 0, 65535,
                       "PORT", "listen on / connect to PORT", .alias = 'p',
                       .seen = &g->port),
        RF_FLAG_SIZE(
            "size", &o->size, NULL, 1, BENCH_MAX_SIZE, "BYTES",
            "message size, K/M/G suffixes allowed (default " STR(
                BENCH_DEFAULT_LAT_SIZE) " for latency, " STR(BENCH_DEFAULT_BW_SIZE) " for bandwidth; atomics are 8 bytes)",
            .alias = 's', .seen = &o->size_set),
        RF_FLAG_BOOL("all", &o->all_sizes,
                     "all sizes 2 .. 2^23 (not for atomics)", .alias = 'a'),
        RF_FLAG_UINT32(
            "iters", &o->iters, NULL, BENCH_MIN_ITERS, 100000000, "N",
            "iterations, at least " STR(BENCH_MIN_ITERS) " (default "
                                                         "1000; 5000 for "
                                                         "write_bw and "
                                                         "write_imm_bw)",
            .alias = 'n', .seen = &o->iters_set),
        RF_FLAG_UINT32("tx-depth", &o->tx_depth, STR(BENCH_DEFAULT_TX_DEPTH), 1,
                       BENCH_MAX_TX_DEPTH, "N",
                       "outstanding operations, bandwidth tests", .alias = 't',
                       .seen = &g->tx),
        RF_FLAG_UINT32(
            "cq-mod", &o->cq_mod, STR(BENCH_DEFAULT_CQ_MOD), 1,
            BENCH_MAX_TX_DEPTH, "N",
            "signal every N-th operation, bandwidth tests; 1 above " STR(
                BENCH_CQ_MOD_SIZE_LIMIT) " bytes unless given, as perftest",
            .alias = 'Q', .seen = &o->cq_mod_set),
        RF_FLAG_UINT32(
            "inline-size", &o->inline_size, NULL, 0, 65536, "N",
            "pass the inline hint up to N bytes (default " STR(
                BENCH_DEFAULT_INLINE) " for write latency tests, else 0)",
            .alias = 'I', .seen = &o->inline_set),
        RF_FLAG_BOOL("no-peak", &o->no_peak,
                     "do not compute the peak bandwidth", .alias = 'N'),
        RF_FLAG_UINT32(
            "duration", &o->duration_s, NULL, 1, 86400, "SEC",
            "run for SEC seconds instead of -n iterations, measuring "
            "between the margins (SEC > 2 x margin; not with -a, -n or "
            "-e)",
            .alias = 'D'),
        RF_FLAG_UINT32("margin", &o->margin_s, NULL, 1, 43200, "SEC",
                       "-D: seconds left out at either end (default " STR(
                           BENCH_DEFAULT_MARGIN) ")",
                       .alias = 'f'),
        RF_FLAG_BOOL("report_gbits", &o->report_gbits,
                     "bandwidth in Gb/sec (10^9 bits) instead of MiB/sec"),
        RF_FLAG_UINT32(
            "qp", &o->qps, "1", 1, BENCH_MAX_QPS, "N",
            "endpoints (QPs), each its own connection, bandwidth tests "
            "; at most " STR(BENCH_MAX_QPS) ", and -n and -t count per QP",
            .alias = 'q', .seen = &g->qps),
        RF_FLAG_UINT32(
            "max-qps", &o->max_qps, STR(BENCH_DEFAULT_MAX_QPS), 1,
            BENCH_MAX_QPS, "N",
            "--serve: the most endpoints a client may open per run, at "
            "most " STR(BENCH_MAX_QPS),
            .seen = &g->max_qps),
        RF_FLAG_CALL("ib-dev", call_ib_dev, NULL, "DEV",
                     "verbs: the RDMA device (RF_VERBS_DEVICE; the flag wins)",
                     .alias = 'd'),
        RF_FLAG_INT("ib-port", &o->ib_port, NULL, 1, 255, "PORT",
                    "verbs: its port (RF_VERBS_PORT)", .alias = 'i'),
        RF_FLAG_INT("gid-index", &o->gid_index, NULL, 0, 65535, "N",
                    "verbs: the GID index (RF_VERBS_GID_INDEX)", .alias = 'x'),
        RF_FLAG_CALL(
            "poll", call_poll, "wait", "MODE",
            "how completions are awaited: wait (rf_cq_wait, which spins "
            "RF_CQ_SPIN_US, 20 us, then blocks), busy (rf_cq_poll in a "
            "loop, as perftest), or events (rf_cq_wait with no spin)"),
        RF_FLAG_CALL(
            "progress", call_progress, "auto", "auto|manual",
            "the fabric's data progress (rf_fabric_attr.progress): auto, or "
            "manual (the peer's operations are served inside this side's "
            "rf_cq_poll/rf_cq_wait; the write_lat memory spin polls the send "
            "queue, passive phases poll without sleeping)"),
        RF_FLAG_CALL("events", call_poll, NULL, NULL,
                     "--poll events (perftest's -e)", .alias = 'e',
                     .bits = RF_FLAG_NO_VALUE),
        RF_FLAG_BOOL("json", &o->json,
                     "one JSON object per result row, nothing else on stdout"),
        RF_FLAG_BOOL("forever", &o->forever,
                     "--serve: keep serving clients (default: exit after one)"),
        RF_FLAG_INT("timeout", &o->timeout_s, "60", 1, 86400, "SEC",
                    "give up waiting for a completion or the peer after SEC "
                    "seconds"),
        RF_FLAG_CALL(
            "timer", call_timer, BENCH_HAVE_TSC ? "tsc" : "clock", "tsc|clock",
            "timestamps: rdtsc calibrated against CLOCK_MONOTONIC (tsc, "
            "on x86) or CLOCK_MONOTONIC itself (clock)"),
        RF_FLAG_STOP("providers", &stop->providers,
                     "list the compiled-in providers and exit"),
        RF_FLAG_STOP("help", &stop->help, "this text", .alias = 'h'),
        RF_FLAG_STOP("version", &stop->version, "print the version and exit"),
        /* internal: the loopback child reports its port on this fd */
        RF_FLAG_INT("ready-fd", &o->ready_fd, NULL, 3, 65535, NULL, NULL,
                    .bits = RF_FLAG_HIDDEN),
        /* the spelling with a dash, as --max-qps */
        RF_FLAG_BOOL("report-gbits", &o->report_gbits, NULL,
                     .bits = RF_FLAG_HIDDEN),
        {0},
    };
    memcpy(rows, table, sizeof table);
}

static void usage(FILE *f, const rf_flag_table *t)
{
    fputs(usage_head, f);
    rf_flags_print_help(f, t);
    fputs(usage_tail, f);
}

/* TEST, after the flags: the operands are argv[1 .. 1 + n). */
static int read_operands(bench_opts *o, char **argv, int n)
{
    if (o->mode == BENCH_MODE_SERVE) {
        if (n > 0)
            return bad("--serve takes no TEST ('%s'): the client chooses it",
                       RF_ECHO(argv[1]));
    } else if (o->mode != BENCH_MODE_NONE) {
        if (n == 0)
            return bad("missing TEST (e.g. read_lat, write_bw)");
        if (n > 1)
            return bad("unexpected argument '%s'", RF_ECHO(argv[2]));
        int t = bench_test_find(argv[1]);
        if (t < 0)
            return bad("unknown TEST '%s' (see --help)", RF_ECHO(argv[1]));
        o->test = (bench_test)t;
    }
    return 0;
}

int bench_opts_parse(int argc, char **argv, bench_opts *o)
{
    memset(o, 0, sizeof *o);
    o->ready_fd = -1;  /* unset */
    o->gid_index = -1; /* unset */
    parse_state ps = {.o = o};
    given_flags given = {0};
    stop_flags stop = {0};
    rf_flag_row rows[BENCH_FLAG_ROWS];
    bench_flag_rows(rows, o, &given, &stop);
    rf_flag_table t = {.rows = rows, .ctx = &ps};
    rf_flag_error err;
    int n;
    int rc = rf_flags_parse(&t, argc, argv, &n, &err);
    if (rc < 0) {
        /* getopt's words for these, which the bad-input tests match */
        if (err.kind == RF_FLAG_ERR_EXTRA_VALUE ||
            err.kind == RF_FLAG_ERR_AMBIGUOUS)
            return bad("unknown option '%s'", RF_ECHO(err.arg));
        return bad("%s", err.message);
    }
    if (rc == RF_FLAGS_STOPPED) {
        if (stop.help)
            usage(stdout, &t);
        else if (stop.version)
            printf("rf-bench (rdmaflow) %s\n", rf_version());
        else
            for (const char *const *p = rf_fabric_providers(); *p; p++)
                printf("%s\n", *p);
        return 1;
    }
    if (o->mode == BENCH_MODE_CONNECT && ps.host_flag)
        return bad("--host: with --connect the server is --connect HOST");
    if (ps.connect_port && given.port)
        return bad("give the port once: --connect HOST:PORT or -p PORT");
    if (o->mode != BENCH_MODE_LOOPBACK && o->mode != BENCH_MODE_SERVE &&
        given.port && o->port == 0)
        return bad("-p 0: a client needs the server's port");
    if (read_operands(o, argv, n))
        return 2;
    return check_combination(o, ps.host_set, given.port, given.tx, given.qps,
                             given.max_qps);
}

void bench_opts_apply_env(const bench_opts *o)
{
    char buf[16];
    if (o->ib_dev)
        setenv("RF_VERBS_DEVICE", o->ib_dev, 1);
    if (o->ib_port) {
        snprintf(buf, sizeof buf, "%d", o->ib_port);
        setenv("RF_VERBS_PORT", buf, 1);
    }
    if (o->gid_index >= 0) {
        snprintf(buf, sizeof buf, "%d", o->gid_index);
        setenv("RF_VERBS_GID_INDEX", buf, 1);
    }
}

int bench_opts_check_device(const bench_opts *o, rf_fabric *fab,
                            const char *who)
{
    if (!o->ib_dev && !o->ib_port && o->gid_index < 0)
        return 0;
    rf_fabric_device dev;
    if (rf_fabric_device_info(fab, &dev) == RF_OK)
        return 0;
    fprintf(stderr,
            "%s: -d/-i/-x ask for an RDMA device, but the %s fabric "
            "uses none: %s\n",
            who, rf_fabric_provider(fab), rf_error_message());
    return -1;
}

const char *bench_opts_env_note(const bench_opts *o)
{
    return o->ib_dev || o->ib_port || o->gid_index >= 0
               ? " (RF_VERBS_DEVICE / RF_VERBS_PORT / RF_VERBS_GID_INDEX as "
                 "set by -d/--ib-dev, -i/--ib-port, -x/--gid-index)"
               : "";
}

size_t bench_opts_sizes(const bench_opts *o, uint64_t sizes[BENCH_MAX_SIZES])
{
    const bench_test_info *t = bench_test_get(o->test);
    if (t->atomic) {
        sizes[0] = 8;
        return 1;
    }
    if (o->all_sizes) { /* perftest -a: 2^1 .. 2^23 */
        size_t n = 0;
        for (unsigned i = 1; i <= 23; i++)
            sizes[n++] = (uint64_t)1 << i;
        return n;
    }
    if (o->size_set)
        sizes[0] = o->size;
    else
        sizes[0] = t->bw ? BENCH_DEFAULT_BW_SIZE : BENCH_DEFAULT_LAT_SIZE;
    return 1;
}

uint32_t bench_opts_iters(const bench_opts *o)
{
    return o->iters_set ? o->iters : bench_test_get(o->test)->default_iters;
}

uint32_t bench_opts_inline(const bench_opts *o)
{
    if (o->inline_set)
        return o->inline_size;
    const bench_test_info *t = bench_test_get(o->test);
    if (!t->bw &&
        (t->verb == BENCH_VERB_WRITE || t->verb == BENCH_VERB_WRITE_IMM))
        return BENCH_DEFAULT_INLINE;
    return 0;
}
