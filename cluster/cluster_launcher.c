/* cluster/cluster_launcher.c: the cluster and this task from a launcher's
 * rank variables, with --num_ps and --port_base (TensorFlow's
 * SlurmClusterResolver(jobs={"ps": N, "worker": M}, port_base=P)): Slurm
 * (SLURM_PROCID, SLURM_STEP_NUM_TASKS / SLURM_NTASKS, SLURM_STEP_NODELIST /
 * SLURM_JOB_NODELIST, SLURM_STEP_TASKS_PER_NODE / SLURM_TASKS_PER_NODE /
 * SLURM_NTASKS_PER_NODE), else Open MPI / PMIx (OMPI_COMM_WORLD_RANK or
 * PMIX_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK/LOCAL_SIZE,
 * the hosts from RF_MPI_HOSTS or all on this host). The rules are in
 * include/rdmaflow/cluster.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster_internal.h"
#include "rdmaflow/env.h"
#include "rdmaflow/status.h"

#define DEFAULT_PORT_BASE 8888 /* SlurmClusterResolver's */
#define MPI_LOCAL_HOST    "127.0.0.1"

const char *cl_getenv(char *const *envp, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; envp && envp[i]; i++)
        if (!strncmp(envp[i], name, n) && envp[i][n] == '=')
            return envp[i] + n + 1;
    return NULL;
}

/* The first of names that is set (its name in *which), NULL if none. */
static const char *first_of(char *const *envp, const char *const *names,
                            const char **which)
{
    for (size_t i = 0; names[i]; i++) {
        const char *v = cl_getenv(envp, names[i]);
        if (v) {
            *which = names[i];
            return v;
        }
    }
    *which = names[0];
    return NULL;
}

/* A variable holding a non-negative count or rank (<= max). */
static rf_status env_int(const char *name, const char *v, int64_t min,
                         int64_t max, int *out)
{
    int64_t x;
    *out = 0; /* set on every path: callers read it only on RF_OK */
    if (!*v || v[0] < '0' || v[0] > '9' ||
        rf_parse_int(v, min, max, name, &x) != RF_OK)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s=\"%s\" is not an integer in [%lld, %lld]", name,
                            RF_ECHO(v), (long long)min, (long long)max);
    *out = (int)x;
    return RF_OK;
}

rf_status cl_launcher_flags(const rf_cluster_flags *f, int *num_ps,
                            int *port_base)
{
    int64_t x;
    *port_base = DEFAULT_PORT_BASE;
    if (!f->num_ps)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "--port_base: only with --num_ps (the cluster "
                            "from Slurm or MPI ranks)");
    if (!*f->num_ps || f->num_ps[0] < '0' || f->num_ps[0] > '9' ||
        rf_parse_int(f->num_ps, 1, RF_HOSTLIST_MAX, "--num_ps", &x) != RF_OK)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "--num_ps: '%s' is not an integer in [1, %d]",
                            RF_ECHO(f->num_ps), RF_HOSTLIST_MAX);
    *num_ps = (int)x;
    if (f->port_base) {
        if (!*f->port_base || f->port_base[0] < '0' || f->port_base[0] > '9' ||
            rf_parse_int(f->port_base, 1, 65535, "--port_base", &x) != RF_OK)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "--port_base: '%s' is not a port in [1, "
                                "65535]",
                                RF_ECHO(f->port_base));
        *port_base = (int)x;
    }
    return RF_OK;
}

/* The addresses of every rank: host i runs counts[i] ranks, on ports
 * port_base, port_base + 1, ... (ranks in block order, as Slurm's default
 * distribution and SlurmClusterResolver). ranks 0..num_ps-1 are the ps
 * tasks, the rest the workers (jobs in name order: "ps" < "worker"). */
