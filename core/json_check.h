/* core/json_check.h: what json-c accepts but two JSON readers would read
 * two ways, refused by every reader of JSON from a file, a flag or a peer
 * (checkpoint headers, TF_CONFIG, ...). Private to the layers. */
#ifndef RF_CORE_JSON_CHECK_H
#define RF_CORE_JSON_CHECK_H

#include <stddef.h>

#include "rdmaflow/status.h"

/* Checks the len bytes of text, one JSON value and trailing whitespace, as
 * RFC 8259 has it and with nothing a second reader could read otherwise:
 * no key twice in one object (json-c keeps the last, others the first or
 * refuse), no NUL in a string (\u0000: a C reader cuts the string there),
 * no unpaired surrogate escape, no raw control byte or invalid UTF-8 in a
 * string, no integer outside int64 and no number beyond a double's range
 * (json-c clamps both), no comment, single quote, NaN or Infinity, nesting
 * at most 64 deep. RF_OK, or status with "what: ..." naming the key
 * (escaped) or the thing and its byte offset. Call it on text json-c
 * parsed, or on any text: it needs no parser before it. */
rf_status rf_json_check(const char *text, size_t len, rf_status status,
                        const char *what);

#endif
