/* python/src/py_ckpt.c: checkpoint files for Python (rdmaflow/checkpoint.h):
 * the CheckpointReader type over an opened, verified file (its tensors as
 * read-only memoryviews into the file's memory), and the checkpoint
 * directory functions checkpoint_list and checkpoint_open_latest. File I/O
 * runs with the GIL released. */
#include "pyrf.h"

#include <limits.h>
#include <string.h>

/* ---- CheckpointReader ---------------------------------------------------- */

typedef struct reader_obj {
    PyObject_HEAD
    rf_ckpt *ck; /* NULL once closed */
    PyObject *path;
} reader_obj;

static PyTypeObject reader_type;

/* A reader object over ck (taken over, closed on failure). */
static PyObject *reader_wrap(rf_ckpt *ck, const char *path)
{
    reader_obj *r = PyObject_New(reader_obj, &reader_type);
    if (!r) {
        rf_ckpt_close(ck);
        return NULL;
    }
    r->ck = ck;
    r->path = PyUnicode_DecodeFSDefault(path);
    if (!r->path) {
        Py_DECREF(r); /* closes ck */
        return NULL;
    }
    return (PyObject *)r;
}

/* A path argument (str or os.PathLike) as bytes in the file system
 * encoding; NULL with the error naming arg. */
static PyObject *path_arg(PyObject *o, const char *arg)
{
    PyObject *b = NULL;
    if (!PyUnicode_FSConverter(o, &b)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a path (str), got %.100s",
                     arg, Py_TYPE(o)->tp_name);
        return NULL;
    }
    return b;
}

static PyObject *reader_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    (void)type;
    static char *kwlist[] = {"path", NULL};
    PyObject *p;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O:CheckpointReader", kwlist,
                                     &p))
        return NULL;
    PyObject *b = path_arg(p, "path");
    if (!b)
        return NULL;
    const char *path = PyBytes_AS_STRING(b);
    rf_ckpt *ck = NULL;
    rf_status st;
    Py_BEGIN_ALLOW_THREADS;
    st = rf_ckpt_open(path, &ck);
    Py_END_ALLOW_THREADS;
    PyObject *r = st == RF_OK ? reader_wrap(ck, path) : pyrf_raise(st, NULL);
    Py_DECREF(b);
    return r;
}

static void reader_dealloc(reader_obj *r)
{
    rf_ckpt_close(r->ck);
    Py_XDECREF(r->path);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

/* The open file of r; NULL with ValueError once closed. */
static rf_ckpt *reader_open(reader_obj *r)
{
    if (!r->ck)
        PyErr_SetString(PyExc_ValueError, "CheckpointReader is closed");
    return r->ck;
}

/* The entry called name; NULL with ValueError naming it if there is none. */
static const rf_ckpt_entry *reader_entry(reader_obj *r, PyObject *name)
{
    rf_ckpt *ck = reader_open(r);
    if (!ck)
        return NULL;
    const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    if (!s) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "name: expected a str, got %.100s",
                         Py_TYPE(name)->tp_name);
        return NULL;
    }
    const rf_ckpt_entry *e = rf_ckpt_find(ck, s);
    if (!e)
        PyErr_Format(PyExc_ValueError, "name: %R is not a tensor of %S", name,
                     r->path);
    return e;
}

static PyObject *reader_names(reader_obj *r, PyObject *noargs)
{
    (void)noargs;
    rf_ckpt *ck = reader_open(r);
    if (!ck)
        return NULL;
    size_t n = rf_ckpt_count(ck);
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        PyObject *s = PyUnicode_FromString(rf_ckpt_at(ck, i)->t.name);
        if (!s) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, s);
    }
    return list;
}

static PyObject *reader_dtype(reader_obj *r, PyObject *name)
{
    const rf_ckpt_entry *e = reader_entry(r, name);
    return e ? pyrf_dtype_str(e->t.dtype) : NULL;
}

static PyObject *reader_shape(reader_obj *r, PyObject *name)
{
    const rf_ckpt_entry *e = reader_entry(r, name);
    return e ? pyrf_shape_to_py(&e->t.shape) : NULL;
}

/* A read-only view of the tensor's bytes in the file's memory (mapped
 * read-only: a writable view would fault). */
static PyObject *reader_get(reader_obj *r, PyObject *name)
{
    const rf_ckpt_entry *e = reader_entry(r, name);
    if (!e)
        return NULL;
    static char empty; /* an empty tensor's data may be NULL */
    rf_tensor t = {e->t.dtype, e->t.shape,
                   e->t.bytes ? (void *)e->t.data : &empty};
    PyObject *v = pyrf_tensor_view(&t);
    if (!v || v == Py_None)
        return v;
    PyObject *ro = PyObject_CallMethod(v, "toreadonly", NULL);
    Py_DECREF(v);
    return ro;
}

static PyObject *reader_meta(reader_obj *r, PyObject *key)
{
    rf_ckpt *ck = reader_open(r);
    if (!ck)
        return NULL;
    const char *k = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
    if (!k) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "key: expected a str, got %.100s",
                         Py_TYPE(key)->tp_name);
        return NULL;
    }
    const char *v = rf_ckpt_meta(ck, k);
    if (!v)
        Py_RETURN_NONE;
    return PyUnicode_FromString(v);
}

