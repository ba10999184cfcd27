/* python/src/py_graph_internal.h: what py_graph.c (the Graph, Node and
 * ReplicaDeviceSetter types, scopes) and py_ops.c (the op builders,
 * variables, gradients and optimizers, and the module's graph function
 * table) share. Private to those two files. */
#ifndef PY_GRAPH_INTERNAL_H
#define PY_GRAPH_INTERNAL_H

#include "pyrf.h"

/* A device scope the Graph keeps alive while it is on the graph's device
 * stack (py_graph.c). */
typedef struct pyrf_scope pyrf_scope;

typedef struct pyrf_graph_obj {
    PyObject_HEAD
    rf_graph *g;         /* owned: rf_graph_destroy at dealloc */
    pyrf_scope **scopes; /* the device scopes pushed, outermost first */
    size_t nscopes, capscopes;
    /* The exception a Python device function (or ps strategy) raised while
     * a node was being created: the builder re-raises it. */
    PyObject *exc;
    /* Node objects handed to Python device functions whose node was not
     * yet in the graph; checked (and killed if their creation failed) when
     * the builder returns. */
    PyObject *pending;
    int in_callback; /* > 0 while a Python device function runs */
} pyrf_graph_obj;

typedef struct pyrf_node_obj {
    PyObject_HEAD
    PyObject *graph; /* strong: the Graph object */
    rf_node *n;      /* NULL when its creation failed (see pending) */
    size_t id;
} pyrf_node_obj;

/* ---- py_graph.c: argument helpers for the builders -------------------- */

/* The Graph object of a builder's graph argument, checked to be idle (no
 * device function of it running); NULL with TypeError / RuntimeError. */
pyrf_graph_obj *pyrf_graph_builder_arg(PyObject *o, const char *arg);
/* A node of go's graph; NULL with TypeError (not a Node) or ValueError
 * (another graph's, or its creation failed). */
rf_node *pyrf_graph_node_arg(pyrf_graph_obj *go, PyObject *o, const char *arg);
/* A sequence of go's nodes into a PyMem_Malloc'd array. */
int pyrf_graph_nodes_arg(pyrf_graph_obj *go, PyObject *seq, const char *arg,
                         rf_node ***out, Py_ssize_t *n);
/* None -> NULL, a str -> its UTF-8; -1 with TypeError naming arg. */
int pyrf_str_or_none(PyObject *o, const char *arg, const char **out);

/* The end of every builder: the Node of n, or the builder's error: the
 * exception a device function raised, else ValueError(rf_graph_error(g)),
 * the graph's error then cleared. */
PyObject *pyrf_graph_result(pyrf_graph_obj *go, rf_node *n);
/* The same for a builder returning an rf_status (gradients, optimizers):
 * a device function's exception, else ValueError of the graph's error when
 * a node's creation failed, else pyrf_raise(st). NULL. */
PyObject *pyrf_graph_status_error(pyrf_graph_obj *go, rf_status st);
/* True (with the error raised as pyrf_graph_result does) when the last
 * builder left an error behind; call after a successful rf_status call. */
bool pyrf_graph_check_error(pyrf_graph_obj *go);

/* replica_device_setter(...) (py_graph.c; in py_ops.c's table). */
PyObject *pyrf_replica_device_setter(PyObject *self, PyObject *args,
                                     PyObject *kw);

extern PyTypeObject pyrf_setter_type;

#endif
