/* tests/integration/ps/case_oracle.c: the data plane's correctness oracle
 * (DESIGN.md section 4): one worker pulling, computing gradients from what
 * it pulled and pushing, over 2 ps tasks, must leave bitwise the values,
 * optimizer slots and beta powers that rf_optim_apply gives locally with
 * TensorFlow's schedule (every variable updated, then the shared beta
 * powers advanced once per step), in every apply mode, for every optimizer
 * kind (FTRL with every hyper-parameter set). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/integration/ps/cases.h"

#define NOPT   6
#define NVAR   3
#define NSTEPS 4

typedef struct ovar {
    rf_ps_shard_spec spec;
    char name[32];
    size_t ps, n;
    rf_ps_var *v;
    float *local, *slots[RF_OPTIM_MAX_SLOTS];
    unsigned num_slots;
    pt_buf pull, grad;
} ovar;

static rf_optim_config config(int k)
{
    rf_optim_config c;
    switch (k) {
    case 0:
        rf_optim_defaults(RF_OPTIM_SGD, &c);
        c.learning_rate = 0.1f;
        break;
    case 1:
        rf_optim_defaults(RF_OPTIM_MOMENTUM, &c);
        c.learning_rate = 0.05f;
        c.momentum = 0.9f;
        c.use_nesterov = true;
        break;
    case 2:
        rf_optim_defaults(RF_OPTIM_ADAGRAD, &c);
        c.learning_rate = 0.1f;
        break;
    case 3:
        rf_optim_defaults(RF_OPTIM_ADAM, &c);
        c.learning_rate = 0.01f;
        break;
    case 4:
        rf_optim_defaults(RF_OPTIM_RMSPROP, &c);
        c.learning_rate = 0.01f;
        c.momentum = 0.5f;
        c.centered = true;
        break;
    default: /* ApplyFtrlV2: every FTRL hyper-parameter crosses the wire */
        rf_optim_defaults(RF_OPTIM_FTRL, &c);
        c.learning_rate = 0.1f;
        c.learning_rate_power = -0.6f;
        c.initial_accumulator_value = 0.2f;
        c.l1_regularization_strength = 0.001f;
        c.l2_regularization_strength = 0.5f;
        c.l2_shrinkage_regularization_strength = 0.05f;
        break;
    }
    return c;
}

static void check_same(const float *got, const float *want, size_t n,
                       const char *what, const char *name, int step)
{
    if (memcmp(got, want, n * sizeof(float)) == 0)
        return;
    for (size_t i = 0; i < n; i++)
        CHECK(memcmp(&got[i], &want[i], sizeof(float)) == 0,
              "%s of %s after step %d differs at %zu: ps %.9g, local %.9g",
              what, name, step, i, got[i], want[i]);
}

