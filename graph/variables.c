/* graph/variables.c: the variable store. Each Variable node owns a value
 * buffer (64-byte aligned) unless the distributed runtime pointed it at
 * external storage (rf_variable_set_storage); initializers (zeros, constant,
 * uniform, truncated normal, glorot_uniform) draw each row (index along
 * axis 0 of the whole variable; a scalar is one row) from its own
 * xoshiro256** stream seeded from the variable's seed and the row, so
 * values depend only on the seeds and the variable's name, any range of
 * rows can be generated alone (rf_variable_initialize_rows: the session
 * initialises tables on the ps in chunks), and a part of a partitioned
 * variable gets its slice of what the whole gets. */
#include <math.h>
#include <string.h>

#include "graph/data/rng.h"
#include "graph/graph_internal.h"
#include "rdmaflow/status.h"

rf_initializer rf_init_zeros(void)
{
    rf_initializer i = {RF_INIT_ZEROS, 0, 0, 0};
    return i;
}

rf_initializer rf_init_constant(double value)
{
    rf_initializer i = {RF_INIT_CONSTANT, value, 0, 0};
    return i;
}

rf_initializer rf_init_random_uniform(double minval, double maxval)
{
    rf_initializer i = {RF_INIT_RANDOM_UNIFORM, minval, maxval, 0};
    return i;
}

rf_initializer rf_init_truncated_normal(double mean, double stddev)
{
    rf_initializer i = {RF_INIT_TRUNCATED_NORMAL, mean, stddev, 0};
    return i;
}

rf_initializer rf_init_glorot_uniform(void)
{
    rf_initializer i = {RF_INIT_GLOROT_UNIFORM, 0, 0, 0};
    return i;
}

rf_node *rf_variable(rf_graph *g, rf_dtype dtype, rf_shape shape,
                     rf_initializer init, const char *name)
{
    if (!g)
        return NULL;
    if ((unsigned)dtype >= RF_DTYPE_COUNT || dtype == RF_BOOL)
        return graph_fail(g, RF_ERR_INVALID_ARG,
                          "Variable: dtype must be float32, int32 or "
                          "int64");
    if (!rf_shape_is_known(&shape))
        return graph_fail(g, RF_ERR_INVALID_ARG,
                          "Variable %s: shape %s must be fully known",
                          name ? name : "", SHAPE_STR(&shape));
    if ((unsigned)init.kind > RF_INIT_GLOROT_UNIFORM ||
        (dtype != RF_F32 && init.kind != RF_INIT_ZEROS &&
         init.kind != RF_INIT_CONSTANT))
        return graph_fail(g, RF_ERR_INVALID_ARG,
                          "Variable %s: initializer %d not valid for %s",
                          name ? name : "", (int)init.kind,
                          rf_dtype_name(dtype));
    if ((init.kind == RF_INIT_TRUNCATED_NORMAL && !(init.b >= 0)) ||
        (init.kind == RF_INIT_RANDOM_UNIFORM && !(init.b >= init.a)))
        return graph_fail(g, RF_ERR_INVALID_ARG,
                          "Variable %s: invalid initializer parameters",
                          name ? name : "");
    rf_var *v = gcalloc(1, sizeof *v);
    if (!v)
        return graph_fail(g, RF_ERR_NO_MEMORY, "Variable: no memory");
    if (g->n_vars == g->cap_vars) {
        size_t cap = g->n_vars ? g->n_vars * 2 : 16;
        rf_var **vars = grealloc(g->vars, cap * sizeof *vars);
        if (!vars) {
            gfree(v);
            return graph_fail(g, RF_ERR_NO_MEMORY, "Variable: no memory");
        }
        g->vars = vars;
        g->cap_vars = cap;
    }
    v->bytes = (size_t)rf_shape_numel(&shape) * rf_dtype_size(dtype);
    v->trainable = true;
    v->init = init;
    rf_attrs a;
    memset(&a, 0, sizeof a);
    a.shape = shape;
    a.dtype = dtype;
    rf_node *n = node_create(g, RF_OP_VARIABLE, name, NULL, 0, &a);
    if (!n) {
        gfree(v);
        return NULL;
    }
    v->node = n;
    if (g->storage.alloc) {
        v->data = g->storage.alloc(g->storage.ctx, n, v->bytes);
        if (v->data && ((uintptr_t)v->data % RF_ALIGN) != 0) {
            if (g->storage.release)
                g->storage.release(g->storage.ctx, n, v->data, v->bytes);
            v->data = NULL;
        }
        if (v->data)
            v->hook = g->storage;
    }
    if (!v->data) {
        v->data = galloc_aligned(v->bytes);
        v->owned = true;
    }
    if (!v->data) {
        /* the node stays in the graph without a value: mark the failure */
        gfree(v);
        return graph_fail(
            g, RF_ERR_NO_MEMORY, "Variable %s: no memory for %zu bytes",
            n->name, (size_t)rf_shape_numel(&shape) * rf_dtype_size(dtype));
    }
    n->var = v;
    g->vars[g->n_vars++] = v;
    return n;
}

