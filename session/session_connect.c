/* session/session_connect.c: the session's remote variables: connecting to
 * every ps task, one registered block holding every variable's values
 * (their graph storage) and gradient staging, creating the shards (chief)
 * or looking them up, the chief's initialisation (restore, the push
 * strategy's init_shards, values and init flags) or the others' wait for
 * it, the prepared per-step reads, each table's lookup way
 * (session_lookup_way.c), and pulling everything back into the graph at
 * the end of the job. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "session/session_internal.h"

#define ALIGN64(x) (((x) + 63u) & ~(size_t)63u)

#define DEFAULT_INIT_TIMEOUT_MS 120000
#define INIT_POLL_MS            100

static rf_ps_xfer values_xfer(const rf_session *s, const sess_var *v)
{
    return (rf_ps_xfer){.var = v->shard,
                        .field = RF_PS_FIELD_VALUES,
                        .buf = rf_variable_data(v->var),
                        .len = rf_variable_bytes(v->var),
                        .mr = v->table ? v->whole_mr : s->block.mem_mr};
}

/* A table's whole values move only at the chief's initialisation and the
 * final pull: its graph storage is registered just for those (on sock and
 * shm registering touches no page; the worker's steps never use it). */
static rf_status register_whole(rf_session *s, sess_var *v)
{
    if (v->whole_mr)
        return RF_OK;
    rf_status st =
        rf_ps_client_register(s->client, rf_variable_data(v->var),
                              rf_variable_bytes(v->var), &v->whole_mr);
    if (st != RF_OK)
        return rf_error_set(st, "registering the table '%s' (%zu bytes): %s",
                            rf_node_name(v->var), rf_variable_bytes(v->var),
                            rf_error_message());
    return RF_OK;
}

static void deregister_whole(rf_session *s)
{
    for (size_t i = 0; i < s->nv; i++)
        if (s->v[i].whole_mr) {
            rf_ps_client_deregister(s->client, s->v[i].whole_mr);
            s->v[i].whole_mr = NULL;
        }
}

rf_ps_xfer sess_grad_xfer(const rf_session *s, size_t i)
{
    const sess_var *v = &s->v[i];
    return (rf_ps_xfer){.var = v->shard,
                        .field = RF_PS_FIELD_VALUES,
                        .buf = v->grad_buf,
                        .len = v->info.values_bytes,
                        .mr = s->block.mem_mr};
}

/* One registered block: each dense variable's values, then its gradient's
 * staging buffer, 64-byte aligned, on the worker's NUMA node; then the
 * tables' push staging (session_rows.c; the lookups' gathered rows have a
 * block of their own, sess_rows_register_gathered). */
static rf_status register_storage(rf_session *s)
{
    rf_server *sv = s->server;
    size_t len = 0;
    for (size_t i = 0; i < s->nv; i++)
        if (!s->v[i].table)
            len += 2 * ALIGN64(rf_variable_bytes(s->v[i].var));
    size_t dense_len = len;
    len += sess_rows_bytes(s);
    if (len == 0)
        len = 64;
    if (rf_topology_alloc(sv->topo, &sv->binding, len,
                          (void **)&s->block.mem) != RF_OK)
        return rf_error_set(RF_ERR_NO_MEMORY,
                            "allocating %zu bytes of variable storage: %s", len,
                            rf_error_message());
    s->block.mem_len = len;
    rf_status st =
        rf_ps_client_register(s->client, s->block.mem, len, &s->block.mem_mr);
    if (st != RF_OK)
        return rf_error_set(st, "registering %zu bytes of variable storage: %s",
                            len, rf_error_message());
    size_t off = 0;
    sess_rows_place(s, s->block.mem + dense_len);
    for (size_t i = 0; i < s->nv; i++) {
        sess_var *v = &s->v[i];
        if (v->table)
            continue;
        size_t bytes = rf_variable_bytes(v->var);
        /* keeps the initial value (the chief writes it to the ps) */
        st = rf_variable_set_storage(v->var, s->block.mem + off, bytes, true);
        if (st != RF_OK)
            return rf_error_set(st, "%s: %s", rf_node_name(v->var),
                                rf_error_message());
        v->in_block = true;
        off += ALIGN64(bytes);
        v->grad_buf = (float *)(void *)(s->block.mem + off);
        off += ALIGN64(bytes);
    }
    return RF_OK;
}

