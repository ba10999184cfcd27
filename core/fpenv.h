/* core/fpenv.h: flush-to-zero for the float kernels, as TensorFlow's
 * executor does (port::ScopedFlushDenormal around every kernel): subnormal
 * inputs are read as zero and subnormal results are written as zero (x86
 * MXCSR FTZ|DAZ, AArch64 FPCR.FZ). Without it, Adam's moments of weights
 * whose gradient stays zero decay into the subnormal range and stay there
 * (0.9 * 4 ulp rounds back to 4 ulp), and every update of them takes the
 * slow microcode path: the optimizer step gets 2-4x slower during training.
 * Every place that runs optimizer or graph kernels (the executor's threads,
 * rf_optim_apply, the ps apply thread through it) uses the same mode, so
 * local training, apply=ps and apply=worker still compute bit for bit the
 * same values. */
#ifndef RF_CORE_FPENV_H
#define RF_CORE_FPENV_H

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define RF_FPENV_FLUSH 0x8040u /* MXCSR FTZ (bit 15) | DAZ (bit 6) */
typedef unsigned rf_fpenv;
static inline rf_fpenv rf_flush_denormals_begin(void)
{
    rf_fpenv old = _mm_getcsr();
    if ((old & RF_FPENV_FLUSH) != RF_FPENV_FLUSH)
        _mm_setcsr(old | RF_FPENV_FLUSH);
    return old;
}
static inline void rf_flush_denormals_end(rf_fpenv old)
{
    if ((old & RF_FPENV_FLUSH) != RF_FPENV_FLUSH)
        _mm_setcsr(old);
}
#elif defined(__aarch64__)
#include <stdint.h>
#define RF_FPENV_FLUSH ((uint64_t)1 << 24) /* FPCR.FZ */
typedef uint64_t rf_fpenv;
static inline rf_fpenv rf_flush_denormals_begin(void)
{
    uint64_t old;
    __asm__ volatile("mrs %0, fpcr" : "=r"(old));
    if (!(old & RF_FPENV_FLUSH))
        __asm__ volatile("msr fpcr, %0" : : "r"(old | RF_FPENV_FLUSH));
    return old;
}
static inline void rf_flush_denormals_end(rf_fpenv old)
{
    if (!(old & RF_FPENV_FLUSH))
        __asm__ volatile("msr fpcr, %0" : : "r"(old));
}
#else
typedef int rf_fpenv; /* no control on this architecture: IEEE subnormals */
static inline rf_fpenv rf_flush_denormals_begin(void)
{
    return 0;
}
static inline void rf_flush_denormals_end(rf_fpenv old)
{
    (void)old;
}
#endif

#endif
