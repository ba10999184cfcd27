/* tools/ctr/main.c: rf-ctr-data, the synthetic click-through data set of a
 * spec (rdmaflow/ctr_data.h) at a glance: by default a summary of the
 * first N examples of a split (the click rate, the hidden model's AUC and
 * log loss, the base rate's log loss, and per categorical feature the
 * share of distinct ids among the N draws and the share of draws falling
 * on the top 10 and on the head ranks); with --dump N, N examples as CSV
 * (label, ids..., dense...). Exit 0, 1 if the data could not be made, 2
 * for a malformed command line or spec. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/ctr_data.h"
#include "rdmaflow/env.h"
#include "rdmaflow/version.h"

#define EXIT_USAGE 2
#define MAX_N      10000000ULL

static void usage(FILE *to)
{
    fprintf(to,
            "usage: rf-ctr-data [--spec SPEC] [--split train|test] "
            "[--n N | --dump N]\n"
            "  --spec SPEC   the data set, fields NAME=VALUE separated by ';' "
            "over the\n"
            "                default, e.g. 'vocab=1000,1e7;zipf=1.1;dense=4;"
            "seed=7'\n"
            "                (names: vocab zipf dense seed head train test "
            "scale tail\n"
            "                dense_scale bias)\n"
            "  --split S     train or test (default test)\n"
            "  --n N         summarise the split's first N examples "
            "(default 100000\n"
            "                or the split's size if smaller; at most 10^7)\n"
            "  --dump N      print the split's first N examples as CSV "
            "(label, ids...,\n"
            "                dense...) instead of a summary\n"
            "  --help        this text\n"
            "  --version     print the version and exit\n");
}

__attribute__((format(printf, 1, 2))) static int bad_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "rf-ctr-data: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    usage(stderr);
    return EXIT_USAGE;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Draws of ids (n of them, sorted) that are among the sorted keys. */
static uint64_t hits(const int64_t *ids, size_t n, const int64_t *keys,
                     size_t nkeys)
{
    uint64_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += bsearch(&ids[i], keys, nkeys, sizeof *keys, cmp_i64) != NULL;
    return c;
}

/* The ids of ranks [0, k) of feature f, sorted. */
static int64_t *top_ids(const rf_ctr_spec *spec, uint32_t f, size_t k)
{
    int64_t *keys = malloc((k ? k : 1) * sizeof *keys);
    if (!keys)
        return NULL;
    for (size_t r = 0; r < k; r++)
        if (rf_ctr_rank_to_id(spec, f, (int64_t)r, &keys[r]) != RF_OK) {
            free(keys);
            return NULL;
        }
    qsort(keys, k, sizeof *keys, cmp_i64);
    return keys;
}

static int dump(const rf_ctr_spec *spec, rf_data_split split, uint64_t n)
{
    int64_t ids[RF_CTR_MAX_CAT];
    float dense[RF_CTR_MAX_DENSE], label;
    printf("label");
    for (uint32_t f = 0; f < spec->num_cat; f++)
        printf(",id%u", f);
    for (uint32_t j = 0; j < spec->num_dense; j++)
        printf(",dense%u", j);
    printf("\n");
    for (uint64_t i = 0; i < n; i++) {
        if (rf_ctr_example(spec, split, i, ids, dense, &label, NULL) != RF_OK) {
            fprintf(stderr, "rf-ctr-data: %s\n", rf_error_message());
            return 1;
        }
        printf("%d", (int)label);
        for (uint32_t f = 0; f < spec->num_cat; f++)
            printf(",%lld", (long long)ids[f]);
        for (uint32_t j = 0; j < spec->num_dense; j++)
            printf(",%.9g", (double)dense[j]);
        printf("\n");
    }
    return 0;
}

