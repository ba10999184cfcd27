/* tools/launch/cluster.c: names, hosts, ports, argv and TF_CONFIG of every
 * task. The host lists are "host:port,..." (an IPv6 address in brackets) in
 * task index order, the same for every task; with --hostfile the tasks are
 * placed on its hosts and their argv wrapped in ssh (remote.c). */
#include "cluster.h"

#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hostfile.h"
#include "ports.h"
#include "remote.h"

static const char *job_str(lt_job j)
{
    return j == LT_JOB_PS ? "ps" : j == LT_JOB_CHIEF ? "chief" : "worker";
}

/* "host:p1,host:p2" for the tasks of job j; malloc'd. */
static char *host_list(const lt_task *t, int n, lt_job j)
{
    size_t cap = 1, len = 0;
    for (int i = 0; i < n; i++)
        cap += strlen(t[i].host) + 10;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    s[0] = '\0';
    for (int i = 0; i < n; i++) {
        bool v6 = strchr(t[i].host, ':') != NULL;
        if (t[i].job == j)
            len += (size_t)snprintf(s + len, cap - len, "%s%s%s%s:%d",
                                    len ? "," : "", v6 ? "[" : "", t[i].host,
                                    v6 ? "]" : "", t[i].port);
    }
    return s;
}

static char *tf_config_json(const lt_task *t, int n, const lt_task *self)
{
    json_object *root = json_object_new_object();
    json_object *cluster = json_object_new_object();
    static const lt_job jobs[] = {LT_JOB_PS, LT_JOB_CHIEF, LT_JOB_WORKER};
    for (size_t j = 0; j < sizeof jobs / sizeof jobs[0]; j++) {
        json_object *list = NULL;
        for (int i = 0; i < n; i++) {
            if (t[i].job != jobs[j])
                continue;
            char addr[300];
            bool v6 = strchr(t[i].host, ':') != NULL;
            snprintf(addr, sizeof addr, "%s%s%s:%d", v6 ? "[" : "", t[i].host,
                     v6 ? "]" : "", t[i].port);
            if (!list)
                list = json_object_new_array();
            json_object_array_add(list, json_object_new_string(addr));
        }
        if (list)
            json_object_object_add(cluster, job_str(jobs[j]), list);
    }
    json_object_object_add(root, "cluster", cluster);
    json_object *task = json_object_new_object();
    json_object_object_add(task, "type",
                           json_object_new_string(job_str(self->job)));
    json_object_object_add(task, "index", json_object_new_int(self->index));
    json_object_object_add(root, "task", task);
    char *s = strdup(json_object_to_json_string_ext(
        root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(root);
    return s;
}

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));

static char *fmt(const char *f, ...)
{
    char *s = NULL;
    va_list ap;
    va_start(ap, f);
    int rc = vasprintf(&s, f, ap);
    va_end(ap);
    return rc < 0 ? NULL : s;
}

static int build_argv(const lt_opts *o, lt_task *t, const char *ps_hosts,
                      const char *worker_hosts)
{
    int extra = 6;
    t->argv = calloc((size_t)(o->prog_argc + extra + 1), sizeof *t->argv);
    if (!t->argv)
        return -1;
    int k = 0;
    for (int i = 0; i < o->prog_argc; i++)
        if (!(t->argv[k++] = strdup(o->prog[i])))
            return -1;
    if (!o->tf_config) {
        if (o->ps > 0 && !(t->argv[k++] = fmt("--ps_hosts=%s", ps_hosts)))
            return -1;
        if (!(t->argv[k++] = fmt("--worker_hosts=%s", worker_hosts)) ||
            !(t->argv[k++] = fmt("--job_name=%s", job_str(t->job))) ||
            !(t->argv[k++] = fmt("--task_index=%d", t->index)))
            return -1;
    }
    if (t->trace_path && !(t->argv[k++] = fmt("--trace=%s", t->trace_path)))
        return -1;
    if (t->metrics_path &&
        !(t->argv[k++] = fmt("--metrics_out=%s", t->metrics_path)))
        return -1;
    return 0;
}

