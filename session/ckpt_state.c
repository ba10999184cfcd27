/* session/ckpt_state.c: a checkpoint directory's "checkpoint" state file in
 * TensorFlow's text format (CheckpointState: model_checkpoint_path, then
 * all_model_checkpoint_paths oldest first), read and formatted. */
#include "session/ckpt_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rdmaflow/file.h"

#define STATE_MAX_BYTES (1u << 20)

void ckpt_state_free(ckpt_state *s)
{
    free(s->latest);
    for (size_t i = 0; i < s->n; i++)
        free(s->all[i]);
    free(s->all);
    memset(s, 0, sizeof *s);
}

rf_status ckpt_state_add(ckpt_state *s, const char *name)
{
    char **a = realloc(s->all, (s->n + 1) * sizeof *a);
    if (!a)
        return rf_error_set(RF_ERR_NO_MEMORY, "checkpoint state: out of "
                                              "memory");
    s->all = a;
    if (!(a[s->n] = strdup(name)))
        return rf_error_set(RF_ERR_NO_MEMORY, "checkpoint state: out of "
                                              "memory");
    s->n++;
    return RF_OK;
}

static int octal(char c)
{
    return c >= '0' && c <= '7' ? c - '0' : -1;
}

/* Parses a text-format string literal at *p ("..." or '...', C escapes)
 * into a malloc'd *out; *p is left after the closing quote. */
static bool parse_string(const char **p, char **out)
{
    const char *s = *p;
    char q = *s++;
    if (q != '"' && q != '\'')
        return false;
    char *buf = malloc(strlen(s) + 1);
    size_t n = 0;
    if (!buf)
        return false;
    while (*s && *s != q) {
        char c = *s++;
        if (c == '\\') {
            c = *s++;
            if (octal(c) >= 0) {
                int v = octal(c);
                for (int k = 0; k < 2 && octal(*s) >= 0; k++)
                    v = v * 8 + octal(*s++);
                c = (char)v;
            } else if (c == 'n') {
                c = '\n';
            } else if (c == 't') {
                c = '\t';
            } else if (c == 'r') {
                c = '\r';
            } else if (c != '"' && c != '\'' && c != '\\') {
                free(buf);
                return false;
            }
        }
        buf[n++] = c;
    }
    if (*s != q || n == 0 || memchr(buf, '\0', n)) {
        free(buf);
        return false;
    }
    buf[n] = '\0';
    *p = s + 1;
    *out = buf;
    return true;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\r')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        s[--n] = '\0';
    return s;
}

static rf_status parse_line(const char *path, int lineno, char *line,
                            ckpt_state *s)
{
    char *t = trim(line);
    if (!*t || *t == '#')
        return RF_OK;
    char *colon = strchr(t, ':');
    if (!colon)
        return rf_error_set(RF_ERR_CORRUPT, "%s:%d: not \"field: value\"", path,
                            lineno);
    *colon = '\0';
    const char *field = trim(t);
    char *value = trim(colon + 1);
    bool latest = !strcmp(field, "model_checkpoint_path");
    if (!latest && strcmp(field, "all_model_checkpoint_paths") != 0) {
        /* TensorFlow 2's CheckpointManager also records timestamps */
        if (!strcmp(field, "all_model_checkpoint_timestamps") ||
            !strcmp(field, "last_preserved_timestamp")) {
            char *end;
            errno = 0;
            (void)strtod(value, &end);
            if (end != value && !*end && !errno)
                return RF_OK;
            return rf_error_set(RF_ERR_CORRUPT, "%s:%d: %s is not a number",
                                path, lineno, field);
        }
        return rf_error_set(RF_ERR_CORRUPT, "%s:%d: unknown field '%s'", path,
                            lineno, field);
    }
    const char *p = value;
    char *str = NULL;
    if (!parse_string(&p, &str))
        return rf_error_set(RF_ERR_CORRUPT,
                            "%s:%d: %s: not a non-empty quoted string", path,
                            lineno, field);
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p && *p != '#') {
        free(str);
        return rf_error_set(RF_ERR_CORRUPT, "%s:%d: %s: text after the string",
                            path, lineno, field);
    }
    if (latest) {
        if (s->latest) {
            free(str);
            return rf_error_set(RF_ERR_CORRUPT,
                                "%s:%d: model_checkpoint_path given twice",
                                path, lineno);
        }
        s->latest = str;
        return RF_OK;
    }
    rf_status rc = ckpt_state_add(s, str);
    free(str);
    return rc;
}

