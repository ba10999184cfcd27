/* tests/unit/cluster/test_launcher.c: the cluster from launchers
 * (rf_cluster_resolve_env with --num_ps/--port_base): Slurm host lists
 * expanded as `scontrol show hostnames` does (malformed lists with their
 * messages), Slurm's and Open MPI/PMIx's rank variables placed as
 * TensorFlow's SlurmClusterResolver places them, and the precedence of the
 * flags and TF_CONFIG over them, every conflict or partial setting an
 * error naming the variables.
 * Usage: rf_test_launcher [hostlist|slurm|mpi|precedence]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/cluster.h"
#include "tests/common/check.h"

/* ---- host lists --------------------------------------------------------- */

/* text expands to the hosts of want, space-separated. */
static void hl_ok_at(int line, const char *text, const char *want)
{
    char **h = NULL;
    size_t n = 0;
    rf_status st = rf_hostlist_expand(text, "NL", &h, &n);
    CHECK(st == RF_OK, "line %d: \"%s\": %s", line, text, rf_status_string(st));
    char got[4096] = "";
    for (size_t i = 0; i < n; i++) {
        strncat(got, i ? " " : "", sizeof got - strlen(got) - 1);
        strncat(got, h[i], sizeof got - strlen(got) - 1);
    }
    CHECK(strcmp(got, want) == 0, "line %d: \"%s\"\n  got  %s\n  want %s", line,
          text, got, want);
    rf_hostlist_free(h, n);
}
#define HL_OK(text, want) hl_ok_at(__LINE__, text, want)

static void hl_err_at(int line, const char *text, const char *msg)
{
    char **h = (char **)1;
    size_t n = 7;
    rf_status st = rf_hostlist_expand(text, "NL", &h, &n);
    CHECK(st == RF_ERR_INVALID_ARG && !h && n == 0 &&
              strcmp(rf_error_message(), msg) == 0,
          "line %d: \"%s\": %s\n  got  %s\n  want %s", line, text,
          rf_status_string(st), rf_error_message(), msg);
}
#define HL_ERR(text, msg) hl_err_at(__LINE__, text, msg)

static void test_hostlist(void)
{
    HL_OK("node1", "node1");
    HL_OK("a,b,a", "a b a"); /* order kept, no deduplication */
    HL_OK("node[01-03,07],gpu-a[1-2]",
          "node01 node02 node03 node07 gpu-a1 gpu-a2");
    HL_OK("n[8-10]", "n8 n9 n10");
    HL_OK("n[08-10]", "n08 n09 n10");
    HL_OK("n[007]", "n007");
    HL_OK("r[1-2]n[8-9]", "r1n8 r1n9 r2n8 r2n9"); /* leftmost slowest */
    HL_OK("rack[1-2]-node[01-02].ib", "rack1-node01.ib rack1-node02.ib "
                                      "rack2-node01.ib rack2-node02.ib");
    HL_OK("127.0.0.[1-3]", "127.0.0.1 127.0.0.2 127.0.0.3");
    HL_OK("[1-2]x", "1x 2x");

    HL_ERR("", "NL is empty");
    HL_ERR("node[1-3", "NL \"node[1-3\": '[' at offset 4 is not closed");
    HL_ERR("node1-3]", "NL \"node1-3]\": ']' at offset 7 without a '['");
    HL_ERR("n[1-[2]]", "NL \"n[1-[2]]\": '[' at offset 4 inside the brackets "
                       "opened at offset 1 (brackets do not nest)");
    HL_ERR("n[]", "NL \"n[]\": empty brackets at offset 1");
    HL_ERR("a,,b", "NL \"a,,b\": empty host name at offset 2 (stray comma?)");
    HL_ERR("a,", "NL \"a,\": empty host name at offset 2 (stray comma?)");
    HL_ERR(",a", "NL \",a\": empty host name at offset 0 (stray comma?)");
    HL_ERR("n[3-1]",
           "NL \"n[3-1]\": range \"3-1\" at offset 2 goes down (3 > 1)");
    HL_ERR("n[1,,2]", "NL \"n[1,,2]\": empty range at offset 4");
    HL_ERR("n[1-]", "NL \"n[1-]\": empty range at offset 4");
    HL_ERR("n[a-2]", "NL \"n[a-2]\": \"a\" at offset 2 is not a number (a "
                     "range is N or N-M in decimal, at most 9 digits)");
    HL_ERR("n[1-2-3]", "NL \"n[1-2-3]\": \"2-3\" at offset 4 is not a number "
                       "(a range is N or N-M in decimal, at most 9 digits)");
    HL_ERR("a b", "NL \"a b\": blank at offset 1 (hosts are separated by "
                  "commas)");
    HL_ERR("n[0-99999]", "NL: more than 65536 hosts");
    HL_ERR("n[1-300]m[1-300]", "NL: more than 65536 hosts");
    char **h;
    size_t n;
    CHECK(rf_hostlist_expand(NULL, NULL, &h, &n) == RF_ERR_INVALID_ARG &&
              !strcmp(rf_error_message(), "host list is empty"),
          "%s", rf_error_message());
}

