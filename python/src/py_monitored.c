/* python/src/py_monitored.c: tf.train.MonitoredTrainingSession for Python
 * (rdmaflow/session.h): the Hook type (the built-in C hooks, handed over to
 * the session that takes them), the bridge that makes a Python hook object
 * a C hook (its methods called under the GIL from the session's runner
 * thread), and the MonitoredSession type, whose creation, runs and close
 * (and other blocking calls) run in its runner so that Ctrl-C interrupts
 * them. A Python hook's exception fails the C call with a status that
 * never triggers recovery and is re-raised by the method that was running.
 * A session whose runner is still busy when its object dies (an interrupted
 * call) is leaked with everything it uses, never freed under the call. */
#include "py_runtime.h"

#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

/* The status a Python hook's exception fails the C call with: not one the
 * monitored session recovers from (DISCONNECTED, UNAVAILABLE, ABORTED,
 * TIMEOUT), so the exception reaches the caller at once. */
#define HOOK_ERROR RF_ERR_INVALID_ARG

/* -1 with ValueError naming arg if n is not of graph g ("the session's"
 * graph, or whose). */
static int check_node_graph(rf_graph *g, rf_node *n, const char *arg,
                            const char *whose)
{
    if (rf_node_graph(n) == g)
        return 0;
    PyErr_Format(PyExc_ValueError, "%s: node '%s' is not of %s graph", arg,
                 rf_node_name(n), whose ? whose : "the session's");
    return -1;
}

static int check_graph(rf_graph *g, rf_node *const *nodes, Py_ssize_t n,
                       const char *arg, const char *whose)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        char what[96];
        snprintf(what, sizeof what, "%s[%zd]", arg, i);
        if (check_node_graph(g, nodes[i], what, whose) < 0)
            return -1;
    }
    return 0;
}

/* An int argument in [lo, hi]; -1 with TypeError / ValueError naming arg. */
static int int_arg(PyObject *o, const char *arg, long long lo, long long hi,
                   long long *out)
{
    if (!PyLong_Check(o) || PyBool_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s: expected an int, got %.100s", arg,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (overflow || v < lo || v > hi) {
        PyErr_Format(PyExc_ValueError, "%s: %R is out of range [%lld, %lld]",
                     arg, o, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

/* ---- Hook: the built-in hooks -------------------------------------------- */

typedef struct hook_obj {
    PyObject_HEAD rf_hook *h; /* NULL once handed over to a MonitoredSession */
    PyObject *graph;          /* the Graph of the nodes it fetches, or NULL */
    PyObject *keep;   /* what the C hook uses (a SummaryWriter), or NULL: held
                         by the MonitoredSession once handed over */
    const char *kind; /* "StopAtStepHook", ... */
} hook_obj;

static PyTypeObject hook_type;

static void hook_dealloc(hook_obj *self)
{
    rf_hook_destroy(self->h);
    Py_XDECREF(self->graph);
    Py_XDECREF(self->keep);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *hook_repr(hook_obj *self)
{
    return PyUnicode_FromFormat("<Hook %s%s>", self->kind,
                                self->h ? "" : " (handed over)");
}

static PyObject *hook_get_kind(hook_obj *self, void *closure)
{
    (void)closure;
    return PyUnicode_FromString(self->kind);
}

static PyGetSetDef hook_getset[] = {
    {"kind", (getter)hook_get_kind, NULL, "the hook's TensorFlow name", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject hook_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "rdmaflow._rdmaflow.Hook",
    .tp_basicsize = sizeof(hook_obj),
    .tp_dealloc = (destructor)hook_dealloc,
    .tp_repr = (reprfunc)hook_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A built-in hook (a C hook), handed over to the "
              "MonitoredSession that takes it",
    .tp_getset = hook_getset,
};

/* A Hook object for h (made with status st); graph and keep (an object
 * the C hook uses, referenced as long as it may: see hook_obj) may be
 * NULL. */
static PyObject *hook_wrap_keep(rf_status st, rf_hook *h, PyObject *graph,
                                PyObject *keep, const char *kind)
{
    if (st != RF_OK)
        return pyrf_raise(st, NULL);
    hook_obj *self = PyObject_New(hook_obj, &hook_type);
    if (!self) {
        rf_hook_destroy(h);
        return NULL;
    }
    self->h = h;
    self->graph = graph ? Py_NewRef(graph) : NULL;
    self->keep = keep ? Py_NewRef(keep) : NULL;
    self->kind = kind;
    return (PyObject *)self;
}

/* A Hook object for h (made with status st); graph may be NULL. */
static PyObject *hook_wrap(rf_status st, rf_hook *h, PyObject *graph,
                           const char *kind)
{
    return hook_wrap_keep(st, h, graph, NULL, kind);
}

static PyObject *stop_at_step_hook(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    static char *kwlist[] = {"num_steps", "last_step", NULL};
    PyObject *a = Py_None, *b = Py_None;
    long long num = 0, last = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OO:stop_at_step_hook", kwlist,
                                     &a, &b) ||
        (a != Py_None && int_arg(a, "num_steps", 0, LLONG_MAX, &num) < 0) ||
        (b != Py_None && int_arg(b, "last_step", 0, LLONG_MAX, &last) < 0))
        return NULL;
    if ((num > 0) == (last > 0)) {
        PyErr_SetString(PyExc_ValueError,
                        "num_steps, last_step: exactly one must be given "
                        "(> 0)");
        return NULL;
    }
    rf_hook *h = NULL;
    rf_status st = rf_stop_at_step_hook_create(num, last, &h);
    return hook_wrap(st, h, NULL, "StopAtStepHook");
}

static PyObject *nan_tensor_hook(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    static char *kwlist[] = {"loss", NULL};
    PyObject *loss;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O:nan_tensor_hook", kwlist,
                                     &loss))
        return NULL;
    rf_node *n = pyrf_node_ptr(loss, "loss");
    if (!n)
        return NULL;
    if (rf_node_dtype(n) != RF_F32) {
        PyErr_Format(PyExc_ValueError, "loss: '%s' is not a float32 node",
                     rf_node_name(n));
        return NULL;
    }
    rf_hook *h = NULL;
    rf_status st = rf_nan_tensor_hook_create(n, &h);
    return hook_wrap(st, h, pyrf_node_graph_obj(loss), "NanTensorHook");
}

/* Nodes of one graph, and a new reference to its object in *graph (NULL
 * for no nodes). */
static int nodes_of_one_graph(PyObject *seq, const char *arg, rf_node ***out,
                              Py_ssize_t *n, PyObject **graph)
{
    *graph = NULL;
    PyObject *list = PySequence_List(seq);
    if (!list) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s: expected a sequence of nodes", arg);
        return -1;
    }
    int r = pyrf_nodes_from_seq(list, arg, out, n);
    if (r == 0 && *n > 0 &&
        (r = check_graph(rf_node_graph((*out)[0]), *out, *n, arg,
                         "the first node's")) < 0)
        PyMem_Free(*out);
    if (r == 0 && *n > 0)
        *graph = Py_NewRef(pyrf_node_graph_obj(PyList_GET_ITEM(list, 0)));
    Py_DECREF(list);
    return r;
}

static PyObject *logging_hook(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    static char *kwlist[] = {"nodes", "every_n_iter", NULL};
    PyObject *seq, *every;
    long long n_iter;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO:logging_hook", kwlist, &seq,
                                     &every) ||
        int_arg(every, "every_n_iter", 1, LLONG_MAX, &n_iter) < 0)
        return NULL;
    rf_node **nodes;
    Py_ssize_t n;
    PyObject *graph;
    if (nodes_of_one_graph(seq, "nodes", &nodes, &n, &graph) < 0)
        return NULL;
    PyObject *r = NULL;
    if (n > RF_HOOK_MAX_FETCHES) {
        PyErr_Format(PyExc_ValueError, "nodes: %zd nodes, at most %d", n,
                     RF_HOOK_MAX_FETCHES);
    } else {
        rf_hook *h = NULL;
        rf_status st =
            rf_logging_hook_create(nodes, (size_t)n, n_iter, NULL, &h);
        r = hook_wrap(st, h, graph, "LoggingTensorHook"); /* nodes copied */
    }
    PyMem_Free(nodes);
    Py_XDECREF(graph);
    return r;
}

