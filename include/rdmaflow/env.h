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

/* An input value as an error message echoes it, escaped (rf_escape's
 * RF_ESCAPE_ALL, rdmaflow/escape.h): text itself when it has at most
 * RF_ECHO_MAX bytes, else its first RF_ECHO_MAX bytes (cut before a UTF-8
 * continuation byte) and "...", in buf; so a long value never pushes the
 * reason out of a message, nor a control byte reaches a terminal. buf
 * should hold RF_ECHO_BUF bytes (a smaller one is cut shorter, between two
 * escapes); returns buf ("(null)" for NULL text).
 * RF_ECHO(text) is the expression to pass to a "%s". */
#define RF_ECHO_MAX 64
#define RF_ECHO_BUF (4 * RF_ECHO_MAX + 4) /* each byte may be \xNN */
RF_API const char *rf_echo(const char *text, char *buf, size_t len);
#define RF_ECHO(text) rf_echo((text), (char[RF_ECHO_BUF]){0}, RF_ECHO_BUF)

/* The logger's variables as it reads them at first use: RF_OK, or
 * RF_ERR_INVALID_ARG for an RF_LOG_LEVEL that is not one of
 * error|warn|info|debug|trace (the message names the variable, its value
 * and those), or RF_ERR_IO for an RF_LOG_FILE that cannot be opened for
 * appending (the logger then writes to stderr at warn). rf_fabric_open
 * returns the same error; every tool calls it first and exits 2 on it. */
RF_API rf_status rf_log_env_check(void);

/* How a setting's text is read. */
typedef enum rf_env_kind {
    RF_ENV_TEXT = 0, /* taken as it is (its reader checks it) */
    RF_ENV_INT,      /* a decimal integer in [min, max] */
    RF_ENV_CHOICE,   /* one of choices */
} rf_env_kind;

/* One RF_* environment variable the project reads: its name, its default
 * as text ("none" when unset means nothing is done), the layer or tool
 * that reads it, and what it does; then how it is read. rf_env_vars() is
 * the one table of them (core/env_table.c), NULL-name terminated, in the
 * README's order; rf-info prints it with each variable's value here. A
 * test checks that every RF_* name the sources read is in it. The library
 * reads its settings through the table (rf_setting_*), so a default and a
 * range are written once, in the row. */
typedef struct rf_env_var {
    const char *name;
    const char *def;
    const char *reader;
    const char *meaning;
    rf_env_kind kind;
    int64_t int_def;            /* RF_ENV_INT: the value when unset */
    int64_t min, max;           /* RF_ENV_INT: the accepted range */
    const char *const *choices; /* RF_ENV_CHOICE: NULL-terminated; the
                                   default is the one def names */
    const char *text_def;       /* RF_ENV_TEXT: the value when unset, or
                                   NULL when unset means "not given" */
    /* RF_ENV_TEXT read by core: the reader's own check of the current
     * value (the code the library runs when it reads it), or NULL. Rows
     * read by other layers are checked by their layer
     * (rf_fabric_setting_check). */
    rf_status (*check)(void);
} rf_env_var;
RF_API const rf_env_var *rf_env_vars(void);

/* Where a variable's effective value comes from: RF_ENV_DEFAULT when it is
 * unset or empty (empty counts as unset, as rf_env_* read it), else
 * RF_ENV_ENVIRONMENT; *value is the environment's text or the default. */
typedef enum rf_env_source {
    RF_ENV_DEFAULT = 0,
    RF_ENV_ENVIRONMENT,
} rf_env_source;
RF_API rf_env_source rf_env_effective(const rf_env_var *var,
                                      const char **value);

/* The table's row for name, or NULL. */
RF_API const rf_env_var *rf_env_find(const char *name);

/* A setting read through its row: typed, range-checked, its default when
 * unset or empty. A malformed value is RF_ERR_INVALID_ARG naming the
 * variable and its value (as rf_env_int and rf_env_choice say it); a name
 * that is not in the table, or a row of another kind, is
 * RF_ERR_INVALID_ARG too. rf_setting_str returns the value, else the row's
 * text default (NULL when it has none, or the name is not a text row). */
RF_API rf_status rf_setting_int(const char *name, int64_t *out);
RF_API rf_status rf_setting_choice(const char *name, int *index);
RF_API const char *rf_setting_str(const char *name);

/* Whether var's effective value reads as its row says (for a text row,
 * as its row's check says; RF_OK without one): what rf-info reports
 * before a program would refuse it. */
RF_API rf_status rf_setting_check(const rf_env_var *var);

#endif
