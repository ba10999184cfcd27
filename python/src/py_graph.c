/* python/src/py_graph.c: the Graph, Node and ReplicaDeviceSetter types of
 * rdmaflow._rdmaflow (README.md, "py_graph.c"). A Graph owns its rf_graph
 * and whatever its device scopes need alive (a parsed device string, a
 * Python device function, a ReplicaDeviceSetter object) until their pop; a
 * Node is a view of one node that keeps its Graph alive. Also the helpers
 * every builder of py_ops.c starts and ends with: argument checks, and a
 * builder's error (ValueError(rf_graph_error(g)), or the exception a Python
 * device function raised while the node was being created). */
#include "py_graph_internal.h"

#include <limits.h>
#include <string.h>

/* ---- exceptions kept across a C call ---------------------------------- */

/* The exception set now (cleared), as one object with its traceback. */
static PyObject *exc_fetch(void)
{
#if PY_VERSION_HEX >= 0x030C0000
    return PyErr_GetRaisedException();
#else
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (value && tb)
        PyException_SetTraceback(value, tb);
    Py_XDECREF(type);
    Py_XDECREF(tb);
    return value;
#endif
}

/* Raises exc again (steals the reference). */
static void exc_restore(PyObject *exc)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(exc);
#else
    PyErr_Restore(Py_NewRef((PyObject *)Py_TYPE(exc)), exc,
                  PyException_GetTraceback(exc));
#endif
}

/* ---- Node --------------------------------------------------------------- */

PyObject *pyrf_node_new(PyObject *graph, rf_node *n)
{
    if (!n)
        Py_RETURN_NONE;
    pyrf_node_obj *o = PyObject_GC_New(pyrf_node_obj, &pyrf_node_type);
    if (!o)
        return NULL;
    o->graph = Py_NewRef(graph);
    o->n = n;
    o->id = rf_node_id(n);
    PyObject_GC_Track((PyObject *)o);
    return (PyObject *)o;
}

rf_node *pyrf_node_ptr(PyObject *o, const char *arg)
{
    if (!PyObject_TypeCheck(o, &pyrf_node_type)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a Node, not %.100s", arg,
                     Py_TYPE(o)->tp_name);
        return NULL;
    }
    pyrf_node_obj *no = (pyrf_node_obj *)o;
    if (!no->n)
        PyErr_Format(PyExc_ValueError,
                     "%s: node %zu is not in its graph (its creation failed "
                     "after a device function saw it)",
                     arg, no->id);
    return no->n;
}

PyObject *pyrf_node_graph_obj(PyObject *node)
{
    return ((pyrf_node_obj *)node)->graph;
}

static void node_dealloc(PyObject *self)
{
    pyrf_node_obj *o = (pyrf_node_obj *)self;
    PyObject_GC_UnTrack(self);
    Py_CLEAR(o->graph);
    Py_TYPE(self)->tp_free(self);
}

static int node_traverse(PyObject *self, visitproc visit, void *arg)
{
    Py_VISIT(((pyrf_node_obj *)self)->graph);
    return 0;
}

/* The node, or NULL with ValueError if its creation failed. */
static rf_node *live(PyObject *self)
{
    return pyrf_node_ptr(self, "node");
}

static PyObject *node_wrap(PyObject *self, rf_node *n)
{
    return pyrf_node_new(((pyrf_node_obj *)self)->graph, n);
}

static PyObject *node_get_graph(PyObject *self, void *c)
{
    (void)c;
    return Py_NewRef(((pyrf_node_obj *)self)->graph);
}

static PyObject *node_get_id(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromSize_t(((pyrf_node_obj *)self)->id);
}

static PyObject *node_get_name(PyObject *self, void *c)
{
    (void)c;
    rf_node *n = live(self);
    return n ? PyUnicode_FromString(rf_node_name(n)) : NULL;
}

static PyObject *node_get_op(PyObject *self, void *c)
{
    (void)c;
    rf_node *n = live(self);
    return n ? PyUnicode_FromString(rf_node_op_name(n)) : NULL;
}

static PyObject *node_get_dtype(PyObject *self, void *c)
{
    (void)c;
    rf_node *n = live(self);
    return n ? pyrf_dtype_str(rf_node_dtype(n)) : NULL;
}

static PyObject *node_get_shape(PyObject *self, void *c)
{
    (void)c;
    rf_node *n = live(self);
    if (!n)
        return NULL;
    rf_shape s = rf_node_shape(n);
    return pyrf_shape_to_py(&s);
}

static PyObject *node_tuple(PyObject *self, size_t k,
                            rf_node *(*get)(const rf_node *, size_t))
{
    rf_node *n = live(self);
    if (!n)
        return NULL;
    PyObject *t = PyTuple_New((Py_ssize_t)k);
    for (size_t i = 0; t && i < k; i++) {
        PyObject *x = node_wrap(self, get(n, i));
        if (!x) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, (Py_ssize_t)i, x);
    }
    return t;
}

static PyObject *node_get_inputs(PyObject *self, void *c)
{
    (void)c;
    rf_node *n = live(self);
    return n ? node_tuple(self, rf_node_num_inputs(n), rf_node_input) : NULL;
}

static PyObject *node_get_control_inputs(PyObject *self, void *c)
{
    (void)c;
    rf_node *n = live(self);
    return n ? node_tuple(self, rf_node_num_control_inputs(n),
                          rf_node_control_input)
             : NULL;
}

static PyObject *node_get_device(PyObject *self, void *c)
{
    (void)c;
    rf_node *n = live(self);
    return n ? PyUnicode_FromString(rf_node_requested_device(n)) : NULL;
}

static PyObject *node_get_assigned_device(PyObject *self, void *c)
{
    (void)c;
    rf_node *n = live(self);
    return n ? PyUnicode_FromString(rf_node_assigned_device(n)) : NULL;
}

static PyObject *node_get_colocated_with(PyObject *self, void *c)
{
    (void)c;
    rf_node *n = live(self);
    return n ? node_wrap(self, rf_node_colocated_with(n)) : NULL;
}

static bool is_variable(const rf_node *n)
{
    return rf_node_op(n) == RF_OP_VARIABLE;
}

static PyObject *node_get_is_variable(PyObject *self, void *c)
{
    (void)c;
    rf_node *n = live(self);
    return n ? PyBool_FromLong(is_variable(n)) : NULL;
}

static PyObject *node_get_trainable(PyObject *self, void *c)
{
    (void)c;
    rf_node *n = live(self);
    return n ? PyBool_FromLong(is_variable(n) && rf_variable_trainable(n))
             : NULL;
}