static PyObject *step_counter_hook(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    static char *kwlist[] = {"every_n_steps", "examples_per_step", "writer",
                             NULL};
    PyObject *a, *b, *wo = Py_None;
    long long every, examples;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O:step_counter_hook", kwlist,
                                     &a, &b, &wo) ||
        int_arg(a, "every_n_steps", 1, LLONG_MAX, &every) < 0 ||
        int_arg(b, "examples_per_step", 0, LLONG_MAX, &examples) < 0)
        return NULL;
    rf_summary_writer *w = NULL;
    if (wo != Py_None && !(w = pyrf_summary_writer_ptr(wo, "writer")))
        return NULL;
    rf_hook *h = NULL;
    rf_status st = rf_step_counter_hook_create(every, examples, NULL, w, &h);
    return hook_wrap_keep(st, h, NULL, w ? wo : NULL, "StepCounterHook");
}

static PyObject *summary_saver_hook(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    static char *kwlist[] = {"writer", "save_steps", "save_secs",
                             "nodes",  "tags",       NULL};
    PyObject *wo, *steps_o, *seq, *tags_o;
    double secs;
    long long steps;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOdOO:summary_saver_hook",
                                     kwlist, &wo, &steps_o, &secs, &seq,
                                     &tags_o) ||
        int_arg(steps_o, "save_steps", 0, LLONG_MAX, &steps) < 0)
        return NULL;
    rf_summary_writer *w = pyrf_summary_writer_ptr(wo, "writer");
    if (!w)
        return NULL;
    rf_node **nodes;
    Py_ssize_t n;
    PyObject *graph;
    if (nodes_of_one_graph(seq, "nodes", &nodes, &n, &graph) < 0)
        return NULL;
    PyObject *r = NULL, *tags = NULL;
    const char **t = NULL;
    Py_ssize_t nt;
    if (pyrf_tags_from_seq(tags_o, &tags, &t, &nt) < 0)
        goto out;
    if (nt != n) {
        PyErr_Format(PyExc_ValueError, "%zd nodes but %zd tags", n, nt);
        goto out;
    }
    rf_hook *h = NULL;
    rf_status st =
        rf_summary_saver_hook_create(w, steps, secs, nodes, t, (size_t)n, &h);
    r = hook_wrap_keep(st, h, graph, wo, "SummarySaverHook"); /* copied */
out:
    PyMem_Free(t);
    Py_XDECREF(tags);
    PyMem_Free(nodes);
    Py_XDECREF(graph);
    return r;
}

static PyObject *checkpoint_saver_hook(PyObject *mod, PyObject *args,
                                       PyObject *kw)
{
    (void)mod;
    static char *kwlist[] = {"dir",         "save_secs",        "save_steps",
                             "max_to_keep", "max_failed_saves", NULL};
    PyObject *dir, *steps_o, *keep_o, *failed_o = NULL, *b = NULL;
    double secs;
    long long steps, keep, failed = 3;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OdOO|O:checkpoint_saver_hook",
                                     kwlist, &dir, &secs, &steps_o, &keep_o,
                                     &failed_o) ||
        int_arg(steps_o, "save_steps", 0, LLONG_MAX, &steps) < 0 ||
        int_arg(keep_o, "max_to_keep", 0, INT_MAX, &keep) < 0 ||
        (failed_o &&
         int_arg(failed_o, "max_failed_saves", 0, INT_MAX, &failed) < 0))
        return NULL;
    if (!(secs >= 0) || isinf(secs)) {
        char num[64];
        snprintf(num, sizeof num, "%g", secs);
        PyErr_Format(PyExc_ValueError, "save_secs: %s is not a number >= 0",
                     num);
        return NULL;
    }
    if (!PyUnicode_Check(dir) || !PyUnicode_FSConverter(dir, &b)) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "dir: expected a str, got %.100s",
                         Py_TYPE(dir)->tp_name);
        return NULL;
    }
    rf_hook *h = NULL;
    rf_status st = rf_checkpoint_saver_hook_create_ex(
        PyBytes_AS_STRING(b), secs, steps, (int)keep, (int)failed, NULL, &h);
    Py_DECREF(b); /* copied by the hook */
    return hook_wrap(st, h, NULL, "CheckpointSaverHook");
}

/* ---- the session's shared state ----------------------------------------- */

typedef struct py_hook py_hook;

/* What the runner's calls and the Python hooks' bridges use: allocated
 * apart from the MonitoredSession object, and leaked (with the session)
 * when the object dies while its runner is busy. Python fields are used
 * under the GIL only. */
typedef struct ms_state {
    PyObject *owner; /* borrowed MonitoredSession object; NULL once gone */
    rf_graph *g;
    /* the exception a Python hook raised during the running call */
    PyObject *exc_type, *exc_value, *exc_tb;
    /* while a Python hook runs: the C session it was called with (the
     * object's methods use it before creation returned), its thread */
    rf_monitored_session *cb_ms;
    unsigned long cb_thread;
    int cb_depth;
    /* the live Python hooks' bridges (slots NULL once destroyed), for GC */
    py_hook **pyhooks;
    size_t npyhooks;
    /* what the C hooks handed over use (SummaryWriters), released after
     * the C session is destroyed */
    PyObject *keep;
    /* creation */
    rf_server *server;
    rf_executor *ex;
    rf_monitored_session_options mo;
    char *checkpoint_dir;
    rf_hook **hooks, **chief_hooks; /* owned until handed over */
    size_t nhooks, nchief;
    bool handed_over;
    rf_monitored_session *ms;
    /* run */
    bool args_held;
    pyrf_feeds feeds;
    rf_node **fetches;
    Py_ssize_t nfetch;
    rf_tensor *out;
    int64_t step;
    bool job_ended; /* the last run ran nothing: the job had ended */
    /* save, sync_stats */
    char *save_dir;
    int save_keep;
    char save_path[4096];
    rf_session_sync_stats sync;
} ms_state;

/* A bridge: a Python hook object as a C hook. */
struct py_hook {
    rf_hook_ops ops; /* its own, named after the hook's class */
    char name[96];
    PyObject *hook; /* strong */
    ms_state *state;
    size_t slot;        /* in state->pyhooks */
    bool before_failed; /* before_run raised: after_run fails the run */
};

/* The C session the object's methods act on: the created one, or the one
 * a Python hook was called with during creation. */
static rf_monitored_session *state_session(const ms_state *s)
{
    return s->ms ? s->ms : s->cb_ms;
}

/* Moves the pending exception (set) into s, or reports it as unraisable
 * if one is kept already. */
static void store_exception(ms_state *s)
{
    if (s->exc_type) {
        PyErr_WriteUnraisable(s->owner);
        return;
    }
    PyErr_Fetch(&s->exc_type, &s->exc_value, &s->exc_tb);
    PyErr_NormalizeException(&s->exc_type, &s->exc_value, &s->exc_tb);
    if (s->exc_value && s->exc_tb)
        PyException_SetTraceback(s->exc_value, s->exc_tb);
}

/* Raises the kept exception, if any: true. */
static bool take_exception(ms_state *s)
{
    if (!s->exc_type)
        return false;
    PyErr_Restore(s->exc_type, s->exc_value, s->exc_tb);
    s->exc_type = s->exc_value = s->exc_tb = NULL;
    return true;
}

/* ---- the Python hooks' bridge ------------------------------------------- */

