/* rdmaflow/optim.h: TensorFlow 1.x optimizers (tf.train.*Optimizer) as pure
 * kernels over contiguous float arrays: the description of an optimizer and
 * its hyper-parameters with TensorFlow's defaults, the slot layout each one
 * needs beside a variable, the shared non-slot scalars (Adam's beta powers),
 * and the update kernels the ps (on RDMA-registered shards) and the worker
 * (apply=worker mode) run. The kernels allocate nothing, keep no state and
 * give bitwise identical results for identical inputs on every machine. */
#ifndef RDMAFLOW_OPTIM_H
#define RDMAFLOW_OPTIM_H

#include "rdmaflow/api.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmaflow/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rf_optimizer_kind {
    RF_OPTIM_SGD = 0,  /* GradientDescentOptimizer */
    RF_OPTIM_MOMENTUM, /* MomentumOptimizer (optionally Nesterov) */
    RF_OPTIM_ADAGRAD,  /* AdagradOptimizer */
    RF_OPTIM_ADAM,     /* AdamOptimizer */
    RF_OPTIM_RMSPROP,  /* RMSPropOptimizer (optionally centered) */
    RF_OPTIM_FTRL,     /* FtrlOptimizer (optionally with L2 shrinkage) */
} rf_optimizer_kind;

#define RF_OPTIM_KIND_COUNT 6

/* Hyper-parameters. Each kind reads only its own fields; the others are
 * ignored (and left at their defaults). Values are float because TensorFlow
 * casts every hyper-parameter to the variable's dtype before the kernel. */
typedef struct rf_optim_config {
    rf_optimizer_kind kind;
    float learning_rate;             /* all kinds */
    float momentum;                  /* MOMENTUM, RMSPROP */
    bool use_nesterov;               /* MOMENTUM */
    float initial_accumulator_value; /* ADAGRAD, FTRL */
    float beta1, beta2;              /* ADAM */
    float epsilon;                   /* ADAM, RMSPROP */
    float decay;                     /* RMSPROP (the kernel's rho) */
    bool centered;                   /* RMSPROP */
    /* FTRL (l2_shrinkage_regularization_strength > 0: ApplyFtrlV2) */
    float learning_rate_power;
    float l1_regularization_strength;
    float l2_regularization_strength;
    float l2_shrinkage_regularization_strength;
} rf_optim_config;

/* TensorFlow's defaults for kind:
 *   sgd       learning_rate required
 *   momentum  learning_rate and momentum required, use_nesterov false
 *   adagrad   learning_rate required, initial_accumulator_value 0.1
 *   adam      learning_rate 0.001, beta1 0.9, beta2 0.999, epsilon 1e-8
 *   rmsprop   learning_rate required, decay 0.9, momentum 0.0,
 *             epsilon 1e-10, centered false
 *   ftrl      learning_rate required, learning_rate_power -0.5,
 *             initial_accumulator_value 0.1, l1_regularization_strength 0,
 *             l2_regularization_strength 0,
 *             l2_shrinkage_regularization_strength 0
 * A value TensorFlow requires (it has no default) is set to NaN and
 * rf_optim_validate() rejects it until the caller sets it. Returns
 * RF_ERR_INVALID_ARG for an unknown kind or a NULL cfg. */
RF_API rf_status rf_optim_defaults(rf_optimizer_kind kind,
                                   rf_optim_config *cfg);

/* Checks that every hyper-parameter the kind uses is set and in range:
 * learning_rate finite and >= 0; momentum in [0, 1]; beta1, beta2 in [0, 1);
 * epsilon finite and >= 0; decay in [0, 1]; initial_accumulator_value finite
 * and > 0 (TensorFlow's own ValueError); for ftrl learning_rate > 0 (the
 * kernel's "lr is not a positive scalar"), learning_rate_power finite and
 * <= 0, the three regularization strengths finite and >= 0 (FtrlOptimizer's
 * ValueErrors). RF_ERR_INVALID_ARG with a message naming the optimizer and
 * the field otherwise. */
RF_API rf_status rf_optim_validate(const rf_optim_config *cfg);

/* "sgd", "momentum", "adagrad", "adam", "rmsprop", "ftrl"; "unknown"
 * otherwise. */
RF_API const char *rf_optim_kind_name(rf_optimizer_kind kind);

/* Parses a --optimizer value (exactly one of the names above, case
 * sensitive) and fills *cfg with that kind's defaults. RF_ERR_INVALID_ARG,
 * naming the value and listing the accepted names, otherwise. */
RF_API rf_status rf_optim_parse(const char *name, rf_optim_config *cfg);

/* Writes a one-line description such as
 * "adam(learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08)" for logs
 * and --explain; returns what snprintf would (the full length). */
RF_API int rf_optim_format(const rf_optim_config *cfg, char *buf, size_t len);

/* ---- Slot layout ------------------------------------------------------ */

#define RF_OPTIM_MAX_SLOTS 3

