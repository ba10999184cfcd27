/* ps/ps_client_sync.c: the worker side of sync replicas (see rdmaflow/ps.h
 * and ps/ps_server_sync.c): tagged pushes into the shards' accumulators (the
 * apply=ps push path of ps_client_push.c with the tag WRITE in front), the
 * counts of their acknowledgements, one-sided READs of every shard's sync
 * step and stale count (the publication a worker waits for), the
 * chief's WRITE of the step the accumulators start from, and the chief
 * epoch word on ps task 0 (bumped at each such WRITE, READ by a waiting
 * worker). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ps/ps_client_internal.h"
#include "rdmaflow/status.h"

rf_status rf_ps_push_sync(rf_ps_client *c, const rf_ps_xfer *grads, size_t n,
                          int64_t local_step)
{
    if (!c || (n && !grads))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_push_sync: NULL argument");
    if (local_step < 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_push_sync: local step %lld is negative",
                            (long long)local_step);
    cli_lock(c);
    rf_status st = cli_push_check(c, grads, n, true, true, "rf_ps_push_sync");
    if (st == RF_OK && n)
        st = cli_push_ps(c, grads, n, true, local_step);
    cli_unlock(c);
    return st;
}

void rf_ps_sync_counts(rf_ps_client *c, uint64_t *accepted, uint64_t *stale)
{
    if (!c)
        return;
    cli_lock(c);
    if (accepted)
        *accepted = c->sync_accepted;
    if (stale)
        *stale = c->sync_stale;
    cli_unlock(c);
}

/* Every var usable and a sync-replicas shard. */
static rf_status check_vars(rf_ps_client *c, rf_ps_var *const *vars, size_t n,
                            const char *what)
{
    for (size_t i = 0; i < n; i++) {
        rf_ps_var *v = vars[i];
        char name[340];
        if (!v || v->client != c)
            return rf_error_set(RF_ERR_INVALID_ARG, "%s: bad variable %zu",
                                what, i);
        if (v->stale)
            return rf_error_set(
                RF_ERR_ABORTED, "%s: '%s' part %u is gone: %s restarted", what,
                v->spec.name, v->spec.part,
                cli_ps_name(&c->conns[v->ps], name, sizeof name));
        if (v->e.spec.sync_n == 0)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "%s: '%s' part %u is not a sync-replicas "
                                "shard",
                                what, v->spec.name, v->spec.part);
        rf_status st = cli_conn_check(&c->conns[v->ps]);
        if (st != RF_OK)
            return st;
    }
    return RF_OK;
}

rf_status rf_ps_sync_read(rf_ps_client *c, rf_ps_var *const *vars, size_t n,
                          int64_t *steps, uint64_t *stale)
{
    if (!c || (n && !vars))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_sync_read: NULL argument");
    cli_lock(c);
    rf_status st = check_vars(c, vars, n, "rf_ps_sync_read");
    if (st == RF_OK)
        st = cli_words(c, 2 * n + 1);
    if (st == RF_OK && n)
        /* step, stale: 16 bytes of each record into c->words[2i] */
        st = cli_record_words(c, vars, n, RF_OP_READ, PS_REC_SYNC_STEP_OFF, 16,
                              0, 2, "reading the shards' sync steps");
    const uint64_t *words = (const uint64_t *)(const void *)c->words;
    for (size_t i = 0; st == RF_OK && i < n; i++) {
        if (steps)
            steps[i] = (int64_t)words[2 * i];
        if (stale)
            stale[i] = words[2 * i + 1];
    }
    cli_unlock(c);
    return st;
}

rf_status rf_ps_sync_set_step(rf_ps_client *c, rf_ps_var *const *vars, size_t n,
                              int64_t step)
{
    if (!c || (n && !vars))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_sync_set_step: NULL argument");
    if (!c->opt.is_chief)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_sync_set_step: only the chief sets the "
                            "sync step");
    if (step < 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_sync_set_step: step %lld is negative",
                            (long long)step);
    cli_lock(c);
    rf_status st = check_vars(c, vars, n, "rf_ps_sync_set_step");
    if (st == RF_OK)
        st = cli_words(c, 1);
    if (st == RF_OK && n) {
        *(uint64_t *)(void *)c->words = (uint64_t)step;
        /* the step, from c->words[0], to every record */
        st = cli_record_words(c, vars, n, RF_OP_WRITE, PS_REC_SYNC_STEP_OFF, 8,
                              0, 0, "writing the sync steps");
    }
    cli_unlock(c);
    return st;
}

rf_status rf_ps_sync_epoch_bump(rf_ps_client *c, uint64_t *epoch)
{
    if (!c)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_sync_epoch_bump: NULL argument");
    if (!c->opt.is_chief)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_sync_epoch_bump: only the chief bumps the "
                            "sync epoch");
    uint64_t old = 0;
    rf_status st = cli_globals_fetch_add(
        c, PS_SYNC_EPOCH_OFF, 1, &old, "sync epoch FETCH_AND_ADD on ps task 0");
    if (st == RF_OK && epoch)
        *epoch = old + 1;
    return st;
}

rf_status rf_ps_sync_epoch_read(rf_ps_client *c, uint64_t *epoch)
{
    if (!c || !epoch)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_sync_epoch_read: NULL argument");
    return cli_globals_read(c, PS_SYNC_EPOCH_OFF, epoch,
                            "sync epoch READ on ps task 0");
}
