/* graph/shape_fns.c: the shape functions of every op. They run at build time
 * on static shapes (where -1 means unknown: checks apply to known dims only)
 * and at plan time on concrete shapes; errors name the op and the shapes. */
#include <string.h>

#include "graph/graph_internal.h"

#define SHAPE_FN(fn)                                                           \
    rf_status fn(const rf_node *n, const rf_shape *in, const rf_dtype *dt,     \
                 rf_shape *out, rf_dtype *odt)

static bool dim_ok(int64_t a, int64_t b)
{
    return a < 0 || b < 0 || a == b;
}

static bool shapes_compatible(const rf_shape *a, const rf_shape *b)
{
    if (a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (!dim_ok(a->dims[i], b->dims[i]))
            return false;
    return true;
}

/* The more specific of two compatible shapes. */
static rf_shape merge(const rf_shape *a, const rf_shape *b)
{
    rf_shape m = *a;
    for (int i = 0; i < m.rank; i++)
        if (m.dims[i] < 0)
            m.dims[i] = b->dims[i];
    return m;
}

static rf_status need_float(const rf_node *n, rf_dtype dt, const char *what)
{
    if (dt != RF_F32)
        return node_error(n, RF_ERR_INVALID_ARG, "%s must be float32, not %s",
                          what, rf_dtype_name(dt));
    return RF_OK;
}

static rf_status need_numeric(const rf_node *n, rf_dtype dt, const char *what)
{
    if (dt == RF_BOOL)
        return node_error(n, RF_ERR_INVALID_ARG, "%s must be numeric, not bool",
                          what);
    return RF_OK;
}

static rf_status need_same_dtype(const rf_node *n, rf_dtype a, rf_dtype b)
{
    if (a != b)
        return node_error(n, RF_ERR_INVALID_ARG,
                          "operands have different dtypes: %s vs %s",
                          rf_dtype_name(a), rf_dtype_name(b));
    return RF_OK;
}

static rf_status need_rank(const rf_node *n, const rf_shape *s, int lo, int hi,
                           const char *what)
{
    if (s->rank < lo || s->rank > hi) {
        if (lo == hi)
            return node_error(n, RF_ERR_INVALID_ARG,
                              "%s must be rank %d, got shape %s", what, lo,
                              SHAPE_STR(s));
        return node_error(n, RF_ERR_INVALID_ARG,
                          "%s must have rank %d..%d, got shape %s", what, lo,
                          hi, SHAPE_STR(s));
    }
    return RF_OK;
}

#define TRY(x)                                                                 \
    do {                                                                       \
        rf_status st_ = (x);                                                   \
        if (st_ != RF_OK)                                                      \
            return st_;                                                        \
    } while (0)

SHAPE_FN(shape_from_attr)
{
    (void)in;
    (void)dt;
    *out = n->attr.shape;
    *odt = n->attr.dtype;
    return RF_OK;
}

SHAPE_FN(shape_same)
{
    (void)n;
    *out = in[0];
    *odt = dt[0];
    return RF_OK;
}

SHAPE_FN(shape_noop)
{
    (void)n;
    (void)in;
    (void)dt;
    *out = RF_SHAPE(0);
    *odt = RF_F32;
    return RF_OK;
}

SHAPE_FN(shape_assign)
{
    TRY(need_same_dtype(n, dt[0], dt[1]));
    if (n->op == RF_OP_ASSIGN_ADD)
        TRY(need_numeric(n, dt[0], "value"));
    if (!shapes_compatible(&in[0], &in[1]))
        return node_error(n, RF_ERR_INVALID_ARG,
                          "value shape %s does not match variable shape %s",
                          SHAPE_STR(&in[1]), SHAPE_STR(&in[0]));
    *out = in[0];
    *odt = dt[0];
    return RF_OK;
}

SHAPE_FN(shape_matmul)
{
    TRY(need_float(n, dt[0], "a"));
    TRY(need_float(n, dt[1], "b"));
    TRY(need_rank(n, &in[0], 2, 2, "a"));
    TRY(need_rank(n, &in[1], 2, 2, "b"));
    bool ta = n->attr.transpose_a, tb = n->attr.transpose_b;
    int64_t m = in[0].dims[ta ? 1 : 0], ka = in[0].dims[ta ? 0 : 1];
    int64_t kb = in[1].dims[tb ? 1 : 0], nn = in[1].dims[tb ? 0 : 1];
    if (!dim_ok(ka, kb))
        return node_error(n, RF_ERR_INVALID_ARG,
                          "inner dimensions differ: a %s%s vs b %s%s "
                          "(%lld vs %lld)",
                          SHAPE_STR(&in[0]), ta ? " (transposed)" : "",
                          SHAPE_STR(&in[1]), tb ? " (transposed)" : "",
                          (long long)ka, (long long)kb);
    *out = RF_SHAPE(m, nn);
    *odt = RF_F32;
    return RF_OK;
}

SHAPE_FN(shape_binary)
{
    TRY(need_same_dtype(n, dt[0], dt[1]));
    TRY(need_numeric(n, dt[0], "operand"));
    TRY(broadcast_shape(n, &in[0], &in[1], out));
    *odt = dt[0];
    return RF_OK;
}

SHAPE_FN(shape_float_unary)
{
    TRY(need_float(n, dt[0], "input"));
    *out = in[0];
    *odt = dt[0];
    return RF_OK;
}

SHAPE_FN(shape_add_n)
{
    rf_shape s = in[0];
    TRY(need_numeric(n, dt[0], "input"));
    for (size_t i = 1; i < n->n_inputs; i++) {
        TRY(need_same_dtype(n, dt[0], dt[i]));
        if (!shapes_compatible(&s, &in[i]))
            return node_error(n, RF_ERR_INVALID_ARG,
                              "input %zu has shape %s, input 0 has %s", i,
                              SHAPE_STR(&in[i]), SHAPE_STR(&in[0]));
        s = merge(&s, &in[i]);
    }
    *out = s;
    *odt = dt[0];
    return RF_OK;
}

SHAPE_FN(shape_bias_add)
{
    TRY(need_float(n, dt[0], "value"));
    TRY(need_float(n, dt[1], "bias"));
    TRY(need_rank(n, &in[0], 2, RF_MAX_RANK, "value"));
    TRY(need_rank(n, &in[1], 1, 1, "bias"));
    if (!dim_ok(in[0].dims[in[0].rank - 1], in[1].dims[0]))
        return node_error(n, RF_ERR_INVALID_ARG,
                          "bias %s does not match the last dimension of "
                          "value %s",
                          SHAPE_STR(&in[1]), SHAPE_STR(&in[0]));
    *out = in[0];
    if (out->dims[out->rank - 1] < 0)
        out->dims[out->rank - 1] = in[1].dims[0];
    *odt = RF_F32;
    return RF_OK;
}

SHAPE_FN(shape_softmax)
{
    TRY(need_float(n, dt[0], "logits"));
    TRY(need_rank(n, &in[0], 1, RF_MAX_RANK, "logits"));
    *out = in[0];
    *odt = RF_F32;
    return RF_OK;
}

/* inputs: logits [batch, classes], labels [batch] */
SHAPE_FN(shape_xent)
{
    TRY(need_float(n, dt[0], "logits"));
    if (dt[1] != RF_I32 && dt[1] != RF_I64)
        return node_error(n, RF_ERR_INVALID_ARG,
                          "labels must be int32 or int64, not %s",
                          rf_dtype_name(dt[1]));
    TRY(need_rank(n, &in[0], 2, 2, "logits"));
    TRY(need_rank(n, &in[1], 1, 1, "labels"));
    if (!dim_ok(in[0].dims[0], in[1].dims[0]))
        return node_error(n, RF_ERR_INVALID_ARG,
                          "logits %s and labels %s have different batch "
                          "sizes",
                          SHAPE_STR(&in[0]), SHAPE_STR(&in[1]));
    int64_t b = in[0].dims[0] >= 0 ? in[0].dims[0] : in[1].dims[0];
    *out = RF_SHAPE(b);
    *odt = RF_F32;
    return RF_OK;
}

/* inputs: logits, labels (float, compatible shapes) */
SHAPE_FN(shape_sigmoid_xent)
{
    TRY(need_float(n, dt[0], "logits"));
    TRY(need_float(n, dt[1], "labels"));
    if (!shapes_compatible(&in[0], &in[1]))
        return node_error(n, RF_ERR_INVALID_ARG,
                          "logits %s and labels %s must have the same "
                          "shape",
                          SHAPE_STR(&in[0]), SHAPE_STR(&in[1]));
    *out = merge(&in[0], &in[1]);
    *odt = RF_F32;
    return RF_OK;
}

/* inputs: dloss [batch], logits [batch, classes], labels [batch] */
SHAPE_FN(shape_xent_grad)
{
    rf_shape loss;
    rf_dtype ldt;
    TRY(need_float(n, dt[0], "loss gradient"));
    TRY(shape_xent(n, in + 1, dt + 1, &loss, &ldt));
    if (!shapes_compatible(&in[0], &loss))
        return node_error(n, RF_ERR_INVALID_ARG,
                          "loss gradient %s does not match the loss %s",
                          SHAPE_STR(&in[0]), SHAPE_STR(&loss));
    *out = in[1];
    *odt = RF_F32;
    return RF_OK;
}

/* Output shape of reducing s over the attr axes. */
static rf_shape reduced(const rf_node *n, const rf_shape *s)
{
    rf_shape o;
    memset(&o, 0, sizeof o);
    bool red[RF_MAX_RANK] = {false};
    for (int i = 0; i < n->attr.naxes; i++)
        red[n->attr.axes[i]] = true;
    for (int i = 0; i < s->rank; i++) {
        if (!red[i])
            o.dims[o.rank++] = s->dims[i];
        else if (n->attr.keep_dims)
            o.dims[o.rank++] = 1;
    }
    return o;
}

static rf_status check_axes(const rf_node *n, const rf_shape *s)
{
    for (int i = 0; i < n->attr.naxes; i++)
        if (n->attr.axes[i] >= s->rank)
            return node_error(n, RF_ERR_INVALID_ARG,
                              "axis %d out of range for shape %s",
                              n->attr.axes[i], SHAPE_STR(s));
    return RF_OK;
}

SHAPE_FN(shape_reduce)
{
    TRY(need_numeric(n, dt[0], "input"));
    TRY(check_axes(n, &in[0]));
    *out = reduced(n, &in[0]);
    *odt = dt[0];
    return RF_OK;
}

SHAPE_FN(shape_reshape)
{
    const rf_shape *t = &n->attr.shape;
    int64_t known = 1;
    int unknown = -1;
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i] < 0) {
            if (unknown >= 0 || t->dims[i] != -1)
                return node_error(n, RF_ERR_INVALID_ARG,
                                  "target shape %s may have only one -1 "
                                  "and no other negative dimension",
                                  SHAPE_STR(t));
            unknown = i;
        } else {
            known *= t->dims[i];
        }
    }
    rf_shape o = *t;
    int64_t numel = rf_shape_numel(&in[0]);
    if (numel >= 0) {
        if (unknown >= 0) {
            if (known == 0 || numel % known != 0)
                return node_error(n, RF_ERR_INVALID_ARG,
                                  "cannot reshape %s (%lld elements) to %s",
                                  SHAPE_STR(&in[0]), (long long)numel,
                                  SHAPE_STR(t));
            o.dims[unknown] = numel / known;
        } else if (numel != known) {
            return node_error(n, RF_ERR_INVALID_ARG,
                              "cannot reshape %s (%lld elements) to %s "
                              "(%lld elements)",
                              SHAPE_STR(&in[0]), (long long)numel, SHAPE_STR(t),
                              (long long)known);
        }
    }
    *out = o;
    *odt = dt[0];
    return RF_OK;
}

