/* graph/partitioner.c: TensorFlow's variable partitioners
 * (partitioned_variables.fixed_size_partitioner,
 * min_max_variable_partitioner, variable_axis_size_partitioner) computing
 * the partition counts with TF's own (float) arithmetic, and the checks of
 * variable_scope._call_partitioner on their result. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rdmaflow/device.h"
#include "rdmaflow/status.h"

rf_status rf_fixed_size_partitioner(int num_shards, int axis,
                                    rf_partitioner *out)
{
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "fixed_size_partitioner: out is NULL");
    memset(out, 0, sizeof *out);
    out->kind = RF_PARTITIONER_FIXED_SIZE;
    out->num_shards = num_shards;
    out->axis = axis;
    return RF_OK;
}

rf_status rf_min_max_variable_partitioner(int max_partitions, int axis,
                                          int64_t min_slice_size,
                                          int64_t bytes_per_string_element,
                                          rf_partitioner *out)
{
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "min_max_variable_partitioner: out is NULL");
    memset(out, 0, sizeof *out);
    out->kind = RF_PARTITIONER_MIN_MAX;
    out->max_partitions = max_partitions;
    out->axis = axis;
    out->min_slice_size = min_slice_size;
    out->bytes_per_string_element = bytes_per_string_element;
    return RF_OK;
}

rf_status rf_variable_axis_size_partitioner(int64_t max_shard_bytes, int axis,
                                            int64_t bytes_per_string_element,
                                            int max_shards, rf_partitioner *out)
{
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "variable_axis_size_partitioner: out is NULL");
    memset(out, 0, sizeof *out);
    if (max_shard_bytes < 1 || bytes_per_string_element < 1)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "variable_axis_size_partitioner: Both "
                            "max_shard_bytes and bytes_per_string_element "
                            "must be positive (got %lld and %lld)",
                            (long long)max_shard_bytes,
                            (long long)bytes_per_string_element);
    if (max_shards < 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "variable_axis_size_partitioner: max_shards must "
                            "be positive (got %d)",
                            max_shards);
    out->kind = RF_PARTITIONER_VARIABLE_AXIS_SIZE;
    out->max_shard_bytes = max_shard_bytes;
    out->axis = axis;
    out->bytes_per_string_element = bytes_per_string_element;
    out->max_shards = max_shards;
    return RF_OK;
}

/* Python list indexing: axis in [-rank, rank). */
static rf_status resolve_axis(const char *who, int axis, int rank, int *out)
{
    if (axis >= rank || axis < -rank)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: Can not partition variable along axis %d "
                            "when shape has rank %d",
                            who, axis, rank);
    *out = axis < 0 ? axis + rank : axis;
    return RF_OK;
}

static rf_status num_elements(const int64_t *shape, int rank, int64_t *out)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (shape[i] != 0 && n > INT64_MAX / shape[i])
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "partitioner: the number of elements "
                                "overflows");
        n *= shape[i];
    }
    *out = n;
    return RF_OK;
}

static rf_status fixed_size(const rf_partitioner *p, const int64_t *shape,
                            int rank, int *parts)
{
    int axis = 0;
    rf_status st = resolve_axis("fixed_size_partitioner", p->axis, rank, &axis);
    if (st != RF_OK)
        return st;
    parts[axis] =
        shape[axis] < p->num_shards ? (int)shape[axis] : p->num_shards;
    return RF_OK;
}

static rf_status min_max(const rf_partitioner *p, const int64_t *shape,
                         int rank, size_t elem_size, bool is_string, int *parts)
{
    int axis = 0;
    rf_status st =
        resolve_axis("min_max_variable_partitioner", p->axis, rank, &axis);
    if (st != RF_OK)
        return st;
    if (p->min_slice_size == 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "min_max_variable_partitioner: min_slice_size is "
                            "0 (division by zero)");
    int64_t elems = 0;
    st = num_elements(shape, rank, &elems);
    if (st != RF_OK)
        return st;
    double per_elem =
        is_string ? (double)p->bytes_per_string_element : (double)elem_size;
    /* total_size_bytes / min_slice_size is a float division in TF. */
    double partitions = (double)elems * per_elem / (double)p->min_slice_size;
    double want = ceil(partitions);
    int64_t n = shape[axis];
    if (p->max_partitions < n)
        n = p->max_partitions;
    if (want < (double)n)
        n = (int64_t)want;
    parts[axis] = n < 1 ? 1 : (int)n;
    return RF_OK;
}

