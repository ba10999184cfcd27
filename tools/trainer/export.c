/* tools/trainer/export.c: --variables_out: every variable of the graph
 * (values, optimizer slots, beta powers, global_step) as one safetensors
 * file: an 8-byte little-endian header length, a JSON header mapping each
 * name to {"dtype","shape","data_offsets"} (keys in byte order of the names,
 * no metadata that varies between runs), then the raw little-endian data.
 * Two runs with bitwise-equal variables give byte-identical files. Written
 * to a temporary name, fsynced and renamed, so a crash never leaves a
 * partial file under the real name. */
#include "export.h"
#include "rdmaflow/byteorder.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *st_dtype(rf_dtype d)
{
    switch (d) {
    case RF_F32:
        return "F32";
    case RF_I32:
        return "I32";
    case RF_I64:
        return "I64";
    case RF_BOOL:
        return "BOOL";
    }
    return "?";
}

static int by_name(const void *a, const void *b)
{
    return strcmp(rf_node_name(*(rf_node *const *)a),
                  rf_node_name(*(rf_node *const *)b));
}

static int write_all(FILE *fp, const void *p, size_t n)
{
    return n == 0 || fwrite(p, 1, n, fp) == n ? 0 : -1;
}

int tr_export_variables(rf_graph *g, const char *path, char *err, size_t errlen)
{
    size_t n = rf_graph_num_variables(g);
    rf_node **vars = calloc(n ? n : 1, sizeof *vars);
    json_object *hdr = json_object_new_object();
    char tmp[4096];
    FILE *fp = NULL;
    int rc = -1;
    if (!vars || !hdr) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        vars[i] = rf_graph_variable(g, i);
    qsort(vars, n, sizeof *vars, by_name);
    uint64_t off = 0;
    for (size_t i = 0; i < n; i++) {
        rf_shape s = rf_node_shape(vars[i]);
        size_t bytes = rf_variable_bytes(vars[i]);
        json_object *e = json_object_new_object();
        json_object *shape = json_object_new_array();
        json_object *offs = json_object_new_array();
        for (int d = 0; d < s.rank; d++)
            json_object_array_add(shape, json_object_new_int64(s.dims[d]));
        json_object_array_add(offs, json_object_new_int64((int64_t)off));
        json_object_array_add(offs,
                              json_object_new_int64((int64_t)(off + bytes)));
        json_object_object_add(
            e, "dtype",
            json_object_new_string(st_dtype(rf_node_dtype(vars[i]))));
        json_object_object_add(e, "shape", shape);
        json_object_object_add(e, "data_offsets", offs);
        json_object_object_add(hdr, rf_node_name(vars[i]), e);
        off += bytes;
    }
    const char *text = json_object_to_json_string_ext(
        hdr, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    size_t hlen = strlen(text);
    /* safetensors pads the header with spaces to a multiple of 8 */
    size_t padded = (hlen + 7) / 8 * 8;
    unsigned char len8[8];
    rf_put_le64(len8, (uint64_t)padded);
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >=
        sizeof tmp) {
        snprintf(err, errlen, "%s: path too long", path);
        goto out;
    }
    fp = fopen(tmp, "wb");
    if (!fp) {
        snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
        goto out;
    }
    int bad = write_all(fp, len8, 8) || write_all(fp, text, hlen);
    for (size_t i = hlen; i < padded && !bad; i++)
        bad = fputc(' ', fp) == EOF;
    for (size_t i = 0; i < n && !bad; i++)
        bad = write_all(fp, rf_variable_data(vars[i]),
                        rf_variable_bytes(vars[i]));
    bad = bad || fflush(fp) != 0 || fsync(fileno(fp)) != 0;
    if (fclose(fp) != 0)
        bad = 1;
    fp = NULL;
    if (bad || rename(tmp, path) != 0) {
        snprintf(err, errlen, "writing %s failed: %s", path, strerror(errno));
        unlink(tmp);
        goto out;
    }
    rc = 0;
out:
    if (fp)
        fclose(fp);
    json_object_put(hdr);
    free(vars);
    return rc;
}
