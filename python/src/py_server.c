/* python/src/py_server.c: the cluster and this task's server for Python
 * (rdmaflow/cluster.h, rdmaflow/session.h): cluster_resolve and the
 * Cluster type (tf.train.ClusterSpec with this task), and the Server type
 * (tf.train.Server), started and joined in its runner thread so that
 * Ctrl-C interrupts both. A server whose runner is still busy (an
 * interrupted start or join) is leaked with its cluster, never freed under
 * the call. */
#include "py_runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Cluster ------------------------------------------------------------- */

typedef struct cluster_obj {
    PyObject_HEAD
    rf_cluster *c;
} cluster_obj;

static PyTypeObject cluster_type;

static void cluster_dealloc(cluster_obj *self)
{
    rf_cluster_destroy(self->c);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* None for NULL s. */
static PyObject *str_or_none(const char *s)
{
    if (!s)
        Py_RETURN_NONE;
    return PyUnicode_FromString(s);
}

/* {job, index, address, host, port, is_chief, worker_id}; None for NULL. */
static PyObject *task_dict(const rf_cluster_task *t)
{
    if (!t)
        Py_RETURN_NONE;
    PyObject *address = str_or_none(t->address);
    PyObject *host = str_or_none(t->host);
    PyObject *d = NULL;
    if (address && host)
        d = Py_BuildValue("{s:s,s:i,s:O,s:O,s:i,s:O,s:i}", "job", t->job,
                          "index", t->index, "address", address, "host", host,
                          "port", (int)t->port, "is_chief",
                          t->is_chief ? Py_True : Py_False, "worker_id",
                          t->worker_id);
    Py_XDECREF(address);
    Py_XDECREF(host);
    return d;
}

static PyObject *cluster_get_task(cluster_obj *self, void *closure)
{
    (void)closure;
    return task_dict(rf_cluster_self(self->c));
}

static PyObject *cluster_get_chief(cluster_obj *self, void *closure)
{
    (void)closure;
    return task_dict(rf_cluster_chief(self->c));
}

static PyObject *cluster_get_num_ps(cluster_obj *self, void *closure)
{
    (void)closure;
    return PyLong_FromLong(rf_cluster_num_ps(self->c));
}

static PyObject *cluster_get_num_workers(cluster_obj *self, void *closure)
{
    (void)closure;
    return PyLong_FromLong(rf_cluster_num_workers(self->c));
}

static PyObject *cluster_get_source(cluster_obj *self, void *closure)
{
    (void)closure;
    return str_or_none(rf_cluster_source(self->c));
}

/* [address] of a job's tasks (None for a task without one). */
static PyObject *job_addresses(const rf_cluster *c, const rf_cluster_job *j)
{
    PyObject *list = PyList_New(j->num_tasks);
    for (int i = 0; list && i < j->num_tasks; i++) {
        PyObject *a = str_or_none(rf_cluster_task_address(c, j->name, i));
        if (!a) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, a);
    }
    return list;
}

static PyObject *cluster_jobs(cluster_obj *self, PyObject *noargs)
{
    (void)noargs;
    rf_cluster_desc desc;
    rf_cluster_device_desc(self->c, &desc);
    PyObject *d = PyDict_New();
    for (size_t i = 0; d && i < desc.num_jobs; i++) {
        PyObject *list = job_addresses(self->c, &desc.jobs[i]);
        if (!list || PyDict_SetItemString(d, desc.jobs[i].name, list) < 0)
            Py_CLEAR(d);
        Py_XDECREF(list);
    }
    return d;
}

/* A malloc'd string of the library's as a str (freed); MemoryError for
 * NULL. */
static PyObject *take_string(char *s)
{
    if (!s)
        return PyErr_NoMemory();
    PyObject *r = PyUnicode_FromString(s);
    free(s);
    return r;
}

static PyObject *cluster_to_json(cluster_obj *self, PyObject *args,
                                 PyObject *kw)
{
    static char *kwlist[] = {"pretty", NULL};
    int pretty = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|p:to_json", kwlist, &pretty))
        return NULL;
    return take_string(rf_cluster_to_json(self->c, pretty));
}

