/* session/session_ckpt.c: the session's checkpoints (rdmaflow/checkpoint.h
 * files). Saving: the chief READs every shard (values, optimizer slots, the
 * first variable's Adam beta powers) and global_step with one-sided reads
 * into a registered snapshot block while the other workers go on training,
 * and writes them under TensorFlow's names (dense/kernel,
 * dense/kernel/Adagrad, beta1_power, global_step; a partitioned variable
 * whole under its own name, rf_ckpt_vars) as
 * model.ckpt-<step>.safetensors. Restoring (the chief, when the session is
 * created): the newest checkpoint that verifies is written into the shards
 * in place of the initial values: slots, beta powers and global_step
 * first, then the values with the init flags (so a worker that sees a flag
 * reads restored slots too). By name, so a checkpoint restores into any
 * number of ps tasks. As with TensorFlow's Saver, reads that race with
 * other workers' updates are not one consistent cut of the job: each shard
 * is read whole, but not all at one instant. The shard ledger of elastic
 * workers, when ps task 0 has one, is saved and restored with them
 * (session_ledger.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/checkpoint.h"
#include "session/session_internal.h"

#define ALIGN64(x) (((x) + 63u) & ~(size_t)63u)

/* The snapshot block: [64 bytes: beta powers] then per variable its values
 * and each slot, 64-byte aligned; registered once, on first use. */
static rf_status snapshot_block(rf_session *s)
{
    if (s->ckpt.snap)
        return RF_OK;
    size_t len = 64;
    for (size_t i = 0; i < s->nv; i++)
        if (!s->v[i].table)
            len += (1 + s->v[i].apply.num_slots) *
                   ALIGN64(s->v[i].info.values_bytes);
    if (posix_memalign((void **)&s->ckpt.snap, 64, len) != 0) {
        s->ckpt.snap = NULL;
        return rf_error_set(RF_ERR_NO_MEMORY,
                            "checkpoint: no memory for %zu bytes", len);
    }
    rf_status st =
        rf_ps_client_register(s->client, s->ckpt.snap, len, &s->ckpt.snap_mr);
    if (st != RF_OK) {
        free(s->ckpt.snap);
        s->ckpt.snap = NULL;
        return rf_error_set(st, "checkpoint: registering %zu bytes: %s", len,
                            rf_error_message());
    }
    s->ckpt.snap_len = len;
    return RF_OK;
}

/* The transfers between the snapshot block and the shards: per variable
 * its values (if values) and slots, then the first variable's scalars. */
static size_t snapshot_xfers(const rf_session *s, bool values, rf_ps_xfer *x)
{
    size_t nx = 0, off = 64;
    for (size_t i = 0; i < s->nv; i++) {
        const sess_var *v = &s->v[i];
        size_t step = ALIGN64(v->info.values_bytes);
        for (unsigned k = 0; !v->table && k <= v->apply.num_slots;
             k++, off += step)
            if (k > 0 || values)
                x[nx++] = (rf_ps_xfer){
                    .var = v->shard,
                    .field = k == 0 ? RF_PS_FIELD_VALUES
                                    : (rf_ps_field)(RF_PS_FIELD_SLOT0 + k - 1),
                    .buf = s->ckpt.snap + off,
                    .len = v->info.values_bytes,
                    .mr = s->ckpt.snap_mr};
    }
    if (s->v[0].apply.beta1_power)
        x[nx++] = (rf_ps_xfer){.var = s->v[0].shard,
                               .field = RF_PS_FIELD_SCALARS,
                               .buf = s->ckpt.snap,
                               .len = 8,
                               .mr = s->ckpt.snap_mr};
    return nx;
}

static rf_ps_xfer *xfer_array(const rf_session *s)
{
    return calloc(s->nv * (RF_OPTIM_MAX_SLOTS + 1) + 1, sizeof(rf_ps_xfer));
}

/* The checkpoint's tensors over the snapshot block and gs, under TF's
 * names (partitioned variables whole: rf_ckpt_vars). */
static rf_status snapshot_tensors(const rf_session *s, const int64_t *gs,
                                  rf_ckpt_vars **out)
{
    rf_ckpt_vars *b = NULL;
    rf_status st =
        rf_ckpt_vars_create(s->nv * (RF_OPTIM_MAX_SLOTS + 1) + 3, &b);
    size_t off = 64;
    for (size_t i = 0; st == RF_OK && i < s->nv; i++) {
        const sess_var *v = &s->v[i];
        size_t step = ALIGN64(v->info.values_bytes);
        for (unsigned k = 0;
             st == RF_OK && !v->table && k <= v->apply.num_slots;
             k++, off += step)
            st = rf_ckpt_vars_add(b, k == 0 ? v->var : v->apply.slots[k - 1],
                                  s->ckpt.snap + off);
    }
    const rf_apply_info *a = &s->v[0].apply;
    if (st == RF_OK && a->beta1_power) {
        st = rf_ckpt_vars_add(b, a->beta1_power, s->ckpt.snap);
        if (st == RF_OK)
            st = rf_ckpt_vars_add(b, a->beta2_power, s->ckpt.snap + 4);
    }
    if (st == RF_OK)
        st = rf_ckpt_vars_add(b, s->nodes.global_step_var, gs);
    if (st != RF_OK) {
        rf_ckpt_vars_free(b);
        b = NULL;
    }
    *out = b;
    return st;
}

