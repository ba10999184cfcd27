/* cluster/cluster_jobs.c: the job lists of a cluster being built (one
 * per known job), entry parsing with messages that name the source entry,
 * the cluster-wide consistency checks, and task index parsing. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster_internal.h"
#include "rdmaflow/env.h"
#include "rdmaflow/status.h"

const char *const cl_job_names[CL_NJOBS] = {
    [CL_CHIEF] = "chief",
    [CL_EVALUATOR] = "evaluator",
    [CL_PS] = "ps",
    [CL_WORKER] = "worker",
};

int cl_job_lookup(const char *name)
{
    for (int j = 0; j < CL_NJOBS; j++)
        if (name && strcmp(name, cl_job_names[j]) == 0)
            return j;
    return -1;
}

rf_status cl_unknown_job(const char *where, const char *name)
{
    char q[80];
    return rf_error_set(RF_ERR_INVALID_ARG,
                        "%s: unknown job \"%s\" (expected ps, worker, chief "
                        "or evaluator%s)",
                        where, cl_quote(name, strlen(name), q),
                        strcmp(name, "master") == 0
                            ? "; the legacy \"master\" job is called "
                              "\"chief\" now"
                            : "");
}

void cl_jobs_free(cl_jobs *jobs)
{
    for (int j = 0; j < CL_NJOBS; j++) {
        cl_job *jb = &jobs->job[j];
        for (int i = 0; i < jb->n; i++) {
            free((char *)jb->tasks[i].address);
            free((char *)jb->tasks[i].host);
            free(jb->keys[i]);
        }
        free(jb->tasks);
        free(jb->keys);
    }
    memset(jobs, 0, sizeof *jobs);
}

void cl_job_begin(cl_jobs *jobs, int job, const char *where, bool from_json)
{
    cl_job *jb = &jobs->job[job];
    jb->present = true;
    jb->from_json = from_json;
    snprintf(jb->where, sizeof jb->where, "%s", where);
}

/* "--ps_hosts: task 1" or "TF_CONFIG: cluster.ps[1]" (a sparse job's
 * entry by its index: "TF_CONFIG: sparseCluster.worker[\"3\"]"). */
static void entry_where(const cl_job *jb, int i, char *buf, size_t len)
{
    if (jb->sparse && i < jb->n)
        snprintf(buf, len, "%s[\"%d\"]", jb->where, jb->tasks[i].index);
    else if (jb->from_json)
        snprintf(buf, len, "%s[%d]", jb->where, i);
    else
        snprintf(buf, len, "%s: task %d", jb->where, i);
}

/* The other side of a duplicate, entry i of jb (job `job`): "ps task 0",
 * "cluster.ps[0]" or "sparseCluster.ps[0]". */
static void entry_short(const cl_job *jb, int job, int i, char *buf, size_t len)
{
    if (jb->sparse)
        snprintf(buf, len, "%s task %d", cl_job_names[job], jb->tasks[i].index);
    else if (jb->from_json && !strncmp(jb->where, "TF_CONFIG: ", 11))
        snprintf(buf, len, "%s[%d]", jb->where + 11, i); /* cluster.ps[0] */
    else if (jb->from_json)
        snprintf(buf, len, "cluster.%s[%d]", cl_job_names[job], i);
    else
        snprintf(buf, len, "%s task %d", cl_job_names[job], i);
}

rf_status cl_job_add(cl_job *jb, const char *text, size_t len)
{
    return cl_job_add_at(jb, jb->n, text, len);
}

rf_cluster_task *cl_job_find(const cl_job *jb, int index)
{
    if (!jb->sparse)
        return index >= 0 && index < jb->n ? &jb->tasks[index] : NULL;
    for (int i = 0; i < jb->n; i++)
        if (jb->tasks[i].index == index)
            return &jb->tasks[i];
    return NULL;
}

int cl_job_slots(const cl_job *jb)
{
    if (!jb->sparse)
        return jb->n;
    int slots = 0;
    for (int i = 0; i < jb->n; i++)
        if (jb->tasks[i].index >= slots)
            slots = jb->tasks[i].index + 1;
    return slots;
}