rf_node *rf_global_step(rf_graph *g)
{
    if (!g)
        return NULL;
    rf_node *n = rf_graph_find(g, "global_step");
    if (n && n->op == RF_OP_VARIABLE)
        return n;
    /* TF creates it at the top level, outside any name scope */
    char saved[sizeof g->scope];
    memcpy(saved, g->scope, sizeof saved);
    g->scope[0] = '\0';
    n = rf_variable(g, RF_I64, RF_SCALAR, rf_init_zeros(), "global_step");
    memcpy(g->scope, saved, sizeof saved);
    if (n)
        n->var->trainable = false;
    return n;
}

size_t rf_graph_num_variables(const rf_graph *g)
{
    return g->n_vars;
}

rf_node *rf_graph_variable(const rf_graph *g, size_t i)
{
    return i < g->n_vars ? g->vars[i]->node : NULL;
}

size_t rf_graph_trainable_variables(const rf_graph *g, rf_node **out,
                                    size_t cap)
{
    size_t k = 0;
    for (size_t i = 0; i < g->n_vars; i++) {
        if (!g->vars[i]->trainable)
            continue;
        if (k < cap && out)
            out[k] = g->vars[i]->node;
        k++;
    }
    return k;
}

bool rf_variable_trainable(const rf_node *var)
{
    return var->var && var->var->trainable;
}

void rf_variable_set_trainable(rf_node *var, bool trainable)
{
    if (var->var)
        var->var->trainable = trainable;
}

rf_initializer rf_variable_initializer(const rf_node *var)
{
    return var->var ? var->var->init : rf_init_zeros();
}

rf_node *rf_variable_slot_primary(const rf_node *var)
{
    return var->var ? var->var->slot_primary : NULL;
}

const char *rf_variable_slot_name(const rf_node *var)
{
    return var->var ? var->var->slot_name : "";
}

rf_node *rf_variable_get_slot(const rf_node *var, const char *slot_name)
{
    const rf_graph *g = var->graph;
    for (size_t i = 0; i < g->n_vars; i++)
        if (g->vars[i]->slot_primary == var &&
            strcmp(g->vars[i]->slot_name, slot_name) == 0)
            return g->vars[i]->node;
    return NULL;
}

void *rf_variable_data(const rf_node *var)
{
    return var->var ? var->var->data : NULL;
}

size_t rf_variable_bytes(const rf_node *var)
{
    return var->var ? var->var->bytes : 0;
}

rf_status rf_variable_set_storage(rf_node *var, void *data, size_t bytes,
                                  bool copy_current)
{
    if (!var || !var->var)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_variable_set_storage: not a variable");
    rf_var *v = var->var;
    if (!data || bytes < v->bytes || ((uintptr_t)data % RF_ALIGN) != 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_variable_set_storage: variable '%s' needs "
                            "%zu bytes aligned to %d (got %zu at %p)",
                            var->name, v->bytes, RF_ALIGN, bytes, data);
    if (data == v->data)
        return RF_OK;
    if (copy_current)
        memcpy(data, v->data, v->bytes);
    else
        v->initialized = false;
    var_release(v);
    v->data = data;
    return RF_OK;
}