/* The shape function shared by Concat (inputs xs) and ConcatGrad (dy, xs):
 * concat_of() computes the concatenation of m shapes. */
static rf_status concat_of(const rf_node *n, const rf_shape *in,
                           const rf_dtype *dt, size_t m, rf_shape *out)
{
    int axis = n->attr.axis;
    if (axis >= in[0].rank)
        return node_error(n, RF_ERR_INVALID_ARG,
                          "axis %d out of range for shape %s", axis,
                          SHAPE_STR(&in[0]));
    rf_shape o = in[0];
    for (size_t i = 1; i < m; i++) {
        TRY(need_same_dtype(n, dt[0], dt[i]));
        bool ok = in[i].rank == o.rank;
        for (int d = 0; ok && d < o.rank; d++)
            if (d != axis && !dim_ok(o.dims[d], in[i].dims[d]))
                ok = false;
        if (!ok)
            return node_error(n, RF_ERR_INVALID_ARG,
                              "input %zu has shape %s, incompatible with "
                              "%s outside axis %d",
                              i, SHAPE_STR(&in[i]), SHAPE_STR(&in[0]), axis);
        for (int d = 0; d < o.rank; d++) {
            if (d == axis)
                o.dims[d] = o.dims[d] < 0 || in[i].dims[d] < 0
                                ? -1
                                : o.dims[d] + in[i].dims[d];
            else if (o.dims[d] < 0)
                o.dims[d] = in[i].dims[d];
        }
    }
    *out = o;
    return RF_OK;
}