/* The thread's rf_error for a hook method that raised (the exception set):
 * "<Class>.<method> raised <Type>: <message>"; the exception is kept. */
static rf_status hook_failed(py_hook *h, const char *method)
{
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    PyObject *s = v ? PyObject_Str(v) : NULL;
    const char *msg = s ? PyUnicode_AsUTF8(s) : NULL;
    if (!msg)
        PyErr_Clear();
    rf_status st =
        rf_error_set(HOOK_ERROR, "%s.%s raised %s: %s", h->name, method,
                     t ? ((PyTypeObject *)t)->tp_name : "?", msg ? msg : "?");
    Py_XDECREF(s);
    PyErr_Restore(t, v, tb);
    store_exception(h->state);
    return st;
}

/* Takes the GIL for a call into the hook; false (the GIL released again)
 * when the session's object is gone (a leaked session). */
static bool hook_enter(py_hook *h, rf_monitored_session *ms,
                       PyGILState_STATE *gil)
{
    *gil = PyGILState_Ensure();
    ms_state *s = h->state;
    if (!s->owner) {
        PyGILState_Release(*gil);
        rf_error_set(HOOK_ERROR, "%s: its MonitoredSession object is gone",
                     h->name);
        return false;
    }
    if (s->cb_depth++ == 0) {
        s->cb_ms = ms;
        s->cb_thread = PyThread_get_thread_ident();
    }
    return true;
}

/* The end of a call into the hook: its status (result NULL: it raised). */
static rf_status hook_leave(py_hook *h, PyObject *result, const char *method,
                            PyGILState_STATE gil)
{
    rf_status st = result ? RF_OK : hook_failed(h, method);
    Py_XDECREF(result);
    ms_state *s = h->state;
    if (--s->cb_depth == 0)
        s->cb_ms = NULL;
    PyGILState_Release(gil);
    return st;
}

static rf_status tr_begin(void *ctx, rf_monitored_session *ms)
{
    py_hook *h = ctx;
    PyGILState_STATE gil;
    if (!hook_enter(h, ms, &gil))
        return HOOK_ERROR;
    PyObject *r = PyObject_CallMethod(h->hook, "begin", "O", h->state->owner);
    return hook_leave(h, r, "begin", gil);
}

static rf_status tr_after_create(void *ctx, rf_monitored_session *ms,
                                 int64_t global_step)
{
    py_hook *h = ctx;
    PyGILState_STATE gil;
    if (!hook_enter(h, ms, &gil))
        return HOOK_ERROR;
    PyObject *r = PyObject_CallMethod(h->hook, "after_create_session", "OL",
                                      h->state->owner, (long long)global_step);
    return hook_leave(h, r, "after_create_session", gil);
}

/* before_run's result (a sequence of at most max Nodes of the session's
 * graph, or None) into fetch; -1 with the error. */
static Py_ssize_t before_run_nodes(py_hook *h, PyObject *r, rf_node **fetch,
                                   size_t max)
{
    if (r == Py_None)
        return 0;
    rf_node **nodes;
    Py_ssize_t n;
    char arg[160];
    snprintf(arg, sizeof arg, "%s.before_run()", h->name);
    if (pyrf_nodes_from_seq(r, arg, &nodes, &n) < 0)
        return -1;
    if ((size_t)n > max) {
        PyErr_Format(PyExc_ValueError, "%s: %zd nodes, at most %zu", arg, n,
                     max);
        n = -1;
    } else if (check_graph(h->state->g, nodes, n, arg, NULL) < 0) {
        n = -1;
    } else if (n > 0) {
        memcpy(fetch, nodes, (size_t)n * sizeof *nodes);
    }
    PyMem_Free(nodes);
    return n;
}

static size_t tr_before_run(void *ctx, rf_monitored_session *ms,
                            rf_node **fetch, size_t max)
{
    py_hook *h = ctx;
    PyGILState_STATE gil;
    h->before_failed = true; /* until it returned nodes */
    if (!hook_enter(h, ms, &gil))
        return 0;
    PyObject *r =
        PyObject_CallMethod(h->hook, "before_run", "O", h->state->owner);
    Py_ssize_t n = r ? before_run_nodes(h, r, fetch, max) : -1;
    if (n < 0)
        Py_CLEAR(r);
    else
        h->before_failed = false;
    hook_leave(h, r, "before_run", gil);
    /* failed: the exception is kept (hook_leave), the run fails before its
     * step */
    return n < 0 ? RF_HOOK_FAILED : (size_t)n;
}

/* Releases the views given to after_run (their memory is the session's):
 * an exported one stays, silently. */
static void release_views(PyObject *views)
{
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    for (Py_ssize_t i = 0; views && i < PyList_GET_SIZE(views); i++) {
        PyObject *mv = PyList_GET_ITEM(views, i);
        if (!PyMemoryView_Check(mv))
            continue;
        PyObject *r = PyObject_CallMethod(mv, "release", NULL);
        if (!r)
            PyErr_Clear();
        Py_XDECREF(r);
    }
    PyErr_Restore(t, v, tb);
}

static rf_status tr_after_run(void *ctx, rf_monitored_session *ms,
                              const rf_run_values *v)
{
    py_hook *h = ctx;
    if (h->before_failed) /* its exception is kept: fail the run with it */
        return rf_error_set(HOOK_ERROR, "%s.before_run failed", h->name);
    PyGILState_STATE gil;
    if (!hook_enter(h, ms, &gil))
        return HOOK_ERROR;
    PyObject *views = pyrf_tensor_views(v->results, v->num_results);
    PyObject *r =
        views ? PyObject_CallMethod(h->hook, "after_run", "OLOO",
                                    h->state->owner, (long long)v->global_step,
                                    v->train ? Py_True : Py_False, views)
              : NULL;
    release_views(views);
    Py_XDECREF(views);
    return hook_leave(h, r, "after_run", gil);
}

static rf_status tr_end(void *ctx, rf_monitored_session *ms)
{
    py_hook *h = ctx;
    PyGILState_STATE gil;
    if (!hook_enter(h, ms, &gil))
        return HOOK_ERROR;
    PyObject *r = PyObject_CallMethod(h->hook, "end", "O", h->state->owner);
    return hook_leave(h, r, "end", gil);
}

static void tr_destroy(void *ctx)
{
    py_hook *h = ctx;
    PyGILState_STATE gil = PyGILState_Ensure();
    if (h->state->pyhooks)
        h->state->pyhooks[h->slot] = NULL;
    Py_DECREF(h->hook);
    PyMem_RawFree(h);
    PyGILState_Release(gil);
}

static const char *const hook_methods[] = {
    "begin", "after_create_session", "before_run", "after_run", "end",
};

/* -1 with TypeError naming arg unless o has every hook method. */
static int check_py_hook(PyObject *o, const char *arg)
{
    for (size_t i = 0; i < sizeof hook_methods / sizeof *hook_methods; i++) {
        PyObject *m = PyObject_GetAttrString(o, hook_methods[i]);
        int ok = m && PyCallable_Check(m);
        Py_XDECREF(m);
        if (!ok) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError,
                         "%s: %.100s object is neither a Hook nor a hook "
                         "object (it has no method %s)",
                         arg, Py_TYPE(o)->tp_name, hook_methods[i]);
            return -1;
        }
    }
    return 0;
}

/* A C hook calling the Python hook o; NULL with the error. */
static rf_hook *bridge_new(ms_state *s, PyObject *o)
{
    py_hook *h = PyMem_RawCalloc(1, sizeof *h);
    if (!h) {
        PyErr_NoMemory();
        return NULL;
    }
    snprintf(h->name, sizeof h->name, "%s", Py_TYPE(o)->tp_name);
    h->ops = (rf_hook_ops){
        .name = h->name,
        .begin = tr_begin,
        .after_create_session = tr_after_create,
        .before_run = tr_before_run,
        .after_run = tr_after_run,
        .end = tr_end,
        .destroy = tr_destroy,
    };
    h->hook = Py_NewRef(o);
    h->state = s;
    h->slot = s->npyhooks;
    rf_hook *hook = NULL;
    rf_status st = rf_hook_create(&h->ops, h, &hook);
    if (st != RF_OK) {
        Py_DECREF(h->hook);
        PyMem_RawFree(h);
        pyrf_raise(st, NULL);
        return NULL;
    }
    s->pyhooks[s->npyhooks++] = h;
    return hook;
}

