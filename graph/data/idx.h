/* graph/data/idx.h: reading one IDX file (the MNIST / Fashion-MNIST format)
 * of unsigned bytes, gzip-compressed or not, through zlib: a big-endian
 * magic 0x000008NN (NN dimensions), NN big-endian uint32 sizes, then the
 * bytes. Every inconsistency is an error naming the file. */
#ifndef RF_GRAPH_DATA_IDX_H
#define RF_GRAPH_DATA_IDX_H

#include <stddef.h>
#include <stdint.h>

#include "rdmaflow/status.h"

#define RF_IDX_MAX_DIMS 3

typedef struct rf_idx {
    unsigned ndims;
    uint32_t dims[RF_IDX_MAX_DIMS];
    uint8_t *data; /* dims[0] * ... * dims[ndims-1] bytes, malloc'd */
    size_t size;
} rf_idx;

/* Reads path, which must hold an IDX file of unsigned bytes with exactly
 * ndims dimensions (1 for labels, 3 for images), every size >= 1, and
 * exactly as many bytes as the sizes say. On success *out owns data (free
 * with idx_free); on failure *out is zeroed and the status is
 * RF_ERR_IO (cannot open or read), RF_ERR_CORRUPT (bad magic, wrong
 * dimensions, truncated or damaged gzip, size mismatch) or
 * RF_ERR_NO_MEMORY. */
rf_status idx_read(const char *path, unsigned ndims, rf_idx *out);

void idx_free(rf_idx *idx);

#endif
