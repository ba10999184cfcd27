/* optim/kernels_sparse.c: TensorFlow 1.x's sparse update rules, the CPU
 * kernels SparseApplyMomentum, SparseApplyAdagrad, SparseApplyRMSProp,
 * SparseApplyCenteredRMSProp and SparseApplyFtrl(V2) of
 * core/kernels/training_ops.cc, the ScatterSub
 * of GradientDescentOptimizer._apply_sparse_duplicate_indices and the
 * assign/scatter_add sequence of AdamOptimizer._apply_sparse_shared, as plain
 * loops over the indexed rows. Entries are applied in order, one after
 * another, so a repeated index is updated twice as TF does. Where TF's sparse
 * expression is its dense one, the row goes through the dense loop of
 * optim/kernels.c (one copy of each formula); where TF writes it differently
 * (Nesterov momentum, Adagrad's and FTRL's scalar paths, RMSProp), the
 * operand order here
 * is the sparse kernel's own. */
#include <math.h>

#include "optim/kernels.h"

void rf_sparse_sgd(float *restrict var, size_t width,
                   const int64_t *restrict indices, size_t n,
                   const float *restrict grad, float lr)
{
    /* var.scatter_sub(grad * lr): ScatterSub's row -= update */
    for (size_t i = 0; i < n; i++)
        if (indices[i] >= 0)
            rf_kernel_sgd(var + (size_t)indices[i] * width, grad + i * width,
                          width, lr);
}

void rf_sparse_momentum(float *restrict var, float *restrict accum,
                        size_t width, const int64_t *restrict indices, size_t n,
                        const float *restrict grad, float lr, float momentum,
                        bool use_nesterov)
{
    for (size_t i = 0; i < n; i++) {
        if (indices[i] < 0)
            continue;
        const size_t row = (size_t)indices[i] * width;
        const float *g = grad + i * width;
        if (!use_nesterov) {
            /* a = a * momentum + g; v -= lr * a: ApplyMomentum's floats */
            rf_kernel_momentum(var + row, accum + row, g, width, lr, momentum,
                               false);
            continue;
        }
        /* a = a * momentum + g; v -= lr * g + (lr * momentum) * a (the
         * dense kernel multiplies (a * momentum) * lr instead) */
        const float lr_momentum = lr * momentum;
        float *v = var + row, *a = accum + row;
        for (size_t j = 0; j < width; j++) {
            float aj = a[j] * momentum + g[j];
            a[j] = aj;
            v[j] = v[j] - (lr * g[j] + lr_momentum * aj);
        }
    }
}

void rf_sparse_adagrad(float *restrict var, float *restrict accum, size_t width,
                       const int64_t *restrict indices, size_t n,
                       const float *restrict grad, float lr)
{
    for (size_t i = 0; i < n; i++) {
        if (indices[i] < 0)
            continue;
        const size_t row = (size_t)indices[i] * width;
        if (width > 1) {
            /* a += g.square(); v -= lr * g * a.rsqrt(): ApplyAdagrad's */
            rf_kernel_adagrad(var + row, accum + row, grad + i * width, width,
                              lr);
        } else {
            /* TF's inner_dim == 1 path: a += g * g; v -= lr * g / sqrt(a) */
            const float g = grad[i];
            const float a = accum[row] + g * g;
            accum[row] = a;
            var[row] = var[row] - lr * g / sqrtf(a);
        }
    }
}

void rf_sparse_rmsprop(float *restrict var, float *restrict ms,
                       float *restrict mom, size_t width,
                       const int64_t *restrict indices, size_t n,
                       const float *restrict grad, float lr, float rho,
                       float momentum, float epsilon)
{
    /* ms = ms * rho + g.square() * (1 - rho)
     * mom = mom * momentum + (ms + epsilon).rsqrt() * lr * g
     * var -= mom */
    const float one_minus_rho = 1.0f - rho;
    for (size_t i = 0; i < n; i++) {
        if (indices[i] < 0)
            continue;
        const size_t row = (size_t)indices[i] * width;
        const float *g = grad + i * width;
        float *v = var + row, *s = ms + row, *mo = mom + row;
        for (size_t j = 0; j < width; j++) {
            float sj = s[j] * rho + (g[j] * g[j]) * one_minus_rho;
            float mj =
                mo[j] * momentum + (1.0f / sqrtf(sj + epsilon)) * lr * g[j];
            s[j] = sj;
            mo[j] = mj;
            v[j] = v[j] - mj;
        }
    }
}

