/* cluster/cluster.c: rf_cluster_resolve (flags over TF_CONFIG, field by
 * field; or Slurm/MPI ranks with --num_ps; the task checked against the
 * cluster; chief and worker ids as TF derives them) and the queries on the
 * result. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster/cluster_internal.h"
#include "core/log.h"
#include "rdmaflow/status.h"

/* Names of the jobs present, "ps, worker". */
static void job_list(const cl_jobs *jobs, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int j = 0; j < CL_NJOBS && o < len; j++) {
        if (!jobs->job[j].present)
            continue;
        int n =
            snprintf(buf + o, len - o, "%s%s", o ? ", " : "", cl_job_names[j]);
        if (n < 0)
            break;
        o += (size_t)n;
    }
}

/* The cluster from the flags (both host lists are required together). */
static rf_status cluster_from_flags(const rf_cluster_flags *f, cl_jobs *jobs)
{
    if (!f->ps_hosts)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "--ps_hosts: missing (required with "
                            "--worker_hosts)");
    if (!f->worker_hosts)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "--worker_hosts: missing (required with "
                            "--ps_hosts)");
    rf_status st = cl_parse_host_list("--ps_hosts", f->ps_hosts, CL_PS, jobs);
    if (st == RF_OK)
        st = cl_parse_host_list("--worker_hosts", f->worker_hosts, CL_WORKER,
                                jobs);
    if (st == RF_OK)
        st = cl_jobs_check(jobs, "--ps_hosts/--worker_hosts");
    return st;
}

/* Chief (chief job's task, else worker 0), worker ids (id_in_cluster). */
static void assign_roles(rf_cluster *c)
{
    cl_jobs *js = &c->jobs;
    int nchief = js->job[CL_CHIEF].n;
    for (int j = 0; j < CL_NJOBS; j++) {
        for (int i = 0; i < js->job[j].n; i++) {
            rf_cluster_task *t = &js->job[j].tasks[i];
            t->job = cl_job_names[j];
            t->is_chief = false;
            t->worker_id = j == CL_CHIEF    ? 0
                           : j == CL_WORKER ? t->index + nchief
                                            : -1;
        }
    }
    rf_cluster_task *chief = nchief ? &js->job[CL_CHIEF].tasks[0]
                                    : cl_job_find(&js->job[CL_WORKER], 0);
    if (!chief) {
        /* a sparse cluster that does not list worker 0: it is the chief,
         * at an address this task does not know */
        c->unknown_chief = (rf_cluster_task){
            .job = cl_job_names[CL_WORKER], .index = 0, .worker_id = 0};
        chief = &c->unknown_chief;
    }
    chief->is_chief = true;
    c->chief = chief;
    c->num_desc = 0;
    for (int j = 0; j < CL_NJOBS; j++)
        if (js->job[j].present)
            c->desc[c->num_desc++] =
                (rf_cluster_job){cl_job_names[j], cl_job_slots(&js->job[j])};
}

/* Without a cluster only Estimator's local task (worker 0) may be given. */
static rf_status check_local(const rf_cluster_flags *f, const cl_tfconfig *tf)
{
    static const char *const need = "give --ps_hosts and --worker_hosts, or "
                                    "a TF_CONFIG with a \"cluster\"";
    if (f->job_name)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "--job_name: given without a cluster (%s)", need);
    if (f->task_index)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "--task_index: given without a cluster (%s)", need);
    if (tf->has_task && ((tf->task_job >= 0 && tf->task_job != CL_WORKER) ||
                         (tf->has_index && tf->task_index != 0)))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "TF_CONFIG: task is %s %d but there is no "
                            "cluster (%s; a local run allows only the task "
                            "{\"type\": \"worker\", \"index\": 0})",
                            tf->task_job >= 0 ? cl_job_names[tf->task_job]
                                              : "worker",
                            tf->has_index ? tf->task_index : 0, need);
    return RF_OK;
}

