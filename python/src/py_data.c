/* python/src/py_data.c: the Dataset type, rdmaflow/data.h for Python: an
 * IDX dataset (Fashion-MNIST) in memory with the C library's seeded
 * shuffles and shards, so a Python program feeds exactly the batches
 * rf-trainer does. Batches are written into the caller's buffers (numpy
 * arrays), no allocation per batch. */
#include "pyrf.h"

#include <string.h>

typedef struct {
    PyObject_HEAD rf_dataset *ds;
} DatasetObject;

static PyTypeObject dataset_type;

static PyObject *wrap(rf_dataset *ds)
{
    DatasetObject *o = PyObject_New(DatasetObject, &dataset_type);
    if (!o) {
        rf_dataset_free(ds);
        return NULL;
    }
    o->ds = ds;
    return (PyObject *)o;
}

static void dataset_dealloc(PyObject *self)
{
    rf_dataset_free(((DatasetObject *)self)->ds);
    PyObject_Free(self);
}

/* Dataset.fashion_mnist(dir, split): split "train" or "test". */
static PyObject *dataset_fashion_mnist(PyObject *cls, PyObject *args)
{
    (void)cls;
    const char *dir, *split;
    if (!PyArg_ParseTuple(args, "zs:fashion_mnist", &dir, &split))
        return NULL;
    rf_data_split sp;
    if (!strcmp(split, "train"))
        sp = RF_DATA_TRAIN;
    else if (!strcmp(split, "test"))
        sp = RF_DATA_TEST;
    else
        return PyErr_Format(PyExc_ValueError,
                            "split: %R is not 'train' or 'test'",
                            PyTuple_GET_ITEM(args, 1));
    rf_dataset *ds;
    rf_status st;
    Py_BEGIN_ALLOW_THREADS;
    st = rf_dataset_load_fashion_mnist(dir, sp, &ds);
    Py_END_ALLOW_THREADS;
    if (st != RF_OK)
        return pyrf_raise(st, NULL);
    return wrap(ds);
}

static PyObject *dataset_shard(PyObject *self, PyObject *args)
{
    unsigned int n, index;
    unsigned long long seed;
    if (!PyArg_ParseTuple(args, "IIK:shard", &n, &index, &seed))
        return NULL;
    rf_dataset *out;
    rf_status st = rf_dataset_shard(((DatasetObject *)self)->ds, n, index,
                                    seed, &out);
    if (st != RF_OK)
        return pyrf_raise(st, NULL);
    return wrap(out);
}

static PyObject *dataset_set_shuffle(PyObject *self, PyObject *args)
{
    int on;
    unsigned long long seed;
    if (!PyArg_ParseTuple(args, "pK:set_shuffle", &on, &seed))
        return NULL;
    rf_dataset_set_shuffle(((DatasetObject *)self)->ds, on, seed);
    Py_RETURN_NONE;
}

/* A writable C-contiguous buffer of exactly len bytes of format fmt. */
static int out_buffer(PyObject *o, const char *what, const char *fmt,
                      Py_ssize_t len, Py_buffer *b)
{
    if (PyObject_GetBuffer(o, b,
                           PyBUF_C_CONTIGUOUS | PyBUF_FORMAT |
                               PyBUF_WRITABLE) < 0)
        return -1;
    if (strcmp(b->format ? b->format : "B", fmt) || b->len != len) {
        PyErr_Format(PyExc_ValueError,
                     "next_batch: %s must be %zd bytes of format '%s' (got "
                     "%zd bytes of '%s')",
                     what, len, fmt, b->len, b->format ? b->format : "B");
        PyBuffer_Release(b);
        return -1;
    }
    return 0;
}

/* next_batch(batch_size, x, y): x float32 [batch_size, example_dim], y
 * int32 [batch_size], written in place. */