/* One float slot per variable element. */
typedef struct rf_optim_slot_info {
    const char *name;    /* TensorFlow's slot name (get_slot(var, name)) */
    float initial_value; /* every element starts at this value */
} rf_optim_slot_info;

/* The slots of an optimizer, in TensorFlow's creation order (_create_slots),
 * which is also the order of the slots array rf_optim_apply() takes:
 *   sgd       (none)
 *   momentum  "momentum" = 0
 *   adagrad   "accumulator" = initial_accumulator_value
 *   adam      "m" = 0, "v" = 0
 *   rmsprop   "rms" = 1.0, then "mg" = 0 only when centered, "momentum" = 0
 *   ftrl      "accum" = initial_accumulator_value, "linear" = 0
 * TensorFlow 1.x checkpoints name slot i of variable V "V/<Name>" for i = 0
 * and "V/<Name>_<i>" after, with <Name> the optimizer name ("Momentum",
 * "Adagrad", "Adam", "RMSProp", "Ftrl": "V/Ftrl" and "V/Ftrl_1"). */
typedef struct rf_optim_layout {
    unsigned num_slots;
    rf_optim_slot_info slots[RF_OPTIM_MAX_SLOTS];
    const char *tf_name;  /* default optimizer name: "GradientDescent", ... */
    unsigned num_scalars; /* shared non-slot scalars (2 for adam, else 0) */
} rf_optim_layout;

/* Fills *out for a valid config (RF_ERR_INVALID_ARG otherwise). */
RF_API rf_status rf_optim_layout_get(const rf_optim_config *cfg,
                                     rf_optim_layout *out);
/* The number of slots of kind (with centered for RMSProp) without a whole
 * config: for code that checks a layout it has not validated the
 * hyper-parameters of (the ps wire checks). UINT_MAX for an unknown kind. */
RF_API unsigned rf_optim_num_slots(rf_optimizer_kind kind, bool centered);

/* Sets the n elements of slot slot_index to its initial value. */
RF_API rf_status rf_optim_slot_init(const rf_optim_config *cfg,
                                    unsigned slot_index, float *slot, size_t n);

/* ---- Shared non-slot scalars ------------------------------------------ */

/* Adam's "beta1_power" and "beta2_power": one pair per optimizer (TensorFlow
 * colocates them with the first variable by name), read by every apply of a
 * step and advanced once per step, after all variables are updated, by
 * rf_optim_finish_step() (AdamOptimizer._finish). Unused by other kinds. */
typedef struct rf_optim_scalars {
    float beta1_power; /* starts at beta1 */
    float beta2_power; /* starts at beta2 */
} rf_optim_scalars;

/* Sets the scalars to their initial values (beta1, beta2 for adam; zero for
 * the others). */
RF_API rf_status rf_optim_scalars_init(const rf_optim_config *cfg,
                                       rf_optim_scalars *s);

/* Advances the scalars once: beta1_power *= beta1, beta2_power *= beta2 (in
 * float, as TensorFlow's assign). A no-op for kinds without scalars. */
RF_API rf_status rf_optim_finish_step(const rf_optim_config *cfg,
                                      rf_optim_scalars *s);

/* ---- Kernels ---------------------------------------------------------- */

/* Applies one dense update to var[0..n) with gradient grad[0..n):
 * slots[i] points to n floats of slot i of rf_optim_layout_get()'s order;
 * scalars is required for adam (and ignored, may be NULL, otherwise).
 * Exactly TensorFlow's training_ops.cc update rules:
 *   sgd       var -= grad * lr
 *   momentum  accum = accum * momentum + grad;
 *             var -= accum * lr, or with use_nesterov
 *             var -= grad * lr + accum * momentum * lr
 *   adagrad   accum += grad^2; var -= grad * lr * (1 / sqrt(accum))
 *   adam      lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power);
 *             m += (grad - m) * (1 - beta1); v += (grad^2 - v) * (1 - beta2);
 *             var -= m * lr_t / (sqrt(v) + epsilon)   (epsilon-hat form)
 *   rmsprop   ms += (grad^2 - ms) * (1 - decay);
 *             [centered: mg += (grad - mg) * (1 - decay);
 *              denom = ms - mg^2 + epsilon, else denom = ms + epsilon]
 *             mom = mom * momentum + grad * lr / sqrt(denom); var -= mom
 *   ftrl      ApplyFtrl, or ApplyFtrlV2 when l2_shrinkage > 0 (ftrl.py's
 *             choice), with p = -learning_rate_power (sqrt when p = 0.5):
 *             g' = grad [V2: grad + 2 * l2_shrinkage * var];
 *             new_accum = accum + grad^2;
 *             linear += g' - (new_accum^p - accum^p) / lr * var;
 *             var = |linear| > l1 ? (l1 * sign(linear) - linear) /
 *                   (new_accum^p / lr + 2 * l2) : 0;
 *             accum = new_accum
 * Elementwise in float with TensorFlow's operation order; var, slots and
 * grad must not overlap. n = 0 does nothing. RF_ERR_INVALID_ARG for an
 * invalid config, NULL arrays with n > 0, missing adam scalars or beta
 * powers outside [0, 1). */
