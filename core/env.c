/* core/env.c: validated RF_* environment variables (see env.h). */
#include "rdmaflow/env.h"

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
                            what, text, (long)(end - text));
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
