/* python/src/py_runtime.h: what py_local.c, py_server.c and py_monitored.c
 * share beyond pyrf.h: the C objects behind the Executor and Server types,
 * for the MonitoredSession that runs on them. Private to those files. */
#ifndef PY_RUNTIME_H
#define PY_RUNTIME_H

#include "pyrf.h"

/* ---- py_local.c -------------------------------------------------------- */

/* The executor of an Executor object; NULL with TypeError naming arg. */
rf_executor *pyrf_executor_ptr(PyObject *o, const char *arg);

/* ---- py_server.c ------------------------------------------------------- */

/* The server of a Server object; NULL with TypeError naming arg, or
 * RuntimeError if it was stopped. */
rf_server *pyrf_server_ptr(PyObject *o, const char *arg);
/* A session on the server began (+1) or was destroyed (-1): stop() refuses
 * while sessions use it. A session that is leaked never ends. */
void pyrf_server_sessions(PyObject *server, int delta);

#endif
