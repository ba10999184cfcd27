/* bench/rf_bench.c: rf-bench, latency and bandwidth microbenchmarks of the
 * rdmaflow fabric API measured as perftest measures them. main() picks the
 * role: --serve, --connect HOST[:PORT] TEST, or --loopback TEST (a server
 * child plus the client, one command for one figure). */
#include <signal.h>
#include <stdio.h>

#include "bench_client.h"
#include "bench_clock.h"
#include "bench_opts.h"
#include "bench_server.h"
#include "bench_spawn.h"
#include "rdmaflow/env.h"

int main(int argc, char **argv)
{
    /* A malformed RF_LOG_LEVEL (or an RF_LOG_FILE that cannot be opened)
     * is a usage error, before anything runs. */
    if (rf_log_env_check() != RF_OK) {
        fprintf(stderr, "rf-bench: %s\n", rf_error_message());
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    bench_opts o;
    int rc = bench_opts_parse(argc, argv, &o);
    if (rc == 1)
        return 0;
    if (rc)
        return 2;
    bench_clock_init(o.timer_tsc);
    bench_opts_apply_env(&o);

    switch (o.mode) {
    case BENCH_MODE_SERVE:
        return bench_server(&o);
    case BENCH_MODE_CONNECT:
        return bench_client(&o, o.host, o.port);
    case BENCH_MODE_LOOPBACK: {
        rf_child child;
        uint16_t port;
        fflush(stdout); /* nothing buffered is duplicated in the child */
        if (bench_spawn_server(&o, &child, &port))
            return 1;
        int client = bench_client(&o, o.host, port);
        int server = bench_reap_server(&child, client != 0, o.timeout_s);
        if (client == 0 && server != 0)
            fprintf(stderr,
                    "rf-bench: the loopback server failed (exit "
                    "status %d)\n",
                    server);
        return client != 0 || server != 0 ? 1 : 0;
    }
    case BENCH_MODE_NONE:
        break;
    }
    return 2;
}
