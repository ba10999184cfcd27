/* session/ckpt_read.c: rf_ckpt_open, a checkpoint file read whole and
 * validated (header length, JSON, every entry, the tensors' layout in the
 * file, the CRC32Cs), and the accessors of the opened file. A file of
 * CKPT_MAP_MIN bytes or more (embedding tables) is mapped read-only
 * instead of read into memory, and its pages are dropped from this
 * process as the CRCs pass over them and as the session copies tables out
 * (ckpt_release), so a reader holds a few MiB of it at a time.
 * rf_ckpt_verify opens a file with a stricter or a looser rule for the
 * CRC32Cs it must carry (crc_policy) and reports what it checked. */
#include "session/ckpt_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/json_check.h"
#include "rdmaflow/byteorder.h"
#include "rdmaflow/ps.h"

/* Which CRC32Cs a file must carry: rf_ckpt_open takes every tensor's and
 * the header's or none at all; rf_ckpt_verify takes every one (strict) or
 * any subset (allow_unchecked). What is there is always checked. */
typedef enum crc_policy {
    CRC_ALL_OR_NONE,
    CRC_REQUIRED,
    CRC_OPTIONAL,
} crc_policy;

/* data_offsets of entry i, relative to the data */
typedef struct span {
    uint64_t b, e;
    size_t i;
} span;

static int by_entry_name(const void *a, const void *b)
{
    return strcmp(((const rf_ckpt_entry *)a)->t.name,
                  ((const rf_ckpt_entry *)b)->t.name);
}

static int by_offset(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->b != y->b)
        return x->b < y->b ? -1 : 1;
    if (x->e != y->e)
        return x->e < y->e ? -1 : 1;
    return 0;
}

void rf_ckpt_close(rf_ckpt *ck)
{
    if (!ck)
        return;
    for (size_t i = 0; i < ck->n; i++)
        free((char *)ck->e[i].t.name);
    for (size_t i = 0; i < 2 * ck->nmeta; i++)
        free(ck->meta[i]);
    free(ck->meta);
    free(ck->e);
    if (ck->mapped)
        munmap(ck->buf, ck->size);
    else
        free(ck->buf);
    free(ck->note);
    free(ck->path);
    free(ck);
}

void ckpt_release(const rf_ckpt *ck, const void *p, size_t len)
{
    if (!ck->mapped || !len)
        return;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = ((uintptr_t)p + page - 1) / page * page;
    uintptr_t b = ((uintptr_t)p + len) / page * page;
    if (b > a) /* a private read-only mapping: faulted in again if used */
        madvise((void *)a, b - a, MADV_DONTNEED);
}

/* An entry's CRC32C; a mapped file's pages dropped piece by piece. */
static uint32_t crc_entry(const rf_ckpt *ck, const rf_ckpt_entry *e)
{
    if (!ck->mapped)
        return rf_ckpt_crc32c(e->t.data, e->t.bytes);
    const unsigned char *p = e->t.data;
    uint32_t crc = 0;
    for (size_t off = 0; off < e->t.bytes; off += RF_CKPT_FILL_CHUNK) {
        size_t n = e->t.bytes - off < RF_CKPT_FILL_CHUNK ? e->t.bytes - off
                                                         : RF_CKPT_FILL_CHUNK;
        crc = ckpt_crc32c_update(crc, p + off, n);
        ckpt_release(ck, p + off, n);
    }
    return crc;
}

