/* python/src/py_local.c: the Executor type (rf_executor: the thread pool
 * every plan runs on) and LocalSession, tf.Session() in this process: runs
 * of a graph through rf_plans cached by their (feeds, fetches, targets),
 * with the GIL released while a plan runs. */
#include "py_runtime.h"

#include <limits.h>
#include <string.h>

/* ---- Executor ------------------------------------------------------------ */

typedef struct executor_obj {
    PyObject_HEAD
    rf_executor *ex;
} executor_obj;

static PyTypeObject executor_type;

static PyObject *executor_new(PyTypeObject *type, PyObject *args,
                              PyObject *kw)
{
    static char *kwlist[] = {"threads", NULL};
    int threads = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|i:Executor", kwlist,
                                     &threads))
        return NULL;
    if (threads < 0) {
        PyErr_Format(PyExc_ValueError,
                     "threads: %d is negative (0: every online CPU)", threads);
        return NULL;
    }
    executor_obj *self = (executor_obj *)type->tp_alloc(type, 0);
    if (!self)
        return NULL;
    rf_executor_options o = {.threads = threads};
    rf_status st = rf_executor_create(&o, &self->ex);
    if (st != RF_OK) {
        Py_DECREF(self);
        return pyrf_raise_ctx(st, "Executor");
    }
    return (PyObject *)self;
}

static void executor_dealloc(executor_obj *self)
{
    if (self->ex) {
        Py_BEGIN_ALLOW_THREADS;
        rf_executor_destroy(self->ex);
        Py_END_ALLOW_THREADS;
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *executor_get_threads(executor_obj *self, void *closure)
{
    (void)closure;
    return PyLong_FromLong(rf_executor_threads(self->ex));
}

static PyGetSetDef executor_getset[] = {
    {"threads", (getter)executor_get_threads, NULL,
     "compute threads, the caller included", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject executor_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rdmaflow._rdmaflow.Executor",
    .tp_basicsize = sizeof(executor_obj),
    .tp_dealloc = (destructor)executor_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Executor(threads=0): the thread pool plans run on "
              "(rf_executor; 0: every online CPU)",
    .tp_getset = executor_getset,
    .tp_new = executor_new,
};

rf_executor *pyrf_executor_ptr(PyObject *o, const char *arg)
{
    if (!PyObject_TypeCheck(o, &executor_type)) {
        PyErr_Format(PyExc_TypeError, "%s: expected an Executor, got %.100s",
                     arg, Py_TYPE(o)->tp_name);
        return NULL;
    }
    return ((executor_obj *)o)->ex;
}

/* ---- LocalSession -------------------------------------------------------- */

typedef struct local_obj {
    PyObject_HEAD
    PyObject *graph, *executor; /* strong: the plans point into both */
    rf_graph *g;
    rf_executor *ex;
    PyObject *index; /* (feed ids, fetch ids, target ids) -> plans[i] */
    rf_plan **plans;
    size_t nplans, cap;
    int running; /* runs in progress (the GIL released) */
    bool closed;
} local_obj;

static PyObject *local_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"graph", "executor", NULL};
    PyObject *graph, *executor;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO:LocalSession", kwlist,
                                     &graph, &executor))
        return NULL;
    rf_graph *g = pyrf_graph_ptr(graph, "graph");
    if (!g)
        return NULL;
    rf_executor *ex = pyrf_executor_ptr(executor, "executor");
    if (!ex)
        return NULL;
    local_obj *self = (local_obj *)type->tp_alloc(type, 0);
    if (!self)
        return NULL;
    self->graph = Py_NewRef(graph);
    self->executor = Py_NewRef(executor);
    self->g = g;
    self->ex = ex;
    if (!(self->index = PyDict_New())) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

/* Destroys every plan (before the graph and executor they point into). */
static void local_free_plans(local_obj *self)
{
    for (size_t i = 0; i < self->nplans; i++)
        rf_plan_destroy(self->plans[i]);
    PyMem_Free(self->plans);
    self->plans = NULL;
    self->nplans = self->cap = 0;
    if (self->index)
        PyDict_Clear(self->index);
}

