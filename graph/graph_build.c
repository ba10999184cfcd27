/* graph/graph_build.c: the graph object and node creation: TensorFlow's
 * unique naming and name scopes, control-dependency, device-function and
 * colocation stacks, the sticky build error, and node accessors. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "rdmaflow/status.h"

rf_status rf_graph_create(rf_graph **out)
{
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_graph_create: out NULL");
    rf_status st = op_table_check();
    if (st != RF_OK)
        return st;
    rf_graph *g = gcalloc(1, sizeof *g);
    if (!g)
        return rf_error_set(RF_ERR_NO_MEMORY, "rf_graph_create: no memory");
    *out = g;
    return RF_OK;
}

static void node_free(rf_node *n)
{
    gfree(n->name);
    gfree(n->inputs);
    gfree(n->control);
    gfree_aligned(n->const_data, n->const_bytes);
    gfree(n->optim);
    if (n->var) {
        var_release(n->var);
        gfree(n->var->slice);
        gfree(n->var);
    }
    gfree(n);
}

void rf_graph_destroy(rf_graph *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->n_nodes; i++)
        node_free(g->nodes[i]);
    gfree(g->nodes);
    gfree(g->vars);
    gfree(g->partitioner);
    for (size_t i = 0; i < g->cap_names; i++)
        gfree(g->names[i].key);
    gfree(g->names);
    for (int i = 0; i < g->cdeps_depth; i++)
        gfree(g->cdeps[i].deps);
    for (int i = 0; i < g->scope_depth; i++)
        gfree(g->scope_saved[i]);
    gfree(g);
}

void rf_graph_set_seed(rf_graph *g, uint64_t seed)
{
    g->seed = seed;
}

uint64_t rf_graph_seed(const rf_graph *g)
{
    return g->seed;
}

rf_status rf_graph_status(const rf_graph *g)
{
    return g->err;
}

const char *rf_graph_error(const rf_graph *g)
{
    return g->errmsg;
}

void rf_graph_clear_error(rf_graph *g)
{
    g->err = RF_OK;
    g->errmsg[0] = '\0';
}

rf_status graph_failv(rf_graph *g, rf_status st, const char *fmt, va_list ap)
{
    char msg[sizeof g->errmsg];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (g && g->err == RF_OK) {
        g->err = st;
        memcpy(g->errmsg, msg, sizeof msg);
    }
    return rf_error_set(st, "%s", msg);
}

rf_node *graph_fail(rf_graph *g, rf_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    graph_failv(g, st, fmt, ap);
    va_end(ap);
    return NULL;
}

/* ---- names ----------------------------------------------------------------
 */

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static rf_name_entry *name_slot(const rf_graph *g, const char *key)
{
    if (!g->cap_names)
        return NULL;
    size_t mask = g->cap_names - 1;
    for (size_t i = hash_str(key) & mask;; i = (i + 1) & mask) {
        rf_name_entry *e = &g->names[i];
        if (!e->key || strcmp(e->key, key) == 0)
            return e;
    }
}

static size_t name_get(const rf_graph *g, const char *key)
{
    rf_name_entry *e = name_slot(g, key);
    return e && e->key ? e->count : 0;
}

static rf_status name_set(rf_graph *g, const char *key, size_t count)
{
    if ((g->n_names + 1) * 2 > g->cap_names) {
        size_t cap = g->cap_names ? g->cap_names * 2 : 64;
        rf_name_entry *old = g->names;
        size_t oldcap = g->cap_names;
        g->names = gcalloc(cap, sizeof *g->names);
        if (!g->names) {
            g->names = old;
            return rf_error_set(RF_ERR_NO_MEMORY, "graph: no memory");
        }
        g->cap_names = cap;
        for (size_t i = 0; i < oldcap; i++)
            if (old[i].key)
                *name_slot(g, old[i].key) = old[i];
        gfree(old);
    }
    rf_name_entry *e = name_slot(g, key);
    if (!e->key) {
        e->key = gstrdup(key);
        if (!e->key)
            return rf_error_set(RF_ERR_NO_MEMORY, "graph: no memory");
        g->n_names++;
    }
    e->count = count;
    return RF_OK;
}

