/* core/env_table.c: the one table of RF_* environment variables the project
 * reads (rf_env_vars, env.h): each row names a variable, shows its default,
 * says who reads it and what it does, and says how it is read (an integer
 * and its range, a choice, or text), so the library's readers
 * (rf_setting_*, core/env.c), rf-info and the README's environment section
 * all come from the same row and a default is written once. Adding a
 * variable means adding a row here (tests/integration/info/info_test.sh
 * fails otherwise). */
#include <stddef.h>

#include "rdmaflow/env.h"
#include "rdmaflow/secret.h"
#include "rdmaflow/topology.h"

#define STR(x)  #x
#define XSTR(x) STR(x)

/* An integer in [lo, hi], shown as its default d (or as shown). */
#define INT_ROW(name, d, lo, hi, reader, meaning)                              \
    {                                                                          \
        name, XSTR(d), reader, meaning, RF_ENV_INT, d, lo, hi, NULL, NULL,     \
            NULL                                                               \
    }
#define INT_SHOWN(name, d, lo, hi, shown, reader, meaning)                     \
    {                                                                          \
        name, shown, reader, meaning, RF_ENV_INT, d, lo, hi, NULL, NULL, NULL  \
    }
/* One of list (NULL-terminated), d when unset. */
#define CHOICE_ROW(name, d, list, reader, meaning)                             \
    {                                                                          \
        name, d, reader, meaning, RF_ENV_CHOICE, 0, 0, 0, list, NULL, NULL     \
    }
/* Text, d when unset; TEXT_SHOWN: no value when unset, shown as shown. */
#define TEXT_ROW(name, d, reader, meaning)                                     \
    {                                                                          \
        name, d, reader, meaning, RF_ENV_TEXT, 0, 0, 0, NULL, d, NULL          \
    }
#define TEXT_SHOWN(name, shown, reader, meaning)                               \
    {                                                                          \
        name, shown, reader, meaning, RF_ENV_TEXT, 0, 0, 0, NULL, NULL, NULL   \
    }
/* The same, with the reader's check of the value (rf_setting_check). */
#define TEXT_CHECKED(name, d, reader, meaning, fn)                             \
    {                                                                          \
        name, d, reader, meaning, RF_ENV_TEXT, 0, 0, 0, NULL, d, fn            \
    }
#define TEXT_SHOWN_CHECKED(name, shown, reader, meaning, fn)                   \
    {                                                                          \
        name, shown, reader, meaning, RF_ENV_TEXT, 0, 0, 0, NULL, NULL, fn     \
    }

static const char *const log_levels[] = {"error", "warn",  "info",
                                         "debug", "trace", NULL};
static const char *const cq_modes[] = {"poll", "event", NULL};
static const char *const sock_progress[] = {"attr", "auto", "manual", NULL};

