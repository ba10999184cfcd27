/* python/src/module.c: the extension module rdmaflow._rdmaflow: its init
 * (every file's functions and types), and what every file shares (see
 * pyrf.h): rf_status errors raised through the Python package's factory,
 * dtypes and shapes, feeds taken through the buffer protocol without a
 * copy, fetches as memoryviews, and the runner thread that lets a blocking
 * call be interrupted by Ctrl-C. */
#include "pyrf.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* ---- errors -------------------------------------------------------------- */

static PyObject *error_factory; /* callable(status: int, message: str) */

PyObject *pyrf_raise(rf_status st, const char *msg)
{
    if (!msg)
        msg = rf_error_message();
    if (!msg || !*msg)
        msg = rf_status_string(st);
    if (!error_factory) {
        PyErr_Format(PyExc_RuntimeError, "%s: %s", rf_status_string(st), msg);
        return NULL;
    }
    /* the library may name a byte that is not UTF-8: keep it escaped */
    PyObject *text =
        PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "backslashreplace");
    if (!text)
        return NULL;
    PyObject *exc =
        PyObject_CallFunction(error_factory, "iN", (int)st, text);
    if (!exc) /* the factory failed: its own exception stands */
        return NULL;
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
    return NULL;
}

PyObject *pyrf_raise_ctx(rf_status st, const char *what)
{
    char buf[2048];
    const char *m = rf_error_message();
    snprintf(buf, sizeof buf, "%s: %s", what,
             m && *m ? m : rf_status_string(st));
    return pyrf_raise(st, buf);
}

static PyObject *set_error_factory(PyObject *self, PyObject *fn)
{
    (void)self;
    if (fn != Py_None && !PyCallable_Check(fn)) {
        PyErr_SetString(PyExc_TypeError,
                        "set_error_factory: expected a callable or None");
        return NULL;
    }
    Py_XDECREF(error_factory);
    error_factory = fn == Py_None ? NULL : Py_NewRef(fn);
    Py_RETURN_NONE;
}

/* ---- dtypes and shapes ------------------------------------------------- */

static const char *const dtype_names[RF_DTYPE_COUNT] = {
    [RF_F32] = "float32", [RF_I32] = "int32", [RF_I64] = "int64",
    [RF_BOOL] = "bool"};

int pyrf_dtype_from_str(PyObject *name, const char *arg, rf_dtype *out)
{
    const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    for (int d = 0; s && d < RF_DTYPE_COUNT; d++)
        if (!strcmp(s, dtype_names[d])) {
            *out = (rf_dtype)d;
            return 0;
        }
    if (!PyErr_Occurred())
        PyErr_Format(PyExc_ValueError,
                     "%s: %R is not a dtype rdmaflow has (float32, int32, "
                     "int64, bool)",
                     arg, name);
    return -1;
}

PyObject *pyrf_dtype_str(rf_dtype dtype)
{
    if ((unsigned)dtype >= RF_DTYPE_COUNT)
        return PyUnicode_FromString("unknown");
    return PyUnicode_FromString(dtype_names[dtype]);
}

int pyrf_shape_from_py(PyObject *seq, const char *arg, bool allow_unknown,
                       rf_shape *out)
{
    if (seq == Py_None) {
        PyErr_Format(PyExc_ValueError,
                     "%s: a shape of unknown rank is not supported (give "
                     "every dimension, None for an unknown one)",
                     arg);
        return -1;
    }
    PyObject *fast = PySequence_Fast(seq, "");
    if (!fast) {
        PyErr_Format(PyExc_TypeError, "%s: a shape is a sequence of ints",
                     arg);
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n > RF_MAX_RANK) {
        Py_DECREF(fast);
        PyErr_Format(PyExc_ValueError, "%s: rank %zd is above %d", arg, n,
                     RF_MAX_RANK);
        return -1;
    }
    out->rank = (int)n;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PySequence_Fast_GET_ITEM(fast, i);
        long long v = -1;
        if (d != Py_None) {
            v = PyLong_AsLongLong(d);
            if (v == -1 && PyErr_Occurred()) {
                Py_DECREF(fast);
                PyErr_Format(PyExc_TypeError,
                             "%s: dimension %zd is %R, not an int or None",
                             arg, i, d);
                return -1;
            }
        }
        if (v < -1 || (v == -1 && !allow_unknown)) {
            Py_DECREF(fast);
            PyErr_Format(PyExc_ValueError,
                         "%s: dimension %zd is %lld (%s)", arg, i, v,
                         allow_unknown ? "a dimension is >= 0 or None"
                                       : "every dimension must be known");
            return -1;
        }
        out->dims[i] = v;
    }
    Py_DECREF(fast);
    return 0;
}