static void lower(char *s)
{
    for (; *s; s++)
        *s = (char)tolower((unsigned char)*s);
}

/* TensorFlow's Graph.unique_name(name, mark_as_used=True), with name
 * already prefixed by the scope. */
static rf_status unique_full(rf_graph *g, const char *full, char *buf,
                             size_t len)
{
    char key[1024], cand[1024 + 24];
    if (snprintf(key, sizeof key, "%s", full) >= (int)sizeof key)
        return rf_error_set(RF_ERR_INVALID_ARG, "name too long: %.60s...",
                            full);
    lower(key);
    size_t i = name_get(g, key);
    rf_status st = name_set(g, key, i + 1);
    if (st != RF_OK)
        return st;
    if (i == 0) {
        if (snprintf(buf, len, "%s", full) >= (int)len)
            return rf_error_set(RF_ERR_INVALID_ARG, "name too long: %s", full);
        return RF_OK;
    }
    for (;; i++) {
        snprintf(cand, sizeof cand, "%s_%zu", key, i);
        if (name_get(g, cand) == 0)
            break;
    }
    st = name_set(g, cand, 1);
    if (st != RF_OK)
        return st;
    if (snprintf(buf, len, "%s_%zu", full, i) >= (int)len)
        return rf_error_set(RF_ERR_INVALID_ARG, "name too long: %s", full);
    return RF_OK;
}

static rf_status scoped(const rf_graph *g, const char *name, char *buf,
                        size_t len)
{
    int w = g->scope[0] ? snprintf(buf, len, "%s/%s", g->scope, name)
                        : snprintf(buf, len, "%s", name);
    if (w < 0 || (size_t)w >= len)
        return rf_error_set(RF_ERR_INVALID_ARG, "name too long: %s", name);
    return RF_OK;
}

static rf_status check_name(const char *name)
{
    if (!name[0])
        return rf_error_set(RF_ERR_INVALID_ARG, "empty node name");
    for (const char *p = name; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (!(isalnum(c) || c == '_' || c == '.' || c == '-' || c == '/' ||
              c == '>' || c == '\\'))
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "invalid character '%c' in name '%s'", c, name);
    }
    return RF_OK;
}

rf_status rf_graph_unique_name(rf_graph *g, const char *name, char *buf,
                               size_t len)
{
    char full[1024];
    rf_status st = check_name(name);
    if (st == RF_OK)
        st = scoped(g, name, full, sizeof full);
    if (st == RF_OK)
        st = unique_full(g, full, buf, len);
    return st;
}

rf_status rf_name_scope_push(rf_graph *g, const char *name)
{
    if (!g || !name)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_name_scope_push: NULL");
    if (g->scope_depth >= RF_STACK_MAX)
        return rf_error_set(RF_ERR_INVALID_ARG, "name scopes nested too deep");
    char buf[1024];
    size_t n = strlen(name);
    rf_status st;
    if (n && name[n - 1] == '/') {
        /* an absolute scope, re-entered as is */
        if (n >= sizeof buf)
            return rf_error_set(RF_ERR_INVALID_ARG, "scope too long");
        memcpy(buf, name, n - 1);
        buf[n - 1] = '\0';
        st = buf[0] ? check_name(buf) : RF_OK;
    } else {
        st = rf_graph_unique_name(g, name, buf, sizeof buf);
    }
    if (st != RF_OK)
        return st;
    if (strlen(buf) >= sizeof g->scope)
        return rf_error_set(RF_ERR_INVALID_ARG, "scope too long: %s", buf);
    char *saved = gstrdup(g->scope);
    if (!saved)
        return rf_error_set(RF_ERR_NO_MEMORY, "no memory");
    g->scope_saved[g->scope_depth++] = saved;
    strcpy(g->scope, buf);
    return RF_OK;
}

void rf_name_scope_pop(rf_graph *g)
{
    if (g->scope_depth > 0) {
        char *saved = g->scope_saved[--g->scope_depth];
        strcpy(g->scope, saved);
        gfree(saved);
    }
}

const char *rf_name_scope(const rf_graph *g)
{
    return g->scope;
}

