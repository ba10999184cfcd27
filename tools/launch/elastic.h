/* tools/launch/elastic.h: adding and removing the workers of a running
 * elastic job (rf-launch --add_worker / --remove_worker; control.h has
 * the requests). */
#ifndef RF_LAUNCH_ELASTIC_H
#define RF_LAUNCH_ELASTIC_H

#include <stdbool.h>
#include <stddef.h>

#include "launch.h"
#include "task.h"

/* What a request may change: the task table (room for cap tasks, *n
 * used), how tasks start, and whether the job still runs (a job that is
 * ending refuses changes). */
typedef struct lt_elastic {
    lt_task *t;
    int *n;
    int cap;
    const lt_opts *o;
    const lt_sigstate *sig;
    bool running;
} lt_elastic;

/* Answers one request line of control.h into reply ("ok ..." or "error
 * ..."): refused for a job that is not elastic (o->elastic), a --hostfile
 * job, a job that is ending, the chief, more workers than can go. Added
 * workers are started at once (lt_task_start); removed ones get SIGTERM
 * to their process group and t->removed, or lose a pending restart. */
void lt_elastic_request(lt_elastic *e, const char *req, char *reply,
                        size_t len);

#endif
