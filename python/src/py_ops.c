/* python/src/py_ops.c: the graph builders of rdmaflow._rdmaflow (README.md,
 * "py_graph.c: Graph, Node, builders"): op builders, layers, variables and
 * their values, gradients and optimizers, as module functions taking the
 * Graph first and name=None last; and the module's graph function table
 * pyrf_graph_functions (replica_device_setter's implementation is in
 * py_graph.c with the types). Every builder checks its arguments (TypeError
 * / ValueError naming the argument), calls the C builder and ends with
 * pyrf_graph_result (the new Node, or the builder's error). */
#include "py_graph_internal.h"

#include <limits.h>
#include <stddef.h>
#include <string.h>

#define UNUSED_SELF (void)self

/* ---- argument helpers ------------------------------------------------- */

static int padding_arg(PyObject *o, rf_padding *out)
{
    const char *s = PyUnicode_Check(o) ? PyUnicode_AsUTF8(o) : NULL;
    if (s && !strcmp(s, "SAME"))
        *out = RF_PADDING_SAME;
    else if (s && !strcmp(s, "VALID"))
        *out = RF_PADDING_VALID;
    else {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError,
                         "padding: %R is not 'SAME' or 'VALID'", o);
        return -1;
    }
    return 0;
}

static int activation_arg(PyObject *o, rf_activation *out)
{
    static const struct {
        const char *name;
        rf_activation act;
    } acts[] = {{"relu", RF_ACT_RELU},
                {"sigmoid", RF_ACT_SIGMOID},
                {"tanh", RF_ACT_TANH},
                {"softmax", RF_ACT_SOFTMAX}};
    if (o == Py_None) {
        *out = RF_ACT_NONE;
        return 0;
    }
    const char *s = PyUnicode_Check(o) ? PyUnicode_AsUTF8(o) : NULL;
    for (size_t i = 0; s && i < sizeof acts / sizeof acts[0]; i++)
        if (!strcmp(s, acts[i].name)) {
            *out = acts[i].act;
            return 0;
        }
    if (!PyErr_Occurred())
        PyErr_Format(PyExc_ValueError,
                     "activation: %R is not None, 'relu', 'sigmoid', 'tanh' "
                     "or 'softmax'",
                     o);
    return -1;
}

/* Reduction axes: None (every axis), an int, or a non-empty sequence of
 * ints. */
static int axes_arg(PyObject *o, int *axes, int *n)
{
    *n = 0;
    if (o == Py_None)
        return 0;
    if (PyIndex_Check(o)) {
        Py_ssize_t v = PyNumber_AsSsize_t(o, PyExc_OverflowError);
        if (v == -1 && PyErr_Occurred())
            return -1;
        if (v < -RF_MAX_RANK || v >= RF_MAX_RANK) {
            PyErr_Format(PyExc_ValueError, "axes: %zd is out of range", v);
            return -1;
        }
        axes[0] = (int)v;
        *n = 1;
        return 0;
    }
    PyObject *fast = PySequence_Fast(o, "");
    if (!fast) {
        PyErr_Format(PyExc_TypeError,
                     "axes: expected None, an int or a sequence of ints, not "
                     "%.100s",
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    Py_ssize_t k = PySequence_Fast_GET_SIZE(fast);
    if (k == 0 || k > RF_MAX_RANK) {
        Py_DECREF(fast);
        PyErr_Format(PyExc_ValueError,
                     "axes: %zd axes (1..%d, or None for every axis; an "
                     "empty list is not supported)",
                     k, RF_MAX_RANK);
        return -1;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *a = PySequence_Fast_GET_ITEM(fast, i);
        Py_ssize_t v = PyIndex_Check(a)
                           ? PyNumber_AsSsize_t(a, PyExc_OverflowError)
                           : PY_SSIZE_T_MAX;
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return -1;
        }
        if (v < -RF_MAX_RANK || v >= RF_MAX_RANK) {
            PyErr_Format(PyIndex_Check(a) ? PyExc_ValueError : PyExc_TypeError,
                         "axes[%zd]: %R is not an axis", i, a);
            Py_DECREF(fast);
            return -1;
        }
        axes[i] = (int)v;
    }
    *n = (int)k;
    Py_DECREF(fast);
    return 0;
}

/* A C-contiguous buffer of data; -1 with TypeError / ValueError naming arg. */
static int get_buffer(PyObject *data, const char *arg, int flags, Py_buffer *b)
{
    if (!PyObject_CheckBuffer(data)) {
        PyErr_Format(PyExc_TypeError,
                     "%s: expected a buffer (an array, bytes), not %.100s",
                     arg, Py_TYPE(data)->tp_name);
        return -1;
    }
    if (PyObject_GetBuffer(data, b, flags | PyBUF_C_CONTIGUOUS) < 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError,
                     "%s: the buffer is not C-contiguous "
                     "(np.ascontiguousarray makes a copy that is)",
                     arg);
        return -1;
    }
    return 0;
}

static void shape_str(const rf_shape *s, char *buf, size_t len)
{
    rf_shape_format(s, buf, len);
}