static int node_set_trainable(PyObject *self, PyObject *v, void *c)
{
    (void)c;
    rf_node *n = live(self);
    if (!n)
        return -1;
    if (!v) {
        PyErr_SetString(PyExc_TypeError, "trainable: cannot be deleted");
        return -1;
    }
    if (!is_variable(n)) {
        PyErr_Format(PyExc_ValueError,
                     "trainable: '%s' is a %s, not a variable", rf_node_name(n),
                     rf_node_op_name(n));
        return -1;
    }
    int t = PyObject_IsTrue(v);
    if (t < 0)
        return -1;
    rf_variable_set_trainable(n, t);
    return 0;
}

static PyObject *node_get_initialized(PyObject *self, void *c)
{
    (void)c;
    rf_node *n = live(self);
    return n ? PyBool_FromLong(is_variable(n) && rf_variable_is_initialized(n))
             : NULL;
}

static PyObject *node_get_slot_primary(PyObject *self, void *c)
{
    (void)c;
    rf_node *n = live(self);
    if (!n)
        return NULL;
    return node_wrap(self, is_variable(n) ? rf_variable_slot_primary(n) : NULL);
}

static PyObject *node_get_slot_name(PyObject *self, void *c)
{
    (void)c;
    rf_node *n = live(self);
    if (!n)
        return NULL;
    const char *s = is_variable(n) ? rf_variable_slot_name(n) : NULL;
    if (!s || !*s)
        Py_RETURN_NONE;
    return PyUnicode_FromString(s);
}

static PyObject *node_get_is_indexed_slices(PyObject *self, void *c)
{
    (void)c;
    rf_node *n = live(self);
    return n ? PyBool_FromLong(rf_node_is_indexed_slices(n)) : NULL;
}

static PyObject *node_get_checkpoint_name(PyObject *self, void *c)
{
    (void)c;
    rf_node *n = live(self);
    if (!n)
        return NULL;
    if (!is_variable(n))
        Py_RETURN_NONE;
    char buf[RF_SAVE_SLICE_NAME_MAX];
    const char *s = rf_variable_checkpoint_name(n, buf, sizeof buf);
    return PyUnicode_FromString(s ? s : rf_node_name(n));
}

/* rf_node_format into a new str. */
static PyObject *format_node(const rf_node *n)
{
    char buf[512];
    int k = rf_node_format(n, buf, sizeof buf);
    if (k < 0)
        return PyUnicode_FromString("");
    if ((size_t)k < sizeof buf)
        return PyUnicode_FromString(buf);
    char *big = PyMem_Malloc((size_t)k + 1);
    if (!big)
        return PyErr_NoMemory();
    rf_node_format(n, big, (size_t)k + 1);
    PyObject *s = PyUnicode_FromString(big);
    PyMem_Free(big);
    return s;
}

static PyObject *node_format(PyObject *self, PyObject *noargs)
{
    (void)noargs;
    rf_node *n = live(self);
    return n ? format_node(n) : NULL;
}

static PyObject *node_repr(PyObject *self)
{
    pyrf_node_obj *o = (pyrf_node_obj *)self;
    if (!o->n)
        return PyUnicode_FromFormat("<Node %zu (not created)>", o->id);
    PyObject *f = format_node(o->n);
    if (!f)
        return NULL;
    PyObject *r = PyUnicode_FromFormat("<Node %U>", f);
    Py_DECREF(f);
    return r;
}