/* ---- resolution from an environment ------------------------------------ */

static rf_cluster_flags L(const char *num_ps, const char *port_base)
{
    return (rf_cluster_flags){.num_ps = num_ps, .port_base = port_base};
}

/* Resolves with env (a NULL-terminated list) and requires a cluster. */
static rf_cluster *env_ok_at(int line, rf_cluster_flags f, char *const *env)
{
    rf_cluster *c = NULL;
    rf_status st = rf_cluster_resolve_env(&f, env, &c);
    CHECK(st == RF_OK && c, "line %d: %s: %s", line, rf_status_string(st),
          rf_error_message());
    return c;
}
#define ENV_OK(f, ...)                                                         \
    env_ok_at(__LINE__, f, (char *const[]){__VA_ARGS__, NULL})

static void env_err_at(int line, rf_cluster_flags f, char *const *env,
                       const char *msg)
{
    rf_cluster *c = (rf_cluster *)1;
    rf_status st = rf_cluster_resolve_env(&f, env, &c);
    CHECK(st == RF_ERR_INVALID_ARG && !c &&
              strcmp(rf_error_message(), msg) == 0,
          "line %d: %s\n  got  %s\n  want %s", line, rf_status_string(st),
          rf_error_message(), msg);
}
#define ENV_ERR(f, msg, ...)                                                   \
    env_err_at(__LINE__, f, (char *const[]){__VA_ARGS__, NULL}, msg)

/* The cluster's ps and worker addresses, "ps: a b; worker: c d". */
static void jobs_at(int line, const rf_cluster *c, const char *want)
{
    char got[2048] = "";
    const char *jobs[] = {"ps", "worker"};
    for (int j = 0; j < 2; j++) {
        snprintf(got + strlen(got), sizeof got - strlen(got),
                 "%s%s:", j ? "; " : "", jobs[j]);
        for (int i = 0; i < rf_cluster_num_tasks(c, jobs[j]); i++)
            snprintf(got + strlen(got), sizeof got - strlen(got), " %s",
                     rf_cluster_task_address(c, jobs[j], i));
    }
    CHECK(strcmp(got, want) == 0, "line %d:\n  got  %s\n  want %s", line, got,
          want);
}
#define JOBS(c, want) jobs_at(__LINE__, c, want)

static void self_at(int line, const rf_cluster *c, const char *job, int index,
                    bool chief)
{
    const rf_cluster_task *t = rf_cluster_self(c);
    CHECK(t && !strcmp(t->job, job) && t->index == index &&
              t->is_chief == chief,
          "line %d: self %s %d chief %d, want %s %d %d", line, t ? t->job : "-",
          t ? t->index : -1, t ? t->is_chief : -1, job, index, chief);
}
#define SELF(c, job, index, chief) self_at(__LINE__, c, job, index, chief)

