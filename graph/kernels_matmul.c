/* graph/kernels_matmul.c: MatMul on OpenBLAS cblas_sgemm. OpenBLAS runs
 * single-threaded (see rf_executor_create); the executor cuts a large
 * product into a few blocks, each one sgemm on one pool thread. The cut is
 * a pure function of the shape (never of the thread count): OpenBLAS's
 * bits depend on the block shapes it is given (its small-matrix kernels),
 * so a fixed cut keeps results bitwise equal for any number of threads.
 *
 * The blocks are few and large because every sgemm call packs both of its
 * operands: a block of rows repacks the whole right-hand matrix, a block of
 * columns the whole left-hand one. The product is cut along the dimension
 * whose cut duplicates the smaller operand (rows when M >= N), at most
 * MM_MAX_PARTS blocks of at least MM_PART_FLOPS (4 MFLOP, ~40 us) each, edges
 * on multiples of MM_ALIGN (OpenBLAS's register tiles). Measured on a Zen 4
 * EPYC at one thread (bench/train/README.md): 2 blocks cost 0-6% over one
 * call, 4 blocks 2-11%, the former 16-row chunks 42%. Two threads split a
 * large product evenly; more threads get parallelism only across ops.
 * A fused BiasAdd (+ Relu) runs on each block right after its sgemm. */

#include "graph/graph_internal.h"

typedef struct mm_job {
    bool ta, tb, by_rows;
    int64_t m, n, k, step;
    const float *a, *b;
    float *c;
    const float *bias; /* fused epilogue (kernels_fused.c), or NULL */
    bool relu;
} mm_job;

static void mm_chunk(void *arg, size_t chunk, int tid)
{
    (void)tid;
    const mm_job *j = arg;
    int64_t lda = j->ta ? j->m : j->k, ldb = j->tb ? j->k : j->n;
    int64_t lo = (int64_t)chunk * j->step;
    if (j->by_rows) {
        int64_t hi = lo + j->step < j->m ? lo + j->step : j->m;
        const float *a = j->ta ? j->a + lo : j->a + lo * lda;
        sgemm(j->ta, j->tb, hi - lo, j->n, j->k, a, lda, j->b, ldb,
              j->c + lo * j->n, j->n, false);
        if (j->bias)
            epilogue_rows(j->c + lo * j->n, hi - lo, j->n, j->n, j->bias,
                          j->relu);
    } else {
        int64_t hi = lo + j->step < j->n ? lo + j->step : j->n;
        const float *b = j->tb ? j->b + lo * ldb : j->b + lo;
        sgemm(j->ta, j->tb, j->m, hi - lo, j->k, j->a, lda, b, ldb, j->c + lo,
              j->n, false);
        if (j->bias)
            epilogue_rows(j->c + lo, j->m, hi - lo, j->n, j->bias + lo,
                          j->relu);
    }
}

/* Fixed constants, so the cut (and the bits of the result) never depends
 * on the thread count. */
#ifndef MM_MAX_PARTS /* overridable only to measure alternatives */
#define MM_MAX_PARTS 2
#endif
#define MM_PART_FLOPS ((int64_t)1 << 22)
#define MM_ALIGN      16

RF_KERNEL(k_matmul)
{
    const rf_tensor *A = k->in[0], *B = k->in[1];
    mm_job j = {.ta = k->node->attr.transpose_a,
                .tb = k->node->attr.transpose_b,
                .a = A->data,
                .b = B->data,
                .c = k->out->data,
                .bias = k->epi_bias,
                .relu = k->epi_relu};
    j.m = k->out->shape.dims[0];
    j.n = k->out->shape.dims[1];
    j.k = j.ta ? A->shape.dims[0] : A->shape.dims[1];
    j.by_rows = j.m >= j.n;
    int64_t units = j.by_rows ? j.m : j.n;
    int64_t flops = 2 * j.m * j.n * j.k;
    int64_t parts = flops / MM_PART_FLOPS;
    if (parts > MM_MAX_PARTS)
        parts = MM_MAX_PARTS;
    if (parts > units / MM_ALIGN)
        parts = units / MM_ALIGN;
    if (parts < 1)
        parts = 1;
    j.step = (units + parts - 1) / parts;
    j.step = (j.step + MM_ALIGN - 1) / MM_ALIGN * MM_ALIGN;
    if (j.step < 1)
        j.step = 1;
    size_t chunks = units > 0 ? (size_t)((units + j.step - 1) / j.step) : 1;
    parallel_for(k, chunks, mm_chunk, &j);
    return RF_OK;
}
