/* graph/tensor.c: tensor views and shape strings (dtypes and shapes
 * themselves are core/types.c); NumPy broadcasting of static shapes; the
 * "<OpType> '<name>': ..." error messages. */
#include <stdio.h>
#include <string.h>

#include "core/strbuf.h"
#include "graph/graph_internal.h"
#include "rdmaflow/status.h"

rf_shape_str shape_str_of(const rf_shape *s)
{
    rf_shape_str r;
    rf_shape_format(s, r.s, sizeof r.s);
    return r;
}

rf_tensor rf_tensor_make(rf_dtype dtype, rf_shape shape, void *data)
{
    rf_tensor t = {.dtype = dtype, .shape = shape, .data = data};
    return t;
}

size_t rf_tensor_bytes(const rf_tensor *t)
{
    int64_t n = rf_shape_numel(&t->shape);
    return n < 0 ? 0 : (size_t)n * rf_dtype_size(t->dtype);
}

int node_describe(const rf_node *n, char *buf, size_t len)
{
    return snprintf(buf, len, "%s '%s'", rf_op_name(n->op),
                    n->name ? n->name : "?");
}

rf_status node_error(const rf_node *n, rf_status st, const char *fmt, ...)
{
    char who[300], msg[400];
    node_describe(n, who, sizeof who);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return rf_error_set(st, "%s: %s", who, msg);
}

rf_status broadcast_shape(const rf_node *n, const rf_shape *a,
                          const rf_shape *b, rf_shape *out)
{
    int r = a->rank > b->rank ? a->rank : b->rank;
    rf_shape o;
    memset(&o, 0, sizeof o);
    o.rank = r;
    for (int i = 0; i < r; i++) {
        int ia = a->rank - r + i, ib = b->rank - r + i;
        int64_t da = ia >= 0 ? a->dims[ia] : 1;
        int64_t db = ib >= 0 ? b->dims[ib] : 1;
        int64_t d;
        if (da == db)
            d = da;
        else if (da == 1)
            d = db;
        else if (db == 1)
            d = da;
        else if (da < 0 || db < 0)
            d = da < 0 ? db : da; /* unknown vs known n: must be n (or 1) */
        else
            return node_error(n, RF_ERR_INVALID_ARG,
                              "incompatible shapes for broadcasting: %s "
                              "vs %s (dimension %d: %lld vs %lld)",
                              SHAPE_STR(a), SHAPE_STR(b), i, (long long)da,
                              (long long)db);
        o.dims[i] = d;
    }
    *out = o;
    return RF_OK;
}

int rf_node_format(const rf_node *n, char *buf, size_t len)
{
    rf_strbuf b = rf_strbuf_make(buf, len);
    rf_strbuf_printf(&b, "%s = %s(", n->name, rf_op_name(n->op));
    for (size_t i = 0; i < n->n_inputs; i++)
        rf_strbuf_printf(&b, "%s%s", i ? ", " : "", n->inputs[i]->name);
    for (size_t i = 0; i < n->n_control; i++)
        rf_strbuf_printf(&b, "%s^%s", i || n->n_inputs ? ", " : "",
                         n->control[i]->name);
    rf_strbuf_printf(&b, ") %s%s", rf_dtype_name(n->dtype),
                     SHAPE_STR(&n->shape));
    const char *dev =
        n->assigned_device[0] ? n->assigned_device : n->requested_device;
    if (dev[0])
        rf_strbuf_printf(&b, " @%s", dev);
    return b.total;
}
