/* bench/emblookup/el_opts.c: command-line parsing of rf-bench-emb. A
 * malformed flag is a usage error (exit 2) naming it. */
#include "el_opts.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/env.h"

static void usage(FILE *f)
{
    fprintf(
        f,
        "Usage: rf-bench-emb [options]\n"
        "\n"
        "Embedding lookups from a table of --rows rows x --dim floats, "
        "mod-partitioned\nover %d ps tasks (child processes of this program "
        "on --host): per step a batch\nof --batch examples x --features "
        "Zipf ids (rdmaflow/ctr_data.h), shard id %% 2,\nrow id / 2, "
        "deduplicated, then looked up three ways in the same run:\n"
        "  rows    rf_ps_read_rows (one-sided row READs, version words "
        "around each row)\n"
        "  dense   rf_ps_read of each shard's whole values into one reused "
        "buffer\n"
        "          (what a dense pull moves), then the rows copied out "
        "locally\n"
        "  gather  rf_ps_gather_rows (the ps CPU copies the rows and WRITEs "
        "them back)\n"
        "\n"
        "Options:\n"
        "  --provider NAME   sock, shm, verbs or auto (default: RF_FABRIC, "
        "else auto)\n"
        "  --host ADDR       address of the ps tasks (default 127.0.0.1)\n"
        "  --rows N          table rows, 1eN allowed (default 1e5; 2 .. "
        "4e9)\n"
        "  --dim N           floats per row (default 16; 1 .. 4096)\n"
        "  --batch N         examples per step (default 256)\n"
        "  --features N      ids per example (default 16; 1 .. 32)\n"
        "  --zipf S          Zipf exponent of the ids (default 1.1)\n"
        "  --seed N          data seed (default 1)\n"
        "  --steps N         measured steps of rows and gather (default "
        "50)\n"
        "  --warmup N        steps run first and not counted (default 5)\n"
        "  --dense-steps N   measured steps of dense (default: --steps)\n"
        "  --dense-cap BYTES largest whole-shard buffer, K/M/G (default "
        "4G); a larger\n"
        "                    shard skips dense, saying so\n"
        "  --push            also push the rows' gradients (zero) apply=ps "
        "each step\n"
        "  --json FILE       also write the figures as JSON\n"
        "  --timeout SEC     bound on start-up and each operation (default "
        "120)\n"
        "  --inject-stale-row change a looked-up row behind the check's back "
        "(for the\n"
        "                    smoke test: the run must then fail its check)\n"
        "  -h, --help        this text\n"
        "\n"
        "Exit status: 0 ok, 1 failure (including the data check), 2 usage "
        "error.\n",
        EL_PS_TASKS);
}

static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int bad(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "rf-bench-emb: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (see --help)\n");
    va_end(ap);
    return 2;
}

/* An integer, or a real in 1eN form that is an integer. */
static bool parse_count(const char *s, double lo, double hi, int64_t *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || v < lo || v > hi || v != (double)(int64_t)v)
        return false;
    *out = (int64_t)v;
    return true;
}

static bool parse_bytes(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || s[0] == '-')
        return false;
    uint64_t mul = 1;
    if (*end == 'K' || *end == 'k')
        mul = 1ull << 10, end++;
    else if (*end == 'M' || *end == 'm')
        mul = 1ull << 20, end++;
    else if (*end == 'G' || *end == 'g')
        mul = 1ull << 30, end++;
    if (*end || v > (1ull << 50) / mul)
        return false;
    *out = v * mul;
    return true;
}

