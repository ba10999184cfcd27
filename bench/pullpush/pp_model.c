/* bench/pullpush/pp_model.c: the benchmark's model, its placement and the
 * check of what the ps tasks hold (see pp_model.h). */
#include "pp_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/device.h"

#define ALIGN 64u
/* Elements recomputed at a time by pp_verify. */
#define CHUNK 16384u

static uint64_t mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* A multiple of 2^-23 in [-1, 1): exact in float. */
static float unit(uint64_t seed, size_t i, size_t e)
{
    uint64_t h = mix(seed ^ mix((uint64_t)i << 40 ^ (uint64_t)e));
    return (float)((int64_t)(h >> 40) - (1 << 23)) / (float)(1 << 23);
}

float pp_initial(size_t i, size_t e)
{
    return unit(0x5eed0001u, i, e);
}

float pp_gradient(size_t i, size_t e)
{
    return unit(0x9e3779b9u, i, e) * 0.25f;
}

static void add_var(pp_model *m, const char *name, int64_t d0, int64_t d1,
                    int rank)
{
    pp_var *v = &m->v[m->nvars++];
    snprintf(v->name, sizeof v->name, "%s", name);
    v->dims[0] = d0;
    v->dims[1] = d1;
    v->rank = rank;
    v->bytes = (size_t)(d0 * (rank == 2 ? d1 : 1)) * sizeof(float);
}

/* replica_device_setter(ps_tasks=num_ps, ps_strategy=greedy) with
 * byte_size_load_fn, the variables in creation order. */
static rf_status place(pp_model *m, size_t num_ps)
{
    rf_replica_device_setter_options o;
    rf_replica_device_setter_options_init(&o);
    o.ps_tasks = (int)num_ps;
    o.strategy = RF_PS_GREEDY;
    rf_replica_device_setter *s = NULL;
    rf_status st = rf_replica_device_setter_create(&o, &s);
    for (size_t i = 0; st == RF_OK && i < m->nvars; i++) {
        pp_var *v = &m->v[i];
        rf_op_desc d = {.type = "VariableV2",
                        .name = v->name,
                        .device = "",
                        .bytes = v->bytes};
        char dev[RF_DEVICE_STRING_MAX];
        rf_device_spec spec;
        st = rf_replica_device_setter_fn(s, &d, dev, sizeof dev);
        if (st == RF_OK)
            st = rf_device_spec_parse(dev, &spec);
        if (st == RF_OK && (strcmp(spec.job, "ps") || spec.task < 0 ||
                            (size_t)spec.task >= num_ps))
            st = rf_error_set(RF_ERR_INVALID_ARG,
                              "placement put '%s' on '%s', not a ps task",
                              v->name, dev);
        if (st == RF_OK)
            v->ps_task = (size_t)spec.task;
    }
    rf_replica_device_setter_destroy(s);
    return st;
}

rf_status pp_model_build(uint64_t size, size_t num_ps, pp_model *m)
{
    *m = (pp_model){0};
    if (size < 4096 || num_ps != 2)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "model: size %llu below 4096 or %zu ps tasks",
                            (unsigned long long)size, num_ps);
    int64_t w = (int64_t)sqrt((double)size / 16.0);
    while (16 * w * w > (int64_t)size)
        w--;
    while (16 * (w + 1) * (w + 1) <= (int64_t)size)
        w++;
    m->width = w;
    const char *layers[4] = {"dense", "dense_1", "dense_2", "dense_3"};
    char name[32];
    for (int l = 0; l < 4; l++) {
        snprintf(name, sizeof name, "%s/kernel", layers[l]);
        add_var(m, name, w, w, 2);
        snprintf(name, sizeof name, "%s/bias", layers[l]);
        add_var(m, name, w, 0, 1);
    }
    add_var(m, "logits/kernel", w, 10, 2);
    add_var(m, "logits/bias", 10, 0, 1);
    for (size_t i = 0; i < m->nvars; i++) {
        m->v[i].off = m->span;
        m->span += (m->v[i].bytes + ALIGN - 1) / ALIGN * ALIGN;
        m->bytes += m->v[i].bytes;
    }
    rf_status st = place(m, num_ps);
    for (size_t i = 0; st == RF_OK && i < m->nvars; i++) {
        m->ps_bytes[m->v[i].ps_task] += m->v[i].bytes;
        m->ps_vars[m->v[i].ps_task]++;
    }
    return st;
}