static void test_slurm(void)
{
    /* srun -N3 -n5 (2+2+1): block distribution, ports per node from the
     * base; ranks 0-1 ps, 2-4 workers (sorted jobs: "ps" < "worker"). */
    rf_cluster *c =
        ENV_OK(L("2", "2222"), "SLURM_PROCID=2", "SLURM_STEP_NUM_TASKS=5",
               "SLURM_STEP_NODELIST=node[01-02],gpu-a1",
               "SLURM_STEP_TASKS_PER_NODE=2(x2),1", "SLURM_NTASKS=99",
               "SLURM_JOB_NODELIST=other", "SLURM_TASKS_PER_NODE=99");
    JOBS(c, "ps: node01:2222 node01:2223; worker: node02:2222 node02:2223 "
            "gpu-a1:2222");
    SELF(c, "worker", 0, true);
    CHECK(rf_cluster_num_ps(c) == 2 && rf_cluster_num_workers(c) == 3,
          "%d ps %d workers", rf_cluster_num_ps(c), rf_cluster_num_workers(c));
    CHECK(strstr(rf_cluster_source(c), "Slurm (SLURM_PROCID 2 of "
                                       "SLURM_STEP_NUM_TASKS 5"),
          "%s", rf_cluster_source(c));
    rf_cluster_destroy(c);

    /* sbatch's job variables, the default port base 8888 */
    c = ENV_OK(L("1", NULL), "SLURM_PROCID=0", "SLURM_NTASKS=4",
               "SLURM_JOB_NODELIST=127.0.0.1", "SLURM_TASKS_PER_NODE=4");
    JOBS(c, "ps: 127.0.0.1:8888; worker: 127.0.0.1:8889 127.0.0.1:8890 "
            "127.0.0.1:8891");
    SELF(c, "ps", 0, false);
    CHECK(strstr(rf_cluster_source(c), "--num_ps 1, --port_base 8888"), "%s",
          rf_cluster_source(c));
    rf_cluster_destroy(c);

    /* SLURM_NTASKS_PER_NODE: the same count on every node; PMIX_RANK that
     * agrees (srun --mpi=pmix) */
    c = ENV_OK(L("2", "5000"), "SLURM_PROCID=3", "SLURM_NTASKS=4",
               "SLURM_NODELIST=h[1-2]", "SLURM_NTASKS_PER_NODE=2",
               "PMIX_RANK=3");
    JOBS(c, "ps: h1:5000 h1:5001; worker: h2:5000 h2:5001");
    SELF(c, "worker", 1, false);
    rf_cluster_destroy(c);

    /* slurmstepd's own account of where the task is agrees with the block
     * order (srun -N2 -n4, rank 3: task 1 of h2) */
    c = ENV_OK(L("2", "5000"), "SLURM_PROCID=3", "SLURM_STEP_NUM_TASKS=4",
               "SLURM_STEP_NODELIST=h[1-2]", "SLURM_STEP_TASKS_PER_NODE=2(x2)",
               "SLURM_LOCALID=1", "SLURMD_NODENAME=h2");
    SELF(c, "worker", 1, false);
    rf_cluster_destroy(c);

    /* partial or inconsistent Slurm settings */
    rf_cluster_flags two = L("2", NULL);
    /* srun --distribution=cyclic puts rank 1 on h2 as its task 0; by the
     * addresses' block order it would be h1's task 1 */
    ENV_ERR(two,
            "SLURM_PROCID=1 runs as task 0 of node \"h2\" (SLURM_LOCALID, "
            "SLURMD_NODENAME) but the ranks' addresses number the tasks of "
            "each node of SLURM_STEP_NODELIST in rank order, which makes it "
            "task 1 of node \"h1\": run srun with --distribution=block",
            "SLURM_PROCID=1", "SLURM_STEP_NUM_TASKS=4",
            "SLURM_STEP_NODELIST=h[1-2]", "SLURM_STEP_TASKS_PER_NODE=2(x2)",
            "SLURM_LOCALID=0", "SLURMD_NODENAME=h2");
    /* each variable alone (arbitrary distribution: the right local id on
     * the wrong node; the other missing) */
    ENV_ERR(two,
            "SLURM_PROCID=0 runs as task ? of node \"h2\" (SLURM_LOCALID, "
            "SLURMD_NODENAME) but the ranks' addresses number the tasks of "
            "each node of SLURM_JOB_NODELIST in rank order, which makes it "
            "task 0 of node \"h1\": run srun with --distribution=block",
            "SLURM_PROCID=0", "SLURM_NTASKS=4", "SLURM_JOB_NODELIST=h[1-2]",
            "SLURM_TASKS_PER_NODE=3,1", "SLURMD_NODENAME=h2");
    ENV_ERR(two,
            "SLURM_PROCID=2 runs as task 0 of node \"?\" (SLURM_LOCALID, "
            "SLURMD_NODENAME) but the ranks' addresses number the tasks of "
            "each node of SLURM_JOB_NODELIST in rank order, which makes it "
            "task 2 of node \"h1\": run srun with --distribution=block",
            "SLURM_PROCID=2", "SLURM_NTASKS=4", "SLURM_JOB_NODELIST=h[1-2]",
            "SLURM_TASKS_PER_NODE=3,1", "SLURM_LOCALID=0");
    ENV_ERR(two, "SLURM_LOCALID=\"-1\" is not an integer in [0, 65535]",
            "SLURM_PROCID=2", "SLURM_NTASKS=4", "SLURM_JOB_NODELIST=h[1-2]",
            "SLURM_TASKS_PER_NODE=3,1", "SLURM_LOCALID=-1");
    ENV_ERR(two,
            "SLURM_PROCID is set but neither SLURM_STEP_NUM_TASKS nor "
            "SLURM_NTASKS is: how many tasks are there?",
            "SLURM_PROCID=0", "SLURM_JOB_NODELIST=a", "SLURM_TASKS_PER_NODE=4");
    ENV_ERR(two,
            "SLURM_PROCID is set but none of SLURM_STEP_NODELIST, "
            "SLURM_JOB_NODELIST, SLURM_NODELIST is: on which hosts are the "
            "tasks?",
            "SLURM_PROCID=0", "SLURM_NTASKS=4", "SLURM_TASKS_PER_NODE=4");
    ENV_ERR(two,
            "SLURM_PROCID is set but none of SLURM_STEP_TASKS_PER_NODE, "
            "SLURM_TASKS_PER_NODE, SLURM_NTASKS_PER_NODE is: how many tasks "
            "run on each node?",
            "SLURM_PROCID=0", "SLURM_NTASKS=4", "SLURM_JOB_NODELIST=a");
    ENV_ERR(two, "SLURM_PROCID=\"x\" is not an integer in [0, 65536]",
            "SLURM_PROCID=x", "SLURM_NTASKS=4");
    ENV_ERR(two, "SLURM_PROCID=4 is out of range (SLURM_NTASKS=4: ranks 0-3)",
            "SLURM_PROCID=4", "SLURM_NTASKS=4", "SLURM_JOB_NODELIST=a",
            "SLURM_TASKS_PER_NODE=4");
    ENV_ERR(two,
            "SLURM_TASKS_PER_NODE gives 3 tasks on the nodes of "
            "SLURM_JOB_NODELIST but SLURM_NTASKS=4",
            "SLURM_PROCID=0", "SLURM_NTASKS=4", "SLURM_JOB_NODELIST=a[1-2]",
            "SLURM_TASKS_PER_NODE=2,1");
    ENV_ERR(two,
            "SLURM_TASKS_PER_NODE=\"4\" gives 1 node but SLURM_JOB_NODELIST "
            "lists 2",
            "SLURM_PROCID=0", "SLURM_NTASKS=4", "SLURM_JOB_NODELIST=a[1-2]",
            "SLURM_TASKS_PER_NODE=4");
    ENV_ERR(two,
            "SLURM_TASKS_PER_NODE \"2(3)\": malformed at offset 1 (expected "
            "counts like \"2(x3),1\": N or N(xM), N in 1-65535, separated by "
            "commas)",
            "SLURM_PROCID=0", "SLURM_NTASKS=4", "SLURM_JOB_NODELIST=a",
            "SLURM_TASKS_PER_NODE=2(3)");
    ENV_ERR(two, "SLURM_JOB_NODELIST \"a[1-\": '[' at offset 1 is not closed",
            "SLURM_PROCID=0", "SLURM_NTASKS=4", "SLURM_JOB_NODELIST=a[1-",
            "SLURM_TASKS_PER_NODE=4");
    ENV_ERR(two, "PMIX_RANK=1 and SLURM_PROCID=0 disagree on this task's rank",
            "SLURM_PROCID=0", "SLURM_NTASKS=4", "PMIX_RANK=1");
    ENV_ERR(L("4", NULL),
            "--num_ps: 4 ps tasks leave no worker among the 4 tasks of Slurm "
            "(SLURM_PROCID 0 of SLURM_NTASKS 4, SLURM_JOB_NODELIST, "
            "SLURM_TASKS_PER_NODE)",
            "SLURM_PROCID=0", "SLURM_NTASKS=4", "SLURM_JOB_NODELIST=a",
            "SLURM_TASKS_PER_NODE=4");
    ENV_ERR(L("1", "65534"),
            "--port_base: 65534 + 4 tasks on host \"a\" go past port 65535",
            "SLURM_PROCID=0", "SLURM_NTASKS=4", "SLURM_JOB_NODELIST=a",
            "SLURM_TASKS_PER_NODE=4");
    ENV_ERR(two,
            "Slurm's node list (worker): task 0 \"a:8888\" is the same "
            "address as ps task 0 (\"a:8888\")",
            "SLURM_PROCID=0", "SLURM_NTASKS=4", "SLURM_JOB_NODELIST=a,a",
            "SLURM_TASKS_PER_NODE=2(x2)");
}