/* --hostfile: the tasks in start order fill each host's slots in turn
 * (Open MPI's --map-by slot). The host names live in the first task's
 * hostfile copy (freed with the table). -2 for a usage error. */
static int place_on_hosts(const lt_opts *o, lt_task *t, int total, char *err,
                          size_t errlen)
{
    lt_hostfile *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (lt_hostfile_read(o->hostfile, h, err, errlen) != 0) {
        free(h);
        return -2;
    }
    t[0].hosts = h;
    int slots = 0;
    for (int i = 0; i < h->n; i++)
        slots += h->slots[i];
    if (slots < total) {
        snprintf(err, errlen,
                 "--hostfile: %s has %d slot%s for %d tasks (give its hosts "
                 "more with slots=N)",
                 o->hostfile, slots, slots == 1 ? "" : "s", total);
        return -2;
    }
    for (int i = 0, hi = 0, used = 0; i < total; i++, used++) {
        if (used == h->slots[hi]) {
            hi++;
            used = 0;
        }
        t[i].host = h->host[hi];
        t[i].remote = true;
    }
    return 0;
}

/* Task i's trace and metrics paths, TF_CONFIG and argv, from the table's
 * first n tasks; -1 out of memory. */
static int task_command(const lt_opts *o, lt_task *t, int n, int i,
                        const char *ps_hosts, const char *worker_hosts)
{
    if (o->trace && !(t[i].trace_path = fmt("%s.%s.json", o->trace, t[i].name)))
        return -1;
    const char *mdir = o->metrics_dir ? o->metrics_dir : o->plot_dir;
    if (mdir && !(t[i].metrics_path = fmt("%s/%s.jsonl", mdir, t[i].name)))
        return -1;
    if (o->tf_config && !(t[i].tf_config = tf_config_json(t, n, &t[i])))
        return -1;
    if (build_argv(o, &t[i], ps_hosts, worker_hosts) != 0 ||
        (t[i].remote && lt_remote_wrap(o, &t[i]) != 0))
        return -1;
    return 0;
}

static void task_init(lt_task *t, const lt_opts *o,
                      const struct lt_secret *secret)
{
    snprintf(t->prefix, sizeof t->prefix, "[%s] ", t->name);
    t->port_fd = -1;
    t->stdin_fd = -1;
    t->out.in_fd = t->err.in_fd = -1;
    t->host = o->host;
    t->secret = secret;
}

static void task_free(lt_task *t);

int lt_cluster_add_worker(const lt_opts *o, lt_task *t, int *n, int cap,
                          char *err, size_t errlen)
{
    if (*n >= cap) {
        snprintf(err, errlen,
                 "the job already had %d workers added (the limit of "
                 "rf-launch --add_worker is %d)",
                 LT_MAX_ADDED_WORKERS, LT_MAX_ADDED_WORKERS);
        return -1;
    }
    int next = 0;
    for (int i = 0; i < *n; i++)
        if (t[i].job == LT_JOB_WORKER && t[i].index >= next)
            next = t[i].index + 1;
    lt_task *w = &t[*n];
    memset(w, 0, sizeof *w);
    w->job = LT_JOB_WORKER;
    w->index = next;
    snprintf(w->name, sizeof w->name, "worker%d", next);
    task_init(w, o, t[0].secret);
    int fd, port;
    if (lt_ports_reserve(o->host, 1, &fd, &port, err, errlen) != 0)
        return -1;
    w->port_fd = fd;
    w->port = port;
    /* The new worker's cluster: every worker so far (those removed too:
     * indices are never reused) and itself; the others keep theirs (an
     * elastic ps admits any worker id). */
    char *ps_hosts = host_list(t, *n + 1, LT_JOB_PS);
    char *worker_hosts = host_list(t, *n + 1, LT_JOB_WORKER);
    int rc = ps_hosts && worker_hosts
                 ? task_command(o, t, *n + 1, *n, ps_hosts, worker_hosts)
                 : -1;
    free(ps_hosts);
    free(worker_hosts);
    if (rc != 0) {
        snprintf(err, errlen, "out of memory");
        task_free(w);
        memset(w, 0, sizeof *w);
        return -1;
    }
    (*n)++;
    return 0;
}