static PyObject *node_richcompare(PyObject *a, PyObject *b, int op)
{
    if ((op != Py_EQ && op != Py_NE) ||
        !PyObject_TypeCheck(b, &pyrf_node_type))
        Py_RETURN_NOTIMPLEMENTED;
    pyrf_node_obj *x = (pyrf_node_obj *)a, *y = (pyrf_node_obj *)b;
    bool eq = x->graph == y->graph && x->id == y->id;
    return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static Py_hash_t node_hash(PyObject *self)
{
    pyrf_node_obj *o = (pyrf_node_obj *)self;
    size_t h = ((size_t)(uintptr_t)o->graph >> 4) * (size_t)1000003u;
    h ^= o->id * (size_t)0x9E3779B97F4A7C15ull;
    Py_hash_t r = (Py_hash_t)h;
    return r == -1 ? -2 : r;
}

static PyGetSetDef node_getset[] = {
    {"graph", node_get_graph, NULL, "the Graph object", NULL},
    {"id", node_get_id, NULL, "creation index in the graph", NULL},
    {"name", node_get_name, NULL, "unique name", NULL},
    {"op", node_get_op, NULL, "TensorFlow's op type name", NULL},
    {"dtype", node_get_dtype, NULL, "output dtype", NULL},
    {"shape", node_get_shape, NULL, "static shape (None: unknown)", NULL},
    {"inputs", node_get_inputs, NULL, "tuple of input Nodes", NULL},
    {"control_inputs", node_get_control_inputs, NULL,
     "tuple of control-dependency Nodes", NULL},
    {"device", node_get_device, NULL, "requested device ('' if none)", NULL},
    {"assigned_device", node_get_assigned_device, NULL,
     "assigned device ('' until placed)", NULL},
    {"colocated_with", node_get_colocated_with, NULL,
     "the Node it is colocated with, or None", NULL},
    {"is_variable", node_get_is_variable, NULL, "a VariableV2", NULL},
    {"trainable", node_get_trainable, node_set_trainable,
     "a trainable variable (settable on a variable)", NULL},
    {"initialized", node_get_initialized, NULL, "a variable with a value",
     NULL},
    {"slot_primary", node_get_slot_primary, NULL,
     "the variable of an optimizer slot, or None", NULL},
    {"slot_name", node_get_slot_name, NULL,
     "an optimizer slot's name, or None", NULL},
    {"is_indexed_slices", node_get_is_indexed_slices, NULL,
     "an IndexedSlices (sparse gradient)", NULL},
    {"checkpoint_name", node_get_checkpoint_name, NULL,
     "the name a checkpoint stores a variable under, or None", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef node_methods[] = {
    {"format", node_format, METH_NOARGS,
     "format() -> str: one line (rf_node_format)"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject pyrf_node_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "rdmaflow._rdmaflow.Node",
    .tp_basicsize = sizeof(pyrf_node_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A node of a Graph (made by the module only)",
    .tp_dealloc = node_dealloc,
    .tp_traverse = node_traverse,
    .tp_repr = node_repr,
    .tp_richcompare = node_richcompare,
    .tp_hash = node_hash,
    .tp_getset = node_getset,
    .tp_methods = node_methods,
};

/* ---- ReplicaDeviceSetter ------------------------------------------------ */

typedef struct pyrf_setter_obj {
    PyObject_HEAD
    rf_replica_device_setter *s; /* owned */
    PyObject *strategy;          /* a Python ps strategy, or NULL */
    PyObject *exc;               /* what the strategy raised, not yet taken */
} pyrf_setter_obj;

/* rf_ps_strategy_fn calling the Python strategy fn(name, type, bytes,
 * num_tasks) -> int; its exception is kept in the setter. */
static rf_status strategy_cb(void *ctx, const rf_op_desc *op, int num_tasks,
                             int *task)
{
    pyrf_setter_obj *so = ctx;
    const char *nm = op->name ? op->name : "";
    if (!so->strategy)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "ps_strategy for op \"%s\": no strategy", nm);
    PyObject *fn = Py_NewRef(so->strategy);
    PyObject *r = PyObject_CallFunction(fn, "ssni", nm,
                                        op->type ? op->type : "",
                                        (Py_ssize_t)op->bytes, num_tasks);
    Py_DECREF(fn);
    long v = -1;
    if (r) {
        v = PyIndex_Check(r) ? PyLong_AsLong(r) : -1;
        if (!PyIndex_Check(r) || (v == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError,
                         "ps_strategy returned %R for op '%s', not a task "
                         "index",
                         r, nm);
        }
        Py_DECREF(r);
    }
    if (PyErr_Occurred()) {
        PyObject *e = exc_fetch();
        if (so->exc)
            Py_DECREF(e); /* the first one stands */
        else
            so->exc = e;
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "ps_strategy raised an exception for op \"%s\"",
                            nm);
    }
    *task = v < INT_MIN || v > INT_MAX ? -1 : (int)v;
    return RF_OK;
}

static void setter_dealloc(PyObject *self)
{
    pyrf_setter_obj *so = (pyrf_setter_obj *)self;
    PyObject_GC_UnTrack(self);
    rf_replica_device_setter_destroy(so->s);
    so->s = NULL;
    Py_CLEAR(so->strategy);
    Py_CLEAR(so->exc);
    Py_TYPE(self)->tp_free(self);
}

static int setter_traverse(PyObject *self, visitproc visit, void *arg)
{
    pyrf_setter_obj *so = (pyrf_setter_obj *)self;
    Py_VISIT(so->strategy);
    Py_VISIT(so->exc);
    return 0;
}

static int setter_clear(PyObject *self)
{
    pyrf_setter_obj *so = (pyrf_setter_obj *)self;
    Py_CLEAR(so->strategy);
    Py_CLEAR(so->exc);
    return 0;
}

static PyObject *setter_get_ps_tasks(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromLong(
        rf_replica_device_setter_ps_tasks(((pyrf_setter_obj *)self)->s));
}

static PyObject *setter_load(PyObject *self, PyObject *arg)
{
    long t = PyLong_AsLong(arg);
    if (t == -1 && PyErr_Occurred())
        return NULL;
    pyrf_setter_obj *so = (pyrf_setter_obj *)self;
    if (t < 0 || t >= rf_replica_device_setter_ps_tasks(so->s)) {
        PyErr_Format(PyExc_ValueError, "task: %ld is not in [0, %d)", t,
                     rf_replica_device_setter_ps_tasks(so->s));
        return NULL;
    }
    return PyFloat_FromDouble(rf_replica_device_setter_load(so->s, (int)t));
}

/* Takes the strategy's exception, if any (a new reference or NULL). */
static PyObject *setter_take_exc(pyrf_setter_obj *so)
{
    PyObject *e = so->exc;
    so->exc = NULL;
    return e;
}

static PyObject *setter_device_for(PyObject *self, PyObject *arg)
{
    pyrf_setter_obj *so = (pyrf_setter_obj *)self;
    rf_node *n = pyrf_node_ptr(arg, "node");
    if (!n)
        return NULL;
    rf_op_desc d;
    rf_device_node_desc(n, rf_node_requested_device(n), &d);
    char buf[RF_DEVICE_STRING_MAX];
    rf_status st = rf_replica_device_setter_fn(so->s, &d, buf, sizeof buf);
    PyObject *e = setter_take_exc(so);
    if (st != RF_OK) {
        if (e) {
            exc_restore(e);
            return NULL;
        }
        return pyrf_raise(st, NULL);
    }
    Py_XDECREF(e);
    return PyUnicode_FromString(buf);
}

static PyGetSetDef setter_getset[] = {
    {"ps_tasks", setter_get_ps_tasks, NULL, "number of ps tasks", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef setter_methods[] = {
    {"load", setter_load, METH_O,
     "load(task) -> float: the load placed on ps task (greedy strategy)"},
    {"device_for", setter_device_for, METH_O,
     "device_for(node) -> str: the device the setter gives node (starting "
     "from its requested device), advancing round-robin as placement does"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject pyrf_setter_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name =
        "rdmaflow._rdmaflow.ReplicaDeviceSetter",
    .tp_basicsize = sizeof(pyrf_setter_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "tf.train.replica_device_setter's device function (made by "
              "replica_device_setter())",
    .tp_dealloc = setter_dealloc,
    .tp_traverse = setter_traverse,
    .tp_clear = setter_clear,
    .tp_getset = setter_getset,
    .tp_methods = setter_methods,
};

/* The number of tasks of a cluster dict's value: an int, or a sequence of
 * addresses (its length). */
static int cluster_tasks(PyObject *key, PyObject *v, int *out)
{
    long k;
    if (PyIndex_Check(v)) {
        k = PyLong_AsLong(v);
        if (k == -1 && PyErr_Occurred())
            return -1;
    } else if (PyList_Check(v) || PyTuple_Check(v)) {
        k = (long)PySequence_Size(v);
    } else {
        PyErr_Format(PyExc_TypeError,
                     "cluster[%R]: expected a number of tasks, not %.100s",
                     key, Py_TYPE(v)->tp_name);
        return -1;
    }
    if (k < 0 || k > INT_MAX) {
        PyErr_Format(PyExc_ValueError, "cluster[%R]: %ld tasks", key, k);
        return -1;
    }
    *out = (int)k;
    return 0;
}

/* A device option: absent -> NULL (the default), None -> "", a str. */
static int device_option(PyObject *o, const char *arg, const char **out)
{
    if (!o) {
        *out = NULL;
        return 0;
    }
    if (o == Py_None) {
        *out = "";
        return 0;
    }
    return pyrf_str_or_none(o, arg, out);
}

PyObject *pyrf_replica_device_setter(PyObject *self, PyObject *args,
                                     PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"ps_tasks",      "cluster", "ps_device",
                             "worker_device", "merge_devices", "ps_ops",
                             "strategy",      NULL};
    int ps_tasks = 0, merge = 1;
    PyObject *cluster = Py_None, *ps_dev = NULL, *worker_dev = NULL;
    PyObject *ps_ops = Py_None, *strategy = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|iOOOpOO:replica_device_setter",
                                     kwlist, &ps_tasks, &cluster, &ps_dev,
                                     &worker_dev, &merge, &ps_ops, &strategy))
        return NULL;
    rf_replica_device_setter_options o;
    rf_replica_device_setter_options_init(&o);
    o.ps_tasks = ps_tasks;
    o.merge_devices = merge;
    if (device_option(ps_dev, "ps_device", &o.ps_device) < 0 ||
        device_option(worker_dev, "worker_device", &o.worker_device) < 0)
        return NULL;

    rf_cluster_job *jobs = NULL;
    rf_cluster_desc desc = {NULL, 0};
    const char **ops = NULL;
    PyObject *ops_fast = NULL;
    pyrf_setter_obj *so = NULL;
    PyObject *result = NULL;
    if (cluster != Py_None) {
        if (!PyDict_Check(cluster)) {
            PyErr_Format(PyExc_TypeError,
                         "cluster: expected a dict job -> number of tasks, "
                         "not %.100s",
                         Py_TYPE(cluster)->tp_name);
            goto out;
        }
        Py_ssize_t nj = PyDict_Size(cluster), pos = 0, i = 0;
        jobs = PyMem_Calloc((size_t)(nj ? nj : 1), sizeof *jobs);
        if (!jobs) {
            PyErr_NoMemory();
            goto out;
        }
        PyObject *key, *val;
        while (PyDict_Next(cluster, &pos, &key, &val)) {
            if (!PyUnicode_Check(key)) {
                PyErr_Format(PyExc_TypeError,
                             "cluster: job names are str, not %.100s",
                             Py_TYPE(key)->tp_name);
                goto out;
            }
            if (!(jobs[i].name = PyUnicode_AsUTF8(key)) ||
                cluster_tasks(key, val, &jobs[i].num_tasks) < 0)
                goto out;
            i++;
        }
        desc.jobs = jobs;
        desc.num_jobs = (size_t)i;
        o.cluster = &desc;
    }
    if (ps_ops != Py_None) {
        ops_fast = PySequence_Fast(ps_ops, "");
        if (!ops_fast || PyUnicode_Check(ps_ops)) {
            PyErr_SetString(PyExc_TypeError,
                            "ps_ops: expected a sequence of op type names");
            goto out;
        }
        Py_ssize_t k = PySequence_Fast_GET_SIZE(ops_fast);
        ops = PyMem_Calloc((size_t)(k ? k : 1), sizeof *ops);
        if (!ops) {
            PyErr_NoMemory();
            goto out;
        }
        for (Py_ssize_t i = 0; i < k; i++) {
            char what[32];
            snprintf(what, sizeof what, "ps_ops[%zd]", i);
            if (pyrf_str_or_none(PySequence_Fast_GET_ITEM(ops_fast, i), what,
                                 &ops[i]) < 0)
                goto out;
            if (!ops[i]) {
                PyErr_Format(PyExc_TypeError, "%s: expected a str", what);
                goto out;
            }
        }
        o.ps_ops = ops;
        o.num_ps_ops = (size_t)k;
    }
    so = PyObject_GC_New(pyrf_setter_obj, &pyrf_setter_type);
    if (!so)
        goto out;
    so->s = NULL;
    so->strategy = NULL;
    so->exc = NULL;
    PyObject_GC_Track((PyObject *)so);
    if (!strategy || strategy == Py_None) {
        o.strategy = RF_PS_ROUND_ROBIN;
    } else if (PyUnicode_Check(strategy)) {
        const char *s = PyUnicode_AsUTF8(strategy);
        if (!s)
            goto out;
        if (!strcmp(s, "round_robin")) {
            o.strategy = RF_PS_ROUND_ROBIN;
        } else if (!strcmp(s, "greedy")) {
            o.strategy = RF_PS_GREEDY;
        } else {
            PyErr_Format(PyExc_ValueError,
                         "strategy: %R is not 'round_robin', 'greedy' or a "
                         "callable",
                         strategy);
            goto out;
        }
    } else if (PyCallable_Check(strategy)) {
        o.strategy = RF_PS_CUSTOM;
        o.strategy_fn = strategy_cb;
        o.strategy_ctx = so;
        so->strategy = Py_NewRef(strategy);
    } else {
        PyErr_Format(PyExc_TypeError,
                     "strategy: expected 'round_robin', 'greedy' or a "
                     "callable, not %.100s",
                     Py_TYPE(strategy)->tp_name);
        goto out;
    }
    rf_status st = rf_replica_device_setter_create(&o, &so->s);
    if (st != RF_OK) {
        pyrf_raise(st, NULL);
        goto out;
    }
    result = so->s ? Py_NewRef((PyObject *)so) : Py_NewRef(Py_None);
out:
    Py_XDECREF(so);
    Py_XDECREF(ops_fast);
    PyMem_Free(ops);
    PyMem_Free(jobs);
    return result;
}

/* ---- Graph: device scopes ----------------------------------------------- */

enum { SCOPE_NONE, SCOPE_DEVICE, SCOPE_FN, SCOPE_SETTER };

struct pyrf_scope {
    int kind;
    rf_device_spec spec;   /* SCOPE_DEVICE */
    PyObject *obj;         /* SCOPE_FN: the callable; SCOPE_SETTER: setter */
    pyrf_graph_obj *graph; /* borrowed: the graph owns the scope */
};

/* Node objects a device function kept of a node whose creation then
 * failed: their pointer would dangle. */
static void kill_pending(pyrf_graph_obj *go, const rf_node *n)
{
    if (!go->pending)
        return;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(go->pending); i++) {
        pyrf_node_obj *o = (pyrf_node_obj *)PyList_GET_ITEM(go->pending, i);
        if (o->n == n)
            o->n = NULL;
    }
}

/* After a builder: the pending Node objects whose node made it into the
 * graph are kept, the others killed; the list is emptied. */
static void settle(pyrf_graph_obj *go)
{
    if (!go->pending || PyList_GET_SIZE(go->pending) == 0)
        return;
    size_t num = rf_graph_num_nodes(go->g);
    Py_ssize_t k = PyList_GET_SIZE(go->pending);
    for (Py_ssize_t i = 0; i < k; i++) {
        pyrf_node_obj *o = (pyrf_node_obj *)PyList_GET_ITEM(go->pending, i);
        if (o->n && !(o->id < num && rf_graph_node(go->g, o->id) == o->n))
            o->n = NULL;
    }
    PyObject *exc = PyErr_Occurred() ? exc_fetch() : NULL;
    if (PyList_SetSlice(go->pending, 0, k, NULL) < 0)
        PyErr_Clear();
    if (exc)
        exc_restore(exc);
}

/* Keeps the first exception of a node's creation on the graph. */
static void keep_exc(pyrf_graph_obj *go, PyObject *e)
{
    if (!e)
        return;
    if (go->exc)
        Py_DECREF(e);
    else
        go->exc = e;
}

/* A Python device function: fn(Node) -> str | None. */
static rf_status call_device_fn(pyrf_scope *s, const rf_node *node,
                                char *device, size_t cap)
{
    pyrf_graph_obj *go = s->graph;
    const char *nm = rf_node_name(node);
    if (go->exc)
        return rf_error_set(RF_ERR_ABORTED,
                            "device function for op \"%s\": not called after "
                            "an earlier one raised",
                            nm);
    if (!s->obj)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "device function for op \"%s\": released", nm);
    PyObject *nobj = pyrf_node_new((PyObject *)go, (rf_node *)node);
    PyObject *r = NULL;
    if (nobj) {
        PyObject *fn = Py_NewRef(s->obj);
        go->in_callback++;
        r = PyObject_CallOneArg(fn, nobj);
        go->in_callback--;
        Py_DECREF(fn);
        /* kept by the function: its node is not in the graph yet */
        if (Py_REFCNT(nobj) > 1 && PyList_Append(go->pending, nobj) < 0) {
            ((pyrf_node_obj *)nobj)->n = NULL;
            Py_CLEAR(r);
        }
        Py_DECREF(nobj);
    }
    const char *str = "";
    if (r && r != Py_None) {
        str = PyUnicode_Check(r) ? PyUnicode_AsUTF8(r) : NULL;
        if (!str && !PyErr_Occurred())
            PyErr_Format(PyExc_TypeError,
                         "device function returned %.100s for op '%s', not a "
                         "str or None",
                         Py_TYPE(r)->tp_name, nm);
    }
    if (PyErr_Occurred()) {
        Py_XDECREF(r);
        keep_exc(go, exc_fetch());
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "device function for op \"%s\" raised an "
                            "exception",
                            nm);
    }
    rf_device_spec spec;
    rf_status st = rf_device_spec_parse(str, &spec);
    Py_DECREF(r);
    if (st != RF_OK)
        return rf_error_set(st, "device function for op \"%s\": %s", nm,
                            rf_error_message());
    return rf_device_spec_to_string(&spec, device, cap);
}

static rf_status call_setter(pyrf_scope *s, const rf_node *node, char *device,
                             size_t cap)
{
    pyrf_graph_obj *go = s->graph;
    pyrf_setter_obj *so = (pyrf_setter_obj *)s->obj;
    if (!so || !so->s)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "replica device setter for op \"%s\": released",
                            rf_node_name(node));
    go->in_callback++;
    rf_status st = rf_replica_device_setter_node_fn(so->s, node, device, cap);
    go->in_callback--;
    keep_exc(go, setter_take_exc(so));
    return st;
}

