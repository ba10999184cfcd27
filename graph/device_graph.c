/* graph/device_graph.c: glue between rdmaflow/device.h and the graph's own
 * device-function stack (rdmaflow/graph.h rf_device_fn_push): a node is
 * described as an rf_op_desc, and string scopes, rf_op_device_fn functions
 * and replica_device_setter become graph device functions. */
#include <string.h>

#include "graph/graph_internal.h"
#include "rdmaflow/device.h"
#include "rdmaflow/graph.h"
#include "rdmaflow/status.h"

void rf_device_node_desc(const rf_node *node, const char *device,
                         rf_op_desc *out)
{
    rf_shape shape = rf_node_shape(node);
    size_t bytes = 0;
    if (rf_shape_is_known(&shape)) {
        int64_t n = rf_shape_numel(&shape);
        if (n >= 0)
            bytes = (size_t)n * rf_dtype_size(rf_node_dtype(node));
    }
    out->type = rf_node_op_name(node);
    out->name = rf_node_name(node);
    out->device = device;
    out->bytes = bytes;
}

/* Copies the node's current device out of the in/out buffer. */
static rf_status current_device(const char *device, size_t cap, char *copy,
                                size_t copy_len)
{
    if (!device || cap == 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "graph device function: no device buffer");
    size_t n = strnlen(device, cap);
    if (n >= copy_len)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "graph device function: requested device longer "
                            "than %zu bytes",
                            copy_len - 1);
    memcpy(copy, device, n);
    copy[n] = '\0';
    return RF_OK;
}

/* The description a device function sees of node, whose current device
 * (copied into cur, RF_DEVICE_STRING_MAX bytes) is in device. */
static rf_status node_desc(const rf_node *node, const char *device, size_t cap,
                           char *cur, rf_op_desc *op)
{
    rf_status st = current_device(device, cap, cur, RF_DEVICE_STRING_MAX);
    if (st == RF_OK)
        rf_device_node_desc(node, cur, op);
    return st;
}

rf_status rf_device_node_merge_fn(void *spec, const rf_node *node, char *device,
                                  size_t cap)
{
    (void)node;
    char cur_str[RF_DEVICE_STRING_MAX];
    rf_status st = current_device(device, cap, cur_str, sizeof cur_str);
    if (st != RF_OK)
        return st;
    rf_device_spec cur;
    st = rf_device_spec_parse(cur_str, &cur);
    if (st != RF_OK)
        return st;
    rf_device_spec merged = *(const rf_device_spec *)spec;
    rf_device_spec_merge(&merged, &cur); /* the node's device wins */
    return rf_device_spec_to_string(&merged, device, cap);
}

rf_status rf_device_node_fn(void *binding, const rf_node *node, char *device,
                            size_t cap)
{
    const rf_op_device_binding *b = binding;
    char cur_str[RF_DEVICE_STRING_MAX];
    rf_op_desc op;
    rf_status st = node_desc(node, device, cap, cur_str, &op);
    if (st != RF_OK)
        return st;
    rf_device_spec spec;
    st = device_fn_run(b->fn, b->ctx, &op, cur_str, &spec);
    if (st != RF_OK)
        return st;
    return rf_device_spec_to_string(&spec, device, cap);
}

rf_status rf_replica_device_setter_node_fn(void *setter, const rf_node *node,
                                           char *device, size_t cap)
{
    char cur_str[RF_DEVICE_STRING_MAX];
    rf_op_desc op;
    rf_status st = node_desc(node, device, cap, cur_str, &op);
    if (st != RF_OK)
        return st;
    return rf_replica_device_setter_fn(setter, &op, device, cap);
}

rf_status rf_graph_push_replica_device_setter(rf_graph *g,
                                              rf_replica_device_setter *setter)
{
    return rf_device_fn_push(
        g, setter ? rf_replica_device_setter_node_fn : NULL, setter);
}

rf_status rf_graph_push_device(rf_graph *g, const char *device,
                               rf_device_spec *storage)
{
    if (!device)
        return rf_device_fn_push(g, NULL, NULL);
    if (!storage)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_graph_push_device: storage is NULL");
    rf_status st = rf_device_spec_parse(device, storage);
    if (st != RF_OK)
        return st;
    return rf_device_fn_push(g, rf_device_node_merge_fn, storage);
}