rf_status rf_variable_own_storage(rf_node *var)
{
    if (!var || !var->var)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_variable_own_storage: not a variable");
    rf_var *v = var->var;
    if (v->owned)
        return RF_OK;
    void *data = galloc_aligned(v->bytes);
    if (!data)
        return rf_error_set(RF_ERR_NO_MEMORY,
                            "variable '%s': no memory for its %zu bytes",
                            var->name, v->bytes);
    memcpy(data, v->data, v->bytes);
    var_release(v);
    v->data = data;
    v->owned = true;
    return RF_OK;
}

void var_release(rf_var *v)
{
    if (v->owned)
        gfree_aligned(v->data, v->bytes);
    else if (v->hook.alloc && v->hook.release)
        v->hook.release(v->hook.ctx, v->node, v->data, v->bytes);
    v->owned = false;
    memset(&v->hook, 0, sizeof v->hook);
    v->data = NULL;
}

void rf_graph_set_variable_storage(rf_graph *g, const rf_variable_storage *hook)
{
    if (hook)
        g->storage = *hook;
    else
        memset(&g->storage, 0, sizeof g->storage);
}

/* ---- initializers ------------------------------------------------------ */

/* The initializers' stream: xoshiro256** (graph/data/rng.h) with its four
 * state words the successive splitmix64 outputs from the seed. */