/* The rf_device_fn of every scope but tf.device(None). */
static rf_status scope_fn(void *ctx, const rf_node *node, char *device,
                          size_t cap)
{
    pyrf_scope *s = ctx;
    rf_status st;
    switch (s->kind) {
    case SCOPE_DEVICE:
        st = rf_device_node_merge_fn(&s->spec, node, device, cap);
        break;
    case SCOPE_FN:
        st = call_device_fn(s, node, device, cap);
        break;
    case SCOPE_SETTER:
        st = call_setter(s, node, device, cap);
        break;
    default:
        st = rf_error_set(RF_ERR_INVALID_ARG, "device scope kind %d", s->kind);
    }
    if (st != RF_OK) /* the node will not be created */
        kill_pending(s->graph, node);
    return st;
}

static int graph_busy(pyrf_graph_obj *go, const char *what)
{
    if (go->in_callback <= 0)
        return 0;
    PyErr_Format(PyExc_RuntimeError,
                 "%s: the graph cannot be changed from inside one of its "
                 "device functions",
                 what);
    return 1;
}

static int scope_push(pyrf_graph_obj *go, int kind, PyObject *obj,
                      const char *device, const char *what)
{
    if (graph_busy(go, what))
        return -1;
    if (go->nscopes == go->capscopes) {
        size_t cap = go->capscopes ? go->capscopes * 2 : 8;
        pyrf_scope **v = PyMem_Realloc(go->scopes, cap * sizeof *v);
        if (!v) {
            PyErr_NoMemory();
            return -1;
        }
        go->scopes = v;
        go->capscopes = cap;
    }
    pyrf_scope *s = PyMem_Calloc(1, sizeof *s);
    if (!s) {
        PyErr_NoMemory();
        return -1;
    }
    s->kind = kind;
    s->graph = go;
    rf_status st = RF_OK;
    if (kind == SCOPE_DEVICE)
        st = rf_device_spec_parse(device, &s->spec);
    if (st == RF_OK)
        st = kind == SCOPE_NONE ? rf_device_fn_push(go->g, NULL, NULL)
                                : rf_device_fn_push(go->g, scope_fn, s);
    if (st != RF_OK) {
        PyMem_Free(s);
        pyrf_raise_ctx(st, what);
        return -1;
    }
    s->obj = Py_XNewRef(obj);
    go->scopes[go->nscopes++] = s;
    return 0;
}

