/* tests/integration/attack/slot_thief.c: a stranger's program, built on
 * the public headers only (what anyone can link against the installed
 * library), that claims a worker's id on every ps task of a cluster
 * without the cluster secret, and if it gets in, shows what it got: the
 * ps tasks' regions (the connect fetched their directories and rkeys), a
 * READ of global_step and a FETCH_AND_ADD of 0 on it (access without
 * changing the job). open_slot_test.sh runs it before a worker connects
 * and while it restarts.
 *
 *   rf_slot_thief --ps H:P[,H:P...] --id N [--timeout_ms MS]
 *
 * Prints one line: "refused: id N: STATUS: MESSAGE" (exit 0), or
 * "SUCCEEDED: id N: ..." (exit 1). --timeout_ms bounds the connect
 * (retried, as a worker does, while a ps is unreachable or still holds a
 * dead worker's id; default 3000). Exit 2: usage or local error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/fabric.h"
#include "rdmaflow/ps.h"

#define MAX_PS 16

static int usage(const char *why)
{
    fprintf(stderr, "rf_slot_thief: %s\n(see the top of slot_thief.c)\n", why);
    return 2;
}

int main(int argc, char **argv)
{
    char *list = NULL;
    long id = -1, timeout_ms = 3000;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--ps"))
            list = argv[i + 1];
        else if (!strcmp(argv[i], "--id"))
            id = strtol(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--timeout_ms"))
            timeout_ms = strtol(argv[i + 1], NULL, 10);
        else
            return usage("unknown flag");
    }
    if (!list || id < 0 || timeout_ms <= 0 || argc % 2 != 1)
        return usage("--ps H:P[,H:P...] and --id N are required");
    const char *addrs[MAX_PS];
    size_t n = 0;
    for (char *save = NULL, *a = strtok_r(list, ",", &save); a && n < MAX_PS;
         a = strtok_r(NULL, ",", &save))
        addrs[n++] = a;
    char host[256];
    const char *colon = strrchr(addrs[0], ':');
    snprintf(host, sizeof host, "%.*s", (int)(colon - addrs[0]), addrs[0]);
    rf_fabric *fabric = NULL;
    rf_fabric_attr fa = {.bind_addr = host};
    if (rf_fabric_open(NULL, &fa, &fabric) != RF_OK) {
        fprintf(stderr, "rf_slot_thief: fabric: %s\n", rf_error_message());
        return 2;
    }
    rf_ps_client_options co = {.client_id = (uint32_t)id,
                               .connect_timeout_ms = (int)timeout_ms,
                               .op_timeout_ms = (int)timeout_ms};
    rf_ps_client *c = NULL;
    rf_status st = rf_ps_client_connect(fabric, addrs, n, &co, &c);
    if (st != RF_OK) {
        printf("refused: id %ld: %s: %s\n", id, rf_status_string(st),
               rf_error_message());
        rf_fabric_close(fabric);
        return 0;
    }
    int64_t gs = -1;
    char what[512];
    int k = snprintf(what, sizeof what,
                     "id %ld: connected to %zu ps task(s) over %s without "
                     "the secret",
                     id, n, rf_ps_client_provider(c, 0));
    st = rf_ps_global_step_read(c, &gs);
    if (st == RF_OK)
        k += snprintf(what + k, sizeof what - (size_t)k,
                      "; READ global_step = %lld", (long long)gs);
    else
        k += snprintf(what + k, sizeof what - (size_t)k,
                      "; READ global_step failed: %s", rf_error_message());
    int64_t before = -1;
    st = rf_ps_global_step_add(c, 0, &before);
    snprintf(what + k, sizeof what - (size_t)k, "; FETCH_AND_ADD %s",
             st == RF_OK ? "done" : rf_error_message());
    printf("SUCCEEDED: %s\n", what);
    rf_ps_client_close(c);
    rf_fabric_close(fabric);
    return 1;
}
