/* tools/launch/elastic.c: the workers of a running elastic job, changed
 * through the control socket (see elastic.h): "add N" appends N workers to
 * the task table (cluster.c gives each the next worker index, a port and
 * its command) and starts them as every task is started (task.c); "remove
 * N" / "remove worker:K" marks workers removed and sends them SIGTERM
 * (supervise.c then treats their end as leaving, not failing). */
#include "elastic.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "control.h"
#include "rdmaflow/env.h"
#include "task.h"

/* The chief: the "chief" task, else worker 0. */
static bool is_chief(const lt_elastic *s, const lt_task *t)
{
    return t->job == LT_JOB_CHIEF ||
           (!s->o->chief && t->job == LT_JOB_WORKER && t->index == 0);
}

/* A worker that may be removed: not the chief, running or waiting for a
 * restart, not removed yet. */
static bool removable(const lt_elastic *s, const lt_task *t)
{
    return t->job == LT_JOB_WORKER && !is_chief(s, t) && !t->removed &&
           (t->running || t->restart_at);
}

static void remove_task(lt_task *t)
{
    t->removed = true;
    if (t->restart_at) {
        t->restart_at = 0;
        lt_msg("%s: removed (--remove_worker) while waiting for its "
               "restart: not restarted",
               t->name);
        return;
    }
    lt_msg("%s: removing it from the job (--remove_worker): SIGTERM", t->name);
    kill(-t->pid, SIGTERM);
}

static int workers_left(const lt_elastic *s)
{
    int k = 0;
    for (int i = 0; i < *s->n; i++)
        k += s->t[i].job != LT_JOB_PS && !s->t[i].removed &&
             (s->t[i].running || s->t[i].restart_at);
    return k;
}

/* "the job has 3 workers now (the chief included)"; a static buffer. */
static const char *left_text(const lt_elastic *s)
{
    static char buf[96];
    int k = workers_left(s);
    snprintf(buf, sizeof buf,
             "the job has %d worker%s now (the chief "
             "included)",
             k, k == 1 ? "" : "s");
    return buf;
}

static void ctl_add(lt_elastic *s, int count, char *reply, size_t len)
{
    char err[256], names[LT_CONTROL_REPLY_MAX / 2] = "";
    size_t nl = 0;
    for (int k = 0; k < count; k++) {
        if (lt_cluster_add_worker(s->o, s->t, s->n, s->cap, err, sizeof err) !=
            0) {
            snprintf(reply, len, "error added %d of %d workers%s%s: %s", k,
                     count, k ? ": " : "", names, err);
            return;
        }
        lt_task *t = &s->t[*s->n - 1];
        if (lt_task_start(t, s->sig) != RF_OK) {
            t->removed = true; /* never started: not a worker to wait for */
            snprintf(reply, len, "error added %d of %d workers%s%s: %s: %s", k,
                     count, k ? ": " : "", names, t->name, rf_error_message());
            return;
        }
        lt_msg("%s: added to the job (--add_worker)", t->name);
        nl += (size_t)snprintf(names + nl, sizeof names - nl, "%s%s",
                               k ? ", " : "", t->name);
        if (nl >= sizeof names)
            nl = sizeof names - 1;
    }
    snprintf(reply, len, "ok started %s; %s", names, left_text(s));
}

static void ctl_remove(lt_elastic *s, int count, const char *task, char *reply,
                       size_t len)
{
    if (task) {
        bool chief_job = strncmp(task, "chief:", 6) == 0;
        int index = atoi(strchr(task, ':') + 1);
        for (int i = 0; i < *s->n; i++) {
            lt_task *t = &s->t[i];
            if ((chief_job ? t->job != LT_JOB_CHIEF
                           : t->job != LT_JOB_WORKER) ||
                t->index != index)
                continue;
            if (is_chief(s, t)) {
                snprintf(reply, len,
                         "error %s is the chief%s: it cannot be removed (it "
                         "ends the job)",
                         t->name,
                         t->job == LT_JOB_WORKER ? " (no --chief)" : "");
                return;
            }
            if (!removable(s, t)) {
                snprintf(reply, len, "error %s is not running%s", t->name,
                         t->removed ? " (already removed)" : "");
                return;
            }
            remove_task(t);
            snprintf(reply, len, "ok stopping %s; %s", t->name, left_text(s));
            return;
        }
        snprintf(reply, len, "error the job has no task %s", task);
        return;
    }
    int can = 0;
    for (int i = 0; i < *s->n; i++)
        can += removable(s, &s->t[i]);
    if (count > can) {
        snprintf(reply, len,
                 "error cannot remove %d worker%s: %d can go (the chief "
                 "stays)",
                 count, count == 1 ? "" : "s", can);
        return;
    }
    char names[LT_CONTROL_REPLY_MAX / 2] = "";
    size_t nl = 0;
    for (int k = 0; k < count; k++) {
        lt_task *best = NULL;
        for (int i = 0; i < *s->n; i++)
            if (removable(s, &s->t[i]) &&
                (!best || s->t[i].index > best->index))
                best = &s->t[i];
        remove_task(best);
        nl += (size_t)snprintf(names + nl, sizeof names - nl, "%s%s",
                               k ? ", " : "", best->name);
        if (nl >= sizeof names)
            nl = sizeof names - 1;
    }
    snprintf(reply, len, "ok stopping %s; %s", names, left_text(s));
}

void lt_elastic_request(lt_elastic *s, const char *req, char *reply, size_t len)
{
    int count = 0;
    char task[48] = "", extra;
    bool add = sscanf(req, "add %d %c", &count, &extra) == 1;
    bool rm_count = !add && sscanf(req, "remove %d %c", &count, &extra) == 1;
    bool rm_task = !add && !rm_count &&
                   sscanf(req, "remove %47[a-z]:%*d%c", task, &extra) == 1;
    if (!add && !rm_count && !rm_task) {
        snprintf(reply, len, "error unknown request '%s'", RF_ECHO(req));
        return;
    }
    if (!s->o->elastic) {
        snprintf(reply, len,
                 "error this job is not elastic (its program has no "
                 "--elastic): workers are added and removed only in an "
                 "elastic (async) job");
        return;
    }
    if (s->o->hostfile) {
        snprintf(reply, len,
                 "error workers are added and removed only in a job on "
                 "this host (not with --hostfile)");
        return;
    }
    if (!s->running) {
        snprintf(reply, len,
                 "error the job is ending: no worker is added or removed "
                 "now");
        return;
    }
    if (count < 1 && !rm_task) {
        snprintf(reply, len, "error the count must be at least 1");
        return;
    }
    if (add)
        ctl_add(s, count, reply, len);
    else
        ctl_remove(s, count, rm_task ? req + 7 : NULL, reply, len);
}
