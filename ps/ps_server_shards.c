/* ps/ps_server_shards.c: the ps's shard table: a name/part hash over
 * an array indexed by shard id, record creation in the arena (slots at the
 * optimizer's initial values, beta powers at beta1/beta2, a sync shard's
 * accumulator), per-client gradient inboxes (a sync shard's with room for
 * the tag) and directory entries. Service thread only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "ps/ps_server_internal.h"
#include "rdmaflow/status.h"

static uint32_t hash_key(const char *name, uint32_t part)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 16777619u;
    for (int i = 0; i < 4; i++)
        h = (h ^ ((part >> (8 * i)) & 0xff)) * 16777619u;
    return h;
}

rf_status ps_shards_init(rf_ps_server *s)
{
    s->hash_cap = 1024;
    s->hash = malloc(s->hash_cap * sizeof *s->hash);
    if (!s->hash)
        return rf_error_set(RF_ERR_NO_MEMORY, "ps: out of memory");
    memset(s->hash, 0xff, s->hash_cap * sizeof *s->hash);
    return RF_OK;
}

void ps_shards_free(rf_ps_server *s)
{
    for (uint32_t i = 0; i < s->num_shards; i++) {
        free(s->shards[i].inboxes);
        ps_sync_free(s, &s->shards[i]);
    }
    free(s->shards);
    free(s->hash);
    free(s->sparse_idx);
    s->sparse_idx = NULL;
    s->sparse_cap = 0;
    s->shards = NULL;
    s->hash = NULL;
    s->num_shards = s->cap_shards = 0;
}

ps_shard *ps_shard_find(rf_ps_server *s, const char *name, uint32_t part)
{
    uint32_t b = hash_key(name, part) & (s->hash_cap - 1);
    for (uint32_t i = s->hash[b]; i != UINT32_MAX; i = s->shards[i].hash_next)
        if (s->shards[i].spec.part == part &&
            strcmp(s->shards[i].spec.name, name) == 0)
            return &s->shards[i];
    return NULL;
}

static rf_status rehash(rf_ps_server *s)
{
    uint32_t cap = s->hash_cap * 2;
    uint32_t *h = malloc(cap * sizeof *h);
    if (!h)
        return rf_error_set(RF_ERR_NO_MEMORY, "ps: out of memory");
    memset(h, 0xff, cap * sizeof *h);
    for (uint32_t i = 0; i < s->num_shards; i++) {
        ps_shard *sh = &s->shards[i];
        uint32_t b = hash_key(sh->spec.name, sh->spec.part) & (cap - 1);
        sh->hash_next = h[b];
        h[b] = i;
    }
    free(s->hash);
    s->hash = h;
    s->hash_cap = cap;
    return RF_OK;
}

rf_status ps_shard_create(rf_ps_server *s, const ps_spec *spec, ps_shard **out)
{
    if (s->num_shards >= PS_MAX_SHARDS)
        return rf_error_set(RF_ERR_NO_RESOURCE,
                            "ps: %u shards, the most one "
                            "ps holds",
                            s->num_shards);
    uint64_t bytes =
        (uint64_t)ps_shape_numel(&spec->shape) * rf_dtype_size(spec->dtype);
    rf_optim_layout ol = {0};
    if (spec->trainable) {
        rf_status st = rf_optim_layout_get(&spec->optim, &ol);
        if (st != RF_OK)
            return st;
    }
    ps_layout l;
    rf_status st = ps_layout_full(
        bytes, ol.num_slots,
        spec->shape.rank >= 1 ? (uint64_t)spec->shape.dims[0] : 0,
        spec->max_push_rows, spec->sync_n > 0, &l);
    if (st != RF_OK)
        return st;
    /* What one client can make this ps hold for the shard: its inbox. */
    if (spec->trainable && l.inbox_bytes > s->opt.max_inbox_bytes)
        return rf_error_set(
            RF_ERR_INVALID_ARG,
            "'%s' part %u: an inbox of %llu bytes per worker "
            "(max_push_rows %u of %llu bytes) exceeds this "
            "ps's max_inbox_bytes %zu (RF_PS_MAX_INBOX_MB)",
            spec->name, spec->part, (unsigned long long)l.inbox_bytes,
            spec->max_push_rows, (unsigned long long)l.row_bytes,
            s->opt.max_inbox_bytes);
    if ((st = ps_sparse_reserve(s, spec->max_push_rows)) != RF_OK)
        return st;
    if (s->num_shards == s->cap_shards) {
        uint32_t cap = s->cap_shards ? 2 * s->cap_shards : 64;
        ps_shard *n = realloc(s->shards, cap * sizeof *n);
        if (!n)
            return rf_error_set(RF_ERR_NO_MEMORY, "ps: out of memory");
        s->shards = n;
        s->cap_shards = cap;
    }
    if (s->num_shards + 1 > s->hash_cap / 2 && (st = rehash(s)) != RF_OK)
        return st;
    ps_loc loc;
    void *p;
    if ((st = ps_arena_alloc(&s->arena, l.record_bytes, &loc, &p)) != RF_OK)
        return st;
    unsigned char *rec = p;
    for (unsigned i = 0; i < ol.num_slots && !l.max_push_rows; i++)
        rf_optim_slot_init(&spec->optim, i,
                           (float *)(void *)(rec + l.slot_off[i]),
                           (size_t)(bytes / sizeof(float)));
    /* a table's slot rows are row records, each sealed at version 0 (the
     * values rows stay zero: an all-zero record is whole) */
    for (unsigned i = 0; i < ol.num_slots && l.max_push_rows; i++)
        for (uint64_t r = 0; r < l.rows; r++) {
            unsigned char *row =
                rec + ps_row_off(l.slot_off[i], l.row_stride, r);
            rf_optim_slot_init(&spec->optim, i,
                               (float *)(void *)(row + PS_ROW_HDR),
                               (size_t)(l.row_bytes / sizeof(float)));
            ps_row_seal(row, 0, (size_t)l.row_bytes);
        }
    if (spec->trainable) {
        rf_optim_scalars sc;
        rf_optim_scalars_init(&spec->optim, &sc);
        ps_rec_scalars_store(rec, &sc);
    }
    ps_shard *sh = &s->shards[s->num_shards];
    *sh = (ps_shard){.id = s->num_shards,
                     .spec = *spec,
                     .layout = l,
                     .rec = loc,
                     .rec_ptr = rec};
    if (spec->sync_n && (st = ps_sync_create(sh)) != RF_OK)
        return st; /* the record stays allocated, unused: the arena only
                      grows */
    uint32_t b = hash_key(spec->name, spec->part) & (s->hash_cap - 1);
    sh->hash_next = s->hash[b];
    s->hash[b] = sh->id;
    s->num_shards++;
    *out = sh;
    return RF_OK;
}

