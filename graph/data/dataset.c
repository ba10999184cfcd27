/* graph/data/dataset.c: the in-memory dataset of rdmaflow/data.h: storage
 * shared by a dataset and its shards (reference counted), IDX loading into
 * floats, sharding, per-epoch shuffling and batching. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "graph/data/idx.h"
#include "graph/data/rng.h"
#include "rdmaflow/data.h"
#include "rdmaflow/status.h"

/* The rf_rng stream of the shard permutation (epochs use streams 0, 1, ...). */
#define SHARD_STREAM UINT64_MAX

typedef struct storage {
    atomic_size_t refs;
    size_t count; /* examples in the files */
    uint32_t rows, cols;
    size_t dim;
    int32_t num_classes;
    float *pixels;   /* count * dim */
    int32_t *labels; /* count */
} storage;

struct rf_dataset {
    storage *st;
    size_t n;
    uint32_t *members; /* storage index of example i of this dataset */
    uint32_t *order;   /* storage indices in the current epoch's order */
    bool order_ready;  /* order holds epoch's order */
    bool shuffle;
    uint64_t seed;
    uint64_t epoch;
    size_t offset; /* examples of this epoch already returned */
};

static void storage_free(storage *st)
{
    free(st->pixels);
    free(st->labels);
    free(st);
}

static void storage_release(storage *st)
{
    if (st && atomic_fetch_sub(&st->refs, 1) == 1)
        storage_free(st);
}

/* A dataset over st (taking one reference) with n members, uninitialised. */
static rf_status dataset_new(storage *st, size_t n, rf_dataset **out)
{
    rf_dataset *ds = calloc(1, sizeof *ds);
    if (ds) {
        ds->members = malloc(n * sizeof *ds->members);
        ds->order = malloc(n * sizeof *ds->order);
    }
    if (!ds || !ds->members || !ds->order) {
        if (ds) {
            free(ds->members);
            free(ds->order);
        }
        free(ds);
        return rf_error_set(RF_ERR_NO_MEMORY,
                            "dataset: cannot allocate %zu indices", n);
    }
    atomic_fetch_add(&st->refs, 1);
    ds->st = st;
    ds->n = n;
    *out = ds;
    return RF_OK;
}

/* Builds the storage from the two parsed files. */
static rf_status storage_from_idx(const char *images_path,
                                  const char *labels_path, const rf_idx *img,
                                  const rf_idx *lab, storage **out)
{
    if (img->dims[0] != lab->dims[0])
        return rf_error_set(
            RF_ERR_CORRUPT, "%s holds %u images but %s holds %u labels",
            images_path, img->dims[0], labels_path, lab->dims[0]);
    storage *st = calloc(1, sizeof *st);
    if (!st)
        return rf_error_set(RF_ERR_NO_MEMORY, "dataset: out of memory");
    st->count = img->dims[0];
    st->rows = img->dims[1];
    st->cols = img->dims[2];
    st->dim = (size_t)st->rows * st->cols;
    st->pixels = malloc(img->size * sizeof *st->pixels);
    st->labels = malloc(st->count * sizeof *st->labels);
    if (!st->pixels || !st->labels) {
        storage_free(st);
        return rf_error_set(RF_ERR_NO_MEMORY, "%s: cannot allocate %zu floats",
                            images_path, img->size);
    }
    for (size_t i = 0; i < img->size; i++)
        st->pixels[i] = (float)img->data[i] / 255.0f;
    for (size_t i = 0; i < st->count; i++) {
        st->labels[i] = lab->data[i];
        if (st->labels[i] + 1 > st->num_classes)
            st->num_classes = st->labels[i] + 1;
    }
    atomic_init(&st->refs, 0);
    *out = st;
    return RF_OK;
}

rf_status rf_dataset_load_idx(const char *images_path, const char *labels_path,
                              rf_dataset **out)
{
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_dataset_load_idx: out NULL");
    *out = NULL;
    if (!images_path || !labels_path)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_dataset_load_idx: %s path NULL",
                            images_path ? "labels" : "images");
    rf_idx img, lab;
    rf_status st = idx_read(images_path, 3, &img);
    if (st)
        return st;
    if ((st = idx_read(labels_path, 1, &lab))) {
        idx_free(&img);
        return st;
    }
    storage *s = NULL;
    st = storage_from_idx(images_path, labels_path, &img, &lab, &s);
    idx_free(&img);
    idx_free(&lab);
    if (st)
        return st;
    rf_dataset *ds = NULL;
    if ((st = dataset_new(s, s->count, &ds))) {
        storage_free(s);
        return st;
    }
    for (size_t i = 0; i < ds->n; i++)
        ds->members[i] = (uint32_t)i;
    *out = ds;
    return RF_OK;
}

void rf_dataset_free(rf_dataset *ds)
{
    if (!ds)
        return;
    storage_release(ds->st);
    free(ds->members);
    free(ds->order);
    free(ds);
}