static PyObject *cluster_format(cluster_obj *self, PyObject *noargs)
{
    (void)noargs;
    return take_string(rf_cluster_format(self->c));
}

static PyObject *cluster_repr(cluster_obj *self)
{
    const rf_cluster_task *t = rf_cluster_self(self->c);
    return PyUnicode_FromFormat("<Cluster %d ps, %d workers; this task "
                                "/job:%s/task:%d>",
                                rf_cluster_num_ps(self->c),
                                rf_cluster_num_workers(self->c),
                                t ? t->job : "?", t ? t->index : -1);
}

static PyMethodDef cluster_methods[] = {
    {"jobs", (PyCFunction)cluster_jobs, METH_NOARGS,
     "jobs() -> {job: [address]}: every job, in name order"},
    {"to_json", (PyCFunction)(void (*)(void))cluster_to_json,
     METH_VARARGS | METH_KEYWORDS,
     "to_json(pretty=False) -> str: the cluster and this task as JSON (a "
     "valid TF_CONFIG)"},
    {"format", (PyCFunction)cluster_format, METH_NOARGS,
     "format() -> str: the human-readable description (--explain)"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef cluster_getset[] = {
    {"task", (getter)cluster_get_task, NULL, "this process's task (dict)",
     NULL},
    {"chief", (getter)cluster_get_chief, NULL, "the chief task (dict)", NULL},
    {"num_ps", (getter)cluster_get_num_ps, NULL, "number of ps tasks", NULL},
    {"num_workers", (getter)cluster_get_num_workers, NULL,
     "number of training workers (chief + worker tasks); -1 for a "
     "sparseCluster (TFJob enableDynamicWorker: workers come and go)",
     NULL},
    {"source", (getter)cluster_get_source, NULL,
     "where the cluster and the task came from", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject cluster_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rdmaflow._rdmaflow.Cluster",
    .tp_basicsize = sizeof(cluster_obj),
    .tp_dealloc = (destructor)cluster_dealloc,
    .tp_repr = (reprfunc)cluster_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The cluster of a distributed run and this task "
              "(cluster_resolve makes it)",
    .tp_methods = cluster_methods,
    .tp_getset = cluster_getset,
};

/* ---- cluster_resolve ----------------------------------------------------- */

/* A flag's text: None -> NULL, a str -> its UTF-8, an int (ints_ok) -> its
 * decimal text in buf. -1 with TypeError naming arg. */
static int flag_text(PyObject *o, const char *arg, bool ints_ok, char *buf,
                     size_t len, const char **out)
{
    *out = NULL;
    if (o == Py_None)
        return 0;
    if (PyUnicode_Check(o))
        return (*out = PyUnicode_AsUTF8(o)) ? 0 : -1;
    if (ints_ok && PyLong_Check(o) && !PyBool_Check(o)) {
        long long v = PyLong_AsLongLong(o);
        if (v == -1 && PyErr_Occurred())
            return -1;
        snprintf(buf, len, "%lld", v);
        *out = buf;
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "%s: expected %s or None, got %.100s", arg,
                 ints_ok ? "a str or an int" : "a str", Py_TYPE(o)->tp_name);
    return -1;
}

static PyObject *cluster_wrap(rf_cluster *c)
{
    if (!c)
        Py_RETURN_NONE;
    cluster_obj *self = PyObject_New(cluster_obj, &cluster_type);
    if (!self) {
        rf_cluster_destroy(c);
        return NULL;
    }
    self->c = c;
    return (PyObject *)self;
}

static PyObject *cluster_resolve(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    static char *kwlist[] = {"ps_hosts",  "worker_hosts", "job_name",
                             "task_index", "num_ps",      "port_base",
                             "tf_config", "environ",      NULL};
    PyObject *o[7] = {Py_None, Py_None, Py_None, Py_None,
                      Py_None, Py_None, Py_None};
    int environ_ = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOOOOOOp:cluster_resolve",
                                     kwlist, &o[0], &o[1], &o[2], &o[3], &o[4],
                                     &o[5], &o[6], &environ_))
        return NULL;
    char num[3][32];
    const char *text[7];
    for (int i = 0; i < 7; i++) {
        bool ints = i >= 3 && i <= 5; /* task_index, num_ps, port_base */
        if (flag_text(o[i], kwlist[i], ints, num[ints ? i - 3 : 0],
                      sizeof num[0], &text[i]) < 0)
            return NULL;
    }
    if (environ_ && text[6]) {
        PyErr_SetString(PyExc_ValueError,
                        "tf_config: not with environ=True (which reads "
                        "TF_CONFIG from the environment)");
        return NULL;
    }
    rf_cluster_flags f = {text[0], text[1], text[2], text[3], text[4], text[5]};
    rf_cluster *c = NULL;
    rf_status st = environ_ ? rf_cluster_resolve_env(&f, NULL, &c)
                            : rf_cluster_resolve(&f, text[6], &c);
    if (st != RF_OK)
        return pyrf_raise(st, NULL);
    return cluster_wrap(c);
}

/* ---- Server -------------------------------------------------------------- */

/* The largest of Server's seconds arguments: rf-trainer's --ps_idle_exit_secs
 * bound (2000000 s, 23 days), whose milliseconds fit an int. */
#define SERVER_MAX_SECS 2000000

/* What the runner's calls use: owned by the Server object, leaked with it
 * when its runner is still busy. */
typedef struct server_call {
    const rf_cluster *cluster;
    rf_server_options opt;
    char *secret_file, *bind_addr;
    rf_server *server;
    rf_status join_st; /* the last join's */
} server_call;

typedef struct server_obj {
    PyObject_HEAD
    PyObject *cluster; /* strong: the Cluster the server points into */
    pyrf_runner *runner;
    server_call *call;
    int sessions;      /* MonitoredSessions on it (pyrf_server_sessions) */
    bool in_call;      /* a thread waits for the runner (join) */
    bool join_pending; /* a join was interrupted and may still run */
} server_obj;

static PyTypeObject server_type;

static rf_status start_fn(void *arg)
{
    server_call *c = arg;
    return rf_server_start(c->cluster, &c->opt, &c->server);
}

static rf_status join_fn(void *arg)
{
    server_call *c = arg;
    return c->join_st = rf_server_join(c->server);
}

static rf_status noop_fn(void *arg)
{
    (void)arg;
    return RF_OK;
}

static void call_free(server_call *c)
{
    if (!c)
        return;
    PyMem_RawFree(c->secret_file);
    PyMem_RawFree(c->bind_addr);
    PyMem_RawFree(c);
}

/* A copy of an optional str argument for the runner; -1 with TypeError. */
static int str_copy(PyObject *o, const char *arg, char **out)
{
    *out = NULL;
    if (o == Py_None)
        return 0;
    PyObject *b = NULL;
    if (!PyUnicode_Check(o) || !PyUnicode_FSConverter(o, &b)) {
        if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%s: expected a str or None, got "
                         "%.100s", arg, Py_TYPE(o)->tp_name);
        }
        return -1;
    }
    size_t n = (size_t)PyBytes_GET_SIZE(b) + 1;
    if ((*out = PyMem_RawMalloc(n)))
        memcpy(*out, PyBytes_AS_STRING(b), n);
    Py_DECREF(b);
    if (!*out) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* The call's arguments; NULL with the error. */