static void rng_seed(rf_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

static double normal01(rf_rng *r)
{
    double u1;
    do
        u1 = rng_unit(r);
    while (u1 <= 0.0);
    double u2 = rng_unit(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* name: the variable's, or for a part its whole's */
static uint64_t var_seed(const rf_node *var, const char *name)
{
    if (var->var->init.seed)
        return var->var->init.seed;
    uint64_t h = 1469598103934665603ull;
    for (const char *p = name; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    uint64_t x = var->graph->seed ^ h;
    return splitmix64(&x);
}

/* Keras _compute_fans. */
static void fans(const rf_shape *s, double *fan_in, double *fan_out)
{
    if (s->rank == 0) {
        *fan_in = *fan_out = 1;
    } else if (s->rank == 1) {
        *fan_in = *fan_out = (double)s->dims[0];
    } else if (s->rank == 2) {
        *fan_in = (double)s->dims[0];
        *fan_out = (double)s->dims[1];
    } else {
        double receptive = 1;
        for (int i = 0; i < s->rank - 2; i++)
            receptive *= (double)s->dims[i];
        *fan_in = (double)s->dims[s->rank - 2] * receptive;
        *fan_out = (double)s->dims[s->rank - 1] * receptive;
    }
}

/* One value of in's distribution from r (lim: glorot's limit). */
static float draw(const rf_initializer *in, rf_rng *r, double lim)
{
    double z;
    switch (in->kind) {
    case RF_INIT_RANDOM_UNIFORM:
        return (float)(in->a + (in->b - in->a) * rng_unit(r));
    case RF_INIT_TRUNCATED_NORMAL:
        do
            z = normal01(r);
        while (fabs(z) > 2.0);
        return (float)(in->a + in->b * z);
    case RF_INIT_GLOROT_UNIFORM:
        return (float)(-lim + 2.0 * lim * rng_unit(r));
    case RF_INIT_CONSTANT:
        return (float)in->a;
    default:
        return 0.0f;
    }
}

/* Row r of a variable seeded with seed draws from its own stream, seeded
 * from both (so any range of rows can be generated alone). */
static void row_seed(rf_rng *r, uint64_t seed, int64_t row)
{
    uint64_t x = (uint64_t)row;
    rng_seed(r, seed ^ splitmix64(&x));
}

/* A variable's rows: dims[0] of numel/dims[0] elements (a scalar: one). */
static int64_t shape_rows(const rf_shape *s)
{
    return s->rank == 0 ? 1 : s->dims[0];
}

static int64_t shape_row_elems(const rf_shape *s)
{
    int64_t n = 1;
    for (int i = 1; i < s->rank; i++)
        n *= s->dims[i];
    return n;
}

rf_status rf_variable_initialize_rows(const rf_node *var, int64_t row0,
                                      int64_t nrows, void *out)
{
    if (!var || !var->var || (nrows > 0 && !out))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_variable_initialize_rows: not a variable or "
                            "no buffer");
    const rf_var *v = var->var;
    const rf_shape *own = &var->shape;
    int64_t rows = shape_rows(own), elems = shape_row_elems(own);
    if (row0 < 0 || nrows < 0 || row0 > rows || nrows > rows - row0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_variable_initialize_rows: rows [%lld, %lld) "
                            "of %s, which has %lld",
                            (long long)row0, (long long)(row0 + nrows),
                            var->name, (long long)rows);
    int64_t n = nrows * elems;
    const rf_initializer *in = &v->init;
    if (var->dtype != RF_F32) {
        double c = in->kind == RF_INIT_CONSTANT ? in->a : 0.0;
        for (int64_t i = 0; i < n; i++) {
            if (var->dtype == RF_I32)
                ((int32_t *)out)[i] = (int32_t)c;
            else
                ((int64_t *)out)[i] = (int64_t)c;
        }
        return RF_OK;
    }
    float *d = out;
    if (in->kind == RF_INIT_ZEROS || in->kind == RF_INIT_CONSTANT) {
        for (int64_t i = 0; i < n; i++)
            d[i] = (float)(in->kind == RF_INIT_CONSTANT ? in->a : 0.0);
        return RF_OK;
    }
    /* The whole's shape, seed and fans: a part's rows are its slice of the
     * whole's (partitioning changes where a variable lives, not its
     * numbers; TF draws each part on its own). */
    const rf_save_slice *sl = v->slice;
    const rf_shape *whole = sl ? &sl->full_shape : own;
    uint64_t seed = var_seed(var, sl ? sl->full_name : var->name);
    double fi, fo, lim = 0;
    if (in->kind == RF_INIT_GLOROT_UNIFORM) {
        fans(whole, &fi, &fo);
        lim = sqrt(6.0 / (fi + fo > 0 ? fi + fo : 1.0));
    }
    int64_t first = sl && whole->rank > 0 ? sl->offset[0] : 0;
    bool same_rows = true; /* the part's rows are whole rows of the whole */
    for (int k = 1; sl && k < whole->rank; k++)
        same_rows &= sl->offset[k] == 0 && own->dims[k] == whole->dims[k];
    rf_rng r;
    for (int64_t i = 0; i < nrows; i++) {
        row_seed(&r, seed, first + row0 + i);
        float *row = d + i * elems;
        if (same_rows) {
            for (int64_t j = 0; j < elems; j++)
                row[j] = draw(in, &r, lim);
            continue;
        }
        /* sliced along a later axis: walk the whole row's elements in
         * order (bounded memory), keeping those inside the part */
        int64_t idx[RF_MAX_RANK] = {0}, wel = shape_row_elems(whole);
        for (int64_t j = 0; j < wel; j++) {
            float x = draw(in, &r, lim);
            bool inside = true;
            int64_t pos = 0;
            for (int k = 1; k < whole->rank && inside; k++) {
                int64_t o = idx[k] - sl->offset[k];
                inside = o >= 0 && o < own->dims[k];
                pos = pos * own->dims[k] + o;
            }
            if (inside)
                row[pos] = x;
            for (int k = whole->rank - 1; k >= 1; k--) {
                if (++idx[k] < whole->dims[k])
                    break;
                idx[k] = 0;
            }
        }
    }
    return RF_OK;
}

rf_status rf_variable_initialize(rf_node *var)
{
    if (!var || !var->var)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_variable_initialize: not a variable");
    rf_var *v = var->var;
    rf_status st =
        rf_variable_initialize_rows(var, 0, shape_rows(&var->shape), v->data);
    if (st != RF_OK)
        return st;
    v->initialized = true;
    return RF_OK;
}

rf_status rf_graph_initialize_variables(rf_graph *g)
{
    for (size_t i = 0; i < g->n_vars; i++) {
        rf_status st = rf_variable_initialize(g->vars[i]->node);
        if (st != RF_OK)
            return st;
    }
    return RF_OK;
}

bool rf_variable_is_initialized(const rf_node *var)
{
    return var->var && var->var->initialized;
}

void rf_variable_mark_initialized(rf_node *var, bool initialized)
{
    if (var->var)
        var->var->initialized = initialized;
}
