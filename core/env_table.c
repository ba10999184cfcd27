/* core/env_table.c: the one table of RF_* environment variables the project
 * reads (rf_env_vars, env.h), for rf-info and the README's environment
 * section. Each reader still parses its own variable where it uses it; this
 * table only names them, so adding a variable means adding a row here (the
 * test tests/integration/info/info_test.sh fails otherwise). */
#include <stddef.h>

#include "rdmaflow/env.h"

static const rf_env_var vars[] = {
    {"RF_FABRIC", "auto", "fabric",
     "provider when a program asks for auto: verbs, sock, shm or auto (one "
     "per peer)"},
    {"RF_LOG_LEVEL", "warn", "core", "error, warn, info, debug or trace"},
    {"RF_LOG_FILE", "stderr", "core", "append log lines to this file"},
    {"RF_CLUSTER_SECRET_FILE", "none", "core",
     "the cluster secret; --cluster_secret_file wins"},
    {"RF_REQUIRE_SECRET", "0", "session",
     "1: a task without a cluster secret fails to start instead of warning; "
     "--require_secret does the same"},
    {"RF_PEER_TIMEOUT_MS", "10000", "fabric",
     "a silent peer is declared dead after about this long"},
    {"RF_RNR_TIMEOUT_MS", "2000", "fabric",
     "how long a send / write_imm waits for a receive at the peer"},
    {"RF_SOCK_HANDSHAKE_TIMEOUT_MS", "5000", "fabric/sock",
     "an unfinished incoming handshake is dropped after this long"},
    {"RF_SHM_HANDSHAKE_TIMEOUT_MS", "5000", "fabric/shm",
     "an unfinished connection is dropped after this long"},
    {"RF_SHM_PACE_MS", "100", "fabric/shm",
     "longest a large transfer waits while its CQ holds 16 MiB unconsumed"},
    {"RF_AUTO_PROVIDERS", "all", "fabric/auto",
     "the providers auto may choose from, e.g. verbs,sock; must include sock"},
    {"RF_SOCK_DIRECT", "1", "fabric/sock",
     "a thread waiting on a small CQ reads its sockets itself (0: only the "
     "progress thread)"},
    {"RF_SOCK_SERVE_MAX", "4096", "fabric/sock",
     "requests of one peer served outstanding at once"},
    {"RF_PS_HANDSHAKE_TIMEOUT_MS", "10000", "ps",
     "a connection that is not a client by then is dropped"},
    {"RF_PS_CHUNK_MB", "64", "ps", "size of one registered arena chunk"},
    {"RF_PS_MAX_INBOX_MB", "64", "ps",
     "largest inbox one worker may have for one embedding table (MiB)"},
    {"RF_PS_MAX_ACCUM_MB", "256", "ps",
     "most the sync-replicas tables' accumulators of a ps may hold (MiB)"},
    {"RF_PS_ARENA_MAX_MB", "0", "ps",
     "most a ps arena may grow to (0: no limit)"},
    {"RF_BIND", "nic", "core", "NUMA binding: nic, none or node:N"},
    {"RF_BIND_ADDR", "the cluster address", "session",
     "the local address a task listens on (e.g. 0.0.0.0); --bind_addr wins"},
    {"RF_MPI_HOSTS", "this machine", "cluster",
     "under mpirun with --num_ps: the ranks' hosts, a Slurm-style host list "
     "with OMPI_COMM_WORLD_LOCAL_SIZE ranks per host"},
    {"RF_LAUNCH_TASK", "unset", "tools",
     "set by rf-launch to the task's name: its tasks leave the [name] "
     "prefix of their lines to rf-launch"},
    {"RF_VERBS_DEVICE", "by address", "fabric/verbs",
     "verbs device name (e.g. rxe0, mlx5_0)"},
    {"RF_VERBS_PORT", "first active", "fabric/verbs", "verbs port number"},
    {"RF_VERBS_GID_INDEX", "RoCE v2 IPv4 GID", "fabric/verbs",
     "GID index for RoCE"},
    {"RF_VERBS_MAX_INLINE", "256", "fabric/verbs",
     "largest payload sent inline (0: never inline)"},
    {"RF_CQ_SPIN_US", "20", "fabric",
     "how long rf_cq_wait polls before it blocks"},
    {"RF_VERBS_CQ_MODE", "event", "fabric/verbs",
     "after the spin: event (completion channel) or poll"},
    {"RF_FUSION", "1", "graph",
     "run the fused MatMul + BiasAdd + Relu kernels (0: each op alone)"},
    {"RF_FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist", "graph/data",
     "where the Fashion-MNIST IDX files are"},
    {"RF_TRAINER_BLAS_REEXEC", "none", "rf-trainer",
     "internal: set by rf-trainer when it re-executes itself for OpenBLAS"},
    {"RF_TEST_CKPT_STOP_BEFORE_RENAME", "none", "core",
     "internal (tests): stop a checkpoint write before its rename"},
    {NULL, NULL, NULL, NULL},
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
