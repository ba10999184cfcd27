/* session/summary_reader.c: rf_summary_reader (rdmaflow/summary.h), the
 * public event-file reader: records from the TFRecord reader
 * (tfrecord_read.c), each decoded as a tensorflow.Event by protobuf-c
 * from the project's .proto (proto/tensorboard_event.proto), whose
 * unknown fields (images, histograms, graphs: what TensorFlow writes and
 * rdmaflow does not) protobuf-c keeps aside and this reader skips. A
 * scalar is a simple_value (TensorFlow 1's, rdmaflow's) or a rank-0
 * numeric tensor (TensorFlow 2's tf.summary.scalar). The
 * decoder allocates through a budget, so a small record that would
 * decode into a huge message (millions of empty values) is refused
 * instead of exhausting memory. */
#include "rdmaflow/summary.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/proto/tensorboard_event.pb-c.h" /* generated */
#include "session/tfrecord.h"

/* The most the decoder may hold for one record: 1 MiB + 16 bytes per
 * byte of the record, at most 256 MiB (a scalar summary decodes into a
 * few times its size, an image into about its own). */
#define DECODE_BASE  ((size_t)1 << 20)
#define DECODE_RATIO 16
#define DECODE_MAX   ((size_t)256 << 20)

/* protobuf-c's allocations for one record, counted against a budget. */
typedef struct decode_budget {
    size_t limit, used;
    bool exceeded;
} decode_budget;

typedef union budget_head { /* before each block: its size, aligned */
    size_t size;
    max_align_t align;
} budget_head;

static void *budget_alloc(void *ctx, size_t size)
{
    decode_budget *b = ctx;
    if (size > b->limit - b->used ||
        sizeof(budget_head) > b->limit - b->used - size) {
        b->exceeded = true;
        return NULL;
    }
    budget_head *h = malloc(sizeof *h + size);
    if (!h)
        return NULL;
    h->size = sizeof *h + size;
    b->used += h->size;
    return h + 1;
}

static void budget_free(void *ctx, void *p)
{
    decode_budget *b = ctx;
    if (!p)
        return;
    budget_head *h = (budget_head *)p - 1;
    b->used -= h->size;
    free(h);
}

struct rf_summary_reader {
    rf_tfrecord_reader *rec;
    decode_budget budget;
    ProtobufCAllocator alloc;
    Tensorflow__Event *ev; /* the last event decoded, until the next */
    const char **tags;     /* its scalars */
    float *values;
    size_t cap;
    rf_status failed; /* a decode error: returned by every later call */
    char failure[512];
};

rf_status rf_summary_reader_open(const char *path, rf_summary_reader **out)
{
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_summary_reader_open: out NULL");
    *out = NULL;
    if (!path || !*path)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "summary reader: no event file named");
    rf_summary_reader *r = calloc(1, sizeof *r);
    if (!r)
        return rf_error_set(RF_ERR_NO_MEMORY, "summary reader: no memory");
    rf_status st = rf_tfrecord_open(path, RF_TFRECORD_MAX_RECORD, &r->rec);
    if (st != RF_OK) {
        free(r);
        return st;
    }
    r->alloc = (ProtobufCAllocator){.alloc = budget_alloc,
                                    .free = budget_free,
                                    .allocator_data = &r->budget};
    *out = r;
    return RF_OK;
}

/* Drops the last event decoded. */
static void release(rf_summary_reader *r)
{
    if (r->ev)
        tensorflow__event__free_unpacked(r->ev, &r->alloc);
    r->ev = NULL;
}