static rf_status build_jobs(char **hosts, const int *counts, size_t nhosts,
                            int num_ps, int port_base, const char *hosts_var,
                            cl_jobs *jobs)
{
    char where[48];
    snprintf(where, sizeof where, "%s (ps)", hosts_var);
    cl_job_begin(jobs, CL_PS, where, false);
    snprintf(where, sizeof where, "%s (worker)", hosts_var);
    cl_job_begin(jobs, CL_WORKER, where, false);
    int rank = 0;
    for (size_t h = 0; h < nhosts; h++) {
        for (int k = 0; k < counts[h]; k++, rank++) {
            if (port_base + k > 65535)
                return rf_error_set(RF_ERR_INVALID_ARG,
                                    "--port_base: %d + %d tasks on host "
                                    "\"%s\" go past port 65535",
                                    port_base, counts[h], hosts[h]);
            char addr[RF_HOST_MAX + 8];
            if (rf_format_host_port(hosts[h], (uint16_t)(port_base + k), addr,
                                    sizeof addr) != RF_OK)
                return rf_error_set(RF_ERR_INVALID_ARG,
                                    "%s: host %zu (%zu characters) is above "
                                    "the limit of %d characters",
                                    hosts_var, h, strlen(hosts[h]),
                                    RF_HOST_MAX - 1);
            cl_job *jb = &jobs->job[rank < num_ps ? CL_PS : CL_WORKER];
            rf_status st = cl_job_add(jb, addr, strlen(addr));
            if (st != RF_OK)
                return st;
        }
    }
    return cl_jobs_check(jobs, hosts_var);
}

/* Every rank variable that is set must name the same rank. */
static rf_status same_rank(char *const *envp, const char *name, int rank,
                           int64_t max, const char *against)
{
    const char *v = cl_getenv(envp, name);
    int r;
    if (!v)
        return RF_OK;
    rf_status st = env_int(name, v, 0, max, &r);
    if (st == RF_OK && r != rank)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s=%d and %s=%d disagree on this task's rank",
                            name, r, against, rank);
    return st;
}

/* The ports and roles number each node's tasks in rank order (block
 * distribution): rank must be task k of node h by that order. slurmstepd
 * says where the task really is (SLURM_LOCALID, SLURMD_NODENAME); under
 * srun --distribution=cyclic, plane or arbitrary they disagree, and the
 * task would listen or be looked for at another task's address. */
static rf_status slurm_check_block(char *const *envp, const cl_launch *out,
                                   int rank, const char *nodes_var)
{
    size_t h = 0;
    int k = rank, local;
    while (k >= out->counts[h])
        k -= out->counts[h++];
    const char *lv = cl_getenv(envp, "SLURM_LOCALID");
    const char *nv = cl_getenv(envp, "SLURMD_NODENAME");
    rf_status st;
    if (lv && (st = env_int("SLURM_LOCALID", lv, 0, 65535, &local)) != RF_OK)
        return st;
    if ((lv && local != k) || (nv && strcmp(nv, out->hosts[h]) != 0))
        return rf_error_set(
            RF_ERR_INVALID_ARG,
            "SLURM_PROCID=%d runs as task %s of node \"%s\" (SLURM_LOCALID, "
            "SLURMD_NODENAME) but the ranks' addresses number the tasks of "
            "each node of %s in rank order, which makes it task %d of node "
            "\"%s\": run srun with --distribution=block",
            rank, lv ? lv : "?", nv ? RF_ECHO(nv) : "?", nodes_var, k,
            out->hosts[h]);
    return RF_OK;
}

