/* python/src/py_graph.c: placeholder until written (see README.md). */
#include "pyrf.h"

PyMethodDef pyrf_graph_functions[] = {{NULL, NULL, 0, NULL}};

int pyrf_graph_init(PyObject *module)
{
    (void)module;
    return 0;
}

PyObject *pyrf_node_new(PyObject *graph, rf_node *n)
{
    (void)graph;
    (void)n;
    Py_RETURN_NONE;
}
rf_node *pyrf_node_ptr(PyObject *o, const char *arg)
{
    (void)o;
    PyErr_Format(PyExc_TypeError, "%s: not a Node", arg);
    return NULL;
}
