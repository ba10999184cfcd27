/* rdmaflow/types.h: the element types and shapes every layer shares: a
 * ps shard, a graph tensor and a checkpoint entry all have an rf_dtype and
 * an rf_shape. Plain data and pure functions (core/types.c); no tensor, no
 * allocation. */
#ifndef RDMAFLOW_TYPES_H
#define RDMAFLOW_TYPES_H

#include "rdmaflow/api.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rf_dtype {
    RF_F32 = 0,
    RF_I32,
    RF_I64,
    RF_BOOL, /* one byte per element, 0 or 1 (output of Equal) */
} rf_dtype;
#define RF_DTYPE_COUNT 4

#define RF_MAX_RANK 8

/* A shape: rank dims, each >= 0, or -1 for an unknown dimension (only in
 * static shapes). Rank 0 is a scalar. */
typedef struct rf_shape {
    int rank;
    int64_t dims[RF_MAX_RANK];
} rf_shape;

/* RF_SHAPE(2, 3) is the shape [2,3]; RF_SCALAR is []. */
#define RF_SHAPE(...)                                                          \
    rf_shape_make(                                                             \
        (int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),       \
        (const int64_t[]){__VA_ARGS__})
#define RF_SCALAR rf_shape_make(0, NULL)

RF_API size_t rf_dtype_size(rf_dtype dtype);
RF_API const char *rf_dtype_name(rf_dtype dtype); /* "float32", "int32", ... */
RF_API rf_shape rf_shape_make(int rank, const int64_t *dims); /* rank clamped */
/* Product of the dims; -1 if any is unknown; 1 for a scalar. */
RF_API int64_t rf_shape_numel(const rf_shape *s);
RF_API bool rf_shape_is_known(const rf_shape *s);
RF_API bool rf_shape_equal(const rf_shape *a, const rf_shape *b);
/* "[2,3]", "[?,784]", "[]"; returns what snprintf would. */
RF_API int rf_shape_format(const rf_shape *s, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