/* ---- hooks arguments ----------------------------------------------------- */

/* A hooks argument as a list (None: empty); NULL with TypeError. */
static PyObject *hooks_list(PyObject *o, const char *arg)
{
    if (o == Py_None)
        return PyList_New(0);
    PyObject *l = PySequence_List(o);
    if (!l) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError,
                     "%s: expected a sequence of hooks, got "
                     "%.100s",
                     arg, Py_TYPE(o)->tp_name);
    }
    return l;
}

/* -1 with the error unless every item of list is a Hook not handed over
 * (and of graph's nodes), not given twice in all, or a hook object. */
static int hooks_check(PyObject *list, const char *arg, PyObject *graph,
                       PyObject *all)
{
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
        PyObject *o = PyList_GET_ITEM(list, i);
        char what[64];
        snprintf(what, sizeof what, "%s[%zd]", arg, i);
        if (!PyObject_TypeCheck(o, &hook_type)) {
            if (check_py_hook(o, what) < 0)
                return -1;
            continue;
        }
        hook_obj *ho = (hook_obj *)o;
        const char *why = !ho->h ? "was handed to a MonitoredSession already"
                          : ho->graph && ho->graph != graph
                              ? "fetches nodes of another graph"
                              : NULL;
        Py_ssize_t dup = 0;
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(all); j++)
            dup += PyList_GET_ITEM(all, j) == o;
        if (!why && dup > 1)
            why = "is given twice";
        if (why) {
            PyErr_Format(PyExc_ValueError, "%s: %R %s", what, o, why);
            return -1;
        }
    }
    return 0;
}

/* The C hooks of list: bridges of the Python hooks now, NULL slots for the
 * Hooks (hooks_take fills them). -1 with the error (bridges destroyed). */
static int hooks_bridge(ms_state *s, PyObject *list, rf_hook ***out, size_t *n)
{
    Py_ssize_t k = PyList_GET_SIZE(list);
    *n = 0;
    if (!(*out = PyMem_RawCalloc((size_t)k + 1, sizeof **out))) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *o = PyList_GET_ITEM(list, i);
        if (PyObject_TypeCheck(o, &hook_type))
            continue;
        if (!((*out)[i] = bridge_new(s, o))) {
            for (Py_ssize_t j = 0; j < i; j++)
                rf_hook_destroy((*out)[j]);
            PyMem_RawFree(*out);
            *out = NULL;
            return -1;
        }
    }
    *n = (size_t)k;
    return 0;
}

/* What the Hooks of list use (hook_obj.keep), appended to keep; -1 with
 * the error. */
static int hooks_keep(PyObject *list, PyObject *keep)
{
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
        PyObject *o = PyList_GET_ITEM(list, i);
        if (PyObject_TypeCheck(o, &hook_type) && ((hook_obj *)o)->keep &&
            PyList_Append(keep, ((hook_obj *)o)->keep) < 0)
            return -1;
    }
    return 0;
}

/* Takes the Hooks' C hooks into their slots (what they use is in the
 * session's keep list already: cannot fail). */
static void hooks_take(PyObject *list, rf_hook **hooks)
{
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
        PyObject *o = PyList_GET_ITEM(list, i);
        if (PyObject_TypeCheck(o, &hook_type)) {
            hooks[i] = ((hook_obj *)o)->h;
            ((hook_obj *)o)->h = NULL;
            Py_CLEAR(((hook_obj *)o)->keep);
        }
    }
}

/* Every hook of both lists into s: checked first, so that nothing is taken
 * from a Hook when an argument is refused. */
static int hooks_get(ms_state *s, PyObject *graph, PyObject *hooks,
                     PyObject *chief)
{
    int r = -1;
    PyObject *a = hooks_list(hooks, "hooks");
    if (!a)
        return -1;
    PyObject *b = hooks_list(chief, "chief_only_hooks");
    if (!b)
        goto out_a;
    PyObject *all = PySequence_Concat(a, b);
    if (!all)
        goto out_b;
    if (hooks_check(a, "hooks", graph, all) < 0 ||
        hooks_check(b, "chief_only_hooks", graph, all) < 0)
        goto out_all;
    if (!(s->keep = PyList_New(0)) || hooks_keep(all, s->keep) < 0)
        goto out_all;
    s->pyhooks =
        PyMem_RawCalloc((size_t)PyList_GET_SIZE(all) + 1, sizeof *s->pyhooks);
    if (!s->pyhooks) {
        PyErr_NoMemory();
        goto out_all;
    }
    if (hooks_bridge(s, a, &s->hooks, &s->nhooks) < 0)
        goto out_all;
    if (hooks_bridge(s, b, &s->chief_hooks, &s->nchief) < 0)
        goto out_bridges;
    hooks_take(a, s->hooks);
    hooks_take(b, s->chief_hooks);
    r = 0;
    goto out_all;
out_bridges:
    for (size_t i = 0; i < s->nhooks; i++)
        rf_hook_destroy(s->hooks[i]);
    s->nhooks = 0;
out_all:
    Py_DECREF(all);
out_b:
    Py_DECREF(b);
out_a:
    Py_DECREF(a);
    return r;
}

/* ---- options ------------------------------------------------------------- */

typedef enum opt_kind {
    OPT_NODE,
    OPT_INT,
    OPT_I64,
    OPT_DOUBLE,
    OPT_BOOL,
    OPT_APPLY,
    OPT_LOOKUP,
    OPT_DIR,
} opt_kind;

typedef struct opt_def {
    const char *name;
    opt_kind kind;
    size_t off; /* in rf_monitored_session_options */
} opt_def;

#define MO(f) offsetof(rf_monitored_session_options, f)
static const opt_def opt_defs[] = {
    {"train_op", OPT_NODE, MO(session.train_op)},
    {"global_step", OPT_NODE, MO(session.global_step)},
    {"apply", OPT_APPLY, MO(session.apply)},
    {"use_locking", OPT_BOOL, MO(session.use_locking)},
    {"sync_replicas", OPT_BOOL, MO(session.sync_replicas)},
    {"replicas_to_aggregate", OPT_INT, MO(session.replicas_to_aggregate)},
    {"total_num_replicas", OPT_INT, MO(session.total_num_replicas)},
    {"init_timeout_ms", OPT_INT, MO(session.init_timeout_ms)},
    {"connect_timeout_ms", OPT_INT, MO(session.connect_timeout_ms)},
    {"op_timeout_ms", OPT_INT, MO(session.op_timeout_ms)},
    {"max_lookup_ids", OPT_I64, MO(session.max_lookup_ids)},
    {"embedding_lookup", OPT_LOOKUP, MO(session.embedding_lookup)},
    {"staleness", OPT_INT, MO(session.staleness)},
    {"staleness_wait_ms", OPT_INT, MO(session.staleness_wait_ms)},
    {"checkpoint_dir", OPT_DIR, MO(checkpoint_dir)},
    {"save_checkpoint_steps", OPT_I64, MO(save_checkpoint_steps)},
    {"save_checkpoint_secs", OPT_DOUBLE, MO(save_checkpoint_secs)},
    {"max_to_keep", OPT_INT, MO(max_to_keep)},
    {"max_failed_saves", OPT_INT, MO(max_failed_saves)},
    {"log_step_count_steps", OPT_I64, MO(log_step_count_steps)},
    {"examples_per_step", OPT_I64, MO(examples_per_step)},
    {"max_wait_secs", OPT_INT, MO(max_wait_secs)},
    {"stop_grace_secs", OPT_INT, MO(stop_grace_secs)},
};
#undef MO

