/* tests/integration/ps/cluster.c: the cluster fixture of the cases (ps helper
 * processes plus a chief client) and small variable helpers. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "tests/integration/ps/cases.h"

void pt_cluster_start(pt_cluster *c, size_t nps)
{
    memset(c, 0, sizeof *c);
    CHECK(nps <= PT_MAX_PS, "too many ps");
    c->n = nps;
    for (size_t i = 0; i < nps; i++) {
        pt_ps_start(&c->ps[i], (int)i, 0);
        c->addrs[i] = pt_addr(c->ps[i].port);
    }
    c->f = pt_fabric();
    c->chief = pt_client(c->f, c->addrs, nps, 0, true);
}

void pt_cluster_stop(pt_cluster *c)
{
    CHECK_OK(rf_ps_shutdown(c->chief));
    for (size_t i = 0; i < c->n; i++) {
        char rest[128];
        rft_expect(&c->ps[i].child, "EXIT ", rest, sizeof rest, rft_ms(10000));
        CHECK(strcmp(rest, "RF_OK") == 0, "ps %zu exited with %s", i, rest);
        rft_wait_ok(&c->ps[i].child, rft_ms(10000));
    }
    rf_ps_client_close(c->chief);
    rf_fabric_close(c->f);
}

rf_ps_var *pt_make_var(rf_ps_client *c, size_t ps, const rf_ps_shard_spec *spec,
                       uint64_t seed, float *vals)
{
    rf_ps_var *v = NULL;
    CHECK_OK(rf_ps_create(c, ps, spec, &v));
    size_t n = (size_t)rf_shape_numel(&spec->shape);
    pt_buf b;
    pt_buf_alloc(c, &b, n);
    pt_fill(b.p, n, seed);
    if (vals)
        memcpy(vals, b.p, n * sizeof(float));
    rf_ps_xfer x = {.var = v,
                    .field = RF_PS_FIELD_VALUES,
                    .buf = b.p,
                    .len = n * sizeof(float),
                    .mr = b.mr};
    CHECK_OK(rf_ps_init_values(c, &x, 1));
    rf_ps_client_deregister(c, b.mr);
    return v;
}

float *pt_read_field(rf_ps_client *c, rf_ps_var *v, rf_ps_field field, size_t n)
{
    pt_buf b;
    pt_buf_alloc(c, &b, n);
    rf_ps_xfer x = {.var = v,
                    .field = field,
                    .buf = b.p,
                    .len = n * sizeof(float),
                    .mr = b.mr};
    CHECK_OK(rf_ps_read(c, &x, 1));
    rf_ps_client_deregister(c, b.mr);
    float *copy = malloc((n ? n : 1) * sizeof(float));
    CHECK(copy, "out of memory");
    memcpy(copy, b.p, n * sizeof(float));
    return copy;
}
