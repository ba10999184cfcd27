/* graph/minimize.c: tf.train.Optimizer.minimize / apply_gradients. Creates
 * the slot variables ("<var>/<Name>", "<var>/<Name>_1", colocated with the
 * variable), Adam's non-slot "beta1_power"/"beta2_power" (colocated with the
 * variable first by name), one ApplyX op per variable in
 * "<Name>/update_<var>/", Adam's finish op after all applies, and the
 * AssignAdd of global_step named "<Name>", as TensorFlow 1.x does. */
#include <stdio.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "rdmaflow/status.h"

static const char *apply_op_name(const rf_optim_config *cfg)
{
    switch (cfg->kind) {
    case RF_OPTIM_SGD:
        return "ApplyGradientDescent";
    case RF_OPTIM_MOMENTUM:
        return "ApplyMomentum";
    case RF_OPTIM_ADAGRAD:
        return "ApplyAdagrad";
    case RF_OPTIM_ADAM:
        return "ApplyAdam";
    case RF_OPTIM_RMSPROP:
        return cfg->centered ? "ApplyCenteredRMSProp" : "ApplyRMSProp";
    case RF_OPTIM_FTRL: /* ftrl.py's _apply_dense */
        return cfg->l2_shrinkage_regularization_strength > 0.0f ? "ApplyFtrlV2"
                                                                : "ApplyFtrl";
    }
    return "ApplyOptimizer";
}

/* The sparse op TF 1.x runs for an IndexedSlices gradient (Adam's
 * _apply_sparse_shared is a group of scatter ops in TF: rdmaflow's name). */
static const char *sparse_apply_op_name(const rf_optim_config *cfg)
{
    switch (cfg->kind) {
    case RF_OPTIM_SGD:
        return "ScatterSub";
    case RF_OPTIM_MOMENTUM:
        return "SparseApplyMomentum";
    case RF_OPTIM_ADAGRAD:
        return "SparseApplyAdagrad";
    case RF_OPTIM_ADAM:
        return "SparseApplyAdam";
    case RF_OPTIM_RMSPROP:
        return cfg->centered ? "SparseApplyCenteredRMSProp"
                             : "SparseApplyRMSProp";
    case RF_OPTIM_FTRL: /* ftrl.py's _apply_sparse */
        return cfg->l2_shrinkage_regularization_strength > 0.0f
                   ? "SparseApplyFtrlV2"
                   : "SparseApplyFtrl";
    }
    return "SparseApplyOptimizer";
}

/* A non-trainable float variable created at the top level (variable
 * scopes, not name scopes, name variables in TF). */
static rf_node *top_level_variable(rf_graph *g, rf_shape shape, float init,
                                   const char *name)
{
    char saved[sizeof g->scope];
    memcpy(saved, g->scope, sizeof saved);
    g->scope[0] = '\0';
    rf_node *v = rf_variable(g, RF_F32, shape, rf_init_constant(init), name);
    memcpy(g->scope, saved, sizeof saved);
    if (v)
        v->var->trainable = false;
    return v;
}

static rf_status fail(rf_graph *g, rf_status st)
{
    if (g->err != RF_OK)
        return rf_error_set(g->err, "%s", g->errmsg);
    return st != RF_OK ? st : RF_ERR_INVALID_ARG;
}