/* The task's job and index, each from its flag or else TF_CONFIG. */
static rf_status pick_task(const rf_cluster_flags *f, const cl_tfconfig *tf,
                           bool flag_cluster, int *job, const char **job_src,
                           int *index, const char **index_src)
{
    *job = -1;
    *index = -1;
    if (f->job_name) {
        if (!*f->job_name)
            return rf_error_set(RF_ERR_INVALID_ARG, "--job_name is empty");
        if ((*job = cl_job_lookup(f->job_name)) < 0)
            return cl_unknown_job("--job_name", f->job_name);
        *job_src = "--job_name";
        if (tf->task_job >= 0)
            RF_LOG_INFO("cluster: --job_name=%s overrides TF_CONFIG's "
                        "task.type \"%s\"",
                        f->job_name, cl_job_names[tf->task_job]);
    } else if (tf->task_job >= 0) {
        *job = tf->task_job;
        *job_src = "TF_CONFIG: task.type";
    } else if (flag_cluster && !tf->has_task) {
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "--job_name: missing (required with --ps_hosts "
                            "and --worker_hosts)");
    } else if (!tf->has_task) {
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "TF_CONFIG: no \"task\" section (and no "
                            "--job_name): which task is this process?");
    } else {
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "TF_CONFIG: task has no \"type\" (and no "
                            "--job_name)");
    }

    if (f->task_index) {
        rf_status st = cl_parse_index(f->task_index, "--task_index", index);
        if (st != RF_OK)
            return st;
        *index_src = "--task_index";
        if (tf->has_index)
            RF_LOG_INFO("cluster: --task_index=%d overrides TF_CONFIG's "
                        "task.index %d",
                        *index, tf->task_index);
    } else if (tf->has_index) {
        *index = tf->task_index;
        *index_src = "TF_CONFIG: task.index";
    } else if (f->job_name) {
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "--task_index: missing (required with "
                            "--job_name)");
    } else {
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "TF_CONFIG: task has no \"index\" (and no "
                            "--task_index)");
    }
    return RF_OK;
}

/* The task must be listed (an evaluator need not be: TFJob and Estimator
 * keep it out of the training cluster). */
static rf_status place_task(rf_cluster *c, int job, const char *job_src,
                            int index, const char *index_src,
                            const char *cluster_src)
{
    const cl_job *jb = &c->jobs.job[job];
    if (!jb->present && job == CL_EVALUATOR) {
        c->outside = (rf_cluster_task){
            .job = cl_job_names[job], .index = index, .worker_id = -1};
        c->self = &c->outside;
        return RF_OK;
    }
    if (!jb->present) {
        char jobs[64];
        job_list(&c->jobs, jobs, sizeof jobs);
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: job \"%s\" is not in the cluster (jobs in "
                            "%s: %s)",
                            job_src, cl_job_names[job], cluster_src, jobs);
    }
    if (jb->sparse) {
        rf_cluster_task *t = cl_job_find(jb, index);
        if (!t)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "%s: %d is not in %s (a sparseCluster names "
                                "the task itself)",
                                index_src, index, jb->where);
        c->self = t;
        return RF_OK;
    }
    if (index >= jb->n)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: %d is out of range for job \"%s\" (%s has "
                            "%d task%s: 0-%d)",
                            index_src, index, cl_job_names[job], jb->where,
                            jb->n, jb->n == 1 ? "" : "s", jb->n - 1);
    c->self = &jb->tasks[index];
    return RF_OK;
}

static void set_source(rf_cluster *c, const char *cluster_src,
                       const char *job_src, const char *index_src)
{
    bool jf = job_src[0] == '-', xf = index_src[0] == '-';
    const char *task_src = jf && xf     ? "--job_name/--task_index"
                           : !jf && !xf ? "TF_CONFIG"
                                        : NULL;
    if (task_src)
        snprintf(c->source, sizeof c->source, "cluster from %s, task from %s",
                 cluster_src, task_src);
    else
        snprintf(c->source, sizeof c->source,
                 "cluster from %s, task from %s and %s", cluster_src, job_src,
                 index_src);
}

/* TFJob's sparseCluster, once the task is known: a worker needs the ps
 * list and is in the worker map; a ps's one-entry list is itself (at its
 * own index); a chief or evaluator gets no ps list from the operator. */
