/* graph/kernels_matmul.c: MatMul on OpenBLAS cblas_sgemm. OpenBLAS runs
 * single-threaded (see rf_executor_create); the executor splits a large
 * product into row (or column) blocks, a pure function of the shape, each
 * one sgemm on one pool thread. */

#include "graph/graph_internal.h"

typedef struct mm_job {
    bool ta, tb, by_rows;
    int64_t m, n, k, step;
    const float *a, *b;
    float *c;
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
        rf_sgemm(j->ta, j->tb, hi - lo, j->n, j->k, a, lda, j->b, ldb,
                 j->c + lo * j->n, j->n, false);
    } else {
        int64_t hi = lo + j->step < j->n ? lo + j->step : j->n;
        const float *b = j->tb ? j->b + lo * ldb : j->b + lo;
        rf_sgemm(j->ta, j->tb, j->m, hi - lo, j->k, j->a, lda, b, ldb,
                 j->c + lo, j->n, false);
    }
}

/* Work per chunk and the chunk cap: fixed constants, so the partition (and
 * the bits of the result) never depends on the thread count. */
#define MM_CHUNK_FLOPS (1 << 18)
#define MM_MAX_CHUNKS  16

RF_KERNEL(rf_k_matmul)
{
    const rf_tensor *A = k->in[0], *B = k->in[1];
    mm_job j = {.ta = k->node->attr.transpose_a,
                .tb = k->node->attr.transpose_b,
                .a = A->data,
                .b = B->data,
                .c = k->out->data};
    j.m = k->out->shape.dims[0];
    j.n = k->out->shape.dims[1];
    j.k = j.ta ? A->shape.dims[0] : A->shape.dims[1];
    int64_t per_row = j.n * j.k > 0 ? j.n * j.k : 1;
    int64_t per_col = j.m * j.k > 0 ? j.m * j.k : 1;
    j.by_rows = j.m >= j.n || j.m >= 64;
    int64_t units = j.by_rows ? j.m : j.n;
    int64_t grain = MM_CHUNK_FLOPS / (j.by_rows ? per_row : per_col);
    if (grain < 8)
        grain = 8;
    size_t chunks = rf_chunks_for(units, grain, MM_MAX_CHUNKS);
    j.step = (units + (int64_t)chunks - 1) / (int64_t)chunks;
    if (j.step < 1)
        j.step = 1;
    chunks = (size_t)((units + j.step - 1) / j.step);
    if (chunks == 0)
        chunks = 1;
    rf_parallel_for(k, chunks, mm_chunk, &j);
    return RF_OK;
}