/* Pops the innermost scope and releases what it kept. */
static void scope_pop(pyrf_graph_obj *go)
{
    pyrf_scope *s = go->scopes[--go->nscopes];
    rf_device_fn_pop(go->g);
    Py_XDECREF(s->obj);
    PyMem_Free(s);
}

static PyObject *graph_device_push(PyObject *self, PyObject *arg)
{
    const char *dev;
    if (pyrf_str_or_none(arg, "device", &dev) < 0)
        return NULL;
    if (scope_push((pyrf_graph_obj *)self, dev ? SCOPE_DEVICE : SCOPE_NONE,
                   NULL, dev, "device_push") < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *graph_device_fn_push(PyObject *self, PyObject *fn)
{
    if (!PyCallable_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "fn: expected a callable, not %.100s",
                     Py_TYPE(fn)->tp_name);
        return NULL;
    }
    if (scope_push((pyrf_graph_obj *)self, SCOPE_FN, fn, NULL,
                   "device_fn_push") < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *graph_setter_push(PyObject *self, PyObject *setter)
{
    if (setter != Py_None && !PyObject_TypeCheck(setter, &pyrf_setter_type)) {
        PyErr_Format(PyExc_TypeError,
                     "setter: expected a ReplicaDeviceSetter or None, not "
                     "%.100s",
                     Py_TYPE(setter)->tp_name);
        return NULL;
    }
    bool none = setter == Py_None;
    if (scope_push((pyrf_graph_obj *)self, none ? SCOPE_NONE : SCOPE_SETTER,
                   none ? NULL : setter, NULL, "setter_push") < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *graph_device_pop(PyObject *self, PyObject *noargs)
{
    (void)noargs;
    pyrf_graph_obj *go = (pyrf_graph_obj *)self;
    if (graph_busy(go, "device_pop"))
        return NULL;
    if (go->nscopes == 0) {
        PyErr_SetString(PyExc_ValueError, "device_pop: no device scope");
        return NULL;
    }
    scope_pop(go);
    Py_RETURN_NONE;
}

/* ---- Graph -------------------------------------------------------------- */

static PyObject *graph_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, ":Graph", kwlist))
        return NULL;
    pyrf_graph_obj *go = (pyrf_graph_obj *)type->tp_alloc(type, 0);
    if (!go)
        return NULL;
    if (!(go->pending = PyList_New(0))) {
        Py_DECREF(go);
        return NULL;
    }
    rf_status st = rf_graph_create(&go->g);
    if (st != RF_OK) {
        go->g = NULL;
        Py_DECREF(go);
        return pyrf_raise_ctx(st, "Graph");
    }
    return (PyObject *)go;
}

static int graph_traverse(PyObject *self, visitproc visit, void *arg)
{
    pyrf_graph_obj *go = (pyrf_graph_obj *)self;
    for (size_t i = 0; i < go->nscopes; i++)
        Py_VISIT(go->scopes[i]->obj);
    Py_VISIT(go->exc);
    Py_VISIT(go->pending);
    return 0;
}

static int graph_clear(PyObject *self)
{
    pyrf_graph_obj *go = (pyrf_graph_obj *)self;
    while (go->nscopes && go->g)
        scope_pop(go);
    PyMem_Free(go->scopes);
    go->scopes = NULL;
    go->nscopes = go->capscopes = 0;
    Py_CLEAR(go->exc);
    Py_CLEAR(go->pending);
    return 0;
}

static void graph_dealloc(PyObject *self)
{
    pyrf_graph_obj *go = (pyrf_graph_obj *)self;
    PyObject_GC_UnTrack(self);
    graph_clear(self);
    if (go->g)
        rf_graph_destroy(go->g);
    go->g = NULL;
    Py_TYPE(self)->tp_free(self);
}

#define GO ((pyrf_graph_obj *)self)

static PyObject *graph_set_seed(PyObject *self, PyObject *arg)
{
    if (!PyIndex_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "seed: expected an int, not %.100s",
                     Py_TYPE(arg)->tp_name);
        return NULL;
    }
    PyObject *idx = PyNumber_Index(arg);
    if (!idx)
        return NULL;
    unsigned long long seed = PyLong_AsUnsignedLongLong(idx);
    Py_DECREF(idx);
    if (seed == (unsigned long long)-1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError))
            return NULL;
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "seed: %R is not in [0, 2**64)", arg);
        return NULL;
    }
    if (graph_busy(GO, "set_seed"))
        return NULL;
    rf_graph_set_seed(GO->g, (uint64_t)seed);
    Py_RETURN_NONE;
}