static int opt_node(ms_state *s, PyObject *v, const char *arg, void *field)
{
    rf_node *n = NULL;
    if (v != Py_None && (!(n = pyrf_node_ptr(v, arg)) ||
                         check_node_graph(s->g, n, arg, NULL) < 0))
        return -1;
    *(rf_node **)field = n;
    return 0;
}

static int opt_bool(PyObject *v, const char *arg, void *field)
{
    if (!PyLong_Check(v)) { /* bool is an int */
        PyErr_Format(PyExc_TypeError, "%s: expected a bool, got %.100s", arg,
                     Py_TYPE(v)->tp_name);
        return -1;
    }
    *(bool *)field = PyObject_IsTrue(v);
    return 0;
}

static int opt_apply(PyObject *v, const char *arg, void *field)
{
    const char *a = PyUnicode_Check(v) ? PyUnicode_AsUTF8(v) : NULL;
    if (a && (!strcmp(a, "ps") || !strcmp(a, "worker"))) {
        *(rf_ps_apply_mode *)field =
            !strcmp(a, "ps") ? RF_PS_APPLY_PS : RF_PS_APPLY_WORKER;
        return 0;
    }
    if (!PyErr_Occurred())
        PyErr_Format(PyExc_ValueError, "%s: %R is not \"ps\" or \"worker\"",
                     arg, v);
    return -1;
}

static int opt_lookup(PyObject *v, const char *arg, void *field)
{
    const char *a = PyUnicode_Check(v) ? PyUnicode_AsUTF8(v) : NULL;
    if (a && rf_lookup_way_parse(a, (rf_lookup_way *)field) == RF_OK)
        return 0;
    if (!PyErr_Occurred())
        PyErr_Format(PyExc_ValueError,
                     "%s: %R is not one of \"auto\", \"rows\", \"gather\"", arg,
                     v);
    return -1;
}

static int opt_dir(ms_state *s, PyObject *v, const char *arg)
{
    PyMem_RawFree(s->checkpoint_dir);
    s->checkpoint_dir = NULL;
    if (v == Py_None)
        return 0;
    PyObject *b = NULL;
    if (!PyUnicode_Check(v) || !PyUnicode_FSConverter(v, &b)) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "%s: expected a str, got %.100s", arg,
                         Py_TYPE(v)->tp_name);
        return -1;
    }
    size_t n = (size_t)PyBytes_GET_SIZE(b) + 1;
    s->checkpoint_dir = PyMem_RawMalloc(n);
    if (s->checkpoint_dir)
        memcpy(s->checkpoint_dir, PyBytes_AS_STRING(b), n);
    Py_DECREF(b);
    if (!s->checkpoint_dir) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* One option's value into s->mo (None: the default, but for train_op). */
static int opt_set(ms_state *s, const opt_def *d, PyObject *v)
{
    char arg[64];
    snprintf(arg, sizeof arg, "options['%s']", d->name);
    void *field = (char *)&s->mo + d->off;
    long long x;
    if (d->kind == OPT_NODE)
        return opt_node(s, v, arg, field);
    if (v == Py_None)
        return d->kind == OPT_DIR ? opt_dir(s, v, arg) : 0;
    switch (d->kind) {
    case OPT_INT:
        if (int_arg(v, arg, INT_MIN, INT_MAX, &x) < 0)
            return -1;
        *(int *)field = (int)x;
        return 0;
    case OPT_I64:
        if (int_arg(v, arg, LLONG_MIN, LLONG_MAX, &x) < 0)
            return -1;
        *(int64_t *)field = x;
        return 0;
    case OPT_DOUBLE:
        *(double *)field = PyFloat_AsDouble(v);
        if (*(double *)field == -1.0 && PyErr_Occurred()) {
            PyErr_Format(PyExc_TypeError, "%s: expected a number, got %.100s",
                         arg, Py_TYPE(v)->tp_name);
            return -1;
        }
        return 0;
    case OPT_BOOL:
        return opt_bool(v, arg, field);
    case OPT_APPLY:
        return opt_apply(v, arg, field);
    case OPT_LOOKUP:
        return opt_lookup(v, arg, field);
    case OPT_DIR:
        return opt_dir(s, v, arg);
    case OPT_NODE:
        break;
    }
    return 0;
}

static int options_get(ms_state *s, PyObject *options)
{
    rf_monitored_session_options_init(&s->mo);
    if (!PyDict_Check(options)) {
        PyErr_Format(PyExc_TypeError, "options: expected a dict, got %.100s",
                     Py_TYPE(options)->tp_name);
        return -1;
    }
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(options, &pos, &key, &value)) {
        const char *k = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
        const opt_def *d = NULL;
        for (size_t i = 0; k && i < sizeof opt_defs / sizeof *opt_defs; i++)
            if (!strcmp(k, opt_defs[i].name))
                d = &opt_defs[i];
        if (!d) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError,
                             "options: %R is not a MonitoredSession option",
                             key);
            return -1;
        }
        if (opt_set(s, d, value) < 0)
            return -1;
    }
    if (!s->mo.session.train_op) {
        PyErr_SetString(PyExc_ValueError, "options: 'train_op' is required");
        return -1;
    }
    s->mo.checkpoint_dir = s->checkpoint_dir;
    return 0;
}

/* ---- MonitoredSession --------------------------------------------------- */

typedef struct ms_obj {
    PyObject_HEAD
        /* strong: the session uses their C objects (destroyed before them) */
        PyObject *server,
        *graph, *executor;
    pyrf_runner *runner;
    ms_state *state;
    bool in_call;        /* a thread waits for this object's runner */
    bool server_counted; /* counted in the Server's sessions */
    bool destroyed;
} ms_obj;

static PyTypeObject ms_type;

static rf_status create_fn(void *arg)
{
    ms_state *s = arg;
    return rf_monitored_session_create(s->server, s->g, s->ex, &s->mo, &s->ms);
}

static rf_status run_fn(void *arg)
{
    ms_state *s = arg;
    return rf_monitored_session_run(
        s->ms, s->feeds.nodes, s->feeds.values, (size_t)s->feeds.n, s->fetches,
        (size_t)s->nfetch, s->out, &s->step, &s->job_ended);
}

static rf_status close_fn(void *arg)
{
    return rf_monitored_session_close(((ms_state *)arg)->ms);
}

static rf_status shutdown_fn(void *arg)
{
    return rf_monitored_session_shutdown_cluster(state_session(arg));
}

/* The session now, or RF_ERR_UNAVAILABLE when it was lost. */
static rf_status current_session(ms_state *s, rf_session **out)
{
    *out = rf_monitored_session_session(state_session(s));
    if (!*out)
        return rf_error_set(RF_ERR_UNAVAILABLE,
                            "the session was lost and could not be "
                            "recovered");
    return RF_OK;
}

static rf_status save_fn(void *arg)
{
    ms_state *s = arg;
    rf_session *sess;
    rf_status st = current_session(s, &sess);
    if (st == RF_OK)
        st = rf_session_save(sess, s->save_dir, s->save_keep, s->save_path,
                             sizeof s->save_path);
    return st;
}

static rf_status sync_stats_fn(void *arg)
{
    ms_state *s = arg;
    rf_session *sess;
    rf_status st = current_session(s, &sess);
    if (st == RF_OK)
        st = rf_session_sync_stats_get(sess, &s->sync);
    return st;
}

static rf_status noop_fn(void *arg)
{
    (void)arg;
    return RF_OK;
}