PyObject *pyrf_shape_to_py(const rf_shape *s)
{
    PyObject *t = PyTuple_New(s->rank);
    for (int i = 0; t && i < s->rank; i++) {
        PyObject *d = s->dims[i] < 0 ? Py_NewRef(Py_None)
                                     : PyLong_FromLongLong(s->dims[i]);
        if (!d) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, d);
    }
    return t;
}

/* ---- feeds and fetches ------------------------------------------------- */

/* The struct-module format of a buffer whose items are a dtype's. */
static const char *dtype_format(rf_dtype d)
{
    switch (d) {
    case RF_F32: return "f";
    case RF_I32: return "i";
    case RF_I64: return "q";
    case RF_BOOL: return "?";
    }
    return "B";
}

int pyrf_buffer_dtype(const Py_buffer *v)
{
    const char *f = v->format ? v->format : "B";
    if (*f == '@' || *f == '=' || *f == '<')
        f++;
    if (f[0] && f[1]) /* a struct or a repeat count */
        return -1;
    switch (*f) {
    case 'f': return v->itemsize == 4 ? RF_F32 : -1;
    case 'i':
    case 'l':
    case 'q':
        return v->itemsize == 4 ? RF_I32 : v->itemsize == 8 ? RF_I64 : -1;
    case '?': return v->itemsize == 1 ? RF_BOOL : -1;
    }
    return -1;
}

/* "float32[?,784]" of a node, "float64[100,784]"-like of a buffer. */
static void describe_buffer(const Py_buffer *v, char *buf, size_t len)
{
    int d = pyrf_buffer_dtype(v);
    char fmt[48];
    if (d >= 0)
        snprintf(fmt, sizeof fmt, "%s", dtype_names[d]);
    else if (v->format && !strcmp(v->format, "d"))
        snprintf(fmt, sizeof fmt, "float64");
    else
        snprintf(fmt, sizeof fmt, "format '%s' (%zd-byte items)",
                 v->format ? v->format : "B", v->itemsize);
    size_t k = (size_t)snprintf(buf, len, "%s[", fmt);
    for (int i = 0; i < v->ndim && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%zd", i ? "," : "",
                              v->shape[i]);
    if (k < len)
        snprintf(buf + k, len - k, "]");
}

static void describe_node(const rf_node *n, char *buf, size_t len)
{
    rf_shape s = rf_node_shape(n);
    char sh[128];
    rf_shape_format(&s, sh, sizeof sh);
    snprintf(buf, len, "%s%s", dtype_names[rf_node_dtype(n)], sh);
}

static int feed_error(const rf_node *n, const char *why, const Py_buffer *v)
{
    char want[160], got[200], msg[1024];
    describe_node(n, want, sizeof want);
    if (v)
        describe_buffer(v, got, sizeof got);
    else
        snprintf(got, sizeof got, "?");
    snprintf(msg, sizeof msg,
             "feeding '%s': %s (expected %s, given %s)", rf_node_name(n), why,
             want, got);
    pyrf_raise(RF_ERR_INVALID_ARG, msg);
    return -1;
}

int pyrf_nodes_from_seq(PyObject *seq, const char *arg, rf_node ***out,
                        Py_ssize_t *n)
{
    PyObject *fast = PySequence_Fast(seq, "");
    if (!fast) {
        PyErr_Format(PyExc_TypeError, "%s: expected a sequence of nodes",
                     arg);
        return -1;
    }
    Py_ssize_t k = PySequence_Fast_GET_SIZE(fast);
    rf_node **v = PyMem_Malloc((size_t)(k ? k : 1) * sizeof *v);
    if (!v) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        char what[96];
        snprintf(what, sizeof what, "%s[%zd]", arg, i);
        if (!(v[i] = pyrf_node_ptr(PySequence_Fast_GET_ITEM(fast, i), what))) {
            PyMem_Free(v);
            Py_DECREF(fast);
            return -1;
        }
    }
    Py_DECREF(fast);
    *out = v;
    *n = k;
    return 0;
}

