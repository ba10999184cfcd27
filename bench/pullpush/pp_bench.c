/* bench/pullpush/pp_bench.c: the measuring client of rf-bench-pullpush
 * (pp_bench.h). Per round, in an order rotated by one each round: memcpy
 * (the model's bytes, one call, from the gradient buffer into the pull
 * buffer), pull (a prepared read set of every variable, posted and waited
 * for), push_ps (rf_ps_push_inbox of every gradient and rf_ps_push_wait:
 * until every ps acknowledged its apply) and push_worker (rf_ps_update_rmw:
 * READ, local apply, WRITE back, done on return). Every push
 * applies the same gradients, so the final check knows the values. */
#include "pp_bench.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pp_report.h"
#include "pp_wire.h"
#include "rdmaflow/clock.h"
#include "rdmaflow/fabric.h"
#include "rdmaflow/ps.h"

/* apply=worker reads and writes back the record from its beta powers (ps.h
 * record layout, offset 32) to its end. */
#define PP_RMW_OFF 32u

typedef struct pp_client {
    const pp_opts *o;
    const pp_model *m;
    rf_fabric *f;
    rf_ps_client *c;
    unsigned char *vals, *grads; /* pull buffer, gradient buffer */
    rf_mr *vals_mr, *grads_mr;
    rf_ps_var *var[PP_MAX_VARS];
    rf_ps_xfer pull[PP_MAX_VARS], push[PP_MAX_VARS];
    rf_ps_read_set *rs;
    unsigned pushes; /* applies every variable has had */
} pp_client;

static int fail(const char *what)
{
    fprintf(stderr, "rf-bench-pullpush: %s: %s\n", what, rf_error_message());
    return 1;
}

static rf_status do_pull(pp_client *k)
{
    rf_status st = rf_ps_read_set_post(k->rs);
    rf_status w = rf_ps_read_set_wait_all(k->rs);
    return st != RF_OK ? st : w;
}

/* push_ps: into the inbox, until acknowledged. */
static rf_status push_inbox(pp_client *k)
{
    rf_status st = rf_ps_push_inbox(k->c, k->push, k->m->nvars);
    if (st == RF_OK)
        st = rf_ps_push_wait(k->c);
    if (st == RF_OK)
        k->pushes++;
    return st;
}

/* push_worker: the read-modify-write, done on return. */
static rf_status push_rmw(pp_client *k)
{
    rf_status st = rf_ps_update_rmw(k->c, k->push, k->m->nvars);
    if (st == RF_OK)
        k->pushes++;
    return st;
}

static rf_status do_op(pp_client *k, pp_op op)
{
    switch (op) {
    case PP_MEMCPY:
        memcpy(k->vals, k->grads, k->m->bytes);
        return RF_OK;
    case PP_PULL:
        return do_pull(k);
    case PP_PUSH_PS:
        return push_inbox(k);
    case PP_PUSH_WORKER:
        return push_rmw(k);
    default:
        return rf_error_set(RF_ERR_INVALID_ARG, "operation %d", (int)op);
    }
}

/* Pulls into a buffer filled with 0xff first (so stale data cannot pass)
 * and compares with what k->pushes applies give. */
static int check(pp_client *k, const char *when)
{
    memset(k->vals, 0xff, k->m->span);
    if (do_pull(k) != RF_OK)
        return fail("pull for the check");
    if (pp_verify(k->m, k->vals, &k->o->optim, k->pushes) != RF_OK) {
        fprintf(stderr, "rf-bench-pullpush: check %s failed: %s\n", when,
                rf_error_message());
        return 1;
    }
    return 0;
}

static void wire_bytes(pp_client *k, pp_results *r)
{
    for (size_t i = 0; i < k->m->nvars; i++) {
        rf_ps_var_info info;
        rf_ps_var_get_info(k->var[i], &info);
        /* READ of the values */
        r->wire[PP_PULL] += info.values_bytes;
        /* WRITE_WITH_IMM of the gradient, the ps's 8-byte ack */
        r->wire[PP_PUSH_PS] += info.values_bytes + 8;
        /* READ and WRITE of the record from its scalars, FETCH_AND_ADD of
         * the version */
        r->wire[PP_PUSH_WORKER] += 2 * (info.record_bytes - PP_RMW_OFF) + 8;
    }
}

