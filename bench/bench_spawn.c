/* bench/bench_spawn.c: start and reap --loopback's server child (see
 * bench_spawn.h); the process handling is rdmaflow/spawn.h's. */
#include "bench_spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int bench_spawn_server(const bench_opts *o, rf_child *server, uint16_t *port)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC)) {
        fprintf(stderr, "rf-bench: pipe: %s\n", strerror(errno));
        return -1;
    }
    char toarg[16], qparg[16];
    snprintf(toarg, sizeof toarg, "%d", o->timeout_s);
    snprintf(qparg, sizeof qparg, "%u", (unsigned)o->qps);
    const char *argv[20];
    int n = 0;
    argv[n++] = "rf-bench";
    argv[n++] = "--serve";
    argv[n++] = "--host";
    argv[n++] = o->host;
    argv[n++] = "--port";
    argv[n++] = "0";
    argv[n++] = "--ready-fd";
    argv[n++] = "3";
    argv[n++] = "--timeout";
    argv[n++] = toarg;
    if (o->provider) {
        argv[n++] = "--provider";
        argv[n++] = o->provider;
    }
    argv[n++] = "--poll";
    argv[n++] = o->poll;
    argv[n++] = "--progress";
    argv[n++] = o->progress == RF_PROGRESS_MANUAL ? "manual" : "auto";
    if (o->qps > BENCH_DEFAULT_MAX_QPS) { /* the child's bound: this run's */
        argv[n++] = "--max-qps";
        argv[n++] = qparg;
    }
    argv[n] = NULL;

    rf_spawn_opts so = {.argv = argv,
                        .path = RF_SPAWN_SELF,
                        .die_with_parent = true,
                        .keep = &(rf_spawn_fd){fds[1], 3},
                        .nkeep = 1};
    rf_status st = rf_spawn(&so, server);
    close(fds[1]); /* the child holds the only write end now */
    if (st != RF_OK) {
        fprintf(stderr, "rf-bench: cannot start the loopback server: %s\n",
                rf_error_message());
        close(fds[0]);
        return -1;
    }
    st = rf_spawn_read_port(fds[0], NULL, (int64_t)o->timeout_s * 1000, port);
    close(fds[0]);
    if (st != RF_OK) {
        fprintf(stderr, "rf-bench: the loopback server did not start "
                        "listening\n");
        bench_reap_server(server, true, 5);
        return -1;
    }
    return 0;
}

int bench_reap_server(rf_child *server, bool terminate, int timeout_s)
{
    int status = 0;
    bool killed = false;
    rf_status st = rf_child_stop(server, terminate ? SIGTERM : 0,
                                 (int64_t)timeout_s * 1000, &status, &killed);
    if (killed)
        fprintf(stderr, "rf-bench: the loopback server did not exit; "
                        "killing it\n");
    if (st != RF_OK) {
        fprintf(stderr, "rf-bench: %s\n", rf_error_message());
        return -1;
    }
    return !killed && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
