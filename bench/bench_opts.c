/* bench/bench_opts.c: the test table and command-line parsing of rf-bench.
 * Every malformed or contradictory flag is a usage error (exit 2) with a
 * message naming it; nothing is silently replaced by a default. */
#include "bench_opts.h"
#include "rdmaflow/env.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_clock.h"
#include "bench_stats.h"
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

static void usage(FILE *f)
{
    fprintf(f,
            "Usage:\n"
            "  rf-bench --serve [--host ADDR] [-p PORT] [--provider NAME] "
            "[--max-qps N]\n"
            "  rf-bench --connect HOST[:PORT] [options] TEST\n"
            "  rf-bench --loopback [--host ADDR] [options] TEST\n"
            "\n"
            "Latency and bandwidth microbenchmarks over the rdmaflow fabric "
            "API,\nmeasured as perftest measures (ib_read_lat, ib_write_bw, "
            "...).\n"
            "--loopback starts the server as a child process (fork+exec of "
            "rf-bench)\non 127.0.0.1 (or --host) and runs the client "
            "against it.\n"
            "\n"
            "TEST: read_lat write_lat write_imm_lat fetch_add_lat "
            "cmp_swap_lat\n"
            "      read_bw  write_bw  write_imm_bw  fetch_add_bw  "
            "cmp_swap_bw\n"
            "\n"
            "Options:\n"
            "  --provider NAME     sock, verbs or auto (default: RF_FABRIC, "
            "else auto)\n"
            "  --host ADDR         address to listen on (--serve, default "
            "0.0.0.0) or of\n"
            "                      the loopback server (default 127.0.0.1)\n"
            "  -p, --port PORT     listen on / connect to PORT (default %d)\n"
            "  -s, --size BYTES    message size, K/M/G suffixes allowed "
            "(default %d for\n"
            "                      latency, %d for bandwidth; atomics are "
            "8 bytes)\n"
            "  -a, --all           all sizes 2 .. 2^23 (not for atomics)\n"
            "  -n, --iters N       iterations, at least %d (default 1000; "
            "5000 for\n"
            "                      write_bw and write_imm_bw)\n"
            "  -t, --tx-depth N    outstanding operations, bandwidth tests "
            "(default %d)\n"
            "  -Q, --cq-mod N      signal every N-th operation, bandwidth "
            "tests (default\n"
            "                      %d; 1 above %d bytes unless given, as "
            "perftest)\n"
            "  -I, --inline-size N pass the inline hint up to N bytes "
            "(default %d for\n"
            "                      write latency tests, else 0)\n"
            "  -N, --no-peak       do not compute the peak bandwidth\n"
            "  -D, --duration SEC  run for SEC seconds instead of -n "
            "iterations, measuring\n"
            "                      between the margins (SEC > 2 x margin; "
            "not with -a,\n"
            "                      -n or -e)\n"
            "  -f, --margin SEC    -D: seconds left out at either end "
            "(default %d)\n"
            "  --report_gbits      bandwidth in Gb/sec (10^9 bits) instead "
            "of MiB/sec\n"
            "  -q, --qp N          endpoints (QPs), each its own connection, "
            "bandwidth\n"
            "                      tests (default 1, at most %d; -n and -t "
            "are per QP)\n"
            "  --max-qps N         --serve: the most endpoints a client may "
            "open per run\n"
            "                      (default %d, at most %d)\n"
            "  -d, --ib-dev DEV    verbs: the RDMA device (RF_VERBS_DEVICE; "
            "the flag wins)\n"
            "  -i, --ib-port PORT  verbs: its port (RF_VERBS_PORT)\n"
            "  -x, --gid-index N   verbs: the GID index (RF_VERBS_GID_INDEX)\n"
            "  --poll MODE         how completions are awaited: wait "
            "(default: rf_cq_wait,\n"
            "                      which spins RF_CQ_SPIN_US, 20 us, then "
            "blocks), busy\n"
            "                      (rf_cq_poll in a loop, as perftest), or "
            "events\n"
            "                      (rf_cq_wait with no spin)\n"
            "  -e, --events        --poll events (perftest's -e)\n"
            "  --json              one JSON object per result row, nothing "
            "else on stdout\n"
            "  --forever           --serve: keep serving clients (default: "
            "exit after one)\n"
            "  --timeout SEC       give up waiting for a completion or the "
            "peer after SEC\n"
            "                      seconds (default 60)\n"
            "  --timer tsc|clock   timestamps: rdtsc calibrated against "
            "CLOCK_MONOTONIC\n"
            "                      (default on x86) or CLOCK_MONOTONIC "
            "itself\n"
            "  --providers         list the compiled-in providers and exit\n"
            "  -h, --help          this text\n"
            "  --version           print the version and exit\n"
            "\n"
            "Exit status: 0 ok, 1 failure (including data verification), 2 "
            "usage error.\n",
            BENCH_DEFAULT_PORT, BENCH_DEFAULT_LAT_SIZE, BENCH_DEFAULT_BW_SIZE,
            BENCH_MIN_ITERS, BENCH_DEFAULT_TX_DEPTH, BENCH_DEFAULT_CQ_MOD,
            BENCH_CQ_MOD_SIZE_LIMIT, BENCH_DEFAULT_INLINE, BENCH_DEFAULT_MARGIN,
            BENCH_MAX_QPS, BENCH_DEFAULT_MAX_QPS, BENCH_MAX_QPS);
}

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