static rf_status resolve_slurm(char *const *envp, cl_launch *out)
{
    static const char *const ntasks_vars[] = {"SLURM_STEP_NUM_TASKS",
                                              "SLURM_NTASKS", NULL};
    static const char *const nodes_vars[] = {
        "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST", NULL};
    static const char *const tpn_vars[] = {"SLURM_STEP_TASKS_PER_NODE",
                                           "SLURM_TASKS_PER_NODE", NULL};
    const char *nt_var, *nodes_var, *tpn_var;
    const char *nt = first_of(envp, ntasks_vars, &nt_var);
    const char *nodes = first_of(envp, nodes_vars, &nodes_var);
    const char *tpn = first_of(envp, tpn_vars, &tpn_var);
    const char *ppn = cl_getenv(envp, "SLURM_NTASKS_PER_NODE");
    int ntasks, rank;
    rf_status st = env_int("SLURM_PROCID", cl_getenv(envp, "SLURM_PROCID"), 0,
                           RF_HOSTLIST_MAX, &rank);
    if (st != RF_OK)
        return st;
    if ((st = same_rank(envp, "PMIX_RANK", rank, RF_HOSTLIST_MAX,
                        "SLURM_PROCID")) != RF_OK ||
        (st = same_rank(envp, "OMPI_COMM_WORLD_RANK", rank, RF_HOSTLIST_MAX,
                        "SLURM_PROCID")) != RF_OK)
        return st;
    if (!nt)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "SLURM_PROCID is set but neither "
                            "SLURM_STEP_NUM_TASKS nor SLURM_NTASKS is: how "
                            "many tasks are there?");
    if (!nodes)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "SLURM_PROCID is set but none of "
                            "SLURM_STEP_NODELIST, SLURM_JOB_NODELIST, "
                            "SLURM_NODELIST is: on which hosts are the "
                            "tasks?");
    if ((st = env_int(nt_var, nt, 1, RF_HOSTLIST_MAX, &ntasks)) != RF_OK)
        return st;
    if (rank >= ntasks)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "SLURM_PROCID=%d is out of range (%s=%d: ranks "
                            "0-%d)",
                            rank, nt_var, ntasks, ntasks - 1);
    if ((st = rf_hostlist_expand(nodes, nodes_var, &out->hosts,
                                 &out->nhosts)) != RF_OK)
        return st;
    if (tpn) {
        if ((st = cl_tasks_per_node(tpn, tpn_var, &out->counts, &out->ncounts)))
            return st;
        if (out->ncounts != out->nhosts)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "%s=\"%s\" gives %zu node%s but %s lists %zu",
                                tpn_var, RF_ECHO(tpn), out->ncounts,
                                out->ncounts == 1 ? "" : "s", nodes_var,
                                out->nhosts);
    } else if (ppn) {
        int k;
        if ((st = env_int("SLURM_NTASKS_PER_NODE", ppn, 1, 65535, &k)))
            return st;
        if (!(out->counts = malloc(out->nhosts * sizeof *out->counts)))
            return rf_error_set(RF_ERR_NO_MEMORY, "Slurm: out of memory");
        out->ncounts = out->nhosts;
        for (size_t i = 0; i < out->nhosts; i++)
            out->counts[i] = k;
        tpn_var = "SLURM_NTASKS_PER_NODE";
    } else {
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "SLURM_PROCID is set but none of "
                            "SLURM_STEP_TASKS_PER_NODE, SLURM_TASKS_PER_NODE, "
                            "SLURM_NTASKS_PER_NODE is: how many tasks run on "
                            "each node?");
    }
    long sum = 0;
    for (size_t i = 0; i < out->ncounts; i++)
        sum += out->counts[i];
    if (sum != ntasks)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s gives %ld tasks on the nodes of %s but %s=%d",
                            tpn_var, sum, nodes_var, nt_var, ntasks);
    if ((st = slurm_check_block(envp, out, rank, nodes_var)) != RF_OK)
        return st;
    out->rank = rank;
    out->size = ntasks;
    snprintf(out->source, sizeof out->source,
             "Slurm (SLURM_PROCID %d of %s %d, %s, %s)", rank, nt_var, ntasks,
             nodes_var, tpn_var);
    return RF_OK;
}

