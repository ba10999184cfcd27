/* session/ckpt_write.c: rf_ckpt_write, one safetensors checkpoint file:
 * the arguments checked, the tensors sorted by name, the JSON header with
 * the "__metadata__" map (the caller's keys and the CRC32Cs, sorted) padded
 * to a multiple of 8, then the data, through the atomic writer. Tensors
 * written in pieces (fill: tables too large to hold) go through a
 * temporary file's stream instead: the header with their CRCs as
 * "00000000" (8 hex digits whatever the value, so the header's length does
 * not change), the data (each piece's CRC chained as it is written), then
 * the header again with the CRCs, before the commit. */
#include "session/ckpt_internal.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/byteorder.h"

typedef struct kv {
    const char *k;
    const char *v;
} kv;

/* A tensor and its fill (fn NULL: its data). */
typedef struct ent {
    const rf_ckpt_tensor *t;
    rf_ckpt_fill f;
} ent;

static int by_name(const void *a, const void *b)
{
    return strcmp(((const ent *)a)->t->name, ((const ent *)b)->t->name);
}

static int by_key(const void *a, const void *b)
{
    return strcmp(((const kv *)a)->k, ((const kv *)b)->k);
}

static rf_status check_tensor(const char *path, const rf_ckpt_tensor *t,
                              const rf_ckpt_fill *f)
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
    if (t->bytes && !t->data && !(f && f->fn))
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

/* The padded header (*out, *plen: malloc'd) of the sorted tensors with
 * their CRCs' hex digits hex[i] and the caller's metadata. */
