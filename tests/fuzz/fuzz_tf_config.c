/* tests/fuzz/fuzz_tf_config.c: libFuzzer target for TF_CONFIG parsing
 * (cluster/cluster_tfconfig.c through rf_cluster_resolve): the input, up to
 * its first NUL, is the TF_CONFIG text, resolved with no flags, with only
 * --job_name/--task_index and with the whole classic cluster flags (which
 * override the cluster, yet TF_CONFIG must still parse). A refusal must say
 * why; a cluster that resolves must have its own task and a chief, format,
 * and its JSON (a TF_CONFIG by contract) must resolve to the same JSON;
 * a sparseCluster's counts are unknown (-1) as rdmaflow/cluster.h says;
 * a refusal's message holds no control byte and an accepted text no key
 * twice (issue 25 item 4). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_check.h"
#include "core/log.h"
#include "fuzz_common.h"
#include "rdmaflow/cluster.h"
#include "rdmaflow/status.h"

static void check(const rf_cluster_flags *flags, const char *tf_config)
{
    rf_cluster *c = NULL;
    rf_status st = rf_cluster_resolve(flags, tf_config, &c);
    if (st != RF_OK) {
        REQUIRE(c == NULL && rf_error_message()[0]);
        fuzz_require_inert(rf_error_message());
        return;
    }
    if (!c)
        return; /* a local run */
    /* what was read had no key twice (json-c would keep the last) */
    if (*tf_config)
        REQUIRE(rf_json_check(tf_config, strlen(tf_config), RF_ERR_INVALID_ARG,
                              "fuzz") == RF_OK);
    const rf_cluster_task *self = rf_cluster_self(c);
    REQUIRE(self && rf_cluster_chief(c));
    /* a sparse cluster (TFJob's sparseCluster) knows no worker count, and
     * on a ps no ps count */
    if (rf_cluster_is_sparse(c))
        REQUIRE(rf_cluster_num_workers(c) == -1 &&
                (rf_cluster_num_ps(c) >= 1 ||
                 (rf_cluster_num_ps(c) == -1 && !strcmp(self->job, "ps"))));
    else
        REQUIRE(rf_cluster_num_ps(c) >= 1 && rf_cluster_num_workers(c) >= 1);
    char *text = rf_cluster_format(c);
    REQUIRE(text);
    free(text);
    char *json = rf_cluster_to_json(c, false);
    REQUIRE(json);
    rf_cluster *again = NULL;
    REQUIRE(rf_cluster_resolve(NULL, json, &again) == RF_OK && again);
    char *json2 = rf_cluster_to_json(again, false);
    REQUIRE(json2);
    /* The same cluster and task; only "source" may differ. */
    const char *s1 = strstr(json, "\"source\""),
               *s2 = strstr(json2, "\"source\"");
    REQUIRE(s1 && s2 && s1 - json == s2 - json2 &&
            memcmp(json, json2, (size_t)(s1 - json)) == 0);
    free(json2);
    rf_cluster_destroy(again);
    free(json);
    rf_cluster_destroy(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rf_log_set_threshold(RF_LOG_ERROR); /* overrides are logged at info */
    char *text = fuzz_text(data, size);
    if (!text)
        return 0;
    check(NULL, text);
    const rf_cluster_flags task = {.job_name = "worker", .task_index = "1"};
    check(&task, text);
    const rf_cluster_flags all = {.ps_hosts = "ps0:2222",
                                  .worker_hosts = "w0:2222,w1:2222",
                                  .job_name = "ps",
                                  .task_index = "0"};
    check(&all, text);
    free(text);
    return 0;
}
