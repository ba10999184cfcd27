/* tests/fuzz/fuzz_cluster_flags.c: libFuzzer target for the classic cluster
 * flags (cluster/cluster_jobs.c, cluster_addr.c through rf_cluster_resolve)
 * and rf_parse_host_port. The input is split at '\n' into --ps_hosts,
 * --worker_hosts, --job_name and --task_index (a missing field is a flag
 * not given), resolved without TF_CONFIG; the whole input, up to its first
 * NUL, is also parsed as one HOST:PORT. A refusal must say why; an address
 * that parses must format back to text that parses to the same host and
 * port, and a resolved cluster's tasks must have parsed addresses. The
 * input is also a Slurm host list (rf_hostlist_expand, and a Slurm step
 * through rf_cluster_resolve_env). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "fuzz_common.h"
#include "rdmaflow/cluster.h"
#include "rdmaflow/status.h"

static void host_port(const char *text)
{
    char host[RF_HOST_MAX], again[RF_HOST_MAX];
    uint16_t port = 0, port2 = 0;
    if (rf_parse_host_port(text, "fuzz", host, &port) != RF_OK) {
        REQUIRE(rf_error_message()[0]);
        return;
    }
    REQUIRE(port >= 1 && strlen(host) < RF_HOST_MAX);
    char buf[RF_HOST_MAX + 8];
    REQUIRE(rf_format_host_port(host, port, buf, sizeof buf) == RF_OK);
    REQUIRE(rf_parse_host_port(buf, "fuzz", again, &port2) == RF_OK);
    REQUIRE(port2 == port && strcmp(again, host) == 0);
}

static void flags(char *text)
{
    const char *field[4] = {NULL, NULL, NULL, NULL};
    char *p = text;
    for (int i = 0; i < 4 && p; i++) {
        field[i] = p;
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = '\0';
        p = nl ? nl + 1 : NULL;
    }
    const rf_cluster_flags f = {.ps_hosts = field[0],
                                .worker_hosts = field[1],
                                .job_name = field[2],
                                .task_index = field[3]};
    rf_cluster *c = NULL;
    if (rf_cluster_resolve(&f, NULL, &c) != RF_OK) {
        REQUIRE(c == NULL && rf_error_message()[0]);
        return;
    }
    if (!c)
        return;
    REQUIRE(rf_cluster_self(c) && rf_cluster_chief(c));
    static const char *const jobs[] = {"chief", "evaluator", "ps", "worker"};
    for (size_t j = 0; j < sizeof jobs / sizeof jobs[0]; j++)
        for (int i = 0; i < rf_cluster_num_tasks(c, jobs[j]); i++) {
            const rf_cluster_task *t = rf_cluster_task_at(c, jobs[j], i);
            REQUIRE(t && t->index == i && t->address && t->host && t->port);
            char host[RF_HOST_MAX];
            uint16_t port;
            REQUIRE(rf_parse_host_port(t->address, NULL, host, &port) == RF_OK);
            REQUIRE(port == t->port && strcmp(host, t->host) == 0);
        }
    char *json = rf_cluster_to_json(c, true);
    REQUIRE(json);
    free(json);
    rf_cluster_destroy(c);
}

/* The input as a Slurm host list, and as SLURM_JOB_NODELIST of a
 * two-task step under --num_ps 1: refused with a reason, or hosts that are
 * non-empty and short enough, and a cluster only if there are 1 or 2. */
static void hostlist(const char *text)
{
    char **h = NULL;
    size_t n = 0;
    if (rf_hostlist_expand(text, "fuzz", &h, &n) != RF_OK) {
        REQUIRE(!h && n == 0 && rf_error_message()[0]);
    } else {
        REQUIRE(n >= 1 && n <= RF_HOSTLIST_MAX);
        for (size_t i = 0; i < n; i++)
            REQUIRE(h[i][0] && strlen(h[i]) < RF_HOST_MAX);
        rf_hostlist_free(h, n);
    }
    if (strlen(text) > 200)
        return; /* keep each run short */
    char nodes[256];
    snprintf(nodes, sizeof nodes, "SLURM_JOB_NODELIST=%s", text);
    char *env[] = {"SLURM_PROCID=1", "SLURM_NTASKS=2", nodes,
                   "SLURM_NTASKS_PER_NODE=1", NULL};
    const rf_cluster_flags f = {.num_ps = "1"};
    rf_cluster *c = NULL;
    if (rf_cluster_resolve_env(&f, env, &c) != RF_OK) {
        REQUIRE(!c && rf_error_message()[0]);
        return;
    }
    REQUIRE(c && rf_cluster_num_ps(c) == 1 && rf_cluster_num_workers(c) == 1);
    rf_cluster_destroy(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rf_log_set_threshold(RF_LOG_ERROR);
    char *text = fuzz_text(data, size);
    if (!text)
        return 0;
    host_port(text);
    hostlist(text);
    flags(text);
    free(text);
    return 0;
}