int el_opts_parse(int argc, char **argv, el_opts *o)
{
    *o = (el_opts){.rows = 100000,
                   .dim = 16,
                   .batch = 256,
                   .features = 16,
                   .zipf = 1.1,
                   .seed = 1,
                   .steps = 50,
                   .warmup = 5,
                   .dense_steps = -1,
                   .dense_cap = 4ull << 30,
                   .timeout_s = 120};
    const char *env = getenv("RF_FABRIC");
    o->provider = env && *env ? env : "auto";
    snprintf(o->host, sizeof o->host, "127.0.0.1");
    enum {
        O_PROVIDER = 256,
        O_HOST,
        O_ROWS,
        O_DIM,
        O_BATCH,
        O_FEATURES,
        O_ZIPF,
        O_SEED,
        O_STEPS,
        O_WARMUP,
        O_DSTEPS,
        O_DCAP,
        O_PUSH,
        O_JSON,
        O_TIMEOUT,
        O_SERVE,
        O_INDEX,
        O_INJECT
    };
    static const struct option lo[] = {
        {"provider", required_argument, 0, O_PROVIDER},
        {"host", required_argument, 0, O_HOST},
        {"rows", required_argument, 0, O_ROWS},
        {"dim", required_argument, 0, O_DIM},
        {"batch", required_argument, 0, O_BATCH},
        {"features", required_argument, 0, O_FEATURES},
        {"zipf", required_argument, 0, O_ZIPF},
        {"seed", required_argument, 0, O_SEED},
        {"steps", required_argument, 0, O_STEPS},
        {"warmup", required_argument, 0, O_WARMUP},
        {"dense-steps", required_argument, 0, O_DSTEPS},
        {"dense-cap", required_argument, 0, O_DCAP},
        {"push", no_argument, 0, O_PUSH},
        {"json", required_argument, 0, O_JSON},
        {"timeout", required_argument, 0, O_TIMEOUT},
        {"serve-ps", no_argument, 0, O_SERVE},
        {"inject-stale-row", no_argument, 0, O_INJECT},
        {"index", required_argument, 0, O_INDEX},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    opterr = 0;
    int ch;
    int64_t v;
    while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (ch) {
        case O_PROVIDER:
            o->provider = optarg;
            break;
        case O_HOST:
            if (strlen(optarg) >= sizeof o->host)
                return bad("--host: too long");
            snprintf(o->host, sizeof o->host, "%s", optarg);
            break;
        case O_ROWS:
            if (!parse_count(optarg, 2, 4e9, &o->rows))
                return bad("--rows: '%s' is not a count in 2 .. 4e9", optarg);
            break;
        case O_DIM:
            if (!parse_count(optarg, 1, 4096, &v))
                return bad("--dim: '%s' is not in 1 .. 4096", optarg);
            o->dim = (uint32_t)v;
            break;
        case O_BATCH:
            if (!parse_count(optarg, 1, 1 << 20, &v))
                return bad("--batch: '%s' is not in 1 .. 2^20", optarg);
            o->batch = (uint32_t)v;
            break;
        case O_FEATURES:
            if (!parse_count(optarg, 1, 32, &v))
                return bad("--features: '%s' is not in 1 .. 32", optarg);
            o->features = (uint32_t)v;
            break;
        case O_ZIPF: {
            char *end;
            o->zipf = strtod(optarg, &end);
            if (end == optarg || *end || !(o->zipf > 0 && o->zipf <= 10))
                return bad("--zipf: '%s' is not in (0, 10]", optarg);
            break;
        }
        case O_SEED:
            if (!parse_count(optarg, 0, 1e15, &v))
                return bad("--seed: '%s' is not a count", optarg);
            o->seed = (uint64_t)v;
            break;
        case O_STEPS:
        case O_WARMUP:
        case O_DSTEPS:
            if (!parse_count(optarg, ch == O_WARMUP ? 0 : 1, 100000, &v))
                return bad("%s: '%s' is not in %d .. 100000",
                           ch == O_STEPS    ? "--steps"
                           : ch == O_WARMUP ? "--warmup"
                                            : "--dense-steps",
                           optarg, ch == O_WARMUP ? 0 : 1);
            if (ch == O_STEPS)
                o->steps = (int)v;
            else if (ch == O_WARMUP)
                o->warmup = (int)v;
            else
                o->dense_steps = (int)v;
            break;
        case O_DCAP:
            if (!parse_bytes(optarg, &o->dense_cap))
                return bad("--dense-cap: '%s' is not a size", optarg);
            break;
        case O_PUSH:
            o->push = true;
            break;
        case O_JSON:
            o->json = optarg;
            break;
        case O_TIMEOUT:
            if (!parse_count(optarg, 1, 86400, &v))
                return bad("--timeout: '%s' is not in 1 .. 86400", optarg);
            o->timeout_s = (int)v;
            break;
        case O_INJECT:
            o->inject_stale_row = true;
            break;
        case O_SERVE:
            o->serve_ps = true;
            break;
        case O_INDEX:
            if (!parse_count(optarg, 0, EL_PS_TASKS - 1, &v))
                return bad("--index: '%s'", optarg);
            o->ps_index = (int)v;
            break;
        case 'h':
            usage(stdout);
            return 1;
        default:
            return bad("unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return bad("unexpected argument '%s'", argv[optind]);
    if (o->dense_steps < 0)
        o->dense_steps = o->steps;
    if (o->dense_steps > o->steps)
        return bad("--dense-steps %d is above --steps %d", o->dense_steps,
                   o->steps);
    return 0;
}
