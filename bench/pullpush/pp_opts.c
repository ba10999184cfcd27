/* bench/pullpush/pp_opts.c: command-line parsing of rf-bench-pullpush. A
 * malformed or contradictory flag is a usage error (exit 2) naming it;
 * nothing is silently replaced by a default. */
#include "pp_opts.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/env.h"
#include "rdmaflow/status.h"
#include "rdmaflow/version.h"

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: rf-bench-pullpush [options]\n"
            "\n"
            "Pull and push of every variable of a model of --size bytes held "
            "by %d ps\ntasks (child processes of this program, rdmaflow ps "
            "servers on --host),\nbeside a single-thread memcpy of the same "
            "bytes in the same rounds.\nOperations per round: memcpy, pull "
            "(READ of every variable), push_ps\n(apply=ps: WRITE_WITH_IMM "
            "into the inbox until the ps acknowledged its\napply), "
            "push_worker (apply=worker: READ, local apply, WRITE back).\n"
            "\n"
            "Options:\n"
            "  --provider NAME     sock, shm, verbs or auto (default: "
            "RF_FABRIC, else auto)\n"
            "  --host ADDR         address of the ps tasks (default "
            "127.0.0.1)\n"
            "  --size BYTES        model size, K/M/G suffixes (default 1M, "
            "at least 4K)\n"
            "  --rounds N          measured rounds (default %d, 1..1000)\n"
            "  --warmup N          rounds run first, not counted (default 1, "
            "0..100)\n"
            "  --optimizer NAME    sgd, momentum, adagrad, adam or rmsprop "
            "(default sgd;\n"
            "                      learning_rate 0.01, momentum 0.9 where "
            "required)\n"
            "  --timeout SEC       bound on start-up and on each operation "
            "(default %d)\n"
            "  --inject-extra-push push once more than the verifier knows "
            "(for the smoke\n"
            "                      test: the run must then fail its check)\n"
            "  -h, --help          this text\n"
            "  --version           print the version and exit\n"
            "\n"
            "Exit status: 0 ok, 1 failure (including the data check), 2 usage "
            "error.\n",
            PP_PS_TASKS, PP_DEFAULT_ROUNDS, PP_DEFAULT_TIMEOUT);
}

static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int bad(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("rf-bench-pullpush: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\nTry 'rf-bench-pullpush --help'.\n", stderr);
    return 2;
}

static int parse_int(const char *flag, const char *text, int64_t min,
                     int64_t max, int *out)
{
    int64_t v;
    if (rf_parse_int(text, min, max, flag, &v) != RF_OK)
        return bad("%s", rf_error_message());
    *out = (int)v;
    return 0;
}

/* BYTES with an optional binary K, M or G suffix. */
static int parse_size(const char *text, uint64_t *out)
{
    char num[32];
    size_t len = strlen(text);
    unsigned shift = 0;
    if (len && strchr("KkMmGg", text[len - 1])) {
        char s = text[len - 1];
        shift = s == 'K' || s == 'k' ? 10 : s == 'M' || s == 'm' ? 20 : 30;
        len--;
    }
    if (len == 0 || len >= sizeof num)
        return bad("--size: '%s' is not a size", RF_ECHO(text));
    memcpy(num, text, len);
    num[len] = '\0';
    int64_t v;
    const int64_t max = (int64_t)4 << 30;
    if (rf_parse_int(num, 1, max >> shift, "--size", &v) != RF_OK)
        return bad("--size: '%s' is not a size in 4K..4G", RF_ECHO(text));
    *out = (uint64_t)v << shift;
    if (*out < 4096)
        return bad("--size: '%s' is below 4K", RF_ECHO(text));
    return 0;
}

static int parse_optimizer(const char *text, rf_optim_config *c)
{
    if (rf_optim_parse(text, c) != RF_OK)
        return bad("--optimizer: %s", rf_error_message());
    if (c->learning_rate != c->learning_rate)
        c->learning_rate = 0.01f;
    if (c->momentum != c->momentum)
        c->momentum = 0.9f;
    if (rf_optim_validate(c) != RF_OK)
        return bad("--optimizer: %s", rf_error_message());
    return 0;
}