/* Releases a run's arguments (the runner no longer uses them). */
static void run_args_release(ms_state *s)
{
    if (!s->args_held)
        return;
    pyrf_feeds_release(&s->feeds);
    PyMem_Free(s->fetches);
    PyMem_Free(s->out);
    s->fetches = NULL;
    s->out = NULL;
    s->args_held = false;
}

/* What an interrupted call left once it finished: its arguments, and the
 * exception a hook raised meanwhile (reported as unraisable in obj, which
 * may be NULL: nobody waits for it). */
static void state_reset(ms_state *s, PyObject *obj)
{
    run_args_release(s);
    PyMem_RawFree(s->save_dir);
    s->save_dir = NULL;
    if (take_exception(s))
        PyErr_WriteUnraisable(obj);
}

static void state_free(ms_state *s)
{
    if (!s)
        return;
    state_reset(s, NULL); /* (the object is going) */
    if (!s->handed_over) {
        for (size_t i = 0; i < s->nhooks; i++)
            rf_hook_destroy(s->hooks[i]);
        for (size_t i = 0; i < s->nchief; i++)
            rf_hook_destroy(s->chief_hooks[i]);
    }
    PyMem_RawFree(s->hooks);
    PyMem_RawFree(s->chief_hooks);
    PyMem_RawFree(s->pyhooks);
    Py_XDECREF(s->keep);
    PyMem_RawFree(s->checkpoint_dir);
    PyMem_RawFree(s);
}

/* True while a Python hook of the running call runs on this thread: the
 * object's methods then act directly (the runner is this thread). */
static bool in_hook(const ms_obj *self)
{
    const ms_state *s = self->state;
    return s && s->cb_depth > 0 && s->cb_thread == PyThread_get_thread_ident();
}

/* Makes the object ready for a call from this thread: 1 inside a hook of
 * its running call (hook_ok), 0 with the runner idle (an interrupted call
 * waited for, interruptibly, and what it left released), -1 with the
 * error. */
static int ms_enter(ms_obj *self, const char *what, bool hook_ok)
{
    if (self->destroyed || !self->state) {
        PyErr_Format(PyExc_RuntimeError,
                     "MonitoredSession.%s: the session was destroyed", what);
        return -1;
    }
    if (in_hook(self)) {
        if (hook_ok)
            return 1;
        PyErr_Format(PyExc_RuntimeError,
                     "MonitoredSession.%s cannot be called from a hook", what);
        return -1;
    }
    if (self->in_call) {
        PyErr_Format(PyExc_RuntimeError,
                     "MonitoredSession.%s: the session is in use by another "
                     "thread",
                     what);
        return -1;
    }
    if (pyrf_runner_busy(self->runner)) {
        rf_status ignored;
        self->in_call = true;
        int r = pyrf_runner_call(self->runner, noop_fn, NULL, &ignored);
        self->in_call = false;
        if (r < 0)
            return -1;
    }
    state_reset(self->state, (PyObject *)self);
    return 0;
}

/* fn(state) in the runner (interruptibly), or here with the GIL released
 * when called from a hook (direct). 0 with *st, -1 when interrupted. */
static int ms_call(ms_obj *self, pyrf_blocking_fn fn, bool direct,
                   rf_status *st)
{
    if (direct) {
        Py_BEGIN_ALLOW_THREADS;
        *st = fn(self->state);
        Py_END_ALLOW_THREADS;
        return 0;
    }
    self->in_call = true;
    int r = pyrf_runner_call(self->runner, fn, self->state, st);
    self->in_call = false;
    return r;
}

/* After a finished call: -1 with a hook's exception (it wins over the
 * status) or the status's error, else 0. */
static int ms_result(ms_obj *self, rf_status st, bool direct)
{
    if (!direct && take_exception(self->state))
        return -1;
    if (st == RF_OK)
        return 0;
    pyrf_raise(st, direct ? NULL : pyrf_runner_message(self->runner));
    return -1;
}

/* The C session for a method (see state_session); NULL with RuntimeError. */
static rf_monitored_session *ms_session(ms_obj *self, const char *what)
{
    rf_monitored_session *ms = NULL;
    if (!self->destroyed && self->state)
        ms = state_session(self->state);
    if (!ms)
        PyErr_Format(PyExc_RuntimeError, "MonitoredSession.%s: %s", what,
                     self->destroyed ? "the session was destroyed"
                                     : "no session");
    return ms;
}

/* Destroys the C session (idle runner) or the hooks never handed over. */
static void ms_destroy_now(ms_obj *self)
{
    ms_state *s = self->state;
    if (s && s->ms) {
        rf_monitored_session *ms = s->ms;
        s->ms = NULL;
        Py_BEGIN_ALLOW_THREADS;
        rf_monitored_session_destroy(ms); /* its hooks too */
        Py_END_ALLOW_THREADS;
    }
    state_free(s);
    self->state = NULL;
    if (self->server_counted) {
        pyrf_server_sessions(self->server, -1);
        self->server_counted = false;
    }
    self->destroyed = true;
}

static int ms_traverse(ms_obj *self, visitproc visit, void *arg)
{
    Py_VISIT(self->server);
    Py_VISIT(self->graph);
    Py_VISIT(self->executor);
    const ms_state *s = self->state;
    for (size_t i = 0; s && i < s->npyhooks; i++)
        if (s->pyhooks[i])
            Py_VISIT(s->pyhooks[i]->hook);
    if (s)
        Py_VISIT(s->keep);
    return 0;
}

/* True (the object left as it is, to be leaked) while the runner is busy. */
static bool ms_busy(ms_obj *self)
{
    return self->runner && pyrf_runner_busy(self->runner);
}

static int ms_clear(ms_obj *self)
{
    if (ms_busy(self)) /* an interrupted call still uses all of it */
        return 0;
    ms_destroy_now(self);
    pyrf_runner_free(self->runner);
    self->runner = NULL;
    Py_CLEAR(self->graph);
    Py_CLEAR(self->executor);
    Py_CLEAR(self->server);
    return 0;
}

static void ms_dealloc(ms_obj *self)
{
    PyObject_GC_UnTrack(self);
    if (ms_busy(self)) {
        /* leak the session, its state and the objects it uses: the call
         * goes on; its hooks see the object gone */
        self->state->owner = NULL;
        pyrf_runner_free(self->runner);
    } else {
        ms_clear(self);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The object with its arguments checked and its state made (the hooks
 * taken over); NULL with the error. */
static ms_obj *ms_alloc(PyTypeObject *type, PyObject *server, PyObject *graph,
                        PyObject *executor)
{
    rf_server *srv = pyrf_server_ptr(server, "server");
    rf_graph *g = srv ? pyrf_graph_ptr(graph, "graph") : NULL;
    rf_executor *ex = g ? pyrf_executor_ptr(executor, "executor") : NULL;
    if (!ex)
        return NULL;
    ms_obj *self = (ms_obj *)type->tp_alloc(type, 0);
    if (!self)
        return NULL;
    self->server = Py_NewRef(server);
    self->graph = Py_NewRef(graph);
    self->executor = Py_NewRef(executor);
    if (!(self->state = PyMem_RawCalloc(1, sizeof *self->state))) {
        Py_DECREF(self);
        PyErr_NoMemory();
        return NULL;
    }
    self->state->owner = (PyObject *)self;
    self->state->server = srv;
    self->state->g = g;
    self->state->ex = ex;
    return self;
}

/* Creates the C session in the runner (the hooks handed over). */
static int ms_create(ms_obj *self)
{
    ms_state *s = self->state;
    s->mo.hooks = s->hooks;
    s->mo.num_hooks = s->nhooks;
    s->mo.chief_only_hooks = s->chief_hooks;
    s->mo.num_chief_only_hooks = s->nchief;
    s->handed_over = true;
    pyrf_server_sessions(self->server, +1);
    self->server_counted = true;
    rf_status st;
    if (ms_call(self, create_fn, false, &st) < 0)
        return -1;
    if (ms_result(self, st, false) < 0)
        return -1;
    return 0;
}

static PyObject *ms_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"server",  "graph", "executor",
                             "options", "hooks", "chief_only_hooks",
                             NULL};
    PyObject *server, *graph, *executor, *options, *hooks = Py_None,
                                                   *chief = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOO|OO:MonitoredSession",
                                     kwlist, &server, &graph, &executor,
                                     &options, &hooks, &chief))
        return NULL;
    ms_obj *self = ms_alloc(type, server, graph, executor);
    if (!self)
        return NULL;
    if (options_get(self->state, options) < 0 ||
        hooks_get(self->state, graph, hooks, chief) < 0 ||
        !(self->runner = pyrf_runner_new()) || ms_create(self) < 0) {
        Py_DECREF(self); /* leaks what an interrupted creation still uses */
        return NULL;
    }
    return (PyObject *)self;
}