void rf_sparse_centered_rmsprop(float *restrict var, float *restrict mg,
                                float *restrict ms, float *restrict mom,
                                size_t width, const int64_t *restrict indices,
                                size_t n, const float *restrict grad, float lr,
                                float rho, float momentum, float epsilon)
{
    /* ms = ms * rho + g.square() * (1 - rho)
     * mg = mg * rho + g * (1 - rho)
     * denom = ms + epsilon - mg.square()
     * mom = mom * momentum + denom.rsqrt() * lr * g
     * var -= mom */
    const float one_minus_rho = 1.0f - rho;
    for (size_t i = 0; i < n; i++) {
        if (indices[i] < 0)
            continue;
        const size_t row = (size_t)indices[i] * width;
        const float *g = grad + i * width;
        float *v = var + row, *s = ms + row, *a = mg + row, *mo = mom + row;
        for (size_t j = 0; j < width; j++) {
            float sj = s[j] * rho + (g[j] * g[j]) * one_minus_rho;
            float aj = a[j] * rho + g[j] * one_minus_rho;
            float denom = (sj + epsilon) - aj * aj;
            float mj = mo[j] * momentum + (1.0f / sqrtf(denom)) * lr * g[j];
            s[j] = sj;
            a[j] = aj;
            mo[j] = mj;
            v[j] = v[j] - mj;
        }
    }
}

void rf_sparse_ftrl(float *restrict var, float *restrict accum,
                    float *restrict linear, size_t width,
                    const int64_t *restrict indices, size_t n,
                    const float *restrict grad, float lr, float lr_power,
                    float l1, float l2, float l2_shrinkage)
{
    const bool v2 = l2_shrinkage > 0.0f; /* ftrl.py: sparse_apply_ftrl_v2 */
    const float two_shrinkage = 2.0f * l2_shrinkage;
    const float two_l2 = 2.0f * l2;
    for (size_t i = 0; i < n; i++) {
        if (indices[i] < 0)
            continue;
        const size_t row = (size_t)indices[i] * width;
        if (width > 1) {
            /* TF's Eigen path (COMPUTE_FTRL) is ApplyFtrl's expression but
             * for var = (clamp(linear, -l1, l1) - linear) / y in place of
             * the select, the same floats for any finite linear (only a NaN
             * linear gives NaN there and 0 here) */
            rf_kernel_ftrl(var + row, accum + row, linear + row,
                           grad + i * width, width, lr, lr_power, l1, l2,
                           l2_shrinkage);
            continue;
        }
        /* TF's inner_dim == 1 path:
         * g = grad [V2: grad + 2 * l2_shrinkage * var]
         * updated_a = a + grad * grad
         * sigma = (pow(updated_a, p) - pow(a, p)) / lr  (pow even for 0.5)
         * updated_l = l + g - sigma * var
         * var = FtrlCompute: (clamp(updated_l, -l1, l1) - updated_l) /
         *       (updated_a^p / lr + 2 * l2)  (sqrt there when p = 0.5) */
        const float gr = grad[i], v = var[row], a = accum[row];
        const float g = v2 ? gr + two_shrinkage * v : gr;
        const float updated_a = a + gr * gr;
        float sigma = powf(updated_a, -lr_power) - powf(a, -lr_power);
        sigma = sigma / lr;
        const float updated_l = linear[row] + g - sigma * v;
        const float quadratic =
            rf_ftrl_power(updated_a, lr_power) / lr + two_l2;
        /* std::max(std::min(updated_l, l1), -l1), zeros' signs included */
        const float lo = l1 < updated_l ? l1 : updated_l;
        const float adjust = lo < -l1 ? -l1 : lo;
        var[row] = (adjust - updated_l) / quadratic;
        accum[row] = updated_a;
        linear[row] = updated_l;
    }
}

/* slot = slot * decay over all elements (state_ops.assign(m, m * beta1)). */
static void decay_all(float *restrict slot, size_t count, float decay)
{
    for (size_t k = 0; k < count; k++)
        slot[k] = slot[k] * decay;
}

void rf_sparse_adam(float *restrict var, float *restrict m, float *restrict v,
                    size_t rows, size_t width, const int64_t *restrict indices,
                    size_t n, const float *restrict grad, float lr, float beta1,
                    float beta2, float epsilon, float beta1_power,
                    float beta2_power)
{
    const size_t count = rows * width;
    const float one_minus_beta1 = 1.0f - beta1;
    const float one_minus_beta2 = 1.0f - beta2;
    /* m_t = assign(m, m * beta1); scatter_add(m, indices, g * (1 - beta1)) */
    decay_all(m, count, beta1);
    for (size_t i = 0; i < n; i++) {
        if (indices[i] < 0)
            continue;
        float *mr = m + (size_t)indices[i] * width;
        const float *g = grad + i * width;
        for (size_t j = 0; j < width; j++)
            mr[j] = mr[j] + g[j] * one_minus_beta1;
    }
    /* v_t = assign(v, v * beta2); scatter_add(v, indices,
     * (g * g) * (1 - beta2)) */
    decay_all(v, count, beta2);
    for (size_t i = 0; i < n; i++) {
        if (indices[i] < 0)
            continue;
        float *vr = v + (size_t)indices[i] * width;
        const float *g = grad + i * width;
        for (size_t j = 0; j < width; j++)
            vr[j] = vr[j] + (g[j] * g[j]) * one_minus_beta2;
    }
    /* assign_sub(var, lr * m_t / (sqrt(v_t) + epsilon)) over every row */
    const float alpha = rf_adam_alpha(lr, beta1_power, beta2_power);
    for (size_t k = 0; k < count; k++)
        var[k] = rf_adam_var_step(var[k], m[k], v[k], alpha, epsilon);
}
