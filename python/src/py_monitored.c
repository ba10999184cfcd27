/* python/src/py_monitored.c: placeholder until written (see README.md). */
#include "pyrf.h"

PyMethodDef pyrf_monitored_functions[] = {{NULL, NULL, 0, NULL}};

int pyrf_monitored_init(PyObject *module)
{
    (void)module;
    return 0;
}
