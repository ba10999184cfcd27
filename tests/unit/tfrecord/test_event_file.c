/* tests/unit/tfrecord/test_event_file.c: session/event_file.c.
 *   unit       file names (TensorFlow's pattern, ".1" for a second file in
 *              the same second), the refusals (no scalars, an empty tag);
 *   write DIR  the file read_events.py expects: file_version first, then
 *              steps 100, 200 and 300 with the scalars loss = 2 - s/200,
 *              global_step/sec = s/4 and examples/sec = 250 s / 4 (all
 *              exact in float), wall times 1764800000 + s. Prints the path.
 *   tags DIR TAG...  an event file in DIR whose one summary, at step 7,
 *              holds TAG i = i + 0.5 (tags with control characters, for
 *              rf-events' escaping). Prints the path.
 *   reader     rf_summary_reader (session/summary_reader.c) on the
 *              writer's events (file version, SessionLog START, scalars
 *              with NaN and infinities, 2000 scalars in one event) read
 *              back exactly; on records made by hand: an Event of a kind
 *              the .proto lacks (a graph), a summary with an image and a
 *              tensor value beside a scalar (skipped, counted), TensorFlow
 *              2's scalars (rank-0 tensors of four dtypes, content or typed
 *              fields) beside tensors that are not scalars, bytes that
 *              are no Event, a small record decoding into a huge message
 *              (refused by the decode budget), and a file cut short.
 * What the records hold is checked by the independent reader
 * (read_events.py: protoc's Python classes of the same .proto). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rdmaflow/summary.h"
#include "session/event_file.h"
#include "session/tfrecord.h"
#include "tests/common/check.h"

#define T0 1764800000.0

static void unit(void)
{
    char dir[] = "/tmp/rf-events-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char sub[300];
    snprintf(sub, sizeof sub, "%s/a/b", dir); /* created with its parent */
    rf_event_file *f1 = NULL, *f2 = NULL;
    CHECK_OK(rf_event_file_create(sub, T0, &f1));
    CHECK_OK(rf_event_file_create(sub, T0 + 0.5, &f2));
    char host[256];
    CHECK(gethostname(host, sizeof host) == 0, "gethostname");
    char want[600];
    snprintf(want, sizeof want, "%s/events.out.tfevents.1764800000.%s", sub,
             host);
    CHECK(strcmp(rf_event_file_path(f1), want) == 0, "path %s, want %s",
          rf_event_file_path(f1), want);
    strncat(want, ".1", sizeof want - strlen(want) - 1);
    CHECK(strcmp(rf_event_file_path(f2), want) == 0,
          "second file in the same second: %s, want %s", rf_event_file_path(f2),
          want);
    const char *tags[] = {"loss", ""};
    const float vals[] = {1.0f, 2.0f};
    CHECK_ST(rf_event_file_scalars(f1, 1, T0, 0, tags, vals),
             RF_ERR_INVALID_ARG);
    CHECK_ST(rf_event_file_scalars(f1, 1, T0, 2, tags, vals),
             RF_ERR_INVALID_ARG);
    CHECK(strstr(rf_error_message(), "scalar 1 has no tag") != NULL,
          "message: %s", rf_error_message());
    CHECK_OK(rf_event_file_scalars(f1, 1, T0, 1, tags, vals));
    CHECK_OK(rf_event_file_flush(f1));
    char p1[600], p2[600];
    snprintf(p1, sizeof p1, "%s", rf_event_file_path(f1));
    snprintf(p2, sizeof p2, "%s", rf_event_file_path(f2));
    CHECK_OK(rf_event_file_close(f1));
    CHECK_OK(rf_event_file_close(f2));
    CHECK_OK(rf_event_file_close(NULL));
    unlink(p1);
    unlink(p2);
    rmdir(sub);
    snprintf(sub, sizeof sub, "%s/a", dir);
    rmdir(sub);
    rmdir(dir);
}

