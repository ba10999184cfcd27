/* tests/unit/device/test_device.c: device strings, device scopes,
 * replica_device_setter and partitioners, checked against the expectations
 * of TensorFlow's own tests (each group cites the TF test it reproduces).
 * Usage: rf_test_device [name|stack|setter|partition] (default: all). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/device.h"
#include "tests/common/check.h"

/* ---- helpers ---------------------------------------------------------- */

static void expect_canon_at(int line, const char *in, const char *want)
{
    char buf[RF_DEVICE_STRING_MAX];
    rf_status st = rf_device_canonicalize(in, buf, sizeof buf);
    CHECK(st == RF_OK && strcmp(buf, want) == 0,
          "line %d: canonical(\"%s\") = \"%s\" (%s), want \"%s\"", line,
          in ? in : "NULL", buf, rf_status_string(st), want);
}
#define expect_canon(in, want) expect_canon_at(__LINE__, in, want)

static void expect_invalid_at(int line, const char *in)
{
    rf_device_spec s;
    rf_status st = rf_device_spec_parse(in, &s);
    CHECK(st == RF_ERR_INVALID_ARG, "line %d: \"%s\" parsed (%s)", line, in,
          rf_status_string(st));
    CHECK(rf_device_spec_is_empty(&s), "line %d: out not cleared", line);
}
#define expect_invalid(in) expect_invalid_at(__LINE__, in)

/* The exact message, offset included. */
static void expect_error_at(int line, const char *in, const char *msg)
{
    rf_device_spec s;
    rf_status st = rf_device_spec_parse(in, &s);
    CHECK(st == RF_ERR_INVALID_ARG && strcmp(rf_error_message(), msg) == 0,
          "line %d: \"%s\": %s, message\n  got  %s\n  want %s", line, in,
          rf_status_string(st), rf_error_message(), msg);
}
#define expect_error(in, msg) expect_error_at(__LINE__, in, msg)

static rf_device_spec P(const char *s)
{
    rf_device_spec d;
    rf_status st = rf_device_spec_parse(s, &d);
    CHECK(st == RF_OK, "P(\"%s\")", s);
    return d;
}

static const char *S(const rf_device_spec *d)
{
    static char bufs[4][RF_DEVICE_STRING_MAX];
    static int next;
    char *b = bufs[next++ % 4];
    rf_status st = rf_device_spec_to_string(d, b, RF_DEVICE_STRING_MAX);
    CHECK(st == RF_OK, "to_string");
    return b;
}

/* ---- device strings --------------------------------------------------- */

/* device_name_utils_test.cc, DeviceNameUtilsTest.Basic. */
static void test_name_basic(void)
{
    expect_invalid("foobar");
    expect_invalid("/job:123/replica:1/task:2/gpu:3");
    expect_invalid("/job:123/replica:1/task:2/gpu:");
    expect_invalid("/job:123/replica:1/task:2/device:gpu:");
    expect_invalid("/job:foo/replica:-1/task:2/gpu:3");
    expect_invalid("/job:foo/replica:1/task:-2/gpu:3");
    expect_invalid("/job:foo/replica:1/task:2/bar:3");
    expect_invalid("/job:foo/replica:1/task:2/gpu:3/extra");

    rf_device_spec p = P("/job:foo/replica:1/task:2/gpu:3");
    CHECK(strcmp(p.job, "foo") == 0 && p.replica == 1 && p.task == 2 &&
              strcmp(p.type, "GPU") == 0 && p.id == 3,
          "%s", S(&p));
    /* Allow _ in job names. */
    p = P("/job:foo_bar/replica:1/task:2/gpu:3");
    CHECK(strcmp(p.job, "foo_bar") == 0 && strcmp(p.type, "GPU") == 0 &&
              p.id == 3,
          "%s", S(&p));
    p = P("/job:foo_bar/replica:1/task:2/device:GPU:3");
    CHECK(strcmp(p.job, "foo_bar") == 0 && p.replica == 1 && p.task == 2 &&
              strcmp(p.type, "GPU") == 0 && p.id == 3,
          "%s", S(&p));
    p = P("/job:*/replica:4/gpu:*");
    CHECK(!p.job[0] && p.replica == 4 && p.task == RF_DEVICE_UNSET &&
              strcmp(p.type, "GPU") == 0 && p.id == RF_DEVICE_UNSET,
          "%s", S(&p));
    p = P("/job:*/replica:4/device:GPU:*");
    CHECK(!p.job[0] && p.replica == 4 && strcmp(p.type, "GPU") == 0 &&
              p.id == RF_DEVICE_UNSET,
          "%s", S(&p));
    p = P("/job:*/device:GPU/replica:4");
    CHECK(!p.job[0] && p.replica == 4 && p.task == RF_DEVICE_UNSET &&
              strcmp(p.type, "GPU") == 0 && p.id == RF_DEVICE_UNSET,
          "%s", S(&p));
    p = P("/job:*/replica:4/device:myspecialdevice:13");
    CHECK(p.replica == 4 && strcmp(p.type, "myspecialdevice") == 0 &&
              p.id == 13,
          "%s", S(&p));
    p = P("/");
    CHECK(rf_device_spec_is_empty(&p), "%s", S(&p));
    p = P("/job:*/replica:4/gpu:5");
    CHECK(p.replica == 4 && strcmp(p.type, "GPU") == 0 && p.id == 5, "%s",
          S(&p));
    /* Same result if we reorder the components. */
    p = P("/gpu:*/job:*/replica:4");
    CHECK(!p.job[0] && p.replica == 4 && strcmp(p.type, "GPU") == 0 &&
              p.id == RF_DEVICE_UNSET,
          "%s", S(&p));

    rf_device_spec a = P("/job:foo/replica:1/task:2/cpu:3");
    rf_device_spec b = P("/job:foo/replica:1/task:2/gpu:4");
    CHECK(rf_device_spec_same_address_space(&a, &b), "same address space");
    b = P("/job:foo/replica:1/task:3/gpu:4");
    CHECK(!rf_device_spec_same_address_space(&a, &b), "task differs");
    b = P("/job:foo/replica:10/task:2/gpu:4");
    CHECK(!rf_device_spec_same_address_space(&a, &b), "replica differs");
    b = P("/job:bar/replica:1/task:2/gpu:4");
    CHECK(!rf_device_spec_same_address_space(&a, &b), "job differs");
}

/* DeviceNameUtilsTest.Basic, "all parts are round-tripped correctly". One
 * deliberate difference: "/device:cpu:3" prints "/device:CPU:3" here, as TF's
 * Python DeviceSpec does (device_spec_test testto_string, device_type="cpu"),
 * where ParseFullName keeps "cpu". */
static void test_name_round_trip(void)
{
    const char *devs[] = {"CPU:3", "GPU:3", "cpu:3", "gpu:3", "someDevice:3"};
    for (int parts = 0; parts < 16; parts++)
        for (int explicit_dev = 0; explicit_dev < 2; explicit_dev++)
            for (size_t d = 0; d < 5; d++) {
                if (!explicit_dev && d == 4)
                    continue; /* "/someDevice:3" is not a legacy name */
                char in[128] = "", want[128] = "";
                if (parts & 1) {
                    strcat(in, "/job:foo");
                    strcat(want, "/job:foo");
                }
                if (parts & 2) {
                    strcat(in, "/replica:3");
                    strcat(want, "/replica:3");
                }
                if (parts & 4) {
                    strcat(in, "/task:2");
                    strcat(want, "/task:2");
                }
                if (parts & 8) {
                    strcat(in, explicit_dev ? "/device:" : "/");
                    strcat(in, devs[d]);
                    strcat(want, "/device:");
                    strcat(want, d == 4   ? "someDevice:3"
                                 : d == 0 ? "CPU:3"
                                 : d == 2 ? "CPU:3"
                                          : "GPU:3");
                }
                expect_canon(in, want);
            }
}

