/* session/summary_writer.c: rf_summary_writer (rdmaflow/summary.h), the
 * public event-file writer: an event file (event_file.c) stamped with the
 * wall clock, one writer at a time. */
#include "rdmaflow/summary.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "session/event_file.h"

struct rf_summary_writer {
    pthread_mutex_t lock;
    rf_event_file *f;
};

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

rf_status rf_summary_writer_open(const char *logdir, rf_summary_writer **out)
{
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_summary_writer_open: out NULL");
    *out = NULL;
    if (!logdir || !*logdir)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "summary writer: no log directory");
    rf_summary_writer *w = calloc(1, sizeof *w);
    if (!w)
        return rf_error_set(RF_ERR_NO_MEMORY, "summary writer: no memory");
    rf_status st = rf_event_file_create(logdir, wall_now(), &w->f);
    if (st != RF_OK) {
        free(w);
        return st;
    }
    pthread_mutex_init(&w->lock, NULL);
    *out = w;
    return RF_OK;
}

rf_status rf_summary_writer_scalars(rf_summary_writer *w, int64_t step,
                                    size_t n, const char *const *tags,
                                    const float *values)
{
    if (!w)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_summary_writer_scalars: writer NULL");
    pthread_mutex_lock(&w->lock);
    rf_status st =
        rf_event_file_scalars(w->f, step, wall_now(), n, tags, values);
    pthread_mutex_unlock(&w->lock);
    return st;
}

rf_status rf_summary_writer_session_start(rf_summary_writer *w, int64_t step)
{
    if (!w)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_summary_writer_session_start: writer NULL");
    pthread_mutex_lock(&w->lock);
    rf_status st = rf_event_file_session_start(w->f, step, wall_now());
    pthread_mutex_unlock(&w->lock);
    return st;
}

rf_status rf_summary_writer_flush(rf_summary_writer *w)
{
    if (!w)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_summary_writer_flush: writer NULL");
    pthread_mutex_lock(&w->lock);
    rf_status st = rf_event_file_flush(w->f);
    pthread_mutex_unlock(&w->lock);
    return st;
}

rf_status rf_summary_writer_close(rf_summary_writer *w)
{
    if (!w)
        return RF_OK;
    rf_status st = rf_event_file_flush(w->f);
    rf_status cs = rf_event_file_close(w->f);
    pthread_mutex_destroy(&w->lock);
    free(w);
    return st != RF_OK ? st : cs;
}

const char *rf_summary_writer_path(const rf_summary_writer *w)
{
    return w ? rf_event_file_path(w->f) : NULL;
}