rf_status rf_session_save(rf_session *s, const char *dir, int max_to_keep,
                          char *path_out, size_t len)
{
    if (!s || !dir)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_session_save: session and dir are required");
    if (s->offline)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_session_save: an offline session only "
                            "describes");
    if (!s->task.chief)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "only the chief saves checkpoints");
    rf_status st = snapshot_block(s);
    if (st != RF_OK)
        return st;
    rf_ps_xfer *x = xfer_array(s);
    rf_ckpt_vars *cv = NULL;
    sess_tbl_src *tables = NULL;
    size_t ntables = 0;
    rf_ckpt_tensor *all = NULL;
    rf_ckpt_fill *fills = NULL;
    sess_ledger_save ledger = {0};
    if (!x) {
        st = rf_error_set(RF_ERR_NO_MEMORY, "checkpoint: out of memory");
        goto out;
    }
    /* global_step first: the checkpoint holds at least its updates */
    int64_t gs = 0;
    st = rf_ps_global_step_read(s->client, &gs);
    if (st != RF_OK) {
        rf_error_set(st, "checkpoint: reading global_step: %s",
                     rf_error_message());
        goto out;
    }
    /* then the shard ledger, then the variables: a batch the ledger
     * counts trained was pushed before they were read; one whose step
     * ended before global_step was read and that it does not count is
     * the last its worker trained (reported after the ledger's read) */
    st = sess_ledger_read(s, &ledger);
    if (st != RF_OK)
        goto out;
    st = rf_ps_read(s->client, x, snapshot_xfers(s, true, x));
    if (st != RF_OK) {
        rf_error_set(st, "checkpoint: reading the variables: %s",
                     rf_error_message());
        goto out;
    }
    char step[32];
    snprintf(step, sizeof step, "%lld", (long long)gs);
    const char *meta[] = {"format", "rdmaflow checkpoint", "global_step", step,
                          NULL};
    const rf_ckpt_tensor *t = NULL;
    size_t nt = 0;
    st = snapshot_tensors(s, &gs, &cv);
    if (st == RF_OK)
        st = rf_ckpt_vars_tensors(cv, &t, &nt);
    if (st == RF_OK)
        st = sess_tables_ckpt(s, &tables, &ntables);
    if (st == RF_OK) {
        all = calloc(nt + ntables + 2, sizeof *all);
        fills = calloc(nt + ntables + 2, sizeof *fills);
        if (!all || !fills)
            st = rf_error_set(RF_ERR_NO_MEMORY, "checkpoint: out of memory");
    }
    if (st == RF_OK) {
        /* the tables' pieces are read from their shards as they are
         * written (ckpt_tables.c) */
        memcpy(all, t, nt * sizeof *t);
        for (size_t j = 0; j < ntables; j++)
            sess_tables_ckpt_tensor(tables, j, &all[nt + j], &fills[nt + j]);
        size_t n = nt + ntables;
        if (ledger.t.name)
            all[n++] = ledger.t;
        st = rf_ckpt_dir_save_filled(dir, gs, all, fills, n, meta, max_to_keep,
                                     path_out, len);
    }
    if (st == RF_OK)
        s->ckpt.saved_step = gs;
out:
    free(ledger.buf);
    free(x);
    free(all);
    free(fills);
    sess_tables_ckpt_free(tables, ntables);
    rf_ckpt_vars_free(cv);
    return st;
}

/* Fills the variables' storage, the snapshot block (slots, powers) and the
 * graph's own slot variables from ck, every tensor checked first. */