static rf_status resolve_mpi(char *const *envp, cl_launch *out)
{
    const char *rank_var = "OMPI_COMM_WORLD_RANK";
    const char *rv = cl_getenv(envp, rank_var);
    if (!rv) {
        rank_var = "PMIX_RANK";
        rv = cl_getenv(envp, rank_var);
    }
    const char *sv = cl_getenv(envp, "OMPI_COMM_WORLD_SIZE");
    int rank, size;
    rf_status st = env_int(rank_var, rv, 0, RF_HOSTLIST_MAX, &rank);
    if (st != RF_OK)
        return st;
    if (!sv)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s is set but OMPI_COMM_WORLD_SIZE is not: how "
                            "many ranks are there? (under srun --mpi, Slurm's "
                            "SLURM_PROCID is used instead)",
                            rank_var);
    if ((st = env_int("OMPI_COMM_WORLD_SIZE", sv, 1, RF_HOSTLIST_MAX, &size)))
        return st;
    if (rank >= size)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s=%d is out of range (OMPI_COMM_WORLD_SIZE=%d: "
                            "ranks 0-%d)",
                            rank_var, rank, size, size - 1);
    if ((st = same_rank(envp, "PMIX_RANK", rank, RF_HOSTLIST_MAX, rank_var)))
        return st;
    const char *lsv = cl_getenv(envp, "OMPI_COMM_WORLD_LOCAL_SIZE");
    const char *lrv = cl_getenv(envp, "OMPI_COMM_WORLD_LOCAL_RANK");
    const char *hosts = cl_getenv(envp, "RF_MPI_HOSTS");
    int lsize = size, lrank = rank;
    if (lsv &&
        (st = env_int("OMPI_COMM_WORLD_LOCAL_SIZE", lsv, 1, size, &lsize)))
        return st;
    if (lrv &&
        (st = env_int("OMPI_COMM_WORLD_LOCAL_RANK", lrv, 0, lsize - 1, &lrank)))
        return st;
    if (!hosts && lsize != size)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "the ranks span several hosts "
                            "(OMPI_COMM_WORLD_LOCAL_SIZE=%d of "
                            "OMPI_COMM_WORLD_SIZE=%d): give their hosts in "
                            "RF_MPI_HOSTS (a Slurm-style host list, %d "
                            "ranks on each, in rank order)",
                            lsize, size, lsize);
    if ((st = rf_hostlist_expand(hosts ? hosts : MPI_LOCAL_HOST, "RF_MPI_HOSTS",
                                 &out->hosts, &out->nhosts)))
        return st;
    if ((size_t)lsize * out->nhosts != (size_t)size)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "RF_MPI_HOSTS lists %zu host%s with "
                            "OMPI_COMM_WORLD_LOCAL_SIZE=%d ranks each, but "
                            "OMPI_COMM_WORLD_SIZE=%d",
                            out->nhosts, out->nhosts == 1 ? "" : "s", lsize,
                            size);
    if (lrank != rank % lsize)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "OMPI_COMM_WORLD_LOCAL_RANK=%d but %s=%d: ranks "
                            "are not mapped to hosts in blocks of %d (run "
                            "mpirun --map-by slot or ppr:%d:node)",
                            lrank, rank_var, rank, lsize, lsize);
    if (!(out->counts = malloc(out->nhosts * sizeof *out->counts)))
        return rf_error_set(RF_ERR_NO_MEMORY, "MPI: out of memory");
    out->ncounts = out->nhosts;
    for (size_t i = 0; i < out->nhosts; i++)
        out->counts[i] = lsize;
    out->rank = rank;
    out->size = size;
    snprintf(out->source, sizeof out->source,
             "MPI (%s %d of "
             "OMPI_COMM_WORLD_SIZE %d, hosts %s)",
             rank_var, rank, size,
             hosts ? "from RF_MPI_HOSTS" : "all " MPI_LOCAL_HOST);
    return RF_OK;
}

bool cl_launcher_present(char *const *envp)
{
    return cl_getenv(envp, "SLURM_PROCID") ||
           cl_getenv(envp, "OMPI_COMM_WORLD_RANK") ||
           cl_getenv(envp, "PMIX_RANK");
}

void cl_launch_free(cl_launch *l)
{
    rf_hostlist_free(l->hosts, l->nhosts);
    free(l->counts);
    memset(l, 0, sizeof *l);
}

rf_status cl_resolve_launcher(char *const *envp, int num_ps, int port_base,
                              cl_launch *out, cl_jobs *jobs)
{
    memset(out, 0, sizeof *out);
    rf_status st;
    if (cl_getenv(envp, "SLURM_PROCID"))
        st = resolve_slurm(envp, out);
    else if (cl_launcher_present(envp))
        st = resolve_mpi(envp, out);
    else
        st = rf_error_set(RF_ERR_INVALID_ARG,
                          "--num_ps: no Slurm or MPI rank in the environment "
                          "(SLURM_PROCID, OMPI_COMM_WORLD_RANK and PMIX_RANK "
                          "are unset): run under srun or mpirun, or give "
                          "--ps_hosts/--worker_hosts or TF_CONFIG");
    if (st == RF_OK && num_ps >= out->size)
        st = rf_error_set(RF_ERR_INVALID_ARG,
                          "--num_ps: %d ps tasks leave no worker among the %d "
                          "tasks of %s",
                          num_ps, out->size, out->source);
    if (st == RF_OK)
        st = build_jobs(out->hosts, out->counts, out->nhosts, num_ps, port_base,
                        cl_getenv(envp, "SLURM_PROCID") ? "Slurm's node list"
                                                        : "the MPI ranks",
                        jobs);
    if (st == RF_OK) {
        out->job = out->rank < num_ps ? CL_PS : CL_WORKER;
        out->index = out->rank < num_ps ? out->rank : out->rank - num_ps;
    }
    return st;
}
