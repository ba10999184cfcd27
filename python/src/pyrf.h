/* python/src/pyrf.h: what the files of the extension module
 * rdmaflow._rdmaflow share. The module is a thin, mechanical layer over
 * the public headers (include/rdmaflow/) only; TensorFlow's names and
 * semantics live in the pure-Python package above it (python/rdmaflow/).
 *
 * Files and what each owns:
 *   module.c        module init (concatenates every file's function table
 *                   and calls every file's type init), errors (the Python
 *                   error factory), dtypes and shapes, feeds (buffer
 *                   protocol, no copy) and fetches (memoryviews), the
 *                   blocking-call runner (GIL released, Ctrl-C checked)
 *   py_graph.c      the Graph and Node types, scopes (name, control
 *                   dependencies, colocation, devices, replica_device_setter,
 *                   partitioners) and every op builder, variables,
 *                   gradients and optimizers
 *   py_local.c      the Executor type and a local session (tf.Session())
 *   py_ckpt.c       checkpoint readers and checkpoint directories
 *   py_data.c       the Dataset type (rdmaflow/data.h: Fashion-MNIST with
 *                   the C library's seeded shuffles and shards)
 *   py_server.c     the Cluster and Server types
 *   py_monitored.c  the MonitoredSession type and hooks (built-in hooks as
 *                   C hooks; Python hooks called by a C hook under the GIL)
 *   py_summary.c    the SummaryWriter type (TensorBoard event files)
 *
 * Conventions: every rf_status error is raised through pyrf_raise (the
 * factory the Python package installed turns (status, message) into its
 * tf.errors class); argument errors the extension finds itself are
 * TypeError / ValueError with a message naming the argument. */
#ifndef PYRF_H
#define PYRF_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdbool.h>

#include "rdmaflow/rdmaflow.h"

/* ---- module.c: errors --------------------------------------------------- */

/* Raises the exception the error factory makes for (st, msg) (RuntimeError
 * before a factory is installed); returns NULL. msg NULL means
 * rf_error_message() of this thread. */
PyObject *pyrf_raise(rf_status st, const char *msg);
/* The same with a prefix: "<what>: <rf_error_message()>". */
PyObject *pyrf_raise_ctx(rf_status st, const char *what);

/* ---- module.c: dtypes and shapes --------------------------------------- */

/* "float32", "int32", "int64", "bool" <-> rf_dtype; -1 and a ValueError
 * naming the argument for another name. */
int pyrf_dtype_from_str(PyObject *name, const char *arg, rf_dtype *out);
PyObject *pyrf_dtype_str(rf_dtype dtype);
/* A shape from a sequence of ints (None or -1: unknown) or None (unknown
 * rank is refused: ValueError). allow_unknown false refuses unknown dims. */
int pyrf_shape_from_py(PyObject *seq, const char *arg, bool allow_unknown,
                       rf_shape *out);
/* A tuple with None for unknown dims. */
PyObject *pyrf_shape_to_py(const rf_shape *s);
/* The dtype of a buffer's struct format and item size ('f' float32, 'i'
 * 'l' 'q' int32 or int64 by size, '?' bool); -1 if none matches. */
int pyrf_buffer_dtype(const Py_buffer *v);

/* ---- module.c: feeds and fetches --------------------------------------- */

/* Feeds: nodes[i] gets the buffer of values[i], exported C-contiguous with
 * its format, its dtype and shape checked against the node's static ones
 * (InvalidArgument through pyrf_raise naming the node, the expected and
 * the given dtype and shape), never copied. Release with
 * pyrf_feeds_release, which may be called on a half-filled one. */
typedef struct pyrf_feeds {
    Py_ssize_t n;
    rf_node **nodes;
    rf_tensor *values;
    Py_buffer *views;
    Py_ssize_t nviews; /* how many views are held */
} pyrf_feeds;
int pyrf_feeds_get(PyObject *nodes, PyObject *values, pyrf_feeds *out);
void pyrf_feeds_release(pyrf_feeds *f);

/* Nodes from a sequence of Node objects into a new array (PyMem_Malloc);
 * -1 with TypeError naming arg and the position otherwise. */
int pyrf_nodes_from_seq(PyObject *seq, const char *arg, rf_node ***out,
                        Py_ssize_t *n);

