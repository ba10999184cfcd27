/* tools/trainer/elastic.c: an elastic worker's way out (--elastic, or a
 * TF_CONFIG sparseCluster; async training). SIGTERM (Kubernetes' scale
 * down, a preemption notice) only sets a flag: the training loop finishes
 * its current step, sees tr_elastic_stop_requested, sends LEAVE to ps task
 * 0 (so the chief does not wait for it at the end) and the worker exits 0.
 * Installed for elastic non-chief workers only; every other task keeps
 * the trainer's usual SIGTERM handling (main.c). */
#include <signal.h>
#include <string.h>

#include "dist.h"

static volatile sig_atomic_t stop_requested;

static void on_sigterm(int sig)
{
    (void)sig;
    stop_requested = 1;
}

int tr_elastic_install_sigterm(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigterm;
    sigemptyset(&sa.sa_mask);
    /* restart interrupted calls: the step in flight completes normally */
    sa.sa_flags = SA_RESTART;
    return sigaction(SIGTERM, &sa, NULL);
}

bool tr_elastic_stop_requested(void)
{
    return stop_requested != 0;
}
