/* session/event_file.c: TensorBoard event files (see event_file.h). */
#include "session/event_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdmaflow/checkpoint.h"
#include "session/proto/tensorboard_event.pb-c.h" /* generated */
#include "session/tfrecord.h"

struct rf_event_file {
    rf_tfrecord_writer *w;
};

/* Encodes ev and appends it as one record. */
static rf_status write_event(rf_event_file *f, const Tensorflow__Event *ev)
{
    size_t len = tensorflow__event__get_packed_size(ev);
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf)
        return rf_error_set(RF_ERR_NO_MEMORY,
                            "event file %s: out of memory for %zu bytes",
                            rf_tfrecord_path(f->w), len);
    size_t packed = tensorflow__event__pack(ev, buf);
    rf_status st = packed == len
                       ? rf_tfrecord_write(f->w, buf, len)
                       : rf_error_set(RF_ERR_CORRUPT,
                                      "event file %s: encoded %zu "
                                      "bytes, expected %zu",
                                      rf_tfrecord_path(f->w), packed, len);
    free(buf);
    return st;
}

rf_status rf_event_file_create(const char *dir, double wall_time,
                               rf_event_file **out)
{
    *out = NULL;
    rf_status st = rf_ckpt_dir_create(dir);
    if (st != RF_OK)
        return rf_error_prefix(st, "event file");
    char host[256];
    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = '\0';
    rf_event_file *f = calloc(1, sizeof *f);
    if (!f)
        return rf_error_set(RF_ERR_NO_MEMORY, "event file: out of memory");
    long long secs = (long long)wall_time;
    for (int k = 0; k < 100; k++) {
        char path[4096];
        char suffix[16] = "";
        if (k)
            snprintf(suffix, sizeof suffix, ".%d", k);
        int n =
            snprintf(path, sizeof path, "%s/events.out.tfevents.%010lld.%s%s",
                     dir, secs, host, suffix);
        if (n < 0 || (size_t)n >= sizeof path) {
            free(f);
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "event file: path in %s too long", dir);
        }
        st = rf_tfrecord_create(path, &f->w);
        if (st != RF_ERR_INVALID_ARG || access(path, F_OK) != 0)
            break; /* created, or failed for another reason than a taken name */
    }
    if (st != RF_OK) {
        free(f);
        return st;
    }
    Tensorflow__Event ev = TENSORFLOW__EVENT__INIT;
    ev.wall_time = wall_time;
    ev.what_case = TENSORFLOW__EVENT__WHAT_FILE_VERSION;
    ev.file_version = (char *)(uintptr_t)RF_EVENT_FILE_VERSION;
    st = write_event(f, &ev);
    if (st != RF_OK) {
        rf_event_file_close(f);
        return st;
    }
    *out = f;
    return RF_OK;
}

rf_status rf_event_file_scalars(rf_event_file *f, int64_t step,
                                double wall_time, size_t n,
                                const char *const *tags, const float *values)
{
    if (n == 0 || !tags || !values)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "event file %s: no scalars to write",
                            rf_tfrecord_path(f->w));
    for (size_t i = 0; i < n; i++)
        if (!tags[i] || !*tags[i])
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "event file %s: scalar %zu has no tag",
                                rf_tfrecord_path(f->w), i);
    Tensorflow__Summary__Value *vals = calloc(n, sizeof *vals);
    Tensorflow__Summary__Value **ptrs = calloc(n, sizeof *ptrs);
    if (!vals || !ptrs) {
        free(vals);
        free(ptrs);
        return rf_error_set(RF_ERR_NO_MEMORY, "event file: out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        tensorflow__summary__value__init(&vals[i]);
        vals[i].tag = (char *)(uintptr_t)tags[i];
        vals[i].value_case = TENSORFLOW__SUMMARY__VALUE__VALUE_SIMPLE_VALUE;
        vals[i].simple_value = values[i];
        ptrs[i] = &vals[i];
    }
    Tensorflow__Summary sum = TENSORFLOW__SUMMARY__INIT;
    sum.n_value = n;
    sum.value = ptrs;
    Tensorflow__Event ev = TENSORFLOW__EVENT__INIT;
    ev.wall_time = wall_time;
    ev.step = step;
    ev.what_case = TENSORFLOW__EVENT__WHAT_SUMMARY;
    ev.summary = &sum;
    rf_status st = write_event(f, &ev);
    free(vals);
    free(ptrs);
    return st;
}

rf_status rf_event_file_session_start(rf_event_file *f, int64_t step,
                                      double wall_time)
{
    Tensorflow__SessionLog log = TENSORFLOW__SESSION_LOG__INIT;
    log.status = TENSORFLOW__SESSION_LOG__SESSION_STATUS__START;
    Tensorflow__Event ev = TENSORFLOW__EVENT__INIT;
    ev.wall_time = wall_time;
    ev.step = step;
    ev.what_case = TENSORFLOW__EVENT__WHAT_SESSION_LOG;
    ev.session_log = &log;
    return write_event(f, &ev);
}

rf_status rf_event_file_flush(rf_event_file *f)
{
    return rf_tfrecord_sync(f->w);
}

rf_status rf_event_file_close(rf_event_file *f)
{
    if (!f)
        return RF_OK;
    rf_status st = rf_tfrecord_close(f->w);
    free(f);
    return st;
}

const char *rf_event_file_path(const rf_event_file *f)
{
    return rf_tfrecord_path(f->w);
}
