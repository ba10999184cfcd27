/* rdmaflow/data.h: training input: an in-memory dataset of images and labels
 * read from IDX files (MNIST / Fashion-MNIST, gzip or plain), with seeded
 * per-epoch shuffling, batching that wraps around epochs, and sharding
 * across the workers of a distributed job. Shuffles and shards are
 * specified exactly (splitmix64-seeded xoshiro256**, Fisher-Yates; see
 * graph/data/rng.h) and so are identical on every machine. */
#ifndef RDMAFLOW_DATA_H
#define RDMAFLOW_DATA_H

#include "rdmaflow/api.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmaflow/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where Debian's dataset-fashion-mnist package installs the files
 * {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz. */
#define RF_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"

typedef enum rf_data_split {
    RF_DATA_TRAIN = 0, /* train-*: 60000 examples */
    RF_DATA_TEST,      /* t10k-*: 10000 examples */
} rf_data_split;

/* A dataset: a list of examples over shared, read-only storage (pixels as
 * floats in [0, 1], i.e. byte / 255, and int32 labels), plus its own
 * iteration state. A shard is a dataset too. One dataset must not be used
 * by two threads at once; different datasets sharing storage may be. */
typedef struct rf_dataset rf_dataset;

/* Loads an IDX3 images file and an IDX1 labels file (same count). On
 * failure *out is NULL, nothing is kept, and the status is RF_ERR_IO
 * (missing or unreadable file), RF_ERR_CORRUPT (bad magic, dimensions
 * inconsistent with the file size, truncated or damaged gzip data, image
 * and label counts that differ) or RF_ERR_NO_MEMORY, with a message naming
 * the file and the problem. */
RF_API rf_status rf_dataset_load_idx(const char *images_path,
                                     const char *labels_path, rf_dataset **out);

/* Loads Fashion-MNIST's split from dir (NULL: the RF_FASHION_MNIST_DIR
 * environment variable if set, else the RF_FASHION_MNIST_DIR default above)
 * and checks what Fashion-MNIST must be: 28x28 images, labels 0..9
 * (RF_ERR_CORRUPT naming the file otherwise). */
RF_API rf_status rf_dataset_load_fashion_mnist(const char *dir,
                                               rf_data_split split,
                                               rf_dataset **out);

/* Frees the dataset; the storage goes with the last dataset using it. */
RF_API void rf_dataset_free(rf_dataset *ds);

RF_API size_t rf_dataset_size(const rf_dataset *ds); /* examples in ds */
RF_API uint32_t rf_dataset_rows(const rf_dataset *ds);
RF_API uint32_t rf_dataset_cols(const rf_dataset *ds);
RF_API size_t rf_dataset_example_dim(const rf_dataset *ds); /* rows * cols */
/* 1 + the largest label in the loaded files (not just this shard). */
RF_API int32_t rf_dataset_num_classes(const rf_dataset *ds);

/* Example i of ds (in ds's own order: file order for a loaded dataset, the
 * shard's order for a shard; not the shuffled order), i < size. *x points
 * into the shared storage (example_dim floats); source, if not NULL, gets
 * the example's index in the files. */
RF_API rf_status rf_dataset_example(const rf_dataset *ds, size_t i,
                                    const float **x, int32_t *y,
                                    size_t *source);

/* Shard task_index of num_tasks: the examples of ds are permuted with a
 * Fisher-Yates shuffle seeded by (seed, stream "shard"), and shard t takes
 * the positions p with p % num_tasks == t, in that order. The shards of one
 * seed partition ds; their sizes differ by at most one. The shard starts
 * unshuffled at epoch 0. RF_ERR_INVALID_ARG if task_index >= num_tasks or
 * the shard would be empty. */
RF_API rf_status rf_dataset_shard(const rf_dataset *ds, uint32_t num_tasks,
                                  uint32_t task_index, uint64_t seed,
                                  rf_dataset **out);

/* Shuffling for iteration: when on, epoch e visits the examples in the
 * order of a Fisher-Yates shuffle seeded by (seed, stream e), so every
 * epoch is a fresh permutation and a (seed, epoch) pair always gives the
 * same one; when off (the default), in ds's own order. Rewinds to epoch 0. */
RF_API void rf_dataset_set_shuffle(rf_dataset *ds, bool shuffle, uint64_t seed);

/* Copies the next batch_size examples into x (batch_size * example_dim
 * floats, row-major) and y (batch_size labels); either may be NULL to skip
 * it. When an epoch ends mid-batch, the batch continues with the next
 * epoch's order (TensorFlow's repeat-then-batch). RF_ERR_INVALID_ARG for
 * batch_size 0 or NULL ds. */
RF_API rf_status rf_dataset_next_batch(rf_dataset *ds, size_t batch_size,
                                       float *x, int32_t *y);

/* Where the iteration is: epoch number (from 0) and examples of it already
 * returned. */
RF_API void rf_dataset_position(const rf_dataset *ds, uint64_t *epoch,
                                size_t *offset);

/* Moves the iteration to (epoch, offset), offset < size, e.g. to resume
 * from a checkpoint. */
RF_API rf_status rf_dataset_seek(rf_dataset *ds, uint64_t epoch, size_t offset);

#ifdef __cplusplus
}
#endif
#endif