void pyrf_feeds_release(pyrf_feeds *f)
{
    for (Py_ssize_t i = 0; i < f->nviews; i++)
        PyBuffer_Release(&f->views[i]);
    PyMem_Free(f->nodes);
    PyMem_Free(f->values);
    PyMem_Free(f->views);
    memset(f, 0, sizeof *f);
}

int pyrf_feeds_get(PyObject *nodes, PyObject *values, pyrf_feeds *out)
{
    memset(out, 0, sizeof *out);
    if (pyrf_nodes_from_seq(nodes, "feeds", &out->nodes, &out->n) < 0)
        return -1;
    PyObject *fast = PySequence_Fast(values, "");
    if (!fast || PySequence_Fast_GET_SIZE(fast) != out->n) {
        Py_XDECREF(fast);
        PyErr_SetString(PyExc_ValueError,
                        "feeds: as many values as nodes are needed");
        pyrf_feeds_release(out);
        return -1;
    }
    size_t k = (size_t)(out->n ? out->n : 1);
    out->values = PyMem_Calloc(k, sizeof *out->values);
    out->views = PyMem_Calloc(k, sizeof *out->views);
    if (!out->values || !out->views) {
        Py_DECREF(fast);
        pyrf_feeds_release(out);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < out->n; i++) {
        rf_node *n = out->nodes[i];
        PyObject *v = PySequence_Fast_GET_ITEM(fast, i);
        Py_buffer *b = &out->views[i];
        if (PyObject_GetBuffer(v, b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
            char why[256];
            snprintf(why, sizeof why,
                     PyObject_CheckBuffer(v)
                         ? "the array is not C-contiguous (np.ascontiguousarray "
                           "makes a copy that is)"
                         : "a %s is not an array",
                     Py_TYPE(v)->tp_name);
            PyErr_Clear();
            /* described through a strided view, which it does export */
            Py_buffer any;
            bool described = PyObject_CheckBuffer(v) &&
                             PyObject_GetBuffer(v, &any, PyBUF_FULL_RO) == 0;
            if (!described)
                PyErr_Clear();
            feed_error(n, why, described ? &any : NULL);
            if (described)
                PyBuffer_Release(&any);
            goto fail;
        }
        out->nviews++;
        int d = pyrf_buffer_dtype(b);
        if (d < 0 || (rf_dtype)d != rf_node_dtype(n)) {
            feed_error(n, "wrong dtype", b);
            goto fail;
        }
        rf_shape want = rf_node_shape(n), got;
        if (b->ndim > RF_MAX_RANK || b->ndim != want.rank) {
            feed_error(n, "wrong rank", b);
            goto fail;
        }
        got.rank = b->ndim;
        for (int j = 0; j < b->ndim; j++) {
            got.dims[j] = b->shape[j];
            if (want.dims[j] >= 0 && want.dims[j] != got.dims[j]) {
                feed_error(n, "wrong shape", b);
                goto fail;
            }
        }
        out->values[i] = rf_tensor_make(rf_node_dtype(n), got, b->buf);
    }
    Py_DECREF(fast);
    return 0;
fail:
    Py_DECREF(fast);
    pyrf_feeds_release(out);
    return -1;
}

PyObject *pyrf_tensor_view(const rf_tensor *t)
{
    if (!t->data)
        Py_RETURN_NONE;
    Py_ssize_t shape[RF_MAX_RANK], strides[RF_MAX_RANK];
    Py_ssize_t item = (Py_ssize_t)rf_dtype_size(t->dtype), len = item;
    for (int i = t->shape.rank - 1; i >= 0; i--) {
        shape[i] = (Py_ssize_t)t->shape.dims[i];
        strides[i] = len;
        len *= shape[i];
    }
    Py_buffer b = {
        .buf = t->data,
        .obj = NULL,
        .len = len,
        .itemsize = item,
        .readonly = 0,
        .ndim = t->shape.rank,
        .format = (char *)dtype_format(t->dtype),
        .shape = t->shape.rank ? shape : NULL,
        .strides = t->shape.rank ? strides : NULL,
    };
    return PyMemoryView_FromBuffer(&b);
}

PyObject *pyrf_tensor_views(const rf_tensor *t, size_t n)
{
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        PyObject *v = pyrf_tensor_view(&t[i]);
        if (!v) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, v);
    }
    return list;
}

/* ---- the runner ---------------------------------------------------------- */