ps_inbox *ps_shard_find_inbox(ps_shard *sh, uint32_t client_id)
{
    for (uint32_t i = 0; i < sh->num_inboxes; i++)
        if (sh->inboxes[i].client_id == client_id)
            return &sh->inboxes[i];
    return NULL;
}

rf_status ps_shard_inbox(rf_ps_server *s, ps_shard *sh, uint32_t client_id,
                         ps_inbox **out)
{
    ps_inbox *found = ps_shard_find_inbox(sh, client_id);
    if (found) {
        *out = found;
        return RF_OK;
    }
    if (sh->num_inboxes == sh->cap_inboxes) {
        uint32_t cap = sh->cap_inboxes ? 2 * sh->cap_inboxes : 4;
        ps_inbox *n = realloc(sh->inboxes, cap * sizeof *n);
        if (!n)
            return rf_error_set(RF_ERR_NO_MEMORY, "ps: out of memory");
        sh->inboxes = n;
        sh->cap_inboxes = cap;
    }
    uint64_t bytes = sh->layout.inbox_bytes;
    ps_loc loc;
    void *p;
    rf_status st = ps_arena_alloc(&s->arena, bytes ? bytes : 8, &loc, &p);
    if (st != RF_OK)
        return st;
    ps_inbox *ib = &sh->inboxes[sh->num_inboxes++];
    *ib = (ps_inbox){
        .client_id = client_id, .loc = loc, .ptr = p, .sync_step = -1};
    *out = ib;
    return RF_OK;
}

rf_status ps_shard_entry(rf_ps_server *s, ps_shard *sh, uint32_t client_id,
                         ps_entry *e)
{
    memset(e, 0, sizeof *e);
    e->shard_id = sh->id;
    e->spec = sh->spec;
    e->record = sh->rec;
    e->record_bytes = sh->layout.record_bytes;
    e->values_bytes = sh->layout.values_bytes;
    e->values_off = sh->layout.values_off;
    e->num_slots = sh->layout.num_slots;
    for (uint32_t i = 0; i < e->num_slots; i++)
        e->slot_off[i] = sh->layout.slot_off[i];
    e->init_off = PS_REC_INIT_OFF;
    e->version_off = PS_REC_VERSION_OFF;
    e->lock_off = PS_REC_LOCK_OFF;
    e->scalars_off = PS_REC_SCALARS_OFF;
    e->sync_step_off = PS_REC_SYNC_STEP_OFF;
    e->sync_stale_off = PS_REC_SYNC_STALE_OFF;
    e->inbox.region = PS_NO_REGION;
    if (sh->spec.trainable) {
        ps_inbox *ib;
        rf_status st = ps_shard_inbox(s, sh, client_id, &ib);
        if (st != RF_OK)
            return st;
        e->inbox = ib->loc;
    }
    return RF_OK;
}
