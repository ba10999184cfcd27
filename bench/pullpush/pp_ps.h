/* bench/pullpush/pp_ps.h: the ps tasks of rf-bench-pullpush. Each is this
 * program again (rf_spawn of /proc/self/exe, rdmaflow/spawn.h: fork + exec,
 * never a bare fork) as `--serve-ps --index I --ready-fd 3`: an
 * rf_ps_server on the provider and host given, listening on a free port
 * that it writes ("port N") to the ready pipe, serving until the client's
 * rf_ps_shutdown. The children die with the client. */
#ifndef RF_BENCH_PP_PS_H
#define RF_BENCH_PP_PS_H

#include <stdint.h>

#include "pp_opts.h"
#include "rdmaflow/spawn.h"

/* The --serve-ps role: returns the exit status (0 after a SHUTDOWN). */
int pp_ps_serve(const pp_opts *o);

/* Starts ps task index and reads its port (within o->timeout_s). 0, or -1
 * with a message printed (nothing left running). */
int pp_ps_spawn(const pp_opts *o, int index, rf_child *child, uint16_t *port);

/* Waits up to timeout_s for the child to exit (after SIGTERM first when
 * terminate) and returns its exit status, -1 if it was killed or died of
 * a signal. */
int pp_ps_reap(rf_child *child, bool terminate, int timeout_s);

#endif
