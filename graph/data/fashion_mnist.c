/* graph/data/fashion_mnist.c: Fashion-MNIST's file names and the shape it
 * must have (28x28 images, labels 0..9) on top of rf_dataset_load_idx. */
#include <stdio.h>
#include <sys/stat.h>

#include "rdmaflow/data.h"
#include "rdmaflow/env.h"
#include "rdmaflow/status.h"

#define FMNIST_SIDE    28
#define FMNIST_CLASSES 10

rf_status rf_dataset_load_fashion_mnist(const char *dir, rf_data_split split,
                                        rf_dataset **out)
{
    if (!out)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_dataset_load_fashion_mnist: out NULL");
    *out = NULL;
    if (split != RF_DATA_TRAIN && split != RF_DATA_TEST)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_dataset_load_fashion_mnist: unknown split %d",
                            (int)split);
    if (!dir)
        dir = rf_setting_str("RF_FASHION_MNIST_DIR");
    struct stat sb;
    if (stat(dir, &sb) == 0 && !S_ISDIR(sb.st_mode))
        return rf_error_set(RF_ERR_IO,
                            "%s is not a directory (Fashion-MNIST is read "
                            "from a directory of IDX files)",
                            dir);
    const char *prefix = split == RF_DATA_TRAIN ? "train" : "t10k";
    char images[4096], labels[4096];
    int a = snprintf(images, sizeof images, "%s/%s-images-idx3-ubyte.gz", dir,
                     prefix);
    int b = snprintf(labels, sizeof labels, "%s/%s-labels-idx1-ubyte.gz", dir,
                     prefix);
    if (a < 0 || b < 0 || (size_t)a >= sizeof images ||
        (size_t)b >= sizeof labels)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_dataset_load_fashion_mnist: directory name "
                            "too long");

    rf_dataset *ds = NULL;
    rf_status st = rf_dataset_load_idx(images, labels, &ds);
    if (st)
        return st;
    if (rf_dataset_rows(ds) != FMNIST_SIDE ||
        rf_dataset_cols(ds) != FMNIST_SIDE) {
        st = rf_error_set(RF_ERR_CORRUPT,
                          "%s: images are %ux%u, Fashion-MNIST's are 28x28",
                          images, rf_dataset_rows(ds), rf_dataset_cols(ds));
    } else if (rf_dataset_num_classes(ds) > FMNIST_CLASSES) {
        st = rf_error_set(RF_ERR_CORRUPT,
                          "%s: label %d is outside Fashion-MNIST's 0..9",
                          labels, (int)rf_dataset_num_classes(ds) - 1);
    }
    if (st) {
        rf_dataset_free(ds);
        return st;
    }
    *out = ds;
    return RF_OK;
}
