/* tests/unit/graph/test_graph_kernels.c: forward kernels against
 * hand-computed cases and naive double-precision references: MatMul with
 * every transpose combination (small and chunked), broadcasting, the
 * activations, Softmax and SparseSoftmaxCrossEntropy (including huge
 * logits), reductions (including the split path), Reshape, Concat, Conv2D
 * SAME/VALID with strides against a direct convolution, MaxPool, ArgMax,
 * Equal, Cast and accuracy. */
#include "graph_test.h"

static rf_executor *ex;

static rf_node *cst(rf_graph *g, rf_shape s, const float *v)
{
    return rf_const(g, RF_F32, s, v, NULL);
}

static void check_vec(const char *what, const double *got, const double *want,
                      int64_t n, double atol, double rtol)
{
    int bad = 0;
    for (int64_t i = 0; i < n; i++)
        if (!rft_near(got[i], want[i], rtol, atol) && bad++ < 5)
            rft_note("%s[%lld]: got %.9g want %.9g", what, (long long)i, got[i],
                     want[i]);
    CHECK(bad == 0, "%s: %d of %lld elements differ (atol %g, rtol %g)", what,
          bad, (long long)n, atol, rtol);
}

/* ---- MatMul ------------------------------------------------------------- */

static void matmul_case(int64_t m, int64_t k, int64_t n, bool ta, bool tb)
{
    rf_graph *g;
    CHECK_OK(rf_graph_create(&g));
    float *a = malloc(sizeof(float) * (size_t)(m * k));
    float *b = malloc(sizeof(float) * (size_t)(k * n));
    double *want = malloc(sizeof(double) * (size_t)(m * n));
    double *got = malloc(sizeof(double) * (size_t)(m * n));
    test_fill(a, (size_t)(m * k), -1, 1);
    test_fill(b, (size_t)(k * n), -1, 1);
    /* a is stored [m,k] or [k,m]; b [k,n] or [n,k] */
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t q = 0; q < k; q++) {
                double av = ta ? a[q * m + i] : a[i * k + q];
                double bv = tb ? b[j * k + q] : b[q * n + j];
                s += av * bv;
            }
            want[i * n + j] = s;
        }
    rf_node *A = cst(g, ta ? RF_SHAPE(k, m) : RF_SHAPE(m, k), a);
    rf_node *B = cst(g, tb ? RF_SHAPE(n, k) : RF_SHAPE(k, n), b);
    rf_node *C = rf_matmul(g, A, B, ta, tb, NULL);
    CHECK(C != NULL, "matmul build");
    rf_shape cs = rf_node_shape(C);
    CHECK(cs.rank == 2 && cs.dims[0] == m && cs.dims[1] == n, "matmul shape");
    int64_t got_n = test_eval(ex, g, C, NULL, NULL, 0, got, (size_t)(m * n));
    CHECK(got_n == m * n, "matmul eval %lld", (long long)got_n);
    char what[64];
    snprintf(what, sizeof what, "matmul %lldx%lldx%lld ta=%d tb=%d",
             (long long)m, (long long)k, (long long)n, ta, tb);
    if (got_n == m * n)
        check_vec(what, got, want, m * n, 1e-4 * (double)k, 1e-5);
    free(a);
    free(b);
    free(want);
    free(got);
    rf_graph_destroy(g);
}

static void test_matmul(void)
{
    /* hand-computed: [[1,2],[3,4]] x [[5,6],[7,8]] = [[19,22],[43,50]] */
    rf_graph *g;
    CHECK_OK(rf_graph_create(&g));
    float a[] = {1, 2, 3, 4}, b[] = {5, 6, 7, 8};
    rf_node *A = cst(g, RF_SHAPE(2, 2), a), *B = cst(g, RF_SHAPE(2, 2), b);
    double out[4];
    const double ab[] = {19, 22, 43, 50}, atb[] = {26, 30, 38, 44},
                 abt[] = {17, 23, 39, 53}, atbt[] = {23, 31, 34, 46};
    CHECK(test_eval(ex, g, rf_matmul(g, A, B, false, false, NULL), NULL, NULL,
                    0, out, 4) == 4,
          "eval");
    check_vec("AB", out, ab, 4, 0, 0);
    test_eval(ex, g, rf_matmul(g, A, B, true, false, NULL), NULL, NULL, 0, out,
              4);
    check_vec("A'B", out, atb, 4, 0, 0);
    test_eval(ex, g, rf_matmul(g, A, B, false, true, NULL), NULL, NULL, 0, out,
              4);
    check_vec("AB'", out, abt, 4, 0, 0);
    test_eval(ex, g, rf_matmul(g, A, B, true, true, NULL), NULL, NULL, 0, out,
              4);
    check_vec("A'B'", out, atbt, 4, 0, 0);
    rf_graph_destroy(g);

    for (int t = 0; t < 4; t++) {
        matmul_case(3, 4, 5, t & 1, t & 2);
        matmul_case(300, 70, 90, t & 1, t & 2); /* chunked by rows */
        matmul_case(5, 400, 700, t & 1, t & 2); /* chunked by columns */
    }
}

