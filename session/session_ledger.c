/* session/session_ledger.c: the shard ledger of elastic workers in the
 * chief's checkpoints (docs/DESIGN.md "The shard ledger"). Saving: ps task
 * 0's ledger in its saved form (rf_ps_ledger_read), read before the
 * variables, becomes one more tensor of the checkpoint file,
 * RF_CKPT_SHARD_LEDGER (int32 words), under the file's CRC32C, atomic
 * write and max_to_keep. Restoring: into a ps task 0 whose ledger is unset
 * (it restarted, or no worker asked yet) the checkpoint's ledger is loaded
 * (rf_ps_ledger_load); a ps task 0 whose ledger is set kept the job, and
 * its ledger is kept. */
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "rdmaflow/checkpoint.h"
#include "session/session_internal.h"

rf_status sess_ledger_read(rf_session *s, sess_ledger_save *out)
{
    *out = (sess_ledger_save){0};
    size_t len = 0;
    rf_status st = rf_ps_ledger_read(s->client, &out->buf, &len);
    if (st != RF_OK)
        return rf_error_set(st, "checkpoint: %s", rf_error_message());
    if (len % 4)
        return rf_error_set(RF_ERR_CORRUPT,
                            "checkpoint: ps task 0's shard ledger is %zu "
                            "bytes, not whole words",
                            len);
    if (len)
        out->t = (rf_ckpt_tensor){.name = RF_CKPT_SHARD_LEDGER,
                                  .dtype = RF_I32,
                                  .shape = RF_SHAPE((int64_t)len / 4),
                                  .data = out->buf,
                                  .bytes = len};
    return RF_OK;
}

rf_status sess_ledger_restore(rf_session *s, const rf_ckpt *ck)
{
    const rf_ckpt_entry *e = rf_ckpt_find(ck, RF_CKPT_SHARD_LEDGER);
    if (!e)
        return RF_OK; /* no elastic worker had asked when it was saved */
    if (e->t.dtype != RF_I32 || e->t.shape.rank != 1)
        return rf_error_set(RF_ERR_CORRUPT,
                            "%s: tensor %s is %s of rank %d, not int32 "
                            "words",
                            rf_ckpt_path(ck), RF_CKPT_SHARD_LEDGER,
                            rf_dtype_name(e->t.dtype), e->t.shape.rank);
    unsigned char *live = NULL;
    size_t live_len = 0;
    rf_status st = rf_ps_ledger_read(s->client, &live, &live_len);
    free(live);
    if (st != RF_OK)
        return st;
    if (live_len) {
        RF_LOG_INFO("session: ps task 0 kept its shard ledger (it did not "
                    "restart): not loading the one of %s",
                    rf_ckpt_path(ck));
        return RF_OK;
    }
    /* the file's memory may be unaligned and is read-only: a copy */
    unsigned char *buf = malloc(e->t.bytes + 1);
    if (!buf)
        return rf_error_set(RF_ERR_NO_MEMORY, "%zu bytes", e->t.bytes);
    memcpy(buf, e->t.data, e->t.bytes);
    st = rf_ps_ledger_load(s->client, buf, e->t.bytes);
    free(buf);
    if (st != RF_OK)
        return rf_error_set(st, "the shard ledger saved in %s: %s",
                            rf_ckpt_path(ck), rf_error_message());
    RF_LOG_INFO("session: shard ledger of %s loaded into ps task 0",
                rf_ckpt_path(ck));
    return RF_OK;
}