static server_call *call_new(const rf_cluster *cluster, PyObject *secret,
                             PyObject *bind, const int secs[3])
{
    server_call *c = PyMem_RawCalloc(1, sizeof *c);
    if (!c) {
        PyErr_NoMemory();
        return NULL;
    }
    c->cluster = cluster;
    if (str_copy(secret, "secret_file", &c->secret_file) < 0 ||
        str_copy(bind, "bind_addr", &c->bind_addr) < 0) {
        call_free(c);
        return NULL;
    }
    c->opt.cluster_secret_file = c->secret_file;
    c->opt.bind_addr = c->bind_addr;
    c->opt.resolve_wait_secs = secs[0];
    c->opt.chief_gone_exit_ms = secs[1] * 1000;
    c->opt.idle_exit_ms = secs[2] * 1000;
    return c;
}

/* A worker's server bound its runner thread to the NUMA node of its
 * address; the Python thread that goes on (and the executor threads it
 * starts) is bound the same way, as the C programs' main thread is. */
static void bind_caller(rf_server *server)
{
    const rf_binding *b = rf_server_binding(server);
    const rf_cluster_task *t = rf_cluster_self(rf_server_cluster(server));
    if (!b || b->mode == RF_BIND_NONE || !t || !strcmp(t->job, "ps"))
        return;
    rf_topology *topo = NULL;
    rf_status st = rf_topology_open(&topo);
    if (st == RF_OK)
        st = rf_topology_bind_thread(topo, b);
    rf_topology_close(topo);
    if (st != RF_OK)
        PyErr_WarnFormat(PyExc_RuntimeWarning, 1,
                         "Server: binding this thread to NUMA node %d: %s",
                         b->numa_node, rf_error_message());
}

