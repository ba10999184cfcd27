/* session/ckpt_write.c: rf_ckpt_write, one safetensors checkpoint file:
 * the arguments checked, the tensors sorted by name, the JSON header with
 * the "__metadata__" map (the caller's keys and the CRC32Cs, sorted) padded
 * to a multiple of 8, then the data, through the atomic writer. */
#include "session/ckpt_internal.h"

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/byteorder.h"

typedef struct kv {
    const char *k;
    const char *v;
} kv;

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const rf_ckpt_tensor *const *)a)->name,
                  (*(const rf_ckpt_tensor *const *)b)->name);
}

static int by_key(const void *a, const void *b)
{
    return strcmp(((const kv *)a)->k, ((const kv *)b)->k);
}

static rf_status check_tensor(const char *path, const rf_ckpt_tensor *t)
{
    if (!t->name || !*t->name)
        return rf_error_set(RF_ERR_INVALID_ARG, "%s: a tensor has no name",
                            path);
    if (!strcmp(t->name, "__metadata__"))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: \"__metadata__\" cannot name a tensor", path);
    if (!ckpt_dtype_st(t->dtype))
        return rf_error_set(RF_ERR_INVALID_ARG, "%s: tensor '%s': dtype %d",
                            path, t->name, (int)t->dtype);
    if (t->shape.rank < 0 || t->shape.rank > RF_MAX_RANK)
        return rf_error_set(RF_ERR_INVALID_ARG, "%s: tensor '%s': rank %d",
                            path, t->name, t->shape.rank);
    uint64_t elems = 1;
    bool overflow = false;
    for (int d = 0; d < t->shape.rank; d++) {
        if (t->shape.dims[d] < 0)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "%s: tensor '%s': dimension %d is %lld", path,
                                t->name, d, (long long)t->shape.dims[d]);
        uint64_t dim = (uint64_t)t->shape.dims[d];
        if (dim && elems > UINT64_MAX / dim)
            overflow = true;
        elems *= dim;
    }
    size_t es = rf_dtype_size(t->dtype);
    if (overflow || elems > UINT64_MAX / es || elems * es != (uint64_t)t->bytes)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: tensor '%s': %zu bytes for %llu elements of "
                            "%s",
                            path, t->name, t->bytes, (unsigned long long)elems,
                            ckpt_dtype_st(t->dtype));
    if (t->bytes && !t->data)
        return rf_error_set(RF_ERR_INVALID_ARG, "%s: tensor '%s' has no data",
                            path, t->name);
    return RF_OK;
}

/* The caller's metadata as pairs (n_out of them). */
static rf_status check_meta(const char *path, const char *const *meta,
                            size_t *n_out)
{
    size_t n = 0;
    for (; meta && meta[2 * n]; n++) {
        const char *k = meta[2 * n];
        if (!meta[2 * n + 1])
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "%s: metadata key '%s' has no value", path, k);
        if (!*k || !strncmp(k, CKPT_RESERVED, strlen(CKPT_RESERVED)))
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "%s: metadata key '%s' is empty or reserved "
                                "(\"" CKPT_RESERVED "...\")",
                                path, k);
        for (size_t j = 0; j < n; j++)
            if (!strcmp(meta[2 * j], k))
                return rf_error_set(RF_ERR_INVALID_ARG,
                                    "%s: metadata key '%s' given twice", path,
                                    k);
    }
    *n_out = n;
    return RF_OK;
}

static json_object *tensor_json(const rf_ckpt_tensor *t, uint64_t off)
{
    json_object *e = json_object_new_object();
    json_object *shape = json_object_new_array();
    json_object *offs = json_object_new_array();
    for (int d = 0; d < t->shape.rank; d++)
        json_object_array_add(shape, json_object_new_int64(t->shape.dims[d]));
    json_object_array_add(offs, json_object_new_int64((int64_t)off));
    json_object_array_add(offs,
                          json_object_new_int64((int64_t)(off + t->bytes)));
    json_object_object_add(e, "dtype",
                           json_object_new_string(ckpt_dtype_st(t->dtype)));
    json_object_object_add(e, "shape", shape);
    json_object_object_add(e, "data_offsets", offs);
    return e;
}

