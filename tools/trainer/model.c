/* tools/trainer/model.c: parsing --model and building the softmax, MLP and
 * CNN graphs (see model.h for the architectures). */
#include "model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/env.h"

/* Parses "W1,W2,..." into widths; exact count if want > 0. */
static int parse_widths(const char *list, tr_model *out, int want, char *err,
                        size_t errlen)
{
    const char *p = list;
    out->nwidths = 0;
    if (!*p) {
        snprintf(err, errlen, "empty list of widths after ':'");
        return -1;
    }
    for (;;) {
        if (out->nwidths == TR_MODEL_MAX_LAYERS) {
            snprintf(err, errlen, "more than %d layers", TR_MODEL_MAX_LAYERS);
            return -1;
        }
        char *end = NULL;
        errno = 0;
        long v = (*p >= '0' && *p <= '9') ? strtol(p, &end, 10) : 0;
        if (!end || end == p) {
            snprintf(err, errlen, "'%s': expected a layer width at offset %ld",
                     RF_ECHO(list), (long)(p - list));
            return -1;
        }
        if (errno == ERANGE || v < 1 || v > TR_MODEL_MAX_WIDTH) {
            snprintf(err, errlen,
                     "'%s': layer width %.*s is out of range "
                     "[1, %d]",
                     RF_ECHO(list), end - p > 20 ? 20 : (int)(end - p), p,
                     TR_MODEL_MAX_WIDTH);
            return -1;
        }
        out->widths[out->nwidths++] = (int)v;
        if (*end == '\0')
            break;
        if (*end != ',') {
            snprintf(err, errlen, "'%s': unexpected '%c' at offset %ld",
                     RF_ECHO(list), *end, (long)(end - list));
            return -1;
        }
        p = end + 1;
    }
    if (want > 0 && out->nwidths != want) {
        snprintf(err, errlen, "'%s': expected %d widths, got %d", RF_ECHO(list),
                 want, out->nwidths);
        return -1;
    }
    return 0;
}

int tr_model_parse(const char *text, tr_model *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *colon = strchr(text, ':');
    size_t name_len = colon ? (size_t)(colon - text) : strlen(text);
    if (name_len == 7 && !strncmp(text, "softmax", 7)) {
        out->kind = TR_MODEL_SOFTMAX;
        if (colon) {
            snprintf(err, errlen, "'%s': softmax takes no widths",
                     RF_ECHO(text));
            return -1;
        }
        return 0;
    }
    if (name_len == 3 && !strncmp(text, "mlp", 3)) {
        out->kind = TR_MODEL_MLP;
        if (!colon) {
            out->nwidths = 2;
            out->widths[0] = 256;
            out->widths[1] = 128;
            return 0;
        }
        return parse_widths(colon + 1, out, 0, err, errlen);
    }
    if (name_len == 3 && !strncmp(text, "cnn", 3)) {
        out->kind = TR_MODEL_CNN;
        if (!colon) {
            out->nwidths = 3;
            out->widths[0] = 16;
            out->widths[1] = 32;
            out->widths[2] = 128;
            return 0;
        }
        return parse_widths(colon + 1, out, 3, err, errlen);
    }
    if (name_len == 9 && !strncmp(text, "wide_deep", 9)) {
        out->kind = TR_MODEL_WIDE_DEEP;
        if (colon) {
            snprintf(err, errlen,
                     "'%s': wide_deep takes no widths (its layers are "
                     "--hidden)",
                     RF_ECHO(text));
            return -1;
        }
        return 0;
    }
    snprintf(err, errlen,
             "unknown model '%s' (expected softmax, mlp[:W1,W2,...], "
             "cnn[:C1,C2,D] or wide_deep)",
             RF_ECHO(text));
    return -1;
}

int tr_model_describe(const tr_model *m, char *buf, size_t len)
{
    char w[TR_MODEL_MAX_LAYERS * 8] = "";
    size_t off = 0;
    for (int i = 0; i < m->nwidths && off < sizeof w; i++)
        off += (size_t)snprintf(w + off, sizeof w - off, "%s%d", i ? "," : "",
                                m->widths[i]);
    switch (m->kind) {
    case TR_MODEL_SOFTMAX:
        return snprintf(buf, len, "softmax (784-10, logistic regression)");
    case TR_MODEL_MLP: {
        char arch[TR_MODEL_MAX_LAYERS * 8] = "";
        off = 0;
        for (int i = 0; i < m->nwidths && off < sizeof arch; i++)
            off += (size_t)snprintf(arch + off, sizeof arch - off, "-%d",
                                    m->widths[i]);
        return snprintf(buf, len, "mlp:%s (784%s-10, relu)", w, arch);
    }
    case TR_MODEL_CNN:
        return snprintf(buf, len,
                        "cnn:%s (conv5x5x%d-relu-maxpool2-conv5x5x%d-relu-"
                        "maxpool2-dense%d-relu-dense10)",
                        w, m->widths[0], m->widths[1], m->widths[2]);
    case TR_MODEL_WIDE_DEEP:
        return snprintf(buf, len, "wide_deep");
    }
    return snprintf(buf, len, "?");
}

rf_node *tr_model_build(rf_graph *g, const tr_model *m, rf_node *x, int rows,
                        int cols, int classes)
{
    rf_node *h = x;
    switch (m->kind) {
    case TR_MODEL_SOFTMAX:
        break;
    case TR_MODEL_MLP:
        for (int i = 0; i < m->nwidths; i++)
            h = rf_dense(g, h, m->widths[i], RF_ACT_RELU, NULL);
        break;
    case TR_MODEL_WIDE_DEEP: /* built by wide_deep.c, never here */
        return NULL;
    case TR_MODEL_CNN:
        h = rf_reshape(g, h, RF_SHAPE(-1, rows, cols, 1), "images");
        h = rf_conv2d_layer(g, h, m->widths[0], 5, 5, 1, RF_PADDING_SAME,
                            RF_ACT_RELU, NULL);
        h = rf_max_pool(g, h, 2, 2, 2, 2, RF_PADDING_SAME, NULL);
        h = rf_conv2d_layer(g, h, m->widths[1], 5, 5, 1, RF_PADDING_SAME,
                            RF_ACT_RELU, NULL);
        h = rf_max_pool(g, h, 2, 2, 2, 2, RF_PADDING_SAME, NULL);
        h = rf_flatten(g, h, NULL);
        h = rf_dense(g, h, m->widths[2], RF_ACT_RELU, NULL);
        break;
    }
    return rf_dense(g, h, classes, RF_ACT_NONE, "logits");
}

size_t tr_model_num_params(const rf_graph *g)
{
    rf_node *vars[256];
    size_t n = rf_graph_trainable_variables(g, vars, 256), total = 0;
    for (size_t i = 0; i < n && i < 256; i++) {
        rf_shape s = rf_node_shape(vars[i]);
        total += (size_t)rf_shape_numel(&s);
    }
    return total;
}