static PyObject *graph_seed(PyObject *self, PyObject *noargs)
{
    (void)noargs;
    return PyLong_FromUnsignedLongLong(rf_graph_seed(GO->g));
}

static PyObject *graph_num_nodes(PyObject *self, PyObject *noargs)
{
    (void)noargs;
    return PyLong_FromSize_t(rf_graph_num_nodes(GO->g));
}

static PyObject *graph_node(PyObject *self, PyObject *arg)
{
    Py_ssize_t i = PyNumber_AsSsize_t(arg, PyExc_IndexError);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    size_t num = rf_graph_num_nodes(GO->g);
    if (i < 0 || (size_t)i >= num) {
        PyErr_Format(PyExc_IndexError, "node: %zd is not in [0, %zu)", i, num);
        return NULL;
    }
    return pyrf_node_new(self, rf_graph_node(GO->g, (size_t)i));
}

static PyObject *graph_find(PyObject *self, PyObject *arg)
{
    const char *name;
    if (pyrf_str_or_none(arg, "name", &name) < 0)
        return NULL;
    if (!name) {
        PyErr_SetString(PyExc_TypeError, "name: expected a str");
        return NULL;
    }
    return pyrf_node_new(self, rf_graph_find(GO->g, name));
}

static PyObject *graph_name_scope_push(PyObject *self, PyObject *arg)
{
    const char *name;
    if (pyrf_str_or_none(arg, "name", &name) < 0 ||
        graph_busy(GO, "name_scope_push"))
        return NULL;
    rf_status st = rf_name_scope_push(GO->g, name ? name : "/");
    if (st != RF_OK)
        return pyrf_raise_ctx(st, "name_scope_push");
    return PyUnicode_FromString(rf_name_scope(GO->g));
}

static PyObject *graph_name_scope_pop(PyObject *self, PyObject *noargs)
{
    (void)noargs;
    if (graph_busy(GO, "name_scope_pop"))
        return NULL;
    rf_name_scope_pop(GO->g);
    Py_RETURN_NONE;
}

static PyObject *graph_name_scope(PyObject *self, PyObject *noargs)
{
    (void)noargs;
    return PyUnicode_FromString(rf_name_scope(GO->g));
}

static PyObject *graph_unique_name(PyObject *self, PyObject *arg)
{
    const char *name;
    if (pyrf_str_or_none(arg, "name", &name) < 0 ||
        graph_busy(GO, "unique_name"))
        return NULL;
    if (!name) {
        PyErr_SetString(PyExc_TypeError, "name: expected a str");
        return NULL;
    }
    char buf[1024];
    rf_status st = rf_graph_unique_name(GO->g, name, buf, sizeof buf);
    if (st != RF_OK)
        return pyrf_raise_ctx(st, "unique_name");
    return PyUnicode_FromString(buf);
}

static PyObject *graph_control_dependencies_push(PyObject *self,
                                                 PyObject *arg)
{
    if (graph_busy(GO, "control_dependencies_push"))
        return NULL;
    rf_node **deps;
    Py_ssize_t n;
    if (pyrf_graph_nodes_arg(GO, arg, "nodes", &deps, &n) < 0)
        return NULL;
    rf_status st = rf_control_dependencies_push(GO->g, deps, (size_t)n);
    PyMem_Free(deps);
    if (st != RF_OK)
        return pyrf_raise_ctx(st, "control_dependencies_push");
    Py_RETURN_NONE;
}

static PyObject *graph_control_dependencies_pop(PyObject *self,
                                                PyObject *noargs)
{
    (void)noargs;
    if (graph_busy(GO, "control_dependencies_pop"))
        return NULL;
    rf_control_dependencies_pop(GO->g);
    Py_RETURN_NONE;
}