SHAPE_FN(shape_concat)
{
    TRY(concat_of(n, in, dt, n->n_inputs, out));
    *odt = dt[0];
    return RF_OK;
}

SHAPE_FN(shape_concat_grad)
{
    rf_shape whole;
    TRY(concat_of(n, in + 1, dt + 1, n->n_inputs - 1, &whole));
    if (!shapes_compatible(&in[0], &whole))
        return node_error(n, RF_ERR_INVALID_ARG,
                          "gradient %s does not match the concatenation %s",
                          SHAPE_STR(&in[0]), SHAPE_STR(&whole));
    *out = in[1 + n->attr.index];
    *odt = dt[0];
    return RF_OK;
}

rf_status window_out(const rf_node *n, int64_t in, int64_t k, int64_t stride,
                     rf_padding pad, int64_t *out, int64_t *pad_before)
{
    if (in < 0) {
        *out = -1;
        *pad_before = 0;
        return RF_OK;
    }
    if (pad == RF_PADDING_VALID) {
        if (in < k)
            return node_error(n, RF_ERR_INVALID_ARG,
                              "VALID window %lld larger than the input "
                              "dimension %lld",
                              (long long)k, (long long)in);
        *out = (in - k + stride) / stride;
        *pad_before = 0;
    } else {
        *out = (in + stride - 1) / stride;
        int64_t need = (*out - 1) * stride + k - in;
        *pad_before = need > 0 ? need / 2 : 0;
    }
    return RF_OK;
}

