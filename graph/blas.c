/* graph/blas.c: the OpenBLAS boundary: row-major sgemm for the kernels,
 * and which OpenBLAS kernels the process got. DYNAMIC_ARCH builds choose
 * kernels from the CPU model when the library loads; CPUs newer than the
 * library fall back to "Prescott" (SSE3), 2-3x slower than the CPU allows.
 * OPENBLAS_CORETYPE fixes that, but only if set before the library loads,
 * so the library can only say so (rf_blas_suggested_core); a program may
 * set it and re-exec itself. */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "graph/graph_internal.h"

void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a,
           int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc,
           bool accumulate)
{
    if (m <= 0 || n <= 0)
        return;
    if (k <= 0) {
        if (!accumulate)
            for (int64_t i = 0; i < m; i++)
                memset(c + i * ldc, 0, (size_t)n * sizeof *c);
        return;
    }
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                tb ? CblasTrans : CblasNoTrans, (blasint)m, (blasint)n,
                (blasint)k, 1.0f, a, (blasint)lda, b, (blasint)ldb,
                accumulate ? 1.0f : 0.0f, c, (blasint)ldc);
}

const char *rf_blas_core(void)
{
    const char *c = openblas_get_corename();
    return c ? c : "unknown";
}

static bool core_in(const char *core, const char *const *list)
{
    for (; *list; list++)
        if (strcasecmp(core, *list) == 0)
            return true;
    return false;
}

const char *rf_blas_suggested_core(void)
{
    if (getenv("OPENBLAS_CORETYPE"))
        return NULL;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    static const char *const avx512[] = {"SkylakeX", "Cooperlake",
                                         "SapphireRapids", NULL};
    static const char *const avx2[] = {
        "Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids", NULL};
    const char *core = rf_blas_core();
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512dq"))
        return core_in(core, avx512) ? NULL : "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return core_in(core, avx2) ? NULL : "Haswell";
#endif
    return NULL;
}
