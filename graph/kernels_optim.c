/* graph/kernels_optim.c: the optimizer ops' kernels, thin wrappers over the
 * pure rf_optim_apply()/rf_optim_finish_step() kernels of optim/. Apply
 * updates the variable and its slots in place (their storage is the
 * variable store's, possibly registered memory), elementwise in chunks. */
#include <stdatomic.h>

#include "graph/graph_internal.h"
#include "rdmaflow/optim.h"

#define OPT_GRAIN      65536
#define OPT_MAX_CHUNKS 64

typedef struct apply_job {
    const rf_optim_config *cfg;
    float *var;
    float *slots[RF_OPTIM_MAX_SLOTS];
    unsigned ns;
    const float *grad;
    rf_optim_scalars sc;
    bool adam;
    int64_t n, per_chunk;
    atomic_int err;
} apply_job;

static void apply_chunk(void *arg, size_t chunk, int tid)
{
    (void)tid;
    apply_job *j = arg;
    int64_t lo = (int64_t)chunk * j->per_chunk, hi = lo + j->per_chunk;
    if (hi > j->n)
        hi = j->n;
    if (hi <= lo)
        return;
    float *slots[RF_OPTIM_MAX_SLOTS] = {NULL};
    for (unsigned i = 0; i < j->ns; i++)
        slots[i] = j->slots[i] + lo;
    rf_status st = rf_optim_apply(j->cfg, j->var + lo, slots, j->grad + lo,
                                  (size_t)(hi - lo), j->adam ? &j->sc : NULL);
    if (st != RF_OK) {
        int expected = RF_OK;
        atomic_compare_exchange_strong(&j->err, &expected, (int)st);
    }
}

/* inputs (var, grad, slots..., [beta1_power, beta2_power]) */
RF_KERNEL(k_apply)
{
    const rf_node *n = k->node;
    apply_job j = {.cfg = n->optim,
                   .var = k->out->data,
                   .ns = n->attr.num_slots,
                   .grad = k->in[1]->data,
                   .adam = n->optim->kind == RF_OPTIM_ADAM};
    atomic_init(&j.err, RF_OK);
    for (unsigned i = 0; i < j.ns; i++)
        j.slots[i] = k->in[2 + i]->data;
    if (j.adam) {
        j.sc.beta1_power = *(const float *)k->in[2 + j.ns]->data;
        j.sc.beta2_power = *(const float *)k->in[3 + j.ns]->data;
    }
    j.n = rf_shape_numel(&k->out->shape);
    size_t chunks = chunks_for(j.n, OPT_GRAIN, OPT_MAX_CHUNKS);
    j.per_chunk = (j.n + (int64_t)chunks - 1) / (int64_t)chunks;
    if (j.per_chunk < 1)
        j.per_chunk = 1;
    parallel_for(k, chunks, apply_chunk, &j);
    rf_status st = (rf_status)atomic_load(&j.err);
    if (st != RF_OK)
        return node_error(n, st, "%s update failed (%s)",
                          rf_optim_kind_name(n->optim->kind),
                          rf_status_string(st));
    return RF_OK;
}

/* inputs (beta1_power, beta2_power): advanced once per step */
RF_KERNEL(k_finish)
{
    float *b1 = k->in[0]->data, *b2 = k->in[1]->data;
    rf_optim_scalars s = {.beta1_power = *b1, .beta2_power = *b2};
    rf_status st = rf_optim_finish_step(k->node->optim, &s);
    if (st != RF_OK)
        return node_error(k->node, st, "finish step failed");
    *b1 = s.beta1_power;
    *b2 = s.beta2_power;
    return RF_OK;
}