/* ---- stacks -------------------------------------------------------------- */

rf_status rf_control_dependencies_push(rf_graph *g, rf_node *const *deps,
                                       size_t n)
{
    if (!g || (n && !deps))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_control_dependencies_push: NULL");
    if (g->cdeps_depth >= RF_STACK_MAX)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "control dependencies nested too deep");
    for (size_t i = 0; i < n; i++)
        if (!deps[i] || deps[i]->graph != g)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "control dependency %zu is NULL or from "
                                "another graph",
                                i);
    rf_node **copy = gmalloc((n ? n : 1) * sizeof *copy);
    if (!copy)
        return rf_error_set(RF_ERR_NO_MEMORY, "no memory");
    if (n)
        memcpy(copy, deps, n * sizeof *copy);
    g->cdeps[g->cdeps_depth].deps = copy;
    g->cdeps[g->cdeps_depth].n = n;
    g->cdeps_depth++;
    return RF_OK;
}

void rf_control_dependencies_pop(rf_graph *g)
{
    if (g->cdeps_depth > 0) {
        g->cdeps_depth--;
        gfree(g->cdeps[g->cdeps_depth].deps);
    }
}

rf_status rf_device_fn_push(rf_graph *g, rf_device_fn fn, void *ctx)
{
    if (!g)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_device_fn_push: NULL");
    if (g->devfn_depth >= RF_STACK_MAX)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "device scopes nested too deep");
    g->devfns[g->devfn_depth].fn = fn;
    g->devfns[g->devfn_depth].ctx = ctx;
    g->devfn_depth++;
    return RF_OK;
}

void rf_device_fn_pop(rf_graph *g)
{
    if (g->devfn_depth > 0)
        g->devfn_depth--;
}

rf_status rf_colocation_push(rf_graph *g, rf_node *node)
{
    if (!g || !node || node->graph != g)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_colocation_push: NULL or foreign node");
    if (g->coloc_depth >= RF_STACK_MAX)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "colocation scopes nested too deep");
    g->coloc[g->coloc_depth++] = node;
    return RF_OK;
}

void rf_colocation_pop(rf_graph *g)
{
    if (g->coloc_depth > 0)
        g->coloc_depth--;
}

/* ---- node creation ------------------------------------------------------- */

rf_status rf_node_add_control_input(rf_node *n, rf_node *dep)
{
    if (!n || !dep || dep->graph != n->graph)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_node_add_control_input: NULL or foreign");
    for (size_t i = 0; i < n->n_control; i++)
        if (n->control[i] == dep)
            return RF_OK;
    if (n->n_control == n->cap_control) {
        size_t cap = n->cap_control ? n->cap_control * 2 : 4;
        rf_node **c = grealloc(n->control, cap * sizeof *c);
        if (!c)
            return rf_error_set(RF_ERR_NO_MEMORY, "no memory");
        n->control = c;
        n->cap_control = cap;
    }
    n->control[n->n_control++] = dep;
    return RF_OK;
}

static rf_status apply_devices(rf_graph *g, rf_node *n)
{
    if (g->coloc_depth > 0) {
        rf_node *c = g->coloc[g->coloc_depth - 1];
        while (c->colocate_with)
            c = c->colocate_with;
        n->colocate_with = c;
        memcpy(n->requested_device, c->requested_device,
               sizeof n->requested_device);
        return RF_OK;
    }
    for (int i = g->devfn_depth - 1; i >= 0; i--) {
        if (!g->devfns[i].fn)
            break;
        char dev[RF_DEVICE_MAX];
        memcpy(dev, n->requested_device, sizeof dev);
        rf_status st = g->devfns[i].fn(g->devfns[i].ctx, n, dev, sizeof dev);
        if (st != RF_OK)
            return st;
        dev[sizeof dev - 1] = '\0';
        memcpy(n->requested_device, dev, sizeof dev);
    }
    return RF_OK;
}