static PyObject *graph_colocation_push(PyObject *self, PyObject *arg)
{
    if (graph_busy(GO, "colocation_push"))
        return NULL;
    rf_node *n = pyrf_graph_node_arg(GO, arg, "node");
    if (!n)
        return NULL;
    rf_status st = rf_colocation_push(GO->g, n);
    if (st != RF_OK)
        return pyrf_raise_ctx(st, "colocation_push");
    Py_RETURN_NONE;
}

static PyObject *graph_colocation_pop(PyObject *self, PyObject *noargs)
{
    (void)noargs;
    if (graph_busy(GO, "colocation_pop"))
        return NULL;
    rf_colocation_pop(GO->g);
    Py_RETURN_NONE;
}

/* set_partitioner(p): None or a tuple (kind, args...) with TF's defaults
 * for the arguments left out. */
static PyObject *graph_set_partitioner(PyObject *self, PyObject *p)
{
    if (graph_busy(GO, "set_partitioner"))
        return NULL;
    if (p == Py_None) {
        rf_graph_set_partitioner(GO->g, NULL);
        Py_RETURN_NONE;
    }
    if (!PyTuple_Check(p) || PyTuple_GET_SIZE(p) < 1 ||
        !PyUnicode_Check(PyTuple_GET_ITEM(p, 0))) {
        PyErr_SetString(PyExc_TypeError,
                        "p: expected None or a tuple ('fixed_size' | "
                        "'min_max' | 'variable_axis_size', ...)");
        return NULL;
    }
    const char *kind = PyUnicode_AsUTF8(PyTuple_GET_ITEM(p, 0));
    if (!kind)
        return NULL;
    rf_partitioner part;
    rf_status st;
    const char *k;
    int axis = 0;
    if (!strcmp(kind, "fixed_size")) {
        int num_shards;
        if (!PyArg_ParseTuple(p, "si|i:fixed_size partitioner", &k,
                              &num_shards, &axis))
            return NULL;
        st = rf_fixed_size_partitioner(num_shards, axis, &part);
    } else if (!strcmp(kind, "min_max")) {
        int max_partitions = 1;
        long long min_slice = RF_MIN_SLICE_SIZE_DEFAULT;
        long long bpse = RF_BYTES_PER_STRING_ELEMENT_DEFAULT;
        if (!PyArg_ParseTuple(p, "s|iiLL:min_max partitioner", &k,
                              &max_partitions, &axis, &min_slice, &bpse))
            return NULL;
        st = rf_min_max_variable_partitioner(max_partitions, axis, min_slice,
                                             bpse, &part);
    } else if (!strcmp(kind, "variable_axis_size")) {
        long long max_shard_bytes;
        long long bpse = RF_BYTES_PER_STRING_ELEMENT_DEFAULT;
        PyObject *max_shards_o = Py_None;
        if (!PyArg_ParseTuple(p, "sL|iLO:variable_axis_size partitioner", &k,
                              &max_shard_bytes, &axis, &bpse, &max_shards_o))
            return NULL;
        int max_shards = 0;
        if (max_shards_o != Py_None) {
            long v = PyLong_AsLong(max_shards_o);
            if (v == -1 && PyErr_Occurred())
                return NULL;
            if (v < INT_MIN || v > INT_MAX) {
                PyErr_SetString(PyExc_ValueError,
                                "p: max_shards is out of range");
                return NULL;
            }
            max_shards = (int)v;
        }
        st = rf_variable_axis_size_partitioner(max_shard_bytes, axis, bpse,
                                               max_shards, &part);
    } else {
        PyErr_Format(PyExc_ValueError,
                     "p: partitioner kind %R is not 'fixed_size', 'min_max' "
                     "or 'variable_axis_size'",
                     PyTuple_GET_ITEM(p, 0));
        return NULL;
    }
    if (st == RF_OK)
        st = rf_graph_set_partitioner(GO->g, &part);
    if (st != RF_OK)
        return pyrf_raise_ctx(st, "set_partitioner");
    Py_RETURN_NONE;
}

static PyObject *node_list(PyObject *self, rf_node *const *v, size_t n)
{
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        PyObject *x = pyrf_node_new(self, v[i]);
        if (!x) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, x);
    }
    return list;
}

static PyObject *graph_variables(PyObject *self, PyObject *noargs)
{
    (void)noargs;
    size_t n = rf_graph_num_variables(GO->g);
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        PyObject *x = pyrf_node_new(self, rf_graph_variable(GO->g, i));
        if (!x) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, x);
    }
    return list;
}

static PyObject *graph_trainable_variables(PyObject *self, PyObject *noargs)
{
    (void)noargs;
    size_t n = rf_graph_trainable_variables(GO->g, NULL, 0);
    rf_node **v = PyMem_Malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return PyErr_NoMemory();
    n = rf_graph_trainable_variables(GO->g, v, n);
    PyObject *list = node_list(self, v, n);
    PyMem_Free(v);
    return list;
}

static PyObject *graph_initialize_variables(PyObject *self, PyObject *noargs)
{
    (void)noargs;
    rf_status st = rf_graph_initialize_variables(GO->g);
    if (st != RF_OK)
        return pyrf_raise_ctx(st, "initialize_variables");
    Py_RETURN_NONE;
}

static PyObject *graph_repr(PyObject *self)
{
    return PyUnicode_FromFormat("<Graph %zu nodes, %zu variables>",
                                rf_graph_num_nodes(GO->g),
                                rf_graph_num_variables(GO->g));
}

#undef GO

