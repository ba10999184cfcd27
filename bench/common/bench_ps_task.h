/* bench/common/bench_ps_task.h: what every benchmark's ps task shares: the
 * task's body (a ps server on a provider, its port told to the parent),
 * reaping it, and the /proc figures a benchmark reports about it. Shared by
 * the benchmark programs below bench/ (rf-bench-pullpush, rf-bench-emb). */
#ifndef RF_BENCH_PS_TASK_H
#define RF_BENCH_PS_TASK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "rdmaflow/ps.h"
#include "rdmaflow/spawn.h"

/* Called once the server listens and its port was told; a non-zero return
 * stops the task with that exit status. */
typedef int (*bench_ps_started_fn)(rf_ps_server *server, void *arg);

/* The --serve-ps role of program prog: opens provider, starts ps task
 * ps_index on host (any port), writes "port N\n" to ready_fd, calls started
 * (may be NULL), then serves until a SHUTDOWN. Returns the exit status (0
 * after a SHUTDOWN); failures are said on stderr, prefixed with prog. */
int bench_ps_task_serve(const char *prog, const char *provider,
                        const char *host, int ps_index, int ready_fd,
                        bench_ps_started_fn started, void *arg);

/* Waits up to timeout_s for the task to exit (SIGTERM first when
 * terminate), closing its pipes; its exit status, or -1 (said, prefixed with
 * prog) when it was killed or did not exit normally. */
int bench_ps_task_reap(const char *prog, rf_child *child, bool terminate,
                       int timeout_s);

/* CPU time of process pid, all its threads, in microseconds (0 when /proc
 * has none). */
uint64_t bench_proc_cpu_us(pid_t pid);
/* Minor page faults of process pid so far (0 when /proc has none). */
uint64_t bench_proc_minflt(pid_t pid);

#endif