/* ---- broadcasting and elementwise ---------------------------------------- */

static void test_broadcast(void)
{
    rf_graph *g;
    CHECK_OK(rf_graph_create(&g));
    float a[] = {1, 2, 3, 4, 5, 6}; /* [2,3] */
    float r[] = {10, 20, 30};       /* [3] */
    float c[] = {100, 200};         /* [2,1] */
    float s = 0.5f;
    rf_node *A = cst(g, RF_SHAPE(2, 3), a), *R = cst(g, RF_SHAPE(3), r);
    rf_node *C = cst(g, RF_SHAPE(2, 1), c), *S = cst(g, RF_SCALAR, &s);
    double out[24];
    const double add_r[] = {11, 22, 33, 14, 25, 36};
    const double sub_c[] = {-99, -98, -97, -196, -195, -194};
    const double mul_s[] = {0.5, 1, 1.5, 2, 2.5, 3};
    const double outer[] = {10000, 20000, 30000, 20000, 40000, 60000};
    test_eval(ex, g, rf_add(g, A, R, NULL), NULL, NULL, 0, out, 6);
    check_vec("[2,3]+[3]", out, add_r, 6, 0, 0);
    test_eval(ex, g, rf_sub(g, A, C, NULL), NULL, NULL, 0, out, 6);
    check_vec("[2,3]-[2,1]", out, sub_c, 6, 0, 0);
    test_eval(ex, g, rf_mul(g, S, A, NULL), NULL, NULL, 0, out, 6);
    check_vec("[]*[2,3]", out, mul_s, 6, 0, 0);
    rf_node *C2 = rf_reshape(g, C, RF_SHAPE(2, 1), NULL);
    rf_node *R2 = rf_reshape(g, R, RF_SHAPE(1, 3), NULL);
    rf_node *O = rf_mul(g, C2, R2, NULL);
    rf_shape os = rf_node_shape(O);
    CHECK(os.rank == 2 && os.dims[0] == 2 && os.dims[1] == 3, "outer shape");
    for (int i = 0; i < 6; i++)
        out[i] = 0;
    test_eval(ex, g, rf_mul(g, rf_const_f32(g, 10, NULL), O, NULL), NULL, NULL,
              0, out, 6);
    check_vec("outer", out, outer, 6, 0, 0);

    /* rank 3 against rank 2: [2,3,4] + [3,1] */
    float x[24], y[3] = {1, 2, 3};
    for (int i = 0; i < 24; i++)
        x[i] = (float)i;
    double want[24];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++)
                want[(i * 3 + j) * 4 + k] = (i * 3 + j) * 4 + k + y[j];
    test_eval(ex, g,
              rf_add(g, cst(g, RF_SHAPE(2, 3, 4), x), cst(g, RF_SHAPE(3, 1), y),
                     NULL),
              NULL, NULL, 0, out, 24);
    check_vec("[2,3,4]+[3,1]", out, want, 24, 0, 0);

    /* integers, Equal with broadcasting, Neg */
    int32_t ia[] = {1, 2, 3, 4}, ib[] = {3, 2};
    rf_node *IA = rf_const(g, RF_I32, RF_SHAPE(2, 2), ia, NULL);
    rf_node *IB = rf_const(g, RF_I32, RF_SHAPE(2), ib, NULL);
    const double iadd[] = {4, 4, 6, 6}, ieq[] = {0, 1, 1, 0},
                 ineg[] = {-1, -2, -3, -4};
    test_eval(ex, g, rf_add(g, IA, IB, NULL), NULL, NULL, 0, out, 4);
    check_vec("int add", out, iadd, 4, 0, 0);
    rf_node *eq = rf_equal(g, IA, IB, NULL);
    CHECK(rf_node_dtype(eq) == RF_BOOL, "Equal gives bool");
    test_eval(ex, g, eq, NULL, NULL, 0, out, 4);
    check_vec("equal", out, ieq, 4, 0, 0);
    test_eval(ex, g, rf_neg(g, IA, NULL), NULL, NULL, 0, out, 4);
    check_vec("neg", out, ineg, 4, 0, 0);
    CHECK(rf_graph_status(g) == RF_OK, "graph ok: %s", rf_graph_error(g));
    rf_graph_destroy(g);
}

