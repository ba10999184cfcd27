/* graph/data/metrics.c: exact ROC AUC (ties counted half) and log loss
 * (rdmaflow/ctr_data.h), for click-through models and the hidden model. */
#include <math.h>
#include <stdlib.h>

#include "rdmaflow/ctr_data.h"

typedef struct scored {
    float score, label;
} scored;

static int by_score(const void *a, const void *b)
{
    float x = ((const scored *)a)->score, y = ((const scored *)b)->score;
    return (x > y) - (x < y);
}

static rf_status check_labels(const float *labels, size_t n, const char *who)
{
    for (size_t i = 0; i < n; i++)
        if (labels[i] != 0.0f && labels[i] != 1.0f)
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "%s: label %zu is %g, not 0 or 1", who, i,
                                (double)labels[i]);
    return RF_OK;
}

/* Ascending by score, then over each group of equal scores: a positive
 * beats every negative of a lower group and ties each of its own, so
 * U = sum over groups of pos * (negatives below) + pos * neg / 2. Every
 * term is an integer or a half-integer below 2^53: the sum is exact. */
rf_status rf_auc(const float *scores, const float *labels, size_t n,
                 double *auc)
{
    if (!scores || !labels || !auc)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_auc: NULL argument");
    rf_status st = check_labels(labels, n, "rf_auc");
    if (st != RF_OK)
        return st;
    size_t npos = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(scores[i]))
            return rf_error_set(RF_ERR_NUMERIC, "rf_auc: score %zu is NaN", i);
        npos += labels[i] == 1.0f;
    }
    if (npos == 0 || npos == n)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_auc: all %zu labels are %d: the AUC needs "
                            "both classes",
                            n, npos == n ? 1 : 0);
    scored *v = malloc(n * sizeof *v);
    if (!v)
        return rf_error_set(RF_ERR_NO_MEMORY, "rf_auc: %zu scores", n);
    for (size_t i = 0; i < n; i++)
        v[i] = (scored){scores[i], labels[i]};
    qsort(v, n, sizeof *v, by_score);
    double u = 0, neg_below = 0;
    for (size_t i = 0; i < n;) {
        double pos = 0, neg = 0;
        size_t j = i;
        for (; j < n && v[j].score == v[i].score; j++)
            *(v[j].label == 1.0f ? &pos : &neg) += 1;
        u += pos * neg_below + pos * neg / 2;
        neg_below += neg;
        i = j;
    }
    free(v);
    *auc = u / ((double)npos * (double)(n - npos));
    return RF_OK;
}

rf_status rf_log_loss(const float *p, const float *labels, size_t n, double eps,
                      double *out)
{
    if (!p || !labels || !out)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_log_loss: NULL argument");
    if (n == 0)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_log_loss: no examples");
    if (!(eps >= 0 && eps < 0.5))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_log_loss: eps %g is outside [0, 0.5)", eps);
    rf_status st = check_labels(labels, n, "rf_log_loss");
    if (st != RF_OK)
        return st;
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        double q = p[i];
        if (isnan(q))
            return rf_error_set(RF_ERR_NUMERIC, "rf_log_loss: p %zu is NaN", i);
        q = q < eps ? eps : q > 1 - eps ? 1 - eps : q;
        sum -= labels[i] == 1.0f ? log(q) : log1p(-q);
    }
    if (!isfinite(sum))
        return rf_error_set(RF_ERR_NUMERIC,
                            "rf_log_loss: infinite loss (a p of 0 or 1 on the "
                            "wrong label, with eps 0)");
    *out = sum / (double)n;
    return RF_OK;
}