static rf_status axis_size(const rf_partitioner *p, const int64_t *shape,
                           int rank, size_t elem_size, bool is_string,
                           int *parts)
{
    int axis = 0;
    rf_status st =
        resolve_axis("variable_axis_size_partitioner", p->axis, rank, &axis);
    if (st != RF_OK)
        return st;
    int64_t elems = 0;
    st = num_elements(shape, rank, &elems);
    if (st != RF_OK)
        return st;
    if (shape[axis] == 0 || elems == 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "variable_axis_size_partitioner: a variable with "
                            "no elements cannot be sliced (division by zero)");
    double element_size =
        is_string ? (double)p->bytes_per_string_element : (double)elem_size;
    if (element_size <= 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "variable_axis_size_partitioner: element size is "
                            "0");
    double bytes_per_slice =
        1.0 * ((double)elems / (double)shape[axis]) * element_size;
    double slices_per_shard =
        floor((double)p->max_shard_bytes / bytes_per_slice);
    if (slices_per_shard < 1)
        slices_per_shard = 1;
    double axis_shards = ceil(1.0 * (double)shape[axis] / slices_per_shard);
    if (p->max_shards && axis_shards > p->max_shards)
        axis_shards = p->max_shards;
    if (axis_shards > INT_MAX)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "variable_axis_size_partitioner: %.0f shards is "
                            "too many",
                            axis_shards);
    parts[axis] = (int)axis_shards;
    return RF_OK;
}

static void format_list(const int *v, int n, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && off < len; i++)
        off +=
            (size_t)snprintf(buf + off, len - off, "%s%d", i ? ", " : "", v[i]);
}

rf_status rf_partitioner_partitions(const rf_partitioner *p,
                                    const int64_t *shape, int rank,
                                    size_t elem_size, bool is_string,
                                    int *partitions)
{
    if (!p || !shape || !partitions)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_partitioner_partitions: bad arguments");
    if (rank < 1 || rank > RF_PARTITION_MAX_RANK)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "A partitioned Variable must have rank at least 1 "
                            "(and at most %d here), shape has rank %d",
                            RF_PARTITION_MAX_RANK, rank);
    for (int i = 0; i < rank; i++)
        if (shape[i] < 0)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "Shape of a new partitioned variable must be "
                                "fully defined (dimension %d is %lld)",
                                i, (long long)shape[i]);
    for (int i = 0; i < rank; i++)
        partitions[i] = 1;

    rf_status st;
    switch (p->kind) {
    case RF_PARTITIONER_FIXED_SIZE:
        st = fixed_size(p, shape, rank, partitions);
        break;
    case RF_PARTITIONER_MIN_MAX:
        st = min_max(p, shape, rank, elem_size, is_string, partitions);
        break;
    case RF_PARTITIONER_VARIABLE_AXIS_SIZE:
        st = axis_size(p, shape, rank, elem_size, is_string, partitions);
        break;
    case RF_PARTITIONER_CUSTOM:
        if (!p->fn)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "Partitioner must be callable (custom "
                                "partitioner without fn)");
        st = p->fn(p->ctx, shape, rank, elem_size, is_string, partitions);
        break;
    default:
        return rf_error_set(RF_ERR_INVALID_ARG, "unknown partitioner kind %d",
                            (int)p->kind);
    }
    if (st != RF_OK)
        return st;

    char list[128];
    int sliced = 0;
    for (int i = 0; i < rank; i++) {
        if (partitions[i] < 1) {
            format_list(partitions, rank, list, sizeof list);
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "Partitioner returned zero partitions for some "
                                "axes: [%s]",
                                list);
        }
        sliced += partitions[i] > 1;
    }
    if (sliced > 1) {
        format_list(partitions, rank, list, sizeof list);
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "Can only slice a variable along one dimension: "
                            "partitioning: [%s]",
                            list);
    }
    return RF_OK;
}