static void test_mpi(void)
{
    /* mpirun -np 4 on this host */
    rf_cluster *c =
        ENV_OK(L("2", "7000"), "OMPI_COMM_WORLD_RANK=1",
               "OMPI_COMM_WORLD_SIZE=4", "OMPI_COMM_WORLD_LOCAL_RANK=1",
               "OMPI_COMM_WORLD_LOCAL_SIZE=4", "PMIX_RANK=1");
    JOBS(c, "ps: 127.0.0.1:7000 127.0.0.1:7001; worker: 127.0.0.1:7002 "
            "127.0.0.1:7003");
    SELF(c, "ps", 1, false);
    rf_cluster_destroy(c);

    /* two hosts of two ranks, from RF_MPI_HOSTS */
    c = ENV_OK(L("1", NULL), "OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_SIZE=4",
               "OMPI_COMM_WORLD_LOCAL_RANK=0", "OMPI_COMM_WORLD_LOCAL_SIZE=2",
               "RF_MPI_HOSTS=m[1-2]");
    JOBS(c, "ps: m1:8888; worker: m1:8889 m2:8888 m2:8889");
    SELF(c, "worker", 1, false);
    rf_cluster_destroy(c);

    /* PMIx's rank with Open MPI's size */
    c = ENV_OK(L("1", NULL), "PMIX_RANK=0", "OMPI_COMM_WORLD_SIZE=2");
    SELF(c, "ps", 0, false);
    rf_cluster_destroy(c);

    rf_cluster_flags one = L("1", NULL);
    ENV_ERR(one,
            "PMIX_RANK is set but OMPI_COMM_WORLD_SIZE is not: how many ranks "
            "are there? (under srun --mpi, Slurm's SLURM_PROCID is used "
            "instead)",
            "PMIX_RANK=0");
    ENV_ERR(one,
            "PMIX_RANK=0 and OMPI_COMM_WORLD_RANK=1 disagree on this task's "
            "rank",
            "OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2", "PMIX_RANK=0");
    ENV_ERR(one,
            "OMPI_COMM_WORLD_RANK=2 is out of range (OMPI_COMM_WORLD_SIZE=2: "
            "ranks 0-1)",
            "OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_SIZE=2");
    ENV_ERR(one,
            "the ranks span several hosts (OMPI_COMM_WORLD_LOCAL_SIZE=2 of "
            "OMPI_COMM_WORLD_SIZE=4): give their hosts in RF_MPI_HOSTS (a "
            "Slurm-style host list, 2 ranks on each, in rank order)",
            "OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=4",
            "OMPI_COMM_WORLD_LOCAL_SIZE=2");
    ENV_ERR(one,
            "RF_MPI_HOSTS lists 3 hosts with OMPI_COMM_WORLD_LOCAL_SIZE=2 "
            "ranks each, but OMPI_COMM_WORLD_SIZE=4",
            "OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=4",
            "OMPI_COMM_WORLD_LOCAL_SIZE=2", "RF_MPI_HOSTS=m[1-3]");
    ENV_ERR(one,
            "OMPI_COMM_WORLD_LOCAL_RANK=1 but OMPI_COMM_WORLD_RANK=2: ranks "
            "are not mapped to hosts in blocks of 2 (run mpirun --map-by slot "
            "or ppr:2:node)",
            "OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_SIZE=4",
            "OMPI_COMM_WORLD_LOCAL_RANK=1", "OMPI_COMM_WORLD_LOCAL_SIZE=2",
            "RF_MPI_HOSTS=m[1-2]");
    ENV_ERR(one, "RF_MPI_HOSTS \"m[1-\": '[' at offset 1 is not closed",
            "OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=2",
            "RF_MPI_HOSTS=m[1-");
}