static PyObject *dataset_next_batch(PyObject *self, PyObject *args)
{
    rf_dataset *ds = ((DatasetObject *)self)->ds;
    Py_ssize_t n;
    PyObject *xo, *yo;
    if (!PyArg_ParseTuple(args, "nOO:next_batch", &n, &xo, &yo))
        return NULL;
    if (n <= 0)
        return PyErr_Format(PyExc_ValueError,
                            "next_batch: batch_size %zd is not positive", n);
    Py_buffer x, y;
    Py_ssize_t dim = (Py_ssize_t)rf_dataset_example_dim(ds);
    if (out_buffer(xo, "x", "f", n * dim * 4, &x) < 0)
        return NULL;
    if (out_buffer(yo, "y", "i", n * 4, &y) < 0) {
        PyBuffer_Release(&x);
        return NULL;
    }
    rf_status st = rf_dataset_next_batch(ds, (size_t)n, x.buf, y.buf);
    PyBuffer_Release(&x);
    PyBuffer_Release(&y);
    if (st != RF_OK)
        return pyrf_raise(st, NULL);
    Py_RETURN_NONE;
}

static PyObject *dataset_example(PyObject *self, PyObject *arg)
{
    rf_dataset *ds = ((DatasetObject *)self)->ds;
    Py_ssize_t i = PyLong_AsSsize_t(arg);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    if (i < 0 || (size_t)i >= rf_dataset_size(ds))
        return PyErr_Format(PyExc_IndexError,
                            "example %zd of a dataset of %zu", i,
                            rf_dataset_size(ds));
    const float *x;
    int32_t y;
    rf_status st = rf_dataset_example(ds, (size_t)i, &x, &y, NULL);
    if (st != RF_OK)
        return pyrf_raise(st, NULL);
    PyObject *bytes = PyBytes_FromStringAndSize(
        (const char *)x, (Py_ssize_t)(rf_dataset_example_dim(ds) * 4));
    return bytes ? Py_BuildValue("(Ni)", bytes, (int)y) : NULL;
}

static PyObject *dataset_position(PyObject *self, PyObject *noargs)
{
    (void)noargs;
    uint64_t epoch;
    size_t offset;
    rf_dataset_position(((DatasetObject *)self)->ds, &epoch, &offset);
    return Py_BuildValue("(Kn)", (unsigned long long)epoch,
                         (Py_ssize_t)offset);
}

static PyObject *dataset_size(PyObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromSize_t(rf_dataset_size(((DatasetObject *)self)->ds));
}

static PyObject *dataset_example_dim(PyObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromSize_t(
        rf_dataset_example_dim(((DatasetObject *)self)->ds));
}

static PyObject *dataset_num_classes(PyObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromLong(rf_dataset_num_classes(((DatasetObject *)self)->ds));
}

static PyMethodDef dataset_methods[] = {
    {"fashion_mnist", dataset_fashion_mnist, METH_VARARGS | METH_CLASS,
     "fashion_mnist(dir, split): Fashion-MNIST's 'train' or 'test'"},
    {"shard", dataset_shard, METH_VARARGS,
     "shard(num_tasks, task_index, seed) -> Dataset"},
    {"set_shuffle", dataset_set_shuffle, METH_VARARGS,
     "set_shuffle(on, seed): a fresh permutation every epoch"},
    {"next_batch", dataset_next_batch, METH_VARARGS,
     "next_batch(batch_size, x, y): the next batch into x and y"},
    {"example", dataset_example, METH_O,
     "example(i) -> (bytes of float32 pixels, label)"},
    {"position", dataset_position, METH_NOARGS,
     "position() -> (epoch, offset)"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef dataset_getset[] = {
    {"size", dataset_size, NULL, "examples", NULL},
    {"example_dim", dataset_example_dim, NULL, "floats per example", NULL},
    {"num_classes", dataset_num_classes, NULL, "1 + the largest label",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject dataset_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "rdmaflow._rdmaflow.Dataset",
    .tp_basicsize = sizeof(DatasetObject),
    .tp_dealloc = dataset_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An IDX dataset in memory (rdmaflow/data.h)",
    .tp_methods = dataset_methods,
    .tp_getset = dataset_getset,
};

PyMethodDef pyrf_data_functions[] = {{NULL, NULL, 0, NULL}};

int pyrf_data_init(PyObject *module)
{
    if (PyType_Ready(&dataset_type) < 0)
        return -1;
    Py_INCREF(&dataset_type);
    if (PyModule_AddObject(module, "Dataset", (PyObject *)&dataset_type) <
        0) {
        Py_DECREF(&dataset_type);
        return -1;
    }
    return 0;
}