static PyMethodDef graph_methods[] = {
    {"set_seed", graph_set_seed, METH_O, "set_seed(int): graph-level seed"},
    {"seed", graph_seed, METH_NOARGS, "seed() -> int"},
    {"num_nodes", graph_num_nodes, METH_NOARGS, "num_nodes() -> int"},
    {"node", graph_node, METH_O, "node(i) -> Node (creation order)"},
    {"find", graph_find, METH_O, "find(name) -> Node | None"},
    {"name_scope_push", graph_name_scope_push, METH_O,
     "name_scope_push(name) -> str: enters tf.name_scope(name) (None: the "
     "top level); returns the scope now"},
    {"name_scope_pop", graph_name_scope_pop, METH_NOARGS,
     "name_scope_pop()"},
    {"name_scope", graph_name_scope, METH_NOARGS,
     "name_scope() -> str: the current scope ('' at top level)"},
    {"unique_name", graph_unique_name, METH_O,
     "unique_name(name) -> str: Graph.unique_name (marks it used)"},
    {"control_dependencies_push", graph_control_dependencies_push, METH_O,
     "control_dependencies_push(nodes)"},
    {"control_dependencies_pop", graph_control_dependencies_pop, METH_NOARGS,
     "control_dependencies_pop()"},
    {"colocation_push", graph_colocation_push, METH_O,
     "colocation_push(node): tf.colocate_with(node)"},
    {"colocation_pop", graph_colocation_pop, METH_NOARGS, "colocation_pop()"},
    {"device_push", graph_device_push, METH_O,
     "device_push(device: str | None): tf.device(\"...\") or tf.device(None)"},
    {"device_fn_push", graph_device_fn_push, METH_O,
     "device_fn_push(fn): tf.device(fn), fn(Node) -> str | None with the "
     "node's current requested device in node.device"},
    {"setter_push", graph_setter_push, METH_O,
     "setter_push(setter: ReplicaDeviceSetter | None)"},
    {"device_pop", graph_device_pop, METH_NOARGS,
     "device_pop(): leaves the innermost device scope of any kind"},
    {"set_partitioner", graph_set_partitioner, METH_O,
     "set_partitioner(p): None, ('fixed_size', num_shards, axis), "
     "('min_max', max_partitions, axis, min_slice_size, "
     "bytes_per_string_element), ('variable_axis_size', max_shard_bytes, "
     "axis, bytes_per_string_element, max_shards)"},
    {"variables", graph_variables, METH_NOARGS,
     "variables() -> [Node] (creation order)"},
    {"trainable_variables", graph_trainable_variables, METH_NOARGS,
     "trainable_variables() -> [Node]"},
    {"initialize_variables", graph_initialize_variables, METH_NOARGS,
     "initialize_variables(): runs every variable's initializer"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject pyrf_graph_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "rdmaflow._rdmaflow.Graph",
    .tp_basicsize = sizeof(pyrf_graph_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Graph(): a dataflow graph (rf_graph) and its scopes",
    .tp_new = graph_new,
    .tp_dealloc = graph_dealloc,
    .tp_traverse = graph_traverse,
    .tp_clear = graph_clear,
    .tp_repr = graph_repr,
    .tp_methods = graph_methods,
};

/* ---- helpers for the builders (py_graph_internal.h) --------------------- */

rf_graph *pyrf_graph_ptr(PyObject *o, const char *arg)
{
    if (!PyObject_TypeCheck(o, &pyrf_graph_type)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a Graph, not %.100s", arg,
                     Py_TYPE(o)->tp_name);
        return NULL;
    }
    return ((pyrf_graph_obj *)o)->g;
}

pyrf_graph_obj *pyrf_graph_builder_arg(PyObject *o, const char *arg)
{
    if (!pyrf_graph_ptr(o, arg))
        return NULL;
    pyrf_graph_obj *go = (pyrf_graph_obj *)o;
    return graph_busy(go, arg) ? NULL : go;
}

rf_node *pyrf_graph_node_arg(pyrf_graph_obj *go, PyObject *o, const char *arg)
{
    rf_node *n = pyrf_node_ptr(o, arg);
    if (n && rf_node_graph(n) != go->g) {
        PyErr_Format(PyExc_ValueError, "%s: node '%s' is from another graph",
                     arg, rf_node_name(n));
        return NULL;
    }
    return n;
}

int pyrf_graph_nodes_arg(pyrf_graph_obj *go, PyObject *seq, const char *arg,
                         rf_node ***out, Py_ssize_t *n)
{
    if (PyUnicode_Check(seq) || PyObject_TypeCheck(seq, &pyrf_node_type)) {
        PyErr_Format(PyExc_TypeError,
                     "%s: expected a sequence of nodes, not %.100s", arg,
                     Py_TYPE(seq)->tp_name);
        return -1;
    }
    if (pyrf_nodes_from_seq(seq, arg, out, n) < 0)
        return -1;
    for (Py_ssize_t i = 0; i < *n; i++)
        if (rf_node_graph((*out)[i]) != go->g) {
            PyErr_Format(PyExc_ValueError,
                         "%s[%zd]: node '%s' is from another graph", arg, i,
                         rf_node_name((*out)[i]));
            PyMem_Free(*out);
            *out = NULL;
            return -1;
        }
    return 0;
}

int pyrf_str_or_none(PyObject *o, const char *arg, const char **out)
{
    if (o == Py_None) {
        *out = NULL;
        return 0;
    }
    if (!PyUnicode_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a str or None, not %.100s",
                     arg, Py_TYPE(o)->tp_name);
        return -1;
    }
    Py_ssize_t len;
    *out = PyUnicode_AsUTF8AndSize(o, &len);
    if (!*out)
        return -1;
    if (strlen(*out) != (size_t)len) {
        PyErr_Format(PyExc_ValueError, "%s: embedded NUL character", arg);
        return -1;
    }
    return 0;
}

/* Raises the error the last builder left: the device function's exception,
 * else ValueError(rf_graph_error); clears both. NULL. */
static PyObject *raise_graph_error(pyrf_graph_obj *go)
{
    if (go->exc) {
        PyObject *e = go->exc;
        go->exc = NULL;
        rf_graph_clear_error(go->g);
        exc_restore(e);
        return NULL;
    }
    const char *m = rf_graph_error(go->g);
    if (!m || !*m)
        m = rf_error_message();
    if (!m || !*m)
        m = "graph building failed (no message)";
    /* the library may name a byte that is not UTF-8: keep it escaped */
    PyObject *msg =
        PyUnicode_DecodeUTF8(m, (Py_ssize_t)strlen(m), "backslashreplace");
    if (msg) {
        PyErr_SetObject(PyExc_ValueError, msg);
        Py_DECREF(msg);
    }
    rf_graph_clear_error(go->g);
    return NULL;
}

bool pyrf_graph_check_error(pyrf_graph_obj *go)
{
    settle(go);
    if (!go->exc && rf_graph_status(go->g) == RF_OK)
        return false;
    raise_graph_error(go);
    return true;
}

PyObject *pyrf_graph_result(pyrf_graph_obj *go, rf_node *n)
{
    if (pyrf_graph_check_error(go))
        return NULL;
    if (!n) /* no error recorded: the builder refused its arguments */
        return raise_graph_error(go);
    return pyrf_node_new((PyObject *)go, n);
}

PyObject *pyrf_graph_status_error(pyrf_graph_obj *go, rf_status st)
{
    if (pyrf_graph_check_error(go))
        return NULL;
    return pyrf_raise(st, NULL);
}

/* ---- init ----------------------------------------------------------------- */

int pyrf_graph_init(PyObject *module)
{
    if (PyType_Ready(&pyrf_graph_type) < 0 ||
        PyType_Ready(&pyrf_node_type) < 0 ||
        PyType_Ready(&pyrf_setter_type) < 0)
        return -1;
    if (PyModule_AddType(module, &pyrf_graph_type) < 0 ||
        PyModule_AddType(module, &pyrf_node_type) < 0 ||
        PyModule_AddType(module, &pyrf_setter_type) < 0)
        return -1;
    return 0;
}