static int setup(pp_client *k, const uint16_t *ports)
{
    const pp_opts *o = k->o;
    const pp_model *m = k->m;
    rf_fabric_attr attr = {.bind_addr = o->host};
    if (rf_fabric_open(o->provider, &attr, &k->f) != RF_OK)
        return fail("fabric");
    char addr[PP_PS_TASKS][300];
    const char *addrs[PP_PS_TASKS];
    for (int i = 0; i < PP_PS_TASKS; i++) {
        bool v6 = strchr(o->host, ':') != NULL; /* "[v6]:port" */
        snprintf(addr[i], sizeof addr[i], "%s%s%s:%u", v6 ? "[" : "", o->host,
                 v6 ? "]" : "", ports[i]);
        addrs[i] = addr[i];
    }
    rf_ps_client_options co = {.client_id = 0,
                               .is_chief = true,
                               .connect_timeout_ms = o->timeout_s * 1000,
                               .op_timeout_ms = o->timeout_s * 1000};
    if (rf_ps_client_connect(k->f, addrs, PP_PS_TASKS, &co, &k->c) != RF_OK)
        return fail("connect to the ps tasks");
    size_t len = (m->span + 4095) / 4096 * 4096;
    k->vals = aligned_alloc(4096, len);
    k->grads = aligned_alloc(4096, len);
    if (!k->vals || !k->grads) {
        fprintf(stderr, "rf-bench-pullpush: no memory for 2 x %zu bytes\n",
                len);
        return 1;
    }
    pp_fill(m, k->vals, 0);
    pp_fill(m, k->grads, 1);
    if (rf_ps_client_register(k->c, k->vals, len, &k->vals_mr) != RF_OK ||
        rf_ps_client_register(k->c, k->grads, len, &k->grads_mr) != RF_OK)
        return fail("register the buffers");
    for (size_t i = 0; i < m->nvars; i++) {
        rf_ps_shard_spec spec = pp_model_spec(m, i, &o->optim);
        if (rf_ps_create(k->c, m->v[i].ps_task, &spec, &k->var[i]) != RF_OK)
            return fail("create the shards");
        k->pull[i] = (rf_ps_xfer){.var = k->var[i],
                                  .field = RF_PS_FIELD_VALUES,
                                  .buf = k->vals + m->v[i].off,
                                  .len = m->v[i].bytes,
                                  .mr = k->vals_mr};
        k->push[i] = k->pull[i];
        k->push[i].buf = k->grads + m->v[i].off;
        k->push[i].mr = k->grads_mr;
    }
    if (rf_ps_init_values(k->c, k->pull, m->nvars) != RF_OK)
        return fail("initialise the shards");
    if (rf_ps_read_set_create(k->c, k->pull, m->nvars, &k->rs) != RF_OK)
        return fail("prepare the pull");
    return 0;
}

static int rounds(pp_client *k, pp_results *r)
{
    const pp_opts *o = k->o;
    for (int round = 0; round < o->warmup + o->rounds; round++) {
        int slot = round - o->warmup;
        for (int j = 0; j < PP_OPS; j++) {
            pp_op op = (pp_op)((round + j) % PP_OPS);
            uint64_t b0 = 0, b1 = 0;
            size_t socks = 0;
            if (r->have_tcp &&
                pp_tcp_bytes(r->ports, PP_PS_TASKS, &b0, &socks) != RF_OK)
                return fail("TCP byte count");
            uint64_t t0 = rf_now_ns();
            if (do_op(k, op) != RF_OK)
                return fail(pp_op_names[op]);
            uint64_t t1 = rf_now_ns();
            if (r->have_tcp &&
                pp_tcp_bytes(r->ports, PP_PS_TASKS, &b1, &socks) != RF_OK)
                return fail("TCP byte count");
            if (slot >= 0) {
                r->t_s[op][slot] = (double)(t1 - t0) * 1e-9;
                r->tcp[op][slot] = (double)(b1 - b0);
            }
        }
    }
    return 0;
}

static int measure(pp_client *k, pp_results *r)
{
    const pp_model *m = k->m;
    r->provider = rf_fabric_provider(k->f);
    r->rounds = k->o->rounds;
    r->have_tcp = strcmp(r->provider, "sock") == 0;
    wire_bytes(k, r);
    if (r->have_tcp) {
        uint64_t b;
        size_t socks = 0;
        if (pp_tcp_bytes(r->ports, PP_PS_TASKS, &b, &socks) != RF_OK)
            return fail("TCP byte count");
        if (socks != PP_PS_TASKS) {
            fprintf(stderr,
                    "rf-bench-pullpush: found %zu TCP connections to the ps "
                    "ports, expected %d\n",
                    socks, PP_PS_TASKS);
            return 1;
        }
    }
    pp_report_banner(k->o, m, r);
    fflush(stdout);
    /* The pull returns the initial values; one push of each mode applies
     * once each. */
    if (check(k, "after initialisation"))
        return 1;
    if (push_inbox(k) != RF_OK)
        return fail("push_ps");
    if (push_rmw(k) != RF_OK)
        return fail("push_worker");
    if (check(k, "after one push of each mode"))
        return 1;
    if (rounds(k, r))
        return 1;
    if (k->o->inject_extra_push) {
        unsigned known = k->pushes;
        if (push_inbox(k) != RF_OK)
            return fail("push_ps");
        k->pushes = known;
        printf("injected: one apply=ps push the check does not count\n");
    }
    pp_report_table(m, r);
    if (check(k, "after the rounds"))
        return 1;
    printf("check: ok (pulls returned the initial values; after one push "
           "of each mode and after all %u pushes every variable equals the "
           "initial values with the optimizer applied once per push, "
           "bitwise)\n",
           k->pushes);
    return 0;
}

int pp_bench_run(const pp_opts *o, const pp_model *m,
                 const uint16_t ports[PP_PS_TASKS])
{
    pp_client k = {.o = o, .m = m};
    pp_results *r = calloc(1, sizeof *r);
    if (!r) {
        fprintf(stderr, "rf-bench-pullpush: out of memory\n");
        return 1;
    }
    memcpy(r->ports, ports, sizeof r->ports);
    int rc = setup(&k, ports);
    if (rc == 0)
        rc = measure(&k, r);
    if (rc == 0 && rf_ps_shutdown(k.c) != RF_OK)
        rc = fail("shut the ps tasks down");
    rf_ps_read_set_destroy(k.rs);
    if (k.c)
        rf_ps_client_close(k.c);
    if (k.f)
        rf_fabric_close(k.f);
    free(k.vals);
    free(k.grads);
    free(r);
    return rc;
}
