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

/* The state of one rf_apply_gradients call. */
typedef struct apply_ctx {
    rf_graph *g;
    const rf_optim_config *cfg;
    rf_optim_layout lay;
    const char *opt; /* the optimizer's name scope */
    rf_node *const *vars, *const *grads;
    size_t n;
    size_t live;        /* variables with a gradient */
    rf_node *first;     /* of those, the first by name */
    rf_node *b1p, *b2p; /* Adam's beta powers */
    rf_node **slots;    /* per variable, RF_OPTIM_MAX_SLOTS entries */
    rf_node **applies;  /* the apply ops, then Adam's finish */
    size_t na;
    rf_node **in;      /* one apply op's inputs */
    const char *scope; /* the optimizer's scope, as pushed */
} apply_ctx;

/* Every variable a float32 variable of this graph, every gradient of this
 * graph; counts the variables with a gradient and finds the first of them
 * by name. */
static rf_status check_vars_and_grads(apply_ctx *c)
{
    for (size_t i = 0; i < c->n; i++) {
        rf_node *var = c->vars[i];
        if (!var || var->graph != c->g || var->op != RF_OP_VARIABLE ||
            var->dtype != RF_F32)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "rf_apply_gradients: vars[%zu] is not a "
                                "float32 variable of this graph",
                                i);
        if (!c->grads[i])
            continue;
        if (c->grads[i]->graph != c->g)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "rf_apply_gradients: grads[%zu] is foreign", i);
        c->live++;
        if (!c->first || strcmp(var->name, c->first->name) < 0)
            c->first = var;
    }
    if (c->live == 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "No gradients provided for any variable");
    return RF_OK;
}

/* Adam's non-slot variables, colocated with the first variable by name. */
static rf_status create_beta_powers(apply_ctx *c)
{
    rf_graph *g = c->g;
    rf_optim_scalars sc;
    rf_optim_scalars_init(c->cfg, &sc);
    rf_status st = rf_colocation_push(g, c->first);
    if (st != RF_OK)
        return st;
    c->b1p = top_level_variable(g, RF_SCALAR, sc.beta1_power, "beta1_power");
    c->b2p = top_level_variable(g, RF_SCALAR, sc.beta2_power, "beta2_power");
    rf_colocation_pop(g);
    if (!c->b1p || !c->b2p)
        return fail(g, RF_OK);
    return RF_OK;
}

/* Each variable's slots ("<var>/<Name>"), colocated with the variable. */
static rf_status create_slots(apply_ctx *c)
{
    rf_graph *g = c->g;
    rf_status st;
    for (size_t i = 0; i < c->n; i++) {
        rf_node *var = c->vars[i];
        if (!c->grads[i])
            continue;
        if ((st = rf_colocation_push(g, var)) != RF_OK)
            return st;
        for (unsigned s = 0; s < c->lay.num_slots; s++) {
            char sname[1024];
            snprintf(sname, sizeof sname, "%s/%s", var->name, c->opt);
            rf_node *sv = top_level_variable(
                g, var->shape, c->lay.slots[s].initial_value, sname);
            if (!sv) {
                rf_colocation_pop(g);
                return fail(g, RF_OK);
            }
            sv->var->slot_primary = var;
            snprintf(sv->var->slot_name, sizeof sv->var->slot_name, "%s",
                     c->lay.slots[s].name);
            c->slots[i * RF_OPTIM_MAX_SLOTS + s] = sv;
        }
        rf_colocation_pop(g);
    }
    return RF_OK;
}

/* Variable i's ApplyX (or SparseApplyX for an IndexedSlices gradient) in
 * "<Name>/update_<var>/", colocated with the variable. */
static rf_status create_apply(apply_ctx *c, size_t i, const rf_attrs *a)
{
    rf_graph *g = c->g;
    rf_node *var = c->vars[i], *grad = c->grads[i];
    char sc[sizeof g->scope + 16];
    snprintf(sc, sizeof sc, "%s/update_%s/", c->scope, var->name);
    rf_status st = rf_name_scope_push(g, sc);
    if (st != RF_OK)
        return st;
    if ((st = rf_colocation_push(g, var)) != RF_OK) {
        rf_name_scope_pop(g);
        return st;
    }
    /* an IndexedSlices gradient: (var, indices, values, slots...) */
    bool sparse = rf_node_is_indexed_slices(grad);
    rf_node **in = c->in;
    size_t k = 0;
    in[k++] = var;
    if (sparse)
        in[k++] = rf_indexed_slices_indices(grad);
    in[k++] = grad;
    for (unsigned s = 0; s < c->lay.num_slots; s++)
        in[k++] = c->slots[i * RF_OPTIM_MAX_SLOTS + s];
    if (c->b1p) {
        in[k++] = c->b1p;
        in[k++] = c->b2p;
    }
    rf_node *ap = sparse ? node_create(g, RF_OP_SPARSE_APPLY_OPTIMIZER,
                                       sparse_apply_op_name(c->cfg), in, k, a)
                         : node_create(g, RF_OP_APPLY_OPTIMIZER,
                                       apply_op_name(c->cfg), in, k, a);
    rf_colocation_pop(g);
    rf_name_scope_pop(g);
    if (!ap)
        return fail(g, RF_OK);
    c->applies[c->na++] = ap;
    return RF_OK;
}

