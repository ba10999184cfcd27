/* bench/pullpush/pp_ps.c: the ps task role and how the client starts and
 * reaps it (pp_ps.h). */
#include "pp_ps.h"

#include "bench_ps_task.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The parent learnt the port: the ready pipe is done with. */
static int close_ready(rf_ps_server *s, void *arg)
{
    (void)s;
    close(*(const int *)arg);
    return 0;
}

int pp_ps_serve(const pp_opts *o)
{
    return bench_ps_task_serve("rf-bench-pullpush", o->provider, o->host,
                               o->ps_index, o->ready_fd, close_ready,
                               (void *)&o->ready_fd);
}

int pp_ps_spawn(const pp_opts *o, int index, rf_child *child, uint16_t *port)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC)) {
        fprintf(stderr, "rf-bench-pullpush: pipe: %s\n", strerror(errno));
        return -1;
    }
    char idx[16];
    snprintf(idx, sizeof idx, "%d", index);
    const char *argv[] = {"rf-bench-pullpush",
                          "--serve-ps",
                          "--index",
                          idx,
                          "--ready-fd",
                          "3",
                          "--provider",
                          o->provider,
                          "--host",
                          o->host,
                          NULL};
    rf_spawn_opts so = {
        .argv = argv,
        .path = RF_SPAWN_SELF,
        .die_with_parent = true,
        .stdio = {RF_SPAWN_DEVNULL, RF_SPAWN_INHERIT, RF_SPAWN_INHERIT},
        .keep = &(rf_spawn_fd){fds[1], 3},
        .nkeep = 1};
    rf_status st = rf_spawn(&so, child);
    close(fds[1]);
    if (st != RF_OK) {
        fprintf(stderr, "rf-bench-pullpush: cannot start ps task %d: %s\n",
                index, rf_error_message());
        close(fds[0]);
        return -1;
    }
    st =
        rf_spawn_read_port(fds[0], "port ", (int64_t)o->timeout_s * 1000, port);
    close(fds[0]);
    if (st != RF_OK) {
        fprintf(stderr,
                "rf-bench-pullpush: ps task %d did not start listening: %s\n",
                index, rf_error_message());
        pp_ps_reap(child, true, 5);
        return -1;
    }
    return 0;
}

int pp_ps_reap(rf_child *child, bool terminate, int timeout_s)
{
    return bench_ps_task_reap("rf-bench-pullpush", child, terminate, timeout_s);
}
