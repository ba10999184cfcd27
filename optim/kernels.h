/* optim/kernels.h: the per-optimizer update loops behind rf_optim_apply()
 * (optim/kernels.c) and rf_optim_apply_sparse() (optim/kernels_sparse.c),
 * internal to optim/, and the per-element formulas both use. Arguments are
 * already validated; arrays are non-overlapping, which the restrict
 * qualifiers promise the compiler. */
#ifndef RF_OPTIM_KERNELS_H
#define RF_OPTIM_KERNELS_H

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Determinism: float expressions must be evaluated in float (SSE, not x87)
 * and never fused into FMAs. GCC in ISO C mode (-std=c11) does not contract;
 * clang honours the standard pragma (which holds for the rest of every file
 * that includes this header). */
#if FLT_EVAL_METHOD != 0
#error "optim kernels need FLT_EVAL_METHOD == 0 for reproducible results"
#endif
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

/* ---- Per-element formulas shared by the dense and sparse kernels ------- */

/* Adam's step size, once per apply (ApplyAdamNonCuda's alpha and
 * _apply_sparse_shared's lr): lr * sqrt(1 - beta2_power) / (1 - beta1_power).
 */
static inline float rf_adam_alpha(float lr, float beta1_power,
                                  float beta2_power)
{
    return lr * sqrtf(1.0f - beta2_power) / (1.0f - beta1_power);
}

/* Adam's variable step: var - (m * alpha) / (sqrt(v) + epsilon) (dense) and
 * var - alpha * m / (sqrt(v) + epsilon) (sparse), the same floats. */
static inline float rf_adam_var_step(float var, float m, float v, float alpha,
                                     float epsilon)
{
    return var - (m * alpha) / (sqrtf(v) + epsilon);
}

/* FTRL's accumulator power accum^(-lr_power): sqrtf for TF's special case
 * lr_power == -0.5, powf otherwise (Eigen's pow on float). */
static inline float rf_ftrl_power(float accum, float lr_power)
{
    return lr_power == -0.5f ? sqrtf(accum) : powf(accum, -lr_power);
}

/* ---- Dense loops (optim/kernels.c) -------------------------------------- */

void rf_kernel_sgd(float *restrict var, const float *restrict grad, size_t n,
                   float lr);
void rf_kernel_momentum(float *restrict var, float *restrict accum,
                        const float *restrict grad, size_t n, float lr,
                        float momentum, bool use_nesterov);
void rf_kernel_adagrad(float *restrict var, float *restrict accum,
                       const float *restrict grad, size_t n, float lr);
void rf_kernel_adam(float *restrict var, float *restrict m, float *restrict v,
                    const float *restrict grad, size_t n, float lr, float beta1,
                    float beta2, float epsilon, float beta1_power,
                    float beta2_power);
void rf_kernel_rmsprop(float *restrict var, float *restrict ms,
                       float *restrict mom, const float *restrict grad,
                       size_t n, float lr, float rho, float momentum,
                       float epsilon);
void rf_kernel_centered_rmsprop(float *restrict var, float *restrict mg,
                                float *restrict ms, float *restrict mom,
                                const float *restrict grad, size_t n, float lr,
                                float rho, float momentum, float epsilon);
/* ApplyFtrl, or ApplyFtrlV2 when l2_shrinkage > 0. */
void rf_kernel_ftrl(float *restrict var, float *restrict accum,
                    float *restrict linear, const float *restrict grad,
                    size_t n, float lr, float lr_power, float l1, float l2,
                    float l2_shrinkage);

/* ---- Sparse loops (optim/kernels_sparse.c) ------------------------------ */

/* Each applies the entries i of indices[0..n) in order to row indices[i] of
 * var and the slots ([rows, width]) with row i of grad ([n, width]),
 * skipping index -1; every other index is already checked to be in range. */
void rf_sparse_sgd(float *restrict var, size_t width,
                   const int64_t *restrict indices, size_t n,
                   const float *restrict grad, float lr);
void rf_sparse_momentum(float *restrict var, float *restrict accum,
                        size_t width, const int64_t *restrict indices, size_t n,
                        const float *restrict grad, float lr, float momentum,
                        bool use_nesterov);
void rf_sparse_adagrad(float *restrict var, float *restrict accum, size_t width,
                       const int64_t *restrict indices, size_t n,
                       const float *restrict grad, float lr);
void rf_sparse_rmsprop(float *restrict var, float *restrict ms,
                       float *restrict mom, size_t width,
                       const int64_t *restrict indices, size_t n,
                       const float *restrict grad, float lr, float rho,
                       float momentum, float epsilon);
void rf_sparse_centered_rmsprop(float *restrict var, float *restrict mg,
                                float *restrict ms, float *restrict mom,
                                size_t width, const int64_t *restrict indices,
                                size_t n, const float *restrict grad, float lr,
                                float rho, float momentum, float epsilon);
void rf_sparse_ftrl(float *restrict var, float *restrict accum,
                    float *restrict linear, size_t width,
                    const int64_t *restrict indices, size_t n,
                    const float *restrict grad, float lr, float lr_power,
                    float l1, float l2, float l2_shrinkage);
/* Adam decays and moves all rows ([rows, width]), not only the indexed. */
void rf_sparse_adam(float *restrict var, float *restrict m, float *restrict v,
                    size_t rows, size_t width, const int64_t *restrict indices,
                    size_t n, const float *restrict grad, float lr, float beta1,
                    float beta2, float epsilon, float beta1_power,
                    float beta2_power);

#endif
