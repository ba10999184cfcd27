/* tools/trainer/ledger.c: an elastic worker's data from the shard ledger
 * of ps task 0 (rf_monitored_session_shard_next, which recovers from a
 * lost ps as a step does; docs/DESIGN.md "The shard ledger"): the ledger deals
 * batch b of shard s of epoch e, which is the batch_size examples from (s *
 * --shard_batches + b) * batch_size in the training set's file order; after the
 * step that trained it, the batch is appended to --shards_out as one JSON line
 * (one write(2) on an O_APPEND file, so a SIGKILL leaves whole lines) and
 * reported to the ledger, which records it and deals the next. A worker killed
 * between its push and its report has that one batch trained again by whoever
 * continues its shard; a SIGTERM stops after the report (exact). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dist.h"
#include "exit_status.h"

int tr_ledger_start(tr_ledger *l, const tr_flags *f, const rf_dataset *train,
                    int worker, rf_monitored_session *ms, char *err,
                    size_t errlen)
{
    *l = (tr_ledger){
        .geom = {.num_examples = rf_dataset_size(train),
                 .batch_size = (uint32_t)f->batch_size,
                 .shard_batches = (uint32_t)f->shard_batches,
                 .seed = f->seed},
        .fd = -1,
        .worker = worker,
    };
    if (f->shards_out) {
        l->fd = open(f->shards_out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
                     0644);
        if (l->fd < 0) {
            snprintf(err, errlen, "--shards_out=%s: %s", f->shards_out,
                     strerror(errno));
            return TR_EXIT_USAGE;
        }
    }
    bool ended = false;
    rf_status st = rf_monitored_session_shard_next(ms, &l->geom, NULL, &l->at,
                                                   NULL, &ended);
    if (st != RF_OK) {
        snprintf(err, errlen, "%s", rf_error_message());
        return tr_exit_status(st);
    }
    if (ended) /* should_stop says so */
        return 0;
    printf("worker %d: the shard ledger deals %u shards of %" PRId64
           " batches; first: epoch %u shard %u batch %u\n",
           worker, l->at.num_shards, f->shard_batches, l->at.epoch, l->at.shard,
           l->at.batch);
    return 0;
}

int tr_ledger_batch(const tr_ledger *l, const rf_dataset *train, float *x,
                    int32_t *y, char *err, size_t errlen)
{
    size_t dim = rf_dataset_example_dim(train);
    for (uint32_t i = 0; i < l->geom.batch_size; i++) {
        const float *xi;
        if (rf_dataset_example(train, (size_t)l->at.first_example + i, &xi,
                               &y[i], NULL) != RF_OK) {
            snprintf(err, errlen, "the ledger's example %" PRIu64 ": %s",
                     l->at.first_example + i, rf_error_message());
            return TR_EXIT_FAILED;
        }
        memcpy(x + (size_t)i * dim, xi, dim * sizeof *x);
    }
    return 0;
}

int tr_ledger_record(tr_ledger *l, int64_t global_step, char *err,
                     size_t errlen)
{
    l->batches++;
    if (l->fd < 0)
        return 0;
    char line[256];
    int n =
        snprintf(line, sizeof line,
                 "{\"worker\":%d,\"epoch\":%u,\"shard\":%u,"
                 "\"batch\":%u,\"global_step\":%" PRId64 "}\n",
                 l->worker, l->at.epoch, l->at.shard, l->at.batch, global_step);
    if (write(l->fd, line, (size_t)n) != n) {
        snprintf(err, errlen, "--shards_out: %s", strerror(errno));
        return TR_EXIT_FAILED;
    }
    return 0;
}

int tr_ledger_report(tr_ledger *l, rf_monitored_session *ms, bool *ended,
                     char *err, size_t errlen)
{
    rf_ps_shard_grant done = l->at;
    done.batch++;
    bool stale = false;
    rf_status st = rf_monitored_session_shard_next(ms, &l->geom, &done, &l->at,
                                                   &stale, ended);
    if (st != RF_OK) {
        snprintf(err, errlen, "%s", rf_error_message());
        return tr_exit_status(st);
    }
    if (stale && !*ended)
        printf("worker %d: shard %u of epoch %u had been returned to the "
               "ledger (this worker was away); now epoch %u shard %u batch "
               "%u\n",
               l->worker, done.shard, done.epoch, l->at.epoch, l->at.shard,
               l->at.batch);
    return 0;
}

void tr_ledger_close(tr_ledger *l)
{
    if (l->fd >= 0)
        close(l->fd);
    l->fd = -1;
}
