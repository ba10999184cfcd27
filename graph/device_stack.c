/* graph/device_stack.c: the stack of `with tf.device(...)` scopes and the
 * computation of a new op's device, following TF1's
 * Graph._apply_device_functions: innermost scope first, each string scope
 * merged under what the inner scopes chose (device.merge_device), each
 * function scope given the op as the inner scopes left it, tf.device(None)
 * stopping the walk. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "rdmaflow/device.h"
#include "rdmaflow/status.h"

/* A device function may write a non-canonical string longer than any
 * canonical one; give it room. */
#define FN_OUT_MAX 512

typedef enum entry_kind {
    ENTRY_SPEC, /* tf.device("...") */
    ENTRY_FN,   /* tf.device(fn) */
    ENTRY_NONE, /* tf.device(None) */
} entry_kind;

typedef struct stack_entry {
    entry_kind kind;
    rf_device_spec spec;
    rf_op_device_fn fn;
    void *ctx;
} stack_entry;

struct rf_device_stack {
    stack_entry *entries;
    size_t depth;
    size_t cap;
};

rf_status rf_device_stack_create(rf_device_stack **out)
{
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_device_stack_create: out is NULL");
    *out = calloc(1, sizeof **out);
    if (!*out)
        return rf_error_set(RF_ERR_NO_MEMORY, "rf_device_stack_create");
    return RF_OK;
}

void rf_device_stack_destroy(rf_device_stack *stack)
{
    if (!stack)
        return;
    free(stack->entries);
    free(stack);
}

static rf_status push_entry(rf_device_stack *stack, const stack_entry *e)
{
    if (stack->depth == stack->cap) {
        size_t cap = stack->cap ? 2 * stack->cap : 8;
        stack_entry *v = realloc(stack->entries, cap * sizeof *v);
        if (!v)
            return rf_error_set(RF_ERR_NO_MEMORY, "rf_device_stack_push");
        stack->entries = v;
        stack->cap = cap;
    }
    stack->entries[stack->depth++] = *e;
    return RF_OK;
}

rf_status rf_device_stack_push(rf_device_stack *stack, const char *device)
{
    if (!stack)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_device_stack_push: stack is NULL");
    stack_entry e = {.kind = device ? ENTRY_SPEC : ENTRY_NONE};
    if (device) {
        rf_status st = rf_device_spec_parse(device, &e.spec);
        if (st != RF_OK)
            return st;
    }
    return push_entry(stack, &e);
}

rf_status rf_device_stack_push_fn(rf_device_stack *stack, rf_op_device_fn fn,
                                  void *ctx)
{
    if (!stack)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_device_stack_push_fn: stack is NULL");
    stack_entry e = {.kind = fn ? ENTRY_FN : ENTRY_NONE, .fn = fn, .ctx = ctx};
    return push_entry(stack, &e);
}

rf_status rf_device_stack_pop(rf_device_stack *stack)
{
    if (!stack || stack->depth == 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_device_stack_pop: no device scope to leave");
    stack->depth--;
    return RF_OK;
}

size_t rf_device_stack_depth(const rf_device_stack *stack)
{
    return stack ? stack->depth : 0;
}

static const char *op_label(const rf_op_desc *op)
{
    return op->name && op->name[0] ? op->name : "<unnamed>";
}

rf_status device_fn_run(rf_op_device_fn fn, void *ctx, const rf_op_desc *op,
                        const char *current, rf_device_spec *spec)
{
    rf_op_desc desc = *op;
    desc.device = current;
    char out[FN_OUT_MAX];
    memset(out, 0, sizeof out);
    rf_status st = fn(ctx, &desc, out, sizeof out);
    if (st != RF_OK)
        return st;
    if (!memchr(out, '\0', sizeof out))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "device function for op \"%s\" wrote an "
                            "unterminated string",
                            op_label(op));
    st = rf_device_spec_parse(out, spec);
    if (st != RF_OK)
        return rf_error_prefix(st, "device function for op \"%s\"",
                               op_label(op));
    return RF_OK;
}

rf_status rf_device_stack_apply(rf_device_stack *stack, const rf_op_desc *op,
                                char *out, size_t out_len)
{
    if (!stack || !op || !out || out_len == 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_device_stack_apply: bad arguments");
    out[0] = '\0';
    rf_device_spec cur;
    rf_status st = rf_device_spec_parse(op->device, &cur);
    if (st != RF_OK) {
        char why[256];
        strncpy(why, rf_error_message(), sizeof why - 1);
        why[sizeof why - 1] = '\0';
        return rf_error_set(st, "op \"%s\": requested device: %s", op_label(op),
                            why);
    }
    char cur_str[RF_DEVICE_STRING_MAX];
    st = rf_device_spec_to_string(&cur, cur_str, sizeof cur_str);
    if (st != RF_OK)
        return st;

    for (size_t i = stack->depth; i-- > 0;) {
        const stack_entry *e = &stack->entries[i];
        if (e->kind == ENTRY_NONE)
            break;
        if (e->kind == ENTRY_SPEC) {
            if (rf_device_spec_is_empty(&e->spec))
                continue; /* MergeDevice.is_null_merge */
            rf_device_spec merged = e->spec;
            rf_device_spec_merge(&merged, &cur); /* current device wins */
            cur = merged;
        } else {
            st = device_fn_run(e->fn, e->ctx, op, cur_str, &cur);
            if (st != RF_OK)
                return st;
        }
        st = rf_device_spec_to_string(&cur, cur_str, sizeof cur_str);
        if (st != RF_OK)
            return st;
    }
    size_t n = strlen(cur_str);
    if (n >= out_len)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_device_stack_apply: device \"%s\" does not "
                            "fit in %zu bytes",
                            cur_str, out_len);
    memcpy(out, cur_str, n + 1);
    return RF_OK;
}