/* Whole unsigned decimal number in [min, max], with an optional binary
 * K/M/G suffix when allow_suffix. */
static int parse_u64(const char *flag, const char *text, uint64_t min,
                     uint64_t max, bool allow_suffix, uint64_t *out)
{
    if (!text || !*text || *text == '-' || *text == '+')
        return bad("%s: '%s' is not a non-negative number", flag,
                   RF_ECHO(text ? text : ""));
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || end == text)
        return bad("%s: '%s' is not a number", flag, RF_ECHO(text));
    if (allow_suffix && *end && !end[1]) {
        unsigned shift = 0;
        switch (*end) {
        case 'K':
        case 'k':
            shift = 10;
            break;
        case 'M':
        case 'm':
            shift = 20;
            break;
        case 'G':
        case 'g':
            shift = 30;
            break;
        default:
            return bad("%s: '%s' has an unknown suffix (K, M or G)", flag,
                       RF_ECHO(text));
        }
        if (v > (UINT64_MAX >> shift))
            return bad("%s: '%s' is too large", flag, RF_ECHO(text));
        v <<= shift;
        end++;
    }
    if (*end)
        return bad("%s: '%s' has trailing characters", flag, RF_ECHO(text));
    if (v < min || v > max) {
        return bad("%s: %s is outside [%" PRIu64 ", %" PRIu64 "]", flag,
                   RF_ECHO(text), min, max);
    }
    *out = v;
    return 0;
}

/* HOST, HOST:PORT, [V6] or [V6]:PORT. */
static int parse_target(const char *text, bench_opts *o, bool *port_given)
{
    const char *host = text, *port = NULL;
    size_t host_len = strlen(text);
    *port_given = false;
    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (!close || (close[1] && close[1] != ':'))
            return bad("--connect: malformed address '%s'", RF_ECHO(text));
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
        return bad("--connect: bad host in '%s'", RF_ECHO(text));
    memcpy(o->host, host, host_len);
    o->host[host_len] = '\0';
    if (port) {
        uint64_t p;
        if (parse_u64("--connect port", port, 1, 65535, false, &p))
            return 2;
        o->port = (uint16_t)p;
        *port_given = true;
    }
    return 0;
}

enum {
    OPT_SERVE = 256,
    OPT_CONNECT,
    OPT_LOOPBACK,
    OPT_PROVIDER,
    OPT_HOST,
    OPT_JSON,
    OPT_FOREVER,
    OPT_TIMEOUT,
    OPT_READY_FD,
    OPT_PROVIDERS,
    OPT_TIMER,
    OPT_POLL,
    OPT_VERSION,
    OPT_REPORT_GBITS,
    OPT_MAX_QPS,
};

/* --poll MODE (and -e): sets poll, events and spin_us. */
static int set_poll(bench_opts *o, const char *mode)
{
    if (strcmp(mode, "busy") == 0) {
        o->events = false;
        o->spin_us = -1;
    } else if (strcmp(mode, "wait") == 0) {
        o->events = true;
        o->spin_us = -1;
    } else if (strcmp(mode, "events") == 0) {
        o->events = true;
        o->spin_us = 0;
    } else {
        return bad("--poll: '%s' is not busy, wait or events", RF_ECHO(mode));
    }
    o->poll = strcmp(mode, "busy") == 0   ? "busy"
              : strcmp(mode, "wait") == 0 ? "wait"
                                          : "events";
    return 0;
}

