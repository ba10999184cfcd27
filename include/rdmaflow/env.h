/* rdmaflow/env.h: typed, validated reading of RF_* environment variables.
 * A variable that is set but malformed is an error (never silently replaced
 * by the default), reported with the variable's name and value. Also how
 * every error message echoes an input value (rf_echo). */
#ifndef RDMAFLOW_ENV_H
#define RDMAFLOW_ENV_H

#include "rdmaflow/api.h"

#include <stddef.h>
#include <stdint.h>

#include "rdmaflow/status.h"

/* Integer in [min, max]; *out = def when unset or empty. */
RF_API rf_status rf_env_int(const char *name, int64_t def, int64_t min,
                            int64_t max, int64_t *out);
/* String; *out = def when unset or empty. The result is not copied. */
RF_API const char *rf_env_str(const char *name, const char *def);
/* One of a NULL-terminated list of choices; *index = position, or def_index
 * when unset or empty. */
RF_API rf_status rf_env_choice(const char *name, const char *const *choices,
                               int def_index, int *index);

/* Parses a whole decimal integer in [min, max] from text (no trailing junk).
 * what names the source in the error message. */
RF_API rf_status rf_parse_int(const char *text, int64_t min, int64_t max,
                              const char *what, int64_t *out);

/* An input value as an error message echoes it: text itself when it has
 * at most RF_ECHO_MAX bytes, else its first RF_ECHO_MAX bytes (cut before
 * a UTF-8 continuation byte) and "...", in buf; so a long value never
 * pushes the reason out of a message. buf should hold RF_ECHO_BUF bytes
 * (a smaller one is cut shorter); returns buf ("(null)" for NULL text).
 * RF_ECHO(text) is the expression to pass to a "%s". */
#define RF_ECHO_MAX 64
#define RF_ECHO_BUF (RF_ECHO_MAX + 4)
RF_API const char *rf_echo(const char *text, char *buf, size_t len);
#define RF_ECHO(text) rf_echo((text), (char[RF_ECHO_BUF]){0}, RF_ECHO_BUF)

#endif
