/* tools/info/info.h: rf-info's two halves. collect.c asks the library what
 * it finds here and builds one JSON document (json-c); text.c prints that
 * same document for people, so the text and --json cannot disagree. */
#ifndef RF_TOOLS_INFO_H
#define RF_TOOLS_INFO_H

#include <json-c/json.h>
#include <stdio.h>

/* The document: providers, verbs devices, the choice for addr (NULL: no
 * address section), settings. *failed is set when something rf-info was
 * asked about could not be answered (it is in the document as "error"). */
json_object *info_collect(const char *addr, int *failed);

void info_print_text(FILE *out, json_object *doc);

#endif