static rf_status slurp(rf_ckpt *ck)
{
    /* what is not a regular file is refused before it is opened (opening
     * a socket fails with ENXIO, "No such device or address"; a device
     * may act on an open); non-blocking: a FIFO swapped in after the stat
     * must not block (the fstat below refuses it); a regular file ignores
     * the flag */
    struct stat st;
    if (stat(ck->path, &st) == 0 && !S_ISREG(st.st_mode))
        return rf_error_set(RF_ERR_IO,
                            "%s is not a regular file (a directory, FIFO, "
                            "device or socket)",
                            ck->path);
    int fd = open(ck->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return rf_error_set(RF_ERR_IO, "cannot open %s: %s", ck->path,
                            strerror(errno));
    rf_status rc = RF_OK;
    if (fstat(fd, &st) != 0) {
        rc = rf_error_set(RF_ERR_IO, "%s: %s", ck->path, strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        rc = rf_error_set(RF_ERR_IO,
                          "%s is not a regular file (a directory, FIFO, "
                          "device or socket)",
                          ck->path);
    } else if ((uint64_t)st.st_size >= CKPT_MAP_MIN) {
        ck->size = (size_t)st.st_size;
        void *m = mmap(NULL, ck->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED)
            rc = rf_error_set(RF_ERR_IO, "mapping %s (%zu bytes): %s", ck->path,
                              ck->size, strerror(errno));
        else {
            ck->buf = m;
            ck->mapped = true;
        }
    } else {
        ck->size = (size_t)st.st_size;
        ck->buf = malloc(ck->size ? ck->size : 1);
        if (!ck->buf)
            rc = rf_error_set(RF_ERR_NO_MEMORY, "%s: %zu bytes: out of memory",
                              ck->path, ck->size);
        size_t got = 0;
        while (rc == RF_OK && got < ck->size) {
            ssize_t r = read(fd, ck->buf + got, ck->size - got);
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0)
                rc = rf_error_set(RF_ERR_IO, "reading %s: %s", ck->path,
                                  strerror(errno));
            else if (r == 0)
                rc = rf_error_set(RF_ERR_IO,
                                  "%s shrank while being read (%zu of %zu "
                                  "bytes)",
                                  ck->path, got, ck->size);
            else
                got += (size_t)r;
        }
    }
    close(fd);
    return rc;
}

static rf_status get_u64(const char *path, const char *name, json_object *v,
                         const char *what, uint64_t *out)
{
    if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
        return rf_error_set(RF_ERR_CORRUPT,
                            "%s: tensor '%s': %s holds '%s', not a "
                            "non-negative integer",
                            path, name, what, json_object_to_json_string(v));
    *out = (uint64_t)json_object_get_int64(v);
    return RF_OK;
}

/* One tensor entry of the header into e (name not yet set), its offsets. */
static rf_status parse_entry(const char *path, const char *name, json_object *o,
                             rf_ckpt_entry *e, span *sp)
{
    json_object *dt = NULL, *shape = NULL, *offs = NULL;
    if (!*name) /* rf_ckpt_write refuses such a name too */
        return rf_error_set(RF_ERR_CORRUPT, "%s: a tensor has an empty name",
                            path);
    if (!json_object_is_type(o, json_type_object))
        return rf_error_set(RF_ERR_CORRUPT,
                            "%s: tensor '%s' is not a JSON object", path, name);
    json_object_object_foreach(o, key, v)
    {
        if (!strcmp(key, "dtype"))
            dt = v;
        else if (!strcmp(key, "shape"))
            shape = v;
        else if (!strcmp(key, "data_offsets"))
            offs = v;
        else
            return rf_error_set(RF_ERR_CORRUPT,
                                "%s: tensor '%s' has an unknown field '%s'",
                                path, name, key);
    }
    if (!dt || !shape || !offs)
        return rf_error_set(RF_ERR_CORRUPT, "%s: tensor '%s' lacks %s", path,
                            name,
                            !dt      ? "dtype"
                            : !shape ? "shape"
                                     : "data_offsets");
    if (!json_object_is_type(dt, json_type_string) ||
        !ckpt_dtype_parse(json_object_get_string(dt), &e->t.dtype))
        return rf_error_set(RF_ERR_CORRUPT,
                            "%s: tensor '%s': unknown dtype %s (rdmaflow "
                            "reads F32, I32, I64, BOOL)",
                            path, name, json_object_to_json_string(dt));
    if (!json_object_is_type(shape, json_type_array) ||
        json_object_array_length(shape) > RF_MAX_RANK)
        return rf_error_set(RF_ERR_CORRUPT,
                            "%s: tensor '%s': shape %s is not a list of at "
                            "most %d dimensions",
                            path, name, json_object_to_json_string(shape),
                            RF_MAX_RANK);
    e->t.shape.rank = (int)json_object_array_length(shape);
    uint64_t elems = 1;
    bool overflow = false;
    for (int d = 0; d < e->t.shape.rank; d++) {
        uint64_t dim = 0;
        rf_status st =
            get_u64(path, name, json_object_array_get_idx(shape, (size_t)d),
                    "shape", &dim);
        if (st != RF_OK)
            return st;
        e->t.shape.dims[d] = (int64_t)dim;
        if (dim && elems > UINT64_MAX / dim)
            overflow = true;
        elems *= dim;
    }
    if (!json_object_is_type(offs, json_type_array) ||
        json_object_array_length(offs) != 2)
        return rf_error_set(RF_ERR_CORRUPT,
                            "%s: tensor '%s': data_offsets %s is not "
                            "[begin, end]",
                            path, name, json_object_to_json_string(offs));
    rf_status st = get_u64(path, name, json_object_array_get_idx(offs, 0),
                           "data_offsets", &sp->b);
    if (st == RF_OK)
        st = get_u64(path, name, json_object_array_get_idx(offs, 1),
                     "data_offsets", &sp->e);
    if (st != RF_OK)
        return st;
    if (sp->e < sp->b)
        return rf_error_set(RF_ERR_CORRUPT,
                            "%s: tensor '%s': data_offsets [%" PRIu64
                            ", %" PRIu64 "] end before they begin",
                            path, name, sp->b, sp->e);
    size_t es = rf_dtype_size(e->t.dtype);
    if (overflow || elems > UINT64_MAX / es || elems * es != sp->e - sp->b)
        return rf_error_set(RF_ERR_CORRUPT,
                            "%s: tensor '%s': data_offsets [%" PRIu64
                            ", %" PRIu64 "] hold %" PRIu64
                            " bytes, its shape and dtype %s need %" PRIu64 "%s",
                            path, name, sp->b, sp->e, sp->e - sp->b,
                            ckpt_dtype_st(e->t.dtype), elems * es,
                            overflow ? " (overflow)" : "");
    e->t.bytes = (size_t)(sp->e - sp->b);
    return RF_OK;
}

static rf_status parse_meta(rf_ckpt *ck, json_object *m)
{
    if (!json_object_is_type(m, json_type_object))
        return rf_error_set(RF_ERR_CORRUPT,
                            "%s: \"__metadata__\" is not a JSON object",
                            ck->path);
    size_t n = (size_t)json_object_object_length(m);
    ck->meta = calloc(2 * n + 1, sizeof *ck->meta);
    if (!ck->meta)
        return rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory", ck->path);
    json_object_object_foreach(m, key, v)
    {
        if (!json_object_is_type(v, json_type_string))
            return rf_error_set(RF_ERR_CORRUPT,
                                "%s: \"__metadata__\" value of '%s' is not a "
                                "string",
                                ck->path, key);
        char *k = strdup(key), *s = strdup(json_object_get_string(v));
        ck->meta[2 * ck->nmeta] = k;
        ck->meta[2 * ck->nmeta + 1] = s;
        ck->nmeta++;
        if (!k || !s)
            return rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory",
                                ck->path);
    }
    return RF_OK;
}

