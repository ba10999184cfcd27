/* session/ckpt_vars.c: graph variables as checkpoint tensors under
 * TensorFlow's names (rdmaflow/checkpoint.h, rf_ckpt_vars): a variable is
 * saved under its own name, the parts of a partitioned variable and their
 * optimizer slots are assembled into one tensor of the whole's shape under
 * the whole's name (TF's Saver with SaveSliceInfo), and restoring copies
 * each part's slice back out, so a checkpoint restores into any
 * partitioning, or none. */
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/checkpoint.h"

typedef struct ckv_entry {
    char name[RF_SAVE_SLICE_NAME_MAX];
    void *whole;          /* assembled parts (owned), NULL: a variable */
    int64_t rows_covered; /* elements of the whole added so far */
} ckv_entry;

struct rf_ckpt_vars {
    size_t n, cap;
    ckv_entry *e;
    rf_ckpt_tensor *t;
};

rf_status rf_ckpt_vars_create(size_t max_vars, rf_ckpt_vars **out)
{
    *out = NULL;
    rf_ckpt_vars *b = calloc(1, sizeof *b);
    size_t cap = max_vars ? max_vars : 1;
    if (b) {
        b->e = calloc(cap, sizeof *b->e);
        b->t = calloc(cap, sizeof *b->t);
    }
    if (!b || !b->e || !b->t) {
        rf_ckpt_vars_free(b);
        return rf_error_set(RF_ERR_NO_MEMORY, "checkpoint: out of memory");
    }
    b->cap = cap;
    *out = b;
    return RF_OK;
}

void rf_ckpt_vars_free(rf_ckpt_vars *b)
{
    if (!b)
        return;
    for (size_t i = 0; b->e && i < b->n; i++)
        free(b->e[i].whole);
    free(b->e);
    free(b->t);
    free(b);
}

static ckv_entry *find(rf_ckpt_vars *b, const char *name)
{
    for (size_t i = 0; i < b->n; i++)
        if (!strcmp(b->e[i].name, name))
            return &b->e[i];
    return NULL;
}

rf_status rf_ckpt_vars_add(rf_ckpt_vars *b, const rf_node *var,
                           const void *data)
{
    rf_save_slice sl;
    bool part = rf_variable_save_slice(var, &sl);
    rf_dtype dt = rf_node_dtype(var);
    size_t esz = rf_dtype_size(dt);
    const char *name = part ? sl.full_name : rf_node_name(var);
    ckv_entry *e = find(b, name);
    if (e && (!part || !e->whole))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "checkpoint: two variables saved as '%s'", name);
    if (!e) {
        if (b->n == b->cap)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "checkpoint: more than %zu tensors", b->cap);
        e = &b->e[b->n];
        rf_ckpt_tensor *t = &b->t[b->n];
        memcpy(e->name, name, strlen(name) + 1);
        t->name = e->name;
        t->dtype = dt;
        if (part) {
            size_t bytes = (size_t)rf_shape_numel(&sl.full_shape) * esz;
            e->whole = calloc(1, bytes ? bytes : 1);
            if (!e->whole)
                return rf_error_set(RF_ERR_NO_MEMORY,
                                    "checkpoint: no memory for '%s' (%zu "
                                    "bytes)",
                                    name, bytes);
            t->shape = sl.full_shape;
            t->data = e->whole;
            t->bytes = bytes;
        } else {
            t->shape = rf_node_shape(var);
            t->data = data;
            t->bytes = rf_variable_bytes(var);
        }
        b->n++;
    }
    if (part) {
        rf_save_slice_copy(&sl, esz, e->whole, (void *)data, true);
        e->rows_covered += rf_shape_numel(&sl.shape);
    }
    return RF_OK;
}

rf_status rf_ckpt_vars_tensors(const rf_ckpt_vars *b, const rf_ckpt_tensor **t,
                               size_t *n)
{
    for (size_t i = 0; i < b->n; i++)
        if (b->e[i].whole &&
            b->e[i].rows_covered != rf_shape_numel(&b->t[i].shape))
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "checkpoint: the parts of '%s' cover %lld of "
                                "its %lld elements",
                                b->e[i].name, (long long)b->e[i].rows_covered,
                                (long long)rf_shape_numel(&b->t[i].shape));
    *t = b->t;
    *n = b->n;
    return RF_OK;
}

rf_status rf_ckpt_read_variable(const rf_ckpt *ck, const rf_node *var,
                                void *dst)
{
    rf_save_slice sl;
    bool part = rf_variable_save_slice(var, &sl);
    const char *name = part ? sl.full_name : rf_node_name(var);
    rf_dtype dt = rf_node_dtype(var);
    rf_shape shape = part ? sl.full_shape : rf_node_shape(var);
    const rf_ckpt_entry *e = rf_ckpt_find(ck, name);
    if (!e)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "checkpoint %s has no tensor '%s' for this graph",
                            rf_ckpt_path(ck), name);
    if (e->t.dtype != dt || !rf_shape_equal(&e->t.shape, &shape)) {
        char a[64], c[64];
        rf_shape_format(&e->t.shape, a, sizeof a);
        rf_shape_format(&shape, c, sizeof c);
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "checkpoint %s has '%s' as %s%s; this graph has "
                            "%s%s",
                            rf_ckpt_path(ck), name, rf_dtype_name(e->t.dtype),
                            a, rf_dtype_name(dt), c);
    }
    if (part)
        rf_save_slice_copy(&sl, rf_dtype_size(dt), (void *)e->t.data, dst,
                           false);
    else
        memcpy(dst, e->t.data, e->t.bytes);
    return RF_OK;
}
