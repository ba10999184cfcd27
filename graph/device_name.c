/* graph/device_name.c: TensorFlow device strings: parsing (the union of TF1
 * DeviceSpec.from_string and DeviceNameUtils::ParseFullName, with errors
 * that point at the offending character), canonical printing
 * (DeviceSpec.to_string), merging (make_merged_spec and MergeDevNames) and
 * the comparisons of DeviceNameUtils. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "rdmaflow/device.h"
#include "rdmaflow/status.h"

/* Longest input quoted whole in an error message. */
#define QUOTE_MAX 160

/* The longest canonical string: "/job:" J "/replica:" R "/task:" T
 * "/device:" TYPE ":" ID, each index at most 10 digits, plus the NUL. */
_Static_assert(5 + (RF_DEVICE_JOB_MAX - 1) + 9 + 10 + 6 + 10 + 8 +
                       (RF_DEVICE_TYPE_MAX - 1) + 1 + 10 + 1 <=
                   RF_DEVICE_STRING_MAX,
               "RF_DEVICE_STRING_MAX must hold any canonical device string");

void rf_device_spec_clear(rf_device_spec *spec)
{
    memset(spec, 0, sizeof *spec);
    spec->replica = RF_DEVICE_UNSET;
    spec->task = RF_DEVICE_UNSET;
    spec->id = RF_DEVICE_UNSET;
}

static bool is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_name_char(char c)
{
    return is_alpha(c) || is_digit(c) || c == '_';
}

/* Parsing context: the whole input, for error messages. */
typedef struct parse_ctx {
    const char *str;
} parse_ctx;

/* Fails with `device string "<str>": <what> at offset <off> ("<text>")`,
 * text being str[off, end). */
static rf_status fail_at(const parse_ctx *pc, const char *what, size_t off,
                         size_t end)
{
    size_t total = strlen(pc->str);
    int shown = total > QUOTE_MAX ? QUOTE_MAX : (int)total;
    int text_len = (int)(end - off);
    if (text_len > QUOTE_MAX)
        text_len = QUOTE_MAX;
    return rf_error_set(RF_ERR_INVALID_ARG,
                        "device string \"%.*s%s\": %s at offset %zu (\"%.*s\")",
                        shown, pc->str, total > QUOTE_MAX ? "..." : "", what,
                        off, text_len, pc->str + off);
}

/* Checks str[b, e) as a job or device-type name (letter, then letters,
 * digits or '_') and copies it into dst (cap bytes with the NUL). */
static rf_status parse_name(const parse_ctx *pc, const char *kind, size_t b,
                            size_t e, char *dst, size_t cap)
{
    char what[64];
    if (b == e) {
        snprintf(what, sizeof what, "missing %s", kind);
        return fail_at(pc, what, b, e);
    }
    for (size_t i = b; i < e; i++) {
        char c = pc->str[i];
        if (i == b ? !is_alpha(c) : !is_name_char(c)) {
            snprintf(what, sizeof what, "invalid character in %s", kind);
            return fail_at(pc, what, i, e);
        }
    }
    if (e - b >= cap) {
        snprintf(what, sizeof what, "%s longer than %zu characters", kind,
                 cap - 1);
        return fail_at(pc, what, b, e);
    }
    memcpy(dst, pc->str + b, e - b);
    dst[e - b] = '\0';
    return RF_OK;
}

/* Parses str[b, e) as '*' (RF_DEVICE_UNSET) or a decimal index. */
static rf_status parse_index(const parse_ctx *pc, const char *kind, size_t b,
                             size_t e, int *out)
{
    char what[64];
    if (e - b == 1 && pc->str[b] == '*') {
        *out = RF_DEVICE_UNSET;
        return RF_OK;
    }
    if (b == e) {
        snprintf(what, sizeof what, "missing %s", kind);
        return fail_at(pc, what, b, e);
    }
    long long v = 0;
    for (size_t i = b; i < e; i++) {
        char c = pc->str[i];
        if (!is_digit(c)) {
            snprintf(what, sizeof what, "invalid character in %s", kind);
            return fail_at(pc, what, i, e);
        }
        v = v * 10 + (c - '0');
        if (v > INT_MAX) {
            snprintf(what, sizeof what, "%s out of range", kind);
            return fail_at(pc, what, b, e);
        }
    }
    *out = (int)v;
    return RF_OK;
}

