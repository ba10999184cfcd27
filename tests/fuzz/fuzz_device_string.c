/* tests/fuzz/fuzz_device_string.c: libFuzzer target for TensorFlow device
 * strings (graph/device_name.c). The input is split at its first '\n' into
 * two strings, each parsed; a refusal must say why and leave the spec
 * cleared. A parsed spec must print canonically and reparse to an equal
 * spec (canonicalize gives the same text); the two are then merged
 * (DeviceSpec.merge_from and MergeDevNames, soft placement on and off),
 * compared, checking the relations those promise, and pushed as two nested
 * tf.device scopes (graph/device_stack.c) whose result for a new op must be
 * the merge. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "rdmaflow/device.h"
#include "rdmaflow/status.h"

static bool parse(const char *s, rf_device_spec *d)
{
    if (rf_device_spec_parse(s, d) != RF_OK) {
        rf_device_spec empty;
        rf_device_spec_clear(&empty);
        REQUIRE(rf_error_message()[0] && rf_device_spec_equal(d, &empty));
        return false;
    }
    char buf[RF_DEVICE_STRING_MAX], canon[RF_DEVICE_STRING_MAX];
    REQUIRE(rf_device_spec_to_string(d, buf, sizeof buf) == RF_OK);
    rf_device_spec again;
    REQUIRE(rf_device_spec_parse(buf, &again) == RF_OK);
    /* An id without a type is not printed. */
    if (d->type[0])
        REQUIRE(rf_device_spec_equal(d, &again));
    REQUIRE(rf_device_canonicalize(s, canon, sizeof canon) == RF_OK);
    REQUIRE(strcmp(buf, canon) == 0);
    REQUIRE(rf_device_spec_is_specification(&again, d) || !d->type[0]);
    return true;
}

/* with tf.device(outer): with tf.device(inner): a new op gets inner's
 * fields over outer's, the same as merged (graph/device_stack.c). */
static void stack_apply(const char *outer, const char *inner,
                        const rf_device_spec *merged)
{
    rf_device_stack *st = NULL;
    REQUIRE(rf_device_stack_create(&st) == RF_OK);
    REQUIRE(rf_device_stack_push(st, outer) == RF_OK);
    REQUIRE(rf_device_stack_push(st, inner) == RF_OK);
    const rf_op_desc op = {.type = "VariableV2", .name = "v", .device = ""};
    char got[RF_DEVICE_STRING_MAX], want[RF_DEVICE_STRING_MAX];
    REQUIRE(rf_device_stack_apply(st, &op, got, sizeof got) == RF_OK);
    REQUIRE(rf_device_spec_to_string(merged, want, sizeof want) == RF_OK);
    REQUIRE(strcmp(got, want) == 0);
    REQUIRE(rf_device_stack_pop(st) == RF_OK &&
            rf_device_stack_pop(st) == RF_OK &&
            rf_device_stack_pop(st) != RF_OK);
    rf_device_stack_destroy(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    if (!text)
        return 0;
    char *second = strchr(text, '\n');
    if (second)
        *second++ = '\0';
    rf_device_spec a, b;
    bool ok_a = parse(text, &a);
    bool ok_b = parse(second ? second : "", &b);
    if (ok_a && ok_b) {
        rf_device_spec m = a;
        rf_device_spec_merge(&m, &b);
        REQUIRE(rf_device_spec_is_specification(&b, &m));
        for (int soft = 0; soft < 2; soft++) {
            rf_device_spec t = a;
            if (rf_device_spec_merge_strict(&t, &b, soft) == RF_OK) {
                if (!soft)
                    REQUIRE(rf_device_spec_is_specification(&a, &t) &&
                            rf_device_spec_is_specification(&b, &t));
            } else {
                REQUIRE(rf_error_message()[0]);
            }
        }
        REQUIRE(rf_device_spec_equal(&a, &b) ==
                (rf_device_spec_is_specification(&a, &b) &&
                 rf_device_spec_is_specification(&b, &a)));
        if (rf_device_spec_same_address_space(&a, &b))
            REQUIRE(rf_device_spec_same_address_space(&b, &a));
        stack_apply(text, second ? second : "", &m);
    }
    free(text);
    return 0;
}