size_t rf_dataset_size(const rf_dataset *ds)
{
    return ds ? ds->n : 0;
}

uint32_t rf_dataset_rows(const rf_dataset *ds)
{
    return ds ? ds->st->rows : 0;
}

uint32_t rf_dataset_cols(const rf_dataset *ds)
{
    return ds ? ds->st->cols : 0;
}

size_t rf_dataset_example_dim(const rf_dataset *ds)
{
    return ds ? ds->st->dim : 0;
}

int32_t rf_dataset_num_classes(const rf_dataset *ds)
{
    return ds ? ds->st->num_classes : 0;
}

rf_status rf_dataset_example(const rf_dataset *ds, size_t i, const float **x,
                             int32_t *y, size_t *source)
{
    if (!ds || i >= ds->n)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_dataset_example: index %zu out of range (size "
                            "%zu)",
                            i, ds ? ds->n : 0);
    uint32_t s = ds->members[i];
    if (x)
        *x = ds->st->pixels + (size_t)s * ds->st->dim;
    if (y)
        *y = ds->st->labels[s];
    if (source)
        *source = s;
    return RF_OK;
}

rf_status rf_dataset_shard(const rf_dataset *ds, uint32_t num_tasks,
                           uint32_t task_index, uint64_t seed, rf_dataset **out)
{
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_dataset_shard: out NULL");
    *out = NULL;
    if (!ds || num_tasks == 0 || task_index >= num_tasks)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_dataset_shard: task index %u of %u tasks is "
                            "invalid",
                            task_index, num_tasks);
    size_t n = ds->n / num_tasks + (task_index < ds->n % num_tasks);
    if (n == 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_dataset_shard: shard %u of %u would be empty "
                            "(%zu examples)",
                            task_index, num_tasks, ds->n);
    rf_dataset *shard = NULL;
    rf_status st = dataset_new(ds->st, n, &shard);
    if (st)
        return st;
    /* Permute all of ds's examples, then deal them out round-robin. */
    uint32_t *perm = malloc(ds->n * sizeof *perm);
    if (!perm) {
        rf_dataset_free(shard);
        return rf_error_set(RF_ERR_NO_MEMORY,
                            "rf_dataset_shard: cannot allocate %zu indices",
                            ds->n);
    }
    memcpy(perm, ds->members, ds->n * sizeof *perm);
    rf_rng rng;
    rng_init(&rng, seed, SHARD_STREAM);
    rng_shuffle(&rng, perm, ds->n);
    for (size_t i = 0; i < n; i++)
        shard->members[i] = perm[task_index + i * (size_t)num_tasks];
    free(perm);
    *out = shard;
    return RF_OK;
}

void rf_dataset_set_shuffle(rf_dataset *ds, bool shuffle, uint64_t seed)
{
    if (!ds)
        return;
    ds->shuffle = shuffle;
    ds->seed = seed;
    ds->epoch = 0;
    ds->offset = 0;
    ds->order_ready = false;
}

/* Makes order hold the current epoch's visiting order. */
static void prepare_epoch(rf_dataset *ds)
{
    memcpy(ds->order, ds->members, ds->n * sizeof *ds->order);
    if (ds->shuffle) {
        rf_rng rng;
        rng_init(&rng, ds->seed, ds->epoch);
        rng_shuffle(&rng, ds->order, ds->n);
    }
    ds->order_ready = true;
}

rf_status rf_dataset_next_batch(rf_dataset *ds, size_t batch_size, float *x,
                                int32_t *y)
{
    if (!ds || batch_size == 0)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_dataset_next_batch: %s",
                            ds ? "batch_size 0" : "dataset NULL");
    const storage *st = ds->st;
    for (size_t b = 0; b < batch_size; b++) {
        if (ds->offset == ds->n) {
            ds->epoch++;
            ds->offset = 0;
            ds->order_ready = false;
        }
        if (!ds->order_ready)
            prepare_epoch(ds);
        uint32_t s = ds->order[ds->offset++];
        if (x)
            memcpy(x + b * st->dim, st->pixels + (size_t)s * st->dim,
                   st->dim * sizeof *x);
        if (y)
            y[b] = st->labels[s];
    }
    return RF_OK;
}

void rf_dataset_position(const rf_dataset *ds, uint64_t *epoch, size_t *offset)
{
    /* An epoch that has been returned completely reads as the next one at
     * offset 0. */
    bool done = ds && ds->offset == ds->n;
    if (epoch)
        *epoch = ds ? ds->epoch + done : 0;
    if (offset)
        *offset = ds && !done ? ds->offset : 0;
}

rf_status rf_dataset_seek(rf_dataset *ds, uint64_t epoch, size_t offset)
{
    if (!ds || offset >= ds->n)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_dataset_seek: offset %zu out of range (size "
                            "%zu)",
                            offset, ds ? ds->n : 0);
    ds->epoch = epoch;
    ds->offset = offset;
    ds->order_ready = false;
    return RF_OK;
}