static void local_dealloc(local_obj *self)
{
    local_free_plans(self);
    Py_XDECREF(self->index);
    Py_XDECREF(self->graph);
    Py_XDECREF(self->executor);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* -1 with ValueError naming arg[i] if a node is not of graph g. */
static int check_graph(rf_graph *g, rf_node *const *nodes, Py_ssize_t n,
                       const char *arg)
{
    for (Py_ssize_t i = 0; i < n; i++)
        if (rf_node_graph(nodes[i]) != g) {
            PyErr_Format(PyExc_ValueError,
                         "%s[%zd]: node '%s' is not of this session's graph",
                         arg, i, rf_node_name(nodes[i]));
            return -1;
        }
    return 0;
}

/* A tuple of the ids of nodes[0..n). */
static PyObject *ids_tuple(rf_node *const *nodes, Py_ssize_t n)
{
    PyObject *t = PyTuple_New(n);
    for (Py_ssize_t i = 0; t && i < n; i++) {
        PyObject *id = PyLong_FromSize_t(rf_node_id(nodes[i]));
        if (!id) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, id);
    }
    return t;
}

/* The arguments of one run. */
typedef struct run_args {
    pyrf_feeds feeds;
    rf_node **fetches, **targets;
    Py_ssize_t nfetch, ntarget;
} run_args;

static PyObject *plan_key(const run_args *a)
{
    PyObject *f = ids_tuple(a->feeds.nodes, a->feeds.n);
    PyObject *x = ids_tuple(a->fetches, a->nfetch);
    PyObject *t = ids_tuple(a->targets, a->ntarget);
    PyObject *key = f && x && t ? PyTuple_Pack(3, f, x, t) : NULL;
    Py_XDECREF(f);
    Py_XDECREF(x);
    Py_XDECREF(t);
    return key;
}

/* Appends p to the cache under key; -1 (p destroyed) on failure. */
static int plan_add(local_obj *self, PyObject *key, rf_plan *p)
{
    if (self->nplans == self->cap) {
        size_t cap = self->cap ? 2 * self->cap : 8;
        rf_plan **v = PyMem_Realloc(self->plans, cap * sizeof *v);
        if (!v) {
            rf_plan_destroy(p);
            PyErr_NoMemory();
            return -1;
        }
        self->plans = v;
        self->cap = cap;
    }
    PyObject *i = PyLong_FromSize_t(self->nplans);
    if (!i || PyDict_SetItem(self->index, key, i) < 0) {
        Py_XDECREF(i);
        rf_plan_destroy(p);
        return -1;
    }
    Py_DECREF(i);
    self->plans[self->nplans++] = p;
    return 0;
}

/* The cached plan of these (feeds, fetches, targets), made the first time. */
static rf_plan *plan_get(local_obj *self, const run_args *a)
{
    PyObject *key = plan_key(a);
    if (!key)
        return NULL;
    PyObject *i = PyDict_GetItemWithError(self->index, key);
    if (i || PyErr_Occurred()) {
        Py_DECREF(key);
        return i ? self->plans[PyLong_AsSize_t(i)] : NULL;
    }
    rf_plan *p = NULL;
    rf_status st =
        rf_plan_create(self->ex, self->g, a->fetches, (size_t)a->nfetch,
                       a->feeds.nodes, (size_t)a->feeds.n, a->targets,
                       (size_t)a->ntarget, &p);
    if (st != RF_OK) {
        Py_DECREF(key);
        pyrf_raise(st, NULL);
        return NULL;
    }
    int r = plan_add(self, key, p);
    Py_DECREF(key);
    return r < 0 ? NULL : p;
}

static void run_args_release(run_args *a)
{
    pyrf_feeds_release(&a->feeds);
    PyMem_Free(a->fetches);
    PyMem_Free(a->targets);
}

