/* bench/emblookup/el_ps.h: the ps tasks of rf-bench-emb. Each is this
 * program again (rf_spawn of /proc/self/exe: fork + exec) as `--serve-ps
 * --index I`: an rf_ps_server on the provider and host given that writes
 * "port N" on its stdout (a pipe), then serves until the worker's
 * rf_ps_shutdown. Meanwhile each line "counters" on its stdin (a pipe)
 * is answered on stdout with one line of its rf_ps_server_counters
 * ("COUNTERS gather=N gather_rows=N gather_refused=N sparse=N
 * sparse_rows=N"), so the worker can take each way's deltas. The worker
 * also reads each task's CPU time from /proc/PID/stat. The children die
 * with the worker. */
#ifndef RF_BENCH_EL_PS_H
#define RF_BENCH_EL_PS_H

#include <stdint.h>

#include "el_opts.h"
#include "rdmaflow/spawn.h"

typedef struct el_ps_counters {
    uint64_t gather, gather_rows, gather_refused, sparse, sparse_rows;
} el_ps_counters;

/* The --serve-ps role: the exit status (0 after a SHUTDOWN). */
int el_ps_serve(const el_opts *o);
/* Starts ps task index and reads its port. 0, or -1 (said; nothing left
 * running). */
int el_ps_spawn(const el_opts *o, int index, rf_child *child, uint16_t *port);
/* Asks a task for its counters. 0, or -1 (said). */
int el_ps_counters_get(rf_child *child, int timeout_s, el_ps_counters *out);
/* CPU time of the process (all its threads) in microseconds: the run
 * time in /proc/PID/task/TID/schedstat (ns resolution), else utime + stime
 * of /proc/PID/stat (clock ticks); 0 when /proc cannot tell. */
uint64_t el_ps_cpu_us(const rf_child *child);
/* Minor page faults of the process so far (/proc/PID/stat), 0 when /proc
 * cannot tell. */
uint64_t el_ps_minflt(const rf_child *child);
/* Waits for the task to exit (SIGTERM first when terminate); its exit
 * status, or -1. */
int el_ps_reap(rf_child *child, bool terminate, int timeout_s);

#endif