static const rf_env_var vars[] = {
    TEXT_ROW("RF_FABRIC", "auto", "fabric",
             "provider when a program asks for auto: verbs, sock, shm or auto "
             "(one per peer)"),
    CHOICE_ROW("RF_LOG_LEVEL", "warn", log_levels, "core",
               "error, warn, info, debug or trace"),
    TEXT_SHOWN("RF_LOG_FILE", "stderr", "core",
               "append log lines to this file"),
    TEXT_SHOWN_CHECKED("RF_CLUSTER_SECRET_FILE", "none", "core",
                       "the cluster secret; --cluster_secret_file wins",
                       rf_secret_check_default),
    TEXT_SHOWN("RF_JOB_TOKEN", "none", "ps",
               "a per-job token given to every task: each task's token is "
               "derived from it and a ps refuses any other (rf-launch makes "
               "one per local job)"),
    TEXT_SHOWN("RF_TOKEN_DIR", "/tmp/rdmaflow-UID", "ps",
               "where a task without RF_JOB_TOKEN keeps its token across "
               "restarts"),
    INT_ROW("RF_REQUIRE_SECRET", 0, 0, 1, "session",
            "1: a task without a cluster secret fails to start instead of "
            "warning; --require_secret does the same"),
    INT_ROW("RF_PEER_TIMEOUT_MS", 10000, 100, 86400000, "fabric",
            "a silent peer is declared dead after about this long"),
    INT_ROW("RF_RNR_TIMEOUT_MS", 2000, 0, 3600000, "fabric",
            "how long a send / write_imm waits for a receive at the peer"),
    INT_ROW("RF_SOCK_HANDSHAKE_TIMEOUT_MS", 5000, 10, 3600000, "fabric/sock",
            "an unfinished incoming handshake is dropped after this long"),
    INT_ROW("RF_SHM_HANDSHAKE_TIMEOUT_MS", 5000, 10, 3600000, "fabric/shm",
            "an unfinished connection is dropped after this long"),
    INT_ROW("RF_SHM_PACE_MS", 100, 0, 60000, "fabric/shm",
            "longest a large transfer waits while its CQ holds 16 MiB "
            "unconsumed"),
    TEXT_SHOWN("RF_AUTO_PROVIDERS", "all", "fabric/auto",
               "the providers auto may choose from, e.g. verbs,sock; must "
               "include sock"),
    INT_ROW("RF_SOCK_DIRECT", 1, 0, 1, "fabric/sock",
            "a thread waiting on a small CQ reads its sockets itself (0: only "
            "the progress thread)"),
    CHOICE_ROW("RF_SOCK_PROGRESS", "attr", sock_progress, "fabric/sock",
               "data progress: attr (rf_fabric_attr.progress), auto (the "
               "progress thread) or manual (threads polling the CQs)"),
    /* the top is the sock wire format's queue limit (RF_SOCK_MAX_QUEUE) */
    INT_ROW("RF_SOCK_SERVE_MAX", 4096, 1, 1 << 20, "fabric/sock",
            "requests of one peer served outstanding at once"),
    /* the top is the kernel's own TCP_RTO_MIN (200 ms) */
    INT_ROW("RF_SOCK_RTO_MIN_US", 10000, 0, 200000, "fabric/sock",
            "TCP_RTO_MIN_US of every connection, the delayed ACK capped at "
            "half (0: the kernel's 200 ms)"),
    INT_ROW("RF_PS_HANDSHAKE_TIMEOUT_MS", 10000, 100, 3600000, "ps",
            "a connection that is not a client by then is dropped"),
    INT_ROW("RF_PS_CHUNK_MB", 64, 1, 1 << 20, "ps",
            "size of one registered arena chunk"),
    INT_ROW("RF_PS_MAX_INBOX_MB", 64, 1, 1 << 20, "ps",
            "largest inbox one worker may have for one embedding table "
            "(MiB)"),
    INT_ROW("RF_PS_MAX_ACCUM_MB", 256, 1, 1 << 20, "ps",
            "most the sync-replicas tables' accumulators of a ps may hold "
            "(MiB)"),
    INT_ROW("RF_PS_ARENA_MAX_MB", 0, 0, INT64_C(1) << 30, "ps",
            "most a ps arena may grow to (0: no limit)"),
    TEXT_CHECKED("RF_BIND", "nic", "core", "NUMA binding: nic, none or node:N",
                 rf_topology_check_bind),
    TEXT_SHOWN("RF_BIND_ADDR", "the cluster address", "session",
               "the local address a task listens on (e.g. 0.0.0.0); "
               "--bind_addr wins"),
    TEXT_SHOWN("RF_MPI_HOSTS", "this machine", "cluster",
               "under mpirun with --num_ps: the ranks' hosts, a Slurm-style "
               "host list with OMPI_COMM_WORLD_LOCAL_SIZE ranks per host"),
    INT_ROW("RF_METRICS_PORT", 0, 0, 65535, "tools",
            "rf-trainer: serve Prometheus metrics on this port plus the "
            "task's rank among its host's tasks (0: off); --metrics_port "
            "wins"),
    TEXT_SHOWN("RF_LAUNCH_TASK", "unset", "tools",
               "set by rf-launch to the task's name: its tasks leave the "
               "[name] prefix of their lines to rf-launch"),
    TEXT_SHOWN("RF_VERBS_DEVICE", "by address", "fabric/verbs",
               "verbs device name (e.g. rxe0, mlx5_0)"),
    INT_SHOWN("RF_VERBS_PORT", 0, 1, 255, "first active", "fabric/verbs",
              "verbs port number"),
    INT_SHOWN("RF_VERBS_GID_INDEX", -1, 0, 65535, "RoCE v2 IPv4 GID",
              "fabric/verbs", "GID index for RoCE"),
    INT_ROW("RF_VERBS_MAX_INLINE", 256, 0, 1024, "fabric/verbs",
            "largest payload sent inline (0: never inline)"),
    /* fabric.h's RF_CQ_SPIN_US_DEFAULT and _MAX (core cannot include it;
     * tests/unit/core checks they agree) */
    INT_ROW("RF_CQ_SPIN_US", 20, 0, 1000000, "fabric",
            "how long rf_cq_wait polls before it blocks"),
    CHOICE_ROW("RF_VERBS_CQ_MODE", "event", cq_modes, "fabric/verbs",
               "after the spin: event (completion channel) or poll"),
    INT_ROW("RF_FUSION", 1, 0, 1, "graph",
            "run the fused MatMul + BiasAdd + Relu kernels (0: each op "
            "alone)"),
    /* data.h's RF_FASHION_MNIST_DIR (checked as RF_CQ_SPIN_US is) */
    TEXT_ROW("RF_FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist",
             "graph/data", "where the Fashion-MNIST IDX files are"),
    TEXT_SHOWN("RF_TRAINER_BLAS_REEXEC", "none", "rf-trainer",
               "internal: set by rf-trainer when it re-executes itself for "
               "OpenBLAS"),
    TEXT_SHOWN("RF_TEST_CKPT_STOP_BEFORE_RENAME", "none", "core",
               "internal (tests): stop a checkpoint write before its rename"),
    TEXT_SHOWN("RF_TEST_SYNC_STOP_AFTER_PUSH", "none", "session",
               "internal (tests): stop a sync chief (marker \"STEP\") or "
               "worker (\"STEP ID\") after its first push of a step"),
    {NULL, NULL, NULL, NULL, RF_ENV_TEXT, 0, 0, 0, NULL, NULL, NULL},
};

const rf_env_var *rf_env_vars(void)
{
    return vars;
}

rf_env_source rf_env_effective(const rf_env_var *var, const char **value)
{
    const char *v = rf_env_str(var->name, NULL);
    if (value)
        *value = v ? v : var->def;
    return v ? RF_ENV_ENVIRONMENT : RF_ENV_DEFAULT;
}