/* Takes run's arguments into the state; -1 with the error. */
static int run_args_get(ms_state *s, PyObject *feed_nodes,
                        PyObject *feed_values, PyObject *fetch_nodes)
{
    if (pyrf_feeds_get(feed_nodes, feed_values, &s->feeds) < 0)
        return -1;
    s->args_held = true;
    if (pyrf_nodes_from_seq(fetch_nodes, "fetch_nodes", &s->fetches,
                            &s->nfetch) < 0)
        goto fail;
    if (check_graph(s->g, s->feeds.nodes, s->feeds.n, "feed_nodes", NULL) < 0 ||
        check_graph(s->g, s->fetches, s->nfetch, "fetch_nodes", NULL) < 0)
        goto fail;
    s->out = PyMem_Calloc((size_t)s->nfetch + 1, sizeof *s->out);
    if (!s->out) {
        PyErr_NoMemory();
        goto fail;
    }
    return 0;
fail:
    run_args_release(s);
    return -1;
}

static PyObject *ms_run(ms_obj *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"feed_nodes", "feed_values", "fetch_nodes", NULL};
    PyObject *fn, *fv, *xn;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO:run", kwlist, &fn, &fv,
                                     &xn))
        return NULL;
    if (ms_enter(self, "run", false) < 0 || !ms_session(self, "run"))
        return NULL;
    ms_state *s = self->state;
    if (run_args_get(s, fn, fv, xn) < 0)
        return NULL;
    rf_status st;
    if (ms_call(self, run_fn, false, &st) < 0)
        return NULL; /* the arguments stay: the run goes on */
    PyObject *result = NULL;
    if (ms_result(self, st, false) == 0) {
        /* the job ended while the session recovered: nothing ran, None */
        PyObject *views = s->job_ended
                              ? (Py_INCREF(Py_None), Py_None)
                              : pyrf_tensor_views(s->out, (size_t)s->nfetch);
        if (views)
            result = Py_BuildValue("(NL)", views, (long long)s->step);
    }
    run_args_release(s);
    return result;
}