static int set_mode(bench_opts *o, bench_mode m, const char *flag)
{
    if (o->mode != BENCH_MODE_NONE && o->mode != m)
        return bad("%s: only one of --serve, --connect and --loopback", flag);
    o->mode = m;
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

int bench_opts_parse(int argc, char **argv, bench_opts *o)
{
    static const struct option longopts[] = {
        {"serve", no_argument, NULL, OPT_SERVE},
        {"connect", required_argument, NULL, OPT_CONNECT},
        {"loopback", no_argument, NULL, OPT_LOOPBACK},
        {"provider", required_argument, NULL, OPT_PROVIDER},
        {"host", required_argument, NULL, OPT_HOST},
        {"port", required_argument, NULL, 'p'},
        {"size", required_argument, NULL, 's'},
        {"all", no_argument, NULL, 'a'},
        {"iters", required_argument, NULL, 'n'},
        {"tx-depth", required_argument, NULL, 't'},
        {"cq-mod", required_argument, NULL, 'Q'},
        {"inline-size", required_argument, NULL, 'I'},
        {"no-peak", no_argument, NULL, 'N'},
        {"events", no_argument, NULL, 'e'},
        {"poll", required_argument, NULL, OPT_POLL},
        {"json", no_argument, NULL, OPT_JSON},
        {"forever", no_argument, NULL, OPT_FOREVER},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"ready-fd", required_argument, NULL, OPT_READY_FD},
        {"providers", no_argument, NULL, OPT_PROVIDERS},
        {"timer", required_argument, NULL, OPT_TIMER},
        {"ib-dev", required_argument, NULL, 'd'},
        {"ib-port", required_argument, NULL, 'i'},
        {"gid-index", required_argument, NULL, 'x'},
        {"duration", required_argument, NULL, 'D'},
        {"margin", required_argument, NULL, 'f'},
        {"qp", required_argument, NULL, 'q'},
        {"max-qps", required_argument, NULL, OPT_MAX_QPS},
        {"report_gbits", no_argument, NULL, OPT_REPORT_GBITS},
        {"report-gbits", no_argument, NULL, OPT_REPORT_GBITS},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, OPT_VERSION},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof *o);
    o->port = BENCH_DEFAULT_PORT;
    o->tx_depth = BENCH_DEFAULT_TX_DEPTH;
    o->cq_mod = BENCH_DEFAULT_CQ_MOD;
    o->timeout_s = 60;
    o->timer_tsc = BENCH_HAVE_TSC;
    set_poll(o, "wait");
    o->ready_fd = -1;
    o->gid_index = -1;
    o->qps = 1;
    o->max_qps = BENCH_DEFAULT_MAX_QPS;
    bool host_set = false, port_set = false, tx_set = false;
    bool qps_set = false, max_qps_set = false;
    bool host_flag = false;
    bool connect_port = false;
    uint64_t v;

    opterr = 0;
    optind = 0; /* glibc: 0 re-initialises getopt completely */
    int c;
    while ((c = getopt_long(argc, argv, ":p:s:an:t:Q:I:Nehd:i:x:D:f:q:",
                            longopts, NULL)) != -1) {
        switch (c) {
        case OPT_SERVE:
            if (set_mode(o, BENCH_MODE_SERVE, "--serve"))
                return 2;
            break;
        case OPT_CONNECT:
            if (set_mode(o, BENCH_MODE_CONNECT, "--connect") ||
                parse_target(optarg, o, &connect_port))
                return 2;
            host_set = true;
            break;
        case OPT_LOOPBACK:
            if (set_mode(o, BENCH_MODE_LOOPBACK, "--loopback"))
                return 2;
            break;
        case OPT_PROVIDER:
            if (!*optarg)
                return bad("--provider: empty name");
            o->provider = optarg;
            break;
        case OPT_HOST:
            if (!*optarg || strlen(optarg) >= sizeof o->host)
                return bad("--host: bad address '%s'", RF_ECHO(optarg));
            snprintf(o->host, sizeof o->host, "%s", optarg);
            host_set = true;
            host_flag = true;
            break;
        case 'p':
            if (parse_u64("-p/--port", optarg, 0, 65535, false, &v))
                return 2;
            o->port = (uint16_t)v;
            port_set = true;
            break;
        case 's':
            if (parse_u64("-s/--size", optarg, 1, BENCH_MAX_SIZE, true, &v))
                return 2;
            o->size = v;
            o->size_set = true;
            break;
        case 'a':
            o->all_sizes = true;
            break;
        case 'n':
            if (parse_u64("-n/--iters", optarg, BENCH_MIN_ITERS, 100000000,
                          false, &v))
                return 2;
            o->iters = (uint32_t)v;
            o->iters_set = true;
            break;
        case 't':
            if (parse_u64("-t/--tx-depth", optarg, 1, BENCH_MAX_TX_DEPTH, false,
                          &v))
                return 2;
            o->tx_depth = (uint32_t)v;
            tx_set = true;
            break;
        case 'Q':
            if (parse_u64("-Q/--cq-mod", optarg, 1, BENCH_MAX_TX_DEPTH, false,
                          &v))
                return 2;
            o->cq_mod = (uint32_t)v;
            o->cq_mod_set = true;
            break;
        case 'I':
            if (parse_u64("-I/--inline-size", optarg, 0, 65536, false, &v))
                return 2;
            o->inline_size = (uint32_t)v;
            o->inline_set = true;
            break;
        case 'N':
            o->no_peak = true;
            break;
        case 'd':
            if (!*optarg || strlen(optarg) >= 64)
                return bad("-d/--ib-dev: bad device name '%s'",
                           RF_ECHO(optarg));
            o->ib_dev = optarg;
            break;
        case 'i':
            if (parse_u64("-i/--ib-port", optarg, 1, 255, false, &v))
                return 2;
            o->ib_port = (int)v;
            break;
        case 'x':
            if (parse_u64("-x/--gid-index", optarg, 0, 65535, false, &v))
                return 2;
            o->gid_index = (int)v;
            break;
        case 'D':
            if (parse_u64("-D/--duration", optarg, 1, 86400, false, &v))
                return 2;
            o->duration_s = (uint32_t)v;
            break;
        case 'f':
            if (parse_u64("-f/--margin", optarg, 1, 43200, false, &v))
                return 2;
            o->margin_s = (uint32_t)v;
            break;
        case 'q':
            if (parse_u64("-q/--qp", optarg, 1, BENCH_MAX_QPS, false, &v))
                return 2;
            o->qps = (uint32_t)v;
            qps_set = true;
            break;
        case OPT_MAX_QPS:
            if (parse_u64("--max-qps", optarg, 1, BENCH_MAX_QPS, false, &v))
                return 2;
            o->max_qps = (uint32_t)v;
            max_qps_set = true;
            break;
        case OPT_REPORT_GBITS:
            o->report_gbits = true;
            break;
        case 'e':
            set_poll(o, "events");
            break;
        case OPT_POLL:
            if (set_poll(o, optarg))
                return 2;
            break;
        case OPT_JSON:
            o->json = true;
            break;
        case OPT_FOREVER:
            o->forever = true;
            break;
        case OPT_TIMEOUT:
            if (parse_u64("--timeout", optarg, 1, 86400, false, &v))
                return 2;
            o->timeout_s = (int)v;
            break;
        case OPT_READY_FD:
            if (parse_u64("--ready-fd", optarg, 3, 65535, false, &v))
                return 2;
            o->ready_fd = (int)v;
            break;
        case 'h':
            usage(stdout);
            return 1;
        case OPT_VERSION:
            printf("rf-bench (rdmaflow) %s\n", rf_version());
            return 1;
        case OPT_TIMER:
            if (strcmp(optarg, "clock") == 0)
                o->timer_tsc = false;
            else if (strcmp(optarg, "tsc") == 0 && BENCH_HAVE_TSC)
                o->timer_tsc = true;
            else
                return bad("--timer: '%s' is not %s", RF_ECHO(optarg),
                           BENCH_HAVE_TSC ? "tsc or clock" : "clock");
            break;
        case OPT_PROVIDERS:
            for (const char *const *p = rf_fabric_providers(); *p; p++)
                printf("%s\n", *p);
            return 1;
        case ':':
            return bad("option '%s' needs a value", RF_ECHO(argv[optind - 1]));
        default:
            return bad("unknown option '%s'", RF_ECHO(argv[optind - 1]));
        }
    }
    if (o->mode == BENCH_MODE_CONNECT && host_flag)
        return bad("--host: with --connect the server is --connect HOST");
    if (connect_port && port_set)
        return bad("give the port once: --connect HOST:PORT or -p PORT");
    if (o->mode != BENCH_MODE_LOOPBACK && o->mode != BENCH_MODE_SERVE &&
        port_set && o->port == 0)
        return bad("-p 0: a client needs the server's port");

    if (o->mode == BENCH_MODE_SERVE) {
        if (optind < argc)
            return bad("--serve takes no TEST ('%s'): the client chooses it",
                       RF_ECHO(argv[optind]));
    } else if (o->mode != BENCH_MODE_NONE) {
        if (optind >= argc)
            return bad("missing TEST (e.g. read_lat, write_bw)");
        if (optind + 1 < argc)
            return bad("unexpected argument '%s'", RF_ECHO(argv[optind + 1]));
        int t = bench_test_find(argv[optind]);
        if (t < 0)
            return bad("unknown TEST '%s' (see --help)", RF_ECHO(argv[optind]));
        o->test = (bench_test)t;
    }
    return check_combination(o, host_set, port_set, tx_set, qps_set,
                             max_qps_set);
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