struct pyrf_runner {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pyrf_blocking_fn fn; /* the call posted, NULL when none */
    void *arg;
    bool running, done, quit;
    bool claimed; /* a Python thread waits for this call's result */
    rf_status st;
    char message[2048];
};

static void *runner_main(void *p)
{
    pyrf_runner *r = p;
    pthread_mutex_lock(&r->mu);
    for (;;) {
        while (!r->fn && !r->quit)
            pthread_cond_wait(&r->cv, &r->mu);
        if (!r->fn)
            break;
        pyrf_blocking_fn fn = r->fn;
        void *arg = r->arg;
        r->running = true;
        pthread_mutex_unlock(&r->mu);
        rf_error_clear();
        rf_status st = fn(arg);
        const char *m = rf_error_message();
        pthread_mutex_lock(&r->mu);
        snprintf(r->message, sizeof r->message, "%s", m ? m : "");
        r->st = st;
        r->fn = NULL;
        r->running = false;
        r->done = true;
        pthread_cond_broadcast(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

pyrf_runner *pyrf_runner_new(void)
{
    pyrf_runner *r = PyMem_RawCalloc(1, sizeof *r);
    if (!r) {
        PyErr_NoMemory();
        return NULL;
    }
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    int e = pthread_create(&r->thread, NULL, runner_main, r);
    if (e) {
        pthread_cond_destroy(&r->cv);
        pthread_mutex_destroy(&r->mu);
        PyMem_RawFree(r);
        errno = e;
        PyErr_SetFromErrno(PyExc_OSError);
        return NULL;
    }
    return r;
}

/* The mutex is never held while the GIL is being taken (the runner thread
 * takes the GIL in hooks while it holds no mutex either), so a Python
 * thread may lock it while holding the GIL. claimed is touched only with
 * the GIL held: the Python thread whose call is in flight, so that a
 * second Python thread waits for it to read its result. */

/* Releases the GIL for at most 100 ms, until pred holds; then checks for
 * signals (-1 with the exception set) unless pred holds (1). */
static int wait_step(pyrf_runner *r, bool (*pred)(const pyrf_runner *))
{
    bool ok;
    Py_BEGIN_ALLOW_THREADS;
    pthread_mutex_lock(&r->mu);
    if (!pred(r)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&r->cv, &r->mu, &ts);
    }
    ok = pred(r);
    pthread_mutex_unlock(&r->mu);
    Py_END_ALLOW_THREADS;
    if (ok)
        return 1;
    return PyErr_CheckSignals() < 0 ? -1 : 0;
}

static bool is_idle(const pyrf_runner *r)
{
    return !r->fn && !r->claimed;
}

static bool is_done(const pyrf_runner *r)
{
    return r->done;
}

int pyrf_runner_call(pyrf_runner *r, pyrf_blocking_fn fn, void *arg,
                     rf_status *st)
{
    int w;
    while ((w = wait_step(r, is_idle)) == 0)
        ;
    if (w < 0)
        return -1;
    r->claimed = true; /* the GIL is held since is_idle was seen true */
    pthread_mutex_lock(&r->mu);
    r->fn = fn;
    r->arg = arg;
    r->done = false;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    while ((w = wait_step(r, is_done)) == 0)
        ;
    r->claimed = false; /* interrupted: the call goes on unclaimed */
    if (w < 0)
        return -1;
    *st = r->st;
    return 0;
}

const char *pyrf_runner_message(const pyrf_runner *r)
{
    return r->message;
}

bool pyrf_runner_busy(pyrf_runner *r)
{
    pthread_mutex_lock(&r->mu);
    bool busy = r->fn != NULL || r->claimed;
    pthread_mutex_unlock(&r->mu);
    return busy;
}

void pyrf_runner_free(pyrf_runner *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    if (r->fn) { /* an interrupted call still runs: leave it be */
        r->quit = true;
        pthread_mutex_unlock(&r->mu);
        pthread_detach(r->thread);
        return;
    }
    r->quit = true;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    Py_BEGIN_ALLOW_THREADS;
    pthread_join(r->thread, NULL);
    Py_END_ALLOW_THREADS;
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    PyMem_RawFree(r);
}

/* ---- module functions ------------------------------------------------------
 */

static PyObject *version(PyObject *self, PyObject *noargs)
{
    (void)self;
    (void)noargs;
    return PyUnicode_FromString(rf_version());
}

static PyObject *blas_core(PyObject *self, PyObject *noargs)
{
    (void)self;
    (void)noargs;
    return PyUnicode_FromString(rf_blas_core());
}

static PyObject *status_name(PyObject *self, PyObject *arg)
{
    (void)self;
    long st = PyLong_AsLong(arg);
    if (st == -1 && PyErr_Occurred())
        return NULL;
    return PyUnicode_FromString(rf_status_string((rf_status)st));
}

static PyObject *exit_code(PyObject *self, PyObject *arg)
{
    (void)self;
    long st = PyLong_AsLong(arg);
    if (st == -1 && PyErr_Occurred())
        return NULL;
    return PyLong_FromLong(rf_status_exit_code((rf_status)st));
}

/* A test of the runner: sleeps ms milliseconds in it (KeyboardInterrupt
 * reaches the caller meanwhile). */
static rf_status sleep_fn(void *arg)
{
    long ms = *(long *)arg;
    PyMem_RawFree(arg);
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    return RF_OK;
}

static PyObject *blocking_sleep(PyObject *self, PyObject *arg)
{
    (void)self;
    long ms = PyLong_AsLong(arg);
    if (ms == -1 && PyErr_Occurred())
        return NULL;
    static pyrf_runner *r;
    if (!r && !(r = pyrf_runner_new()))
        return NULL;
    long *p = PyMem_RawMalloc(sizeof *p);
    if (!p)
        return PyErr_NoMemory();
    *p = ms;
    rf_status st;
    if (pyrf_runner_call(r, sleep_fn, p, &st) < 0)
        return NULL;
    Py_RETURN_NONE;
}

PyMethodDef pyrf_module_functions[] = {
    {"version", version, METH_NOARGS, "rf_version(): the library's version"},
    {"blas_core", blas_core, METH_NOARGS,
     "rf_blas_core(): the OpenBLAS kernels in use"},
    {"status_name", status_name, METH_O,
     "status_name(code): 'RF_ERR_TIMEOUT' for -6, ..."},
    {"exit_code", exit_code, METH_O,
     "exit_code(code): the exit status after a failure with that rf_status "
     "(rf_status_exit_code: 0, 1, 2 or 138)"},
    {"set_error_factory", set_error_factory, METH_O,
     "set_error_factory(fn): fn(status, message) makes the exception of an "
     "rf_status error"},
    {"_blocking_sleep", blocking_sleep, METH_O,
     "_blocking_sleep(ms): sleeps in the runner thread (tests Ctrl-C)"},
    {NULL, NULL, 0, NULL},
};

/* ---- init ---------------------------------------------------------------- */

static PyMethodDef *all_tables[] = {
    pyrf_module_functions, pyrf_graph_functions,  pyrf_local_functions,
    pyrf_ckpt_functions,   pyrf_server_functions, pyrf_monitored_functions,
    pyrf_data_functions,
};

static PyMethodDef all_functions[256];

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "rdmaflow._rdmaflow",
    .m_doc = "rdmaflow's C library (librdmaflow) for the rdmaflow package",
    .m_size = -1,
    .m_methods = all_functions,
};

PyMODINIT_FUNC PyInit__rdmaflow(void);
PyMODINIT_FUNC PyInit__rdmaflow(void)
{
    size_t k = 0;
    for (size_t t = 0; t < sizeof all_tables / sizeof all_tables[0]; t++)
        for (PyMethodDef *m = all_tables[t]; m->ml_name; m++) {
            if (k + 1 >= sizeof all_functions / sizeof all_functions[0]) {
                PyErr_SetString(PyExc_SystemError,
                                "rdmaflow._rdmaflow: too many functions");
                return NULL;
            }
            all_functions[k++] = *m;
        }
    all_functions[k] = (PyMethodDef){NULL, NULL, 0, NULL};
    PyObject *m = PyModule_Create(&module_def);
    if (!m)
        return NULL;
    if (pyrf_graph_init(m) < 0 || pyrf_local_init(m) < 0 ||
        pyrf_ckpt_init(m) < 0 || pyrf_data_init(m) < 0 ||
        pyrf_server_init(m) < 0 ||
        pyrf_monitored_init(m) < 0 || pyrf_summary_init(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    for (int st = 0; st > -RF_STATUS_COUNT; st--)
        if (PyModule_AddIntConstant(m, rf_status_string((rf_status)st), st) <
            0) {
            Py_DECREF(m);
            return NULL;
        }
    return m;
}
