/* cluster/cluster_format.c: the cluster as text for --explain and as
 * JSON (json-c) that is also a valid TF_CONFIG for the same task. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster_internal.h"

static void device_of(const rf_cluster_task *t, char *buf, size_t len)
{
    snprintf(buf, len, "/job:%s/task:%d", t->job, t->index);
}

static bool same_task(const rf_cluster_task *a, const rf_cluster_task *b)
{
    return strcmp(a->job, b->job) == 0 && a->index == b->index;
}

char *rf_cluster_format(const rf_cluster *c)
{
    if (!c)
        return NULL;
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    if (!f)
        return NULL;
    char dev[64]; /* "/job:worker/task:N": the four job names are short */
    int width = 0, awidth = 0;
    for (int j = 0; j < CL_NJOBS; j++) {
        for (int i = 0; i < c->jobs.job[j].n; i++) {
            const rf_cluster_task *t = &c->jobs.job[j].tasks[i];
            device_of(t, dev, sizeof dev);
            if ((int)strlen(dev) > width)
                width = (int)strlen(dev);
            if ((int)strlen(t->address) > awidth)
                awidth = (int)strlen(t->address);
        }
    }
    int nw = rf_cluster_num_workers(c);
    device_of(c->chief, dev, sizeof dev);
    if (c->sparse)
        fprintf(f,
                "sparse cluster (TFJob enableDynamicWorker): %d ps task%s "
                "known, workers join and leave; chief %s (worker 0)\n",
                c->jobs.job[CL_PS].n, c->jobs.job[CL_PS].n == 1 ? "" : "s",
                dev);
    else
        fprintf(f, "cluster: %d ps, %d training worker%s; chief %s%s\n",
                rf_cluster_num_ps(c), nw, nw == 1 ? "" : "s", dev,
                c->jobs.job[CL_CHIEF].present ? ""
                                              : " (no chief job: worker 0)");
    for (int j = 0; j < CL_NJOBS; j++) {
        for (int i = 0; i < c->jobs.job[j].n; i++) {
            const rf_cluster_task *t = &c->jobs.job[j].tasks[i];
            bool me = same_task(t, c->self);
            device_of(t, dev, sizeof dev);
            const char *marks[3];
            int nm = 0;
            if (t->is_chief)
                marks[nm++] = "chief";
            if (j == CL_EVALUATOR)
                marks[nm++] = "not training";
            if (me)
                marks[nm++] = "this task";
            fprintf(f, "  %-*s  %s", width, dev, t->address);
            for (int m = 0; m < nm; m++)
                fprintf(f, "%*s%s",
                        m ? 0 : awidth - (int)strlen(t->address) + 2,
                        m ? ", " : "", marks[m]);
            fputc('\n', f);
        }
    }
    device_of(c->self, dev, sizeof dev);
    if (c->self->address)
        fprintf(f, "this task: %s (%s)%s; %s\n", dev, c->self->address,
                c->self->is_chief ? ", the chief" : "", c->source);
    else
        fprintf(f,
                "this task: %s (not listed in the cluster: not part of "
                "training); %s\n",
                dev, c->source);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

/* {"type": job, "index": i} plus extra fields added by the caller. */
static struct json_object *task_ref(const rf_cluster_task *t)
{
    struct json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    json_object_object_add(o, "type", json_object_new_string(t->job));
    json_object_object_add(o, "index", json_object_new_int(t->index));
    return o;
}

static struct json_object *to_json(const rf_cluster *c)
{
    struct json_object *root = json_object_new_object();
    struct json_object *cluster = json_object_new_object();
    if (!root || !cluster) {
        json_object_put(root);
        json_object_put(cluster);
        return NULL;
    }
    json_object_object_add(root, c->sparse ? "sparseCluster" : "cluster",
                           cluster);
    for (int j = 0; j < CL_NJOBS; j++) {
        const cl_job *jb = &c->jobs.job[j];
        if (!jb->present)
            continue;
        bool map = c->sparse && j == CL_WORKER; /* {"3": "h:p"} */
        struct json_object *list =
            map ? json_object_new_object() : json_object_new_array();
        for (int i = 0; list && i < jb->n; i++) {
            struct json_object *a =
                json_object_new_string(jb->tasks[i].address);
            char key[16];
            snprintf(key, sizeof key, "%d", jb->tasks[i].index);
            if (map)
                json_object_object_add(list, key, a);
            else
                json_object_array_add(list, a);
        }
        json_object_object_add(cluster, cl_job_names[j], list);
    }
    struct json_object *task = task_ref(c->self);
    if (task) {
        json_object_object_add(
            task, "address",
            c->self->address ? json_object_new_string(c->self->address) : NULL);
        json_object_object_add(task, "is_chief",
                               json_object_new_boolean(c->self->is_chief));
        json_object_object_add(task, "worker_id",
                               json_object_new_int(c->self->worker_id));
    }
    json_object_object_add(root, "task", task);
    json_object_object_add(root, "chief", task_ref(c->chief));
    json_object_object_add(root, "num_ps",
                           json_object_new_int(rf_cluster_num_ps(c)));
    json_object_object_add(root, "num_workers",
                           json_object_new_int(rf_cluster_num_workers(c)));
    json_object_object_add(root, "source", json_object_new_string(c->source));
    return root;
}

char *rf_cluster_to_json(const rf_cluster *c, bool pretty)
{
    if (!c)
        return NULL;
    struct json_object *root = to_json(c);
    if (!root)
        return NULL;
    int flags = JSON_C_TO_STRING_NOSLASHESCAPE |
                (pretty ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED
                        : JSON_C_TO_STRING_PLAIN);
    const char *s = json_object_to_json_string_ext(root, flags);
    char *copy = s ? strdup(s) : NULL;
    json_object_put(root);
    return copy;
}
