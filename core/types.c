/* core/types.c: element types and shapes (rdmaflow/types.h): sizes, names,
 * element counts, comparison and the "[2,?]" text form used in every error
 * message that names a shape. */
#include "rdmaflow/types.h"
#include "core/strbuf.h"

#include <stdio.h>
#include <string.h>

size_t rf_dtype_size(rf_dtype dtype)
{
    switch (dtype) {
    case RF_F32:
    case RF_I32:
        return 4;
    case RF_I64:
        return 8;
    case RF_BOOL:
        return 1;
    }
    return 0;
}

const char *rf_dtype_name(rf_dtype dtype)
{
    switch (dtype) {
    case RF_F32:
        return "float32";
    case RF_I32:
        return "int32";
    case RF_I64:
        return "int64";
    case RF_BOOL:
        return "bool";
    }
    return "unknown";
}

rf_shape rf_shape_make(int rank, const int64_t *dims)
{
    rf_shape s;
    memset(&s, 0, sizeof s);
    if (rank < 0)
        rank = 0;
    if (rank > RF_MAX_RANK)
        rank = RF_MAX_RANK;
    s.rank = rank;
    for (int i = 0; i < rank; i++)
        s.dims[i] = dims[i];
    return s;
}

int64_t rf_shape_numel(const rf_shape *s)
{
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++) {
        if (s->dims[i] < 0)
            return -1;
        n *= s->dims[i];
    }
    return n;
}

bool rf_shape_is_known(const rf_shape *s)
{
    return rf_shape_numel(s) >= 0;
}

bool rf_shape_equal(const rf_shape *a, const rf_shape *b)
{
    if (a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return false;
    return true;
}

int rf_shape_format(const rf_shape *s, char *buf, size_t len)
{
    rf_strbuf b = rf_strbuf_make(buf, len);
    rf_strbuf_printf(&b, "[");
    for (int i = 0; i < s->rank; i++) {
        if (s->dims[i] < 0)
            rf_strbuf_printf(&b, "%s?", i ? "," : "");
        else
            rf_strbuf_printf(&b, "%s%lld", i ? "," : "", (long long)s->dims[i]);
    }
    rf_strbuf_printf(&b, "]");
    return b.total;
}