static rf_status fill_from(rf_session *s, const rf_ckpt *ck, int64_t *gs)
{
    rf_status st = rf_ckpt_read_variable(ck, s->nodes.global_step_var, gs);
    if (st != RF_OK)
        return st;
    size_t off = 64;
    for (size_t i = 0; i < s->nv; i++) {
        sess_var *v = &s->v[i];
        size_t step = ALIGN64(v->info.values_bytes);
        for (unsigned k = 0; !v->table && k <= v->apply.num_slots;
             k++, off += step) {
            st = rf_ckpt_read_variable(ck,
                                       k == 0 ? v->var : v->apply.slots[k - 1],
                                       s->ckpt.snap + off);
            if (st != RF_OK)
                return st;
        }
    }
    const rf_apply_info *a = &s->v[0].apply;
    if (a->beta1_power) {
        st = rf_ckpt_read_variable(ck, a->beta1_power, s->ckpt.snap);
        if (st == RF_OK)
            st = rf_ckpt_read_variable(ck, a->beta2_power, s->ckpt.snap + 4);
        if (st != RF_OK)
            return st;
    }
    /* checked: now into the graph (values are the shards' source) */
    off = 64;
    for (size_t i = 0; i < s->nv; i++) {
        sess_var *v = &s->v[i];
        if (v->table)
            continue; /* written from the file by sess_tables_restore */
        size_t bytes = v->info.values_bytes, step = ALIGN64(bytes);
        memcpy(rf_variable_data(v->var), s->ckpt.snap + off, bytes);
        for (unsigned k = 0; k < v->apply.num_slots; k++)
            memcpy(rf_variable_data(v->apply.slots[k]),
                   s->ckpt.snap + off + (k + 1) * step, bytes);
        off += (1 + v->apply.num_slots) * step;
    }
    if (a->beta1_power) {
        memcpy(rf_variable_data(a->beta1_power), s->ckpt.snap, 4);
        memcpy(rf_variable_data(a->beta2_power), s->ckpt.snap + 4, 4);
    }
    *(int64_t *)rf_variable_data(s->nodes.global_step_var) = *gs;
    return RF_OK;
}

rf_status sess_restore(rf_session *s, bool *restored)
{
    *restored = false;
    if (!s->opt.checkpoint_dir)
        return RF_OK;
    rf_ckpt *ck = NULL;
    rf_status st = rf_ckpt_dir_open_latest(s->opt.checkpoint_dir, &ck,
                                           s->ckpt.restored_from,
                                           sizeof s->ckpt.restored_from);
    if (st == RF_ERR_UNAVAILABLE) {
        s->ckpt.restored_from[0] = '\0';
        return RF_OK; /* no checkpoint yet: initialise */
    }
    if (st != RF_OK)
        return st;
    snprintf(s->ckpt.restore_note, sizeof s->ckpt.restore_note, "%s",
             rf_ckpt_note(ck));
    rf_ps_xfer *x = xfer_array(s);
    int64_t gs = 0;
    st = x ? snapshot_block(s)
           : rf_error_set(RF_ERR_NO_MEMORY, "checkpoint: out of memory");
    if (st == RF_OK)
        st = fill_from(s, ck, &gs);
    if (st == RF_OK) /* the tables' values and slots, into their shards */
        st = sess_tables_restore(s, ck);
    if (st == RF_OK) /* into a restarted ps task 0 */
        st = sess_ledger_restore(s, ck);
    rf_ckpt_close(ck);
    /* slots, powers, global_step; the values and init flags come after */
    if (st == RF_OK) {
        size_t nx = snapshot_xfers(s, false, x);
        /* every shard gets the pair of beta powers (one per shard) */
        size_t with_powers = nx;
        for (size_t i = 1; s->v[0].apply.beta1_power && i < s->nv; i++)
            x[with_powers++] = (rf_ps_xfer){.var = s->v[i].shard,
                                            .field = RF_PS_FIELD_SCALARS,
                                            .buf = s->ckpt.snap,
                                            .len = 8,
                                            .mr = s->ckpt.snap_mr};
        st = rf_ps_write(s->client, x, with_powers);
    }
    if (st == RF_OK)
        st = rf_ps_global_step_write(s->client, gs);
    if (st != RF_OK)
        rf_error_set(st, "restoring %s: %s", s->ckpt.restored_from,
                     rf_error_message());
    else {
        *restored = true;
        s->ckpt.restored_step = gs;
    }
    free(x);
    return st;
}

const char *rf_session_restored_from(const rf_session *s, const char **note)
{
    if (note)
        *note = s->ckpt.restore_note;
    return s->ckpt.restored_from[0] ? s->ckpt.restored_from : NULL;
}

void rf_session_checkpoint_info_get(const rf_session *s,
                                    rf_session_checkpoint_info *out)
{
    out->restored_from = rf_session_restored_from(s, &out->restore_note);
    out->restored_step = s->ckpt.restored_step;
    out->saved_step = s->ckpt.saved_step;
    out->init_how = s->ckpt.init_how;
}

void sess_snapshot_free(rf_session *s)
{
    sess_tables_stage_free(s);
    if (s->ckpt.snap_mr && s->client)
        rf_ps_client_deregister(s->client, s->ckpt.snap_mr);
    s->ckpt.snap_mr = NULL;
    free(s->ckpt.snap);
    s->ckpt.snap = NULL;
}