/* An initializer tuple: (kind, params..., [seed]). */
static int init_arg(PyObject *o, rf_initializer *out)
{
    static const struct {
        const char *name;
        rf_init_kind kind;
        int nparams;
    } kinds[] = {{"zeros", RF_INIT_ZEROS, 0},
                 {"constant", RF_INIT_CONSTANT, 1},
                 {"random_uniform", RF_INIT_RANDOM_UNIFORM, 2},
                 {"truncated_normal", RF_INIT_TRUNCATED_NORMAL, 2},
                 {"glorot_uniform", RF_INIT_GLOROT_UNIFORM, 0}};
    if (!PyTuple_Check(o) || PyTuple_GET_SIZE(o) < 1 ||
        !PyUnicode_Check(PyTuple_GET_ITEM(o, 0))) {
        PyErr_Format(PyExc_TypeError,
                     "init: expected a tuple ('zeros',), ('constant', v), "
                     "('random_uniform', lo, hi), ('truncated_normal', mean, "
                     "stddev) or ('glorot_uniform',), not %.100s",
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    const char *k = PyUnicode_AsUTF8(PyTuple_GET_ITEM(o, 0));
    if (!k)
        return -1;
    size_t i = 0;
    while (i < sizeof kinds / sizeof kinds[0] && strcmp(k, kinds[i].name))
        i++;
    if (i == sizeof kinds / sizeof kinds[0]) {
        PyErr_Format(PyExc_ValueError,
                     "init: %R is not 'zeros', 'constant', 'random_uniform', "
                     "'truncated_normal' or 'glorot_uniform'",
                     PyTuple_GET_ITEM(o, 0));
        return -1;
    }
    Py_ssize_t np = kinds[i].nparams, size = PyTuple_GET_SIZE(o);
    if (size != 1 + np && size != 2 + np) {
        PyErr_Format(PyExc_ValueError,
                     "init: '%s' takes %zd parameters and an optional seed, "
                     "%zd given",
                     k, np, size - 1);
        return -1;
    }
    memset(out, 0, sizeof *out);
    out->kind = kinds[i].kind;
    double p[2] = {0, 0};
    for (Py_ssize_t j = 0; j < np; j++) {
        p[j] = PyFloat_AsDouble(PyTuple_GET_ITEM(o, 1 + j));
        if (p[j] == -1.0 && PyErr_Occurred()) {
            PyErr_Format(PyExc_TypeError, "init: parameter %zd of '%s' is "
                                          "not a number",
                         j + 1, k);
            return -1;
        }
    }
    out->a = p[0];
    out->b = p[1];
    if (size == 2 + np) {
        PyObject *s = PyTuple_GET_ITEM(o, 1 + np);
        PyObject *si = PyIndex_Check(s) ? PyNumber_Index(s) : NULL;
        unsigned long long seed = si ? PyLong_AsUnsignedLongLong(si) : 0;
        Py_XDECREF(si);
        if (!si || (seed == (unsigned long long)-1 && PyErr_Occurred())) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError,
                         "init: the seed %R is not an int in [0, 2**64)", s);
            return -1;
        }
        out->seed = (uint64_t)seed;
    }
    return 0;
}

/* ---- optimizer configs -------------------------------------------------- */

static const struct {
    const char *name;
    size_t off;
    bool is_bool;
} optim_fields[] = {
    {"learning_rate", offsetof(rf_optim_config, learning_rate), false},
    {"momentum", offsetof(rf_optim_config, momentum), false},
    {"use_nesterov", offsetof(rf_optim_config, use_nesterov), true},
    {"initial_accumulator_value",
     offsetof(rf_optim_config, initial_accumulator_value), false},
    {"beta1", offsetof(rf_optim_config, beta1), false},
    {"beta2", offsetof(rf_optim_config, beta2), false},
    {"epsilon", offsetof(rf_optim_config, epsilon), false},
    {"decay", offsetof(rf_optim_config, decay), false},
    {"centered", offsetof(rf_optim_config, centered), true},
    {"learning_rate_power", offsetof(rf_optim_config, learning_rate_power),
     false},
    {"l1_regularization_strength",
     offsetof(rf_optim_config, l1_regularization_strength), false},
    {"l2_regularization_strength",
     offsetof(rf_optim_config, l2_regularization_strength), false},
    {"l2_shrinkage_regularization_strength",
     offsetof(rf_optim_config, l2_shrinkage_regularization_strength), false},
};
#define NUM_OPTIM_FIELDS (sizeof optim_fields / sizeof optim_fields[0])

/* A config dict: its kind's defaults, then its keys; validated (an invalid
 * value is InvalidArgument through the factory). */
static int config_arg(PyObject *d, rf_optim_config *cfg)
{
    if (!PyDict_Check(d)) {
        PyErr_Format(PyExc_TypeError, "config: expected a dict, not %.100s",
                     Py_TYPE(d)->tp_name);
        return -1;
    }
    PyObject *kind = PyDict_GetItemString(d, "kind");
    if (!kind || !PyUnicode_Check(kind)) {
        PyErr_SetString(PyExc_ValueError,
                        "config: 'kind' (a str: sgd, momentum, adagrad, adam, "
                        "rmsprop, ftrl) is required");
        return -1;
    }
    const char *ks = PyUnicode_AsUTF8(kind);
    if (!ks)
        return -1;
    if (rf_optim_parse(ks, cfg) != RF_OK) {
        PyErr_Format(PyExc_ValueError, "config: %s", rf_error_message());
        return -1;
    }
    PyObject *key, *val;
    Py_ssize_t pos = 0;
    while (PyDict_Next(d, &pos, &key, &val)) {
        const char *k = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
        if (!k) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_TypeError,
                             "config: keys are str, not %.100s",
                             Py_TYPE(key)->tp_name);
            return -1;
        }
        if (!strcmp(k, "kind"))
            continue;
        size_t i = 0;
        while (i < NUM_OPTIM_FIELDS && strcmp(k, optim_fields[i].name))
            i++;
        if (i == NUM_OPTIM_FIELDS) {
            PyErr_Format(PyExc_ValueError,
                         "config: unknown key %R (not a field of "
                         "rf_optim_config)",
                         key);
            return -1;
        }
        char *field = (char *)cfg + optim_fields[i].off;
        if (optim_fields[i].is_bool) {
            int t = PyObject_IsTrue(val);
            if (t < 0)
                return -1;
            *(bool *)field = t;
        } else {
            double v = PyFloat_AsDouble(val);
            if (v == -1.0 && PyErr_Occurred()) {
                PyErr_Clear();
                PyErr_Format(PyExc_TypeError,
                             "config: %s is %.100s, not a number", k,
                             Py_TYPE(val)->tp_name);
                return -1;
            }
            *(float *)field = (float)v;
        }
    }
    rf_status st = rf_optim_validate(cfg);
    if (st != RF_OK) {
        pyrf_raise(st, NULL);
        return -1;
    }
    return 0;
}

static PyObject *config_dict(const rf_optim_config *cfg)
{
    PyObject *d = PyDict_New();
    if (!d)
        return NULL;
    PyObject *v = PyUnicode_FromString(rf_optim_kind_name(cfg->kind));
    if (!v || PyDict_SetItemString(d, "kind", v) < 0)
        goto fail;
    Py_DECREF(v);
    for (size_t i = 0; i < NUM_OPTIM_FIELDS; i++) {
        const char *field = (const char *)cfg + optim_fields[i].off;
        v = optim_fields[i].is_bool ? PyBool_FromLong(*(const bool *)field)
                                    : PyFloat_FromDouble(*(const float *)field);
        if (!v || PyDict_SetItemString(d, optim_fields[i].name, v) < 0)
            goto fail;
        Py_DECREF(v);
    }
    return d;
fail:
    Py_XDECREF(v);
    Py_DECREF(d);
    return NULL;
}

/* ---- generic builders --------------------------------------------------- */

