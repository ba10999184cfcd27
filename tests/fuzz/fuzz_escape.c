/* tests/fuzz/fuzz_escape.c: libFuzzer target for rf_escape (core/escape.c,
 * rdmaflow/escape.h) and rf_json_check (core/json_check.c). Any bytes: the
 * escaped text is inert (no control byte, valid UTF-8), its length is the
 * count rf_escape returns, decoding its escapes gives the input back byte
 * for byte, a cut buffer holds a prefix of whole escapes, and the CONTROLS
 * mode differs only in leaving \ and " alone; rf_fputs_escaped writes what
 * rf_escape_dup makes. The same bytes as JSON:
 * rf_json_check never crashes, a refusal says why, and text it accepts
 * json-c also parses strictly with no key lost (no duplicate). */
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_check.h"
#include "fuzz_common.h"
#include "rdmaflow/escape.h"
#include "rdmaflow/status.h"

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c - 'a' + 10;
}

/* Decodes rf_escape's output (n bytes) into out; its length. */
static size_t unescape(const char *e, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        if (e[i] != '\\') {
            out[o++] = e[i++];
            continue;
        }
        REQUIRE(i + 1 < n);
        char c = e[i + 1];
        if (c == 'x') {
            REQUIRE(i + 3 < n);
            out[o++] = (char)(hexval(e[i + 2]) << 4 | hexval(e[i + 3]));
            i += 4;
            continue;
        }
        REQUIRE(c == 'n' || c == 't' || c == 'r' || c == '\\' || c == '"');
        out[o++] = c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c;
        i += 2;
    }
    return o;
}

/* Keys in every object of o, counted (json-c keeps one of duplicates). */
static size_t count_keys(json_object *o)
{
    size_t n = 0;
    if (json_object_is_type(o, json_type_object)) {
        json_object_object_foreach(o, k, v)
        {
            (void)k;
            n += 1 + count_keys(v);
        }
    } else if (json_object_is_type(o, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(o); i++)
            n += count_keys(json_object_array_get_idx(o, i));
    }
    return n;
}

/* Keys in the text ("string" followed by ':'), given json-c parsed it. */
static size_t count_text_keys(const char *s, size_t n)
{
    size_t keys = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '"')
            continue;
        size_t j = i + 1;
        while (j < n && s[j] != '"')
            j += s[j] == '\\' ? 2 : 1;
        size_t k = j + 1;
        while (k < n && strchr(" \t\r\n", s[k]))
            k++;
        if (k < n && s[k] == ':')
            keys++;
        i = j;
    }
    return keys;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    size_t need = rf_escape(NULL, 0, in, size, RF_ESCAPE_ALL);
    REQUIRE(need <= 4 * size);
    char *e = malloc(need + 1), *back = malloc(size + 1);
    REQUIRE(e && back);
    REQUIRE(rf_escape(e, need + 1, in, size, RF_ESCAPE_ALL) == need);
    REQUIRE(strlen(e) == need);
    fuzz_require_inert(e);
    REQUIRE(unescape(e, need, back) == size && !memcmp(back, in, size));
    /* a cut buffer: a prefix of the whole made of whole escapes */
    size_t cut = size % (need + 1) + 1;
    char *c = malloc(cut);
    REQUIRE(c);
    rf_escape(c, cut, in, size, RF_ESCAPE_ALL);
    size_t cl = strlen(c);
    REQUIRE(cl < cut && !memcmp(c, e, cl));
    REQUIRE(unescape(c, cl, back) <= size);
    free(c);
    /* CONTROLS: the same with \\ and \" not escaped */
    size_t need2 = rf_escape(NULL, 0, in, size, RF_ESCAPE_CONTROLS);
    char *e2 = malloc(need2 + 1);
    REQUIRE(e2);
    rf_escape(e2, need2 + 1, in, size, RF_ESCAPE_CONTROLS);
    fuzz_require_inert(e2);
    size_t q = 0;
    for (size_t i = 0; i < size; i++)
        q += in[i] == '\\' || in[i] == '"';
    REQUIRE(need2 + q == need);
    free(e2);
    /* rf_fputs_escaped writes in pieces: the same text as one rf_escape
     * (up to the input's first NUL), no UTF-8 sequence cut in two */
    char *z = fuzz_text(data, size), *ms = NULL, *whole = NULL;
    size_t msn = 0;
    FILE *fp = z ? open_memstream(&ms, &msn) : NULL;
    REQUIRE(fp && rf_fputs_escaped(z, fp) == 0 && fclose(fp) == 0);
    whole = rf_escape_dup(z);
    REQUIRE(whole && !strcmp(ms, whole));
    free(whole);
    free(ms);
    free(z);
    free(e);
    free(back);

    /* the same bytes as JSON */
    if (rf_json_check(in, size, RF_ERR_CORRUPT, "fuzz") != RF_OK) {
        REQUIRE(rf_error_message()[0]);
        fuzz_require_inert(rf_error_message());
        return 0;
    }
    json_tokener *tok = json_tokener_new();
    REQUIRE(tok);
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
                                    JSON_TOKENER_ALLOW_TRAILING_CHARS |
                                    JSON_TOKENER_VALIDATE_UTF8);
    char *text = fuzz_text(data, size); /* accepted text has no NUL */
    REQUIRE(text && strlen(text) == size);
    json_object *root = json_tokener_parse_ex(tok, text, (int)size + 1);
    enum json_tokener_error err = json_tokener_get_error(tok);
    /* json-c nests at most 32 deep, rf_json_check 64 */
    REQUIRE(err == json_tokener_success || err == json_tokener_error_depth);
    if (err == json_tokener_success)
        REQUIRE(count_keys(root) == count_text_keys(text, size));
    json_object_put(root);
    json_tokener_free(tok);
    free(text);
    return 0;
}
