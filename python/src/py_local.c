/* python/src/py_local.c: placeholder until written (see README.md). */
#include "pyrf.h"

PyMethodDef pyrf_local_functions[] = {{NULL, NULL, 0, NULL}};

int pyrf_local_init(PyObject *module)
{
    (void)module;
    return 0;
}
