/* python/src/py_ckpt.c: placeholder until written (see README.md). */
#include "pyrf.h"

PyMethodDef pyrf_ckpt_functions[] = {{NULL, NULL, 0, NULL}};

int pyrf_ckpt_init(PyObject *module)
{
    (void)module;
    return 0;
}
