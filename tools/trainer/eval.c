/* tools/trainer/eval.c: test accuracy: the number of correct predictions
 * over the whole test split, in file order, in batches of
 * --eval_batch_size. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

#include "rdmaflow/clock.h"
#include "train.h"

int tr_evaluate(const tr_flags *f, tr_session *s, rf_dataset *test,
                tr_eval_result *res, char *err, size_t errlen)
{
    size_t n = rf_dataset_size(test), bs = (size_t)f->eval_batch_size;
    if (bs > n)
        bs = n;
    res->correct = res->total = 0;
    res->seconds = 0;
    float *xb = malloc(bs * s->example_dim * sizeof *xb);
    int32_t *yb = malloc(bs * sizeof *yb);
    rf_plan *plan = NULL;
    rf_node *feeds[] = {s->x, s->y};
    int rc = -1;
    if (!xb || !yb) {
        snprintf(err, errlen, "no memory for an evaluation batch of %zu", bs);
        goto out;
    }
    if (rf_plan_create(s->ex, s->g, &s->correct, 1, feeds, 2, NULL, 0, &plan) !=
        RF_OK) {
        snprintf(err, errlen, "creating the evaluation plan: %s",
                 rf_error_message());
        goto out;
    }
    rf_dataset_set_shuffle(test, false, 0); /* rewinds to the start */
    double t0 = rf_now_s();
    for (size_t done = 0; done < n;) {
        size_t b = n - done < bs ? n - done : bs;
        if (rf_dataset_next_batch(test, b, xb, yb) != RF_OK) {
            snprintf(err, errlen, "reading a test batch: %s",
                     rf_error_message());
            goto out;
        }
        rf_tensor in[2] = {
            rf_tensor_make(RF_F32,
                           RF_SHAPE((int64_t)b, (int64_t)s->example_dim), xb),
            rf_tensor_make(RF_I32, RF_SHAPE((int64_t)b), yb),
        };
        rf_tensor o;
        if (rf_plan_run(plan, in, &o) != RF_OK) {
            snprintf(err, errlen, "evaluating test examples %zu..%zu: %s", done,
                     done + b - 1, rf_error_message());
            goto out;
        }
        res->correct += (int64_t)lrintf(*rf_tensor_f32(&o));
        res->total += (int64_t)b;
        done += b;
    }
    res->seconds = rf_now_s() - t0;
    rc = 0;
out:
    rf_plan_destroy(plan);
    free(xb);
    free(yb);
    return rc;
}