/* A memoryview over t's data with its format and shape, without a copy:
 * valid only as long as the data is (the caller says until when). A
 * tensor without data (a run that returned none) gives None. */
PyObject *pyrf_tensor_view(const rf_tensor *t);
/* A list of pyrf_tensor_view of t[0..n). */
PyObject *pyrf_tensor_views(const rf_tensor *t, size_t n);

/* ---- module.c: blocking calls ------------------------------------------ */

/* A thread that runs the blocking calls of one object (a server's join, a
 * monitored session's creation, runs and close), so that the Python thread
 * waiting for it releases the GIL and checks for signals every 100 ms:
 * Ctrl-C raises KeyboardInterrupt in the caller within that time while the
 * call goes on in the runner. A call still running when the caller was
 * interrupted makes the runner busy: the next call first waits for it
 * (again interruptibly), and pyrf_runner_free of a busy runner leaks it
 * with what it works on (the owner must not free the objects the call
 * uses: check pyrf_runner_busy first).
 *
 * fn runs on the runner thread; rf_error_message() of that thread is
 * copied for the caller, so pyrf_raise(st, pyrf_runner_message(r)) raises
 * the right message. */
typedef struct pyrf_runner pyrf_runner;
typedef rf_status (*pyrf_blocking_fn)(void *arg);
pyrf_runner *pyrf_runner_new(void); /* NULL with MemoryError set */
/* Calls fn(arg) on the runner. Returns 0 with *st set when it finished,
 * -1 with a Python exception set (KeyboardInterrupt or another signal
 * handler's exception) when the caller was interrupted first. Called with
 * the GIL held; releases it while waiting. */
int pyrf_runner_call(pyrf_runner *r, pyrf_blocking_fn fn, void *arg,
                     rf_status *st);
const char *pyrf_runner_message(const pyrf_runner *r);
bool pyrf_runner_busy(pyrf_runner *r);
void pyrf_runner_free(pyrf_runner *r);

/* ---- py_graph.c -------------------------------------------------------- */

extern PyTypeObject pyrf_graph_type;
extern PyTypeObject pyrf_node_type;

/* A Node object for n of the graph object graph (a new reference; None
 * for NULL n). */
PyObject *pyrf_node_new(PyObject *graph, rf_node *n);
/* The node of a Node object; NULL with TypeError naming arg otherwise. */
rf_node *pyrf_node_ptr(PyObject *o, const char *arg);
/* The graph object a Node belongs to (borrowed). */
PyObject *pyrf_node_graph_obj(PyObject *node);
/* The graph of a Graph object; NULL with TypeError naming arg. */
rf_graph *pyrf_graph_ptr(PyObject *o, const char *arg);

/* ---- py_summary.c ------------------------------------------------------ */

extern PyTypeObject pyrf_summary_writer_type;
/* The writer of a SummaryWriter object; NULL with TypeError naming arg. */
rf_summary_writer *pyrf_summary_writer_ptr(PyObject *o, const char *arg);
/* Summary tags: the str items of the sequence seq as UTF-8 strings in
 * *out (PyMem_Calloc'ed, one more NULL entry; PyMem_Free it), their count
 * in *n. They live as long as *keep (the sequence as a new reference,
 * Py_DECREF it after *out). -1 with the error: TypeError "tags: expected
 * a sequence" or "tags[i]: expected a str, got T", or MemoryError; then
 * *out and *keep are NULL. */
int pyrf_tags_from_seq(PyObject *seq, PyObject **keep, const char ***out,
                       Py_ssize_t *n);

/* ---- every file's function table and type init ------------------------- */

extern PyMethodDef pyrf_module_functions[];
extern PyMethodDef pyrf_graph_functions[];
extern PyMethodDef pyrf_local_functions[];
extern PyMethodDef pyrf_ckpt_functions[];
extern PyMethodDef pyrf_data_functions[];
extern PyMethodDef pyrf_server_functions[];
extern PyMethodDef pyrf_monitored_functions[];

int pyrf_graph_init(PyObject *module);
int pyrf_local_init(PyObject *module);
int pyrf_ckpt_init(PyObject *module);
int pyrf_data_init(PyObject *module);
int pyrf_server_init(PyObject *module);
int pyrf_monitored_init(PyObject *module);
int pyrf_summary_init(PyObject *module);

#endif
