/* python/src/py_summary.c: the SummaryWriter type (rdmaflow/summary.h), an
 * event file for tf.summary.FileWriter and for the built-in
 * StepCounterHook and SummarySaverHook (py_monitored.c), which hold a
 * reference to it while a session may write through it. close() ends
 * the Python side's writing (flushed); the file itself is closed when
 * the last reference goes. File I/O runs with the GIL released. */
#include "pyrf.h"

#include <math.h>

typedef struct writer_obj {
    PyObject_HEAD rf_summary_writer *w;
    bool closed; /* close() was called: no more writes from Python */
} writer_obj;

static void writer_dealloc(writer_obj *self)
{
    rf_summary_writer_close(self->w); /* its error has nowhere to go */
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *writer_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"logdir", NULL};
    PyObject *dir, *b = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O:SummaryWriter", kwlist, &dir))
        return NULL;
    if (!PyUnicode_FSConverter(dir, &b)) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError,
                         "logdir: expected a path (str), got %.100s",
                         Py_TYPE(dir)->tp_name);
        }
        return NULL;
    }
    rf_summary_writer *w = NULL;
    rf_status st;
    Py_BEGIN_ALLOW_THREADS;
    st = rf_summary_writer_open(PyBytes_AS_STRING(b), &w);
    Py_END_ALLOW_THREADS;
    Py_DECREF(b);
    if (st != RF_OK)
        return pyrf_raise(st, NULL);
    writer_obj *self = (writer_obj *)type->tp_alloc(type, 0);
    if (!self) {
        rf_summary_writer_close(w);
        return NULL;
    }
    self->w = w;
    return (PyObject *)self;
}

static int check_open(writer_obj *self)
{
    if (!self->closed)
        return 0;
    PyErr_SetString(PyExc_ValueError, "the SummaryWriter is closed");
    return -1;
}

/* step: an int >= 0; -1 with the error. */
static int step_arg(PyObject *o, long long *step)
{
    *step = PyLong_AsLongLong(o);
    if (*step == -1 && PyErr_Occurred())
        return -1;
    if (*step < 0) {
        PyErr_Format(PyExc_ValueError, "global_step: %lld is negative", *step);
        return -1;
    }
    return 0;
}

/* scalars(step, tags, values): one Event with a simple_value per tag. */
static PyObject *writer_scalars(writer_obj *self, PyObject *args)
{
    PyObject *step_o, *tags_o, *values_o;
    if (!PyArg_ParseTuple(args, "OOO:scalars", &step_o, &tags_o, &values_o))
        return NULL;
    long long step;
    if (check_open(self) < 0 || step_arg(step_o, &step) < 0)
        return NULL;
    PyObject *tags, *values = NULL, *r = NULL;
    const char **t;
    Py_ssize_t n;
    if (pyrf_tags_from_seq(tags_o, &tags, &t, &n) < 0)
        return NULL;
    float *v = NULL;
    values = PySequence_Fast(values_o, "values: expected a sequence");
    if (!values)
        goto out;
    if (!(v = PyMem_Calloc((size_t)n + 1, sizeof *v))) {
        PyErr_NoMemory();
        goto out;
    }
    if (n != PySequence_Fast_GET_SIZE(values)) {
        PyErr_Format(PyExc_ValueError, "%zd tags but %zd values", n,
                     PySequence_Fast_GET_SIZE(values));
        goto out;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        double d = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(values, i));
        if (d == -1.0 && PyErr_Occurred())
            goto out;
        v[i] = (float)d;
    }
    rf_status st;
    Py_BEGIN_ALLOW_THREADS;
    st = rf_summary_writer_scalars(self->w, step, (size_t)n, t, v);
    Py_END_ALLOW_THREADS;
    if (st != RF_OK)
        pyrf_raise(st, NULL);
    else
        r = Py_NewRef(Py_None);
out:
    PyMem_Free(t);
    PyMem_Free(v);
    Py_DECREF(tags);
    Py_XDECREF(values);
    return r;
}