/* inputs: input NHWC, filter HWIO */
SHAPE_FN(shape_conv2d)
{
    TRY(need_float(n, dt[0], "input"));
    TRY(need_float(n, dt[1], "filter"));
    TRY(need_rank(n, &in[0], 4, 4, "input"));
    TRY(need_rank(n, &in[1], 4, 4, "filter"));
    if (!dim_ok(in[0].dims[3], in[1].dims[2]))
        return node_error(n, RF_ERR_INVALID_ARG,
                          "input %s has %lld channels but filter %s "
                          "expects %lld",
                          SHAPE_STR(&in[0]), (long long)in[0].dims[3],
                          SHAPE_STR(&in[1]), (long long)in[1].dims[2]);
    if (in[1].dims[0] < 0 || in[1].dims[1] < 0)
        return node_error(n, RF_ERR_INVALID_ARG,
                          "filter %s must have a known window size",
                          SHAPE_STR(&in[1]));
    int64_t oh = 0, ow = 0, p = 0;
    TRY(window_out(n, in[0].dims[1], in[1].dims[0], n->attr.strides[0],
                   n->attr.padding, &oh, &p));
    TRY(window_out(n, in[0].dims[2], in[1].dims[1], n->attr.strides[1],
                   n->attr.padding, &ow, &p));
    *out = RF_SHAPE(in[0].dims[0], oh, ow, in[1].dims[3]);
    *odt = RF_F32;
    return RF_OK;
}

