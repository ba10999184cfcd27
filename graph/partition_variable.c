/* graph/partition_variable.c: what variable_scope.get_variable does with a
 * partitioner, as far as placement goes: slice the variable along the first
 * partitioned axis (_iter_slices: the first dim % n parts get one extra
 * row), name part i "<name>/part_<i>", and place each part, in creation
 * order, through the device scopes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/device.h"
#include "rdmaflow/status.h"

void rf_partitioned_var_free(rf_partitioned_var *var)
{
    if (!var)
        return;
    if (var->parts)
        for (int i = 0; i < var->num_parts; i++)
            free(var->parts[i].name);
    free(var->parts);
    memset(var, 0, sizeof *var);
}

/* Places one part: an op of type op_type named part->name. */
static rf_status place_part(rf_device_stack *stack, const char *op_type,
                            rf_var_part *part)
{
    part->device[0] = '\0';
    if (!stack)
        return RF_OK;
    rf_op_desc op = {
        .type = op_type,
        .name = part->name,
        .device = "",
        .bytes = part->bytes,
    };
    return rf_device_stack_apply(stack, &op, part->device, sizeof part->device);
}

static rf_status fill_part(rf_partitioned_var *v, int i, const char *name,
                           bool suffix, size_t elem_size)
{
    rf_var_part *part = &v->parts[i];
    int n =
        suffix ? snprintf(NULL, 0, "%s/part_%d", name, i) : (int)strlen(name);
    part->name = malloc((size_t)n + 1);
    if (!part->name)
        return rf_error_set(RF_ERR_NO_MEMORY, "rf_partition_variable");
    if (suffix)
        snprintf(part->name, (size_t)n + 1, "%s/part_%d", name, i);
    else
        memcpy(part->name, name, (size_t)n + 1);
    return rf_device_byte_size(part->shape, v->rank, elem_size, &part->bytes);
}

/* Lays out the parts along slice_dim (variable_scope._iter_slices). */
static rf_status slice(rf_partitioned_var *v, const char *name,
                       size_t elem_size)
{
    int64_t dim = v->full_shape[v->slice_dim];
    int64_t n = v->num_parts;
    int64_t base = dim / n;
    int64_t excess = dim % n;
    int64_t offset = 0;
    for (int i = 0; i < v->num_parts; i++) {
        rf_var_part *part = &v->parts[i];
        memcpy(part->shape, v->full_shape, sizeof part->shape);
        part->shape[v->slice_dim] = base + (i < excess);
        part->offset[v->slice_dim] = offset;
        offset += part->shape[v->slice_dim];
        rf_status st = fill_part(v, i, name, v->partitioned, elem_size);
        if (st != RF_OK)
            return st;
    }
    return RF_OK;
}

/* _PartitionInfo requires 0 <= offset < shape in every dimension, so every
 * dimension must be >= 1 and no part may start past the last row. */
static rf_status check_offsets(const rf_partitioned_var *v, const char *name)
{
    for (int d = 0; d < v->rank; d++)
        if (v->full_shape[d] < 1)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "partitioned variable \"%s\": dimension %d "
                                "has size %lld; TF requires 0 <= offset < "
                                "shape",
                                name, d, (long long)v->full_shape[d]);
    if (v->num_parts > v->full_shape[v->slice_dim])
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "partitioned variable \"%s\": %d parts along "
                            "dimension %d of size %lld would leave empty "
                            "parts (TF requires 0 <= offset < shape)",
                            name, v->num_parts, v->slice_dim,
                            (long long)v->full_shape[v->slice_dim]);
    return RF_OK;
}

rf_status rf_partition_variable(const rf_partitioner *p, const char *name,
                                const char *op_type, const int64_t *shape,
                                int rank, size_t elem_size, bool is_string,
                                rf_device_stack *stack, rf_partitioned_var *out)
{
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_partition_variable: out is NULL");
    memset(out, 0, sizeof *out);
    if (!name || !name[0] || rank < 0 || rank > RF_PARTITION_MAX_RANK ||
        (rank > 0 && !shape))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_partition_variable: bad arguments (name %s, "
                            "rank %d)",
                            name ? name : "NULL", rank);
    for (int d = 0; d < rank; d++)
        if (shape[d] < 0)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "variable \"%s\": dimension %d is unknown "
                                "(%lld)",
                                name, d, (long long)shape[d]);
    if (!op_type)
        op_type = "VariableV2";

    rf_partitioned_var v;
    memset(&v, 0, sizeof v);
    v.rank = rank;
    for (int d = 0; d < rank; d++) {
        v.full_shape[d] = shape[d];
        v.partitions[d] = 1;
    }
    v.num_parts = 1;
    /* No partitioner, or a scalar (get_variable ignores the partitioner for
     * scalars): one variable under its own name. */
    v.partitioned = p && rank > 0;
    rf_status st = RF_OK;
    if (v.partitioned) {
        st = rf_partitioner_partitions(p, shape, rank, elem_size, is_string,
                                       v.partitions);
        if (st != RF_OK)
            return st;
        for (int d = 0; d < rank; d++)
            if (v.partitions[d] > 1) {
                v.slice_dim = d;
                v.num_parts = v.partitions[d];
                break;
            }
        st = check_offsets(&v, name);
        if (st != RF_OK)
            return st;
    }
    v.parts = calloc((size_t)v.num_parts, sizeof *v.parts);
    if (!v.parts)
        return rf_error_set(RF_ERR_NO_MEMORY, "rf_partition_variable");
    if (rank > 0)
        st = slice(&v, name, elem_size);
    else
        st = fill_part(&v, 0, name, false, elem_size);
    for (int i = 0; st == RF_OK && i < v.num_parts; i++)
        st = place_part(stack, op_type, &v.parts[i]);
    if (st != RF_OK) {
        rf_partitioned_var_free(&v);
        return st;
    }
    *out = v;
    return RF_OK;
}