typedef rf_node *(*unary_fn)(rf_graph *, rf_node *, const char *);
typedef rf_node *(*binary_fn)(rf_graph *, rf_node *, rf_node *, const char *);

static PyObject *unary(PyObject *args, PyObject *kw, unary_fn fn,
                       const char *fname, const char *xname)
{
    char *kwlist[] = {"g", (char *)xname, "name", NULL};
    char fmt[64];
    snprintf(fmt, sizeof fmt, "OO|O:%s", fname);
    PyObject *g_o, *x_o, *name_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &g_o, &x_o,
                                     &name_o))
        return NULL;
    pyrf_graph_obj *go = pyrf_graph_builder_arg(g_o, "g");
    rf_node *x;
    const char *name;
    if (!go || !(x = pyrf_graph_node_arg(go, x_o, xname)) ||
        pyrf_str_or_none(name_o, "name", &name) < 0)
        return NULL;
    return pyrf_graph_result(go, fn(go->g, x, name));
}

static PyObject *binary(PyObject *args, PyObject *kw, binary_fn fn,
                        const char *fname, const char *an, const char *bn)
{
    char *kwlist[] = {"g", (char *)an, (char *)bn, "name", NULL};
    char fmt[80];
    snprintf(fmt, sizeof fmt, "OOO|O:%s", fname);
    PyObject *g_o, *a_o, *b_o, *name_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &g_o, &a_o, &b_o,
                                     &name_o))
        return NULL;
    pyrf_graph_obj *go = pyrf_graph_builder_arg(g_o, "g");
    rf_node *a, *b;
    const char *name;
    if (!go || !(a = pyrf_graph_node_arg(go, a_o, an)) ||
        !(b = pyrf_graph_node_arg(go, b_o, bn)) ||
        pyrf_str_or_none(name_o, "name", &name) < 0)
        return NULL;
    return pyrf_graph_result(go, fn(go->g, a, b, name));
}

#define UNARY(py, cfn, xname)                                                  \
    static PyObject *b_##py(PyObject *self, PyObject *args, PyObject *kw)      \
    {                                                                          \
        UNUSED_SELF;                                                           \
        return unary(args, kw, cfn, #py, xname);                               \
    }
#define BINARY(py, cfn, an, bn)                                                \
    static PyObject *b_##py(PyObject *self, PyObject *args, PyObject *kw)      \
    {                                                                          \
        UNUSED_SELF;                                                           \
        return binary(args, kw, cfn, #py, an, bn);                             \
    }

UNARY(identity, rf_identity, "x")
UNARY(neg, rf_neg, "x")
UNARY(relu, rf_relu, "x")
UNARY(sigmoid, rf_sigmoid, "x")
UNARY(tanh, rf_tanh, "x")
UNARY(softmax, rf_softmax, "x")
UNARY(ones_like, rf_ones_like, "x")
UNARY(zeros_like, rf_zeros_like, "x")
UNARY(flatten, rf_flatten, "x")
UNARY(indexed_slices_to_dense, rf_indexed_slices_to_dense, "slices")

BINARY(add, rf_add, "a", "b")
BINARY(sub, rf_sub, "a", "b")
BINARY(mul, rf_mul, "a", "b")
BINARY(equal, rf_equal, "a", "b")
BINARY(bias_add, rf_bias_add, "x", "bias")
BINARY(assign, rf_assign, "var", "value")
BINARY(assign_add, rf_assign_add, "var", "value")
BINARY(sparse_softmax_cross_entropy_with_logits,
       rf_sparse_softmax_cross_entropy_with_logits, "labels", "logits")
BINARY(sigmoid_cross_entropy_with_logits,
       rf_sigmoid_cross_entropy_with_logits, "labels", "logits")
BINARY(gather, rf_gather, "params", "indices")
BINARY(accuracy, rf_accuracy, "logits", "labels")

/* ---- the other builders ------------------------------------------------- */

#define BUILDER(py)                                                            \
    static PyObject *b_##py(PyObject *self, PyObject *args, PyObject *kw)

BUILDER(placeholder)
{
    UNUSED_SELF;
    static char *kwlist[] = {"g", "dtype", "shape", "name", NULL};
    PyObject *g_o, *dt_o, *shape_o, *name_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|O:placeholder", kwlist,
                                     &g_o, &dt_o, &shape_o, &name_o))
        return NULL;
    pyrf_graph_obj *go = pyrf_graph_builder_arg(g_o, "g");
    rf_dtype dt;
    rf_shape shape;
    const char *name;
    if (!go || pyrf_dtype_from_str(dt_o, "dtype", &dt) < 0 ||
        pyrf_shape_from_py(shape_o, "shape", true, &shape) < 0 ||
        pyrf_str_or_none(name_o, "name", &name) < 0)
        return NULL;
    return pyrf_graph_result(go, rf_placeholder(go->g, dt, shape, name));
}

BUILDER(const)
{
    UNUSED_SELF;
    static char *kwlist[] = {"g", "dtype", "shape", "data", "name", NULL};
    PyObject *g_o, *dt_o, *shape_o, *data, *name_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOO|O:const", kwlist, &g_o,
                                     &dt_o, &shape_o, &data, &name_o))
        return NULL;
    pyrf_graph_obj *go = pyrf_graph_builder_arg(g_o, "g");
    rf_dtype dt;
    rf_shape shape;
    const char *name;
    if (!go || pyrf_dtype_from_str(dt_o, "dtype", &dt) < 0 ||
        pyrf_shape_from_py(shape_o, "shape", false, &shape) < 0 ||
        pyrf_str_or_none(name_o, "name", &name) < 0)
        return NULL;
    Py_buffer b;
    if (get_buffer(data, "data", PyBUF_SIMPLE, &b) < 0)
        return NULL;
    size_t need = (size_t)rf_shape_numel(&shape) * rf_dtype_size(dt);
    if ((size_t)b.len != need) {
        char sh[128];
        shape_str(&shape, sh, sizeof sh);
        PyErr_Format(PyExc_ValueError,
                     "data: %zd bytes given, %zu needed for %s%s", b.len, need,
                     rf_dtype_name(dt), sh);
        PyBuffer_Release(&b);
        return NULL;
    }
    rf_node *n = rf_const(go->g, dt, shape, b.buf, name);
    PyBuffer_Release(&b);
    return pyrf_graph_result(go, n);
}

/* Builders over a list of nodes: no_op(deps), add_n(xs), concat(xs, axis). */
/* The graph, the node list and the name of a list builder; the list is
 * freed by the caller (PyMem_Free). */
