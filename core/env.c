/* core/env.c: validated RF_* environment variables (see env.h): the typed
 * readers, and the settings read through their rows of core/env_table.c. */
#include "rdmaflow/env.h"
#include "rdmaflow/escape.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/status.h"

rf_status rf_parse_int(const char *text, int64_t min, int64_t max,
                       const char *what, int64_t *out)
{
    if (!text || !*text)
        return rf_error_set(RF_ERR_INVALID_ARG, "%s: empty value", what);
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno == ERANGE || *end != '\0' || end == text)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: '%s' is not an integer (bad character at "
                            "offset %ld)",
                            what, RF_ECHO(text), (long)(end - text));
    if (v < min || v > max)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%s: %lld is out of range [%lld, %lld]", what, v,
                            (long long)min, (long long)max);
    *out = v;
    return RF_OK;
}

rf_status rf_env_int(const char *name, int64_t def, int64_t min, int64_t max,
                     int64_t *out)
{
    const char *v = getenv(name);
    if (!v || !*v) {
        *out = def;
        return RF_OK;
    }
    return rf_parse_int(v, min, max, name, out);
}

const char *rf_env_str(const char *name, const char *def)
{
    const char *v = getenv(name);
    return (v && *v) ? v : def;
}

rf_status rf_env_choice(const char *name, const char *const *choices,
                        int def_index, int *index)
{
    const char *v = getenv(name);
    if (!v || !*v) {
        *index = def_index;
        return RF_OK;
    }
    for (int i = 0; choices[i]; i++) {
        if (strcmp(v, choices[i]) == 0) {
            *index = i;
            return RF_OK;
        }
    }
    char list[256] = "";
    for (int i = 0; choices[i]; i++) {
        if (i)
            strncat(list, "|", sizeof list - strlen(list) - 1);
        strncat(list, choices[i], sizeof list - strlen(list) - 1);
    }
    return rf_error_set(RF_ERR_INVALID_ARG, "%s=%s is not one of %s", name, v,
                        list);
}

const char *rf_echo(const char *text, char *buf, size_t len)
{
    if (!buf || len < 4) {
        if (buf && len)
            buf[0] = '\0';
        return buf ? buf : "";
    }
    if (!text)
        text = "(null)";
    size_t n = strlen(text);
    if (n <= RF_ECHO_MAX && rf_escape(buf, len, text, n, RF_ESCAPE_ALL) < len)
        return buf;
    size_t keep = n < RF_ECHO_MAX ? n : RF_ECHO_MAX;
    while (keep > 0 && ((unsigned char)text[keep] & 0xc0) == 0x80)
        keep--; /* do not split a UTF-8 sequence */
    /* escaped, cut between two escapes to leave room for "..." */
    rf_escape(buf, len - 3, text, keep, RF_ESCAPE_ALL);
    strcat(buf, "...");
    return buf;
}

const rf_env_var *rf_env_find(const char *name)
{
    if (!name)
        return NULL;
    for (const rf_env_var *v = rf_env_vars(); v->name; v++)
        if (strcmp(v->name, name) == 0)
            return v;
    return NULL;
}

static const rf_env_var *find_kind(const char *name, rf_env_kind kind)
{
    const rf_env_var *v = rf_env_find(name);
    if (!v || v->kind != kind) {
        rf_error_set(RF_ERR_INVALID_ARG,
                     "%s is not a setting of this kind in the table of RF_* "
                     "variables (core/env_table.c)",
                     name ? name : "(null)");
        return NULL;
    }
    return v;
}

rf_status rf_setting_int(const char *name, int64_t *out)
{
    const rf_env_var *v = find_kind(name, RF_ENV_INT);
    if (!v)
        return RF_ERR_INVALID_ARG;
    return rf_env_int(v->name, v->int_def, v->min, v->max, out);
}

static int default_choice(const rf_env_var *v)
{
    for (int i = 0; v->choices[i]; i++)
        if (strcmp(v->choices[i], v->def) == 0)
            return i;
    return 0; /* not reached: tests/unit/core checks every row's default */
}

rf_status rf_setting_choice(const char *name, int *index)
{
    const rf_env_var *v = find_kind(name, RF_ENV_CHOICE);
    if (!v)
        return RF_ERR_INVALID_ARG;
    return rf_env_choice(v->name, v->choices, default_choice(v), index);
}

const char *rf_setting_str(const char *name)
{
    const rf_env_var *v = rf_env_find(name);
    if (!v || v->kind != RF_ENV_TEXT)
        return NULL;
    return rf_env_str(v->name, v->text_def);
}

rf_status rf_setting_check(const rf_env_var *var)
{
    if (!var || !var->name)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_setting_check: NULL");
    int64_t i64;
    int idx;
    switch (var->kind) {
    case RF_ENV_INT:
        return rf_setting_int(var->name, &i64);
    case RF_ENV_CHOICE:
        return rf_setting_choice(var->name, &idx);
    case RF_ENV_TEXT:
        return var->check ? var->check() : RF_OK;
    }
    return RF_OK;
}