/* The tensors in the order of their offsets must tile the data exactly. */
static rf_status check_layout(const rf_ckpt *ck, span *sp, uint64_t dlen,
                              uint64_t data_at)
{
    qsort(sp, ck->n, sizeof *sp, by_offset);
    uint64_t end = 0;
    const char *prev = NULL;
    for (size_t k = 0; k < ck->n; k++) {
        const char *name = ck->e[sp[k].i].t.name;
        if (sp[k].e > dlen)
            return rf_error_set(
                RF_ERR_CORRUPT,
                "%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64
                "] end past the file (%" PRIu64
                " data bytes at file offset %" PRIu64 "): truncated?",
                ck->path, name, sp[k].b, sp[k].e, dlen, data_at);
        if (sp[k].b < end)
            return rf_error_set(RF_ERR_CORRUPT,
                                "%s: tensor '%s': data_offsets [%" PRIu64
                                ", %" PRIu64 "] overlap tensor '%s' (which "
                                "ends at %" PRIu64 ")",
                                ck->path, name, sp[k].b, sp[k].e, prev, end);
        if (sp[k].b > end)
            return rf_error_set(RF_ERR_CORRUPT,
                                "%s: data bytes [%" PRIu64 ", %" PRIu64
                                ") before tensor '%s' belong to no tensor",
                                ck->path, end, sp[k].b, name);
        end = sp[k].e;
        prev = name;
    }
    if (end != dlen)
        return rf_error_set(RF_ERR_CORRUPT,
                            "%s: %" PRIu64 " bytes of trailing data after "
                            "the last tensor (data ends at file offset "
                            "%" PRIu64 ", the file at %" PRIu64 ")",
                            ck->path, dlen - end, data_at + end,
                            data_at + dlen);
    return RF_OK;
}