static void test_activations(void)
{
    rf_graph *g;
    CHECK_OK(rf_graph_create(&g));
    float x[] = {-3, -0.5f, 0, 0.25f, 2, 20, -20, 100};
    rf_node *X = cst(g, RF_SHAPE(8), x);
    double out[8], want[8];
    for (int i = 0; i < 8; i++)
        want[i] = x[i] > 0 ? x[i] : 0;
    test_eval(ex, g, rf_relu(g, X, NULL), NULL, NULL, 0, out, 8);
    check_vec("relu", out, want, 8, 0, 0);
    for (int i = 0; i < 8; i++)
        want[i] = 1.0 / (1.0 + exp(-(double)x[i]));
    test_eval(ex, g, rf_sigmoid(g, X, NULL), NULL, NULL, 0, out, 8);
    check_vec("sigmoid", out, want, 8, 1e-7, 1e-6);
    for (int i = 0; i < 8; i++)
        want[i] = tanh((double)x[i]);
    test_eval(ex, g, rf_tanh(g, X, NULL), NULL, NULL, 0, out, 8);
    check_vec("tanh", out, want, 8, 1e-7, 1e-6);

    float bx[] = {1, 2, 3, 4, 5, 6}, bb[] = {0.5f, -1, 2};
    const double bw[] = {1.5, 1, 5, 4.5, 4, 8};
    test_eval(ex, g,
              rf_bias_add(g, cst(g, RF_SHAPE(2, 3), bx),
                          cst(g, RF_SHAPE(3), bb), NULL),
              NULL, NULL, 0, out, 6);
    check_vec("bias_add", out, bw, 6, 0, 0);
    rf_graph_destroy(g);
}

static void test_softmax_xent(void)
{
    rf_graph *g;
    CHECK_OK(rf_graph_create(&g));
    enum { B = 5, C = 7 };
    float x[B * C];
    test_fill(x, B * C, -4, 4);
    /* a row with huge logits: naive exp overflows, stable form does not */
    x[C * 3 + 0] = 1000;
    x[C * 3 + 1] = -1000;
    x[C * 3 + 2] = 999;
    int64_t lab[B] = {0, 6, 3, 2, 5};
    double sm[B * C], loss[B], out[B * C];
    for (int b = 0; b < B; b++) {
        double m = x[b * C];
        for (int c = 1; c < C; c++)
            m = fmax(m, x[b * C + c]);
        double s = 0;
        for (int c = 0; c < C; c++)
            s += exp((double)x[b * C + c] - m);
        for (int c = 0; c < C; c++)
            sm[b * C + c] = exp((double)x[b * C + c] - m) / s;
        loss[b] = log(s) - ((double)x[b * C + lab[b]] - m);
    }
    rf_node *X = cst(g, RF_SHAPE(B, C), x);
    rf_node *L = rf_const(g, RF_I64, RF_SHAPE(B), lab, NULL);
    test_eval(ex, g, rf_softmax(g, X, NULL), NULL, NULL, 0, out, B * C);
    check_vec("softmax", out, sm, B * C, 1e-7, 1e-5);
    rf_node *xe = rf_sparse_softmax_cross_entropy_with_logits(g, L, X, NULL);
    CHECK(rf_node_shape(xe).rank == 1 && rf_node_shape(xe).dims[0] == B,
          "xent shape");
    test_eval(ex, g, xe, NULL, NULL, 0, out, B);
    check_vec("xent", out, loss, B, 1e-5, 1e-5);
    CHECK(isfinite(out[3]) && fabs(out[3] - loss[3]) < 1e-4,
          "stable loss %g vs %g", out[3], loss[3]);

    /* int32 labels; out-of-range labels fail the run with TF's message */
    int32_t bad[B] = {0, 1, 7, 2, 3};
    rf_node *LB = rf_const(g, RF_I32, RF_SHAPE(B), bad, NULL);
    rf_node *xb = rf_sparse_softmax_cross_entropy_with_logits(g, LB, X, NULL);
    CHECK(test_eval(ex, g, xb, NULL, NULL, 0, out, B) < 0,
          "label 7 of 7 classes accepted");
    CHECK(strstr(rf_error_message(), "label value of 7") != NULL, "message: %s",
          rf_error_message());
    rf_graph_destroy(g);
}

/* sigmoid_cross_entropy_with_logits against z softplus(-x) + (1 - z)
 * softplus(x) in double (the definition, not TF's stable rewriting), at
 * logits where the naive float form overflows; its gradients against
 * sigmoid(x) - z and -x; mismatched shapes refused at build time */