static int summary(const rf_ctr_spec *spec, rf_data_split split, uint64_t n)
{
    char text[1024];
    int rc = 1;
    size_t nc = spec->num_cat, nd = spec->num_dense;
    int64_t *ids = malloc(n * (nc ? nc : 1) * sizeof *ids);
    float *dense = malloc(n * (nd ? nd : 1) * sizeof *dense);
    float *labels = malloc(n * sizeof *labels);
    int64_t *col = malloc(n * sizeof *col);
    if (!ids || !dense || !labels || !col) {
        fprintf(stderr, "rf-ctr-data: out of memory for %llu examples\n",
                (unsigned long long)n);
        goto out;
    }
    double auc, ll;
    if (rf_ctr_spec_format(spec, text, sizeof text) != RF_OK ||
        rf_ctr_batch(spec, split, 0, 1, 0, n, ids, dense, labels, NULL) !=
            RF_OK ||
        rf_ctr_hidden_auc(spec, split, n, &auc, &ll) != RF_OK) {
        fprintf(stderr, "rf-ctr-data: %s\n", rf_error_message());
        goto out;
    }
    double clicks = 0;
    for (uint64_t i = 0; i < n; i++)
        clicks += labels[i];
    double rate = clicks / (double)n;
    double base = -(rate * log(rate) + (1 - rate) * log1p(-rate));
    printf("spec: %s\n", text);
    printf("split: %s, first %llu of %llu examples\n",
           split == RF_DATA_TRAIN ? "train" : "test", (unsigned long long)n,
           (unsigned long long)rf_ctr_split_size(spec, split));
    printf("click rate: %.4f\n", rate);
    printf("hidden model: AUC %.4f, log loss %.4f (the base rate's log loss "
           "%.4f)\n",
           auc, ll, base);
    if (nc)
        printf("%-8s %12s %6s %10s %10s %10s\n", "feature", "vocab", "zipf",
               "distinct", "top10", "head");
    for (uint32_t f = 0; f < nc; f++) {
        for (uint64_t i = 0; i < n; i++)
            col[i] = ids[i * nc + f];
        qsort(col, n, sizeof *col, cmp_i64);
        uint64_t distinct = n > 0;
        for (uint64_t i = 1; i < n; i++)
            distinct += col[i] != col[i - 1];
        size_t k10 = spec->vocab[f] < 10 ? (size_t)spec->vocab[f] : 10;
        size_t kh = spec->head < spec->vocab[f] ? (size_t)spec->head
                                                : (size_t)spec->vocab[f];
        int64_t *t10 = top_ids(spec, f, k10), *th = top_ids(spec, f, kh);
        if (!t10 || !th) {
            free(t10);
            free(th);
            fprintf(stderr, "rf-ctr-data: feature %u: %s\n", f,
                    rf_error_message()[0] ? rf_error_message()
                                          : "out of memory");
            goto out;
        }
        printf("cat%-5u %12lld %6.3g %10.4f %10.4f %10.4f\n", f,
               (long long)spec->vocab[f], spec->zipf[f],
               (double)distinct / (double)n,
               (double)hits(col, n, t10, k10) / (double)n,
               (double)hits(col, n, th, kh) / (double)n);
        free(t10);
        free(th);
    }
    printf("(distinct: distinct ids / examples; top10, head: the share of "
           "draws on ranks\n below 10 and below head=%lld)\n",
           (long long)spec->head);
    printf("dense: %u features, N(0, 1)\n", spec->num_dense);
    rc = 0;
out:
    free(ids);
    free(dense);
    free(labels);
    free(col);
    return rc;
}

int main(int argc, char **argv)
{
    if (rf_log_env_check() != RF_OK) {
        fprintf(stderr, "rf-ctr-data: %s\n", rf_error_message());
        return EXIT_USAGE;
    }
    const char *spec_text = NULL, *split_text = NULL, *n_text = NULL,
               *dump_text = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = NULL;
        const char *name = NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--version") == 0) {
            printf("rf-ctr-data (rdmaflow) %s\n", rf_version());
            return 0;
        } else if (strncmp(a, "--dump", 6) == 0 && (!a[6] || a[6] == '=')) {
            slot = &dump_text, name = "--dump";
        } else if (strncmp(a, "--spec", 6) == 0 && (!a[6] || a[6] == '=')) {
            slot = &spec_text, name = "--spec";
        } else if (strncmp(a, "--split", 7) == 0 && (!a[7] || a[7] == '=')) {
            slot = &split_text, name = "--split";
        } else if (strncmp(a, "--n", 3) == 0 && (!a[3] || a[3] == '=')) {
            slot = &n_text, name = "--n";
        } else {
            return bad_usage("unknown argument '%s'", a);
        }
        const char *eq = strchr(a, '=');
        const char *v = eq ? eq + 1 : NULL;
        if (!v) {
            if (i + 1 >= argc)
                return bad_usage("%s needs a value", name);
            v = argv[++i];
        }
        if (*slot)
            return bad_usage("%s given twice", name);
        *slot = v;
    }
    rf_ctr_spec spec;
    if (rf_ctr_spec_parse(spec_text ? spec_text : "", &spec) != RF_OK)
        return bad_usage("--spec: %s", rf_error_message());
    rf_data_split split = RF_DATA_TEST;
    if (split_text) {
        if (strcmp(split_text, "train") == 0)
            split = RF_DATA_TRAIN;
        else if (strcmp(split_text, "test") != 0)
            return bad_usage("--split: '%s' is not train or test", split_text);
    }
    if (n_text && dump_text)
        return bad_usage("--n and --dump both give the number of examples");
    uint64_t size = rf_ctr_split_size(&spec, split);
    uint64_t n = size < 100000 ? size : 100000;
    const char *count = dump_text ? dump_text : n_text;
    if (count) {
        const char *flag = dump_text ? "--dump" : "--n";
        char *end;
        if (!(*count >= '0' && *count <= '9'))
            return bad_usage("%s: '%s' is not a positive integer", flag, count);
        unsigned long long v = strtoull(count, &end, 10);
        if (*end || v == 0)
            return bad_usage("%s: '%s' is not a positive integer", flag, count);
        if (v > size || v > MAX_N)
            return bad_usage("%s: %llu is more than the split's %llu "
                             "examples or 10^7",
                             flag, v, (unsigned long long)size);
        n = v;
    }
    return dump_text ? dump(&spec, split, n) : summary(&spec, split, n);
}
