/* tests/integration/info/info_json.c: rf_info_json FILE [PATH]: parses
 * FILE as one JSON document with json-c (exit 1 with the parser's reason
 * if it is not one) and prints the value at PATH: keys separated by dots,
 * "[N]" for an array element and "[KEY=VALUE]" for the first element
 * whose KEY is the string VALUE, e.g. settings[name=RF_BIND].source or
 * verbs.devices[0].ports[0].state. A string prints bare, anything else as
 * JSON; a missing PATH exits 1 naming where it stopped. rf-info's tests
 * (host and rxe guest) check its --json output with it. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_object *select_elem(json_object *arr, const char *sel)
{
    if (!json_object_is_type(arr, json_type_array))
        return NULL;
    const char *eq = strchr(sel, '=');
    if (!eq) {
        char *end = NULL;
        long i = strtol(sel, &end, 10);
        if (*end || i < 0 || (size_t)i >= json_object_array_length(arr))
            return NULL;
        return json_object_array_get_idx(arr, (size_t)i);
    }
    char key[128];
    snprintf(key, sizeof key, "%.*s", (int)(eq - sel), sel);
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        json_object *e = json_object_array_get_idx(arr, i), *v = NULL;
        if (json_object_object_get_ex(e, key, &v) && v &&
            strcmp(json_object_get_string(v), eq + 1) == 0)
            return e;
    }
    return NULL;
}

/* The next dot-separated key of *p (dots inside [...] do not separate:
 * gids[gid=::ffff:10.77.0.1]); NULL at the end. */
static char *next_key(char *p, char **rest)
{
    if (!p || !*p)
        return NULL;
    int depth = 0;
    char *q = p;
    for (; *q && (*q != '.' || depth); q++)
        depth += *q == '[' ? 1 : *q == ']' ? -1 : 0;
    *rest = *q ? q + 1 : q;
    *q = '\0';
    return p;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: rf_info_json FILE [PATH]\n");
        return 2;
    }
    json_object *doc = json_object_from_file(argv[1]);
    if (!doc) {
        fprintf(stderr, "rf_info_json: %s: %s\n", argv[1],
                json_util_get_last_err());
        return 1;
    }
    json_object *cur = doc;
    if (argc == 3) {
        char *path = strdup(argv[2]), *rest = NULL;
        for (char *tok = next_key(path, &rest); tok && cur;
             tok = next_key(rest, &rest)) {
            char *br = strchr(tok, '[');
            if (br)
                *br = '\0';
            if (*tok && !json_object_object_get_ex(cur, tok, &cur))
                cur = NULL;
            while (br && cur) {
                char *close = strchr(br + 1, ']');
                if (!close) {
                    cur = NULL;
                    break;
                }
                *close = '\0';
                cur = select_elem(cur, br + 1);
                br = close[1] == '[' ? close + 1 : NULL;
            }
            if (!cur)
                fprintf(stderr, "rf_info_json: %s: no '%s' in %s\n", argv[1],
                        tok, argv[2]);
        }
        free(path);
        if (!cur) {
            json_object_put(doc);
            return 1;
        }
    }
    if (json_object_is_type(cur, json_type_string))
        printf("%s\n", json_object_get_string(cur));
    else
        printf("%s\n", json_object_to_json_string(cur));
    json_object_put(doc);
    return 0;
}