static void test_sigmoid_xent(void)
{
    enum { N = 10 };
    rf_graph *g;
    CHECK_OK(rf_graph_create(&g));
    float x[N] = {-100, -20, -3, -0.5f, 0, 0, 0.25f, 2, 20, 100};
    float z[N] = {1, 0, 1, 0.3f, 0, 1, 1, 0, 1, 0};
    double out[N], want[N], gx[N], gz[N];
    for (int i = 0; i < N; i++) {
        double xd = x[i], zd = z[i];
        want[i] = zd * log1p(exp(-xd)) + (1 - zd) * log1p(exp(xd));
        gx[i] = 1.0 / (1.0 + exp(-xd)) - zd;
        gz[i] = -xd;
    }
    rf_node *X = rf_variable(g, RF_F32, RF_SHAPE(N), rf_init_zeros(), "x");
    rf_node *Z = rf_variable(g, RF_F32, RF_SHAPE(N), rf_init_zeros(), "z");
    CHECK_OK(rf_graph_initialize_variables(g));
    memcpy(rf_variable_data(X), x, sizeof x);
    memcpy(rf_variable_data(Z), z, sizeof z);
    rf_node *L = rf_sigmoid_cross_entropy_with_logits(g, Z, X, NULL);
    CHECK(L && rf_node_shape(L).rank == 1 && rf_node_shape(L).dims[0] == N,
          "sigmoid xent shape");
    CHECK(strcmp(rf_node_op_name(L), "SigmoidCrossEntropyWithLogits") == 0,
          "op name %s", rf_node_op_name(L));
    test_eval(ex, g, L, NULL, NULL, 0, out, N);
    check_vec("sigmoid xent", out, want, N, 1e-6, 1e-6);
    rf_node *xs[2] = {X, Z}, *grads[2] = {NULL, NULL};
    CHECK_OK(rf_gradients(g, rf_reduce_sum(g, L, NULL, 0, false, NULL), xs, 2,
                          grads));
    test_eval(ex, g, grads[0], NULL, NULL, 0, out, N);
    check_vec("sigmoid xent d/dlogits", out, gx, N, 1e-7, 1e-6);
    test_eval(ex, g, grads[1], NULL, NULL, 0, out, N);
    check_vec("sigmoid xent d/dlabels", out, gz, N, 0, 0);

    rf_node *W = rf_variable(g, RF_F32, RF_SHAPE(2, 5), rf_init_zeros(), "w");
    CHECK(rf_sigmoid_cross_entropy_with_logits(g, Z, W, NULL) == NULL,
          "logits [2,5] with labels [10] accepted");
    CHECK(strstr(rf_graph_error(g), "same shape") != NULL, "message: %s",
          rf_graph_error(g));
    rf_graph_destroy(g);
}

/* ---- reductions, reshape, concat ------------------------------------------
 */