static rf_status create_or_look_up(rf_session *s)
{
    for (size_t i = 0; i < s->nv; i++) {
        sess_var *v = &s->v[i];
        rf_ps_shard_spec spec = sess_spec(s, v);
        rf_status st =
            s->task.chief
                ? rf_ps_create(s->client, v->ps_task, &spec, &v->shard)
                : rf_ps_lookup(s->client, v->ps_task, &spec, &v->shard);
        if (st != RF_OK)
            return rf_error_set(st, "%s '%s' on ps task %zu: %s",
                                s->task.chief ? "creating" : "looking up",
                                rf_node_name(v->var), v->ps_task,
                                rf_error_message());
        rf_ps_var_get_info(v->shard, &v->info);
        snprintf(v->args, sizeof v->args, "\"bytes\":%zu,\"ps_task\":%zu",
                 v->info.values_bytes, v->ps_task);
    }
    return RF_OK;
}

/* The chief's name, what a non-chief's wait waits for. */
static void chief_name(const rf_session *s, char *buf, size_t len)
{
    const rf_cluster_task *c = rf_cluster_chief(s->server->cluster);
    if (c)
        snprintf(buf, len, "/job:%s/task:%d", c->job, c->index);
    else
        snprintf(buf, len, "the chief");
}

static int attempt_or(const rf_session *s, int ms, int dflt)
{
    if (s->ready.attempt_ms > 0 && (ms <= 0 || ms > s->ready.attempt_ms))
        return s->ready.attempt_ms;
    return ms > 0 ? ms : dflt;
}

/* The chief: when re-creating a lost session (prefer_adopt) and every
 * shard is still initialised (no ps restarted: a network failure, a
 * stopped ps), adopt them as they are; else restore the newest checkpoint
 * if there is one; else, when every shard is initialised already (the ps
 * tasks kept the job while the chief process restarted), adopt them; else
 * write the variables' values (the graph's: initial values, or after a
 * recovery the last values this process read; a table the graph left
 * uninitialised: its initial rows, in chunks, sess_tables_init) and, if
 * the graph's global_step is ahead of ps 0's (ps 0 restarted), that too. */
static rf_status chief_init(rf_session *s, rf_ps_xfer *x, rf_ps_var **vars)
{
    for (size_t i = 0; i < s->nv; i++)
        vars[i] = s->v[i].shard;
    bool all_initialised = rf_ps_wait_initialized(s->client, vars, s->nv,
                                                  INIT_POLL_MS, 0) == RF_OK;
    if (all_initialised && s->ready.prefer_adopt) {
        s->ckpt.init_how = "adopted";
        return RF_OK;
    }
    bool restored = false;
    rf_status st = sess_restore(s, &restored); /* into all but the values */
    if (st != RF_OK)
        return st;
    s->ckpt.init_how = "restored";
    if (!restored && all_initialised) {
        s->ckpt.init_how = "adopted";
        return RF_OK;
    }
    if (!restored) {
        s->ckpt.init_how = "initialised";
        int64_t have = 0,
                mine = *(int64_t *)rf_variable_data(s->nodes.global_step_var);
        st = rf_ps_global_step_read(s->client, &have);
        if (st == RF_OK && mine > have)
            st = rf_ps_global_step_write(s->client, mine);
        if (st != RF_OK)
            return rf_error_set(st, "initialising global_step: %s",
                                rf_error_message());
    }
    /* restored: every table's values and slots are on its shards now
     * (sess_tables_restore), and the graph's storage holds none of them */
    for (size_t i = 0; i < s->nv && restored; i++)
        if (s->v[i].table) {
            s->v[i].rows_init = true;
            s->v[i].restored = true;
        }
    st =
        sess_push_init_shards(s); /* sync: the shards' step, before the flags */
    if (st == RF_OK)
        st = sess_tables_init(s); /* rows_init and not restored: their flags */
    if (st != RF_OK)
        return st;
    size_t nx = 0, nr = 0;
    for (size_t i = 0; i < s->nv; i++) {
        if (!s->v[i].rows_init)
            x[nx++] = values_xfer(s, &s->v[i]);
        else if (s->v[i].restored)
            vars[nr++] = s->v[i].shard;
    }
    st = rf_ps_init_values(s->client, x, nx);
    if (st == RF_OK)
        st = rf_ps_mark_initialized(s->client, vars, nr);
    if (st != RF_OK)
        rf_error_set(st, "initialising the variables: %s", rf_error_message());
    return st;
}