rf_node *node_create(rf_graph *g, rf_op_type op, const char *name,
                     rf_node *const *inputs, size_t n, const rf_attrs *attr)
{
    if (!g)
        return NULL;
    const rf_op_def *def = op_def_get(op);
    for (size_t i = 0; i < n; i++) {
        if (!inputs[i]) {
            if (g->err != RF_OK)
                return NULL; /* propagate an earlier failure quietly */
            return graph_fail(g, RF_ERR_INVALID_ARG, "%s: input %zu is NULL",
                              def->name, i);
        }
        if (inputs[i]->graph != g)
            return graph_fail(g, RF_ERR_INVALID_ARG,
                              "%s: input %zu ('%s') is from another graph",
                              def->name, i, inputs[i]->name);
    }
    if ((int)n < def->min_inputs ||
        (def->max_inputs >= 0 && (int)n > def->max_inputs))
        return graph_fail(g, RF_ERR_INVALID_ARG,
                          "%s: %zu inputs given, expected %d..%d", def->name, n,
                          def->min_inputs, def->max_inputs);
    char full[1024];
    const char *nm = name ? name : def->name;
    size_t nlen = strlen(nm);
    rf_status st;
    if (nlen > 1 && nm[nlen - 1] == '/' && nlen < sizeof full) {
        /* TF: a name ending in '/' (a name scope's) is used verbatim */
        memcpy(full, nm, nlen - 1);
        full[nlen - 1] = '\0';
        st = check_name(full);
        if (st == RF_OK && rf_graph_find(g, full))
            st = rf_error_set(RF_ERR_INVALID_ARG, "duplicate node name '%s'",
                              full);
        if (st == RF_OK) {
            char key[1024];
            memcpy(key, full, nlen);
            lower(key);
            if (name_get(g, key) == 0)
                st = name_set(g, key, 1);
        }
    } else {
        st = rf_graph_unique_name(g, nm, full, sizeof full);
    }
    if (st != RF_OK)
        return graph_fail(g, st, "%s", rf_error_message());
    rf_node *node = gcalloc(1, sizeof *node);
    if (!node)
        return graph_fail(g, RF_ERR_NO_MEMORY, "no memory");
    node->graph = g;
    node->op = op;
    node->id = g->n_nodes;
    node->name = gstrdup(full);
    node->inputs = gmalloc((n ? n : 1) * sizeof *node->inputs);
    if (!node->name || !node->inputs) {
        node_free(node);
        return graph_fail(g, RF_ERR_NO_MEMORY, "no memory");
    }
    if (n)
        memcpy(node->inputs, inputs, n * sizeof *inputs);
    node->n_inputs = n;
    if (attr) {
        node->attr = *attr;
        node->attr.optim = NULL;
        if (attr->optim) {
            node->optim = gmalloc(sizeof *node->optim);
            if (!node->optim) {
                node_free(node);
                return graph_fail(g, RF_ERR_NO_MEMORY, "no memory");
            }
            *node->optim = *attr->optim;
        }
    }

    rf_shape in_small[4], *in_shapes = in_small;
    rf_dtype dt_small[4], *in_dt = dt_small;
    if (n > 4) {
        in_shapes = gmalloc(n * sizeof *in_shapes);
        in_dt = gmalloc(n * sizeof *in_dt);
    }
    if (!in_shapes || !in_dt) {
        st = rf_error_set(RF_ERR_NO_MEMORY, "no memory");
    } else {
        for (size_t i = 0; i < n; i++) {
            in_shapes[i] = inputs[i]->shape;
            in_dt[i] = inputs[i]->dtype;
        }
        st = def->shape(node, in_shapes, in_dt, &node->shape, &node->dtype);
    }
    if (n > 4) {
        gfree(in_shapes);
        gfree(in_dt);
    }
    if (st == RF_OK) {
        for (int d = 0; d < g->cdeps_depth && st == RF_OK; d++)
            for (size_t j = 0; j < g->cdeps[d].n && st == RF_OK; j++)
                st = rf_node_add_control_input(node, g->cdeps[d].deps[j]);
    }
    if (st == RF_OK)
        st = apply_devices(g, node);
    if (st == RF_OK && g->n_nodes == g->cap_nodes) {
        size_t cap = g->cap_nodes ? g->cap_nodes * 2 : 64;
        rf_node **nodes = grealloc(g->nodes, cap * sizeof *nodes);
        if (!nodes)
            st = rf_error_set(RF_ERR_NO_MEMORY, "no memory");
        else {
            g->nodes = nodes;
            g->cap_nodes = cap;
        }
    }
    if (st != RF_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", rf_error_message());
        node_free(node);
        return graph_fail(g, st, "%s", msg);
    }
    g->nodes[g->n_nodes++] = node;
    return node;
}