static rf_status settle_sparse(rf_cluster *c, int job, int index)
{
    cl_job *ps = &c->jobs.job[CL_PS];
    c->sparse = true;
    if (job != CL_PS && job != CL_WORKER)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "TF_CONFIG: task type \"%s\" with a "
                            "sparseCluster: TFJob's enableDynamicWorker "
                            "gives only ps and worker tasks a usable one "
                            "(a chief gets no ps addresses); use worker 0 "
                            "as the chief",
                            cl_job_names[job]);
    if (ps->n == 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "TF_CONFIG: sparseCluster.ps is empty: a %s "
                            "task needs %s",
                            cl_job_names[job],
                            job == CL_PS ? "its own address there"
                                         : "every ps task's address");
    if (job == CL_PS && ps->n == 1) {
        ps->sparse = true;
        ps->tasks[0].index = index;
    }
    return RF_OK;
}

/* --num_ps/--port_base come alone: every other source is an error. */
static rf_status check_launcher_alone(const rf_cluster_flags *f,
                                      const cl_tfconfig *tf)
{
    const char *lf = f->num_ps ? "--num_ps" : "--port_base";
    const char *other = f->ps_hosts       ? "--ps_hosts"
                        : f->worker_hosts ? "--worker_hosts"
                        : f->job_name     ? "--job_name"
                        : f->task_index   ? "--task_index"
                                          : NULL;
    if (other)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: not with %s (%s takes the cluster and the "
                            "task from Slurm's or MPI's rank; %s gives them "
                            "itself: drop one)",
                            lf, other, lf, other);
    if (tf->has_cluster || tf->has_task)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: not with TF_CONFIG's %s (%s takes the "
                            "cluster and the task from Slurm's or MPI's rank: "
                            "unset TF_CONFIG or drop %s)",
                            lf, tf->has_cluster ? "cluster" : "task", lf, lf);
    return RF_OK;
}

/* The cluster and task from Slurm or MPI (--num_ps given). */
static rf_status from_launcher(const rf_cluster_flags *f, const cl_tfconfig *tf,
                               char *const *envp, rf_cluster *c)
{
    int num_ps, port_base;
    cl_launch l;
    memset(&l, 0, sizeof l);
    rf_status st = check_launcher_alone(f, tf);
    if (st == RF_OK)
        st = cl_launcher_flags(f, &num_ps, &port_base);
    if (st == RF_OK)
        st = cl_resolve_launcher(envp, num_ps, port_base, &l, &c->jobs);
    if (st == RF_OK) {
        assign_roles(c);
        st = place_task(c, l.job, "rank", l.index, "rank", l.source);
    }
    if (st == RF_OK)
        snprintf(c->source, sizeof c->source,
                 "cluster and task from %s, --num_ps %d, --port_base %d",
                 l.source, num_ps, port_base);
    cl_launch_free(&l);
    return st;
}