/* DeviceNameUtilsTest.IsSpecification and IsCompleteSpecification. */
static void test_name_is_specification(void)
{
    static const struct {
        const char *less, *more;
        bool want;
    } cases[] = {
        {"/job:*", "/job:work/replica:1/task:2/gpu:3", true},
        {"/job:*", "/job:work/replica:1/gpu:3", true},
        {"/job:*", "/job:work/replica:1", true},
        {"/job:*", "/replica:1", true},
        {"/job:*", "/job:work", true},
        {"/job:*/replica:*", "/job:work/replica:1/task:2/gpu:3", true},
        {"/job:work/replica:1/gpu:*", "/job:work/replica:1/task:2/gpu:3", true},
        {"/job:work/replica:1/gpu:3", "/job:work/replica:1/task:2/gpu:3", true},
        {"/job:work/replica:1/task:2", "/job:work/replica:1/task:2/gpu:3",
         true},
        {"/job:work/replica:*/task:2", "/job:work/replica:1/task:2/gpu:3",
         true},
        {"/task:*", "/job:*/replica:1/task:2/gpu:3", true},
        {"/task:2", "/job:*/replica:1/task:2/gpu:3", true},
        {"/cpu:*", "/job:*/replica:1/task:2/cpu:1", true},
        {"/cpu:0", "/cpu:0", true},
        {"/gpu:*", "/job:worker/replica:1/task:2/gpu:3", true},
        {"/job:worker/replica:1/task:2/gpu:3", "/gpu:*", false},
        {"/cpu:*", "/job:*/replica:1/task:2", false},
        {"/cpu:*", "/job:*/replica:1/task:2/gpu:1", false},
        {"/cpu:*", "/job:worker/replica:1/task:2/gpu:3", false},
        {"/gpu:2", "/job:worker/replica:1/task:2/gpu:1", false},
        {"/job:work/replica:*/task:0", "/job:work/replica:1/task:2/gpu:3",
         false},
        {"/job:work/replica:0/task:2", "/job:work/replica:*/task:2/gpu:3",
         false},
        /* IsCompleteSpecification (same predicate on complete names). */
        {"/job:*/replica:*/gpu:*", "/job:work/replica:1/task:2/gpu:3", true},
        {"/cpu:*", "/job:worker/replica:1/task:2/gpu:3", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rf_device_spec l = P(cases[i].less), m = P(cases[i].more);
        CHECK(rf_device_spec_is_specification(&l, &m) == cases[i].want,
              "IsSpecification(%s, %s)", cases[i].less, cases[i].more);
    }
}

/* DeviceNameUtilsTest.MergeDevNames and MergeDevNamesAllowSoftPlacement:
 * merging is symmetric and gives the expected name. */
static void merge_ok(const char *a, const char *b, const char *want, bool soft)
{
    rf_device_spec ta = P(a), tb = P(b), w = P(want);
    rf_device_spec oa = P(b), ob = P(a);
    CHECK(rf_device_spec_merge_strict(&ta, &oa, soft) == RF_OK, "%s+%s", a, b);
    CHECK(rf_device_spec_merge_strict(&tb, &ob, soft) == RF_OK, "%s+%s", b, a);
    CHECK(rf_device_spec_equal(&ta, &w) && rf_device_spec_equal(&tb, &w),
          "merge(%s, %s) = %s / %s, want %s", a, b, S(&ta), S(&tb), want);
}

static void merge_err(const char *a, const char *b, const char *substr)
{
    rf_device_spec t = P(a), o = P(b);
    rf_status st = rf_device_spec_merge_strict(&t, &o, false);
    CHECK(st == RF_ERR_INVALID_ARG && strstr(rf_error_message(), substr),
          "merge(%s, %s): %s, want \"%s\"", a, b, rf_status_string(st), substr);
}

static void test_name_merge_dev_names(void)
{
    merge_ok("", "", "", false);
    merge_ok("/job:foo/replica:1/task:2/cpu:1",
             "/job:foo/replica:1/task:2/cpu:1",
             "/job:foo/replica:1/task:2/cpu:1", false);
    merge_ok("", "/job:foo", "/job:foo", false);
    merge_ok("", "/replica:2", "/replica:2", false);
    merge_ok("", "/task:7", "/task:7", false);
    merge_ok("/job:foo", "/task:7", "/job:foo/task:7", false);
    merge_ok("/job:foo", "/gpu:1", "/job:foo/gpu:1", false);
    merge_ok("/job:foo/replica:0", "/replica:0/task:1",
             "/job:foo/replica:0/task:1", false);
    merge_ok("", "/gpu:*", "/gpu:*", false);
    merge_ok("/gpu:*", "/gpu:*", "/gpu:*", false);
    merge_ok("/gpu:1", "/gpu:*", "/gpu:1", false);
    merge_err("/job:foo", "/job:bar", "incompatible jobs");
    merge_err("/replica:0", "/replica:1", "incompatible replicas");
    merge_err("/task:0", "/task:1", "incompatible tasks");
    merge_err("/gpu:*", "/cpu:*", "incompatible types");
    merge_err("/gpu:0", "/gpu:1", "incompatible ids");
    rf_device_spec t = P("/job:foo"), o = P("/job:bar");
    rf_device_spec_merge_strict(&t, &o, false);
    CHECK(strcmp(rf_error_message(), "Cannot merge devices with incompatible "
                                     "jobs: '/job:foo' and '/job:bar'") == 0,
          "message");
    merge_ok("/gpu:*", "/cpu:1", "", true);
    merge_ok("/cpu:*", "/gpu:1", "", true);
    merge_ok("/gpu:1", "/gpu:2", "/gpu:*", true);
}

/* device_spec_test.py: test_empty, testto_string, test_parse_legacy,
 * test_to_from_string, test_combine / test_merge_legacy; device_test.py:
 * testCanonicalName, testCheckValid. */
static void test_name_device_spec(void)
{
    expect_canon("", "");
    expect_canon(NULL, "");

    rf_device_spec d;
    rf_device_spec_clear(&d);
    CHECK(strcmp(S(&d), "") == 0, "empty");
    strcpy(d.job, "j");
    d.replica = 0;
    d.task = 1;
    strcpy(d.type, "CPU");
    d.id = 2;
    CHECK(strcmp(S(&d), "/job:j/replica:0/task:1/device:CPU:2") == 0, "%s",
          S(&d));
    rf_device_spec_clear(&d);
    strcpy(d.job, "foo");
    d.replica = 12;
    d.task = 3;
    strcpy(d.type, "GPU");
    CHECK(strcmp(S(&d), "/job:foo/replica:12/task:3/device:GPU:*") == 0,
          "wildcard: %s", S(&d));
    d.type[0] = '\0';
    d.id = 4; /* an id without a type is not printed */
    CHECK(strcmp(S(&d), "/job:foo/replica:12/task:3") == 0, "%s", S(&d));

    expect_canon("/job:foo/replica:0", "/job:foo/replica:0");
    expect_canon("/replica:1/task:0/cpu:0", "/replica:1/task:0/device:CPU:0");
    expect_canon("/replica:1/task:0/device:CPU:0",
                 "/replica:1/task:0/device:CPU:0");
    expect_canon("/job:muu/device:GPU:2", "/job:muu/device:GPU:2");
    expect_canon("/job:muu/task:1/device:MyFunnyDevice:2",
                 "/job:muu/task:1/device:MyFunnyDevice:2");
    expect_invalid("/job:muu/device:GPU:2/cpu:0");

    /* testCanonicalName. */
    expect_canon("/replica:0/job:foo", "/job:foo/replica:0");
    expect_canon("/job:foo/task:0/replica:0", "/job:foo/replica:0/task:0");
    expect_canon("/device:CPU:0", "/device:CPU:0");
    expect_canon("/device:GPU:2", "/device:GPU:2");
    expect_canon("/device:GPU:0/task:0/replica:0/job:foo",
                 "/job:foo/replica:0/task:0/device:GPU:0");
    /* testCheckValid. */
    expect_canon("/job:foo/replica:0", "/job:foo/replica:0");
    expect_invalid("/job:j/replica:foo");
    expect_invalid("/job:j/task:bar");
    expect_invalid("/barcpugpu:muu/baz:2");
    expect_invalid("/cpu:0/device:GPU:2");

    /* test_combine: make_merged_spec, the argument's fields win. */
    d = P("/job:foo/replica:0");
    rf_device_spec o = P("/task:1/device:GPU:2");
    rf_device_spec_merge(&d, &o);
    CHECK(strcmp(S(&d), "/job:foo/replica:0/task:1/device:GPU:2") == 0, "%s",
          S(&d));
    rf_device_spec_clear(&d);
    o = P("/task:1/cpu:0");
    rf_device_spec_merge(&d, &o);
    CHECK(strcmp(S(&d), "/task:1/device:CPU:0") == 0, "%s", S(&d));
    o = P("/job:boo/device:GPU:0");
    rf_device_spec_merge(&d, &o);
    CHECK(strcmp(S(&d), "/job:boo/task:1/device:GPU:0") == 0, "%s", S(&d));
    o = P("/job:muu/cpu:2");
    rf_device_spec_merge(&d, &o);
    CHECK(strcmp(S(&d), "/job:muu/task:1/device:CPU:2") == 0, "%s", S(&d));
    o = P("/job:muu/device:MyFunnyDevice:2");
    rf_device_spec_merge(&d, &o);
    CHECK(strcmp(S(&d), "/job:muu/task:1/device:MyFunnyDevice:2") == 0, "%s",
          S(&d));
    /* make_merged_spec docstring: job 0 + CPU merged with GPU gives GPU. */
    d = P("/job:a/device:CPU:*");
    o = P("/device:GPU:*");
    rf_device_spec_merge(&d, &o);
    CHECK(strcmp(S(&d), "/job:a/device:GPU:*") == 0, "%s", S(&d));
}

/* Legacy and bare forms TF accepts (DeviceSpec: a CPU/GPU component in any
 * case with an optional index; ParseFullName: "/cpu:", "/CPU:"), and the
 * tolerances of DeviceSpec's split on '/'. */
static void test_name_legacy(void)
{
    expect_canon("/cpu:0", "/device:CPU:0");
    expect_canon("/CPU:0", "/device:CPU:0");
    expect_canon("/gpu:0", "/device:GPU:0");
    expect_canon("/GPU:1", "/device:GPU:1");
    expect_canon("/Gpu:1", "/device:GPU:1");
    expect_canon("CPU:0", "/device:CPU:0");
    expect_canon("cpu", "/device:CPU:*");
    expect_canon("/gpu:*", "/device:GPU:*");
    expect_canon("/device:cpu:0", "/device:CPU:0");
    expect_canon("/device:gpu:1", "/device:GPU:1");
    expect_canon("/device:GPU", "/device:GPU:*");
    expect_canon("/device:*:*", "");
    expect_canon("/job:*/replica:*/task:*", "");
    expect_canon("job:ps/task:0", "/job:ps/task:0");
    expect_canon("/job:ps/", "/job:ps");
    expect_canon("//job:ps//task:3", "/job:ps/task:3");
    expect_canon("/job:ps/job:worker", "/job:worker"); /* last wins */
    expect_canon("/task:007", "/task:7");
    expect_canon("/job:localhost/replica:0/task:0/device:CPU:0",
                 "/job:localhost/replica:0/task:0/device:CPU:0");
    expect_canon("/task:2147483647", "/task:2147483647");

    rf_device_spec d = P("/device:*:1");
    CHECK(!d.type[0] && d.id == 1, "type unset, id 1");
    CHECK(strcmp(S(&d), "") == 0, "%s", S(&d));
}

/* Error messages point at the offending text (offsets are 0-based). */
static void test_name_errors(void)
{
    expect_error("/job:ps/tsk:1",
                 "device string \"/job:ps/tsk:1\": unknown field at offset 8 "
                 "(\"tsk:1\")");
    expect_error("/job:ps-1", "device string \"/job:ps-1\": invalid character "
                              "in job name at offset 7 (\"-1\")");
    expect_error("/job:123", "device string \"/job:123\": invalid character "
                             "in job name at offset 5 (\"123\")");
    expect_error("/job:", "device string \"/job:\": missing job name at "
                          "offset 5 (\"\")");
    expect_error("/job", "device string \"/job\": field \"job\" has no value "
                         "at offset 1 (\"job\")");
    expect_error("/job:ps:1", "device string \"/job:ps:1\": unexpected ':' at "
                              "offset 7 (\":1\")");
    expect_error("/task:1x", "device string \"/task:1x\": invalid character "
                             "in task index at offset 7 (\"x\")");
    expect_error("/job:foo/replica:-1/task:2/gpu:3",
                 "device string \"/job:foo/replica:-1/task:2/gpu:3\": invalid "
                 "character in replica index at offset 17 (\"-1\")");
    expect_error("/task:99999999999",
                 "device string \"/task:99999999999\": task index out of range "
                 "at offset 6 (\"99999999999\")");
    expect_error("/cpu:0/device:GPU:2",
                 "device string \"/cpu:0/device:GPU:2\": a second device type "
                 "at offset 7 (\"device:GPU:2\")");
    expect_error("/job:w/gpu:", "device string \"/job:w/gpu:\": missing "
                                "device index at offset 11 (\"\")");
    expect_error("/device:GPU:0:1", "device string \"/device:GPU:0:1\": "
                                    "unexpected ':' at offset 13 (\":1\")");
    expect_error("/device:9PU:0", "device string \"/device:9PU:0\": invalid "
                                  "character in device type at offset 8 "
                                  "(\"9PU\")");
    expect_error("/job:ps /task:0", "device string \"/job:ps /task:0\": "
                                    "invalid character in job name at "
                                    "offset 7 (\" \")");
    expect_error("/task:1/JOB:ps", "device string \"/task:1/JOB:ps\": unknown "
                                   "field at offset 8 (\"JOB:ps\")");
    char long_job[100] = "/job:";
    memset(long_job + 5, 'a', 70);
    expect_invalid(long_job);

    char small[8];
    rf_device_spec d = P("/job:worker/task:1");
    CHECK(rf_device_spec_to_string(&d, small, sizeof small) ==
                  RF_ERR_INVALID_ARG &&
              small[0] == '\0',
          "buffer too small");
    strcpy(d.job, "bad-job");
    char buf[RF_DEVICE_STRING_MAX];
    CHECK(rf_device_spec_to_string(&d, buf, sizeof buf) == RF_ERR_INVALID_ARG,
          "malformed job printed");
    d = P("");
    d.task = -7;
    CHECK(rf_device_spec_to_string(&d, buf, sizeof buf) == RF_ERR_INVALID_ARG,
          "negative task printed");

    size_t bytes = 0;
    int64_t shape[] = {2, 3};
    CHECK(rf_device_byte_size(shape, 2, 4, &bytes) == RF_OK && bytes == 24,
          "%zu", bytes);
    CHECK(rf_device_byte_size(NULL, 0, 4, &bytes) == RF_OK && bytes == 4,
          "scalar %zu", bytes);
    int64_t unknown[] = {-1, 3};
    CHECK(rf_device_byte_size(unknown, 2, 4, &bytes) == RF_ERR_INVALID_ARG,
          "unknown dim");
}

/* ---- device scopes ---------------------------------------------------- */

static const char *apply(rf_device_stack *st, const char *type,
                         const char *name)
{
    static char out[4][RF_DEVICE_STRING_MAX];
    static int next;
    char *o = out[next++ % 4];
    rf_op_desc op = {.type = type, .name = name, .device = "", .bytes = 0};
    rf_status s = rf_device_stack_apply(st, &op, o, RF_DEVICE_STRING_MAX);
    CHECK(s == RF_OK, "apply %s", name);
    return o;
}

#define EXPECT_DEV(got, want)                                                  \
    do {                                                                       \
        const char *g_ = (got);                                                \
        CHECK(strcmp(g_, (want)) == 0, "got \"%s\", want \"%s\"", g_, (want)); \
    } while (0)

/* device_test.py testMerge: nested merge_device scopes. */
static void test_stack_merge_device(void)
{
    rf_device_stack *st;
    CHECK(rf_device_stack_create(&st) == RF_OK, "create");
    EXPECT_DEV(apply(st, "Const", "c"), "");
    rf_device_stack_push(st, "/device:GPU:0");
    EXPECT_DEV(apply(st, "VariableV2", "var1"), "/device:GPU:0");
    rf_device_stack_push(st, "/job:worker");
    EXPECT_DEV(apply(st, "VariableV2", "var2"), "/job:worker/device:GPU:0");
    rf_device_stack_push(st, "/device:CPU:0");
    EXPECT_DEV(apply(st, "VariableV2", "var3"), "/job:worker/device:CPU:0");
    rf_device_stack_push(st, "/job:ps");
    EXPECT_DEV(apply(st, "VariableV2", "var4"), "/job:ps/device:CPU:0");
    CHECK(rf_device_stack_depth(st) == 4, "depth");
    for (int i = 0; i < 4; i++)
        rf_device_stack_pop(st);
    CHECK(rf_device_stack_pop(st) == RF_ERR_INVALID_ARG, "pop empty");

    /* DeviceSpec docstring: inner scopes take precedence. */
    rf_device_stack_push(st, "/job:train");
    rf_device_stack_push(st, "/job:ps/device:GPU:0");
    EXPECT_DEV(apply(st, "Add", "a"), "/job:ps/device:GPU:0");
    rf_device_stack_pop(st);
    rf_device_stack_push(st, "/device:GPU:1");
    EXPECT_DEV(apply(st, "Add", "b"), "/job:train/device:GPU:1");
    /* tf.device("") is skipped (MergeDevice.is_null_merge). */
    rf_device_stack_push(st, "");
    EXPECT_DEV(apply(st, "Add", "c"), "/job:train/device:GPU:1");
    /* tf.device(None) hides every outer scope. */
    rf_device_stack_push(st, NULL);
    EXPECT_DEV(apply(st, "Add", "d"), "");
    rf_device_stack_push(st, "/cpu:0");
    EXPECT_DEV(apply(st, "Add", "e"), "/device:CPU:0");
    /* A malformed scope is rejected and not pushed. */
    size_t depth = rf_device_stack_depth(st);
    CHECK(rf_device_stack_push(st, "/job:ps/tsk:1") == RF_ERR_INVALID_ARG,
          "malformed push");
    CHECK(rf_device_stack_depth(st) == depth, "depth unchanged");
    rf_device_stack_destroy(st);
}

/* Graph.device docstring: matmul_on_gpu. */
static rf_status matmul_on_gpu(void *ctx, const rf_op_desc *op, char *out,
                               size_t len)
{
    (void)ctx;
    snprintf(out, len, "%s",
             strcmp(op->type, "MatMul") == 0 ? "/device:GPU:0" : "/cpu:0");
    return RF_OK;
}

typedef struct recorder {
    char seen[8][RF_DEVICE_STRING_MAX];
    int n;
    const char *result;
} recorder;

/* Records the device it is given, returns a fixed result. */
static rf_status record_fn(void *ctx, const rf_op_desc *op, char *out,
                           size_t len)
{
    recorder *r = ctx;
    if (r->n < 8)
        snprintf(r->seen[r->n++], RF_DEVICE_STRING_MAX, "%s",
                 op->device ? op->device : "(null)");
    snprintf(out, len, "%s", r->result ? r->result : op->device);
    return RF_OK;
}

static rf_status failing_fn(void *ctx, const rf_op_desc *op, char *out,
                            size_t len)
{
    (void)ctx;
    (void)op;
    (void)out;
    (void)len;
    return RF_ERR_UNSUPPORTED;
}

/* ops.py Graph._apply_device_functions: innermost first; a function sees
 * the device the scopes inside it produced, and the scopes outside it merge
 * under its result. */
static void test_stack_functions(void)
{
    rf_device_stack *st;
    rf_device_stack_create(&st);
    rf_device_stack_push_fn(st, matmul_on_gpu, NULL);
    EXPECT_DEV(apply(st, "MatMul", "m"), "/device:GPU:0");
    EXPECT_DEV(apply(st, "Add", "a"), "/device:CPU:0");
    rf_device_stack_pop(st);

    recorder r = {.result = NULL};
    rf_device_stack_push(st, "/job:worker/task:1");
    rf_device_stack_push_fn(st, record_fn, &r);
    rf_device_stack_push(st, "/device:CPU:0");
    EXPECT_DEV(apply(st, "Add", "x"), "/job:worker/task:1/device:CPU:0");
    CHECK(r.n == 1 && strcmp(r.seen[0], "/device:CPU:0") == 0,
          "function saw \"%s\"", r.seen[0]);
    rf_device_stack_pop(st);
    r.result = "/job:ps/gpu:0"; /* non-canonical result is canonicalized */
    EXPECT_DEV(apply(st, "Add", "y"), "/job:ps/task:1/device:GPU:0");
    CHECK(r.n == 2 && strcmp(r.seen[1], "") == 0, "function saw \"%s\"",
          r.seen[1]);
    r.result = "/job:ps/tsk:1";
    char out[RF_DEVICE_STRING_MAX];
    rf_op_desc op = {.type = "Add", .name = "bad_op", .device = ""};
    CHECK(rf_device_stack_apply(st, &op, out, sizeof out) ==
                  RF_ERR_INVALID_ARG &&
              strstr(rf_error_message(), "\"bad_op\"") &&
              strstr(rf_error_message(), "offset 8"),
          "malformed function result");
    rf_device_stack_pop(st);
    rf_device_stack_pop(st);

    rf_device_stack_push_fn(st, failing_fn, NULL);
    CHECK(rf_device_stack_apply(st, &op, out, sizeof out) == RF_ERR_UNSUPPORTED,
          "function error propagates");
    rf_device_stack_pop(st);

    /* The op's own requested device is where the walk starts. */
    rf_device_stack_push(st, "/job:worker/device:GPU:1");
    rf_op_desc pinned = {.type = "Add", .name = "p", .device = "/cpu:0"};
    CHECK(rf_device_stack_apply(st, &pinned, out, sizeof out) == RF_OK &&
              strcmp(out, "/job:worker/device:CPU:0") == 0,
          "%s", out);
    CHECK(rf_device_stack_apply(st, &pinned, out, 4) == RF_ERR_INVALID_ARG,
          "small output buffer");
    rf_op_desc bad_req = {.type = "Add", .name = "q", .device = "/job:ps/x"};
    CHECK(rf_device_stack_apply(st, &bad_req, out, sizeof out) ==
                  RF_ERR_INVALID_ARG &&
              strstr(rf_error_message(), "op \"q\": requested device") &&
              strstr(rf_error_message(), "offset 8"),
          "malformed requested device: %s", rf_error_message());
    rf_device_stack_destroy(st);
}

/* ---- replica_device_setter -------------------------------------------- */

static const rf_cluster_job ps_worker_jobs[] = {{"ps", 2}, {"worker", 3}};
static const rf_cluster_desc ps_worker = {ps_worker_jobs, 2};
static const rf_cluster_job sun_moon_jobs[] = {{"sun", 3}, {"moon", 2}};
static const rf_cluster_desc sun_moon = {sun_moon_jobs, 2};

static rf_replica_device_setter *
make_setter(const rf_replica_device_setter_options *o)
{
    rf_replica_device_setter *s = NULL;
    rf_status st = rf_replica_device_setter_create(o, &s);
    CHECK(st == RF_OK && s, "setter create: %s", rf_status_string(st));
    return s;
}

static const char *place(rf_device_stack *st, const char *type,
                         const char *name, size_t bytes)
{
    static char out[8][RF_DEVICE_STRING_MAX];
    static int next;
    char *o = out[next++ % 8];
    rf_op_desc op = {.type = type, .name = name, .device = "", .bytes = bytes};
    rf_status s = rf_device_stack_apply(st, &op, o, RF_DEVICE_STRING_MAX);
    CHECK(s == RF_OK, "place %s", name);
    return o;
}

/* device_setter_test.py. (Every assertDeviceEqual there compares canonical
 * forms: "/job:ps/task:0/cpu:0" is "/job:ps/task:0/device:CPU:0".) */
static void test_setter_tf_tests(void)
{
    rf_replica_device_setter_options o;
    rf_device_stack *st;
    rf_device_stack_create(&st);

    /* testCPUOverride. */
    rf_replica_device_setter_options_init(&o);
    o.cluster = &ps_worker;
    rf_replica_device_setter *s = make_setter(&o);
    rf_device_stack_push_setter(st, s);
    rf_device_stack_push(st, "/cpu:0");
    EXPECT_DEV(place(st, "VariableV2", "v", 8), "/job:ps/task:0/device:CPU:0");
    rf_device_stack_pop(st);
    EXPECT_DEV(place(st, "VariableV2", "w", 8), "/job:ps/task:1");
    rf_device_stack_push(st, "/cpu:0");
    EXPECT_DEV(place(st, "Add", "a", 8), "/job:worker/device:CPU:0");
    rf_device_stack_pop(st);
    rf_device_stack_pop(st);
    rf_replica_device_setter_destroy(s);

    /* testResource: a resource variable (VarHandleOp) is a ps op. */
    s = make_setter(&o);
    rf_device_stack_push_setter(st, s);
    EXPECT_DEV(place(st, "VarHandleOp", "v", 8), "/job:ps/task:0");
    rf_device_stack_pop(st);
    rf_replica_device_setter_destroy(s);

    /* testPS2TasksWithClusterSpecClass / Dict / ClusterDef. */
    s = make_setter(&o);
    rf_device_stack_push_setter(st, s);
    EXPECT_DEV(place(st, "VariableV2", "v", 8), "/job:ps/task:0");
    EXPECT_DEV(place(st, "VariableV2", "w", 8), "/job:ps/task:1");
    EXPECT_DEV(place(st, "Add", "a", 8), "/job:worker");
    rf_device_stack_pop(st);
    rf_replica_device_setter_destroy(s);

    /* testPS2TasksPinVariableToJob: a variable pinned to another job does not
     * consult (or advance) the strategy; an explicit ps job gets a task. */
    s = make_setter(&o);
    rf_device_stack_push_setter(st, s);
    EXPECT_DEV(place(st, "VariableV2", "v", 8), "/job:ps/task:0");
    rf_device_stack_push(st, "/job:moon");
    EXPECT_DEV(place(st, "VariableV2", "w", 8), "/job:moon");
    rf_device_stack_push(st, "/job:ps");
    EXPECT_DEV(place(st, "VariableV2", "x", 8), "/job:ps/task:1");
    rf_device_stack_pop(st);
    rf_device_stack_pop(st);
    EXPECT_DEV(place(st, "Add", "a", 8), "/job:worker");
    rf_device_stack_pop(st);
    rf_replica_device_setter_destroy(s);

    /* testPS2TasksUseCpuForPS: ps_device without a job never sets a task. */
    rf_replica_device_setter_options_init(&o);
    o.ps_tasks = 1;
    o.ps_device = "/cpu:0";
    s = make_setter(&o);
    rf_device_stack_push_setter(st, s);
    EXPECT_DEV(place(st, "VariableV2", "v", 8), "/device:CPU:0");
    rf_device_stack_push(st, "/job:moon");
    EXPECT_DEV(place(st, "VariableV2", "w", 8), "/job:moon/device:CPU:0");
    rf_device_stack_pop(st);
    EXPECT_DEV(place(st, "Add", "a", 8), "/job:worker");
    rf_device_stack_pop(st);
    rf_replica_device_setter_destroy(s);

    /* testPS2TasksNoMerging. */
    rf_replica_device_setter_options_init(&o);
    o.cluster = &ps_worker;
    o.merge_devices = false;
    s = make_setter(&o);
    rf_device_stack_push_setter(st, s);
    EXPECT_DEV(place(st, "VariableV2", "v", 8), "/job:ps/task:0");
    rf_device_stack_push(st, "/job:ps");
    EXPECT_DEV(place(st, "VariableV2", "w", 8), "/job:ps");
    rf_device_stack_pop(st);
    EXPECT_DEV(place(st, "Add", "a", 8), "/job:worker");
    /* ...and w did not advance the counter. */
    EXPECT_DEV(place(st, "VariableV2", "x", 8), "/job:ps/task:1");
    rf_device_stack_pop(st);
    rf_replica_device_setter_destroy(s);

    /* testPS2TasksWithDevice. */
    rf_replica_device_setter_options_init(&o);
    o.cluster = &sun_moon;
    o.ps_device = "/job:moon";
    o.worker_device = "/job:sun";
    s = make_setter(&o);
    CHECK(rf_replica_device_setter_ps_tasks(s) == 2, "moon has 2 tasks");
    rf_device_stack_push_setter(st, s);
    EXPECT_DEV(place(st, "VariableV2", "v", 8), "/job:moon/task:0");
    EXPECT_DEV(place(st, "VariableV2", "w", 8), "/job:moon/task:1");
    EXPECT_DEV(place(st, "Add", "a", 8), "/job:sun");
    rf_device_stack_pop(st);
    rf_replica_device_setter_destroy(s);

    /* testPS2TasksWithCPUConstraint. */
    o.ps_device = "/job:moon/cpu:0";
    s = make_setter(&o);
    rf_device_stack_push_setter(st, s);
    EXPECT_DEV(place(st, "VariableV2", "v", 8),
               "/job:moon/task:0/device:CPU:0");
    EXPECT_DEV(place(st, "VariableV2", "w", 8),
               "/job:moon/task:1/device:CPU:0");
    EXPECT_DEV(place(st, "Add", "a", 8), "/job:sun");
    rf_device_stack_pop(st);
    rf_replica_device_setter_destroy(s);
    rf_device_stack_destroy(st);
}

/* replica_device_setter docstring (v1, v2, v3 over 2 ps tasks), the None
 * cases, and the round-robin counter (device_setter._RoundRobinStrategy:
 * advanced once per ps op that reaches the strategy). */
static void test_setter_round_robin(void)
{
    rf_replica_device_setter_options o;
    rf_device_stack *st;
    rf_device_stack_create(&st);
    rf_replica_device_setter_options_init(&o);
    o.ps_tasks = 2;
    rf_replica_device_setter *s = make_setter(&o);
    rf_device_stack_push_setter(st, s);
    EXPECT_DEV(place(st, "VariableV2", "v", 8), "/job:ps/task:0");
    EXPECT_DEV(place(st, "MatMul", "m", 8), "/job:worker");
    EXPECT_DEV(place(st, "Assign", "v/Assign", 8), "/job:worker");
    EXPECT_DEV(place(st, "VariableV2", "w", 8), "/job:ps/task:1");
    EXPECT_DEV(place(st, "Identity", "w/read", 8), "/job:worker");
    EXPECT_DEV(place(st, "VariableV2", "x", 8), "/job:ps/task:0");
    EXPECT_DEV(place(st, "MutableHashTableV2", "t", 8), "/job:ps/task:1");
    /* An explicit task on the op is kept, but the counter still advances. */
    rf_device_stack_push(st, "/task:5");
    EXPECT_DEV(place(st, "VariableV2", "y", 8), "/job:ps/task:5");
    rf_device_stack_pop(st);
    EXPECT_DEV(place(st, "VariableV2", "z", 8), "/job:ps/task:1");
    rf_device_stack_pop(st);
    rf_replica_device_setter_destroy(s);

    /* Three ps tasks through the function directly. */
    o.ps_tasks = 3;
    s = make_setter(&o);
    char out[RF_DEVICE_STRING_MAX];
    const char *want[] = {"/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:2",
                          "/job:ps/task:0"};
    for (int i = 0; i < 4; i++) {
        rf_op_desc op = {.type = "Variable", .name = "v", .device = NULL};
        CHECK(rf_replica_device_setter_fn(s, &op, out, sizeof out) == RF_OK &&
                  strcmp(out, want[i]) == 0,
              "%d: %s", i, out);
    }
    rf_replica_device_setter_destroy(s);

    /* ps_tasks == 0 and no cluster: None. */
    rf_replica_device_setter_options_init(&o);
    s = (rf_replica_device_setter *)&o; /* must be overwritten with NULL */
    CHECK(rf_replica_device_setter_create(&o, &s) == RF_OK && s == NULL,
          "ps_tasks 0 gives no setter");
    /* A cluster without the ps job: None, ps_tasks ignored. */
    static const rf_cluster_job only_workers[] = {{"worker", 3}};
    rf_cluster_desc cw = {only_workers, 1};
    o.cluster = &cw;
    o.ps_tasks = 4;
    CHECK(rf_replica_device_setter_create(&o, &s) == RF_OK && s == NULL,
          "no ps job gives no setter");
    /* ps_device without a job and a cluster: ps_job_name None: None. */
    o.cluster = &ps_worker;
    o.ps_device = "/cpu:0";
    CHECK(rf_replica_device_setter_create(&o, &s) == RF_OK && s == NULL,
          "ps_device without job gives no setter");
    /* A ps job with no task: None. */
    static const rf_cluster_job empty_ps[] = {{"ps", 0}};
    rf_cluster_desc ce = {empty_ps, 1};
    o.cluster = &ce;
    o.ps_device = NULL; /* default */
    CHECK(rf_replica_device_setter_create(&o, &s) == RF_OK && s == NULL,
          "empty ps job gives no setter");

    /* tf.device(None) from a None setter hides outer scopes. */
    rf_device_stack_push(st, "/job:worker/task:3");
    rf_device_stack_push_setter(st, NULL);
    EXPECT_DEV(place(st, "VariableV2", "v", 8), "");
    rf_device_stack_pop(st);
    EXPECT_DEV(place(st, "VariableV2", "v", 8), "/job:worker/task:3");
    rf_device_stack_pop(st);

    /* The usual worker program: the setter outside a worker-task scope. */
    rf_replica_device_setter_options_init(&o);
    o.cluster = &ps_worker;
    o.worker_device = "/job:worker/task:1";
    s = make_setter(&o);
    rf_device_stack_push_setter(st, s);
    EXPECT_DEV(place(st, "VariableV2", "v", 8), "/job:ps/task:0");
    EXPECT_DEV(place(st, "MatMul", "m", 8), "/job:worker/task:1");
    rf_device_stack_push(st, "/gpu:0");
    EXPECT_DEV(place(st, "MatMul", "m", 8), "/job:worker/task:1/device:GPU:0");
    rf_device_stack_pop(st);
    rf_device_stack_pop(st);
    /* ...and inside a scope: the outer scope fills what the setter left. */
    rf_device_stack_push(st, "/job:worker/replica:0/task:1/device:CPU:0");
    rf_device_stack_push_setter(st, s);
    EXPECT_DEV(place(st, "VariableV2", "w", 8),
               "/job:ps/replica:0/task:1/device:CPU:0");
    EXPECT_DEV(place(st, "Add", "a", 8),
               "/job:worker/replica:0/task:1/device:CPU:0");
    rf_device_stack_pop(st);
    rf_device_stack_pop(st);
    rf_replica_device_setter_destroy(s);

    /* ps_device "": nothing goes to ps; worker_device "": ops keep their own
     * device. */
    rf_replica_device_setter_options_init(&o);
    o.ps_tasks = 2;
    o.ps_device = "";
    o.worker_device = "";
    s = make_setter(&o);
    rf_device_stack_push_setter(st, s);
    EXPECT_DEV(place(st, "VariableV2", "v", 8), "");
    rf_device_stack_pop(st);
    rf_replica_device_setter_destroy(s);

    /* Custom ps_ops. */
    rf_replica_device_setter_options_init(&o);
    o.ps_tasks = 2;
    const char *my_ops[] = {"MyTable"};
    o.ps_ops = my_ops;
    o.num_ps_ops = 1;
    s = make_setter(&o);
    rf_device_stack_push_setter(st, s);
    EXPECT_DEV(place(st, "VariableV2", "v", 8), "/job:worker");
    EXPECT_DEV(place(st, "MyTable", "t", 8), "/job:ps/task:0");
    EXPECT_DEV(place(st, "MyTable", "u", 8), "/job:ps/task:1");
    rf_device_stack_pop(st);
    rf_replica_device_setter_destroy(s);

    /* Bad options. */
    rf_replica_device_setter_options_init(&o);
    o.ps_tasks = -1;
    CHECK(rf_replica_device_setter_create(&o, &s) == RF_ERR_INVALID_ARG,
          "negative ps_tasks");
    o.ps_tasks = 2;
    o.ps_device = "/job:ps/tsk:1";
    CHECK(rf_replica_device_setter_create(&o, &s) == RF_ERR_INVALID_ARG &&
              strstr(rf_error_message(), "ps_device") &&
              strstr(rf_error_message(), "offset 8"),
          "malformed ps_device");
    o.ps_device = NULL;
    o.strategy = RF_PS_CUSTOM;
    CHECK(rf_replica_device_setter_create(&o, &s) == RF_ERR_INVALID_ARG,
          "custom strategy without callback");

    /* STANDARD_PS_OPS. */
    CHECK(rf_standard_ps_ops_count == 14, "%zu", rf_standard_ps_ops_count);
    const char *expect[] = {"Variable",
                            "VariableV2",
                            "AutoReloadVariable",
                            "MutableHashTable",
                            "MutableHashTableV2",
                            "MutableHashTableOfTensors",
                            "MutableHashTableOfTensorsV2",
                            "MutableDenseHashTable",
                            "MutableDenseHashTableV2",
                            "VarHandleOp",
                            "BoostedTreesEnsembleResourceHandleOp",
                            "BoostedTreesQuantileStreamResourceHandleOp",
                            "ResourceConditionalAccumulator",
                            "DecisionTreeResource"};
    for (size_t i = 0; i < 14 && i < rf_standard_ps_ops_count; i++)
        CHECK(strcmp(rf_standard_ps_ops[i], expect[i]) == 0, "%zu: %s", i,
              rf_standard_ps_ops[i]);
    rf_device_stack_destroy(st);
}

static double unit_load(void *ctx, const rf_op_desc *op)
{
    (void)ctx;
    (void)op;
    return 1.0;
}

static rf_status last_task(void *ctx, const rf_op_desc *op, int n, int *task)
{
    (void)op;
    int *calls = ctx;
    (*calls)++;
    *task = *calls == 3 ? n : n - 1; /* the third call is out of range */
    return RF_OK;
}

/* contrib/training device_setter_test.py GreedyLoadBalancingStrategyTest. */
static void test_setter_greedy(void)
{
    rf_replica_device_setter_options o;
    rf_device_stack *st;
    rf_device_stack_create(&st);
    /* testUniformLoadEqualsRoundRobin. */
    rf_replica_device_setter_options_init(&o);
    o.cluster = &ps_worker;
    o.strategy = RF_PS_GREEDY;
    o.load_fn = unit_load;
    rf_replica_device_setter *s = make_setter(&o);
    rf_device_stack_push_setter(st, s);
    EXPECT_DEV(place(st, "VariableV2", "u", 16), "/job:ps/task:0");
    EXPECT_DEV(place(st, "VariableV2", "v", 8), "/job:ps/task:1");
    EXPECT_DEV(place(st, "VariableV2", "w", 16), "/job:ps/task:0");
    EXPECT_DEV(place(st, "VariableV2", "x", 12), "/job:ps/task:1");
    EXPECT_DEV(place(st, "Add", "a", 8), "/job:worker");
    rf_device_stack_pop(st);
    rf_replica_device_setter_destroy(s);

    /* testByteSizeLoadFn: zeros [2,2], [2,1], [2,2], [1,3] float32. */
    o.load_fn = NULL;
    s = make_setter(&o);
    rf_device_stack_push_setter(st, s);
    int64_t shapes[4][2] = {{2, 2}, {2, 1}, {2, 2}, {1, 3}};
    const char *names[] = {"u", "v", "w", "x"};
    const char *want[] = {"/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:1",
                          "/job:ps/task:0"};
    for (int i = 0; i < 4; i++) {
        size_t bytes = 0;
        CHECK(rf_device_byte_size(shapes[i], 2, 4, &bytes) == RF_OK, "bytes");
        EXPECT_DEV(place(st, "VariableV2", names[i], bytes), want[i]);
    }
    EXPECT_DEV(place(st, "Add", "a", 8), "/job:worker");
    CHECK(rf_replica_device_setter_load(s, 0) == 28.0 &&
              rf_replica_device_setter_load(s, 1) == 24.0,
          "loads %g %g", rf_replica_device_setter_load(s, 0),
          rf_replica_device_setter_load(s, 1));
    rf_device_stack_pop(st);
    rf_replica_device_setter_destroy(s);

    /* testByteSizeLoadFnWithScalar. */
    s = make_setter(&o);
    rf_device_stack_push_setter(st, s);
    EXPECT_DEV(place(st, "VariableV2", "u", 4), "/job:ps/task:0");
    rf_device_stack_pop(st);
    rf_replica_device_setter_destroy(s);

    /* Ties go to the lowest index; a big variable then steers the rest. */
    rf_replica_device_setter_options_init(&o);
    o.ps_tasks = 3;
    o.strategy = RF_PS_GREEDY;
    s = make_setter(&o);
    rf_device_stack_push_setter(st, s);
    EXPECT_DEV(place(st, "VariableV2", "big", 1000), "/job:ps/task:0");
    EXPECT_DEV(place(st, "VariableV2", "a", 10), "/job:ps/task:1");
    EXPECT_DEV(place(st, "VariableV2", "b", 10), "/job:ps/task:2");
    EXPECT_DEV(place(st, "VariableV2", "c", 5), "/job:ps/task:1");
    EXPECT_DEV(place(st, "VariableV2", "d", 100), "/job:ps/task:2");
    EXPECT_DEV(place(st, "VariableV2", "e", 1), "/job:ps/task:1");
    /* A variable pinned to another job adds no load. */
    rf_device_stack_push(st, "/job:local");
    EXPECT_DEV(place(st, "VariableV2", "f", 500), "/job:local");
    rf_device_stack_pop(st);
    CHECK(rf_replica_device_setter_load(s, 1) == 16.0, "%g",
          rf_replica_device_setter_load(s, 1));
    rf_device_stack_pop(st);
    rf_replica_device_setter_destroy(s);

    /* A user strategy. */
    int calls = 0;
    rf_replica_device_setter_options_init(&o);
    o.ps_tasks = 4;
    o.strategy = RF_PS_CUSTOM;
    o.strategy_fn = last_task;
    o.strategy_ctx = &calls;
    s = make_setter(&o);
    rf_device_stack_push_setter(st, s);
    EXPECT_DEV(place(st, "VariableV2", "a", 1), "/job:ps/task:3");
    EXPECT_DEV(place(st, "Add", "b", 1), "/job:worker");
    EXPECT_DEV(place(st, "VariableV2", "c", 1), "/job:ps/task:3");
    char out[RF_DEVICE_STRING_MAX];
    rf_op_desc op = {.type = "VariableV2", .name = "d", .device = ""};
    CHECK(rf_device_stack_apply(st, &op, out, sizeof out) ==
                  RF_ERR_INVALID_ARG &&
              strstr(rf_error_message(), "task 4"),
          "out-of-range task");
    CHECK(calls == 3, "%d calls", calls);
    rf_device_stack_pop(st);
    rf_replica_device_setter_destroy(s);
    rf_device_stack_destroy(st);
}

/* ---- partitioners ----------------------------------------------------- */

static void expect_parts_at(int line, const rf_partitioner *p,
                            const int64_t *shape, int rank, size_t elem,
                            bool is_string, const int *want)
{
    int got[RF_PARTITION_MAX_RANK];
    rf_status st =
        rf_partitioner_partitions(p, shape, rank, elem, is_string, got);
    bool same = st == RF_OK;
    for (int i = 0; same && i < rank; i++)
        same = got[i] == want[i];
    CHECK(same, "line %d: %s, partitions [%d %d %d %d] want [%d %d %d %d]",
          line, rf_status_string(st), got[0], rank > 1 ? got[1] : 0,
          rank > 2 ? got[2] : 0, rank > 3 ? got[3] : 0, want[0],
          rank > 1 ? want[1] : 0, rank > 2 ? want[2] : 0,
          rank > 3 ? want[3] : 0);
}
#define expect_parts(p, shape, rank, elem, str, ...)                           \
    expect_parts_at(__LINE__, p, shape, rank, elem, str,                       \
                    (const int[]){__VA_ARGS__})

/* partitioned_variables_test.py PartitionerCreatorsTest. */
static void test_partitioners(void)
{
    rf_partitioner p;
    /* testFixedSizePartitioner, testFixedSizePartitionerInt64. */
    rf_fixed_size_partitioner(5, 0, &p);
    int64_t s10x10[] = {10, 10};
    expect_parts(&p, s10x10, 2, 4, false, 5, 1);
    rf_fixed_size_partitioner(4, 0, &p);
    int64_t s20[] = {20};
    expect_parts(&p, s20, 1, 8, false, 4);
    /* min(num_shards, dim). */
    rf_fixed_size_partitioner(16, 1, &p);
    int64_t s10x3[] = {10, 3};
    expect_parts(&p, s10x3, 2, 4, false, 1, 3);
    rf_fixed_size_partitioner(2, -1, &p); /* Python negative index */
    expect_parts(&p, s10x3, 2, 4, false, 1, 2);
    int got[RF_PARTITION_MAX_RANK];
    rf_fixed_size_partitioner(0, 0, &p);
    CHECK(rf_partitioner_partitions(&p, s10x3, 2, 4, false, got) ==
                  RF_ERR_INVALID_ARG &&
              strstr(rf_error_message(), "zero partitions"),
          "zero shards");
    rf_fixed_size_partitioner(2, 2, &p);
    CHECK(rf_partitioner_partitions(&p, s10x3, 2, 4, false, got) ==
              RF_ERR_INVALID_ARG,
          "axis out of range");

    /* testVariableAxisSizePartitioner, shape (4, 8, 16, 32) float32. */
    int64_t s4d[] = {4, 8, 16, 32};
    rf_variable_axis_size_partitioner(131072, 0, 16, 0, &p);
    expect_parts(&p, s4d, 4, 4, false, 1, 1, 1, 1);
    rf_variable_axis_size_partitioner(65536, 1, 16, 0, &p);
    expect_parts(&p, s4d, 4, 4, false, 1, 1, 1, 1);
    rf_variable_axis_size_partitioner(32768, 2, 16, 0, &p);
    expect_parts(&p, s4d, 4, 4, false, 1, 1, 2, 1);
    rf_variable_axis_size_partitioner(2048, 3, 16, 0, &p);
    expect_parts(&p, s4d, 4, 4, false, 1, 1, 1, 32);
    rf_variable_axis_size_partitioner(1024, 3, 16, 0, &p);
    expect_parts(&p, s4d, 4, 4, false, 1, 1, 1, 32);
    rf_variable_axis_size_partitioner(1024, 3, 16, 33, &p);
    expect_parts(&p, s4d, 4, 4, false, 1, 1, 1, 32);
    rf_variable_axis_size_partitioner(1024, 3, 16, 2, &p);
    expect_parts(&p, s4d, 4, 4, false, 1, 1, 1, 2);
    /* strings with bytes_per_string_element 8. */
    rf_variable_axis_size_partitioner(32768, 3, 8, 0, &p);
    expect_parts(&p, s4d, 4, 0, true, 1, 1, 1, 4);
    /* testControlDepsNone: variable_axis_size_partitioner(4), shape [2]. */
    rf_variable_axis_size_partitioner(4, 0, 16, 0, &p);
    int64_t s2[] = {2};
    expect_parts(&p, s2, 1, 4, false, 2);
    /* Creation errors. */
    CHECK(rf_variable_axis_size_partitioner(0, 0, 16, 0, &p) ==
              RF_ERR_INVALID_ARG,
          "max_shard_bytes 0");
    CHECK(rf_variable_axis_size_partitioner(10, 0, 0, 0, &p) ==
              RF_ERR_INVALID_ARG,
          "bytes_per_string_element 0");
    CHECK(rf_variable_axis_size_partitioner(10, 0, 16, -1, &p) ==
              RF_ERR_INVALID_ARG,
          "max_shards -1");

    /* testMinMaxVariablePartitioner. */
    int64_t s2048[] = {2048};
    int64_t s2048x1024[] = {2048, 1024};
    rf_min_max_variable_partitioner(100, 0, 2 << 10, 16, &p);
    expect_parts(&p, s2048, 1, 4, false, 4);
    rf_min_max_variable_partitioner(100, 0, 256 << 10, 16, &p);
    expect_parts(&p, s2048x1024, 2, 4, false, 32, 1);
    rf_min_max_variable_partitioner(16, 0, 256 << 10, 16, &p);
    expect_parts(&p, s2048x1024, 2, 4, false, 16, 1);
    rf_min_max_variable_partitioner(1, 0, 256 << 10, 16, &p);
    expect_parts(&p, s2048x1024, 2, 4, false, 1, 1);
    rf_min_max_variable_partitioner(100, 0, 128 << 10, 16, &p);
    expect_parts(&p, s2048x1024, 2, 4, false, 64, 1);
    rf_min_max_variable_partitioner(100, 0, 512 << 10, 16, &p);
    expect_parts(&p, s2048x1024, 2, 4, false, 16, 1);
    int64_t s64x1024x1x3[] = {64, 1024, 1, 3};
    rf_min_max_variable_partitioner(100, 1, 256 << 10, 16, &p);
    expect_parts(&p, s64x1024x1x3, 4, 4, false, 1, 3, 1, 1);
    rf_min_max_variable_partitioner(100, 3, 256 << 10, 16, &p);
    expect_parts(&p, s64x1024x1x3, 4, 4, false, 1, 1, 1, 3);
    int64_t s16x128x1024[] = {16, 128, 1024};
    rf_min_max_variable_partitioner(100, 0, 256 << 10, 16, &p);
    expect_parts(&p, s16x128x1024, 3, 4, false, 16, 1, 1);
    int64_t s4x512x1024[] = {4, 512, 1024};
    expect_parts(&p, s4x512x1024, 3, 4, false, 4, 1, 1);
    /* Docstring: [1024, 1024] float32 gives 16 if max_partitions >= 16. */
    int64_t s1024x1024[] = {1024, 1024};
    rf_min_max_variable_partitioner(1000, 0, RF_MIN_SLICE_SIZE_DEFAULT,
                                    RF_BYTES_PER_STRING_ELEMENT_DEFAULT, &p);
    expect_parts(&p, s1024x1024, 2, 4, false, 16, 1);
    rf_min_max_variable_partitioner(7, 0, RF_MIN_SLICE_SIZE_DEFAULT,
                                    RF_BYTES_PER_STRING_ELEMENT_DEFAULT, &p);
    expect_parts(&p, s1024x1024, 2, 4, false, 7, 1);
    /* A small variable is never split (max(1, ...)). */
    int64_t s10[] = {10};
    expect_parts(&p, s10, 1, 4, false, 1);
    rf_min_max_variable_partitioner(7, 1, RF_MIN_SLICE_SIZE_DEFAULT,
                                    RF_BYTES_PER_STRING_ELEMENT_DEFAULT, &p);
    CHECK(rf_partitioner_partitions(&p, s10, 1, 4, false, got) ==
              RF_ERR_INVALID_ARG,
          "axis >= rank");
    /* Rank 0 and unknown dimensions are rejected by _call_partitioner. */
    CHECK(rf_partitioner_partitions(&p, s10, 0, 4, false, got) ==
              RF_ERR_INVALID_ARG,
          "rank 0");
    int64_t unknown[] = {-1, 4};
    rf_fixed_size_partitioner(2, 0, &p);
    CHECK(rf_partitioner_partitions(&p, unknown, 2, 4, false, got) ==
              RF_ERR_INVALID_ARG,
          "unknown dim");
}

typedef struct slicing {
    int parts[RF_PARTITION_MAX_RANK];
} slicing;

/* create_partitioned_variables(shape, slicing, ...): the partitioner returns
 * the slicing as given. */
static rf_status fixed_slicing(void *ctx, const int64_t *shape, int rank,
                               size_t elem, bool is_string, int *parts)
{
    (void)shape;
    (void)elem;
    (void)is_string;
    const slicing *s = ctx;
    for (int i = 0; i < rank; i++)
        parts[i] = s->parts[i];
    return RF_OK;
}

static rf_partitioner slicing_partitioner(slicing *s)
{
    rf_partitioner p;
    memset(&p, 0, sizeof p);
    p.kind = RF_PARTITIONER_CUSTOM;
    p.fn = fixed_slicing;
    p.ctx = s;
    return p;
}

/* partitioned_variables_test.py PartitionedVariablesTestCase: the save-slice
 * specs ("full_shape offset,len:offset,len") give each part's offset and
 * shape. */
static void test_partition_slices(void)
{
    rf_partitioned_var v;
    /* testRandomInitUnevenPartitions: [20, 43] sliced [1, i]. */
    int64_t s20x43[] = {20, 43};
    static const int64_t want_len[5][5] = {
        {43}, {22, 21}, {15, 14, 14}, {11, 11, 11, 10}, {9, 9, 9, 8, 8}};
    for (int n = 1; n <= 5; n++) {
        slicing sl = {{1, n}};
        rf_partitioner p = slicing_partitioner(&sl);
        rf_status st = rf_partition_variable(&p, "rnd", NULL, s20x43, 2, 8,
                                             false, NULL, &v);
        CHECK(st == RF_OK && v.num_parts == n && v.slice_dim == (n > 1),
              "%d slices: %s parts %d", n, rf_status_string(st), v.num_parts);
        int64_t off = 0;
        for (int i = 0; st == RF_OK && i < n; i++) {
            const rf_var_part *part = &v.parts[i];
            CHECK(part->shape[0] == 20 && part->offset[0] == 0 &&
                      part->shape[1] == want_len[n - 1][i] &&
                      part->offset[1] == off,
                  "slice %d/%d: offset %lld len %lld", i, n,
                  (long long)part->offset[1], (long long)part->shape[1]);
            CHECK(part->bytes == (size_t)(20 * want_len[n - 1][i] * 8),
                  "bytes %zu", part->bytes);
            off += want_len[n - 1][i];
        }
        rf_partitioned_var_free(&v);
    }

    /* testIotaInitializer: [13, 5] sliced [3, 1] -> 5, 4, 4 rows. */
    int64_t s13x5[] = {13, 5};
    slicing sl3 = {{3, 1}};
    rf_partitioner p = slicing_partitioner(&sl3);
    CHECK(rf_partition_variable(&p, "iota", NULL, s13x5, 2, 4, false, NULL,
                                &v) == RF_OK,
          "iota");
    CHECK(v.num_parts == 3 && v.parts[0].shape[0] == 5 &&
              v.parts[1].shape[0] == 4 && v.parts[2].shape[0] == 4 &&
              v.parts[1].offset[0] == 5 && v.parts[2].offset[0] == 9 &&
              v.parts[2].shape[1] == 5,
          "13 5 0,5 / 5,4 / 9,4");
    rf_partitioned_var_free(&v);

    /* testSliceSizeOne: [10, 43] sliced [10, 1]. */
    int64_t s10x43[] = {10, 43};
    slicing sl10 = {{10, 1}};
    p = slicing_partitioner(&sl10);
    CHECK(rf_partition_variable(&p, "one", NULL, s10x43, 2, 4, false, NULL,
                                &v) == RF_OK &&
              v.num_parts == 10,
          "slice size one");
    for (int i = 0; i < v.num_parts; i++)
        CHECK(v.parts[i].offset[0] == i && v.parts[i].shape[0] == 1, "%d", i);
    rf_partitioned_var_free(&v);

    /* testDegenerate: [1, 1] slicing is still a partitioned variable with
     * one part "<name>/part_0". testVecConstantInit: [4] sliced [4]. */
    slicing sl11 = {{1, 1}};
    p = slicing_partitioner(&sl11);
    CHECK(rf_partition_variable(&p, "deg", NULL, s10x43, 2, 4, false, NULL,
                                &v) == RF_OK &&
              v.partitioned && v.num_parts == 1 && v.slice_dim == 0 &&
              strcmp(v.parts[0].name, "deg/part_0") == 0 &&
              v.parts[0].shape[0] == 10 && v.parts[0].shape[1] == 43,
          "degenerate");
    rf_partitioned_var_free(&v);
    int64_t s4[] = {4};
    slicing sl4 = {{4}};
    p = slicing_partitioner(&sl4);
    CHECK(rf_partition_variable(&p, "vec", NULL, s4, 1, 4, false, NULL, &v) ==
                  RF_OK &&
              v.num_parts == 4 && v.parts[3].offset[0] == 3 &&
              v.parts[3].shape[0] == 1,
          "vec");
    rf_partitioned_var_free(&v);

    /* testName: "<name>/part_<i>". */
    int64_t s2x4[] = {2, 4};
    slicing sl12 = {{1, 2}};
    p = slicing_partitioner(&sl12);
    CHECK(rf_partition_variable(&p, "hi/PartitionedVariable", NULL, s2x4, 2, 4,
                                false, NULL, &v) == RF_OK &&
              v.num_parts == 2 &&
              strcmp(v.parts[0].name, "hi/PartitionedVariable/part_0") == 0 &&
              strcmp(v.parts[1].name, "hi/PartitionedVariable/part_1") == 0,
          "names");
    /* testConstantInit save specs: "2 4 0,2:0,2" and "2 4 0,2:2,2". */
    CHECK(v.parts[1].offset[1] == 2 && v.parts[1].shape[1] == 2 &&
              v.parts[1].shape[0] == 2,
          "constant init spec");
    rf_partitioned_var_free(&v);

    /* testSomeErrors. */
    static const slicing bad[] = {
        {{11, 1}}, {{20, 1}}, {{1, 50}}, {{2, 2}}, {{0, 1}}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        slicing b = bad[i];
        p = slicing_partitioner(&b);
        CHECK(rf_partition_variable(&p, "err", NULL, s10x43, 2, 4, false, NULL,
                                    &v) == RF_ERR_INVALID_ARG &&
                  v.parts == NULL,
              "bad slicing %zu", i);
    }
    CHECK(strstr(rf_error_message(), "zero partitions"), "%s",
          rf_error_message());
    slicing b22 = {{2, 2}};
    p = slicing_partitioner(&b22);
    rf_partition_variable(&p, "err", NULL, s10x43, 2, 4, false, NULL, &v);
    CHECK(strstr(rf_error_message(), "only slice a variable along one"), "%s",
          rf_error_message());

    /* No partitioner, and a scalar with a partitioner: one variable under
     * its own name. */
    CHECK(rf_partition_variable(NULL, "w", NULL, s10x43, 2, 4, false, NULL,
                                &v) == RF_OK &&
              !v.partitioned && v.num_parts == 1 &&
              strcmp(v.parts[0].name, "w") == 0 &&
              v.parts[0].bytes == 10 * 43 * 4,
          "no partitioner");
    rf_partitioned_var_free(&v);
    rf_fixed_size_partitioner(3, 0, &p);
    CHECK(rf_partition_variable(&p, "global_step", NULL, NULL, 0, 8, false,
                                NULL, &v) == RF_OK &&
              !v.partitioned && v.num_parts == 1 &&
              strcmp(v.parts[0].name, "global_step") == 0 &&
              v.parts[0].bytes == 8,
          "scalar");
    rf_partitioned_var_free(&v);
    /* fixed_size_partitioner on [5, 2] with 3 shards: 2, 2, 1 rows. */
    int64_t s5x2[] = {5, 2};
    CHECK(rf_partition_variable(&p, "e", NULL, s5x2, 2, 4, false, NULL, &v) ==
                  RF_OK &&
              v.num_parts == 3 && v.parts[0].shape[0] == 2 &&
              v.parts[1].shape[0] == 2 && v.parts[2].shape[0] == 1 &&
              v.parts[2].offset[0] == 4 && v.partitions[0] == 3 &&
              v.partitions[1] == 1,
          "fixed 3 on [5, 2]");
    rf_partitioned_var_free(&v);
}

/* Each part goes through the device scopes: a round-robin setter advances
 * once per part, in part order. */
static void test_partition_placement(void)
{
    rf_device_stack *st;
    rf_device_stack_create(&st);
    rf_replica_device_setter_options o;
    rf_replica_device_setter_options_init(&o);
    o.cluster = &ps_worker;
    rf_replica_device_setter *s = make_setter(&o);
    rf_device_stack_push_setter(st, s);

    rf_partitioner p;
    rf_fixed_size_partitioner(3, 0, &p);
    rf_partitioned_var v;
    int64_t emb[] = {10, 4};
    CHECK(rf_partition_variable(&p, "emb", NULL, emb, 2, 4, false, st, &v) ==
              RF_OK,
          "emb");
    EXPECT_DEV(v.parts[0].device, "/job:ps/task:0");
    EXPECT_DEV(v.parts[1].device, "/job:ps/task:1");
    EXPECT_DEV(v.parts[2].device, "/job:ps/task:0");
    CHECK(v.parts[0].shape[0] == 4 && v.parts[1].shape[0] == 3 &&
              v.parts[2].shape[0] == 3,
          "4, 3, 3 rows");
    rf_partitioned_var_free(&v);
    /* The next variable continues the cycle. */
    int64_t bias[] = {4};
    CHECK(rf_partition_variable(NULL, "bias", NULL, bias, 1, 4, false, st,
                                &v) == RF_OK,
          "bias");
    EXPECT_DEV(v.parts[0].device, "/job:ps/task:1");
    rf_partitioned_var_free(&v);
    /* A non-ps op type goes to the worker. */
    CHECK(rf_partition_variable(&p, "local", "LocalThing", emb, 2, 4, false, st,
                                &v) == RF_OK,
          "local");
    EXPECT_DEV(v.parts[2].device, "/job:worker");
    rf_partitioned_var_free(&v);
    rf_device_stack_pop(st);
    rf_replica_device_setter_destroy(s);

    /* Greedy by bytes over the parts of [10, 4] float32 in 3 parts
     * (64, 48, 48 bytes) then a 100-byte variable. */
    o.strategy = RF_PS_GREEDY;
    s = make_setter(&o);
    rf_device_stack_push_setter(st, s);
    rf_partition_variable(&p, "emb", NULL, emb, 2, 4, false, st, &v);
    EXPECT_DEV(v.parts[0].device, "/job:ps/task:0");
    EXPECT_DEV(v.parts[1].device, "/job:ps/task:1");
    EXPECT_DEV(v.parts[2].device, "/job:ps/task:1");
    rf_partitioned_var_free(&v);
    int64_t w[] = {25};
    rf_partition_variable(NULL, "w", NULL, w, 1, 4, false, st, &v);
    EXPECT_DEV(v.parts[0].device, "/job:ps/task:0");
    rf_partitioned_var_free(&v);
    rf_device_stack_pop(st);
    rf_replica_device_setter_destroy(s);
    rf_device_stack_destroy(st);
}

/* ---- main ------------------------------------------------------------- */

int main(int argc, char **argv)
{
    const char *group = argc > 1 ? argv[1] : "all";
    bool all = strcmp(group, "all") == 0;
    bool known = all;
    if (all || strcmp(group, "name") == 0) {
        known = true;
        test_name_basic();
        test_name_round_trip();
        test_name_is_specification();
        test_name_merge_dev_names();
        test_name_device_spec();
        test_name_legacy();
        test_name_errors();
    }
    if (all || strcmp(group, "stack") == 0) {
        known = true;
        test_stack_merge_device();
        test_stack_functions();
    }
    if (all || strcmp(group, "setter") == 0) {
        known = true;
        test_setter_tf_tests();
        test_setter_round_robin();
        test_setter_greedy();
    }
    if (all || strcmp(group, "partition") == 0) {
        known = true;
        test_partitioners();
        test_partition_slices();
        test_partition_placement();
    }
    if (!known) {
        fprintf(stderr, "unknown group %s\n", group);
        return 2;
    }
    printf("device tests (%s): all checks passed\n", group);
    return 0;
}