static void test_reductions(void)
{
    rf_graph *g;
    CHECK_OK(rf_graph_create(&g));
    float x[24];
    for (int i = 0; i < 24; i++)
        x[i] = (float)(i + 1);
    rf_node *X = cst(g, RF_SHAPE(2, 3, 4), x);
    double out[24];
    int ax1[] = {1};
    rf_node *s1 = rf_reduce_sum(g, X, ax1, 1, false, NULL);
    rf_shape sh = rf_node_shape(s1);
    CHECK(sh.rank == 2 && sh.dims[0] == 2 && sh.dims[1] == 4, "sum shape");
    double want[8];
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 4; k++) {
            want[i * 4 + k] = 0;
            for (int j = 0; j < 3; j++)
                want[i * 4 + k] += x[(i * 3 + j) * 4 + k];
        }
    test_eval(ex, g, s1, NULL, NULL, 0, out, 8);
    check_vec("sum axis 1", out, want, 8, 0, 0);
    int axm[] = {-1, 0};
    rf_node *m = rf_reduce_mean(g, X, axm, 2, true, NULL);
    sh = rf_node_shape(m);
    CHECK(sh.rank == 3 && sh.dims[0] == 1 && sh.dims[1] == 3 && sh.dims[2] == 1,
          "mean keep_dims shape");
    double wm[3];
    for (int j = 0; j < 3; j++) {
        wm[j] = 0;
        for (int i = 0; i < 2; i++)
            for (int k = 0; k < 4; k++)
                wm[j] += x[(i * 3 + j) * 4 + k];
        wm[j] /= 8;
    }
    test_eval(ex, g, m, NULL, NULL, 0, out, 3);
    check_vec("mean axes -1,0 keep", out, wm, 3, 1e-6, 0);
    double all = 300;
    test_eval(ex, g, rf_reduce_sum(g, X, NULL, 0, false, NULL), NULL, NULL, 0,
              out, 1);
    check_vec("sum all", out, &all, 1, 0, 0);

    /* a long reduction goes through the split (partial-sum) path */
    enum { N = 200003 };
    float *big = malloc(sizeof(float) * N);
    test_fill(big, N, -1, 1);
    double ref = 0;
    for (int i = 0; i < N; i++)
        ref += big[i];
    rf_node *BX = cst(g, RF_SHAPE(1, N), big);
    test_eval(ex, g, rf_reduce_sum(g, BX, NULL, 0, false, NULL), NULL, NULL, 0,
              out, 1);
    check_vec("big sum", out, &ref, 1, 1e-3, 1e-6);
    free(big);

    /* Reshape with -1 and an unknown batch */
    rf_node *P = rf_placeholder(g, RF_F32, RF_SHAPE(-1, 6), "p");
    rf_node *r = rf_reshape(g, P, RF_SHAPE(-1, 2, 3), NULL);
    sh = rf_node_shape(r);
    CHECK(sh.rank == 3 && sh.dims[0] == -1 && sh.dims[2] == 3,
          "reshape static %d", sh.rank);
    rf_node *r2 = rf_reshape(g, X, RF_SHAPE(4, -1), NULL);
    sh = rf_node_shape(r2);
    CHECK(sh.dims[1] == 6, "reshape -1 inferred %lld", (long long)sh.dims[1]);
    rf_tensor fv = rf_tensor_make(RF_F32, RF_SHAPE(4, 6), x);
    int64_t n = test_eval(ex, g, r, &P, &fv, 1, out, 24);
    CHECK(n == 24 && out[23] == 24, "reshape run");

    /* Concat on axis 1 */
    float c1[] = {1, 2, 3, 4}, c2[] = {5, 6};
    rf_node *cs[2] = {cst(g, RF_SHAPE(2, 2), c1), cst(g, RF_SHAPE(2, 1), c2)};
    const double cw[] = {1, 2, 5, 3, 4, 6};
    test_eval(ex, g, rf_concat(g, cs, 2, -1, NULL), NULL, NULL, 0, out, 6);
    check_vec("concat", out, cw, 6, 0, 0);
    CHECK(rf_graph_status(g) == RF_OK, "graph ok: %s", rf_graph_error(g));
    rf_graph_destroy(g);
}

/* ---- convolution and pooling --------------------------------------------- */

static void pads(int64_t in, int64_t k, int64_t s, bool same, int64_t *out,
                 int64_t *before)
{
    if (same) {
        *out = (in + s - 1) / s;
        int64_t t = (*out - 1) * s + k - in;
        *before = t > 0 ? t / 2 : 0;
    } else {
        *out = (in - k) / s + 1;
        *before = 0;
    }
}

static void conv_case(int64_t n, int64_t h, int64_t w, int64_t ci, int64_t kh,
                      int64_t kw, int64_t co, int sh, int sw, bool same)
{
    rf_graph *g;
    CHECK_OK(rf_graph_create(&g));
    size_t nx = (size_t)(n * h * w * ci), nf = (size_t)(kh * kw * ci * co);
    float *x = malloc(nx * sizeof *x), *f = malloc(nf * sizeof *f);
    test_fill(x, nx, -1, 1);
    test_fill(f, nf, -1, 1);
    int64_t oh, ow, pt, pl;
    pads(h, kh, sh, same, &oh, &pt);
    pads(w, kw, sw, same, &ow, &pl);
    size_t no = (size_t)(n * oh * ow * co);
    double *want = calloc(no, sizeof *want), *got = calloc(no, sizeof *got);
    for (int64_t b = 0; b < n; b++)
        for (int64_t y = 0; y < oh; y++)
            for (int64_t xx = 0; xx < ow; xx++)
                for (int64_t o = 0; o < co; o++) {
                    double s = 0;
                    for (int64_t ky = 0; ky < kh; ky++)
                        for (int64_t kx = 0; kx < kw; kx++)
                            for (int64_t c = 0; c < ci; c++) {
                                int64_t iy = y * sh - pt + ky,
                                        ix = xx * sw - pl + kx;
                                if (iy < 0 || iy >= h || ix < 0 || ix >= w)
                                    continue;
                                s += (double)
                                         x[((b * h + iy) * w + ix) * ci + c] *
                                     f[((ky * kw + kx) * ci + c) * co + o];
                            }
                    want[((b * oh + y) * ow + xx) * co + o] = s;
                }
    rf_node *X = cst(g, RF_SHAPE(n, h, w, ci), x);
    rf_node *F = cst(g, RF_SHAPE(kh, kw, ci, co), f);
    rf_node *Y = rf_conv2d(g, X, F, sh, sw,
                           same ? RF_PADDING_SAME : RF_PADDING_VALID, NULL);
    rf_shape ys = rf_node_shape(Y);
    CHECK(ys.rank == 4 && ys.dims[1] == oh && ys.dims[2] == ow &&
              ys.dims[3] == co,
          "conv shape");
    int64_t got_n = test_eval(ex, g, Y, NULL, NULL, 0, got, no);
    CHECK(got_n == (int64_t)no, "conv eval");
    char what[96];
    snprintf(what, sizeof what, "conv %lldx%lldx%lld k%lldx%lld s%d,%d %s",
             (long long)h, (long long)w, (long long)ci, (long long)kh,
             (long long)kw, sh, sw, same ? "SAME" : "VALID");
    check_vec(what, got, want, (int64_t)no, 1e-5 * (double)(kh * kw * ci),
              1e-5);
    free(x);
    free(f);
    free(want);
    free(got);
    rf_graph_destroy(g);
}