static void write_dir(const char *dir)
{
    rf_event_file *f = NULL;
    CHECK_OK(rf_event_file_create(dir, T0, &f));
    const char *tags[] = {"loss", "global_step/sec", "examples/sec"};
    for (int s = 100; s <= 300; s += 100) {
        float vals[] = {2.0f - (float)s / 200.0f, (float)s / 4.0f,
                        250.0f * (float)s / 4.0f};
        CHECK_OK(rf_event_file_scalars(f, s, T0 + s, 3, tags, vals));
    }
    CHECK_OK(rf_event_file_flush(f));
    printf("%s\n", rf_event_file_path(f));
    CHECK_OK(rf_event_file_close(f));
}

/* The next event of r, which must be there. */
static void next(rf_summary_reader *r, rf_summary_event *ev)
{
    bool end = true;
    CHECK_OK(rf_summary_reader_next(r, ev, &end));
    CHECK(!end, "%s: ended early", rf_summary_reader_path(r));
}

static void expect_end(rf_summary_reader *r)
{
    rf_summary_event ev;
    bool end = false;
    CHECK_OK(rf_summary_reader_next(r, &ev, &end));
    CHECK(end, "%s: an event after the last", rf_summary_reader_path(r));
}

/* The writer's events read back. */
static void reader_writer_file(const char *dir)
{
    rf_event_file *f = NULL;
    CHECK_OK(rf_event_file_create(dir, T0, &f));
    CHECK_OK(rf_event_file_session_start(f, 0, T0 + 0.25));
    const char *tags[] = {"loss", "accuracy", "nan", "inf", "-inf"};
    for (int s = 100; s <= 300; s += 100) {
        float vals[] = {2.0f - (float)s / 200.0f, 0.1f * (float)s / 100.0f, NAN,
                        INFINITY, -INFINITY};
        CHECK_OK(rf_event_file_scalars(f, s, T0 + s + 0.125, 5, tags, vals));
    }
    enum { MANY = 2000 };
    static char names[MANY][16];
    static const char *many_tags[MANY];
    static float many_vals[MANY];
    for (int i = 0; i < MANY; i++) {
        snprintf(names[i], sizeof names[i], "tag%d", i);
        many_tags[i] = names[i];
        many_vals[i] = (float)i / 7.0f;
    }
    CHECK_OK(
        rf_event_file_scalars(f, 400, T0 + 400, MANY, many_tags, many_vals));
    char path[600];
    snprintf(path, sizeof path, "%s", rf_event_file_path(f));
    CHECK_OK(rf_event_file_close(f));

    rf_summary_reader *r = NULL;
    CHECK_OK(rf_summary_reader_open(path, &r));
    CHECK(strcmp(rf_summary_reader_path(r), path) == 0, "path");
    rf_summary_event ev;
    next(r, &ev);
    CHECK(ev.kind == RF_SUMMARY_EVENT_FILE_VERSION && ev.record == 0 &&
              strcmp(ev.file_version, "brain.Event:2") == 0 &&
              ev.wall_time == T0 && ev.step == 0 && ev.num_values == 0,
          "first event: kind %d version %s", ev.kind,
          ev.file_version ? ev.file_version : "(null)");
    next(r, &ev);
    CHECK(ev.kind == RF_SUMMARY_EVENT_SESSION_LOG &&
              ev.session_status == RF_SUMMARY_SESSION_START &&
              ev.wall_time == T0 + 0.25 && ev.record == 1 && !ev.file_version,
          "session log: kind %d status %d", ev.kind, ev.session_status);
    for (int s = 100; s <= 300; s += 100) {
        next(r, &ev);
        CHECK(ev.kind == RF_SUMMARY_EVENT_SUMMARY && ev.step == s &&
                  ev.wall_time == T0 + s + 0.125 && ev.num_values == 5 &&
                  ev.num_skipped == 0,
              "step %d: kind %d step %lld, %zu values", s, ev.kind,
              (long long)ev.step, ev.num_values);
        for (size_t i = 0; i < 5; i++)
            CHECK(strcmp(ev.tags[i], tags[i]) == 0, "tag %zu: %s", i,
                  ev.tags[i]);
        CHECK(ev.values[0] == 2.0f - (float)s / 200.0f &&
                  ev.values[1] == 0.1f * (float)s / 100.0f &&
                  isnan(ev.values[2]) && ev.values[3] == INFINITY &&
                  ev.values[4] == -INFINITY,
              "step %d values %g %g %g %g %g", s, ev.values[0], ev.values[1],
              ev.values[2], ev.values[3], ev.values[4]);
    }
    next(r, &ev);
    CHECK(ev.num_values == MANY && ev.step == 400, "%zu values at step %lld",
          ev.num_values, (long long)ev.step);
    for (int i = 0; i < MANY; i++)
        CHECK(strcmp(ev.tags[i], names[i]) == 0 && ev.values[i] == many_vals[i],
              "value %d: %s=%g", i, ev.tags[i], ev.values[i]);
    expect_end(r);
    expect_end(r);
    rf_summary_reader_close(r);

    /* cut 3 bytes short: the last record torn */
    struct stat sb;
    CHECK(stat(path, &sb) == 0, "stat");
    CHECK(truncate(path, sb.st_size - 3) == 0, "truncate");
    CHECK_OK(rf_summary_reader_open(path, &r));
    for (int k = 0; k < 5; k++)
        next(r, &ev);
    bool end = false;
    for (int again = 0; again < 2; again++) {
        CHECK_ST(rf_summary_reader_next(r, &ev, &end), RF_ERR_CORRUPT);
        CHECK(!end && ev.num_values == 0 && ev.kind == 0, "event set");
        CHECK_MSG(path);
        CHECK_MSG("record 5 at offset ");
        CHECK_MSG("cut short");
    }
    rf_summary_reader_close(r);
    unlink(path);
}