SHAPE_FN(shape_max_pool)
{
    TRY(need_float(n, dt[0], "input"));
    TRY(need_rank(n, &in[0], 4, 4, "input"));
    int64_t oh = 0, ow = 0, p = 0;
    TRY(window_out(n, in[0].dims[1], n->attr.ksize[0], n->attr.strides[0],
                   n->attr.padding, &oh, &p));
    TRY(window_out(n, in[0].dims[2], n->attr.ksize[1], n->attr.strides[1],
                   n->attr.padding, &ow, &p));
    *out = RF_SHAPE(in[0].dims[0], oh, ow, in[0].dims[3]);
    *odt = RF_F32;
    return RF_OK;
}

SHAPE_FN(shape_argmax)
{
    TRY(need_numeric(n, dt[0], "input"));
    int axis = n->attr.axis;
    if (axis >= in[0].rank)
        return node_error(n, RF_ERR_INVALID_ARG,
                          "axis %d out of range for shape %s", axis,
                          SHAPE_STR(&in[0]));
    if (in[0].dims[axis] == 0)
        return node_error(n, RF_ERR_INVALID_ARG,
                          "reduction axis %d is empty in shape %s", axis,
                          SHAPE_STR(&in[0]));
    rf_shape o;
    memset(&o, 0, sizeof o);
    for (int i = 0; i < in[0].rank; i++)
        if (i != axis)
            o.dims[o.rank++] = in[0].dims[i];
    *out = o;
    *odt = n->attr.dtype;
    return RF_OK;
}

SHAPE_FN(shape_equal_op)
{
    TRY(need_same_dtype(n, dt[0], dt[1]));
    TRY(broadcast_shape(n, &in[0], &in[1], out));
    *odt = RF_BOOL;
    return RF_OK;
}

SHAPE_FN(shape_cast)
{
    *out = in[0];
    *odt = n->attr.dtype;
    (void)dt;
    return RF_OK;
}

/* (x, like): like's shape, x's dtype, element counts must agree */
SHAPE_FN(shape_like1)
{
    int64_t a = rf_shape_numel(&in[0]), b = rf_shape_numel(&in[1]);
    if (a >= 0 && b >= 0 && a != b)
        return node_error(n, RF_ERR_INVALID_ARG, "cannot reshape %s to %s",
                          SHAPE_STR(&in[0]), SHAPE_STR(&in[1]));
    *out = in[1];
    *odt = dt[0];
    return RF_OK;
}

/* (dy, like): like's shape; like must broadcast to dy */
SHAPE_FN(shape_reduce_like)
{
    rf_shape b;
    TRY(need_numeric(n, dt[0], "gradient"));
    TRY(broadcast_shape(n, &in[0], &in[1], &b));
    if (rf_shape_is_known(&b) && rf_shape_is_known(&in[0]) &&
        !rf_shape_equal(&b, &in[0]))
        return node_error(n, RF_ERR_INVALID_ARG,
                          "%s does not broadcast to the gradient %s",
                          SHAPE_STR(&in[1]), SHAPE_STR(&in[0]));
    *out = in[1];
    *odt = dt[0];
    return RF_OK;
}

/* (dy, x): x's shape; dy must be x reduced over the axes */
SHAPE_FN(shape_reduction_grad)
{
    TRY(check_axes(n, &in[1]));
    rf_shape r = reduced(n, &in[1]);
    if (!shapes_compatible(&r, &in[0]))
        return node_error(n, RF_ERR_INVALID_ARG,
                          "gradient %s does not match the reduction %s of "
                          "%s",
                          SHAPE_STR(&in[0]), SHAPE_STR(&r), SHAPE_STR(&in[1]));
    *out = in[1];
    *odt = dt[0];
    return RF_OK;
}

SHAPE_FN(shape_bias_add_grad)
{
    TRY(need_float(n, dt[0], "gradient"));
    TRY(need_rank(n, &in[0], 2, RF_MAX_RANK, "gradient"));
    *out = RF_SHAPE(in[0].dims[in[0].rank - 1]);
    *odt = RF_F32;
    return RF_OK;
}

/* (dy, y) of the same shape */
SHAPE_FN(shape_unary_grad)
{
    TRY(need_float(n, dt[0], "gradient"));
    TRY(need_float(n, dt[1], "input"));
    if (!shapes_compatible(&in[0], &in[1]))
        return node_error(n, RF_ERR_INVALID_ARG,
                          "gradient %s and input %s differ", SHAPE_STR(&in[0]),
                          SHAPE_STR(&in[1]));
    *out = merge(&in[0], &in[1]);
    *odt = RF_F32;
    return RF_OK;
}