static void test_conv2d(void)
{
    /* TF's SAME rule on a hand-checked case: input 4, k 3, stride 2 gives
     * output 2 with pad_total 1: no padding before, one after. A 1-channel
     * 4x4 ramp with an all-ones 3x3 filter. */
    rf_graph *g;
    CHECK_OK(rf_graph_create(&g));
    float x[16], f[9];
    for (int i = 0; i < 16; i++)
        x[i] = (float)i;
    for (int i = 0; i < 9; i++)
        f[i] = 1;
    rf_node *Y =
        rf_conv2d(g, cst(g, RF_SHAPE(1, 4, 4, 1), x),
                  cst(g, RF_SHAPE(3, 3, 1, 1), f), 2, 2, RF_PADDING_SAME, NULL);
    double out[4];
    /* windows: rows 0-2 x cols 0-2; rows 0-2 x cols 2-3(+pad); ... */
    const double want[] = {0 + 1 + 2 + 4 + 5 + 6 + 8 + 9 + 10,
                           2 + 3 + 6 + 7 + 10 + 11, 8 + 9 + 10 + 12 + 13 + 14,
                           10 + 11 + 14 + 15};
    CHECK(test_eval(ex, g, Y, NULL, NULL, 0, out, 4) == 4, "eval");
    check_vec("conv SAME s2 hand", out, want, 4, 0, 0);
    rf_graph_destroy(g);

    conv_case(2, 7, 6, 3, 3, 2, 4, 1, 1, true);
    conv_case(2, 7, 6, 3, 3, 2, 4, 2, 1, true);
    conv_case(2, 7, 6, 3, 3, 3, 4, 2, 2, false);
    conv_case(1, 5, 5, 2, 5, 5, 3, 1, 1, false);  /* 1x1 output */
    conv_case(3, 9, 8, 2, 4, 4, 5, 3, 2, true);   /* even kernel, big pads */
    conv_case(5, 28, 28, 1, 5, 5, 8, 1, 1, true); /* several chunks */
    conv_case(2, 14, 14, 8, 5, 5, 6, 1, 1, true);
}

static void test_max_pool(void)
{
    rf_graph *g;
    CHECK_OK(rf_graph_create(&g));
    /* 1x3x3x1, 2x2 window stride 2 SAME: output 2x2, the right/bottom
     * windows are clipped (padding never wins) */
    float x[] = {1, -5, 3, 4, 2, -6, -7, -8, -9};
    rf_node *Y = rf_max_pool(g, cst(g, RF_SHAPE(1, 3, 3, 1), x), 2, 2, 2, 2,
                             RF_PADDING_SAME, NULL);
    double out[4];
    const double want[] = {4, 3, -7, -9};
    CHECK(test_eval(ex, g, Y, NULL, NULL, 0, out, 4) == 4, "eval");
    check_vec("maxpool SAME", out, want, 4, 0, 0);
    rf_node *V = rf_max_pool(g, cst(g, RF_SHAPE(1, 3, 3, 1), x), 2, 2, 1, 1,
                             RF_PADDING_VALID, NULL);
    const double wv[] = {4, 3, 4, 2};
    CHECK(test_eval(ex, g, V, NULL, NULL, 0, out, 4) == 4, "eval");
    check_vec("maxpool VALID s1", out, wv, 4, 0, 0);
    /* 2 channels are pooled independently */
    float x2[] = {1, 10, 2, 0, 3, -1, 0, 5}; /* 1x2x2x2 */
    rf_node *Y2 = rf_max_pool(g, cst(g, RF_SHAPE(1, 2, 2, 2), x2), 2, 2, 2, 2,
                              RF_PADDING_VALID, NULL);
    const double w2[] = {3, 10};
    CHECK(test_eval(ex, g, Y2, NULL, NULL, 0, out, 2) == 2, "eval");
    check_vec("maxpool channels", out, w2, 2, 0, 0);
    rf_graph_destroy(g);
}