/* Protocol-buffer encoding by hand, for records the writer never makes. */
typedef struct pb {
    unsigned char *b;
    size_t n, cap;
} pb;

static void pb_bytes(pb *p, const void *data, size_t n)
{
    if (p->n + n > p->cap) {
        p->cap = 2 * (p->n + n);
        p->b = realloc(p->b, p->cap);
        CHECK(p->b != NULL, "realloc");
    }
    if (n) /* data may be NULL for none */
        memcpy(p->b + p->n, data, n);
    p->n += n;
}

static void pb_varint(pb *p, uint64_t v)
{
    do {
        unsigned char c = (unsigned char)(v & 0x7f);
        v >>= 7;
        if (v)
            c |= 0x80;
        pb_bytes(p, &c, 1);
    } while (v);
}

/* field (number, length-delimited) holding n bytes */
static void pb_len(pb *p, int field, const void *data, size_t n)
{
    pb_varint(p, (uint64_t)field << 3 | 2);
    pb_varint(p, n);
    pb_bytes(p, data, n);
}

static void pb_double(pb *p, int field, double v)
{
    pb_varint(p, (uint64_t)field << 3 | 1);
    pb_bytes(p, &v, 8); /* little-endian host */
}

static void pb_float(pb *p, int field, float v)
{
    pb_varint(p, (uint64_t)field << 3 | 5);
    pb_bytes(p, &v, 4);
}