/* CRC_REQUIRED's refusal: how many tensors have no CRC32C, the first of
 * them by name (each cut at 48 bytes), whether the header has none. */
static rf_status unchecked_error(const rf_ckpt *ck, size_t missing,
                                 bool header_crc)
{
    enum { SHOWN = 5, CUT = 48 };
    char names[SHOWN * (CUT + 8) + 32];
    size_t used = 0, shown = 0;
    names[0] = '\0';
    for (size_t i = 0; i < ck->n && shown < SHOWN; i++) {
        if (ck->e[i].has_crc)
            continue;
        const char *nm = ck->e[i].t.name;
        size_t l = strlen(nm);
        int w = snprintf(names + used, sizeof names - used, "%s'%.*s%s'",
                         shown ? ", " : "", (int)(l > CUT ? CUT - 3 : l), nm,
                         l > CUT ? "..." : "");
        if (w < 0 || (size_t)w >= sizeof names - used)
            break;
        used += (size_t)w;
        shown++;
    }
    if (missing > shown)
        snprintf(names + used, sizeof names - used, " and %zu more",
                 missing - shown);
    if (!missing)
        return rf_error_set(RF_ERR_CORRUPT,
                            "%s: cannot be verified: the header has no "
                            "CRC32C (\"%s\")",
                            ck->path, CKPT_HEADER_CRC_KEY);
    return rf_error_set(RF_ERR_CORRUPT,
                        "%s: cannot be verified: %zu of %zu tensors %s no "
                        "CRC32C (\"%s<name>\")%s: %s",
                        ck->path, missing, ck->n, missing == 1 ? "has" : "have",
                        CKPT_CRC_PREFIX,
                        header_crc ? ""
                                   : " and the header has none "
                                     "(\"" CKPT_HEADER_CRC_KEY "\")",
                        names);
}