/* Converts and checks run's arguments; -1 with the error (a released). */
static int run_args_get(local_obj *self, PyObject *feed_nodes,
                        PyObject *feed_values, PyObject *fetch_nodes,
                        PyObject *target_nodes, run_args *a)
{
    memset(a, 0, sizeof *a);
    if (pyrf_feeds_get(feed_nodes, feed_values, &a->feeds) < 0)
        return -1;
    if (pyrf_nodes_from_seq(fetch_nodes, "fetch_nodes", &a->fetches,
                            &a->nfetch) < 0 ||
        pyrf_nodes_from_seq(target_nodes, "target_nodes", &a->targets,
                            &a->ntarget) < 0 ||
        check_graph(self->g, a->feeds.nodes, a->feeds.n, "feed_nodes") < 0 ||
        check_graph(self->g, a->fetches, a->nfetch, "fetch_nodes") < 0 ||
        check_graph(self->g, a->targets, a->ntarget, "target_nodes") < 0) {
        run_args_release(a);
        return -1;
    }
    return 0;
}

static PyObject *local_run(local_obj *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"feed_nodes", "feed_values", "fetch_nodes",
                             "target_nodes", NULL};
    PyObject *fn, *fv, *xn, *tn;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOO:run", kwlist, &fn, &fv,
                                     &xn, &tn))
        return NULL;
    if (self->closed) {
        PyErr_SetString(PyExc_RuntimeError,
                        "Attempted to use a closed LocalSession");
        return NULL;
    }
    run_args a;
    if (run_args_get(self, fn, fv, xn, tn, &a) < 0)
        return NULL;
    PyObject *result = NULL;
    rf_plan *p = plan_get(self, &a);
    if (!p)
        goto out_args;
    rf_tensor *out = PyMem_Calloc((size_t)(a.nfetch ? a.nfetch : 1),
                                  sizeof *out);
    if (!out) {
        PyErr_NoMemory();
        goto out_args;
    }
    rf_status st;
    self->running++;
    Py_BEGIN_ALLOW_THREADS;
    st = rf_plan_run(p, a.feeds.values, out);
    Py_END_ALLOW_THREADS;
    self->running--;
    result = st == RF_OK ? pyrf_tensor_views(out, (size_t)a.nfetch)
                         : pyrf_raise(st, NULL);
    PyMem_Free(out);
out_args:
    run_args_release(&a);
    return result;
}

static PyObject *local_close(local_obj *self, PyObject *noargs)
{
    (void)noargs;
    if (self->running) {
        PyErr_SetString(PyExc_RuntimeError,
                        "LocalSession.close: a run is in progress in another "
                        "thread");
        return NULL;
    }
    local_free_plans(self);
    self->closed = true;
    Py_RETURN_NONE;
}

static PyObject *local_get_graph(local_obj *self, void *closure)
{
    (void)closure;
    return Py_NewRef(self->graph);
}

static PyObject *local_get_executor(local_obj *self, void *closure)
{
    (void)closure;
    return Py_NewRef(self->executor);
}

static PyMethodDef local_methods[] = {
    {"run", (PyCFunction)(void (*)(void))local_run,
     METH_VARARGS | METH_KEYWORDS,
     "run(feed_nodes, feed_values, fetch_nodes, target_nodes) -> "
     "[memoryview]: views of the plan's buffers, valid until the next run "
     "of the same (feeds, fetches, targets)"},
    {"close", (PyCFunction)local_close, METH_NOARGS,
     "close(): frees the plans; the session can no longer run"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef local_getset[] = {
    {"graph", (getter)local_get_graph, NULL, "the Graph", NULL},
    {"executor", (getter)local_get_executor, NULL, "the Executor", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject local_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rdmaflow._rdmaflow.LocalSession",
    .tp_basicsize = sizeof(local_obj),
    .tp_dealloc = (destructor)local_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "LocalSession(graph, executor): tf.Session() in this process",
    .tp_methods = local_methods,
    .tp_getset = local_getset,
    .tp_new = local_new,
};

PyMethodDef pyrf_local_functions[] = {{NULL, NULL, 0, NULL}};

int pyrf_local_init(PyObject *module)
{
    if (PyType_Ready(&executor_type) < 0 || PyType_Ready(&local_type) < 0)
        return -1;
    if (PyModule_AddObjectRef(module, "Executor", (PyObject *)&executor_type) <
        0)
        return -1;
    return PyModule_AddObjectRef(module, "LocalSession",
                                 (PyObject *)&local_type);
}