/* _finish: Adam advances its beta powers after every apply. */
static rf_status create_finish(apply_ctx *c, const rf_attrs *a)
{
    rf_graph *g = c->g;
    rf_node *bp[2] = {c->b1p, c->b2p};
    rf_status st = rf_control_dependencies_push(g, c->applies, c->na);
    if (st != RF_OK)
        return st;
    rf_colocation_push(g, c->b1p);
    rf_node *fin =
        node_create(g, RF_OP_OPTIMIZER_FINISH, "update_beta_powers", bp, 2, a);
    rf_colocation_pop(g);
    rf_control_dependencies_pop(g);
    if (!fin)
        return fail(g, RF_OK);
    c->applies[c->na++] = fin;
    return RF_OK;
}

/* The update ops, inside the optimizer's name scope: the applies, Adam's
 * finish, and the constant 1 that global_step is advanced by. */
static rf_status create_updates(apply_ctx *c, rf_node *global_step,
                                rf_node **one)
{
    rf_graph *g = c->g;
    rf_attrs a;
    memset(&a, 0, sizeof a);
    a.optim = c->cfg;
    a.num_slots = c->lay.num_slots;
    rf_status st = RF_OK;
    for (size_t i = 0; i < c->n && st == RF_OK; i++)
        if (c->grads[i])
            st = create_apply(c, i, &a);
    if (st == RF_OK && c->b1p)
        st = create_finish(c, &a);
    if (st == RF_OK && global_step) {
        int64_t v64 = 1;
        int32_t v32 = 1;
        *one =
            rf_const(g, global_step->dtype, RF_SCALAR,
                     global_step->dtype == RF_I64 ? (void *)&v64 : (void *)&v32,
                     "value");
        if (!*one)
            st = fail(g, RF_OK);
    }
    return st;
}

/* The train op: a NoOp "<Name>" grouping the updates, or, with a
 * global_step, the AssignAdd "<Name>" after the group "<Name>/update". */
static rf_status create_train_op(apply_ctx *c, rf_node *global_step,
                                 rf_node *one, rf_node **train_op)
{
    rf_graph *g = c->g;
    rf_status st = RF_OK;
    char exact[sizeof g->scope + 2];
    snprintf(exact, sizeof exact, "%s/", c->scope);
    if (!global_step) {
        rf_node *grp = rf_no_op(g, c->applies, c->na, exact);
        if (!grp)
            return fail(g, RF_OK);
        *train_op = grp;
        return RF_OK;
    }
    char upd[sizeof g->scope + 16];
    snprintf(upd, sizeof upd, "%s/update/", c->scope);
    rf_node *grp = rf_no_op(g, c->applies, c->na, upd);
    if (!grp || (st = rf_control_dependencies_push(g, &grp, 1)) != RF_OK)
        return fail(g, st);
    rf_colocation_push(g, global_step);
    rf_node *inc = rf_assign_add(g, global_step, one, exact);
    rf_colocation_pop(g);
    rf_control_dependencies_pop(g);
    if (!inc)
        return fail(g, RF_OK);
    *train_op = inc;
    return RF_OK;
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
    apply_ctx c = {.g = g, .cfg = cfg, .vars = vars, .grads = grads, .n = n};
    if ((st = rf_optim_layout_get(cfg, &c.lay)) != RF_OK)
        return st;
    c.opt = name ? name : c.lay.tf_name;
    if ((st = check_vars_and_grads(&c)) != RF_OK)
        return st;
    if (global_step &&
        (global_step->op != RF_OP_VARIABLE || global_step->shape.rank != 0 ||
         (global_step->dtype != RF_I64 && global_step->dtype != RF_I32)))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_apply_gradients: global_step '%s' must be an "
                            "integer scalar variable",
                            global_step->name);

    /* _create_slots: Adam's beta powers first, then each variable's slots */
    if (cfg->kind == RF_OPTIM_ADAM && (st = create_beta_powers(&c)) != RF_OK)
        return st;
    c.slots = gcalloc(n * RF_OPTIM_MAX_SLOTS + 1, sizeof *c.slots);
    c.applies = gcalloc(c.live + 2, sizeof *c.applies);
    c.in = gcalloc(5 + RF_OPTIM_MAX_SLOTS, sizeof *c.in);
    if (!c.slots || !c.applies || !c.in) {
        st = rf_error_set(RF_ERR_NO_MEMORY, "rf_apply_gradients: no memory");
        goto out;
    }
    if ((st = create_slots(&c)) != RF_OK)
        goto out;

    if ((st = rf_name_scope_push(g, c.opt)) != RF_OK)
        goto out;
    char scope[sizeof g->scope];
    memcpy(scope, g->scope, sizeof scope);
    c.scope = scope;
    rf_node *one = NULL;
    st = create_updates(&c, global_step, &one);
    rf_name_scope_pop(g);
    if (st == RF_OK)
        st = create_train_op(&c, global_step, one, train_op);
out:
    gfree(c.slots);
    gfree(c.applies);
    gfree(c.in);
    return st;
}

rf_status rf_minimize(rf_graph *g, const rf_optim_config *cfg, rf_node *loss,
                      rf_node *global_step, rf_node **train_op)
{
    if (!g || !cfg || !loss || !train_op)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_minimize: NULL argument");
    size_t n = rf_graph_trainable_variables(g, NULL, 0);
    rf_node **vars = gcalloc(n + 1, sizeof *vars);
    rf_node **grads = gcalloc(n + 1, sizeof *grads);
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
    gfree(vars);
    gfree(grads);
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
