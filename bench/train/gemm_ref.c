/* bench/train/gemm_ref.c: rf-bench-gemm-ref, the reference beside
 * rf-trainer's throughput: the GEMMs one training step of a model performs
 * (forward, weight gradients, input gradients; conv layers as im2col
 * GEMMs), each issued as one whole cblas_sgemm call with OpenBLAS's own
 * threading at --threads. Their time per step is what the step would cost
 * if it were nothing but GEMMs at OpenBLAS's speed: the trainer's
 * examples/s divided by this program's is the fraction of the step spent in
 * GEMM-equivalent work. Of rdmaflow only the clock (rdmaflow/clock.h) is
 * used.
 *
 * usage: rf-bench-gemm-ref --model=softmax|mlp:W1,...|cnn:C1,C2,D
 *                          --batch_size=N [--threads=T] [--trials=K]
 * Prints one line: model, batch, threads, GFLOP per step, median ms per
 * step over K trials (each at least 0.2 s), GFLOP/s and examples/s. */
#include <cblas.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/clock.h"

#define MAX_GEMMS 64

typedef struct gemm {
    bool ta, tb;
    int m, n, k;
    float *a, *b, *c;
} gemm;

static gemm gemms[MAX_GEMMS];
static int ngemm;

static void add(bool ta, bool tb, int m, int n, int k)
{
    if (ngemm == MAX_GEMMS) {
        fprintf(stderr, "rf-bench-gemm-ref: too many layers\n");
        exit(2);
    }
    gemm *g = &gemms[ngemm++];
    *g = (gemm){.ta = ta, .tb = tb, .m = m, .n = n, .k = k};
    size_t sa = (size_t)m * k, sb = (size_t)k * n, sc = (size_t)m * n;
    g->a = malloc(sa * sizeof(float));
    g->b = malloc(sb * sizeof(float));
    g->c = malloc(sc * sizeof(float));
    if (!g->a || !g->b || !g->c) {
        fprintf(stderr, "rf-bench-gemm-ref: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < sa; i++)
        g->a[i] = (float)(i % 17) * 0.01f;
    for (size_t i = 0; i < sb; i++)
        g->b[i] = (float)(i % 13) * 0.01f;
    memset(g->c, 0, sc * sizeof(float));
}

/* Dense layer [B, in] -> [B, out]; dx unless it is the first layer. */
static void dense(int batch, int in, int out, bool dx)
{
    add(false, false, batch, out, in); /* y = x W */
    add(true, false, in, out, batch);  /* dW = x^T dy */
    if (dx)
        add(false, true, batch, in, out); /* dx = dy W^T */
}

/* 5x5 SAME stride-1 conv over h x w images, as im2col GEMMs. */
static void conv(int batch, int h, int w, int cin, int cout, bool dx)
{
    int rows = batch * h * w, k = 25 * cin;
    add(false, false, rows, cout, k); /* y = col W */
    add(true, false, k, cout, rows);  /* dW = col^T dy */
    if (dx)
        add(false, true, rows, k, cout); /* dcol = dy W^T */
}

static int parse_list(const char *s, int *out, int max)
{
    int n = 0;
    while (*s && n < max) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > 65536)
            return -1;
        out[n++] = (int)v;
        if (*end == ',')
            end++;
        else if (*end)
            return -1;
        s = end;
    }
    return n;
}

static void run_step(void)
{
    for (int i = 0; i < ngemm; i++) {
        gemm *g = &gemms[i];
        int lda = g->ta ? g->m : g->k, ldb = g->tb ? g->k : g->n;
        cblas_sgemm(CblasRowMajor, g->ta ? CblasTrans : CblasNoTrans,
                    g->tb ? CblasTrans : CblasNoTrans, g->m, g->n, g->k, 1.0f,
                    g->a, lda, g->b, ldb, 0.0f, g->c, g->n);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    const char *model = NULL;
    int batch = 0, threads = 1, trials = 7;
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "--model=", 8))
            model = argv[i] + 8;
        else if (!strncmp(argv[i], "--batch_size=", 13))
            batch = atoi(argv[i] + 13);
        else if (!strncmp(argv[i], "--threads=", 10))
            threads = atoi(argv[i] + 10);
        else if (!strncmp(argv[i], "--trials=", 9))
            trials = atoi(argv[i] + 9);
        else {
            fprintf(stderr, "rf-bench-gemm-ref: unknown argument %s\n",
                    argv[i]);
            return 2;
        }
    }
    int w[16], nw = 0;
    if (!model || batch < 1 || threads < 1 || trials < 1 || trials > 101) {
        fprintf(stderr, "usage: rf-bench-gemm-ref --model=softmax|mlp:W1,..."
                        "|cnn:C1,C2,D --batch_size=N [--threads=T] "
                        "[--trials=K]\n");
        return 2;
    }
    if (!strcmp(model, "softmax")) {
        dense(batch, 784, 10, false);
    } else if (!strncmp(model, "mlp:", 4) &&
               (nw = parse_list(model + 4, w, 16)) > 0) {
        int in = 784;
        for (int i = 0; i < nw; i++) {
            dense(batch, in, w[i], i > 0);
            in = w[i];
        }
        dense(batch, in, 10, true);
    } else if (!strncmp(model, "cnn:", 4) &&
               parse_list(model + 4, w, 16) == 3) {
        conv(batch, 28, 28, 1, w[0], false);
        conv(batch, 14, 14, w[0], w[1], true);
        dense(batch, 7 * 7 * w[1], w[2], true);
        dense(batch, w[2], 10, true);
    } else {
        fprintf(stderr, "rf-bench-gemm-ref: bad --model=%s\n", model);
        return 2;
    }
    openblas_set_num_threads(threads);
    double flop = 0;
    for (int i = 0; i < ngemm; i++)
        flop += 2.0 * gemms[i].m * gemms[i].n * gemms[i].k;
    run_step(); /* warm-up: first touch, thread start */
    double t[101];
    for (int r = 0; r < trials; r++) {
        int steps = 0;
        double t0 = rf_now_s(), el;
        do {
            run_step();
            steps++;
            el = rf_now_s() - t0;
        } while (el < 0.2);
        t[r] = el / steps;
    }
    qsort(t, (size_t)trials, sizeof t[0], cmp_double);
    double med = t[trials / 2];
    printf("gemm-ref model=%s batch=%d threads=%d core=%s gemms=%d "
           "gflop_per_step=%.4f ms_per_step=%.3f gflops=%.1f "
           "examples_per_s=%.0f\n",
           model, batch, threads, openblas_get_corename(), ngemm, flop * 1e-9,
           med * 1e3, flop * 1e-9 / med, batch / med);
    return 0;
}