static PyObject *ms_close(ms_obj *self, PyObject *noargs)
{
    (void)noargs;
    if (ms_enter(self, "close", false) < 0 || !ms_session(self, "close"))
        return NULL;
    rf_status st;
    if (ms_call(self, close_fn, false, &st) < 0 ||
        ms_result(self, st, false) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *ms_shutdown_cluster(ms_obj *self, PyObject *noargs)
{
    (void)noargs;
    int direct = ms_enter(self, "shutdown_cluster", true);
    if (direct < 0 || !ms_session(self, "shutdown_cluster"))
        return NULL;
    rf_status st;
    if (ms_call(self, shutdown_fn, direct, &st) < 0 ||
        ms_result(self, st, direct) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *ms_save(ms_obj *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"dir", "max_to_keep", NULL};
    PyObject *dir, *b = NULL;
    int keep = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|i:save", kwlist, &dir, &keep))
        return NULL;
    if (keep < 0) {
        PyErr_Format(PyExc_ValueError, "max_to_keep: %d is negative", keep);
        return NULL;
    }
    if (!PyUnicode_Check(dir) || !PyUnicode_FSConverter(dir, &b)) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "dir: expected a str, got %.100s",
                         Py_TYPE(dir)->tp_name);
        return NULL;
    }
    int direct = ms_enter(self, "save", true);
    if (direct < 0 || !ms_session(self, "save")) {
        Py_DECREF(b);
        return NULL;
    }
    /* (in a hook the running call is not a save: save_dir is free) */
    ms_state *s = self->state;
    size_t len = (size_t)PyBytes_GET_SIZE(b) + 1;
    if ((s->save_dir = PyMem_RawMalloc(len)))
        memcpy(s->save_dir, PyBytes_AS_STRING(b), len);
    Py_DECREF(b);
    if (!s->save_dir)
        return PyErr_NoMemory();
    s->save_keep = keep;
    s->save_path[0] = '\0';
    rf_status st;
    if (ms_call(self, save_fn, direct, &st) < 0)
        return NULL; /* the save goes on with its directory */
    PyMem_RawFree(s->save_dir);
    s->save_dir = NULL;
    if (ms_result(self, st, direct) < 0)
        return NULL;
    return PyUnicode_DecodeFSDefault(s->save_path);
}

static PyObject *sync_stats_dict(const rf_session_sync_stats *x)
{
    return Py_BuildValue(
        "{s:i,s:i,s:L,s:K,s:K,s:K,s:K}", "replicas_to_aggregate",
        x->replicas_to_aggregate, "total_num_replicas", x->total_num_replicas,
        "local_step", (long long)x->local_step, "accepted",
        (unsigned long long)x->accepted, "stale", (unsigned long long)x->stale,
        "published", (unsigned long long)x->published, "stale_on_ps",
        (unsigned long long)x->stale_on_ps);
}

static PyObject *ms_sync_stats(ms_obj *self, PyObject *noargs)
{
    (void)noargs;
    int direct = ms_enter(self, "sync_stats", true);
    if (direct < 0 || !ms_session(self, "sync_stats"))
        return NULL;
    rf_status st;
    if (ms_call(self, sync_stats_fn, direct, &st) < 0 ||
        ms_result(self, st, direct) < 0)
        return NULL;
    return sync_stats_dict(&self->state->sync);
}

static PyObject *ms_counters(ms_obj *self, PyObject *noargs)
{
    (void)noargs;
    if (ms_enter(self, "counters", true) < 0 || !ms_session(self, "counters"))
        return NULL;
    rf_session *sess;
    rf_status st = current_session(self->state, &sess);
    if (st != RF_OK)
        return pyrf_raise(st, NULL);
    rf_session_counters c;
    rf_session_counters_get(sess, &c);
    return Py_BuildValue(
        "{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,"
        "s:L}",
        "runs", (unsigned long long)c.runs, "train_runs",
        (unsigned long long)c.train_runs, "bytes_read",
        (unsigned long long)c.bytes_read, "bytes_pushed",
        (unsigned long long)c.bytes_pushed, "table_rows_read",
        (unsigned long long)c.table_rows_read, "table_bytes_read",
        (unsigned long long)c.table_bytes_read, "table_rows_pushed",
        (unsigned long long)c.table_rows_pushed, "table_bytes_pushed",
        (unsigned long long)c.table_bytes_pushed, "table_rows_torn",
        (unsigned long long)c.table_rows_torn, "table_rows_busy",
        (unsigned long long)c.table_rows_busy, "table_row_conflicts",
        (unsigned long long)c.table_row_conflicts, "table_rows_gathered",
        (unsigned long long)c.table_rows_gathered, "table_lookups_read",
        (unsigned long long)c.table_lookups_read, "table_lookups_gathered",
        (unsigned long long)c.table_lookups_gathered, "ssp_waits",
        (unsigned long long)c.ssp_waits, "ssp_wait_ns",
        (unsigned long long)c.ssp_wait_ns, "ssp_lead", (long long)c.ssp_lead);
}

static PyObject *ms_get_restored_from(ms_obj *self, void *closure)
{
    (void)closure;
    if (ms_enter(self, "restored_from", true) < 0 ||
        !ms_session(self, "restored_from"))
        return NULL;
    rf_session *sess;
    rf_status st = current_session(self->state, &sess);
    if (st != RF_OK)
        return pyrf_raise(st, NULL);
    const char *note = NULL;
    const char *path = rf_session_restored_from(sess, &note);
    PyObject *p = path ? PyUnicode_DecodeFSDefault(path) : Py_NewRef(Py_None);
    if (!p)
        return NULL;
    return Py_BuildValue("(Ns)", p, note ? note : "");
}

static PyObject *ms_should_stop(ms_obj *self, PyObject *noargs)
{
    (void)noargs;
    if (self->destroyed)
        Py_RETURN_TRUE;
    rf_monitored_session *ms = ms_session(self, "should_stop");
    return ms ? PyBool_FromLong(rf_monitored_session_should_stop(ms)) : NULL;
}

static PyObject *ms_request_stop(ms_obj *self, PyObject *noargs)
{
    (void)noargs;
    rf_monitored_session *ms = ms_session(self, "request_stop");
    if (!ms)
        return NULL;
    rf_monitored_session_request_stop(ms);
    Py_RETURN_NONE;
}

static PyObject *ms_destroy(ms_obj *self, PyObject *noargs)
{
    (void)noargs;
    if (self->destroyed)
        Py_RETURN_NONE;
    if (ms_enter(self, "destroy", false) < 0)
        return NULL;
    ms_destroy_now(self);
    Py_RETURN_NONE;
}

static PyObject *ms_get_global_step(ms_obj *self, void *closure)
{
    (void)closure;
    rf_monitored_session *ms = ms_session(self, "global_step");
    return ms ? PyLong_FromLongLong(rf_monitored_session_global_step(ms))
              : NULL;
}

static PyObject *ms_get_is_chief(ms_obj *self, void *closure)
{
    (void)closure;
    rf_monitored_session *ms = ms_session(self, "is_chief");
    return ms ? PyBool_FromLong(rf_monitored_session_is_chief(ms)) : NULL;
}

static PyObject *ms_get_recoveries(ms_obj *self, void *closure)
{
    (void)closure;
    rf_monitored_session *ms = ms_session(self, "recoveries");
    return ms ? PyLong_FromLong(rf_monitored_session_recoveries(ms)) : NULL;
}

static PyObject *ms_get_obj(ms_obj *self, void *closure)
{
    PyObject *o = *(PyObject **)((char *)self + (size_t)closure);
    if (!o)
        Py_RETURN_NONE;
    return Py_NewRef(o);
}

static PyMethodDef ms_methods[] = {
    {"run", (PyCFunction)(void (*)(void))ms_run, METH_VARARGS | METH_KEYWORDS,
     "run(feed_nodes, feed_values, fetch_nodes) -> ([memoryview | None], "
     "global_step): one step with the hooks around it (interruptible; the "
     "views are valid until the next run)"},
    {"should_stop", (PyCFunction)ms_should_stop, METH_NOARGS,
     "should_stop() -> bool"},
    {"request_stop", (PyCFunction)ms_request_stop, METH_NOARGS,
     "request_stop(): the next run is refused; should_stop() is True"},
    {"close", (PyCFunction)ms_close, METH_NOARGS,
     "close(): the end of this task's job (the chief waits for the others "
     "and pulls every variable into the graph); the hooks' end"},
    {"shutdown_cluster", (PyCFunction)ms_shutdown_cluster, METH_NOARGS,
     "shutdown_cluster(): the chief stops every ps task"},
    {"save", (PyCFunction)(void (*)(void))ms_save, METH_VARARGS | METH_KEYWORDS,
     "save(dir, max_to_keep=0) -> str: the chief saves a checkpoint of the "
     "job now; the path written"},
    {"counters", (PyCFunction)ms_counters, METH_NOARGS,
     "counters() -> dict: what the current session's runs moved"},
    {"sync_stats", (PyCFunction)ms_sync_stats, METH_NOARGS,
     "sync_stats() -> dict: sync replicas' accepted and stale gradients"},
    {"destroy", (PyCFunction)ms_destroy, METH_NOARGS,
     "destroy(): frees the session and its hooks (the graph keeps the "
     "variables' last values)"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef ms_getset[] = {
    {"global_step", (getter)ms_get_global_step, NULL,
     "the last global_step seen", NULL},
    {"is_chief", (getter)ms_get_is_chief, NULL, "whether this is the chief",
     NULL},
    {"recoveries", (getter)ms_get_recoveries, NULL, "recoveries so far", NULL},
    {"restored_from", (getter)ms_get_restored_from, NULL,
     "(path | None, note): the checkpoint the chief restored", NULL},
    {"server", (getter)ms_get_obj, NULL, "the Server",
     (void *)offsetof(ms_obj, server)},
    {"graph", (getter)ms_get_obj, NULL, "the Graph",
     (void *)offsetof(ms_obj, graph)},
    {"executor", (getter)ms_get_obj, NULL, "the Executor",
     (void *)offsetof(ms_obj, executor)},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ms_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name =
        "rdmaflow._rdmaflow.MonitoredSession",
    .tp_basicsize = sizeof(ms_obj),
    .tp_dealloc = (destructor)ms_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "MonitoredSession(server, graph, executor, options, hooks, "
              "chief_only_hooks): tf.train.MonitoredTrainingSession's "
              "session (rf_monitored_session; created in its runner, "
              "interruptible)",
    .tp_traverse = (traverseproc)ms_traverse,
    .tp_clear = (inquiry)ms_clear,
    .tp_methods = ms_methods,
    .tp_getset = ms_getset,
    .tp_new = ms_new,
};

/* ---- module -------------------------------------------------------------- */

#define KW(f) (PyCFunction)(void (*)(void))(f), METH_VARARGS | METH_KEYWORDS

PyMethodDef pyrf_monitored_functions[] = {
    {"stop_at_step_hook", KW(stop_at_step_hook),
     "stop_at_step_hook(num_steps, last_step) -> Hook: StopAtStepHook "
     "(exactly one > 0)"},
    {"nan_tensor_hook", KW(nan_tensor_hook),
     "nan_tensor_hook(loss) -> Hook: NanTensorHook (fail_on_nan_loss)"},
    {"logging_hook", KW(logging_hook),
     "logging_hook(nodes, every_n_iter) -> Hook: LoggingTensorHook"},
    {"step_counter_hook", KW(step_counter_hook),
     "step_counter_hook(every_n_steps, examples_per_step, writer=None) -> "
     "Hook: StepCounterHook (global_step/sec also into writer, a "
     "SummaryWriter)"},
    {"summary_saver_hook", KW(summary_saver_hook),
     "summary_saver_hook(writer, save_steps, save_secs, nodes, tags) -> "
     "Hook: SummarySaverHook (scalar nodes into writer, a SummaryWriter)"},
    {"checkpoint_saver_hook", KW(checkpoint_saver_hook),
     "checkpoint_saver_hook(dir, save_secs, save_steps, max_to_keep, "
     "max_failed_saves=3) -> Hook: CheckpointSaverHook (the chief stops "
     "once max_failed_saves saves in a row failed; 0: never)"},
    {NULL, NULL, 0, NULL},
};

#undef KW

int pyrf_monitored_init(PyObject *module)
{
    if (PyType_Ready(&hook_type) < 0 || PyType_Ready(&ms_type) < 0)
        return -1;
    if (PyModule_AddObjectRef(module, "Hook", (PyObject *)&hook_type) < 0)
        return -1;
    return PyModule_AddObjectRef(module, "MonitoredSession",
                                 (PyObject *)&ms_type);
}
