/* tools/launch/trace_merge.c: merges per-task Chrome trace event JSON files
 * with json-c. Each part is parsed whole (with the tokener, to report where
 * a corrupt file breaks), its events re-labelled and appended; the result
 * is written by rdmaflow/file.h's writer (a temporary file beside the
 * target, fsynced and renamed into place; a symbolic link followed). */
#include "trace_merge.h"

#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launch.h"
#include "rdmaflow/file.h"

typedef struct part_in {
    json_object *root;   /* parsed file, or NULL */
    json_object *events; /* its event array (borrowed) */
    bool has_epoch;
    double epoch_us;
} part_in;

/* Reads a whole file; NULL with errno set on failure. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        char *nb = cap > (size_t)INT_MAX / 4 ? NULL : realloc(buf, cap * 2);
        if (!nb) {
            free(buf);
            buf = NULL;
            errno = EFBIG;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    int rerr = ferror(f) ? EIO : 0;
    fclose(f);
    if (buf && rerr) {
        free(buf);
        errno = rerr;
        return NULL;
    }
    *len = n;
    return buf;
}

static bool is_blank(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] != ' ' && s[i] != '\n' && s[i] != '\r' && s[i] != '\t')
            return false;
    return true;
}

/* Parses one part; on a problem reports it and leaves p->root NULL. */
static void load_part(const lt_trace_part *part, part_in *p)
{
    size_t len = 0;
    char *buf = slurp(part->path, &len);
    if (!buf) {
        lt_msg("trace: %s: no trace from %s (%s)", part->path, part->task,
               strerror(errno));
        return;
    }
    json_tokener *tok = json_tokener_new();
    json_object *root = NULL;
    if (is_blank(buf, len)) {
        lt_msg("trace: %s: the trace of %s is empty", part->path, part->task);
    } else if (!tok) {
        lt_msg("trace: %s: out of memory", part->path);
    } else {
        root = json_tokener_parse_ex(tok, buf, (int)len);
        enum json_tokener_error e = json_tokener_get_error(tok);
        size_t end = json_tokener_get_parse_end(tok);
        if (!root && e == json_tokener_continue) {
            lt_msg("trace: %s: the trace of %s is not valid JSON: it ends "
                   "early, at byte %zu (truncated?)",
                   part->path, part->task, len);
        } else if (!root) {
            lt_msg("trace: %s: the trace of %s is not valid JSON: %s at "
                   "byte %zu",
                   part->path, part->task, json_tokener_error_desc(e), end);
        } else if (!is_blank(buf + end, len - end)) {
            lt_msg("trace: %s: the trace of %s is not valid JSON: trailing "
                   "data at byte %zu",
                   part->path, part->task, end);
            json_object_put(root);
            root = NULL;
        }
    }
    if (tok)
        json_tokener_free(tok);
    free(buf);
    if (!root)
        return;
    json_object *events = NULL;
    if (json_object_is_type(root, json_type_array))
        events = root;
    else if (!json_object_is_type(root, json_type_object) ||
             !json_object_object_get_ex(root, "traceEvents", &events) ||
             !json_object_is_type(events, json_type_array)) {
        lt_msg("trace: %s: the trace of %s has no \"traceEvents\" array",
               part->path, part->task);
        json_object_put(root);
        return;
    }
    p->root = root;
    p->events = events;
    json_object *other, *epoch;
    if (json_object_is_type(root, json_type_object) &&
        json_object_object_get_ex(root, "otherData", &other) &&
        json_object_object_get_ex(other, "rf_epoch_us", &epoch) &&
        (json_object_is_type(epoch, json_type_double) ||
         json_object_is_type(epoch, json_type_int))) {
        p->has_epoch = true;
        p->epoch_us = json_object_get_double(epoch);
    }
}

static json_object *metadata(const char *name, int pid, const char *key,
                             json_object *value)
{
    json_object *ev = json_object_new_object();
    json_object_object_add(ev, "name", json_object_new_string(name));
    json_object_object_add(ev, "ph", json_object_new_string("M"));
    json_object_object_add(ev, "pid", json_object_new_int(pid));
    json_object_object_add(ev, "tid", json_object_new_int(0));
    json_object *args = json_object_new_object();
    json_object_object_add(args, key, value);
    json_object_object_add(ev, "args", args);
    return ev;
}