static pyrf_graph_obj *list_args(PyObject *g_o, PyObject *list_o,
                                 const char *list_arg, PyObject *name_o,
                                 rf_node ***list, Py_ssize_t *n,
                                 const char **name)
{
    pyrf_graph_obj *go = pyrf_graph_builder_arg(g_o, "g");
    if (!go || pyrf_str_or_none(name_o, "name", name) < 0 ||
        pyrf_graph_nodes_arg(go, list_o, list_arg, list, n) < 0)
        return NULL;
    return go;
}

BUILDER(no_op)
{
    UNUSED_SELF;
    static char *kwlist[] = {"g", "deps", "name", NULL};
    PyObject *g_o, *deps_o, *name_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O:no_op", kwlist, &g_o,
                                     &deps_o, &name_o))
        return NULL;
    const char *name;
    rf_node **deps;
    Py_ssize_t n;
    pyrf_graph_obj *go = list_args(g_o, deps_o, "deps", name_o, &deps, &n,
                                   &name);
    if (!go)
        return NULL;
    rf_node *r = rf_no_op(go->g, deps, (size_t)n, name);
    PyMem_Free(deps);
    return pyrf_graph_result(go, r);
}

BUILDER(add_n)
{
    UNUSED_SELF;
    static char *kwlist[] = {"g", "xs", "name", NULL};
    PyObject *g_o, *xs_o, *name_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O:add_n", kwlist, &g_o,
                                     &xs_o, &name_o))
        return NULL;
    const char *name;
    rf_node **xs;
    Py_ssize_t n;
    pyrf_graph_obj *go = list_args(g_o, xs_o, "xs", name_o, &xs, &n, &name);
    if (!go)
        return NULL;
    rf_node *r = rf_add_n(go->g, xs, (size_t)n, name);
    PyMem_Free(xs);
    return pyrf_graph_result(go, r);
}

BUILDER(concat)
{
    UNUSED_SELF;
    static char *kwlist[] = {"g", "xs", "axis", "name", NULL};
    PyObject *g_o, *xs_o, *name_o = Py_None;
    int axis;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOi|O:concat", kwlist, &g_o,
                                     &xs_o, &axis, &name_o))
        return NULL;
    const char *name;
    rf_node **xs;
    Py_ssize_t n;
    pyrf_graph_obj *go = list_args(g_o, xs_o, "xs", name_o, &xs, &n, &name);
    if (!go)
        return NULL;
    rf_node *r = rf_concat(go->g, xs, (size_t)n, axis, name);
    PyMem_Free(xs);
    return pyrf_graph_result(go, r);
}

BUILDER(matmul)
{
    UNUSED_SELF;
    static char *kwlist[] = {"g",           "a",    "b", "transpose_a",
                             "transpose_b", "name", NULL};
    PyObject *g_o, *a_o, *b_o, *name_o = Py_None;
    int ta = 0, tb = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|ppO:matmul", kwlist, &g_o,
                                     &a_o, &b_o, &ta, &tb, &name_o))
        return NULL;
    pyrf_graph_obj *go = pyrf_graph_builder_arg(g_o, "g");
    rf_node *a, *b;
    const char *name;
    if (!go || !(a = pyrf_graph_node_arg(go, a_o, "a")) ||
        !(b = pyrf_graph_node_arg(go, b_o, "b")) ||
        pyrf_str_or_none(name_o, "name", &name) < 0)
        return NULL;
    return pyrf_graph_result(go, rf_matmul(go->g, a, b, ta, tb, name));
}

static PyObject *reduce(PyObject *args, PyObject *kw, bool mean)
{
    static char *kwlist[] = {"g", "x", "axes", "keep_dims", "name", NULL};
    PyObject *g_o, *x_o, *axes_o = Py_None, *name_o = Py_None;
    int keep = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw,
                                     mean ? "OO|OpO:reduce_mean"
                                          : "OO|OpO:reduce_sum",
                                     kwlist, &g_o, &x_o, &axes_o, &keep,
                                     &name_o))
        return NULL;
    pyrf_graph_obj *go = pyrf_graph_builder_arg(g_o, "g");
    rf_node *x;
    const char *name;
    int axes[RF_MAX_RANK], naxes;
    if (!go || !(x = pyrf_graph_node_arg(go, x_o, "x")) ||
        axes_arg(axes_o, axes, &naxes) < 0 ||
        pyrf_str_or_none(name_o, "name", &name) < 0)
        return NULL;
    const int *ax = naxes ? axes : NULL;
    rf_node *r = mean ? rf_reduce_mean(go->g, x, ax, naxes, keep, name)
                      : rf_reduce_sum(go->g, x, ax, naxes, keep, name);
    return pyrf_graph_result(go, r);
}

BUILDER(reduce_sum)
{
    UNUSED_SELF;
    return reduce(args, kw, false);
}

BUILDER(reduce_mean)
{
    UNUSED_SELF;
    return reduce(args, kw, true);
}

BUILDER(reshape)
{
    UNUSED_SELF;
    static char *kwlist[] = {"g", "x", "shape", "name", NULL};
    PyObject *g_o, *x_o, *shape_o, *name_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|O:reshape", kwlist, &g_o,
                                     &x_o, &shape_o, &name_o))
        return NULL;
    pyrf_graph_obj *go = pyrf_graph_builder_arg(g_o, "g");
    rf_node *x;
    rf_shape shape;
    const char *name;
    if (!go || !(x = pyrf_graph_node_arg(go, x_o, "x")) ||
        pyrf_shape_from_py(shape_o, "shape", true, &shape) < 0 ||
        pyrf_str_or_none(name_o, "name", &name) < 0)
        return NULL;
    return pyrf_graph_result(go, rf_reshape(go->g, x, shape, name));
}

BUILDER(conv2d)
{
    UNUSED_SELF;
    static char *kwlist[] = {"g",        "input",   "filter", "stride_h",
                             "stride_w", "padding", "name",   NULL};
    PyObject *g_o, *in_o, *f_o, *pad_o, *name_o = Py_None;
    int sh, sw;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOiiO|O:conv2d", kwlist, &g_o,
                                     &in_o, &f_o, &sh, &sw, &pad_o, &name_o))
        return NULL;
    pyrf_graph_obj *go = pyrf_graph_builder_arg(g_o, "g");
    rf_node *in, *f;
    rf_padding pad;
    const char *name;
    if (!go || !(in = pyrf_graph_node_arg(go, in_o, "input")) ||
        !(f = pyrf_graph_node_arg(go, f_o, "filter")) ||
        padding_arg(pad_o, &pad) < 0 ||
        pyrf_str_or_none(name_o, "name", &name) < 0)
        return NULL;
    return pyrf_graph_result(go, rf_conv2d(go->g, in, f, sh, sw, pad, name));
}