static rf_status check_crcs(rf_ckpt *ck, const char *hdr, size_t hlen,
                            crc_policy policy)
{
    bool header_crc = false;
    size_t pl = strlen(CKPT_CRC_PREFIX);
    for (size_t m = 0; m < ck->nmeta; m++) {
        const char *k = ck->meta[2 * m], *v = ck->meta[2 * m + 1];
        uint32_t want;
        if (!strcmp(k, CKPT_HEADER_CRC_KEY)) {
            header_crc = true;
            const char *txt = CKPT_HEADER_CRC_TEXT;
            const char *at = memmem(hdr, hlen, txt, strlen(txt));
            size_t digits = at ? (size_t)(at - hdr) + strlen(txt) : hlen;
            if (!ckpt_parse_hex8(v, &want) || digits + 8 > hlen ||
                memcmp(hdr + digits, v, 8) != 0)
                return rf_error_set(RF_ERR_CORRUPT,
                                    "%s: \"%s\" is '%s', not 8 lowercase "
                                    "hex digits in the header's own text",
                                    ck->path, k, v);
            uint32_t got = ckpt_header_crc(hdr, hlen, digits);
            if (got != want)
                return rf_error_set(RF_ERR_CORRUPT,
                                    "%s: the header (file bytes [8, %zu)) "
                                    "has CRC32C %08x, its \"%s\" says %s",
                                    ck->path, 8 + hlen, (unsigned)got, k, v);
            continue;
        }
        if (strncmp(k, CKPT_CRC_PREFIX, pl) != 0)
            continue;
        const rf_ckpt_entry *e = rf_ckpt_find(ck, k + pl);
        if (!e)
            return rf_error_set(RF_ERR_CORRUPT,
                                "%s: metadata \"%s\" names no tensor", ck->path,
                                k);
        if (!ckpt_parse_hex8(v, &want))
            return rf_error_set(RF_ERR_CORRUPT,
                                "%s: metadata \"%s\" is '%s', not 8 "
                                "lowercase hex digits",
                                ck->path, k, v);
        rf_ckpt_entry *w = &ck->e[e - ck->e];
        w->has_crc = true;
        uint64_t at = (uint64_t)((const unsigned char *)w->t.data - ck->buf);
        if (w->crc32c != want)
            return rf_error_set(RF_ERR_CORRUPT,
                                "%s: tensor '%s' (file bytes [%" PRIu64
                                ", %" PRIu64 ")): CRC32C %08x, the header "
                                "says %s",
                                ck->path, w->t.name, at, at + w->t.bytes,
                                (unsigned)w->crc32c, v);
        ck->has_crc = true;
    }
    size_t missing = 0;
    for (size_t i = 0; i < ck->n; i++)
        missing += !ck->e[i].has_crc;
    if (policy == CRC_REQUIRED && (missing || !header_crc))
        return unchecked_error(ck, missing, header_crc);
    for (size_t i = 0; policy == CRC_ALL_OR_NONE && i < ck->n; i++)
        if ((ck->has_crc || header_crc) && !ck->e[i].has_crc)
            return rf_error_set(RF_ERR_CORRUPT,
                                "%s: tensor '%s' has no \"%s%s\" while the "
                                "file carries CRC32Cs",
                                ck->path, ck->e[i].t.name, CKPT_CRC_PREFIX,
                                ck->e[i].t.name);
    if (policy == CRC_ALL_OR_NONE && ck->has_crc && !header_crc)
        return rf_error_set(RF_ERR_CORRUPT, "%s: no \"%s\" in the metadata",
                            ck->path, CKPT_HEADER_CRC_KEY);
    ck->has_crc = ck->has_crc || header_crc;
    return RF_OK;
}