static PyObject *reader_close(reader_obj *r, PyObject *noargs)
{
    (void)noargs;
    rf_ckpt_close(r->ck);
    r->ck = NULL;
    Py_RETURN_NONE;
}

static PyObject *reader_get_path(reader_obj *r, void *closure)
{
    (void)closure;
    return Py_NewRef(r->path);
}

static PyObject *reader_get_has_crc(reader_obj *r, void *closure)
{
    (void)closure;
    rf_ckpt *ck = reader_open(r);
    return ck ? PyBool_FromLong(rf_ckpt_has_crc(ck)) : NULL;
}

static PyObject *reader_get_note(reader_obj *r, void *closure)
{
    (void)closure;
    rf_ckpt *ck = reader_open(r);
    return ck ? PyUnicode_FromString(rf_ckpt_note(ck)) : NULL;
}

static PyObject *reader_repr(reader_obj *r)
{
    return PyUnicode_FromFormat("<CheckpointReader %R%s>", r->path,
                                r->ck ? "" : " (closed)");
}

static PyMethodDef reader_methods[] = {
    {"names", (PyCFunction)reader_names, METH_NOARGS,
     "names() -> [str]: the tensors' names, in name order"},
    {"dtype", (PyCFunction)reader_dtype, METH_O, "dtype(name) -> str"},
    {"shape", (PyCFunction)reader_shape, METH_O, "shape(name) -> tuple"},
    {"get", (PyCFunction)reader_get, METH_O,
     "get(name) -> memoryview: a read-only view of the tensor's data in the "
     "file (valid while the reader is open: copy it)"},
    {"meta", (PyCFunction)reader_meta, METH_O,
     "meta(key) -> str | None: a metadata value of the file"},
    {"close", (PyCFunction)reader_close, METH_NOARGS,
     "close(): releases the file (views from get() become invalid)"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef reader_getset[] = {
    {"path", (getter)reader_get_path, NULL, "the file's path", NULL},
    {"has_crc", (getter)reader_get_has_crc, NULL,
     "whether the file carries CRC32Cs (every tensor's was verified)", NULL},
    {"note", (getter)reader_get_note, NULL,
     "checkpoint_open_latest: the newer checkpoints skipped and why", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject reader_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rdmaflow._rdmaflow.CheckpointReader",
    .tp_basicsize = sizeof(reader_obj),
    .tp_dealloc = (destructor)reader_dealloc,
    .tp_repr = (reprfunc)reader_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "CheckpointReader(path): an opened, verified checkpoint file "
              "(rf_ckpt_open)",
    .tp_methods = reader_methods,
    .tp_getset = reader_getset,
    .tp_new = reader_new,
};

/* ---- checkpoint directories ------------------------------------------- */

static PyObject *list_to_py(const rf_ckpt_list *l)
{
    PyObject *list = PyList_New((Py_ssize_t)l->n);
    for (size_t i = 0; list && i < l->n; i++) {
        PyObject *s = PyUnicode_DecodeFSDefault(l->paths[i]);
        if (!s) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, s);
    }
    return list;
}

static PyObject *checkpoint_list(PyObject *self, PyObject *dir)
{
    (void)self;
    PyObject *b = path_arg(dir, "dir");
    if (!b)
        return NULL;
    rf_ckpt_list l = {0, NULL};
    rf_status st;
    Py_BEGIN_ALLOW_THREADS;
    st = rf_ckpt_dir_list(PyBytes_AS_STRING(b), &l);
    Py_END_ALLOW_THREADS;
    Py_DECREF(b);
    if (st != RF_OK)
        return pyrf_raise(st, NULL);
    PyObject *list = list_to_py(&l);
    rf_ckpt_list_free(&l);
    return list;
}

static PyObject *checkpoint_open_latest(PyObject *self, PyObject *dir)
{
    (void)self;
    PyObject *b = path_arg(dir, "dir");
    if (!b)
        return NULL;
    char path[PATH_MAX + 64] = "";
    rf_ckpt *ck = NULL;
    rf_status st;
    Py_BEGIN_ALLOW_THREADS;
    st = rf_ckpt_dir_open_latest(PyBytes_AS_STRING(b), &ck, path, sizeof path);
    Py_END_ALLOW_THREADS;
    Py_DECREF(b);
    if (st == RF_ERR_UNAVAILABLE) /* no checkpoint at all */
        Py_RETURN_NONE;
    if (st != RF_OK)
        return pyrf_raise(st, NULL);
    return reader_wrap(ck, path[0] ? path : rf_ckpt_path(ck));
}

PyMethodDef pyrf_ckpt_functions[] = {
    {"checkpoint_list", checkpoint_list, METH_O,
     "checkpoint_list(dir) -> [path]: the kept checkpoints, newest first"},
    {"checkpoint_open_latest", checkpoint_open_latest, METH_O,
     "checkpoint_open_latest(dir) -> CheckpointReader | None: the newest "
     "checkpoint that verifies (None: no checkpoint at all)"},
    {NULL, NULL, 0, NULL},
};

int pyrf_ckpt_init(PyObject *module)
{
    if (PyType_Ready(&reader_type) < 0)
        return -1;
    return PyModule_AddObjectRef(module, "CheckpointReader",
                                 (PyObject *)&reader_type);
}