rf_status rf_apply_gradients(rf_graph *g, const rf_optim_config *cfg,
                             rf_node *const *vars, rf_node *const *grads,
                             size_t n, rf_node *global_step, const char *name,
                             rf_node **train_op)
{
    if (!g || !cfg || !train_op || (n && (!vars || !grads)))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_apply_gradients: NULL argument");
    if (g->err != RF_OK)
        return rf_error_set(g->err, "rf_apply_gradients: earlier error: %s",
                            g->errmsg);
    rf_status st = rf_optim_validate(cfg);
    if (st != RF_OK)
        return st;
    rf_optim_layout lay;
    if ((st = rf_optim_layout_get(cfg, &lay)) != RF_OK)
        return st;
    const char *opt = name ? name : lay.tf_name;
    size_t live = 0;
    rf_node *first = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!vars[i] || vars[i]->graph != g || vars[i]->op != RF_OP_VARIABLE ||
            vars[i]->dtype != RF_F32)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "rf_apply_gradients: vars[%zu] is not a "
                                "float32 variable of this graph",
                                i);
        if (!grads[i])
            continue;
        if (grads[i]->graph != g)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "rf_apply_gradients: grads[%zu] is foreign", i);
        live++;
        if (!first || strcmp(vars[i]->name, first->name) < 0)
            first = vars[i];
    }
    if (live == 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "No gradients provided for any variable");
    if (global_step &&
        (global_step->op != RF_OP_VARIABLE || global_step->shape.rank != 0 ||
         (global_step->dtype != RF_I64 && global_step->dtype != RF_I32)))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_apply_gradients: global_step '%s' must be an "
                            "integer scalar variable",
                            global_step->name);

    /* _create_slots: Adam's beta powers first, then each variable's slots */
    rf_node *b1p = NULL, *b2p = NULL;
    if (cfg->kind == RF_OPTIM_ADAM) {
        rf_optim_scalars sc;
        rf_optim_scalars_init(cfg, &sc);
        if ((st = rf_colocation_push(g, first)) != RF_OK)
            return st;
        b1p = top_level_variable(g, RF_SCALAR, sc.beta1_power, "beta1_power");
        b2p = top_level_variable(g, RF_SCALAR, sc.beta2_power, "beta2_power");
        rf_colocation_pop(g);
        if (!b1p || !b2p)
            return fail(g, RF_OK);
    }
    rf_node **slots = rf_gcalloc(n * RF_OPTIM_MAX_SLOTS + 1, sizeof *slots);
    rf_node **applies = rf_gcalloc(live + 2, sizeof *applies);
    rf_node **in = rf_gcalloc(5 + RF_OPTIM_MAX_SLOTS, sizeof *in);
    if (!slots || !applies || !in) {
        st = rf_error_set(RF_ERR_NO_MEMORY, "rf_apply_gradients: no memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if (!grads[i])
            continue;
        if ((st = rf_colocation_push(g, vars[i])) != RF_OK)
            goto out;
        for (unsigned s = 0; s < lay.num_slots; s++) {
            char sname[1024];
            snprintf(sname, sizeof sname, "%s/%s", vars[i]->name, opt);
            rf_node *sv = top_level_variable(g, vars[i]->shape,
                                             lay.slots[s].initial_value, sname);
            if (!sv) {
                rf_colocation_pop(g);
                st = fail(g, RF_OK);
                goto out;
            }
            sv->var->slot_primary = vars[i];
            snprintf(sv->var->slot_name, sizeof sv->var->slot_name, "%s",
                     lay.slots[s].name);
            slots[i * RF_OPTIM_MAX_SLOTS + s] = sv;
        }
        rf_colocation_pop(g);
    }

    /* the update ops */
    if ((st = rf_name_scope_push(g, opt)) != RF_OK)
        goto out;
    char scope[sizeof g->scope];
    memcpy(scope, g->scope, sizeof scope);
    rf_attrs a;
    memset(&a, 0, sizeof a);
    a.optim = cfg;
    a.num_slots = lay.num_slots;
    size_t na = 0;
    for (size_t i = 0; i < n && st == RF_OK; i++) {
        if (!grads[i])
            continue;
        char sc[sizeof g->scope + 16];
        snprintf(sc, sizeof sc, "%s/update_%s/", scope, vars[i]->name);
        if ((st = rf_name_scope_push(g, sc)) != RF_OK)
            break;
        if ((st = rf_colocation_push(g, vars[i])) != RF_OK) {
            rf_name_scope_pop(g);
            break;
        }
        /* an IndexedSlices gradient: (var, indices, values, slots...) */
        bool sparse = rf_node_is_indexed_slices(grads[i]);
        size_t k = 0;
        in[k++] = vars[i];
        if (sparse)
            in[k++] = rf_indexed_slices_indices(grads[i]);
        in[k++] = grads[i];
        for (unsigned s = 0; s < lay.num_slots; s++)
            in[k++] = slots[i * RF_OPTIM_MAX_SLOTS + s];
        if (b1p) {
            in[k++] = b1p;
            in[k++] = b2p;
        }
        rf_node *ap = sparse
                          ? rf_node_create(g, RF_OP_SPARSE_APPLY_OPTIMIZER,
                                           sparse_apply_op_name(cfg), in, k, &a)
                          : rf_node_create(g, RF_OP_APPLY_OPTIMIZER,
                                           apply_op_name(cfg), in, k, &a);
        rf_colocation_pop(g);
        rf_name_scope_pop(g);
        if (!ap)
            st = fail(g, RF_OK);
        else
            applies[na++] = ap;
    }
    /* _finish: Adam advances its beta powers after every apply */
    if (st == RF_OK && b1p) {
        rf_node *bp[2] = {b1p, b2p};
        if ((st = rf_control_dependencies_push(g, applies, na)) == RF_OK) {
            rf_colocation_push(g, b1p);
            rf_node *fin = rf_node_create(g, RF_OP_OPTIMIZER_FINISH,
                                          "update_beta_powers", bp, 2, &a);
            rf_colocation_pop(g);
            rf_control_dependencies_pop(g);
            if (!fin)
                st = fail(g, RF_OK);
            else
                applies[na++] = fin;
        }
    }
    rf_node *one = NULL;
    if (st == RF_OK && global_step) {
        int64_t v64 = 1;
        int32_t v32 = 1;
        one =
            rf_const(g, global_step->dtype, RF_SCALAR,
                     global_step->dtype == RF_I64 ? (void *)&v64 : (void *)&v32,
                     "value");
        if (!one)
            st = fail(g, RF_OK);
    }
    rf_name_scope_pop(g);
    if (st != RF_OK)
        goto out;
    char exact[sizeof g->scope + 2];
    snprintf(exact, sizeof exact, "%s/", scope);
    if (!global_step) {
        rf_node *grp = rf_no_op(g, applies, na, exact);
        if (!grp) {
            st = fail(g, RF_OK);
            goto out;
        }
        *train_op = grp;
        goto out;
    }
    char upd[sizeof g->scope + 16];
    snprintf(upd, sizeof upd, "%s/update/", scope);
    rf_node *grp = rf_no_op(g, applies, na, upd);
    if (!grp || (st = rf_control_dependencies_push(g, &grp, 1)) != RF_OK) {
        st = fail(g, st);
        goto out;
    }
    rf_colocation_push(g, global_step);
    rf_node *inc = rf_assign_add(g, global_step, one, exact);
    rf_colocation_pop(g);
    rf_control_dependencies_pop(g);
    if (!inc) {
        st = fail(g, RF_OK);
        goto out;
    }
    *train_op = inc;
out:
    rf_gfree(slots);
    rf_gfree(applies);
    rf_gfree(in);
    return st;
}

