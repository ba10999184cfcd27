/* tools/events/events_tool.h: what rf-events' files share: the event
 * printers (print.c) and the escaping of text that comes from a file
 * (escape.c). */
#ifndef RF_TOOLS_EVENTS_TOOL_H
#define RF_TOOLS_EVENTS_TOOL_H

#include <stdio.h>

#include "rdmaflow/escape.h"
#include "rdmaflow/summary.h"

/* s as valid UTF-8 (each byte that is not part of a valid sequence
 * replaced by U+FFFD), for a JSON string; a string the caller frees, NULL
 * when out of memory. */
char *ev_utf8_clean(const char *s);

/* Writes JSON text (json-c's output) to fp with U+007F and the C1
 * controls, which json-c leaves raw inside strings, as \u escapes. */
void ev_put_json(FILE *fp, const char *json);

/* One event of path: a text line, or a JSON object on one line. Return
 * 0, or -1 when out of memory. */
void ev_print_text(FILE *fp, const rf_summary_event *ev);
int ev_print_json(FILE *fp, const char *path, const rf_summary_event *ev);

#endif
