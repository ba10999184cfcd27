/* optim/kernels.c: TensorFlow 1.x's dense update rules (the CPU functors
 * ApplyGradientDescent, ApplyMomentum, ApplyAdagrad, ApplyAdamNonCuda,
 * ApplyRMSProp, ApplyCenteredRMSProp, ApplyFtrl and ApplyFtrlV2 of
 * core/kernels/training_ops.cc) as
 * plain loops over floats. Each expression keeps the operand order of TF's
 * Eigen expression; every element is computed independently in float with
 * correctly rounded IEEE operations (sqrtf included), so the result does not
 * depend on vectorisation or the machine. Not bitwise TF: Eigen's rsqrt and
 * its packet math may round differently. */
#include <math.h>

#include "optim/kernels.h" /* also the determinism checks */

void rf_kernel_sgd(float *restrict var, const float *restrict grad, size_t n,
                   float lr)
{
    /* var -= grad * lr */
    for (size_t i = 0; i < n; i++)
        var[i] = var[i] - grad[i] * lr;
}

void rf_kernel_momentum(float *restrict var, float *restrict accum,
                        const float *restrict grad, size_t n, float lr,
                        float momentum, bool use_nesterov)
{
    /* accum = accum * momentum + grad, then
     * nesterov: var -= grad * lr + accum * momentum * lr
     * else:     var -= accum * lr */
    if (use_nesterov) {
        for (size_t i = 0; i < n; i++) {
            float a = accum[i] * momentum + grad[i];
            accum[i] = a;
            var[i] = var[i] - (grad[i] * lr + a * momentum * lr);
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            float a = accum[i] * momentum + grad[i];
            accum[i] = a;
            var[i] = var[i] - a * lr;
        }
    }
}

void rf_kernel_adagrad(float *restrict var, float *restrict accum,
                       const float *restrict grad, size_t n, float lr)
{
    /* accum += grad.square(); var -= grad * lr * accum.rsqrt() */
    for (size_t i = 0; i < n; i++) {
        float a = accum[i] + grad[i] * grad[i];
        accum[i] = a;
        var[i] = var[i] - grad[i] * lr * (1.0f / sqrtf(a));
    }
}

void rf_kernel_adam(float *restrict var, float *restrict m, float *restrict v,
                    const float *restrict grad, size_t n, float lr, float beta1,
                    float beta2, float epsilon, float beta1_power,
                    float beta2_power)
{
    /* alpha = lr * sqrt(1 - beta2_power) / (1 - beta1_power)  (scalar, once)
     * m += (grad - m) * (1 - beta1)
     * v += (grad.square() - v) * (1 - beta2)
     * var -= (m * alpha) / (v.sqrt() + epsilon) */
    const float alpha = rf_adam_alpha(lr, beta1_power, beta2_power);
    const float one_minus_beta1 = 1.0f - beta1;
    const float one_minus_beta2 = 1.0f - beta2;
    for (size_t i = 0; i < n; i++) {
        float g = grad[i];
        float mi = m[i] + (g - m[i]) * one_minus_beta1;
        float vi = v[i] + (g * g - v[i]) * one_minus_beta2;
        m[i] = mi;
        v[i] = vi;
        var[i] = rf_adam_var_step(var[i], mi, vi, alpha, epsilon);
    }
}

void rf_kernel_rmsprop(float *restrict var, float *restrict ms,
                       float *restrict mom, const float *restrict grad,
                       size_t n, float lr, float rho, float momentum,
                       float epsilon)
{
    /* ms += (grad.square() - ms) * (1 - rho)
     * mom = mom * momentum + (grad * lr) / (ms + epsilon).sqrt()
     * var -= mom */
    const float one_minus_rho = 1.0f - rho;
    for (size_t i = 0; i < n; i++) {
        float g = grad[i];
        float s = ms[i] + (g * g - ms[i]) * one_minus_rho;
        float mo = mom[i] * momentum + (g * lr) / sqrtf(s + epsilon);
        ms[i] = s;
        mom[i] = mo;
        var[i] = var[i] - mo;
    }
}

void rf_kernel_centered_rmsprop(float *restrict var, float *restrict mg,
                                float *restrict ms, float *restrict mom,
                                const float *restrict grad, size_t n, float lr,
                                float rho, float momentum, float epsilon)
{
    /* ms += (grad.square() - ms) * (1 - rho)
     * mg += (grad - mg) * (1 - rho)
     * denom = (ms - mg.square()) + epsilon
     * mom = mom * momentum + (grad * lr) / denom.sqrt()
     * var -= mom */
    const float one_minus_rho = 1.0f - rho;
    for (size_t i = 0; i < n; i++) {
        float g = grad[i];
        float s = ms[i] + (g * g - ms[i]) * one_minus_rho;
        float a = mg[i] + (g - mg[i]) * one_minus_rho;
        float denom = (s - a * a) + epsilon;
        float mo = mom[i] * momentum + (g * lr) / sqrtf(denom);
        ms[i] = s;
        mg[i] = a;
        mom[i] = mo;
        var[i] = var[i] - mo;
    }
}

void rf_kernel_ftrl(float *restrict var, float *restrict accum,
                    float *restrict linear, const float *restrict grad,
                    size_t n, float lr, float lr_power, float l1, float l2,
                    float l2_shrinkage)
{
    /* [V2: grad_with_shrinkage = grad + 2 * l2_shrinkage * var]
     * new_accum = accum + grad * grad
     * linear += grad_with_shrinkage
     *           - (new_accum^p - accum^p) / lr * var   (p = -lr_power)
     * x = l1 * sign(linear) - linear
     * y = new_accum^p / lr + 2 * l2
     * var = |linear| > l1 ? x / y : 0
     * accum += grad * grad */
    const bool v2 = l2_shrinkage > 0.0f; /* ftrl.py: apply_ftrl_v2 */
    const float two_shrinkage = 2.0f * l2_shrinkage;
    const float two_l2 = 2.0f * l2;
    for (size_t i = 0; i < n; i++) {
        const float g = grad[i], v = var[i], a = accum[i];
        const float g_lin = v2 ? g + two_shrinkage * v : g;
        const float new_a = a + g * g;
        const float new_pow = rf_ftrl_power(new_a, lr_power);
        const float l =
            linear[i] +
            (g_lin - (new_pow - rf_ftrl_power(a, lr_power)) / lr * v);
        const float sign = l > 0.0f ? 1.0f : l < 0.0f ? -1.0f : 0.0f;
        const float x = l1 * sign - l;
        const float y = new_pow / lr + two_l2;
        linear[i] = l;
        var[i] = fabsf(l) > l1 ? x / y : 0.0f;
        accum[i] = new_a;
    }
}
