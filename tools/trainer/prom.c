/* tools/trainer/prom.c: rf-trainer's Prometheus endpoint (prom.h): the port
 * from --metrics_port or RF_METRICS_PORT, the task's address and its port
 * offset among the tasks of its host, the registry and HTTP server of
 * rdmaflow/prometheus.h, and the evaluator's two metrics. One per process:
 * kept here rather than passed through every job's code. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exit_status.h"
#include "prom.h"
#include "rdmaflow/clock.h"
#include "rdmaflow/env.h"

static rf_prom_registry *registry;
static rf_prom_http *http;
static rf_prom_metric *eval_step, *eval_count;

/* The task's rank among the cluster's tasks listed with its host. */
static int host_rank(const rf_cluster *c, const rf_cluster_task *self)
{
    static const char *const jobs[] = {"chief", "ps", "worker", "evaluator"};
    int rank = 0;
    for (size_t j = 0; j < sizeof jobs / sizeof *jobs; j++) {
        for (int i = 0; i < rf_cluster_num_tasks(c, jobs[j]); i++) {
            const rf_cluster_task *t = rf_cluster_task_at(c, jobs[j], i);
            if (!t || !t->host)
                continue;
            if (!strcmp(t->job, self->job) && t->index == self->index)
                return rank;
            rank += !strcmp(t->host, self->host);
        }
    }
    return rank;
}

int tr_prom_start(const tr_flags *f, const rf_cluster *cluster)
{
    const char *text =
        f->metrics_port ? f->metrics_port : rf_env_str("RF_METRICS_PORT", NULL);
    const char *what = f->metrics_port ? "--metrics_port" : "RF_METRICS_PORT";
    int64_t base = 0;
    if (text && rf_parse_int(text, 0, 65535, what, &base) != RF_OK) {
        fprintf(stderr, "rf-trainer: %s\n", rf_error_message());
        tr_exit_reason("%s", rf_error_message());
        return TR_EXIT_USAGE;
    }
    if (base == 0)
        return 0; /* off */
    const rf_cluster_task *self = rf_cluster_self(cluster);
    const char *bind = f->bind_addr ? f->bind_addr : getenv("RF_BIND_ADDR");
    char name[256] = "localhost";
    const char *host = bind && *bind ? bind : self->host;
    if (!host) { /* an evaluator outside the cluster */
        gethostname(name, sizeof name - 1);
        host = name;
    }
    int port = (int)base + (self->host ? host_rank(cluster, self) : 0);
    if (port > 65535) {
        fprintf(stderr,
                "rf-trainer: %s=%s: this task's metrics port would be %d "
                "(the port plus the task's rank on its host), above 65535\n",
                what, text, port);
        return TR_EXIT_USAGE;
    }
    rf_prom_metric *info;
    rf_status st = rf_prom_registry_create(&registry);
    /* a host name not resolving yet (a pod's own, not yet published) is
     * tried again for --max_wait_secs, as the server's own resolution */
    int64_t deadline = rf_deadline_ms(f->max_wait_secs * 1000);
    if (st == RF_OK) {
        while ((st = rf_prom_http_start(registry, host, port, &http)) ==
                   RF_ERR_UNAVAILABLE &&
               !rf_deadline_passed(deadline))
            rf_sleep_ms(500);
    }
    if (st != RF_OK) { /* a name that never resolved: retryable */
        int rc = tr_exit_fail_status(st, what, rf_error_message());
        tr_prom_stop();
        return rc;
    }
    char task[96];
    snprintf(task, sizeof task, "/job:%s/task:%d", self->job, self->index);
    if (rf_prom_metric_add(registry, RF_PROM_GAUGE, "rdmaflow_task_info",
                           "1, labelled with this task's name.", "task", task,
                           &info) != RF_OK) {
        fprintf(stderr, "rf-trainer: %s: %s\n", what, rf_error_message());
        tr_prom_stop();
        return 1;
    }
    rf_prom_set(info, 1);
    printf("metrics: serving http://%s%s%s:%d/metrics\n",
           strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "",
           rf_prom_http_port(http));
    fflush(stdout);
    return 0;
}

void tr_prom_ready(void)
{
    rf_prom_http_set_ready(http, true);
}

rf_prom_registry *tr_prom_registry(void)
{
    return registry;
}

void tr_prom_evaluated(int64_t step)
{
    if (!registry)
        return;
    if (!eval_step &&
        (rf_prom_metric_add(registry, RF_PROM_GAUGE,
                            "rdmaflow_evaluator_global_step",
                            "The global_step of the last checkpoint the "
                            "evaluator evaluated.",
                            NULL, NULL, &eval_step) != RF_OK ||
         rf_prom_metric_add(registry, RF_PROM_COUNTER,
                            "rdmaflow_evaluations_total",
                            "Checkpoints the evaluator evaluated.", NULL, NULL,
                            &eval_count) != RF_OK))
        return;
    rf_prom_set(eval_step, (double)step);
    rf_prom_add(eval_count, 1);
}

void tr_prom_stop(void)
{
    rf_prom_http_stop(http);
    rf_prom_registry_destroy(registry);
    http = NULL;
    registry = NULL;
    eval_step = eval_count = NULL;
}