static rf_status init_or_wait(rf_session *s)
{
    rf_ps_xfer *x = calloc(s->nv, sizeof *x);
    rf_ps_var **vars = calloc(s->nv, sizeof *vars);
    rf_status st = RF_ERR_NO_MEMORY;
    if (!x || !vars) {
        rf_error_set(st, "session: out of memory");
        goto out;
    }
    /* The chief writes a table from its graph's storage only if the graph
     * initialised it; else from its initial rows (rows_init). */
    for (size_t i = 0; i < s->nv && s->task.chief; i++) {
        sess_var *v = &s->v[i];
        v->rows_init = v->table && !rf_variable_is_initialized(v->var);
        if (v->table && !v->rows_init && (st = register_whole(s, v)) != RF_OK)
            goto out;
    }
    for (size_t i = 0; i < s->nv; i++)
        vars[i] = s->v[i].shard;
    if (s->task.chief) {
        st = chief_init(s, x, vars);
        if (st != RF_OK)
            goto out;
    } else {
        int timeout =
            attempt_or(s, s->opt.init_timeout_ms, DEFAULT_INIT_TIMEOUT_MS);
        st = rf_ps_wait_initialized(s->client, vars, s->nv, INIT_POLL_MS,
                                    timeout);
        if (st != RF_OK) {
            if (st == RF_ERR_TIMEOUT)
                chief_name(s, s->ready.waiting_for,
                           sizeof s->ready.waiting_for);
            rf_error_set(st, "waiting for the chief to initialise: %s",
                         rf_error_message());
            goto out;
        }
    }
    /* A table's graph variable stands for its shard, initialised on the
     * ps now: the lookups read the shard's rows, never the graph storage
     * (which a non-chief may never have initialised, so its pages stay
     * untouched). */
    for (size_t i = 0; i < s->nv; i++)
        if (s->v[i].table)
            rf_variable_mark_initialized(s->v[i].var, true);
    /* the step's READ of every dense shard (a table's rows are read by
     * its lookups) */
    s->block.nreads = 0;
    for (size_t i = 0; i < s->nv; i++)
        if (!s->v[i].table) {
            s->v[i].read_ix = s->block.nreads;
            x[s->block.nreads++] = values_xfer(s, &s->v[i]);
        }
    st = rf_ps_read_set_create(s->client, x, s->block.nreads, &s->block.reads);
    if (st != RF_OK)
        rf_error_set(st, "preparing the reads: %s", rf_error_message());
out:
    free(x);
    free(vars);
    return st;
}

rf_status sess_connect(rf_session *s)
{
    size_t n = (size_t)s->task.num_ps;
    const char **addrs = calloc(n, sizeof *addrs);
    if (!addrs)
        return rf_error_set(RF_ERR_NO_MEMORY, "session: out of memory");
    const rf_cluster *c = s->server->cluster;
    for (size_t i = 0; i < n; i++)
        addrs[i] = rf_cluster_task_address(c, "ps", (int)i);
    rf_ps_client_options o = {.client_id = (uint32_t)s->task.self->worker_id,
                              .is_chief = s->task.chief,
                              .secret = s->server->secret,
                              .connect_timeout_ms =
                                  attempt_or(s, s->opt.connect_timeout_ms, 0),
                              .op_timeout_ms = s->opt.op_timeout_ms,
                              .lookup_timeout_ms = attempt_or(s, 0, 0),
                              .unreachable = &s->ready.unreachable_ps};
    rf_status st =
        rf_ps_client_connect(s->server->fabric, addrs, n, &o, &s->client);
    free(addrs);
    if (st != RF_OK) {
        if (st == RF_ERR_UNAVAILABLE && s->ready.unreachable_ps >= 0)
            snprintf(s->ready.waiting_for, sizeof s->ready.waiting_for,
                     "/job:ps/task:%d", s->ready.unreachable_ps);
        return st;
    }
    st = register_storage(s);
    if (st == RF_OK)
        st = sess_rows_register_gathered(s);
    if (st == RF_OK) {
        st = create_or_look_up(s);
        if (st == RF_ERR_TIMEOUT &&
            !s->task.chief) /* a shard not created yet */
            chief_name(s, s->ready.waiting_for, sizeof s->ready.waiting_for);
    }
    if (st == RF_OK)
        st = init_or_wait(s);
    if (st == RF_OK) /* the tables are initialised: measure their ways */
        st = sess_lookup_ways_choose(s);
    return st;
}

/* Slots and beta powers go through a registered block, then into the
 * graph's own slot variables. */
