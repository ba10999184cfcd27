/* tools/launch/trace_merge.h: one Chrome trace from the tasks' traces. */
#ifndef RF_LAUNCH_TRACE_MERGE_H
#define RF_LAUNCH_TRACE_MERGE_H

typedef struct lt_trace_part {
    const char *task; /* "worker0" */
    const char *path; /* its trace file */
} lt_trace_part;

/* Merges the Chrome trace event files of parts (JSON object format with a
 * "traceEvents" array, or the bare array format) into out_path, one
 * timeline: every event of part i gets "pid": i + 1; the parts'
 * process_name and process_sort_index metadata events are replaced by
 * one process_name (the task name) and one process_sort_index (i) per
 * part. Everything else (tid, ts, ids of flow events, args) is kept. If
 * every part carries "otherData": {"rf_epoch_us": T} (the CLOCK_MONOTONIC
 * time of its ts 0, in microseconds), timestamps are shifted onto a common
 * origin; otherwise each part keeps its own origin and this is reported.
 * A missing, empty or malformed part is reported (task, file, problem)
 * and left out. Returns the number of parts merged (0: none could be
 * read, and out_path is not written, so an existing file stays as it
 * was), or -1 when out_path could not be written. */
int lt_trace_merge(const char *out_path, const lt_trace_part *parts, int n);

#endif