BUILDER(max_pool)
{
    UNUSED_SELF;
    static char *kwlist[] = {"g",        "x",        "ksize_h", "ksize_w",
                             "stride_h", "stride_w", "padding", "name",
                             NULL};
    PyObject *g_o, *x_o, *pad_o, *name_o = Py_None;
    int kh, kwd, sh, sw;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOiiiiO|O:max_pool", kwlist,
                                     &g_o, &x_o, &kh, &kwd, &sh, &sw, &pad_o,
                                     &name_o))
        return NULL;
    pyrf_graph_obj *go = pyrf_graph_builder_arg(g_o, "g");
    rf_node *x;
    rf_padding pad;
    const char *name;
    if (!go || !(x = pyrf_graph_node_arg(go, x_o, "x")) ||
        padding_arg(pad_o, &pad) < 0 ||
        pyrf_str_or_none(name_o, "name", &name) < 0)
        return NULL;
    return pyrf_graph_result(go,
                             rf_max_pool(go->g, x, kh, kwd, sh, sw, pad, name));
}

BUILDER(argmax)
{
    UNUSED_SELF;
    static char *kwlist[] = {"g", "x", "axis", "out_dtype", "name", NULL};
    PyObject *g_o, *x_o, *dt_o = NULL, *name_o = Py_None;
    int axis;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOi|OO:argmax", kwlist, &g_o,
                                     &x_o, &axis, &dt_o, &name_o))
        return NULL;
    pyrf_graph_obj *go = pyrf_graph_builder_arg(g_o, "g");
    rf_node *x;
    rf_dtype dt = RF_I64;
    const char *name;
    if (!go || !(x = pyrf_graph_node_arg(go, x_o, "x")) ||
        (dt_o && pyrf_dtype_from_str(dt_o, "out_dtype", &dt) < 0) ||
        pyrf_str_or_none(name_o, "name", &name) < 0)
        return NULL;
    return pyrf_graph_result(go, rf_argmax(go->g, x, axis, dt, name));
}

BUILDER(cast)
{
    UNUSED_SELF;
    static char *kwlist[] = {"g", "x", "dtype", "name", NULL};
    PyObject *g_o, *x_o, *dt_o, *name_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|O:cast", kwlist, &g_o,
                                     &x_o, &dt_o, &name_o))
        return NULL;
    pyrf_graph_obj *go = pyrf_graph_builder_arg(g_o, "g");
    rf_node *x;
    rf_dtype dt;
    const char *name;
    if (!go || !(x = pyrf_graph_node_arg(go, x_o, "x")) ||
        pyrf_dtype_from_str(dt_o, "dtype", &dt) < 0 ||
        pyrf_str_or_none(name_o, "name", &name) < 0)
        return NULL;
    return pyrf_graph_result(go, rf_cast(go->g, x, dt, name));
}

BUILDER(embedding_lookup)
{
    UNUSED_SELF;
    static char *kwlist[] = {"g", "params", "ids", "partition_strategy",
                             "name", NULL};
    PyObject *g_o, *params_o, *ids_o, *ps_o = Py_None, *name_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|OO:embedding_lookup",
                                     kwlist, &g_o, &params_o, &ids_o, &ps_o,
                                     &name_o))
        return NULL;
    pyrf_graph_obj *go = pyrf_graph_builder_arg(g_o, "g");
    rf_node *ids, **params;
    Py_ssize_t n;
    const char *ps, *name;
    if (!go || !(ids = pyrf_graph_node_arg(go, ids_o, "ids")) ||
        pyrf_str_or_none(ps_o, "partition_strategy", &ps) < 0 ||
        pyrf_str_or_none(name_o, "name", &name) < 0 ||
        pyrf_graph_nodes_arg(go, params_o, "params", &params, &n) < 0)
        return NULL;
    rf_node *r = rf_embedding_lookup(go->g, params, (size_t)n, ids, ps, name);
    PyMem_Free(params);
    return pyrf_graph_result(go, r);
}

BUILDER(embedding_lookup_partitioned)
{
    UNUSED_SELF;
    static char *kwlist[] = {"g", "table", "ids", "partition_strategy", "name",
                             NULL};
    PyObject *g_o, *t_o, *ids_o, *ps_o = Py_None, *name_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw,
                                     "OOO|OO:embedding_lookup_partitioned",
                                     kwlist, &g_o, &t_o, &ids_o, &ps_o,
                                     &name_o))
        return NULL;
    pyrf_graph_obj *go = pyrf_graph_builder_arg(g_o, "g");
    rf_node *t, *ids;
    const char *ps, *name;
    if (!go || !(t = pyrf_graph_node_arg(go, t_o, "table")) ||
        !(ids = pyrf_graph_node_arg(go, ids_o, "ids")) ||
        pyrf_str_or_none(ps_o, "partition_strategy", &ps) < 0 ||
        pyrf_str_or_none(name_o, "name", &name) < 0)
        return NULL;
    return pyrf_graph_result(
        go, rf_embedding_lookup_partitioned(go->g, t, ids, ps, name));
}

BUILDER(dense)
{
    UNUSED_SELF;
    static char *kwlist[] = {"g", "x", "units", "activation", "name", NULL};
    PyObject *g_o, *x_o, *act_o = Py_None, *name_o = Py_None;
    int units;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOi|OO:dense", kwlist, &g_o,
                                     &x_o, &units, &act_o, &name_o))
        return NULL;
    pyrf_graph_obj *go = pyrf_graph_builder_arg(g_o, "g");
    rf_node *x;
    rf_activation act;
    const char *name;
    if (!go || !(x = pyrf_graph_node_arg(go, x_o, "x")) ||
        activation_arg(act_o, &act) < 0 ||
        pyrf_str_or_none(name_o, "name", &name) < 0)
        return NULL;
    return pyrf_graph_result(go, rf_dense(go->g, x, units, act, name));
}