rf_status rf_ckpt_write(const char *path, const rf_ckpt_tensor *t, size_t n,
                        const char *const *meta)
{
    if (!path || (n && !t))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ckpt_write: no path or no tensors");
    for (size_t i = 0; i < n; i++) {
        rf_status st = check_tensor(path, &t[i]);
        if (st != RF_OK)
            return st;
    }
    size_t nmeta = 0;
    rf_status rc = check_meta(path, meta, &nmeta);
    if (rc != RF_OK)
        return rc;
    rc = rf_ckpt_check_path(path);
    if (rc != RF_OK)
        return rc;

    size_t nkv = nmeta + n + 1;
    const rf_ckpt_tensor **order = calloc(n ? n : 1, sizeof *order);
    kv *kvs = calloc(nkv, sizeof *kvs);
    char(*hex)[9] = calloc(n ? n : 1, sizeof *hex);
    char **keys = calloc(n ? n : 1, sizeof *keys);
    ckpt_chunk *chunks = calloc(n + 2, sizeof *chunks);
    json_object *hdr = json_object_new_object();
    json_object *mo = json_object_new_object();
    char *padded = NULL;
    if (!order || !kvs || !hex || !keys || !chunks || !hdr || !mo) {
        rc = rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory", path);
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        order[i] = &t[i];
    qsort(order, n, sizeof *order, by_name);
    for (size_t i = 1; i < n; i++)
        if (!strcmp(order[i]->name, order[i - 1]->name)) {
            rc = rf_error_set(RF_ERR_INVALID_ARG,
                              "%s: tensor name '%s' given twice", path,
                              order[i]->name);
            goto out;
        }

    for (size_t i = 0; i < nmeta; i++)
        kvs[i] = (kv){meta[2 * i], meta[2 * i + 1]};
    for (size_t i = 0; i < n; i++) {
        const rf_ckpt_tensor *x = order[i];
        char *k = malloc(strlen(CKPT_CRC_PREFIX) + strlen(x->name) + 1);
        keys[i] = k;
        if (!k) {
            rc = rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory", path);
            goto out;
        }
        strcpy(k, CKPT_CRC_PREFIX);
        strcat(k, x->name);
        ckpt_hex8(rf_ckpt_crc32c(x->data, x->bytes), hex[i]);
        kvs[nmeta + i] = (kv){k, hex[i]};
    }
    kvs[nkv - 1] = (kv){CKPT_HEADER_CRC_KEY, "00000000"};
    qsort(kvs, nkv, sizeof *kvs, by_key);
    for (size_t i = 0; i < nkv; i++)
        json_object_object_add(mo, kvs[i].k, json_object_new_string(kvs[i].v));
    json_object_object_add(hdr, "__metadata__", mo);
    mo = NULL;
    uint64_t off = 0;
    for (size_t i = 0; i < n; i++) {
        const rf_ckpt_tensor *x = order[i];
        json_object_object_add(hdr, x->name, tensor_json(x, off));
        off += x->bytes;
    }

    const char *text = json_object_to_json_string_ext(
        hdr, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    size_t hlen = text ? strlen(text) : 0;
    size_t plen = (hlen + 7) / 8 * 8;
    const char *at = text ? strstr(text, CKPT_HEADER_CRC_TEXT) : NULL;
    if (!at || plen > CKPT_MAX_HEADER) {
        rc = rf_error_set(RF_ERR_INVALID_ARG,
                          "%s: the header (%zu bytes) cannot be made", path,
                          hlen);
        goto out;
    }
    padded = malloc(plen);
    if (!padded) {
        rc = rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory", path);
        goto out;
    }
    memcpy(padded, text, hlen);
    memset(padded + hlen, ' ', plen - hlen);
    size_t digits = (size_t)(at - text) + strlen(CKPT_HEADER_CRC_TEXT);
    char hh[9];
    ckpt_hex8(ckpt_header_crc(padded, plen, digits), hh);
    memcpy(padded + digits, hh, 8);

    unsigned char len8[8];
    rf_put_le64(len8, (uint64_t)plen);
    size_t nc = 0;
    chunks[nc++] = (ckpt_chunk){len8, 8};
    chunks[nc++] = (ckpt_chunk){padded, plen};
    for (size_t i = 0; i < n; i++)
        if (order[i]->bytes)
            chunks[nc++] = (ckpt_chunk){order[i]->data, order[i]->bytes};
    rc = ckpt_atomic_write(path, chunks, nc);
out:
    for (size_t i = 0; keys && i < n; i++)
        free(keys[i]);
    free(keys);
    free(padded);
    json_object_put(mo);
    json_object_put(hdr);
    free(chunks);
    free(hex);
    free(kvs);
    free(order);
    return rc;
}