static int server_start(server_obj *self)
{
    rf_status st;
    if (pyrf_runner_call(self->runner, start_fn, self->call, &st) < 0)
        return -1;
    if (st != RF_OK) {
        pyrf_raise(st, pyrf_runner_message(self->runner));
        return -1;
    }
    bind_caller(self->call->server);
    return PyErr_Occurred() ? -1 : 0; /* a warning made an error */
}

static PyObject *server_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"cluster",           "secret_file",
                             "bind_addr",         "resolve_wait_secs",
                             "chief_gone_exit_secs",
                             "idle_exit_secs",    NULL};
    PyObject *cluster, *secret = Py_None, *bind = Py_None;
    int secs[3] = {0, 0, 0};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OOiii:Server", kwlist,
                                     &cluster, &secret, &bind, &secs[0],
                                     &secs[1], &secs[2]))
        return NULL;
    if (!PyObject_TypeCheck(cluster, &cluster_type)) {
        PyErr_Format(PyExc_TypeError, "cluster: expected a Cluster "
                     "(cluster_resolve), got %.100s",
                     Py_TYPE(cluster)->tp_name);
        return NULL;
    }
    /* seconds, as milliseconds in an int for the two lifetimes */
    for (int i = 0; i < 3; i++)
        if (secs[i] < 0 || secs[i] > SERVER_MAX_SECS) {
            PyErr_Format(PyExc_ValueError,
                         "%s: %d is not a number of seconds from 0 to %d",
                         kwlist[3 + i], secs[i], SERVER_MAX_SECS);
            return NULL;
        }
    server_obj *self = (server_obj *)type->tp_alloc(type, 0);
    if (!self)
        return NULL;
    self->cluster = Py_NewRef(cluster);
    self->call = call_new(((cluster_obj *)cluster)->c, secret, bind, secs);
    if (!self->call || !(self->runner = pyrf_runner_new()) ||
        server_start(self) < 0) {
        Py_DECREF(self); /* leaks what an interrupted start still uses */
        return NULL;
    }
    return (PyObject *)self;
}

static void server_stop_now(server_obj *self)
{
    rf_server *s = self->call ? self->call->server : NULL;
    if (!s)
        return;
    self->call->server = NULL;
    Py_BEGIN_ALLOW_THREADS;
    rf_server_stop(s);
    Py_END_ALLOW_THREADS;
}