rf_ps_shard_spec pp_model_spec(const pp_model *m, size_t i,
                               const rf_optim_config *optim)
{
    const pp_var *v = &m->v[i];
    return (rf_ps_shard_spec){.name = v->name,
                              .dtype = RF_F32,
                              .shape = rf_shape_make(v->rank, v->dims),
                              .trainable = true,
                              .optim = *optim};
}

void pp_fill(const pp_model *m, unsigned char *buf, int gradients)
{
    for (size_t i = 0; i < m->nvars; i++) {
        float *p = (float *)(void *)(buf + m->v[i].off);
        size_t n = m->v[i].bytes / sizeof(float);
        for (size_t e = 0; e < n; e++)
            p[e] = gradients ? pp_gradient(i, e) : pp_initial(i, e);
    }
}

/* Elements [e0, e0+n) of variable i after `pushes` applies, into val. */
static rf_status expect_chunk(size_t i, size_t e0, size_t n,
                              const rf_optim_config *optim, unsigned pushes,
                              float *val, float *grad, float *slots[])
{
    rf_optim_layout lay;
    rf_optim_scalars sc;
    rf_status st = rf_optim_layout_get(optim, &lay);
    if (st == RF_OK)
        st = rf_optim_scalars_init(optim, &sc);
    for (unsigned s = 0; st == RF_OK && s < lay.num_slots; s++)
        st = rf_optim_slot_init(optim, s, slots[s], n);
    for (size_t e = 0; e < n; e++) {
        val[e] = pp_initial(i, e0 + e);
        grad[e] = pp_gradient(i, e0 + e);
    }
    for (unsigned k = 0; st == RF_OK && k < pushes; k++) {
        st = rf_optim_apply(optim, val, slots, grad, n, &sc);
        if (st == RF_OK)
            st = rf_optim_finish_step(optim, &sc);
    }
    return st;
}

rf_status pp_verify(const pp_model *m, const unsigned char *buf,
                    const rf_optim_config *optim, unsigned pushes)
{
    float *work = malloc((2 + RF_OPTIM_MAX_SLOTS) * CHUNK * sizeof(float));
    if (!work)
        return rf_error_set(RF_ERR_NO_MEMORY, "check: out of memory");
    float *val = work, *grad = work + CHUNK;
    float *slots[RF_OPTIM_MAX_SLOTS];
    for (unsigned s = 0; s < RF_OPTIM_MAX_SLOTS; s++)
        slots[s] = work + (2 + s) * CHUNK;
    rf_status st = RF_OK;
    for (size_t i = 0; st == RF_OK && i < m->nvars; i++) {
        const float *got = (const float *)(const void *)(buf + m->v[i].off);
        size_t n = m->v[i].bytes / sizeof(float);
        for (size_t e0 = 0; st == RF_OK && e0 < n; e0 += CHUNK) {
            size_t c = n - e0 < CHUNK ? n - e0 : CHUNK;
            st = expect_chunk(i, e0, c, optim, pushes, val, grad, slots);
            if (st != RF_OK || memcmp(val, got + e0, c * sizeof(float)) == 0)
                continue;
            size_t e = 0;
            while (memcmp(&val[e], &got[e0 + e], sizeof(float)) == 0)
                e++;
            st = rf_error_set(RF_ERR_CORRUPT,
                              "'%s' element %zu is %.9g, expected %.9g (the "
                              "initial value %.9g with the optimizer applied "
                              "%u times)",
                              m->v[i].name, e0 + e, (double)got[e0 + e],
                              (double)val[e], (double)pp_initial(i, e0 + e),
                              pushes);
        }
    }
    free(work);
    return st;
}
