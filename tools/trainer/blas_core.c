/* tools/trainer/blas_core.c: set OPENBLAS_CORETYPE and re-exec once (see
 * blas_core.h). */
#include "blas_core.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdmaflow/graph.h"

#define MARKER "RF_TRAINER_BLAS_REEXEC"

static bool reexecuted; /* this process is the re-executed one */

void tr_blas_reexec(char **argv)
{
    const char *marker = getenv(MARKER);
    if (marker) {
        reexecuted = true;
        unsetenv(MARKER);
        return;
    }
    if (getenv("OPENBLAS_CORETYPE"))
        return;
    const char *core = rf_blas_suggested_core();
    if (!core)
        return;
    if (setenv("OPENBLAS_CORETYPE", core, 1) != 0 ||
        setenv(MARKER, "1", 1) != 0) {
        fprintf(stderr,
                "rf-trainer: warning: setenv failed (%s); keeping "
                "OpenBLAS's %s kernels\n",
                strerror(errno), rf_blas_core());
        return;
    }
    fflush(NULL);
    execv("/proc/self/exe", argv);
    int e = errno;
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv(MARKER);
    fprintf(stderr,
            "rf-trainer: warning: re-executing with "
            "OPENBLAS_CORETYPE=%s failed (%s); keeping OpenBLAS's %s "
            "kernels\n",
            core, strerror(e), rf_blas_core());
}

void tr_blas_report(FILE *out)
{
    const char *env = getenv("OPENBLAS_CORETYPE");
    if (reexecuted)
        fprintf(out,
                "OpenBLAS kernels: %s (OPENBLAS_CORETYPE=%s set by "
                "rf-trainer, re-executed)\n",
                rf_blas_core(), env ? env : "?");
    else if (env)
        fprintf(out,
                "OpenBLAS kernels: %s (OPENBLAS_CORETYPE=%s from the "
                "environment)\n",
                rf_blas_core(), env);
    else
        fprintf(out, "OpenBLAS kernels: %s (OpenBLAS's own choice)\n",
                rf_blas_core());
}
