/* tests/fabric/main.c: rf_fabric_conformance, the fabric conformance suite.
 *
 *   rf_fabric_conformance --list [--provider P]
 *   rf_fabric_conformance --provider P --case NAME|all [--host H]
 *
 * One program for every provider. A case runs in this process (the driver)
 * under a watchdog and starts its peers as child processes (this program
 * re-executed with --role ...). Exit status: 0 pass, 1 fail, 2 usage, 77 the
 * case does not apply to this provider (skipped, never a pass). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "rdmaflow/env.h"
#include "tests/common/budget.h"
#include "tests/common/check.h"
#include "tests/common/proc.h"
#include "tests/common/suite.h"
#include "tests/fabric/cases.h"
#include "tests/fabric/opts.h"
#include "tests/fabric/roles.h"
#include "tests/fabric/target.h"

#define EXIT_SKIP  77
#define EXIT_USAGE 2

rt_options rt_opts = {
    .provider = "auto", .host = "127.0.0.1", .peer_timeout_ms = 10000};
rt_role_args rt_role;

static const rft_case cases[] = {
#define RT_CASE(n, b, f, d)                                                    \
    {.name = #n, .budget_s = b, .flags = f, .desc = d, .run = case_##n},
#include "tests/fabric/cases.def"
#undef RT_CASE
};
#define NCASES (sizeof cases / sizeof cases[0])

void rt_spawn(rft_child *c, const char *name, const char *const *args)
{
    const char *argv[64] = {"--provider", rt_opts.provider, "--host",
                            rt_opts.host};
    size_t n = 4;
    for (size_t i = 0; args[i]; i++) {
        CHECK(n < 63, "too many arguments for child %s", name);
        argv[n++] = args[i];
    }
    argv[n] = NULL;
    rft_spawn(c, name, NULL, argv, RFT_STDIN_PIPE);
}

static void usage(void)
{
    fprintf(stderr,
            "usage: rf_fabric_conformance --list [--provider P]\n"
            "       rf_fabric_conformance [--provider P] [--host H] --case "
            "NAME|all\n"
            "  --provider P  fabric provider (sock, verbs, shm, auto; default "
            "auto)\n"
            "  --host H      address to listen on and connect to (default "
            "127.0.0.1)\n"
            "  --case NAME   run one case (see --list), or all of them\n"
            "  --list        print the case names for the provider, one per "
            "line\n"
            "environment: RF_TEST_TIME_SCALE (multiplies every time budget), "
            "RF_PEER_TIMEOUT_MS\n");
}

/* Name of the provider --provider resolves to ("auto" opens one to see). */
static const char *resolved_provider(void)
{
    if (strcmp(rt_opts.provider, "auto") != 0)
        return rt_opts.provider;
    static char name[32];
    rf_fabric_attr attr = {.bind_addr = rt_opts.host};
    rf_fabric *f = NULL;
    if (rf_fabric_open("auto", &attr, &f) != RF_OK)
        return "auto";
    snprintf(name, sizeof name, "%s", rf_fabric_provider(f));
    rf_fabric_close(f);
    return name;
}

static int applies(const rft_case *c, const char *provider)
{
    if (c->flags & RT_AUTO_ONLY)
        return strcmp(provider, "auto") == 0;
    return !(c->flags & RT_SOCK_ONLY) || strcmp(provider, "sock") == 0;
}

static int run_case(const rft_case *c)
{
    const char *provider = resolved_provider();
    if (!applies(c, provider)) {
        printf("SKIP %s: %s provider only (provider is %s)\n", c->name,
               c->flags & RT_AUTO_ONLY ? "auto" : "sock", provider);
        return EXIT_SKIP;
    }
    char context[256];
    snprintf(context, sizeof context, "%s, on provider %s, host %s", provider,
             rt_opts.provider, rt_opts.host);
    return rft_case_run(c, context);
}

/* --case all: every applicable case in its own process, in order. */
static int run_all(void)
{
    const char *provider = resolved_provider();
    int failed = 0, passed = 0, skipped = 0;
    for (size_t i = 0; i < NCASES; i++) {
        if (!applies(&cases[i], provider)) {
            printf("SKIP %s: sock provider only\n", cases[i].name);
            skipped++;
            continue;
        }
        const char *args[] = {"--case", cases[i].name, NULL};
        rft_child child;
        rt_spawn(&child, cases[i].name, args);
        rft_close_stdin(&child);
        int status = rft_wait(&child, rft_ms((cases[i].budget_s + 30) * 1000));
        int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        printf("%s %s\n", ok ? "PASS" : "FAIL", cases[i].name);
        fflush(stdout);
        ok ? passed++ : failed++;
    }
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed ? 1 : 0;
}

