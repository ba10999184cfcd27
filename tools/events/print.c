/* tools/events/print.c: one event as rf-events prints it. Text: "step S
 * wall_time T" and what the event holds (tag=value pairs, the file
 * version, the session status), text from the file escaped. JSON: one
 * object per line, {"file", "record", "step", "wall_time", "kind",
 * "values": {tag: value}} and, by kind, "file_version", "session_status",
 * "skipped"; built with json-c. Numbers are written in the fewest digits
 * that read back to the same float (values) or double (wall_time); a
 * value that is not finite, which JSON has no number for, is the string
 * "NaN", "Infinity" or "-Infinity" (protobuf's JSON mapping). */
#include <inttypes.h>
#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "events_tool.h"

/* The shortest "%.Ng" of v that reads back as v. */
static void fmt_float(float v, char *buf, size_t len)
{
    for (int p = 6; p <= 9; p++) {
        snprintf(buf, len, "%.*g", p, (double)v);
        if (strtof(buf, NULL) == v)
            return;
    }
}

static void fmt_double(double v, char *buf, size_t len)
{
    for (int p = 15; p <= 17; p++) {
        snprintf(buf, len, "%.*g", p, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

static const char *kind_name(rf_summary_event_kind k)
{
    switch (k) {
    case RF_SUMMARY_EVENT_FILE_VERSION:
        return "file_version";
    case RF_SUMMARY_EVENT_SUMMARY:
        return "summary";
    case RF_SUMMARY_EVENT_SESSION_LOG:
        return "session_log";
    default:
        return "other";
    }
}

/* TensorFlow's SessionLog status names; NULL for another number. */
static const char *status_name(int s)
{
    static const char *const names[] = {"STATUS_UNSPECIFIED", "START", "STOP",
                                        "CHECKPOINT"};
    return s >= 0 && s < 4 ? names[s] : NULL;
}

void ev_print_text(FILE *fp, const rf_summary_event *ev)
{
    fprintf(fp, "step %" PRId64 " wall_time %.6f", ev->step, ev->wall_time);
    switch (ev->kind) {
    case RF_SUMMARY_EVENT_FILE_VERSION:
        fputs(" file_version ", fp);
        rf_fputs_escaped(ev->file_version, fp);
        break;
    case RF_SUMMARY_EVENT_SUMMARY:
        for (size_t i = 0; i < ev->num_values; i++) {
            char num[32];
            fmt_float(ev->values[i], num, sizeof num);
            fputc(' ', fp);
            rf_fputs_escaped(ev->tags[i], fp);
            fprintf(fp, "=%s", num);
        }
        if (ev->num_values == 0)
            fputs(" summary", fp);
        if (ev->num_skipped)
            fprintf(fp, " (%zu values not scalars, skipped)", ev->num_skipped);
        break;
    case RF_SUMMARY_EVENT_SESSION_LOG:
        if (status_name(ev->session_status))
            fprintf(fp, " session_log %s", status_name(ev->session_status));
        else
            fprintf(fp, " session_log status %d", ev->session_status);
        break;
    default:
        fputs(" other (an event rf-events does not read)", fp);
        break;
    }
    fputc('\n', fp);
}

/* v as a JSON number, or the string protobuf's JSON mapping uses. */
static json_object *json_float(float v)
{
    if (isnan(v))
        return json_object_new_string("NaN");
    if (isinf(v))
        return json_object_new_string(v > 0 ? "Infinity" : "-Infinity");
    char num[32];
    fmt_float(v, num, sizeof num);
    return json_object_new_double_s((double)v, num);
}

/* Adds key: s (made valid UTF-8) to obj; -1 when out of memory. */
static int add_string(json_object *obj, const char *key, const char *s)
{
    char *clean = ev_utf8_clean(s);
    json_object *v = clean ? json_object_new_string(clean) : NULL;
    free(clean);
    if (!v)
        return -1;
    json_object_object_add(obj, key, v);
    return 0;
}

int ev_print_json(FILE *fp, const char *path, const rf_summary_event *ev)
{
    json_object *o = json_object_new_object(), *values = NULL;
    if (!o || add_string(o, "file", path) < 0)
        goto err_object;
    json_object_object_add(o, "record", json_object_new_uint64(ev->record));
    json_object_object_add(o, "step", json_object_new_int64(ev->step));
    char num[32];
    fmt_double(ev->wall_time, num, sizeof num);
    json_object_object_add(o, "wall_time",
                           isfinite(ev->wall_time)
                               ? json_object_new_double_s(ev->wall_time, num)
                               : NULL);
    json_object_object_add(o, "kind",
                           json_object_new_string(kind_name(ev->kind)));
    values = json_object_new_object();
    if (!values)
        goto err_object;
    json_object_object_add(o, "values", values);
    for (size_t i = 0; i < ev->num_values; i++) {
        /* a tag given twice: the last value, as a JSON reader would */
        char *tag = ev_utf8_clean(ev->tags[i]);
        json_object *v = json_float(ev->values[i]);
        if (!tag || !v) {
            free(tag);
            json_object_put(v);
            goto err_object;
        }
        json_object_object_add(values, tag, v);
        free(tag);
    }
    if (ev->kind == RF_SUMMARY_EVENT_FILE_VERSION &&
        add_string(o, "file_version", ev->file_version) < 0)
        goto err_object;
    if (ev->kind == RF_SUMMARY_EVENT_SESSION_LOG) {
        const char *s = status_name(ev->session_status);
        json_object_object_add(o, "session_status",
                               s ? json_object_new_string(s)
                                 : json_object_new_int(ev->session_status));
    }
    if (ev->num_skipped)
        json_object_object_add(o, "skipped",
                               json_object_new_uint64(ev->num_skipped));
    ev_put_json(
        fp, json_object_to_json_string_ext(
                o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    fputc('\n', fp);
    json_object_put(o);
    return 0;
err_object:
    json_object_put(o);
    return -1;
}