/* ---- accessors ------------------------------------------------------------
 */

size_t rf_graph_num_nodes(const rf_graph *g)
{
    return g->n_nodes;
}

rf_node *rf_graph_node(const rf_graph *g, size_t id)
{
    return id < g->n_nodes ? g->nodes[id] : NULL;
}

rf_node *rf_graph_find(const rf_graph *g, const char *name)
{
    for (size_t i = 0; i < g->n_nodes; i++)
        if (strcmp(g->nodes[i]->name, name) == 0)
            return g->nodes[i];
    return NULL;
}

size_t rf_node_id(const rf_node *n)
{
    return n->id;
}

rf_graph *rf_node_graph(const rf_node *n)
{
    return n->graph;
}

const char *rf_node_name(const rf_node *n)
{
    return n->name;
}

rf_op_type rf_node_op(const rf_node *n)
{
    return n->op;
}

const char *rf_node_op_name(const rf_node *n)
{
    return rf_op_name(n->op);
}

rf_dtype rf_node_dtype(const rf_node *n)
{
    return n->dtype;
}

rf_shape rf_node_shape(const rf_node *n)
{
    return n->shape;
}

size_t rf_node_num_inputs(const rf_node *n)
{
    return n->n_inputs;
}

rf_node *rf_node_input(const rf_node *n, size_t i)
{
    return i < n->n_inputs ? n->inputs[i] : NULL;
}

size_t rf_node_num_control_inputs(const rf_node *n)
{
    return n->n_control;
}

rf_node *rf_node_control_input(const rf_node *n, size_t i)
{
    return i < n->n_control ? n->control[i] : NULL;
}

static rf_status set_dev(char *dst, const char *device)
{
    if (!device)
        device = "";
    if (strlen(device) >= RF_DEVICE_MAX)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "device string longer than %d bytes: %.40s...",
                            RF_DEVICE_MAX - 1, device);
    strcpy(dst, device);
    return RF_OK;
}

const char *rf_node_requested_device(const rf_node *n)
{
    return n->requested_device;
}

rf_status rf_node_set_requested_device(rf_node *n, const char *device)
{
    return set_dev(n->requested_device, device);
}

const char *rf_node_assigned_device(const rf_node *n)
{
    return n->assigned_device;
}

rf_status rf_node_set_assigned_device(rf_node *n, const char *device)
{
    return set_dev(n->assigned_device, device);
}

rf_node *rf_node_colocated_with(const rf_node *n)
{
    return n->colocate_with;
}

bool node_writes_input(const rf_node *n, size_t i)
{
    switch (n->op) {
    case RF_OP_ASSIGN:
    case RF_OP_ASSIGN_ADD:
        return i == 0;
    case RF_OP_APPLY_OPTIMIZER: /* var, grad, slots..., beta powers */
        return i == 0 || (i >= 2 && i < 2 + n->attr.num_slots);
    case RF_OP_SPARSE_APPLY_OPTIMIZER: /* var, indices, values, slots... */
        return i == 0 || (i >= 3 && i < 3 + n->attr.num_slots);
    case RF_OP_OPTIMIZER_FINISH:
        return i < 2;
    default:
        return false;
    }
}

bool node_is_ref(const rf_node *n)
{
    return (op_def_get(n->op)->flags & RF_OPF_REF_OUTPUT) ||
           n->op == RF_OP_VARIABLE;
}

rf_node *node_ref_var(const rf_node *n)
{
    while (n && n->op != RF_OP_VARIABLE) {
        if (!(op_def_get(n->op)->flags & RF_OPF_REF_OUTPUT))
            return NULL;
        n = n->inputs[0];
    }
    return (rf_node *)n;
}
