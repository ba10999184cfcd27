/* tools/trainer/blas_core.h: choosing OpenBLAS's kernels before it loads.
 * OpenBLAS 0.3.21 falls back to its slow Prescott kernels on CPUs newer
 * than itself unless OPENBLAS_CORETYPE is set when the process starts, so
 * rf-trainer sets it and re-executes itself once (see graph.h,
 * rf_blas_suggested_core). */
#ifndef RF_TRAINER_BLAS_CORE_H
#define RF_TRAINER_BLAS_CORE_H

#include <stdio.h>

/* If OPENBLAS_CORETYPE is unset, this is not already a re-executed process
 * and rf_blas_suggested_core() names a core: sets OPENBLAS_CORETYPE and the
 * marker RF_TRAINER_BLAS_REEXEC, then execv("/proc/self/exe", argv). Returns
 * only when no re-exec was needed or execv failed (then it warns on stderr
 * and the run continues with the slow kernels). */
void tr_blas_reexec(char **argv);

/* Prints one line naming the kernels in use and where the choice came
 * from. Call after tr_blas_reexec. */
void tr_blas_report(FILE *out);

#endif