int pyrf_tags_from_seq(PyObject *seq, PyObject **keep, const char ***out,
                       Py_ssize_t *n)
{
    *out = NULL;
    if (!(*keep = PySequence_Fast(seq, "tags: expected a sequence")))
        return -1;
    *n = PySequence_Fast_GET_SIZE(*keep);
    const char **t = PyMem_Calloc((size_t)*n + 1, sizeof *t);
    if (!t) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < *n; i++) {
        PyObject *to = PySequence_Fast_GET_ITEM(*keep, i);
        if (!PyUnicode_Check(to)) {
            PyErr_Format(PyExc_TypeError,
                         "tags[%zd]: expected a str, got %.100s", i,
                         Py_TYPE(to)->tp_name);
            goto fail;
        }
        if (!(t[i] = PyUnicode_AsUTF8(to)))
            goto fail;
    }
    *out = t;
    return 0;
fail:
    PyMem_Free(t);
    Py_CLEAR(*keep);
    return -1;
}

static PyObject *writer_session_start(writer_obj *self, PyObject *step_o)
{
    long long step;
    if (check_open(self) < 0 || step_arg(step_o, &step) < 0)
        return NULL;
    rf_status st;
    Py_BEGIN_ALLOW_THREADS;
    st = rf_summary_writer_session_start(self->w, step);
    Py_END_ALLOW_THREADS;
    if (st != RF_OK)
        return pyrf_raise(st, NULL);
    Py_RETURN_NONE;
}

static PyObject *writer_flush(writer_obj *self, PyObject *unused)
{
    (void)unused;
    rf_status st;
    Py_BEGIN_ALLOW_THREADS;
    st = rf_summary_writer_flush(self->w);
    Py_END_ALLOW_THREADS;
    if (st != RF_OK)
        return pyrf_raise(st, NULL);
    Py_RETURN_NONE;
}

static PyObject *writer_close(writer_obj *self, PyObject *unused)
{
    if (self->closed)
        Py_RETURN_NONE;
    self->closed = true;
    return writer_flush(self, unused);
}

static PyObject *writer_get_path(writer_obj *self, void *closure)
{
    (void)closure;
    return PyUnicode_DecodeFSDefault(rf_summary_writer_path(self->w));
}

static PyObject *writer_get_closed(writer_obj *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(self->closed);
}

static PyMethodDef writer_methods[] = {
    {"scalars", (PyCFunction)writer_scalars, METH_VARARGS,
     "scalars(global_step, tags, values): one Event of scalar summaries"},
    {"session_start", (PyCFunction)writer_session_start, METH_O,
     "session_start(global_step): a SessionLog START event"},
    {"flush", (PyCFunction)writer_flush, METH_NOARGS,
     "flush(): what was written made durable (fsync)"},
    {"close", (PyCFunction)writer_close, METH_NOARGS,
     "close(): flushes; no more writes from Python"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef writer_getset[] = {
    {"path", (getter)writer_get_path, NULL, "the event file's path", NULL},
    {"closed", (getter)writer_get_closed, NULL, "close() was called", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject pyrf_summary_writer_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "rdmaflow._rdmaflow.SummaryWriter",
    .tp_basicsize = sizeof(writer_obj),
    .tp_dealloc = (destructor)writer_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "SummaryWriter(logdir): a new TensorBoard event file in logdir",
    .tp_new = writer_new,
    .tp_methods = writer_methods,
    .tp_getset = writer_getset,
};

rf_summary_writer *pyrf_summary_writer_ptr(PyObject *o, const char *arg)
{
    if (!PyObject_TypeCheck(o, &pyrf_summary_writer_type)) {
        PyErr_Format(PyExc_TypeError,
                     "%s: expected a SummaryWriter, got "
                     "%.100s",
                     arg, Py_TYPE(o)->tp_name);
        return NULL;
    }
    return ((writer_obj *)o)->w;
}

int pyrf_summary_init(PyObject *module)
{
    if (PyType_Ready(&pyrf_summary_writer_type) < 0)
        return -1;
    return PyModule_AddObjectRef(module, "SummaryWriter",
                                 (PyObject *)&pyrf_summary_writer_type);
}