static void server_dealloc(server_obj *self)
{
    if (self->runner && pyrf_runner_busy(self->runner)) {
        /* an interrupted start or join still runs: leave it the server,
         * its arguments and the cluster (one reference never dropped) */
        pyrf_runner_free(self->runner);
        Py_TYPE(self)->tp_free((PyObject *)self);
        return;
    }
    server_stop_now(self);
    pyrf_runner_free(self->runner);
    call_free(self->call);
    Py_XDECREF(self->cluster);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The running server of self; NULL with RuntimeError once stopped. */
static rf_server *server_running(server_obj *self)
{
    if (!self->call->server)
        PyErr_SetString(PyExc_RuntimeError, "the Server was stopped");
    return self->call->server;
}

/* Waits (interruptibly) for an interrupted join that may still run; its
 * status in *st. */
static int join_wait_pending(server_obj *self, rf_status *st)
{
    rf_status ignored;
    if (pyrf_runner_call(self->runner, noop_fn, NULL, &ignored) < 0)
        return -1;
    self->join_pending = false;
    *st = self->call->join_st;
    return 0;
}

/* -1 with RuntimeError while another thread waits for the runner (its
 * lock must not be taken then: see pyrf_runner_busy's callers). */
static int server_idle_check(server_obj *self, const char *what)
{
    if (!self->in_call)
        return 0;
    PyErr_Format(PyExc_RuntimeError,
                 "Server.%s: join() is running in another thread", what);
    return -1;
}

static PyObject *server_join(server_obj *self, PyObject *noargs)
{
    (void)noargs;
    if (server_idle_check(self, "join") < 0 ||
        (!self->join_pending && !server_running(self)))
        return NULL;
    rf_status st;
    self->in_call = true;
    int r = self->join_pending
                ? join_wait_pending(self, &st)
                : pyrf_runner_call(self->runner, join_fn, self->call, &st);
    self->in_call = false;
    if (r < 0) {
        self->join_pending = pyrf_runner_busy(self->runner);
        return NULL;
    }
    if (st != RF_OK) /* the runner's message is the join's */
        return pyrf_raise(st, pyrf_runner_message(self->runner));
    Py_RETURN_NONE;
}

static PyObject *server_stop(server_obj *self, PyObject *noargs)
{
    (void)noargs;
    if (server_idle_check(self, "stop") < 0)
        return NULL;
    if (self->sessions > 0) {
        PyErr_Format(PyExc_RuntimeError,
                     "Server.stop: %d MonitoredSession(s) still use the "
                     "server (destroy them first)",
                     self->sessions);
        return NULL;
    }
    if (pyrf_runner_busy(self->runner)) {
        PyErr_SetString(PyExc_RuntimeError,
                        "Server.stop: an interrupted join() still runs; the "
                        "server cannot be stopped under it (it stops when "
                        "the cluster is shut down, or with the process)");
        return NULL;
    }
    self->join_pending = false;
    server_stop_now(self);
    Py_RETURN_NONE;
}

static PyObject *server_counters(server_obj *self, PyObject *noargs)
{
    (void)noargs;
    rf_server *s = server_running(self);
    if (!s)
        return NULL;
    rf_ps_server_counters c;
    rf_server_ps_counters(s, &c);
    return Py_BuildValue(
        "{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K}", "refused_auth",
        (unsigned long long)c.refused_auth, "refused_busy",
        (unsigned long long)c.refused_busy, "refused_full",
        (unsigned long long)c.refused_full, "refused_duplicate",
        (unsigned long long)c.refused_duplicate, "dropped_idle",
        (unsigned long long)c.dropped_idle, "dropped_protocol",
        (unsigned long long)c.dropped_protocol, "sparse_applies",
        (unsigned long long)c.sparse_applies, "sparse_rows",
        (unsigned long long)c.sparse_rows, "sparse_refused",
        (unsigned long long)c.sparse_refused, "gather_requests",
        (unsigned long long)c.gather_requests, "gather_rows",
        (unsigned long long)c.gather_rows, "gather_refused",
        (unsigned long long)c.gather_refused);
}

static PyObject *server_get_port(server_obj *self, void *closure)
{
    (void)closure;
    rf_server *s = server_running(self);
    return s ? PyLong_FromLong(rf_server_port(s)) : NULL;
}

static PyObject *server_get_numa_node(server_obj *self, void *closure)
{
    (void)closure;
    rf_server *s = server_running(self);
    return s ? PyLong_FromLong(rf_server_numa_node(s, NULL)) : NULL;
}

static PyObject *server_get_provider(server_obj *self, void *closure)
{
    (void)closure;
    rf_server *s = server_running(self);
    if (!s)
        return NULL;
    rf_fabric *f = rf_server_fabric(s);
    return str_or_none(f ? rf_fabric_provider(f) : NULL);
}

static PyObject *server_get_cluster(server_obj *self, void *closure)
{
    (void)closure;
    return Py_NewRef(self->cluster);
}

static PyObject *server_repr(server_obj *self)
{
    const rf_cluster_task *t =
        rf_cluster_self(((cluster_obj *)self->cluster)->c);
    return PyUnicode_FromFormat("<Server /job:%s/task:%d%s>", t->job,
                                t->index,
                                self->call->server ? "" : " (stopped)");
}

static PyMethodDef server_methods[] = {
    {"join", (PyCFunction)server_join, METH_NOARGS,
     "join(): a ps task serves until the chief shuts the cluster down "
     "(interruptible)"},
    {"stop", (PyCFunction)server_stop, METH_NOARGS,
     "stop(): stops serving and frees the server (its sessions destroyed "
     "first)"},
    {"counters", (PyCFunction)server_counters, METH_NOARGS,
     "counters() -> dict: a ps task's refused and dropped connections and "
     "sparse/gather counts"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef server_getset[] = {
    {"port", (getter)server_get_port, NULL,
     "a ps task's listening port (0 on a worker)", NULL},
    {"numa_node", (getter)server_get_numa_node, NULL,
     "a ps task's arena NUMA node (-1 on a worker)", NULL},
    {"provider", (getter)server_get_provider, NULL,
     "the fabric provider the server opened", NULL},
    {"cluster", (getter)server_get_cluster, NULL, "the Cluster", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject server_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rdmaflow._rdmaflow.Server",
    .tp_basicsize = sizeof(server_obj),
    .tp_dealloc = (destructor)server_dealloc,
    .tp_repr = (reprfunc)server_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Server(cluster, secret_file=None, bind_addr=None, "
              "resolve_wait_secs=0, chief_gone_exit_secs=0, "
              "idle_exit_secs=0): this task's server (tf.train.Server; "
              "rf_server_start, interruptible); a ps task's join() raises "
              "DeadlineExceededError once a chief it saw has had no "
              "connection for chief_gone_exit_secs, or after "
              "idle_exit_secs if no chief came (0: never)",
    .tp_methods = server_methods,
    .tp_getset = server_getset,
    .tp_new = server_new,
};

rf_server *pyrf_server_ptr(PyObject *o, const char *arg)
{
    if (!PyObject_TypeCheck(o, &server_type)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a Server, got %.100s", arg,
                     Py_TYPE(o)->tp_name);
        return NULL;
    }
    return server_running((server_obj *)o);
}

void pyrf_server_sessions(PyObject *server, int delta)
{
    ((server_obj *)server)->sessions += delta;
}

/* ---- module -------------------------------------------------------------- */

PyMethodDef pyrf_server_functions[] = {
    {"cluster_resolve", (PyCFunction)(void (*)(void))cluster_resolve,
     METH_VARARGS | METH_KEYWORDS,
     "cluster_resolve(ps_hosts=None, worker_hosts=None, job_name=None, "
     "task_index=None, num_ps=None, port_base=None, tf_config=None, "
     "environ=False) -> Cluster | None (None: a local run)"},
    {NULL, NULL, 0, NULL},
};

int pyrf_server_init(PyObject *module)
{
    if (PyType_Ready(&cluster_type) < 0 || PyType_Ready(&server_type) < 0)
        return -1;
    if (PyModule_AddObjectRef(module, "Cluster", (PyObject *)&cluster_type) <
        0)
        return -1;
    return PyModule_AddObjectRef(module, "Server", (PyObject *)&server_type);
}
