/* optim/kernels.h: the per-optimizer update loops behind rf_optim_apply()
 * (internal to optim/). Arguments are already validated; arrays are
 * non-overlapping, which the restrict qualifiers promise the compiler. */
#ifndef RF_OPTIM_KERNELS_H
#define RF_OPTIM_KERNELS_H

#include <stdbool.h>
#include <stddef.h>

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

#endif