static uint64_t get_le(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* A tensor value that is a scalar, as TensorFlow 2 writes one
 * (tf.summary.scalar: a rank-0 tensor of the "scalars" plugin, its bytes
 * in tensor_content) or with the typed fields: float32, float64, int32 or
 * int64, exactly one element. */
static bool tensor_scalar(const Tensorflow__Summary__Value *v, float *out)
{
    const Tensorflow__TensorProto *t = v->tensor;
    const Tensorflow__SummaryMetadata *m = v->metadata;
    if (!t || (t->tensor_shape && t->tensor_shape->n_dim != 0))
        return false;
    if (m && m->plugin_data && m->plugin_data->plugin_name &&
        m->plugin_data->plugin_name[0] &&
        strcmp(m->plugin_data->plugin_name, "scalars") != 0)
        return false;
    size_t len = t->tensor_content.len;
    const uint8_t *b = t->tensor_content.data;
    switch (t->dtype) {
    case TENSORFLOW__DATA_TYPE__DT_FLOAT:
        if (len == 4) {
            uint32_t u = (uint32_t)get_le(b, 4);
            memcpy(out, &u, 4);
        } else if (len == 0 && t->n_float_val == 1) {
            *out = t->float_val[0];
        } else {
            return false;
        }
        return true;
    case TENSORFLOW__DATA_TYPE__DT_DOUBLE: {
        double d;
        if (len == 8) {
            uint64_t u = get_le(b, 8);
            memcpy(&d, &u, 8);
        } else if (len == 0 && t->n_double_val == 1) {
            d = t->double_val[0];
        } else {
            return false;
        }
        *out = (float)d;
        return true;
    }
    case TENSORFLOW__DATA_TYPE__DT_INT32:
        if (len == 4)
            *out = (float)(int32_t)(uint32_t)get_le(b, 4);
        else if (len == 0 && t->n_int_val == 1)
            *out = (float)t->int_val[0];
        else
            return false;
        return true;
    case TENSORFLOW__DATA_TYPE__DT_INT64:
        if (len == 8)
            *out = (float)(int64_t)get_le(b, 8);
        else if (len == 0 && t->n_int64_val == 1)
            *out = (float)t->int64_val[0];
        else
            return false;
        return true;
    default:
        return false;
    }
}

/* The summary's scalars (simple values, and tensors that are scalars)
 * into r->tags and r->values; the others counted in ev->num_skipped. */
static rf_status collect_scalars(rf_summary_reader *r,
                                 const Tensorflow__Summary *sum,
                                 rf_summary_event *ev)
{
    if (sum->n_value > r->cap) {
        const char **tags = malloc(sum->n_value * sizeof *tags);
        float *values = malloc(sum->n_value * sizeof *values);
        if (!tags || !values) {
            free(tags);
            free(values);
            return rf_error_set(RF_ERR_NO_MEMORY,
                                "summary reader: no memory for %zu values",
                                sum->n_value);
        }
        free(r->tags);
        free(r->values);
        r->tags = tags;
        r->values = values;
        r->cap = sum->n_value;
    }
    size_t n = 0;
    for (size_t i = 0; i < sum->n_value; i++) {
        const Tensorflow__Summary__Value *v = sum->value[i];
        float x;
        if (v->value_case == TENSORFLOW__SUMMARY__VALUE__VALUE_SIMPLE_VALUE) {
            x = v->simple_value;
        } else if (v->value_case != TENSORFLOW__SUMMARY__VALUE__VALUE_TENSOR ||
                   !tensor_scalar(v, &x)) {
            ev->num_skipped++;
            continue;
        }
        r->tags[n] = v->tag ? v->tag : "";
        r->values[n] = x;
        n++;
    }
    ev->num_values = n;
    ev->tags = r->tags;
    ev->values = r->values;
    return RF_OK;
}

/* Records the message just set as r's failure (see rf_summary_reader_next). */
static rf_status fail(rf_summary_reader *r, rf_status st)
{
    r->failed = st;
    snprintf(r->failure, sizeof r->failure, "%s", rf_error_message());
    return st;
}

rf_status rf_summary_reader_next(rf_summary_reader *r, rf_summary_event *ev,
                                 bool *end)
{
    if (!r || !ev || !end)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_summary_reader_next: a NULL argument");
    *ev = (rf_summary_event){0};
    *end = false;
    release(r);
    if (r->failed != RF_OK)
        return rf_error_set(r->failed, "%s", r->failure);
    const void *data;
    size_t len;
    rf_status st = rf_tfrecord_read(r->rec, &data, &len, end);
    if (st != RF_OK || *end)
        return st;
    uint64_t record = rf_tfrecord_reader_record(r->rec);
    size_t limit =
        DECODE_BASE + (len < (DECODE_MAX - DECODE_BASE) / DECODE_RATIO
                           ? len * DECODE_RATIO
                           : DECODE_MAX - DECODE_BASE);
    r->budget = (decode_budget){.limit = limit};
    r->ev = tensorflow__event__unpack(&r->alloc, len, data);
    if (!r->ev && r->budget.exceeded)
        return fail(r, rf_error_set(RF_ERR_CORRUPT,
                                    "summary reader: %s: record %" PRIu64
                                    " at offset %" PRIu64
                                    ": decoding its %zu bytes as a "
                                    "tensorflow.Event would take more than "
                                    "the %zu bytes a record of that size "
                                    "may",
                                    rf_summary_reader_path(r), record,
                                    rf_tfrecord_reader_offset(r->rec), len,
                                    limit));
    if (!r->ev)
        return fail(r, rf_error_set(RF_ERR_CORRUPT,
                                    "summary reader: %s: record %" PRIu64
                                    " at offset %" PRIu64
                                    ": not a tensorflow.Event (its %zu bytes "
                                    "are no Event protocol buffer)",
                                    rf_summary_reader_path(r), record,
                                    rf_tfrecord_reader_offset(r->rec), len));
    const Tensorflow__Event *e = r->ev;
    ev->wall_time = e->wall_time;
    ev->step = e->step;
    ev->record = record;
    switch (e->what_case) {
    case TENSORFLOW__EVENT__WHAT_FILE_VERSION:
        ev->kind = RF_SUMMARY_EVENT_FILE_VERSION;
        ev->file_version = e->file_version ? e->file_version : "";
        break;
    case TENSORFLOW__EVENT__WHAT_SUMMARY:
        ev->kind = RF_SUMMARY_EVENT_SUMMARY;
        if (e->summary) {
            st = collect_scalars(r, e->summary, ev);
            if (st != RF_OK) {
                release(r);
                *ev = (rf_summary_event){0};
                return st;
            }
        }
        break;
    case TENSORFLOW__EVENT__WHAT_SESSION_LOG:
        ev->kind = RF_SUMMARY_EVENT_SESSION_LOG;
        ev->session_status = e->session_log ? (int)e->session_log->status : 0;
        break;
    default:
        ev->kind = RF_SUMMARY_EVENT_OTHER;
        break;
    }
    return RF_OK;
}

const char *rf_summary_reader_path(const rf_summary_reader *r)
{
    return r ? rf_tfrecord_reader_path(r->rec) : NULL;
}

void rf_summary_reader_close(rf_summary_reader *r)
{
    if (!r)
        return;
    release(r);
    rf_tfrecord_reader_close(r->rec);
    free(r->tags);
    free(r->values);
    free(r);
}