static int parse_num(const char *flag, const char *text, int64_t min,
                     int64_t max, int64_t *out)
{
    if (rf_parse_int(text, min, max, flag, out) != RF_OK) {
        fprintf(stderr, "rf_fabric_conformance: %s\n", rf_error_message());
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    rft_set_who("driver"); /* the roles rename themselves */
    const char *case_name = NULL, *role = NULL;
    int list = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--list") == 0) {
            list = 1;
            continue;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage();
            return 0;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "rf_fabric_conformance: %s needs a value\n", a);
            usage();
            return EXIT_USAGE;
        }
        const char *v = argv[++i];
        int64_t n = 0;
        if (strcmp(a, "--provider") == 0) {
            rt_opts.provider = v;
        } else if (strcmp(a, "--host") == 0) {
            rt_opts.host = v;
        } else if (strcmp(a, "--case") == 0) {
            case_name = v;
        } else if (strcmp(a, "--role") == 0) {
            role = v;
        } else if (strcmp(a, "--out") == 0) {
            rt_role.out = v;
        } else if (strcmp(a, "--token") == 0) {
            rt_role.token = v;
        } else if (strcmp(a, "--port") == 0) {
            if (parse_num(a, v, 1, 65535, &n))
                return EXIT_USAGE;
            rt_role.port = (uint16_t)n;
        } else if (strcmp(a, "--addr") == 0) {
            if (parse_num(a, v, 0, INT64_MAX, &n))
                return EXIT_USAGE;
            rt_role.addr = (uint64_t)n;
        } else if (strcmp(a, "--rkey") == 0) {
            if (parse_num(a, v, 0, UINT32_MAX, &n))
                return EXIT_USAGE;
            rt_role.rkey = (uint32_t)n;
        } else if (strcmp(a, "--len") == 0) {
            if (parse_num(a, v, 0, INT64_MAX, &n))
                return EXIT_USAGE;
            rt_role.len = (uint64_t)n;
        } else if (strcmp(a, "--threads") == 0) {
            if (parse_num(a, v, 1, 64, &n))
                return EXIT_USAGE;
            rt_role.threads = (int)n;
        } else if (strcmp(a, "--iters") == 0) {
            if (parse_num(a, v, 1, 100000000, &n))
                return EXIT_USAGE;
            rt_role.iters = (long)n;
        } else if (strcmp(a, "--start") == 0) {
            if (parse_num(a, v, 1, 4096, &n))
                return EXIT_USAGE;
            rt_role.start = (int)n;
        } else if (strcmp(a, "--id") == 0) {
            if (parse_num(a, v, 0, 255, &n))
                return EXIT_USAGE;
            rt_role.id = (int)n;
        } else {
            fprintf(stderr, "rf_fabric_conformance: unknown option %s\n", a);
            usage();
            return EXIT_USAGE;
        }
    }

    rft_scale(); /* a bad RF_TEST_TIME_SCALE is a usage error (exit 2) */
    int64_t v;
    if (rf_env_int("RF_PEER_TIMEOUT_MS", 10000, 1, 3600000, &v) != RF_OK) {
        fprintf(stderr, "rf_fabric_conformance: %s\n", rf_error_message());
        return EXIT_USAGE;
    }
    rt_opts.peer_timeout_ms = (int)v;

    if (role) {
        rft_proc_init(true);
        /* Last resort; the driver's watchdog normally kills us first. */
        rft_watchdog(role, 900);
        if (strcmp(role, "target") == 0)
            return rt_target_main();
        if (strcmp(role, "fadd") == 0)
            return rt_role_fadd();
        if (strcmp(role, "lock") == 0)
            return rt_role_lock(true);
        if (strcmp(role, "nolock") == 0)
            return rt_role_lock(false);
        if (strcmp(role, "stream") == 0)
            return rt_role_stream();
        fprintf(stderr, "rf_fabric_conformance: unknown role %s\n", role);
        return EXIT_USAGE;
    }
    rft_proc_init(false);

    if (list) {
        const char *provider =
            strcmp(rt_opts.provider, "auto") == 0 ? NULL : rt_opts.provider;
        for (size_t i = 0; i < NCASES; i++) {
            if (!provider || applies(&cases[i], provider))
                printf("%s\n", cases[i].name);
            else
                fprintf(stderr, "# %s: sock provider only, not for %s\n",
                        cases[i].name, provider);
        }
        return 0;
    }
    if (!case_name) {
        fprintf(stderr, "rf_fabric_conformance: --case or --list is "
                        "required\n");
        usage();
        return EXIT_USAGE;
    }
    if (strcmp(case_name, "all") == 0)
        return run_all();
    const rft_case *c = rft_case_find(cases, NCASES, case_name);
    if (!c) {
        fprintf(stderr,
                "rf_fabric_conformance: unknown case '%s' (see --list)\n",
                case_name);
        return EXIT_USAGE;
    }
    return run_case(c);
}