rf_status cl_job_add_at(cl_job *jb, int index, const char *text, size_t len)
{
    char where[96];
    int i = jb->n;
    if (jb->sparse)
        snprintf(where, sizeof where, "%s[\"%d\"]", jb->where, index);
    else
        entry_where(jb, i, where, sizeof where);
    if (len == 0)
        return rf_error_set(RF_ERR_INVALID_ARG, "%s is empty%s", where,
                            jb->from_json ? "" : " (stray comma?)");
    if (i == INT_MAX)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: more than the limit of %d tasks", where,
                            INT_MAX);
    char *addr = strndup(text, len);
    if (!addr)
        return rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory", where);
    if (strlen(addr) != len) {
        free(addr);
        return rf_error_set(RF_ERR_INVALID_ARG, "%s contains a NUL byte",
                            where);
    }
    char host[RF_HOST_MAX];
    uint16_t port;
    rf_status st = rf_parse_host_port(addr, where, host, &port);
    if (st != RF_OK) {
        free(addr);
        return st;
    }
    rf_cluster_task *t = realloc(jb->tasks, (size_t)(i + 1) * sizeof *t);
    if (t)
        jb->tasks = t;
    char **k = realloc(jb->keys, (size_t)(i + 1) * sizeof *k);
    if (k)
        jb->keys = k;
    char *h = strdup(host);
    char *key = cl_address_key(host, port);
    if (!t || !k || !h || !key) {
        free(addr);
        free(h);
        free(key);
        return rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory", where);
    }
    jb->tasks[i] = (rf_cluster_task){.job = NULL,
                                     .index = index,
                                     .address = addr,
                                     .host = h,
                                     .port = port,
                                     .worker_id = -1};
    jb->keys[i] = key;
    jb->n = i + 1;
    return RF_OK;
}

rf_status cl_jobs_check(const cl_jobs *jobs, const char *what)
{
    /* Duplicates, in listing order: the later entry is the culprit. */
    for (int j = 0; j < CL_NJOBS; j++) {
        const cl_job *jb = &jobs->job[j];
        for (int i = 0; i < jb->n; i++) {
            for (int j2 = 0; j2 <= j; j2++) {
                const cl_job *jb2 = &jobs->job[j2];
                int lim = j2 == j ? i : jb2->n;
                for (int i2 = 0; i2 < lim; i2++) {
                    if (strcmp(jb->keys[i], jb2->keys[i2]) != 0)
                        continue;
                    char w[96], o[64], q1[80], q2[80];
                    entry_where(jb, i, w, sizeof w);
                    entry_short(jb2, j2, i2, o, sizeof o);
                    const char *a1 = jb->tasks[i].address;
                    const char *a2 = jb2->tasks[i2].address;
                    return rf_error_set(
                        RF_ERR_INVALID_ARG,
                        "%s \"%s\" is the same address as %s (\"%s\")", w,
                        cl_quote(a1, strlen(a1), q1), o,
                        cl_quote(a2, strlen(a2), q2));
                }
            }
        }
    }
    const int single[] = {CL_CHIEF, CL_EVALUATOR};
    for (size_t s = 0; s < 2; s++) {
        const cl_job *jb = &jobs->job[single[s]];
        if (jb->n > 1)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "%s has %d tasks; there must be at most one "
                                "%s",
                                jb->where, jb->n, cl_job_names[single[s]]);
    }
    if (!jobs->job[CL_PS].present)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s has no \"ps\" job (rdmaflow trains with "
                            "parameter servers: at least one ps task)",
                            what);
    if (!jobs->job[CL_WORKER].present && !jobs->job[CL_CHIEF].present)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s has no \"worker\" or \"chief\" job (nothing "
                            "would train)",
                            what);
    return RF_OK;
}

rf_status cl_parse_index(const char *text, const char *where, int *out)
{
    char q[80];
    if (!text || !*text)
        return rf_error_set(RF_ERR_INVALID_ARG, "%s is empty", where);
    /* rf_parse_int (strtoll) would accept leading blanks and '+'. */
    if (!(text[0] >= '0' && text[0] <= '9') && text[0] != '-')
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: \"%s\" is not a task index (a non-negative "
                            "integer)",
                            where, cl_quote(text, strlen(text), q));
    int64_t v;
    if (rf_parse_int(text, INT64_MIN, INT64_MAX, where, &v) != RF_OK)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: \"%s\" is not a task index (a non-negative "
                            "integer)",
                            where, cl_quote(text, strlen(text), q));
    if (v < 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: %lld is negative (task indices start at 0)",
                            where, (long long)v);
    if (v > INT_MAX)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: %lld is above the limit of %d", where,
                            (long long)v, INT_MAX);
    *out = (int)v;
    return RF_OK;
}

rf_status cl_parse_host_list(const char *flag, const char *value, int job,
                             cl_jobs *jobs)
{
    cl_job_begin(jobs, job, flag, false);
    if (!*value)
        return rf_error_set(
            RF_ERR_INVALID_ARG,
            "%s: empty list (expected HOST:PORT[,HOST:PORT...])", flag);
    const char *p = value;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        rf_status st = cl_job_add(&jobs->job[job], p, len);
        if (st != RF_OK)
            return st;
        if (!comma)
            return RF_OK;
        p = comma + 1;
    }
}