static rf_status parse(rf_ckpt *ck, crc_policy policy)
{
    if (ck->size < 8)
        return rf_error_set(RF_ERR_CORRUPT,
                            "%s: %zu bytes, too short for the 8-byte header "
                            "length (truncated?)",
                            ck->path, ck->size);
    uint64_t hlen = rf_get_le64(ck->buf);
    if (hlen > CKPT_MAX_HEADER)
        return rf_error_set(RF_ERR_CORRUPT,
                            "%s: header length %" PRIu64 " is over the %" PRIu64
                            "-byte bound",
                            ck->path, hlen, CKPT_MAX_HEADER);
    if (hlen > ck->size - 8)
        return rf_error_set(RF_ERR_CORRUPT,
                            "%s: header length %" PRIu64
                            " goes past the end of the file (%zu bytes)",
                            ck->path, hlen, ck->size);
    const char *hdr = (const char *)ck->buf + 8;
    json_tokener *tok = json_tokener_new();
    if (!tok)
        return rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory", ck->path);
    json_object *root = json_tokener_parse_ex(tok, hdr, (int)hlen);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    rf_status rc = RF_OK;
    if (!root || jerr != json_tokener_success) {
        rc = rf_error_set(RF_ERR_CORRUPT,
                          "%s: the header is not valid JSON (%s, near byte "
                          "%zu of %" PRIu64 ")",
                          ck->path,
                          jerr == json_tokener_continue
                              ? "it ends early"
                              : json_tokener_error_desc(jerr),
                          end, hlen);
        goto out;
    }
    for (size_t k = end; k < hlen; k++)
        if (!strchr(" \t\r\n", hdr[k]) || !hdr[k]) {
            rc = rf_error_set(RF_ERR_CORRUPT,
                              "%s: the header has bytes after its JSON (at "
                              "byte %zu of %" PRIu64 ")",
                              ck->path, k, hlen);
            goto out;
        }
    if (!json_object_is_type(root, json_type_object)) {
        rc = rf_error_set(RF_ERR_CORRUPT, "%s: the header is not a JSON object",
                          ck->path);
        goto out;
    }
    /* a duplicate tensor name (json-c keeps the last; another reader may
     * keep the first or refuse), a NUL inside a name, a number json-c
     * clamps: refused, so every reader of the file reads the same tensors */
    char what[sizeof "the header of " + 4096];
    snprintf(what, sizeof what, "%s: the header", ck->path);
    rc = rf_json_check(hdr, (size_t)hlen, RF_ERR_CORRUPT, what);
    if (rc != RF_OK)
        goto out;
    size_t cap = (size_t)json_object_object_length(root);
    ck->e = calloc(cap ? cap : 1, sizeof *ck->e);
    span *sp = calloc(cap ? cap : 1, sizeof *sp);
    if (!ck->e || !sp) {
        free(sp);
        rc = rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory", ck->path);
        goto out;
    }
    uint64_t data_at = 8 + hlen, dlen = ck->size - data_at;
    json_object_object_foreach(root, key, v)
    {
        if (!strcmp(key, "__metadata__")) {
            rc = parse_meta(ck, v);
        } else {
            rf_ckpt_entry *e = &ck->e[ck->n];
            rc = parse_entry(ck->path, key, v, e, &sp[ck->n]);
            e->t.name = strdup(key);
            if (!e->t.name && rc == RF_OK)
                rc = rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory",
                                  ck->path);
            sp[ck->n].i = ck->n;
            ck->n++;
        }
        if (rc != RF_OK)
            break;
    }
    if (rc == RF_OK)
        rc = check_layout(ck, sp, dlen, data_at);
    if (rc == RF_OK) {
        for (size_t k = 0; k < ck->n; k++)
            ck->e[sp[k].i].t.data = ck->buf + data_at + sp[k].b;
        qsort(ck->e, ck->n, sizeof *ck->e, by_entry_name);
        for (size_t i = 0; i < ck->n; i++)
            ck->e[i].crc32c = crc_entry(ck, &ck->e[i]);
        rc = check_crcs(ck, hdr, (size_t)hlen, policy);
    }
    free(sp);
out:
    json_object_put(root);
    return rc;
}

static rf_status open_file(const char *fn, const char *path, crc_policy policy,
                           rf_ckpt **out)
{
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG, "%s: no output", fn);
    *out = NULL;
    if (!path || !*path)
        return rf_error_set(RF_ERR_INVALID_ARG, "%s: no path", fn);
    rf_ckpt *ck = calloc(1, sizeof *ck);
    if (!ck || !(ck->path = strdup(path)) || !(ck->note = strdup(""))) {
        rf_ckpt_close(ck);
        return rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory", path);
    }
    rf_status rc = slurp(ck);
    if (rc == RF_OK)
        rc = parse(ck, policy);
    if (rc != RF_OK) {
        rf_ckpt_close(ck);
        return rc;
    }
    *out = ck;
    return RF_OK;
}