static bool field_is(const char *s, size_t len, const char *name)
{
    return strlen(name) == len && memcmp(s, name, len) == 0;
}

static bool field_is_nocase(const char *s, size_t len, const char *name)
{
    if (strlen(name) != len)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c >= 'a' && c <= 'z')
            c = (char)(c - 'a' + 'A');
        if (c != name[i])
            return false;
    }
    return true;
}

/* Parses the component str[b, e) (non-empty, no '/') into *spec. */
static rf_status parse_component(const parse_ctx *pc, size_t b, size_t e,
                                 rf_device_spec *spec, bool *have_type)
{
    const char *s = pc->str;
    size_t colon[3];
    size_t ncolon = 0;
    for (size_t i = b; i < e && ncolon < 3; i++)
        if (s[i] == ':')
            colon[ncolon++] = i;
    size_t name_end = ncolon ? colon[0] : e;
    const char *name = s + b;
    size_t name_len = name_end - b;

    bool is_job = field_is(name, name_len, "job");
    bool is_replica = field_is(name, name_len, "replica");
    bool is_task = field_is(name, name_len, "task");
    bool is_device = field_is(name, name_len, "device");
    const char *legacy = field_is_nocase(name, name_len, "CPU")   ? "CPU"
                         : field_is_nocase(name, name_len, "GPU") ? "GPU"
                                                                  : NULL;
    if (!is_job && !is_replica && !is_task && !is_device && !legacy)
        return fail_at(pc, "unknown field", b, e);

    size_t max_colons = is_device ? 2 : 1;
    if (ncolon > max_colons)
        return fail_at(pc, "unexpected ':'", colon[max_colons], e);
    if (ncolon == 0 && !legacy) {
        char what[64];
        snprintf(what, sizeof what, "field \"%.*s\" has no value",
                 (int)name_len, name);
        return fail_at(pc, what, b, e);
    }

    if (is_job) {
        size_t vb = colon[0] + 1;
        if (e - vb == 1 && s[vb] == '*') {
            spec->job[0] = '\0';
            return RF_OK;
        }
        return parse_name(pc, "job name", vb, e, spec->job, sizeof spec->job);
    }
    if (is_replica)
        return parse_index(pc, "replica index", colon[0] + 1, e,
                           &spec->replica);
    if (is_task)
        return parse_index(pc, "task index", colon[0] + 1, e, &spec->task);

    if (*have_type)
        return fail_at(pc, "a second device type", b, e);
    *have_type = true;
    if (legacy) {
        strcpy(spec->type, legacy);
        spec->id = RF_DEVICE_UNSET;
        if (ncolon == 0)
            return RF_OK;
        return parse_index(pc, "device index", colon[0] + 1, e, &spec->id);
    }
    /* device:TYPE[:ID] */
    size_t tb = colon[0] + 1;
    size_t te = ncolon > 1 ? colon[1] : e;
    if (te - tb == 1 && s[tb] == '*') {
        spec->type[0] = '\0';
    } else {
        rf_status st = parse_name(pc, "device type", tb, te, spec->type,
                                  sizeof spec->type);
        if (st != RF_OK)
            return st;
        /* DeviceSpec keeps lowercase cpu/gpu only as aliases. */
        if (strcmp(spec->type, "cpu") == 0)
            strcpy(spec->type, "CPU");
        else if (strcmp(spec->type, "gpu") == 0)
            strcpy(spec->type, "GPU");
    }
    spec->id = RF_DEVICE_UNSET;
    if (ncolon < 2)
        return RF_OK;
    return parse_index(pc, "device index", colon[1] + 1, e, &spec->id);
}

