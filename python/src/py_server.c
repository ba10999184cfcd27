/* python/src/py_server.c: placeholder until written (see README.md). */
#include "pyrf.h"

PyMethodDef pyrf_server_functions[] = {{NULL, NULL, 0, NULL}};

int pyrf_server_init(PyObject *module)
{
    (void)module;
    return 0;
}