/* TF's ReluGrad uses features > 0: the gradient at exactly 0 is 0 */
static void test_relu_grad_at_zero(void)
{
    rf_graph *g;
    CHECK_OK(rf_graph_create(&g));
    rf_node *x = rf_variable(g, RF_F32, RF_SHAPE(3), rf_init_zeros(), "x");
    rf_node *loss = rf_reduce_sum(g, rf_relu(g, x, NULL), NULL, 0, false, NULL);
    rf_node *dx = NULL;
    CHECK_OK(rf_gradients(g, loss, &x, 1, &dx));
    CHECK_OK(rf_graph_initialize_variables(g));
    float *xv = rf_variable_data(x);
    xv[0] = 0;
    xv[1] = 2;
    xv[2] = -2;
    double out[3];
    const double want[] = {0, 1, 0};
    CHECK(test_eval(ex, g, dx, NULL, NULL, 0, out, 3) == 3, "eval");
    check_vec("relu grad", out, want, 3, 0, 0);
    rf_graph_destroy(g);

    /* MaxPoolGrad routes to the first maximum of a window (row-major) */
    CHECK_OK(rf_graph_create(&g));
    rf_node *im =
        rf_variable(g, RF_F32, RF_SHAPE(1, 2, 3, 1), rf_init_constant(1), "im");
    rf_node *mp = rf_max_pool(g, im, 2, 2, 1, 1, RF_PADDING_VALID, NULL);
    loss = rf_reduce_sum(g, mp, NULL, 0, false, NULL);
    CHECK_OK(rf_gradients(g, loss, &im, 1, &dx));
    CHECK_OK(rf_graph_initialize_variables(g));
    double pg[6];
    const double pw[] = {1, 1, 0, 0, 0, 0}; /* windows start at 0 and 1 */
    CHECK(test_eval(ex, g, dx, NULL, NULL, 0, pg, 6) == 6, "eval");
    check_vec("maxpool tie", pg, pw, 6, 0, 0);
    rf_graph_destroy(g);
}

/* MaxPoolGrad against a scalar reference (first maximum of each window in
 * row-major order, strictly-greater scan, overlapping windows add up), with
 * ties (values on a coarse grid) and 7 channels, so the kernel's 4-channel
 * vector path and its scalar tail both run. */
static void pool_grad_case(int64_t h, int64_t w, int64_t k, int64_t s,
                           bool same)
{
    enum { N = 2, C = 7 };
    int64_t oh, ow, pt, pl;
    pads(h, k, s, same, &oh, &pt);
    pads(w, k, s, same, &ow, &pl);
    int64_t nx = N * h * w * C, ny = N * oh * ow * C;
    float *x = malloc((size_t)nx * sizeof *x), *dy = malloc((size_t)ny * 4);
    double *want = calloc((size_t)nx, sizeof *want);
    double *got = malloc((size_t)nx * sizeof *got);
    test_seed(77);
    for (int64_t i = 0; i < nx; i++)
        x[i] = (float)(int)(test_uniform() * 4); /* many ties */
    test_fill(dy, (size_t)ny, -1, 1);
    for (int64_t n = 0; n < N; n++)
        for (int64_t oy = 0; oy < oh; oy++)
            for (int64_t ox = 0; ox < ow; ox++)
                for (int64_t c = 0; c < C; c++) {
                    int64_t best = -1;
                    for (int64_t ky = 0; ky < k; ky++)
                        for (int64_t kx = 0; kx < k; kx++) {
                            int64_t y = oy * s - pt + ky, xx = ox * s - pl + kx;
                            if (y < 0 || y >= h || xx < 0 || xx >= w)
                                continue;
                            int64_t i = ((n * h + y) * w + xx) * C + c;
                            if (best < 0 || x[i] > x[best])
                                best = i;
                        }
                    if (best >= 0)
                        want[best] += dy[((n * oh + oy) * ow + ox) * C + c];
                }
    rf_graph *g;
    CHECK_OK(rf_graph_create(&g));
    rf_node *im =
        rf_variable(g, RF_F32, RF_SHAPE(N, h, w, C), rf_init_zeros(), "im");
    rf_node *mp = rf_max_pool(g, im, (int)k, (int)k, (int)s, (int)s,
                              same ? RF_PADDING_SAME : RF_PADDING_VALID, NULL);
    rf_node *loss = rf_reduce_sum(
        g, rf_mul(g, mp, cst(g, RF_SHAPE(N, oh, ow, C), dy), NULL), NULL, 0,
        false, NULL);
    rf_node *dx = NULL;
    CHECK_OK(rf_gradients(g, loss, &im, 1, &dx));
    CHECK_OK(rf_graph_initialize_variables(g));
    memcpy(rf_variable_data(im), x, (size_t)nx * sizeof *x);
    CHECK(test_eval(ex, g, dx, NULL, NULL, 0, got, (size_t)nx) == nx, "eval");
    char what[64];
    snprintf(what, sizeof what, "maxpool grad %lldx%lld k%lld s%lld %s",
             (long long)h, (long long)w, (long long)k, (long long)s,
             same ? "SAME" : "VALID");
    check_vec(what, got, want, nx, 1e-6, 1e-6);
    rf_graph_destroy(g);
    free(x);
    free(dy);
    free(want);
    free(got);
}