static void test_precedence(void)
{
    const char *mpi[] = {"OMPI_COMM_WORLD_RANK=3", "OMPI_COMM_WORLD_SIZE=4",
                         "SLURM_PROCID=1", "SLURM_NTASKS=4", NULL};
    /* flags win over the rank variables (which are then ignored) */
    rf_cluster_flags f = {.ps_hosts = "p:1",
                          .worker_hosts = "w:1,w:2",
                          .job_name = "worker",
                          .task_index = "1"};
    rf_cluster *c = NULL;
    CHECK_OK(rf_cluster_resolve_env(&f, (char *const *)mpi, &c));
    SELF(c, "worker", 1, false);
    CHECK(strstr(rf_cluster_source(c), "--ps_hosts"), "%s",
          rf_cluster_source(c));
    rf_cluster_destroy(c);
    /* TF_CONFIG wins too, and is read from the environment given */
    c = ENV_OK((rf_cluster_flags){0},
               "TF_CONFIG={\"cluster\": {\"ps\": [\"p:1\"], \"worker\": "
               "[\"w:1\"]}, \"task\": {\"type\": \"ps\", \"index\": 0}}",
               "SLURM_PROCID=1", "SLURM_NTASKS=4");
    SELF(c, "ps", 0, false);
    rf_cluster_destroy(c);
    /* without --num_ps the rank variables do not make a cluster */
    c = (rf_cluster *)1;
    CHECK(rf_cluster_resolve_env(NULL, (char *const *)mpi, &c) == RF_OK && !c,
          "a local run");

    /* mixing is an error naming both sides */
    rf_cluster_flags mix = {.num_ps = "1", .ps_hosts = "p:1"};
    ENV_ERR(mix,
            "--num_ps: not with --ps_hosts (--num_ps takes the cluster and "
            "the task from Slurm's or MPI's rank; --ps_hosts gives them "
            "itself: drop one)",
            "SLURM_PROCID=0");
    mix = (rf_cluster_flags){.num_ps = "1", .task_index = "0"};
    ENV_ERR(mix,
            "--num_ps: not with --task_index (--num_ps takes the cluster and "
            "the task from Slurm's or MPI's rank; --task_index gives them "
            "itself: drop one)",
            "SLURM_PROCID=0");
    ENV_ERR(L("1", NULL),
            "--num_ps: not with TF_CONFIG's cluster (--num_ps takes the "
            "cluster and the task from Slurm's or MPI's rank: unset "
            "TF_CONFIG or drop --num_ps)",
            "TF_CONFIG={\"cluster\": {\"ps\": [\"p:1\"], \"worker\": "
            "[\"w:1\"]}}",
            "SLURM_PROCID=0");
    ENV_ERR(L("1", NULL),
            "--num_ps: not with TF_CONFIG's task (--num_ps takes the cluster "
            "and the task from Slurm's or MPI's rank: unset TF_CONFIG or "
            "drop --num_ps)",
            "TF_CONFIG={\"task\": {\"type\": \"worker\", \"index\": 0}}",
            "SLURM_PROCID=0");
    ENV_ERR(L(NULL, "2222"),
            "--port_base: only with --num_ps (the cluster from Slurm or MPI "
            "ranks)",
            "SLURM_PROCID=0");
    ENV_ERR(L("0", NULL), "--num_ps: '0' is not an integer in [1, 65536]",
            "SLURM_PROCID=0");
    ENV_ERR(L("1", "x"), "--port_base: 'x' is not a port in [1, 65535]",
            "SLURM_PROCID=0");
    ENV_ERR(L("1", NULL),
            "--num_ps: no Slurm or MPI rank in the environment (SLURM_PROCID, "
            "OMPI_COMM_WORLD_RANK and PMIX_RANK are unset): run under srun "
            "or mpirun, or give --ps_hosts/--worker_hosts or TF_CONFIG",
            "HOME=/");
    /* rf_cluster_resolve sees no environment but TF_CONFIG */
    c = (rf_cluster *)1;
    rf_cluster_flags lf = L("1", NULL);
    CHECK(rf_cluster_resolve(&lf, NULL, &c) == RF_ERR_INVALID_ARG && !c,
          "rf_cluster_resolve with --num_ps and no rank");
}

int main(int argc, char **argv)
{
    static const rft_group groups[] = {
        {"hostlist", test_hostlist},
        {"slurm", test_slurm},
        {"mpi", test_mpi},
        {"precedence", test_precedence},
    };
    return rft_groups_run(groups, sizeof groups / sizeof groups[0], argc, argv);
}