/* Records made by hand, as TensorFlow would write them. */
static void reader_foreign_file(const char *dir)
{
    char path[600];
    snprintf(path, sizeof path, "%s/events.out.tfevents.foreign", dir);
    rf_tfrecord_writer *w = NULL;
    CHECK_OK(rf_tfrecord_create(path, &w));
    /* 0: an Event with a graph_def (field 4), unknown to the .proto */
    pb e = {0};
    pb_double(&e, 1, T0 + 1);
    pb_varint(&e, 2 << 3), pb_varint(&e, 7);
    pb_len(&e, 4,
           "\x0a\x03"
           "abc",
           5);
    CHECK_OK(rf_tfrecord_write(w, e.b, e.n));
    /* 1: a summary: an image value, the scalar "loss", a tensor value */
    pb img = {0}, loss = {0}, ten = {0}, sum = {0};
    pb_len(&img, 1, "img", 3);
    pb_len(&img, 4, "\x08\x02\x10\x02", 4); /* Summary.Image */
    pb_len(&loss, 1, "loss", 4);
    pb_float(&loss, 2, 2.5f);
    pb_len(&ten, 1, "t", 1);
    pb_len(&ten, 8, "\x08\x01", 2); /* TensorProto dtype DT_FLOAT */
    pb_len(&sum, 1, img.b, img.n);
    pb_len(&sum, 1, loss.b, loss.n);
    pb_len(&sum, 1, ten.b, ten.n);
    e.n = 0;
    pb_double(&e, 1, T0 + 2);
    pb_varint(&e, 2 << 3), pb_varint(&e, 9);
    pb_len(&e, 5, sum.b, sum.n);
    CHECK_OK(rf_tfrecord_write(w, e.b, e.n));
    /* 2: TensorFlow 2's scalars, rank-0 tensors: float32 in
     * tensor_content (plugin "scalars"), float64 in tensor_content, int64
     * in int64_val, int32 (-3) in int_val; and tensors that are not
     * scalars: a vector of one, a "histograms" plugin's, 3 bytes for a float32,
     * a string */
    static const struct {
        const char *tag;
        int dtype;          /* DT_FLOAT 1, DT_DOUBLE 2, DT_INT32 3, ... */
        bool vector;        /* shape [2] */
        const char *plugin; /* metadata's plugin_name, or NULL */
        int field;          /* the value's field: 4 content, 7, 10 */
        const char *bytes;  /* its bytes (4: content; else varints) */
        size_t n;
    } tv[] = {
        {"f32", 1, false, "scalars", 4, "\x00\x00\x80\x3e", 4}, /* 0.25 */
        {"f64", 2, false, NULL, 4, "\0\0\0\0\0\0\xf8\x3f", 8},  /* 1.5 */
        {"i64", 9, false, "scalars", 10, "\x07", 1},
        {"i32", 3, false, NULL, 7, "\xfd\xff\xff\xff\xff\xff\xff\xff\xff\x01",
         10}, /* -3 */
        {"vec", 1, true, "scalars", 4, "\0\0\x80\x3e", 4},
        {"hist", 1, false, "histograms", 4, "\0\0\x80\x3e", 4},
        {"bad", 1, false, "scalars", 4, "\0\0\x80", 3},
        {"str", 7, false, NULL, 8, "ab", 2},
    };
    sum.n = 0;
    for (size_t i = 0; i < sizeof tv / sizeof tv[0]; i++) {
        pb t = {0}, shape = {0}, meta = {0}, plugin = {0}, val = {0};
        pb_varint(&t, 1 << 3), pb_varint(&t, (uint64_t)tv[i].dtype);
        if (tv[i].vector)
            pb_len(&shape, 2, "\x08\x01", 2); /* Dim {size: 1} */
        pb_len(&t, 2, shape.b, shape.n);
        pb_len(&t, tv[i].field, tv[i].bytes, tv[i].n);
        pb_len(&val, 1, tv[i].tag, strlen(tv[i].tag));
        if (tv[i].plugin) {
            pb_len(&plugin, 1, tv[i].plugin, strlen(tv[i].plugin));
            pb_len(&meta, 1, plugin.b, plugin.n);
            pb_len(&val, 9, meta.b, meta.n);
        }
        pb_len(&val, 8, t.b, t.n);
        pb_len(&sum, 1, val.b, val.n);
        free(t.b), free(shape.b), free(meta.b), free(plugin.b), free(val.b);
    }
    e.n = 0;
    pb_double(&e, 1, T0 + 3);
    pb_varint(&e, 2 << 3), pb_varint(&e, 10);
    pb_len(&e, 5, sum.b, sum.n);
    CHECK_OK(rf_tfrecord_write(w, e.b, e.n));
    /* 3: bytes that are no Event (field 1 with wire type 7) */
    CHECK_OK(rf_tfrecord_write(w, "\x0f\x01\x02", 3));
    CHECK_OK(rf_tfrecord_close(w));

    rf_summary_reader *r = NULL;
    CHECK_OK(rf_summary_reader_open(path, &r));
    rf_summary_event ev;
    next(r, &ev);
    CHECK(ev.kind == RF_SUMMARY_EVENT_OTHER && ev.step == 7 &&
              ev.wall_time == T0 + 1 && ev.num_values == 0,
          "graph event: kind %d step %lld", ev.kind, (long long)ev.step);
    next(r, &ev);
    CHECK(ev.kind == RF_SUMMARY_EVENT_SUMMARY && ev.step == 9 &&
              ev.num_values == 1 && ev.num_skipped == 2 &&
              strcmp(ev.tags[0], "loss") == 0 && ev.values[0] == 2.5f,
          "summary: kind %d, %zu values, %zu skipped", ev.kind, ev.num_values,
          ev.num_skipped);
    next(r, &ev);
    CHECK(ev.kind == RF_SUMMARY_EVENT_SUMMARY && ev.step == 10 &&
              ev.num_values == 4 && ev.num_skipped == 4,
          "tensors: kind %d, %zu values, %zu skipped", ev.kind, ev.num_values,
          ev.num_skipped);
    static const char *const scalar_tags[] = {"f32", "f64", "i64", "i32"};
    static const float scalar_values[] = {0.25f, 1.5f, 7.0f, -3.0f};
    for (size_t i = 0; i < 4; i++)
        CHECK(strcmp(ev.tags[i], scalar_tags[i]) == 0 &&
                  ev.values[i] == scalar_values[i],
              "tensor scalar %zu: %s=%g, want %s=%g", i, ev.tags[i],
              ev.values[i], scalar_tags[i], scalar_values[i]);
    bool end = false;
    for (int again = 0; again < 2; again++) {
        CHECK_ST(rf_summary_reader_next(r, &ev, &end), RF_ERR_CORRUPT);
        CHECK_MSG(path);
        CHECK_MSG("record 3 at offset ");
        CHECK_MSG("not a tensorflow.Event");
    }
    rf_summary_reader_close(r);
    unlink(path);

    /* a 400 kB record of 200000 empty values: 20 MB once decoded */
    snprintf(path, sizeof path, "%s/events.out.tfevents.huge", dir);
    CHECK_OK(rf_tfrecord_create(path, &w));
    sum.n = 0;
    for (int i = 0; i < 200000; i++)
        pb_len(&sum, 1, "", 0);
    e.n = 0;
    pb_len(&e, 5, sum.b, sum.n);
    CHECK_OK(rf_tfrecord_write(w, e.b, e.n));
    CHECK_OK(rf_tfrecord_close(w));
    CHECK_OK(rf_summary_reader_open(path, &r));
    CHECK_ST(rf_summary_reader_next(r, &ev, &end), RF_ERR_CORRUPT);
    CHECK_MSG("record 0 at offset 0: decoding its 400004 bytes as a "
              "tensorflow.Event would take more than the 7448640 bytes a "
              "record of that size may");
    rf_summary_reader_close(r);
    unlink(path);
    free(e.b), free(img.b), free(loss.b), free(ten.b), free(sum.b);

    CHECK_ST(rf_summary_reader_open(path, &r), RF_ERR_IO);
    CHECK(r == NULL, "a failed open left *out set");
    CHECK_MSG(path);
    CHECK_ST(rf_summary_reader_open(NULL, &r), RF_ERR_INVALID_ARG);
    rf_summary_reader_close(NULL);
}

static void reader(void)
{
    char dir[] = "/tmp/rf-events-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    reader_writer_file(dir);
    reader_foreign_file(dir);
    CHECK(rmdir(dir) == 0, "rmdir %s: left files behind", dir);
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "unit") == 0) {
        unit();
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "reader") == 0) {
        reader();
        return 0;
    }
    if (argc >= 4 && strcmp(argv[1], "tags") == 0) {
        size_t n = (size_t)argc - 3;
        float *vals = malloc(n * sizeof *vals);
        CHECK(vals != NULL, "malloc");
        for (size_t i = 0; i < n; i++)
            vals[i] = (float)i + 0.5f;
        rf_event_file *f = NULL;
        CHECK_OK(rf_event_file_create(argv[2], T0, &f));
        CHECK_OK(rf_event_file_scalars(f, 7, T0 + 7, n,
                                       (const char *const *)argv + 3, vals));
        printf("%s\n", rf_event_file_path(f));
        CHECK_OK(rf_event_file_close(f));
        free(vals);
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "write") == 0) {
        write_dir(argv[2]);
        return 0;
    }
    fprintf(stderr, "usage: rf_test_event_file unit | reader | write DIR | "
                    "tags DIR TAG...\n");
    return 2;
}