static void test_max_pool_grad(void)
{
    pool_grad_case(5, 5, 2, 2, true);  /* clipped right/bottom windows */
    pool_grad_case(6, 7, 3, 1, true);  /* overlapping windows add up */
    pool_grad_case(7, 6, 3, 2, false); /* overlap, VALID */
}

static void test_argmax_cast_accuracy(void)
{
    rf_graph *g;
    CHECK_OK(rf_graph_create(&g));
    float logits[] = {0.1f, 0.9f, 0.0f,  /* 1 */
                      5.0f, 5.0f, 1.0f,  /* 0: first maximum */
                      -1,   -2,   -0.5f, /* 2 */
                      3,    2,    1};    /* 0 */
    rf_node *L = cst(g, RF_SHAPE(4, 3), logits);
    double out[4];
    const double am[] = {1, 0, 2, 0};
    rf_node *A = rf_argmax(g, L, -1, RF_I64, NULL);
    CHECK(rf_node_dtype(A) == RF_I64 && rf_node_shape(A).rank == 1, "argmax");
    test_eval(ex, g, A, NULL, NULL, 0, out, 4);
    check_vec("argmax", out, am, 4, 0, 0);
    const double am0[] = {1, 1, 1}; /* column maxima, first wins */
    test_eval(ex, g, rf_argmax(g, L, 0, RF_I32, NULL), NULL, NULL, 0, out, 3);
    check_vec("argmax axis 0", out, am0, 3, 0, 0);
    float fc[] = {-1.7f, 2.5f, 0.0f};
    const double trunc[] = {-1, 2, 0}, asbool[] = {1, 1, 0};
    rf_node *FC = cst(g, RF_SHAPE(3), fc);
    test_eval(ex, g, rf_cast(g, FC, RF_I32, NULL), NULL, NULL, 0, out, 3);
    check_vec("cast f32->i32", out, trunc, 3, 0, 0);
    test_eval(ex, g, rf_cast(g, FC, RF_BOOL, NULL), NULL, NULL, 0, out, 3);
    check_vec("cast f32->bool", out, asbool, 3, 0, 0);
    int32_t labels[] = {1, 1, 2, 2};
    rf_node *acc =
        rf_accuracy(g, L, rf_const(g, RF_I32, RF_SHAPE(4), labels, NULL), NULL);
    CHECK(acc && strncmp(rf_node_name(acc), "accuracy/", 9) == 0,
          "accuracy scope: %s", acc ? rf_node_name(acc) : "(null)");
    test_eval(ex, g, acc, NULL, NULL, 0, out, 1);
    CHECK(out[0] == 0.5, "accuracy %g", out[0]);
    rf_graph_destroy(g);
}

int main(void)
{
    rf_executor_options o = {.threads = 2};
    CHECK_OK(rf_executor_create(&o, &ex));
    test_seed(1);
    test_matmul();
    test_broadcast();
    test_activations();
    test_softmax_xent();
    test_sigmoid_xent();
    test_reductions();
    test_conv2d();
    test_max_pool();
    test_relu_grad_at_zero();
    test_max_pool_grad();
    test_argmax_cast_accuracy();
    rf_executor_destroy(ex);
    printf("graph kernels: all checks passed\n");
    return 0;
}
