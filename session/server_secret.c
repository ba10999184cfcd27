/* session/server_secret.c: sess_server_secret (server_secret.h). Every
 * program's tasks start their server through rf_server_start, so this is
 * where a cluster without a secret is refused (--require_secret,
 * RF_REQUIRE_SECRET=1) or warned about, the same for rf-trainer, the
 * example trainer and the Python package. */
#include "session/server_secret.h"

#include <stdatomic.h>
#include <stdint.h>

#include "core/log.h"
#include "rdmaflow/env.h"

#define NO_SECRET                                                              \
    "no cluster secret (RF_CLUSTER_SECRET_FILE or --cluster_secret_file)"

static atomic_flag warned = ATOMIC_FLAG_INIT;

rf_status sess_server_secret(const char *flag_path, bool require,
                             rf_cluster_secret **out)
{
    *out = NULL;
    int64_t env_require = 0;
    rf_status st = rf_setting_int("RF_REQUIRE_SECRET", &env_require);
    if (st != RF_OK)
        return st;
    st = rf_secret_load_default(flag_path, out);
    if (st != RF_OK || *out)
        return st;
    if (require || env_require)
        return rf_error_set(
            RF_ERR_AUTH,
            NO_SECRET " and %s requires one: refusing to start an "
                      "unauthenticated cluster (give every task the same "
                      "secret file, or run the job under rf-launch, which "
                      "makes one)",
            require ? "--require_secret" : "RF_REQUIRE_SECRET=1");
    if (!atomic_flag_test_and_set(&warned))
        RF_LOG_WARN(
            "the cluster is unauthenticated, " NO_SECRET
            ": anyone who can reach a ps task's port can connect as a "
            "worker whose id no task has connected with yet (before that "
            "worker first connects; a restarting task keeps its id by its "
            "task token, which travels in clear) and read and write every "
            "variable and global_step, and a worker cannot tell its ps "
            "tasks from "
            "impostors; rf-launch gives its jobs a secret, and "
            "--require_secret or RF_REQUIRE_SECRET=1 makes this an error");
    return RF_OK;
}