BUILDER(conv2d_layer)
{
    UNUSED_SELF;
    static char *kwlist[] = {"g",      "x",       "filters",    "kh", "kw",
                             "stride", "padding", "activation", "name",
                             NULL};
    PyObject *g_o, *x_o, *pad_o = NULL, *act_o = Py_None, *name_o = Py_None;
    int filters, kh, kwd, stride = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOiii|iOOO:conv2d_layer",
                                     kwlist, &g_o, &x_o, &filters, &kh, &kwd,
                                     &stride, &pad_o, &act_o, &name_o))
        return NULL;
    pyrf_graph_obj *go = pyrf_graph_builder_arg(g_o, "g");
    rf_node *x;
    rf_padding pad = RF_PADDING_VALID;
    rf_activation act;
    const char *name;
    if (!go || !(x = pyrf_graph_node_arg(go, x_o, "x")) ||
        (pad_o && padding_arg(pad_o, &pad) < 0) ||
        activation_arg(act_o, &act) < 0 ||
        pyrf_str_or_none(name_o, "name", &name) < 0)
        return NULL;
    return pyrf_graph_result(go, rf_conv2d_layer(go->g, x, filters, kh, kwd,
                                                 stride, pad, act, name));
}

/* ---- variables ---------------------------------------------------------- */

static PyObject *make_variable(PyObject *args, PyObject *kw, bool get)
{
    static char *kwlist[] = {"g",    "dtype",     "shape", "init",
                             "name", "trainable", NULL};
    PyObject *g_o, *dt_o, *shape_o, *init_o, *name_o = Py_None;
    int trainable = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw,
                                     get ? "OOOO|Op:get_variable"
                                         : "OOOO|Op:variable",
                                     kwlist, &g_o, &dt_o, &shape_o, &init_o,
                                     &name_o, &trainable))
        return NULL;
    pyrf_graph_obj *go = pyrf_graph_builder_arg(g_o, "g");
    rf_dtype dt;
    rf_shape shape;
    rf_initializer init;
    const char *name;
    if (!go || pyrf_dtype_from_str(dt_o, "dtype", &dt) < 0 ||
        pyrf_shape_from_py(shape_o, "shape", false, &shape) < 0 ||
        init_arg(init_o, &init) < 0 ||
        pyrf_str_or_none(name_o, "name", &name) < 0)
        return NULL;
    rf_node *v = get ? rf_get_variable(go->g, dt, shape, init, name)
                     : rf_variable(go->g, dt, shape, init, name);
    if (v && !trainable) {
        if (rf_node_op(v) == RF_OP_VARIABLE)
            rf_variable_set_trainable(v, false);
        else /* the ConcatV2 of a partitioned variable's parts */
            for (size_t i = 0; i < rf_node_num_inputs(v); i++)
                if (rf_node_op(rf_node_input(v, i)) == RF_OP_VARIABLE)
                    rf_variable_set_trainable(rf_node_input(v, i), false);
    }
    return pyrf_graph_result(go, v);
}

BUILDER(variable)
{
    UNUSED_SELF;
    return make_variable(args, kw, false);
}

BUILDER(get_variable)
{
    UNUSED_SELF;
    return make_variable(args, kw, true);
}

static PyObject *f_global_step(PyObject *self, PyObject *g_o)
{
    UNUSED_SELF;
    pyrf_graph_obj *go = pyrf_graph_builder_arg(g_o, "g");
    return go ? pyrf_graph_result(go, rf_global_step(go->g)) : NULL;
}

/* A Variable node argument (any graph). */
static rf_node *variable_arg(PyObject *o, const char *arg)
{
    rf_node *n = pyrf_node_ptr(o, arg);
    if (n && rf_node_op(n) != RF_OP_VARIABLE) {
        PyErr_Format(PyExc_ValueError, "%s: '%s' is a %s, not a variable", arg,
                     rf_node_name(n), rf_node_op_name(n));
        return NULL;
    }
    return n;
}

static PyObject *f_variable_read(PyObject *self, PyObject *var)
{
    UNUSED_SELF;
    rf_node *n = variable_arg(var, "var");
    if (!n)
        return NULL;
    rf_tensor t =
        rf_tensor_make(rf_node_dtype(n), rf_node_shape(n), rf_variable_data(n));
    return pyrf_tensor_view(&t);
}

static PyObject *f_variable_assign(PyObject *self, PyObject *args)
{
    UNUSED_SELF;
    PyObject *var_o, *data;
    if (!PyArg_ParseTuple(args, "OO:variable_assign", &var_o, &data))
        return NULL;
    rf_node *n = variable_arg(var_o, "var");
    if (!n)
        return NULL;
    Py_buffer b;
    if (get_buffer(data, "data", PyBUF_FORMAT | PyBUF_STRIDES, &b) < 0)
        return NULL;
    rf_dtype dt = rf_node_dtype(n);
    rf_shape want = rf_node_shape(n);
    bool ok = pyrf_buffer_dtype(&b) == (int)dt && b.ndim == want.rank;
    for (int i = 0; ok && i < b.ndim; i++)
        ok = b.shape[i] == want.dims[i];
    if (!ok || (size_t)b.len != rf_variable_bytes(n)) {
        char sh[128], got[160];
        shape_str(&want, sh, sizeof sh);
        size_t k = (size_t)snprintf(got, sizeof got, "format '%s'[",
                                    b.format ? b.format : "B");
        for (int i = 0; i < b.ndim && k < sizeof got; i++)
            k += (size_t)snprintf(got + k, sizeof got - k, "%s%zd",
                                  i ? "," : "", b.shape[i]);
        if (k < sizeof got)
            snprintf(got + k, sizeof got - k, "]");
        PyErr_Format(PyExc_ValueError,
                     "data: variable '%s' is %s%s; given %s", rf_node_name(n),
                     rf_dtype_name(dt), sh, got);
        PyBuffer_Release(&b);
        return NULL;
    }
    void *dst = rf_variable_data(n);
    if (b.len)
        memcpy(dst, b.buf, (size_t)b.len);
    PyBuffer_Release(&b);
    rf_variable_mark_initialized(n, true);
    Py_RETURN_NONE;
}

static PyObject *f_variable_initialize(PyObject *self, PyObject *var)
{
    UNUSED_SELF;
    rf_node *n = variable_arg(var, "var");
    if (!n)
        return NULL;
    rf_status st = rf_variable_initialize(n);
    if (st != RF_OK)
        return pyrf_raise(st, NULL);
    Py_RETURN_NONE;
}