static void run_oracle(rf_ps_apply_mode mode, bool locking)
{
    pt_cluster cl;
    pt_cluster_start(&cl, 2);
    static const int64_t sizes[NVAR][2] = {{37, 1}, {64, 33}, {1000, 1}};
    ovar vars[NOPT * NVAR];
    rf_optim_scalars scalars[NOPT];
    rf_ps_xfer pulls[NOPT * NVAR], grads[NOPT * NVAR];
    for (int k = 0; k < NOPT; k++) {
        rf_optim_config cfg = config(k);
        CHECK_OK(rf_optim_scalars_init(&cfg, &scalars[k]));
        rf_optim_layout layout;
        CHECK_OK(rf_optim_layout_get(&cfg, &layout));
        for (int j = 0; j < NVAR; j++) {
            ovar *o = &vars[k * NVAR + j];
            memset(o, 0, sizeof *o);
            snprintf(o->name, sizeof o->name, "%s/v%d",
                     rf_optim_kind_name(cfg.kind), j);
            o->ps = (size_t)(j % 2);
            int rank = sizes[j][1] > 1 ? 2 : 1;
            o->spec = (rf_ps_shard_spec){.name = o->name,
                                         .dtype = RF_F32,
                                         .shape = rf_shape_make(rank, sizes[j]),
                                         .trainable = true,
                                         .optim = cfg};
            o->n = (size_t)(sizes[j][0] * sizes[j][1]);
            o->local = malloc(o->n * sizeof(float));
            CHECK(o->local, "out of memory");
            o->v = pt_make_var(cl.chief, o->ps, &o->spec,
                               (uint64_t)(100 + k * NVAR + j), o->local);
            o->num_slots = layout.num_slots;
            for (unsigned s = 0; s < layout.num_slots; s++) {
                o->slots[s] = malloc(o->n * sizeof(float));
                CHECK(o->slots[s], "out of memory");
                CHECK_OK(rf_optim_slot_init(&cfg, s, o->slots[s], o->n));
            }
            pt_buf_alloc(cl.chief, &o->pull, o->n);
            pt_buf_alloc(cl.chief, &o->grad, o->n);
            pulls[k * NVAR + j] = (rf_ps_xfer){.var = o->v,
                                               .field = RF_PS_FIELD_VALUES,
                                               .buf = o->pull.p,
                                               .len = o->n * sizeof(float),
                                               .mr = o->pull.mr};
            grads[k * NVAR + j] = (rf_ps_xfer){.var = o->v,
                                               .field = RF_PS_FIELD_VALUES,
                                               .buf = o->grad.p,
                                               .len = o->n * sizeof(float),
                                               .mr = o->grad.mr};
        }
    }
    const size_t nv = NOPT * NVAR;
    for (int step = 0; step < NSTEPS; step++) {
        CHECK_OK(rf_ps_read(cl.chief, pulls, nv));
        for (size_t i = 0; i < nv; i++) {
            ovar *o = &vars[i];
            check_same(o->pull.p, o->local, o->n, "values", o->name, step);
            for (size_t e = 0; e < o->n; e++)
                o->grad.p[e] = 0.5f * o->pull.p[e] +
                               0.1f * pt_rand((uint64_t)(step * 1000 + i), e);
        }
        CHECK_OK(pt_push(cl.chief, grads, nv, mode, locking));
        if (mode == RF_PS_APPLY_PS)
            CHECK_OK(rf_ps_push_wait(cl.chief));
        for (int k = 0; k < NOPT; k++) {
            rf_optim_config cfg = config(k);
            for (int j = 0; j < NVAR; j++) {
                ovar *o = &vars[k * NVAR + j];
                CHECK_OK(rf_optim_apply(&cfg, o->local, o->slots, o->grad.p,
                                        o->n, &scalars[k]));
            }
            CHECK_OK(rf_optim_finish_step(&cfg, &scalars[k]));
        }
    }
    for (size_t i = 0; i < nv; i++) {
        ovar *o = &vars[i];
        float *got = pt_read_field(cl.chief, o->v, RF_PS_FIELD_VALUES, o->n);
        check_same(got, o->local, o->n, "values", o->name, NSTEPS);
        free(got);
        for (unsigned s = 0; s < o->num_slots; s++) {
            got =
                pt_read_field(cl.chief, o->v,
                              (rf_ps_field)(RF_PS_FIELD_SLOT0 + (int)s), o->n);
            check_same(got, o->slots[s], o->n, "slot", o->name, NSTEPS);
            free(got);
        }
        float *sc = pt_read_field(cl.chief, o->v, RF_PS_FIELD_SCALARS, 2);
        float want[2] = {scalars[i / NVAR].beta1_power,
                         scalars[i / NVAR].beta2_power};
        check_same(sc, want, 2, "beta powers", o->name, NSTEPS);
        free(sc);
        free(o->local);
        for (unsigned s = 0; s < o->num_slots; s++)
            free(o->slots[s]);
    }
    rft_note("%zu variables x %d steps bitwise equal to local training", nv,
             NSTEPS);
    pt_cluster_stop(&cl);
}

void case_oracle_ps(void)
{
    run_oracle(RF_PS_APPLY_PS, false);
}
void case_oracle_worker(void)
{
    run_oracle(RF_PS_APPLY_WORKER, false);
}
void case_oracle_worker_locking(void)
{
    run_oracle(RF_PS_APPLY_WORKER, true);
}