static rf_status resolve(const rf_cluster_flags *flags, const char *tf_config,
                         char *const *envp, rf_cluster **out)
{
    static const rf_cluster_flags none;
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_cluster_resolve: no out");
    *out = NULL;
    if (!flags)
        flags = &none;
    cl_tfconfig tf;
    memset(&tf, 0, sizeof tf);
    tf.task_job = -1;
    rf_status st = RF_OK;
    if (tf_config && *tf_config && (st = cl_parse_tfconfig(tf_config, &tf)))
        return st;
    if (flags->num_ps || flags->port_base) {
        rf_cluster *c = calloc(1, sizeof *c);
        st = c ? from_launcher(flags, &tf, envp, c)
               : rf_error_set(RF_ERR_NO_MEMORY, "cluster: out of memory");
        cl_jobs_free(&tf.jobs);
        if (st != RF_OK) {
            rf_cluster_destroy(c);
            return st;
        }
        *out = c;
        return RF_OK;
    }

    rf_cluster *c = calloc(1, sizeof *c);
    if (!c) {
        cl_jobs_free(&tf.jobs);
        return rf_error_set(RF_ERR_NO_MEMORY, "cluster: out of memory");
    }
    bool flag_cluster = flags->ps_hosts || flags->worker_hosts;
    const char *cluster_src = NULL;
    if (flag_cluster) {
        st = cluster_from_flags(flags, &c->jobs);
        if (st == RF_OK && tf.has_cluster)
            RF_LOG_INFO("cluster: --ps_hosts/--worker_hosts override "
                        "TF_CONFIG's cluster");
        cluster_src = "--ps_hosts/--worker_hosts";
    } else if (tf.has_cluster) {
        c->jobs = tf.jobs;
        memset(&tf.jobs, 0, sizeof tf.jobs);
        cluster_src = tf.sparse ? "TF_CONFIG's sparseCluster" : "TF_CONFIG";
    }
    bool sparse = !flag_cluster && tf.sparse;
    cl_jobs_free(&tf.jobs);

    int job = -1, index = -1;
    const char *job_src = NULL, *index_src = NULL;
    if (st == RF_OK && !cluster_src) {
        if (cl_launcher_present(envp))
            RF_LOG_INFO("cluster: a Slurm or MPI rank is set but --num_ps "
                        "is not given: a local run");
        st = check_local(flags, &tf);
        rf_cluster_destroy(c);
        return st; /* local run: *out stays NULL */
    }
    if (st == RF_OK)
        st = pick_task(flags, &tf, flag_cluster, &job, &job_src, &index,
                       &index_src);
    if (st == RF_OK && sparse)
        st = settle_sparse(c, job, index);
    if (st == RF_OK) {
        assign_roles(c);
        st = place_task(c, job, job_src, index, index_src, cluster_src);
    }
    if (st != RF_OK) {
        rf_cluster_destroy(c);
        return st;
    }
    set_source(c, cluster_src, job_src, index_src);
    *out = c;
    return RF_OK;
}

rf_status rf_cluster_resolve(const rf_cluster_flags *flags,
                             const char *tf_config, rf_cluster **out)
{
    char *const no_env[] = {NULL};
    return resolve(flags, tf_config, no_env, out);
}

rf_status rf_cluster_resolve_env(const rf_cluster_flags *flags,
                                 char *const *envp, rf_cluster **out)
{
    if (!envp)
        envp = environ;
    return resolve(flags, cl_getenv(envp, "TF_CONFIG"), envp, out);
}

void rf_cluster_destroy(rf_cluster *c)
{
    if (!c)
        return;
    cl_jobs_free(&c->jobs);
    free(c);
}

const rf_cluster_task *rf_cluster_self(const rf_cluster *c)
{
    return c ? c->self : NULL;
}

const rf_cluster_task *rf_cluster_chief(const rf_cluster *c)
{
    return c ? c->chief : NULL;
}

int rf_cluster_num_tasks(const rf_cluster *c, const char *job)
{
    int j = cl_job_lookup(job);
    return c && j >= 0 ? cl_job_slots(&c->jobs.job[j]) : 0;
}

const rf_cluster_task *rf_cluster_task_at(const rf_cluster *c, const char *job,
                                          int index)
{
    int j = cl_job_lookup(job);
    if (!c || j < 0)
        return NULL;
    return cl_job_find(&c->jobs.job[j], index);
}

const char *rf_cluster_task_address(const rf_cluster *c, const char *job,
                                    int index)
{
    const rf_cluster_task *t = rf_cluster_task_at(c, job, index);
    return t ? t->address : NULL;
}

int rf_cluster_num_ps(const rf_cluster *c)
{
    if (!c)
        return 0;
    return c->jobs.job[CL_PS].sparse ? -1 : c->jobs.job[CL_PS].n;
}

int rf_cluster_num_workers(const rf_cluster *c)
{
    if (!c)
        return 0;
    if (c->jobs.job[CL_WORKER].sparse)
        return -1;
    return c->jobs.job[CL_CHIEF].n + c->jobs.job[CL_WORKER].n;
}

bool rf_cluster_is_sparse(const rf_cluster *c)
{
    return c && c->sparse;
}

const char *rf_cluster_source(const rf_cluster *c)
{
    return c ? c->source : "";
}

void rf_cluster_device_desc(const rf_cluster *c, rf_cluster_desc *out)
{
    out->jobs = c ? c->desc : NULL;
    out->num_jobs = c ? c->num_desc : 0;
}