rf_status rf_device_spec_parse(const char *str, rf_device_spec *out)
{
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_device_spec_parse: out is NULL");
    rf_device_spec spec;
    rf_device_spec_clear(&spec);
    rf_device_spec_clear(out);
    if (!str)
        return RF_OK;
    parse_ctx pc = {str};
    bool have_type = false;
    size_t n = strlen(str);
    size_t b = 0;
    while (b <= n) {
        const char *slash = memchr(str + b, '/', n - b);
        size_t e = slash ? (size_t)(slash - str) : n;
        if (e > b) {
            rf_status st = parse_component(&pc, b, e, &spec, &have_type);
            if (st != RF_OK)
                return st;
        }
        b = e + 1;
    }
    *out = spec;
    return RF_OK;
}

static bool valid_name(const char *s)
{
    if (!is_alpha(s[0]))
        return false;
    for (const char *p = s + 1; *p; p++)
        if (!is_name_char(*p))
            return false;
    return true;
}

static bool valid_index(int v)
{
    return v >= 0 || v == RF_DEVICE_UNSET;
}

static bool spec_valid(const rf_device_spec *s)
{
    if (!memchr(s->job, '\0', sizeof s->job) ||
        !memchr(s->type, '\0', sizeof s->type))
        return false;
    return (!s->job[0] || valid_name(s->job)) &&
           (!s->type[0] || valid_name(s->type)) && valid_index(s->replica) &&
           valid_index(s->task) && valid_index(s->id);
}

rf_status rf_device_spec_to_string(const rf_device_spec *spec, char *buf,
                                   size_t len)
{
    if (!buf || len == 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_device_spec_to_string: no output buffer");
    buf[0] = '\0';
    if (!spec || !spec_valid(spec))
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_device_spec_to_string: %s",
                            spec ? "malformed spec" : "spec is NULL");
    char tmp[RF_DEVICE_STRING_MAX];
    size_t n = 0;
    tmp[0] = '\0';
    /* Each piece fits: the field sizes bound the total below the maximum. */
    if (spec->job[0])
        n += (size_t)snprintf(tmp + n, sizeof tmp - n, "/job:%s", spec->job);
    if (spec->replica != RF_DEVICE_UNSET)
        n += (size_t)snprintf(tmp + n, sizeof tmp - n, "/replica:%d",
                              spec->replica);
    if (spec->task != RF_DEVICE_UNSET)
        n += (size_t)snprintf(tmp + n, sizeof tmp - n, "/task:%d", spec->task);
    if (spec->type[0]) {
        if (spec->id != RF_DEVICE_UNSET)
            n += (size_t)snprintf(tmp + n, sizeof tmp - n, "/device:%s:%d",
                                  spec->type, spec->id);
        else
            n += (size_t)snprintf(tmp + n, sizeof tmp - n, "/device:%s:*",
                                  spec->type);
    }
    if (n >= len)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_device_spec_to_string: \"%s\" needs %zu bytes, "
                            "buffer has %zu",
                            tmp, n + 1, len);
    memcpy(buf, tmp, n + 1);
    return RF_OK;
}

rf_status rf_device_canonicalize(const char *str, char *buf, size_t len)
{
    rf_device_spec spec;
    if (buf && len)
        buf[0] = '\0';
    rf_status st = rf_device_spec_parse(str, &spec);
    if (st != RF_OK)
        return st;
    return rf_device_spec_to_string(&spec, buf, len);
}

void rf_device_spec_merge(rf_device_spec *base, const rf_device_spec *dev)
{
    if (dev->job[0])
        memcpy(base->job, dev->job, sizeof base->job);
    if (dev->replica != RF_DEVICE_UNSET)
        base->replica = dev->replica;
    if (dev->task != RF_DEVICE_UNSET)
        base->task = dev->task;
    if (dev->type[0])
        memcpy(base->type, dev->type, sizeof base->type);
    if (dev->id != RF_DEVICE_UNSET)
        base->id = dev->id;
}