static PyObject *f_get_slot(PyObject *self, PyObject *args)
{
    UNUSED_SELF;
    PyObject *var_o;
    const char *slot;
    if (!PyArg_ParseTuple(args, "Os:get_slot", &var_o, &slot))
        return NULL;
    rf_node *n = pyrf_node_ptr(var_o, "var");
    if (!n)
        return NULL;
    return pyrf_node_new(pyrf_node_graph_obj(var_o),
                         rf_variable_get_slot(n, slot));
}

/* ---- training ------------------------------------------------------------ */

static PyObject *node_list(PyObject *graph, rf_node *const *v, size_t n)
{
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        PyObject *x = pyrf_node_new(graph, v[i]);
        if (!x) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, x);
    }
    return list;
}

BUILDER(gradients)
{
    UNUSED_SELF;
    static char *kwlist[] = {"g", "loss", "xs", NULL};
    PyObject *g_o, *loss_o, *xs_o;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO:gradients", kwlist, &g_o,
                                     &loss_o, &xs_o))
        return NULL;
    pyrf_graph_obj *go = pyrf_graph_builder_arg(g_o, "g");
    rf_node *loss, **xs;
    Py_ssize_t n;
    if (!go || !(loss = pyrf_graph_node_arg(go, loss_o, "loss")) ||
        pyrf_graph_nodes_arg(go, xs_o, "xs", &xs, &n) < 0)
        return NULL;
    rf_node **grads = PyMem_Calloc((size_t)(n ? n : 1), sizeof *grads);
    if (!grads) {
        PyMem_Free(xs);
        return PyErr_NoMemory();
    }
    rf_status st = rf_gradients(go->g, loss, xs, (size_t)n, grads);
    PyObject *r = NULL;
    if (st != RF_OK)
        pyrf_graph_status_error(go, st);
    else if (!pyrf_graph_check_error(go))
        r = node_list(g_o, grads, (size_t)n);
    PyMem_Free(grads);
    PyMem_Free(xs);
    return r;
}

/* An optional node argument: None -> NULL. */
static int opt_node_arg(pyrf_graph_obj *go, PyObject *o, const char *arg,
                        rf_node **out)
{
    *out = NULL;
    if (o == Py_None)
        return 0;
    return (*out = pyrf_graph_node_arg(go, o, arg)) ? 0 : -1;
}

/* Finishes an optimizer builder: the train op or the error. */
static PyObject *train_result(pyrf_graph_obj *go, rf_status st, rf_node *op)
{
    if (st != RF_OK)
        return pyrf_graph_status_error(go, st);
    return pyrf_graph_result(go, op);
}

BUILDER(apply_gradients)
{
    UNUSED_SELF;
    static char *kwlist[] = {"g",           "config", "vars", "grads",
                             "global_step", "name",   NULL};
    PyObject *g_o, *cfg_o, *vars_o, *grads_o, *gs_o = Py_None,
                                              *name_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOO|OO:apply_gradients",
                                     kwlist, &g_o, &cfg_o, &vars_o, &grads_o,
                                     &gs_o, &name_o))
        return NULL;
    pyrf_graph_obj *go = pyrf_graph_builder_arg(g_o, "g");
    rf_optim_config cfg;
    rf_node *gs, **vars = NULL, **grads = NULL;
    Py_ssize_t n;
    const char *name;
    PyObject *fast = NULL, *r = NULL;
    if (!go || opt_node_arg(go, gs_o, "global_step", &gs) < 0 ||
        pyrf_str_or_none(name_o, "name", &name) < 0 ||
        config_arg(cfg_o, &cfg) < 0 ||
        pyrf_graph_nodes_arg(go, vars_o, "vars", &vars, &n) < 0)
        return NULL;
    fast = PySequence_Fast(grads_o, "");
    if (!fast || PyUnicode_Check(grads_o)) {
        PyErr_SetString(PyExc_TypeError,
                        "grads: expected a sequence of nodes or None");
        goto out;
    }
    if (PySequence_Fast_GET_SIZE(fast) != n) {
        PyErr_Format(PyExc_ValueError,
                     "grads: %zd given for %zd vars (one per variable, None "
                     "to skip one)",
                     PySequence_Fast_GET_SIZE(fast), n);
        goto out;
    }
    if (!(grads = PyMem_Calloc((size_t)(n ? n : 1), sizeof *grads))) {
        PyErr_NoMemory();
        goto out;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        char what[32];
        snprintf(what, sizeof what, "grads[%zd]", i);
        if (opt_node_arg(go, PySequence_Fast_GET_ITEM(fast, i), what,
                         &grads[i]) < 0)
            goto out;
    }
    rf_node *op = NULL;
    rf_status st = rf_apply_gradients(go->g, &cfg, vars, grads, (size_t)n, gs,
                                      name, &op);
    r = train_result(go, st, op);
out:
    Py_XDECREF(fast);
    PyMem_Free(vars);
    PyMem_Free(grads);
    return r;
}

BUILDER(minimize)
{
    UNUSED_SELF;
    static char *kwlist[] = {"g", "config", "loss", "global_step", NULL};
    PyObject *g_o, *cfg_o, *loss_o, *gs_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|O:minimize", kwlist, &g_o,
                                     &cfg_o, &loss_o, &gs_o))
        return NULL;
    pyrf_graph_obj *go = pyrf_graph_builder_arg(g_o, "g");
    rf_optim_config cfg;
    rf_node *loss, *gs;
    if (!go || !(loss = pyrf_graph_node_arg(go, loss_o, "loss")) ||
        opt_node_arg(go, gs_o, "global_step", &gs) < 0 ||
        config_arg(cfg_o, &cfg) < 0)
        return NULL;
    rf_node *op = NULL;
    rf_status st = rf_minimize(go->g, &cfg, loss, gs, &op);
    return train_result(go, st, op);
}

/* d[key] = v (stolen); -1 on error. */
static int set_item(PyObject *d, const char *key, PyObject *v)
{
    if (!v)
        return -1;
    int r = PyDict_SetItemString(d, key, v);
    Py_DECREF(v);
    return r;
}