rf_status ckpt_state_read(const char *dir, ckpt_state *s, bool *found)
{
    memset(s, 0, sizeof *s);
    *found = false;
    char *path = ckpt_join(dir, CKPT_STATE_NAME);
    if (!path)
        return rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory", dir);
    /* a directory, FIFO, device or socket in its place is refused, never
     * opened (a FIFO would block the reader forever) */
    struct stat sb;
    if (stat(path, &sb) != 0 && errno == ENOENT) {
        free(path);
        return RF_OK;
    }
    rf_status cst = rf_file_check_input(path);
    if (cst != RF_OK) {
        free(path);
        return rf_error_set(cst, "checkpoint state file %s",
                            rf_error_message());
    }
    FILE *fp = fopen(path, "r");
    if (!fp) {
        rf_status rc = errno == ENOENT
                           ? RF_OK
                           : rf_error_set(RF_ERR_IO, "cannot read %s: %s", path,
                                          strerror(errno));
        free(path);
        return rc;
    }
    *found = true;
    char *text = malloc(STATE_MAX_BYTES + 1);
    size_t n = text ? fread(text, 1, STATE_MAX_BYTES + 1, fp) : 0;
    rf_status rc = RF_OK;
    if (!text)
        rc = rf_error_set(RF_ERR_NO_MEMORY, "%s: out of memory", path);
    else if (ferror(fp))
        rc = rf_error_set(RF_ERR_IO, "reading %s failed", path);
    else if (n > STATE_MAX_BYTES)
        rc = rf_error_set(RF_ERR_CORRUPT, "%s: over %u bytes", path,
                          STATE_MAX_BYTES);
    else if (memchr(text, '\0', n))
        rc = rf_error_set(RF_ERR_CORRUPT, "%s: holds a NUL byte", path);
    fclose(fp);
    int lineno = 0;
    for (char *line = text; rc == RF_OK && line && line < text + n;) {
        text[n] = '\0';
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        rc = parse_line(path, ++lineno, line, s);
        line = nl ? nl + 1 : NULL;
    }
    if (rc == RF_OK && !s->latest)
        rc = rf_error_set(RF_ERR_CORRUPT, "%s: no model_checkpoint_path", path);
    free(text);
    free(path);
    if (rc != RF_OK)
        ckpt_state_free(s);
    return rc;
}

/* A text-format string literal of s, appended to out (at least 4 * strlen
 * + 3 bytes free). */
static size_t quote(char *out, const char *s)
{
    size_t n = 0;
    out[n++] = '"';
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            out[n++] = '\\';
            out[n++] = (char)c;
        } else if (c < 0x20 || c >= 0x7f) {
            n += (size_t)sprintf(out + n, "\\%03o", c);
        } else {
            out[n++] = (char)c;
        }
    }
    out[n++] = '"';
    return n;
}

char *ckpt_state_format(const ckpt_state *s)
{
    size_t cap = 64 + 4 * strlen(s->latest);
    for (size_t i = 0; i < s->n; i++)
        cap += 64 + 4 * strlen(s->all[i]);
    char *out = malloc(cap);
    if (!out)
        return NULL;
    size_t n = 0;
    n += (size_t)sprintf(out + n, "model_checkpoint_path: ");
    n += quote(out + n, s->latest);
    out[n++] = '\n';
    for (size_t i = 0; i < s->n; i++) {
        n += (size_t)sprintf(out + n, "all_model_checkpoint_paths: ");
        n += quote(out + n, s->all[i]);
        out[n++] = '\n';
    }
    out[n] = '\0';
    return out;
}