static rf_status incompatible(const char *what, const rf_device_spec *a,
                              const rf_device_spec *b)
{
    char sa[RF_DEVICE_STRING_MAX], sb[RF_DEVICE_STRING_MAX];
    rf_device_spec_to_string(a, sa, sizeof sa);
    rf_device_spec_to_string(b, sb, sizeof sb);
    return rf_error_set(RF_ERR_INVALID_ARG,
                        "Cannot merge devices with incompatible %s: '%s' and "
                        "'%s'",
                        what, sa, sb);
}

rf_status rf_device_spec_merge_strict(rf_device_spec *target,
                                      const rf_device_spec *other,
                                      bool allow_soft_placement)
{
    if (other->job[0]) {
        if (target->job[0] && strcmp(target->job, other->job) != 0)
            return incompatible("jobs", target, other);
        memcpy(target->job, other->job, sizeof target->job);
    }
    if (other->replica != RF_DEVICE_UNSET) {
        if (target->replica != RF_DEVICE_UNSET &&
            target->replica != other->replica)
            return incompatible("replicas", target, other);
        target->replica = other->replica;
    }
    if (other->task != RF_DEVICE_UNSET) {
        if (target->task != RF_DEVICE_UNSET && target->task != other->task)
            return incompatible("tasks", target, other);
        target->task = other->task;
    }
    if (other->type[0]) {
        if (target->type[0] && strcmp(target->type, other->type) != 0) {
            if (!allow_soft_placement)
                return incompatible("types", target, other);
            /* MergeDevNamesImpl: drop type and id, skip the id merge. */
            target->type[0] = '\0';
            target->id = RF_DEVICE_UNSET;
            return RF_OK;
        }
        memcpy(target->type, other->type, sizeof target->type);
    }
    if (other->id != RF_DEVICE_UNSET) {
        if (target->id != RF_DEVICE_UNSET && target->id != other->id) {
            if (!allow_soft_placement)
                return incompatible("ids", target, other);
            target->id = RF_DEVICE_UNSET;
            return RF_OK;
        }
        target->id = other->id;
    }
    return RF_OK;
}

bool rf_device_spec_equal(const rf_device_spec *a, const rf_device_spec *b)
{
    return strcmp(a->job, b->job) == 0 && a->replica == b->replica &&
           a->task == b->task && strcmp(a->type, b->type) == 0 &&
           a->id == b->id;
}

bool rf_device_spec_is_empty(const rf_device_spec *spec)
{
    return !spec->job[0] && spec->replica == RF_DEVICE_UNSET &&
           spec->task == RF_DEVICE_UNSET && !spec->type[0] &&
           spec->id == RF_DEVICE_UNSET;
}

bool rf_device_spec_is_specification(const rf_device_spec *less,
                                     const rf_device_spec *more)
{
    if (less->job[0] && strcmp(less->job, more->job) != 0)
        return false;
    if (less->replica != RF_DEVICE_UNSET && less->replica != more->replica)
        return false;
    if (less->task != RF_DEVICE_UNSET && less->task != more->task)
        return false;
    if (less->type[0] && strcmp(less->type, more->type) != 0)
        return false;
    if (less->id != RF_DEVICE_UNSET && less->id != more->id)
        return false;
    return true;
}

bool rf_device_spec_same_address_space(const rf_device_spec *a,
                                       const rf_device_spec *b)
{
    return a->job[0] && strcmp(a->job, b->job) == 0 &&
           a->replica != RF_DEVICE_UNSET && a->replica == b->replica &&
           a->task != RF_DEVICE_UNSET && a->task == b->task;
}

rf_status rf_device_byte_size(const int64_t *shape, int rank, size_t elem_size,
                              size_t *out)
{
    if (!out || rank < 0 || (rank > 0 && !shape))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_device_byte_size: bad arguments");
    size_t n = elem_size;
    for (int i = 0; i < rank; i++) {
        if (shape[i] < 0)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "byte size: dimension %d is unknown (%lld); "
                                "the shape must be fully defined",
                                i, (long long)shape[i]);
        if (shape[i] != 0 && n > SIZE_MAX / (uint64_t)shape[i])
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "byte size: shape overflows size_t at "
                                "dimension %d",
                                i);
        n *= (size_t)shape[i];
    }
    *out = n;
    return RF_OK;
}