rf_status rf_ckpt_open(const char *path, rf_ckpt **out)
{
    return open_file("rf_ckpt_open", path, CRC_ALL_OR_NONE, out);
}

rf_status rf_ckpt_verify(const char *path, const rf_ckpt_verify_options *opts,
                         rf_ckpt_verify_report *report)
{
    if (report)
        *report = (rf_ckpt_verify_report){0};
    rf_ckpt *ck;
    rf_status rc = open_file(
        "rf_ckpt_verify", path,
        opts && opts->allow_unchecked ? CRC_OPTIONAL : CRC_REQUIRED, &ck);
    if (rc != RF_OK)
        return rc;
    if (report) {
        report->tensors = ck->n;
        for (size_t i = 0; i < ck->n; i++)
            report->unchecked += !ck->e[i].has_crc;
        /* there, so it matched: a mismatch fails the open */
        report->header_checked = rf_ckpt_meta(ck, CKPT_HEADER_CRC_KEY) != NULL;
    }
    const rf_ckpt_entry *e = rf_ckpt_find(ck, RF_CKPT_SHARD_LEDGER);
    char desc[200] = "";
    if (e &&
        (e->t.dtype != RF_I32 || e->t.shape.rank != 1 ||
         rf_ps_ledger_check(e->t.data, e->t.bytes, desc, sizeof desc) != RF_OK))
        rc = rf_error_set(RF_ERR_CORRUPT, "%s: tensor %s: %s", path,
                          RF_CKPT_SHARD_LEDGER,
                          e->t.dtype != RF_I32 || e->t.shape.rank != 1
                              ? "not a rank-1 int32 tensor"
                              : rf_error_message());
    if (report && e)
        snprintf(report->shard_ledger, sizeof report->shard_ledger, "%s", desc);
    rf_ckpt_close(ck);
    return rc;
}

rf_status ckpt_open_buffer(const char *name, const void *data, size_t len,
                           rf_ckpt **out)
{
    *out = NULL;
    rf_ckpt *ck = calloc(1, sizeof *ck);
    if (!ck || !(ck->path = strdup(name)) || !(ck->note = strdup("")) ||
        !(ck->buf = malloc(len ? len : 1))) {
        rf_ckpt_close(ck);
        return rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory", name);
    }
    if (len)
        memcpy(ck->buf, data, len);
    ck->size = len;
    rf_status rc = parse(ck, CRC_ALL_OR_NONE);
    if (rc != RF_OK) {
        rf_ckpt_close(ck);
        return rc;
    }
    *out = ck;
    return RF_OK;
}

const char *rf_ckpt_path(const rf_ckpt *ck)
{
    return ck->path;
}

size_t rf_ckpt_count(const rf_ckpt *ck)
{
    return ck->n;
}

const rf_ckpt_entry *rf_ckpt_at(const rf_ckpt *ck, size_t i)
{
    return i < ck->n ? &ck->e[i] : NULL;
}

const rf_ckpt_entry *rf_ckpt_find(const rf_ckpt *ck, const char *name)
{
    size_t lo = 0, hi = ck->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(ck->e[mid].t.name, name);
        if (c == 0)
            return &ck->e[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const char *rf_ckpt_meta(const rf_ckpt *ck, const char *key)
{
    for (size_t m = 0; m < ck->nmeta; m++)
        if (!strcmp(ck->meta[2 * m], key))
            return ck->meta[2 * m + 1];
    return NULL;
}

bool rf_ckpt_has_crc(const rf_ckpt *ck)
{
    return ck->has_crc;
}

const char *rf_ckpt_note(const rf_ckpt *ck)
{
    return ck->note;
}