/* The part's own process naming, replaced by ours. */
static bool is_process_metadata(json_object *ev)
{
    json_object *ph, *name;
    if (!json_object_object_get_ex(ev, "ph", &ph) ||
        !json_object_object_get_ex(ev, "name", &name))
        return false;
    const char *p = json_object_get_string(ph),
               *nm = json_object_get_string(name);
    return p && nm && !strcmp(p, "M") &&
           (!strcmp(nm, "process_name") || !strcmp(nm, "process_sort_index"));
}

/* Appends part p's events with pid and the timestamp shift applied.
 * Returns how many non-object entries were skipped. */
static size_t append_events(json_object *out, const part_in *p, int pid,
                            double shift_us)
{
    size_t skipped = 0, n = json_object_array_length(p->events);
    for (size_t i = 0; i < n; i++) {
        json_object *ev = json_object_array_get_idx(p->events, i);
        if (!json_object_is_type(ev, json_type_object)) {
            skipped++;
            continue;
        }
        if (is_process_metadata(ev))
            continue;
        json_object_object_add(ev, "pid", json_object_new_int(pid));
        json_object *ts;
        if (shift_us != 0 && json_object_object_get_ex(ev, "ts", &ts) &&
            (json_object_is_type(ts, json_type_double) ||
             json_object_is_type(ts, json_type_int))) {
            char txt[64];
            double v = json_object_get_double(ts) + shift_us;
            snprintf(txt, sizeof txt, "%.3f", v);
            json_object_object_add(ev, "ts", json_object_new_double_s(v, txt));
        }
        json_object_array_add(out, json_object_get(ev));
    }
    return skipped;
}

int lt_trace_merge(const char *out_path, const lt_trace_part *parts, int n)
{
    part_in *in = calloc((size_t)n, sizeof *in);
    if (!in) {
        lt_msg("trace: out of memory");
        return -1;
    }
    bool all_epochs = true;
    double min_epoch = 0;
    int loaded = 0;
    for (int i = 0; i < n; i++) {
        load_part(&parts[i], &in[i]);
        if (!in[i].root)
            continue;
        if (in[i].has_epoch && (loaded == 0 || in[i].epoch_us < min_epoch))
            min_epoch = in[i].epoch_us;
        all_epochs &= in[i].has_epoch;
        loaded++;
    }
    if (loaded == 0) {
        /* nothing to merge: out_path is neither made nor replaced by an
         * empty trace */
        free(in);
        return 0;
    }
    if (loaded > 1 && !all_epochs)
        lt_msg("trace: not every task trace has otherData.rf_epoch_us; each "
               "task's timeline in %s starts at its own origin",
               out_path);
    json_object *root = json_object_new_object();
    json_object *events = json_object_new_array();
    json_object *pids = json_object_new_object();
    for (int i = 0; i < n; i++) {
        if (!in[i].root)
            continue;
        json_object_array_add(events,
                              metadata("process_name", i + 1, "name",
                                       json_object_new_string(parts[i].task)));
        json_object_array_add(events,
                              metadata("process_sort_index", i + 1,
                                       "sort_index", json_object_new_int(i)));
        double shift = all_epochs ? in[i].epoch_us - min_epoch : 0;
        size_t skipped = append_events(events, &in[i], i + 1, shift);
        if (skipped)
            lt_msg("trace: %s: skipped %zu entries of %s that are not "
                   "objects",
                   parts[i].path, skipped, parts[i].task);
        json_object_object_add(pids, parts[i].task, json_object_new_int(i + 1));
    }
    json_object_object_add(root, "traceEvents", events);
    json_object_object_add(root, "displayTimeUnit",
                           json_object_new_string("ms"));
    json_object *other = json_object_new_object();
    json_object *launch = json_object_new_object();
    json_object_object_add(launch, "pids", pids);
    json_object_object_add(launch, "aligned",
                           json_object_new_boolean(loaded > 0 && all_epochs));
    json_object_object_add(other, "rf_launch", launch);
    json_object_object_add(root, "otherData", other);

    int rc = loaded;
    size_t len = 0;
    const char *text = json_object_to_json_string_length(
        root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    if (!text) {
        lt_msg("trace: out of memory");
        rc = -1;
    } else if (rf_file_write_atomic(out_path,
                                    (rf_file_chunk[]){{text, len}, {"\n", 1}},
                                    2) != RF_OK) {
        lt_msg("trace: %s", rf_error_message());
        rc = -1;
    }
    json_object_put(root);
    for (int i = 0; i < n; i++)
        if (in[i].root)
            json_object_put(in[i].root);
    free(in);
    return rc;
}
