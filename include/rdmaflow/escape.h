/* rdmaflow/escape.h: how text that came from a file, a flag or a peer (a
 * tensor name, a path, a device string, a protocol field) is printed, so
 * that it can neither act on a terminal nor be read two ways. Every tool
 * prints such text through rf_escape; the library's error messages
 * (rf_error_set) and log lines pass through it too (RF_ESCAPE_CONTROLS). */
#ifndef RDMAFLOW_ESCAPE_H
#define RDMAFLOW_ESCAPE_H

#include "rdmaflow/api.h"

#include <stddef.h>
#include <stdio.h>

/* RF_ESCAPE_ALL: C-style escapes, reversible: \n \t \r \\ \" and \xNN for
 * every other byte below 0x20, 0x7f, the C1 controls (U+0080..U+009F, as
 * the two bytes of their UTF-8 form) and every byte that is not part of a
 * valid UTF-8 sequence (stray continuation bytes, overlong forms,
 * surrogates, above U+10FFFF, cut short). Printable UTF-8 is kept as it is.
 * RF_ESCAPE_CONTROLS: the same, but \ and " are kept as they are: for text
 * that may already hold escaped values (a whole error message). */
typedef enum rf_escape_mode {
    RF_ESCAPE_ALL = 0,
    RF_ESCAPE_CONTROLS = 1,
} rf_escape_mode;

/* Writes the n bytes of text, escaped, to buf with snprintf's contract:
 * NUL-terminated when len > 0, cut only between two escapes; returns the
 * bytes the whole escaped text needs (NUL excluded). text may hold NULs
 * (each is written as \x00). */
RF_API size_t rf_escape(char *buf, size_t len, const char *text, size_t n,
                        rf_escape_mode mode);
/* The NUL-terminated text escaped (RF_ESCAPE_ALL) in a malloc'd string,
 * NULL when out of memory; "(null)" for NULL text. */
RF_API char *rf_escape_dup(const char *text);
/* Writes the NUL-terminated text escaped (RF_ESCAPE_ALL) to fp; 0, or EOF
 * on a write error. */
RF_API int rf_fputs_escaped(const char *text, FILE *fp);

#endif