static rf_status check_dy(const rf_node *n, const rf_shape *dy,
                          const rf_shape *expect)
{
    if (!shapes_compatible(dy, expect))
        return node_error(n, RF_ERR_INVALID_ARG,
                          "gradient %s does not match the forward output "
                          "%s",
                          SHAPE_STR(dy), SHAPE_STR(expect));
    return RF_OK;
}

/* (dy, filter, input_like) */
SHAPE_FN(shape_conv2d_backprop_input)
{
    rf_shape fwd;
    rf_dtype fdt;
    rf_shape fin[2] = {in[2], in[1]};
    rf_dtype fdts[2] = {dt[2], dt[1]};
    TRY(need_float(n, dt[0], "gradient"));
    TRY(shape_conv2d(n, fin, fdts, &fwd, &fdt));
    TRY(check_dy(n, &in[0], &fwd));
    *out = in[2];
    *odt = RF_F32;
    return RF_OK;
}

/* (input, dy, filter_like) */
SHAPE_FN(shape_conv2d_backprop_filter)
{
    rf_shape fwd;
    rf_dtype fdt;
    rf_shape fin[2] = {in[0], in[2]};
    rf_dtype fdts[2] = {dt[0], dt[2]};
    TRY(need_float(n, dt[1], "gradient"));
    TRY(shape_conv2d(n, fin, fdts, &fwd, &fdt));
    TRY(check_dy(n, &in[1], &fwd));
    *out = in[2];
    *odt = RF_F32;
    return RF_OK;
}

/* (x, dy) */
SHAPE_FN(shape_max_pool_grad)
{
    rf_shape fwd;
    rf_dtype fdt;
    TRY(need_float(n, dt[1], "gradient"));
    TRY(shape_max_pool(n, in, dt, &fwd, &fdt));
    TRY(check_dy(n, &in[1], &fwd));
    *out = in[0];
    *odt = RF_F32;
    return RF_OK;
}

/* (var, grad, slots..., [beta1_power, beta2_power]) */
SHAPE_FN(shape_apply)
{
    unsigned ns = n->attr.num_slots;
    if (!n->optim)
        return node_error(n, RF_ERR_INVALID_ARG, "no optimizer config");
    size_t expect = 2 + ns + (n->optim->kind == RF_OPTIM_ADAM ? 2 : 0);
    if (n->n_inputs != expect)
        return node_error(n, RF_ERR_INVALID_ARG, "%zu inputs, expected %zu",
                          n->n_inputs, expect);
    for (size_t i = 0; i < n->n_inputs; i++) {
        TRY(need_float(n, dt[i], "every input"));
        bool is_var = i != 1;
        if (is_var && n->inputs[i]->op != RF_OP_VARIABLE)
            return node_error(n, RF_ERR_INVALID_ARG,
                              "input %zu ('%s') must be a variable", i,
                              n->inputs[i]->name);
        if (i < 2 + ns && !shapes_compatible(&in[i], &in[0]))
            return node_error(n, RF_ERR_INVALID_ARG,
                              "input %zu has shape %s, the variable %s", i,
                              SHAPE_STR(&in[i]), SHAPE_STR(&in[0]));
        if (i >= 2 + ns && in[i].rank != 0)
            return node_error(n, RF_ERR_INVALID_ARG,
                              "beta power %s must be a scalar",
                              SHAPE_STR(&in[i]));
    }
    *out = in[0];
    *odt = RF_F32;
    return RF_OK;
}

/* (beta1_power, beta2_power) */
SHAPE_FN(shape_finish)
{
    for (size_t i = 0; i < 2; i++) {
        TRY(need_float(n, dt[i], "beta power"));
        if (n->inputs[i]->op != RF_OP_VARIABLE || in[i].rank != 0)
            return node_error(n, RF_ERR_INVALID_ARG,
                              "input %zu must be a scalar variable", i);
    }
    *out = RF_SHAPE(0);
    *odt = RF_F32;
    return RF_OK;
}