int lt_cluster_capacity(const lt_opts *o)
{
    return o->ps + (o->chief ? 1 : 0) + o->workers +
           (o->elastic ? LT_MAX_ADDED_WORKERS : 0);
}

int lt_cluster_create(const lt_opts *o, const struct lt_secret *secret,
                      lt_task **tasks, int *n, char *err, size_t errlen)
{
    int total = o->ps + (o->chief ? 1 : 0) + o->workers;
    /* an elastic job's table has room for the workers added later: a
     * task never moves (its output lines point at its prefix) */
    int cap = lt_cluster_capacity(o);
    lt_task *t = calloc((size_t)cap, sizeof *t);
    int *fds = calloc((size_t)total, sizeof *fds);
    int *ports = calloc((size_t)total, sizeof *ports);
    char *ps_hosts = NULL, *worker_hosts = NULL;
    int rc = -1;
    if (!t || !fds || !ports) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    int k = 0;
    for (int i = 0; i < o->ps; i++, k++) {
        t[k].job = LT_JOB_PS;
        t[k].index = i;
        snprintf(t[k].name, sizeof t[k].name, "ps%d", i);
    }
    if (o->chief) {
        t[k].job = LT_JOB_CHIEF;
        snprintf(t[k].name, sizeof t[k].name, "chief");
        k++;
    }
    for (int i = 0; i < o->workers; i++, k++) {
        t[k].job = LT_JOB_WORKER;
        t[k].index = i;
        snprintf(t[k].name, sizeof t[k].name, "worker%d", i);
    }
    for (int i = 0; i < total; i++)
        task_init(&t[i], o, secret);
    if (o->hostfile) {
        int hrc = place_on_hosts(o, t, total, err, errlen);
        if (hrc != 0) {
            rc = hrc;
            goto out;
        }
    }
    if (o->port_base > 0) {
        for (int i = 0; i < total; i++)
            t[i].port = o->port_base + i;
    } else {
        /* --hostfile: ports free here, a guess for the other machines */
        int prc = lt_ports_reserve(o->hostfile ? "0.0.0.0" : o->host, total,
                                   fds, ports, err, errlen);
        if (prc != 0) {
            rc = prc;
            goto out;
        }
        for (int i = 0; i < total; i++) {
            t[i].port_fd = fds[i];
            t[i].port = ports[i];
        }
    }
    ps_hosts = host_list(t, total, LT_JOB_PS);
    worker_hosts = host_list(t, total, LT_JOB_WORKER);
    if (!ps_hosts || !worker_hosts) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    for (int i = 0; i < total; i++)
        if (task_command(o, t, total, i, ps_hosts, worker_hosts) != 0) {
            snprintf(err, errlen, "out of memory");
            goto out;
        }
    rc = 0;
out:
    free(fds);
    free(ports);
    free(ps_hosts);
    free(worker_hosts);
    if (rc != 0 && t) {
        lt_cluster_free(t, total);
        t = NULL;
    }
    *tasks = t;
    *n = rc == 0 ? total : 0;
    return rc;
}

/* What task t owns (not the table). */
static void task_free(lt_task *t)
{
    if (t->port_fd >= 0)
        close(t->port_fd);
    if (t->stdin_fd >= 0)
        close(t->stdin_fd);
    if (t->hosts) {
        lt_hostfile_free(t->hosts);
        free(t->hosts);
    }
    for (char **a = t->argv; a && *a; a++)
        free(*a);
    free(t->argv);
    free(t->tf_config);
    free(t->trace_path);
    free(t->metrics_path);
    if (t->out.in_fd >= 0)
        close(t->out.in_fd);
    if (t->err.in_fd >= 0)
        close(t->err.in_fd);
    free(t->out.buf);
    free(t->err.buf);
}

void lt_cluster_free(lt_task *tasks, int n)
{
    if (!tasks)
        return;
    for (int i = 0; i < n; i++)
        task_free(&tasks[i]);
    free(tasks);
}
