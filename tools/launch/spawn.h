/* tools/launch/spawn.h: starting one task. */
#ifndef RF_LAUNCH_SPAWN_H
#define RF_LAUNCH_SPAWN_H

#include <signal.h>

#include "launch.h"

/* The signal state rf-launch started with, restored in every task. */
typedef struct lt_sigstate {
    sigset_t mask;
    struct sigaction pipe; /* SIGPIPE, which rf-launch ignores */
} lt_sigstate;

/* Starts task t (fork + execvp of t->argv) as the leader of its own process
 * group, with PR_SET_PDEATHSIG(SIGKILL) so it dies with rf-launch, the
 * signal state of sig, stdin from /dev/null, stdout and stderr into pipes
 * whose read ends (non-blocking) go to t->out and t->err, forwarding to
 * rf-launch's stdout and stderr, and TF_CONFIG set to t->tf_config (or
 * removed from the environment in flags mode). Closes t->port_fd first so
 * the task can bind its port. Returns 0, or -1 with err set (including when
 * the program cannot be executed; the child is then reaped). */
int lt_spawn(lt_task *t, const lt_sigstate *sig, char *err, size_t errlen);

#endif
