/* bench/pullpush/pp_ps.c: the ps task role and how the client starts and
 * reaps it (pp_ps.h). */
#include "pp_ps.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rdmaflow/fabric.h"
#include "rdmaflow/ps.h"

int pp_ps_serve(const pp_opts *o)
{
    rf_fabric_attr attr = {.bind_addr = o->host};
    rf_fabric *f = NULL;
    rf_ps_server *s = NULL;
    rf_status st = rf_fabric_open(o->provider, &attr, &f);
    if (st == RF_OK) {
        rf_ps_server_options so = {.task_index = o->ps_index};
        st = rf_ps_server_start(f, o->host, 0, &so, &s);
    }
    if (st != RF_OK) {
        fprintf(stderr, "rf-bench-pullpush: ps task %d: %s\n", o->ps_index,
                rf_error_message());
        if (f)
            rf_fabric_close(f);
        return 1;
    }
    char line[32];
    int len = snprintf(line, sizeof line, "port %u\n", rf_ps_server_port(s));
    int rc = 0;
    if (write(o->ready_fd, line, (size_t)len) != len) {
        fprintf(stderr, "rf-bench-pullpush: ps task %d: ready pipe: %s\n",
                o->ps_index, strerror(errno));
        rc = 1;
    }
    close(o->ready_fd);
    if (rc == 0) {
        st = rf_ps_server_join(s);
        if (st != RF_OK) {
            fprintf(stderr, "rf-bench-pullpush: ps task %d: %s\n", o->ps_index,
                    rf_error_message());
            rc = 1;
        }
    }
    rf_ps_server_stop(s);
    rf_fabric_close(f);
    return rc;
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
    int status = 0;
    bool killed = false;
    rf_status st = rf_child_stop(child, terminate ? SIGTERM : 0,
                                 (int64_t)timeout_s * 1000, &status, &killed);
    if (st != RF_OK) {
        fprintf(stderr, "rf-bench-pullpush: %s\n", rf_error_message());
        return -1;
    }
    if (killed)
        fprintf(stderr, "rf-bench-pullpush: a ps task did not exit; killed "
                        "it\n");
    return !killed && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