enum {
    OPT_PROVIDER = 256,
    OPT_HOST,
    OPT_SIZE,
    OPT_ROUNDS,
    OPT_WARMUP,
    OPT_OPTIMIZER,
    OPT_TIMEOUT,
    OPT_INJECT,
    OPT_SERVE_PS,
    OPT_INDEX,
    OPT_READY_FD,
    OPT_VERSION,
};

int pp_opts_parse(int argc, char **argv, pp_opts *o)
{
    static const struct option longopts[] = {
        {"provider", required_argument, NULL, OPT_PROVIDER},
        {"host", required_argument, NULL, OPT_HOST},
        {"size", required_argument, NULL, OPT_SIZE},
        {"rounds", required_argument, NULL, OPT_ROUNDS},
        {"warmup", required_argument, NULL, OPT_WARMUP},
        {"optimizer", required_argument, NULL, OPT_OPTIMIZER},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"inject-extra-push", no_argument, NULL, OPT_INJECT},
        {"serve-ps", no_argument, NULL, OPT_SERVE_PS},
        {"index", required_argument, NULL, OPT_INDEX},
        {"ready-fd", required_argument, NULL, OPT_READY_FD},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, OPT_VERSION},
        {NULL, 0, NULL, 0},
    };
    *o = (pp_opts){.provider = "auto",
                   .size = PP_DEFAULT_SIZE,
                   .rounds = PP_DEFAULT_ROUNDS,
                   .warmup = 1,
                   .timeout_s = PP_DEFAULT_TIMEOUT,
                   .ps_index = -1,
                   .ready_fd = -1};
    snprintf(o->host, sizeof o->host, "127.0.0.1");
    int rc = parse_optimizer("sgd", &o->optim);
    if (rc)
        return rc;
    bool optim_set = false, client_flag = false, index_set = false;
    const char *env = getenv("RF_FABRIC");
    if (env && *env)
        o->provider = env;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        rc = 0;
        switch (c) {
        case OPT_PROVIDER:
            o->provider = optarg;
            break;
        case OPT_HOST:
            if (!*optarg || strlen(optarg) >= sizeof o->host)
                return bad("--host: '%s' is not an address", RF_ECHO(optarg));
            snprintf(o->host, sizeof o->host, "%s", optarg);
            break;
        case OPT_SIZE:
            rc = parse_size(optarg, &o->size);
            client_flag = true;
            break;
        case OPT_ROUNDS:
            rc = parse_int("--rounds", optarg, 1, 1000, &o->rounds);
            client_flag = true;
            break;
        case OPT_WARMUP:
            rc = parse_int("--warmup", optarg, 0, 100, &o->warmup);
            client_flag = true;
            break;
        case OPT_OPTIMIZER:
            rc = parse_optimizer(optarg, &o->optim);
            optim_set = true;
            break;
        case OPT_TIMEOUT:
            rc = parse_int("--timeout", optarg, 1, 86400, &o->timeout_s);
            break;
        case OPT_INJECT:
            o->inject_extra_push = true;
            break;
        case OPT_SERVE_PS:
            o->serve_ps = true;
            break;
        case OPT_INDEX:
            rc = parse_int("--index", optarg, 0, PP_PS_TASKS - 1, &o->ps_index);
            index_set = true;
            break;
        case OPT_READY_FD:
            rc = parse_int("--ready-fd", optarg, 3, 1023, &o->ready_fd);
            break;
        case 'h':
            usage(stdout);
            return 1;
        case OPT_VERSION:
            printf("rf-bench-pullpush (rdmaflow) %s\n", rf_version());
            return 1;
        case ':':
            return bad("%s needs a value", argv[optind - 1]);
        default:
            return bad("unknown option '%s'", RF_ECHO(argv[optind - 1]));
        }
        if (rc)
            return rc;
    }
    if (optind < argc)
        return bad("unexpected argument '%s'", RF_ECHO(argv[optind]));
    if (o->serve_ps) {
        if (!index_set || o->ready_fd < 0)
            return bad("--serve-ps needs --index and --ready-fd");
        if (client_flag || optim_set || o->inject_extra_push)
            return bad("--serve-ps: the client chooses the model; give "
                       "--size/--rounds/--warmup/--optimizer to it");
    } else if (index_set || o->ready_fd >= 0) {
        return bad("--index and --ready-fd apply to --serve-ps only");
    }
    return 0;
}