static rf_status pull_slots(rf_session *s)
{
    size_t len = 64;
    for (size_t i = 0; i < s->nv; i++)
        len += s->v[i].apply.num_slots * ALIGN64(s->v[i].info.values_bytes);
    unsigned char *buf = NULL;
    rf_mr *mr = NULL;
    rf_ps_xfer *x = calloc(s->nv * (RF_OPTIM_MAX_SLOTS + 1) + 1, sizeof *x);
    rf_status st = RF_ERR_NO_MEMORY;
    if (!x || posix_memalign((void **)&buf, 64, len) != 0) {
        rf_error_set(st, "session: out of memory");
        goto out;
    }
    st = rf_ps_client_register(s->client, buf, len, &mr);
    if (st != RF_OK) {
        rf_error_set(st, "registering %zu bytes: %s", len, rf_error_message());
        goto out;
    }
    size_t nx = 0, off = 64;
    for (size_t i = 0; i < s->nv; i++) {
        sess_var *v = &s->v[i];
        for (unsigned k = 0; k < v->apply.num_slots; k++) {
            x[nx++] = (rf_ps_xfer){.var = v->shard,
                                   .field = RF_PS_FIELD_SLOT0 + (int)k,
                                   .buf = buf + off,
                                   .len = v->info.values_bytes,
                                   .mr = mr};
            off += ALIGN64(v->info.values_bytes);
        }
    }
    /* Adam: TensorFlow keeps one pair of beta powers, colocated with the
     * first variable; rdmaflow keeps one per shard (docs/DESIGN.md,
     * Departures) and gives the graph the first variable's. */
    bool powers = s->v[0].apply.beta1_power != NULL;
    if (powers)
        x[nx++] = (rf_ps_xfer){.var = s->v[0].shard,
                               .field = RF_PS_FIELD_SCALARS,
                               .buf = buf,
                               .len = 8,
                               .mr = mr};
    st = rf_ps_read(s->client, x, nx);
    if (st != RF_OK) {
        rf_error_set(st, "reading the optimizer slots: %s", rf_error_message());
        goto out;
    }
    off = 64;
    for (size_t i = 0; i < s->nv; i++) {
        sess_var *v = &s->v[i];
        for (unsigned k = 0; k < v->apply.num_slots; k++) {
            memcpy(rf_variable_data(v->apply.slots[k]), buf + off,
                   v->info.values_bytes);
            off += ALIGN64(v->info.values_bytes);
        }
    }
    if (powers) {
        memcpy(rf_variable_data(s->v[0].apply.beta1_power), buf, 4);
        memcpy(rf_variable_data(s->v[0].apply.beta2_power), buf + 4, 4);
    }
out:
    if (mr)
        rf_ps_client_deregister(s->client, mr);
    free(buf);
    free(x);
    return st;
}

rf_status sess_pull_all(rf_session *s, bool slots)
{
    rf_status st = rf_ps_read_set_post(s->block.reads);
    rf_status wst = rf_ps_read_set_wait_all(s->block.reads);
    if (st == RF_OK)
        st = wst;
    for (size_t i = 0; i < s->nv && st == RF_OK; i++) {
        sess_var *v = &s->v[i];
        if (!v->table || (st = register_whole(s, v)) != RF_OK)
            continue;
        rf_ps_xfer x = values_xfer(s, v);
        st = rf_ps_read(s->client, &x, 1);
        v->pulled = st == RF_OK;
    }
    if (st != RF_OK)
        return rf_error_set(st, "reading the variables: %s",
                            rf_error_message());
    int64_t gs = 0;
    st = rf_ps_global_step_read(s->client, &gs);
    if (st != RF_OK)
        return rf_error_set(st, "reading global_step: %s", rf_error_message());
    *(int64_t *)rf_variable_data(s->nodes.global_step_var) = gs;
    s->run.global_step = gs;
    return slots ? pull_slots(s) : RF_OK;
}

/* The graph's variables get buffers of their own again, keeping their last
 * values, so the registered block can go; false if one could not (the
 * block must then stay, or the variable would point into freed memory). */
static bool give_back_storage(rf_session *s)
{
    bool all = true;
    for (size_t i = 0; i < s->nv; i++) {
        if (!s->v[i].in_block)
            continue; /* its storage never pointed into the block */
        if (rf_variable_own_storage(s->v[i].var) == RF_OK) {
            s->v[i].in_block = false;
        } else {
            RF_LOG_WARN("session: %s; keeping the variables' registered "
                        "block (%zu bytes) alive",
                        rf_error_message(), s->block.mem_len);
            all = false;
        }
    }
    return all;
}

void sess_disconnect(rf_session *s)
{
    /* A table the session initialised on the ps and never pulled: the
     * graph's storage holds none of its values (a session created again
     * initialises or restores it as before). */
    for (size_t i = 0; i < s->nv; i++)
        if (s->v[i].rows_init && !s->v[i].pulled)
            rf_variable_mark_initialized(s->v[i].var, false);
    rf_ps_read_set_destroy(s->block.reads);
    s->block.reads = NULL;
    if (s->client)
        deregister_whole(s);
    rf_ps_client_close(s->client); /* deregisters mem_mr, gathered_mr */
    s->client = NULL;
    sess_rows_free_gathered(s);
    if (s->block.mem && give_back_storage(s))
        rf_topology_free(s->server->topo, s->block.mem, s->block.mem_len);
    s->block.mem = NULL;
}
