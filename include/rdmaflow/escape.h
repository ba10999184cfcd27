/* rdmaflow/escape.h: how text that came from a file, a flag or a peer (a
 * tensor name, a path, a device string, a protocol field) is printed, so
 * that it can neither act on a terminal nor be read two ways. Every tool
 * prints such text through rf_escape; the library's error messages
 * (rf_error_set) and log lines pass through it too (RF_ESCAPE_CONTROLS). */
#ifndef RDMAFLOW_ESCAPE_H
#define RDMAFLOW_ESCAPE_H

#include "rdmaflow/api.h"

#include <stddef.h>
#include <stdint.h>
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

/* The length (1..4) of the valid UTF-8 sequence at s (left bytes there),
 * *cp its code point; 0 when s does not start one (a stray continuation
 * byte, an overlong form, a surrogate, above U+10FFFF, cut short). */
RF_API size_t rf_utf8_seq(const char *s, size_t left, uint32_t *cp);

/* Writes the n bytes of text, escaped, to buf with snprintf's contract:
 * NUL-terminated when len > 0, cut only between two escapes; returns the
 * bytes the whole escaped text needs (NUL excluded). text may hold NULs
 * (each is written as \x00). */
RF_API size_t rf_escape(char *buf, size_t len, const char *text, size_t n,
                        rf_escape_mode mode);
/* The NUL-terminated text escaped (RF_ESCAPE_ALL) in a malloc'd string,
 * NULL when out of memory; "(null)" for NULL text. */
RF_API char *rf_escape_dup(const char *text);
/* The NUL-terminated text escaped (RF_ESCAPE_ALL), for a "%s" in a
 * program's output: printf("%s\n", rf_esc(name)). The string belongs to the
 * calling thread and stays valid for its next RF_ESC_SLOTS - 1 calls of
 * rf_esc (freed at the thread's exit); "(null)" for NULL text, "(out of
 * memory)" when it cannot be made. */
#define RF_ESC_SLOTS 8
RF_API const char *rf_esc(const char *text);
/* Writes the NUL-terminated text escaped (RF_ESCAPE_ALL) to fp; 0, or EOF
 * on a write error. */
RF_API int rf_fputs_escaped(const char *text, FILE *fp);

#endif