static PyObject *f_apply_info(PyObject *self, PyObject *node)
{
    UNUSED_SELF;
    rf_node *n = pyrf_node_ptr(node, "node");
    if (!n)
        return NULL;
    rf_apply_info info;
    if (rf_node_apply_info(n, &info) != RF_OK)
        Py_RETURN_NONE;
    PyObject *g = pyrf_node_graph_obj(node);
    PyObject *d = PyDict_New();
    if (!d)
        return NULL;
    if (set_item(d, "config", config_dict(info.cfg)) < 0 ||
        set_item(d, "var", pyrf_node_new(g, info.var)) < 0 ||
        set_item(d, "grad", pyrf_node_new(g, info.grad)) < 0 ||
        set_item(d, "sparse", PyBool_FromLong(info.sparse)) < 0 ||
        set_item(d, "indices", pyrf_node_new(g, info.indices)) < 0 ||
        set_item(d, "values", pyrf_node_new(g, info.values)) < 0 ||
        set_item(d, "slots", node_list(g, info.slots, info.num_slots)) < 0 ||
        set_item(d, "beta1_power", pyrf_node_new(g, info.beta1_power)) < 0 ||
        set_item(d, "beta2_power", pyrf_node_new(g, info.beta2_power)) < 0) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
}

/* ---- the function table ------------------------------------------------- */

#define KW(py, doc)                                                            \
    {#py, (PyCFunction)(void (*)(void))b_##py, METH_VARARGS | METH_KEYWORDS,   \
     doc}

PyMethodDef pyrf_graph_functions[] = {
    {"replica_device_setter",
     (PyCFunction)(void (*)(void))pyrf_replica_device_setter,
     METH_VARARGS | METH_KEYWORDS,
     "replica_device_setter(ps_tasks=0, cluster=None, ps_device='/job:ps', "
     "worker_device='/job:worker', merge_devices=True, ps_ops=None, "
     "strategy='round_robin') -> ReplicaDeviceSetter | None"},
    KW(placeholder, "placeholder(g, dtype, shape, name=None) -> Node"),
    KW(const, "const(g, dtype, shape, data, name=None) -> Node (data: a "
              "C-contiguous buffer of numel * size bytes, copied)"),
    KW(identity, "identity(g, x, name=None) -> Node"),
    KW(no_op, "no_op(g, deps, name=None) -> Node (tf.group)"),
    KW(assign, "assign(g, var, value, name=None) -> Node"),
    KW(assign_add, "assign_add(g, var, value, name=None) -> Node"),
    KW(matmul, "matmul(g, a, b, transpose_a=False, transpose_b=False, "
               "name=None) -> Node"),
    KW(add, "add(g, a, b, name=None) -> Node"),
    KW(sub, "sub(g, a, b, name=None) -> Node"),
    KW(mul, "mul(g, a, b, name=None) -> Node"),
    KW(neg, "neg(g, x, name=None) -> Node"),
    KW(relu, "relu(g, x, name=None) -> Node"),
    KW(sigmoid, "sigmoid(g, x, name=None) -> Node"),
    KW(tanh, "tanh(g, x, name=None) -> Node"),
    KW(softmax, "softmax(g, x, name=None) -> Node"),
    KW(ones_like, "ones_like(g, x, name=None) -> Node"),
    KW(zeros_like, "zeros_like(g, x, name=None) -> Node"),
    KW(flatten, "flatten(g, x, name=None) -> Node"),
    KW(add_n, "add_n(g, xs, name=None) -> Node"),
    KW(bias_add, "bias_add(g, x, bias, name=None) -> Node"),
    KW(sparse_softmax_cross_entropy_with_logits,
       "sparse_softmax_cross_entropy_with_logits(g, labels, logits, "
       "name=None) -> Node"),
    KW(sigmoid_cross_entropy_with_logits,
       "sigmoid_cross_entropy_with_logits(g, labels, logits, name=None) -> "
       "Node"),
    KW(reduce_sum, "reduce_sum(g, x, axes=None, keep_dims=False, name=None) "
                   "-> Node"),
    KW(reduce_mean, "reduce_mean(g, x, axes=None, keep_dims=False, "
                    "name=None) -> Node"),
    KW(reshape, "reshape(g, x, shape, name=None) -> Node"),
    KW(concat, "concat(g, xs, axis, name=None) -> Node"),
    KW(conv2d, "conv2d(g, input, filter, stride_h, stride_w, padding, "
               "name=None) -> Node"),
    KW(max_pool, "max_pool(g, x, ksize_h, ksize_w, stride_h, stride_w, "
                 "padding, name=None) -> Node"),
    KW(argmax, "argmax(g, x, axis, out_dtype='int64', name=None) -> Node"),
    KW(equal, "equal(g, a, b, name=None) -> Node"),
    KW(cast, "cast(g, x, dtype, name=None) -> Node"),
    KW(gather, "gather(g, params, indices, name=None) -> Node"),
    KW(embedding_lookup, "embedding_lookup(g, params, ids, "
                         "partition_strategy=None, name=None) -> Node"),
    KW(embedding_lookup_partitioned,
       "embedding_lookup_partitioned(g, table, ids, partition_strategy=None, "
       "name=None) -> Node"),
    KW(indexed_slices_to_dense,
       "indexed_slices_to_dense(g, slices, name=None) -> Node"),
    KW(accuracy, "accuracy(g, logits, labels, name=None) -> Node"),
    KW(dense, "dense(g, x, units, activation=None, name=None) -> Node"),
    KW(conv2d_layer, "conv2d_layer(g, x, filters, kh, kw, stride=1, "
                     "padding='VALID', activation=None, name=None) -> Node"),
    KW(variable, "variable(g, dtype, shape, init, name=None, trainable=True) "
                 "-> Node"),
    KW(get_variable, "get_variable(g, dtype, shape, init, name=None, "
                     "trainable=True) -> Node (under the graph's "
                     "partitioner: the ConcatV2 of the parts)"),
    {"global_step", f_global_step, METH_O,
     "global_step(g) -> Node: get_or_create_global_step"},
    {"variable_read", f_variable_read, METH_O,
     "variable_read(var) -> memoryview of its storage now (copy it)"},
    {"variable_assign", f_variable_assign, METH_VARARGS,
     "variable_assign(var, data): copies a buffer of its dtype and shape in "
     "and marks it initialised"},
    {"variable_initialize", f_variable_initialize, METH_O,
     "variable_initialize(var): runs its initializer"},
    {"get_slot", f_get_slot, METH_VARARGS,
     "get_slot(var, slot_name) -> Node | None"},
    KW(gradients, "gradients(g, loss, xs) -> [Node | None]"),
    KW(apply_gradients, "apply_gradients(g, config, vars, grads, "
                        "global_step=None, name=None) -> Node"),
    KW(minimize, "minimize(g, config, loss, global_step=None) -> Node"),
    {"apply_info", f_apply_info, METH_O,
     "apply_info(node) -> dict | None: an apply op's config, var, grad, "
     "sparse, indices, values, slots, beta1_power, beta2_power"},
    {NULL, NULL, 0, NULL},
};
