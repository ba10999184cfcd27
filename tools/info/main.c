/* tools/info/main.c: rf-info, like ibv_devinfo and fi_info together: the
 * providers built in and usable here, the RDMA devices (ports, state, MTU,
 * link layer, GIDs, limits), what the auto provider picks for an address
 * and why, the NUMA node for it, and every RF_* setting with its value and
 * where that came from. Exit 0, 1 when something asked about could not be
 * answered (named in the output), 2 for a malformed command line. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "info.h"
#include "rdmaflow/env.h"
#include "rdmaflow/version.h"

#define EXIT_USAGE 2

static void usage(FILE *to)
{
    fprintf(to,
            "usage: rf-info [--addr HOST] [--json]\n"
            "  --addr HOST  also say which provider a connection to HOST uses "
            "and why\n"
            "               (shm for an address of this host, verbs where an "
            "RDMA device\n"
            "               is open, sock otherwise; the auto provider's own "
            "choice) and\n"
            "               the NUMA node for it\n"
            "  --json       print everything as one JSON document\n"
            "  --help       this text\n"
            "  --version    print the version and exit\n");
}

__attribute__((format(printf, 1, 2))) static int bad_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "rf-info: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    usage(stderr);
    return EXIT_USAGE;
}

int main(int argc, char **argv)
{
    /* A malformed RF_LOG_LEVEL (or an RF_LOG_FILE that cannot be opened)
     * is a usage error, before anything runs. */
    if (rf_log_env_check() != RF_OK) {
        fprintf(stderr, "rf-info: %s\n", rf_error_message());
        return 2;
    }
    const char *addr = NULL;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--version") == 0) {
            printf("rf-info (rdmaflow) %s\n", rf_version());
            return 0;
        } else if (strcmp(a, "--json") == 0) {
            json = 1;
        } else if (strcmp(a, "--addr") == 0 || strncmp(a, "--addr=", 7) == 0) {
            const char *v = a[6] == '=' ? a + 7 : NULL;
            if (!v) {
                if (i + 1 >= argc)
                    return bad_usage("--addr needs a HOST");
                v = argv[++i];
            }
            if (!*v)
                return bad_usage("--addr: empty HOST");
            if (addr)
                return bad_usage("--addr given twice");
            addr = v;
        } else if (strncmp(a, "--json=", 7) == 0) {
            return bad_usage("--json takes no value (got '%s')", a);
        } else {
            return bad_usage("unknown argument '%s'", a);
        }
    }
    int failed = 0;
    json_object *doc = info_collect(addr, &failed);
    if (!doc) {
        fprintf(stderr, "rf-info: out of memory\n");
        return 1;
    }
    if (json)
        printf("%s\n", json_object_to_json_string_ext(
                           doc, JSON_C_TO_STRING_PRETTY |
                                    JSON_C_TO_STRING_NOSLASHESCAPE));
    else
        info_print_text(stdout, doc);
    json_object_put(doc);
    if (fflush(stdout) != 0) {
        perror("rf-info: stdout");
        return 1;
    }
    return failed ? 1 : 0;
}