rf_status rf_minimize(rf_graph *g, const rf_optim_config *cfg, rf_node *loss,
                      rf_node *global_step, rf_node **train_op)
{
    if (!g || !cfg || !loss || !train_op)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_minimize: NULL argument");
    size_t n = rf_graph_trainable_variables(g, NULL, 0);
    rf_node **vars = rf_gcalloc(n + 1, sizeof *vars);
    rf_node **grads = rf_gcalloc(n + 1, sizeof *grads);
    rf_status st = RF_OK;
    if (!vars || !grads) {
        st = rf_error_set(RF_ERR_NO_MEMORY, "rf_minimize: no memory");
        goto out;
    }
    rf_graph_trainable_variables(g, vars, n);
    /* only float variables are trained */
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (vars[i]->dtype == RF_F32)
            vars[m++] = vars[i];
    if ((st = rf_gradients(g, loss, vars, m, grads)) != RF_OK)
        goto out;
    st =
        rf_apply_gradients(g, cfg, vars, grads, m, global_step, NULL, train_op);
out:
    rf_gfree(vars);
    rf_gfree(grads);
    return st;
}

rf_status rf_node_apply_info(const rf_node *apply, rf_apply_info *out)
{
    if (!apply || !out ||
        (apply->op != RF_OP_APPLY_OPTIMIZER &&
         apply->op != RF_OP_SPARSE_APPLY_OPTIMIZER))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_node_apply_info: not an apply op");
    memset(out, 0, sizeof *out);
    /* the sparse layout has the gradient in two: indices, values */
    size_t s0 = 2;
    out->cfg = apply->optim;
    out->var = apply->inputs[0];
    out->grad = apply->inputs[1];
    if (apply->op == RF_OP_SPARSE_APPLY_OPTIMIZER) {
        out->sparse = true;
        out->indices = apply->inputs[1];
        out->values = out->grad = apply->inputs[2];
        s0 = 3;
    }
    out->num_slots = apply->attr.num_slots;
    for (unsigned s = 0; s < out->num_slots; s++)
        out->slots[s] = apply->inputs[s0 + s];
    if (apply->n_inputs >= s0 + 2 + out->num_slots) {
        out->beta1_power = apply->inputs[s0 + out->num_slots];
        out->beta2_power = apply->inputs[s0 + 1 + out->num_slots];
    }
    return RF_OK;
}