RF_API rf_status rf_optim_apply(const rf_optim_config *cfg, float *var,
                                float *const *slots, const float *grad,
                                size_t n, const rf_optim_scalars *scalars);

/* ---- Sparse updates (embedding tables) -------------------------------- */

/* TF's _deduplicate_indexed_slices (optimizer.py): the unique indices of
 * indices[0..n) in order of first appearance (array_ops.unique), and for each
 * the sum of its rows of grad ([n, width] row-major) in order of appearance
 * (unsorted_segment_sum: the row starts at +0.0f and each row of grad is
 * added to it in turn, in float). Entries with index -1 are not part of the
 * variable (a part of a partitioned variable that another part's ids share
 * the tensor with) and are dropped. Writes *out_n unique indices to
 * out_indices and their summed rows to out_grad ([*out_n, width]); scratch
 * holds rf_optim_dedup_scratch_bytes(n) bytes, aligned for a size_t (an
 * open-addressing table: O(n) expected); allocates nothing. out_indices may
 * be indices and out_grad may be grad (deduplication in place); otherwise
 * no two arrays may overlap. grad and out_grad may be NULL when width is 0.
 * Any index < -1 is RF_ERR_INVALID_ARG naming its position and value, with
 * nothing written. */
RF_API size_t rf_optim_dedup_scratch_bytes(size_t n);
RF_API rf_status rf_optim_dedup(const int64_t *indices, size_t n,
                                const float *grad, size_t width, void *scratch,
                                int64_t *out_indices, float *out_grad,
                                size_t *out_n);

/* A sparse update of var ([rows, width] row-major) with the rows
 * grad[0..n) ([n, width]) for the rows indices[0..n), exactly as TF 1.x's
 * kernels do it: indices are applied in order, one after another (a repeated
 * index is updated twice, as the SparseApply* kernels and ScatterSub do;
 * optimizers deduplicate first with rf_optim_dedup, except SGD, whose
 * _apply_sparse_duplicate_indices does not). Index -1 is skipped (see
 * rf_optim_dedup); any other index outside [0, rows) is RF_ERR_INVALID_ARG
 * (TF's InvalidArgument "Index ... at offset ... in indices is out of range")
 * naming the position, the index and rows, with nothing updated (all indices
 * are checked before anything is touched). slots as rf_optim_apply (each
 * [rows, width]); scalars required for adam. width must be > 0 (TF's "Inner
 * dimension should be greater than zero"). The float operation order is that
 * of TF's sparse kernels, which is not always the dense one's:
 *   sgd       var[i] -= grad * lr                (ScatterSub of grad*lr)
 *   momentum  SparseApplyMomentum: accum = accum * momentum + grad;
 *             var -= lr * accum, or with use_nesterov
 *             var -= lr * grad + (lr * momentum) * accum
 *   adagrad   SparseApplyAdagrad: accum += grad^2;
 *             var -= lr * grad * (1 / sqrt(accum)) (width > 1), or
 *             var -= lr * grad / sqrt(accum)      (width 1: TF's scalar path)
 *   rmsprop   SparseApplyRMSProp: ms = ms * decay + grad^2 * (1 - decay);
 *             [centered, SparseApplyCenteredRMSProp:
 *              mg = mg * decay + grad * (1 - decay);
 *              denom = (ms + epsilon) - mg^2, else denom = ms + epsilon]
 *             mom = mom * momentum + (1 / sqrt(denom)) * lr * grad;
 *             var -= mom
 *   ftrl      SparseApplyFtrl / SparseApplyFtrlV2 (l2_shrinkage > 0): the
 *             dense formulas per row, but with width 1 TF's scalar path
 *             (FtrlCompute: the power always through pow, linear updated
 *             as (linear + g') - sigma * var)
 *   adam      AdamOptimizer._apply_sparse_shared (TF 1.x): m = m * beta1 and
 *             v = v * beta2 over ALL rows, scatter_add of grad * (1 - beta1)
 *             and (grad * grad) * (1 - beta2) into the rows, then
 *             var -= lr_t * m / (sqrt(v) + epsilon) over ALL rows (TF 1.x's
 *             rule: every row moves), lr_t as rf_optim_apply's; so n = 0
 *             still decays and moves every row
 * Where the formulas agree (sgd; momentum without Nesterov; adagrad and
 * ftrl with width > 1; adam's var step), a sparse apply touching every row
 * once in order gives bitwise rf_optim_apply's result. NULL arrays with a
 * non-zero size, overlapping arrays or an invalid config are
 * RF_ERR_INVALID_ARG. */
RF_API rf_status rf_optim_apply_sparse(const rf_optim_config *cfg, float *var,
                                       float *const *slots, size_t rows,
                                       size_t width, const int64_t *indices,
                                       size_t n, const float *grad,
                                       const rf_optim_scalars *scalars);

#ifdef __cplusplus
}
#endif
#endif