static rf_status make_header(const char *path, const char *const *meta,
                             size_t nmeta, const ent *order, size_t n,
                             char (*hex)[9], char **out, size_t *plen)
{
    size_t nkv = nmeta + n + 1;
    kv *kvs = calloc(nkv, sizeof *kvs);
    char **keys = calloc(n ? n : 1, sizeof *keys);
    json_object *hdr = json_object_new_object();
    json_object *mo = json_object_new_object();
    char *padded = NULL;
    rf_status rc = RF_OK;
    *out = NULL;
    if (!kvs || !keys || !hdr || !mo) {
        rc = rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory", path);
        goto out;
    }
    for (size_t i = 0; i < nmeta; i++)
        kvs[i] = (kv){meta[2 * i], meta[2 * i + 1]};
    for (size_t i = 0; i < n; i++) {
        const rf_ckpt_tensor *x = order[i].t;
        char *k = malloc(strlen(CKPT_CRC_PREFIX) + strlen(x->name) + 1);
        keys[i] = k;
        if (!k) {
            rc = rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory", path);
            goto out;
        }
        strcpy(k, CKPT_CRC_PREFIX);
        strcat(k, x->name);
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
        const rf_ckpt_tensor *x = order[i].t;
        json_object_object_add(hdr, x->name, tensor_json(x, off));
        off += x->bytes;
    }
    const char *text = json_object_to_json_string_ext(
        hdr, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    size_t hlen = text ? strlen(text) : 0;
    size_t len = (hlen + 7) / 8 * 8;
    const char *at = text ? strstr(text, CKPT_HEADER_CRC_TEXT) : NULL;
    if (!at || len > CKPT_MAX_HEADER) {
        rc = rf_error_set(RF_ERR_INVALID_ARG,
                          "%s: the header (%zu bytes) cannot be made", path,
                          hlen);
        goto out;
    }
    padded = malloc(len);
    if (!padded) {
        rc = rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory", path);
        goto out;
    }
    memcpy(padded, text, hlen);
    memset(padded + hlen, ' ', len - hlen);
    size_t digits = (size_t)(at - text) + strlen(CKPT_HEADER_CRC_TEXT);
    char hh[9];
    ckpt_hex8(ckpt_header_crc(padded, len, digits), hh);
    memcpy(padded + digits, hh, 8);
    *out = padded;
    *plen = len;
out:
    for (size_t i = 0; keys && i < n; i++)
        free(keys[i]);
    free(keys);
    json_object_put(mo);
    json_object_put(hdr);
    free(kvs);
    return rc;
}

static rf_status io_fail(const char *path, const char *what)
{
    return rf_error_set(RF_ERR_IO, "%s: %s failed: %s", path, what,
                        strerror(errno));
}

/* The streamed write (some tensor has fill): see the top. */
static rf_status write_streamed(const char *path, const char *const *meta,
                                size_t nmeta, const ent *order, size_t n,
                                char (*hex)[9], const char *padded, size_t plen)
{
    rf_file_out *o = NULL;
    rf_status rc = rf_file_out_open(path, &o);
    if (rc != RF_OK)
        return rc;
    FILE *f = rf_file_out_stream(o);
    unsigned char *buf = NULL, len8[8];
    char *again = NULL;
    size_t plen2 = 0;
    rf_put_le64(len8, (uint64_t)plen);
    if (fwrite(len8, 1, 8, f) != 8 || fwrite(padded, 1, plen, f) != plen) {
        rc = io_fail(path, "write");
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        const rf_ckpt_tensor *x = order[i].t;
        if (!x->bytes)
            continue;
        if (!order[i].f.fn || x->data) {
            if (fwrite(x->data, 1, x->bytes, f) != x->bytes) {
                rc = io_fail(path, "write");
                goto fail;
            }
            continue;
        }
        if (!buf && !(buf = malloc(RF_CKPT_FILL_CHUNK))) {
            rc = rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory", path);
            goto fail;
        }
        uint32_t crc = 0;
        for (size_t off = 0; off < x->bytes; off += RF_CKPT_FILL_CHUNK) {
            size_t len = x->bytes - off < RF_CKPT_FILL_CHUNK
                             ? x->bytes - off
                             : RF_CKPT_FILL_CHUNK;
            rc = order[i].f.fn(order[i].f.ctx, off, buf, len);
            if (rc != RF_OK) {
                rf_error_set(rc, "%s: tensor '%s' bytes %zu..%zu: %s", path,
                             x->name, off, off + len, rf_error_message());
                goto fail;
            }
            crc = ckpt_crc32c_update(crc, buf, len);
            if (fwrite(buf, 1, len, f) != len) {
                rc = io_fail(path, "write");
                goto fail;
            }
        }
        ckpt_hex8(crc, hex[i]);
    }
    /* the header again, with the CRCs: the same length */
    rc = make_header(path, meta, nmeta, order, n, hex, &again, &plen2);
    if (rc != RF_OK)
        goto fail;
    if (plen2 != plen || fseek(f, 8, SEEK_SET) != 0 ||
        fwrite(again, 1, plen, f) != plen) {
        rc = io_fail(path, "rewriting the header");
        goto fail;
    }
    free(again);
    free(buf);
    return rf_file_out_commit(o);
fail:
    free(again);
    free(buf);
    rf_file_out_abort(o);
    return rc;
}

rf_status rf_ckpt_write(const char *path, const rf_ckpt_tensor *t, size_t n,
                        const char *const *meta)
{
    return rf_ckpt_write_filled(path, t, NULL, n, meta);
}

rf_status rf_ckpt_write_filled(const char *path, const rf_ckpt_tensor *t,
                               const rf_ckpt_fill *fills, size_t n,
                               const char *const *meta)
{
    if (!path || (n && !t))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ckpt_write: no path or no tensors");
    bool streamed = false;
    for (size_t i = 0; i < n; i++) {
        rf_status st = check_tensor(path, &t[i], fills ? &fills[i] : NULL);
        if (st != RF_OK)
            return st;
        streamed |= !t[i].data && t[i].bytes;
    }
    size_t nmeta = 0;
    rf_status rc = check_meta(path, meta, &nmeta);
    if (rc != RF_OK)
        return rc;
    rc = rf_ckpt_check_path(path);
    if (rc != RF_OK)
        return rc;

    ent *order = calloc(n ? n : 1, sizeof *order);
    char(*hex)[9] = calloc(n ? n : 1, sizeof *hex);
    ckpt_chunk *chunks = calloc(n + 2, sizeof *chunks);
    char *padded = NULL;
    size_t plen = 0;
    if (!order || !hex || !chunks) {
        rc = rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory", path);
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        order[i] = (ent){&t[i], fills ? fills[i] : (rf_ckpt_fill){0}};
    qsort(order, n, sizeof *order, by_name);
    for (size_t i = 1; i < n; i++)
        if (!strcmp(order[i].t->name, order[i - 1].t->name)) {
            rc = rf_error_set(RF_ERR_INVALID_ARG,
                              "%s: tensor name '%s' given twice", path,
                              order[i].t->name);
            goto out;
        }
    for (size_t i = 0; i < n; i++) {
        const rf_ckpt_tensor *x = order[i].t;
        if (!x->data && x->bytes)
            memcpy(hex[i], "00000000", 9); /* written with the data */
        else
            ckpt_hex8(rf_ckpt_crc32c(x->data, x->bytes), hex[i]);
    }
    rc = make_header(path, meta, nmeta, order, n, hex, &padded, &plen);
    if (rc != RF_OK)
        goto out;
    if (streamed) {
        rc = write_streamed(path, meta, nmeta, order, n, hex, padded, plen);
        goto out;
    }
    unsigned char len8[8];
    rf_put_le64(len8, (uint64_t)plen);
    size_t nc = 0;
    chunks[nc++] = (ckpt_chunk){len8, 8};
    chunks[nc++] = (ckpt_chunk){padded, plen};
    for (size_t i = 0; i < n; i++)
        if (order[i].t->bytes)
            chunks[nc++] = (ckpt_chunk){order[i].t->data, order[i].t->bytes};
    rc = ckpt_atomic_write(path, chunks, nc);
out:
    free(padded);
    free(chunks);
    free(hex);
    free(order);
    return rc;
}
