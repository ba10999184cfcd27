/* tests/unit/data/test_fashion_mnist.c: the real Fashion-MNIST files of
 * Debian's dataset-fashion-mnist package: sizes, shapes, label and pixel
 * ranges, known properties (class balance, first labels, mean pixel), and
 * sharding the training set; plus the loader's own checks on impostor files
 * in a temporary directory. Exits 77 (skipped) when the files are absent. */
#include <stdbool.h>

#include "fixtures.h"
#include "rdmaflow/data.h"

static const char *data_dir(void)
{
    const char *d = getenv("RF_FASHION_MNIST_DIR");
    return d && *d ? d : RF_FASHION_MNIST_DIR;
}

static void check_split(rf_data_split split, size_t count, const int32_t *first,
                        double mean_lo, double mean_hi)
{
    rf_dataset *ds = NULL;
    CHECK(rf_dataset_load_fashion_mnist(NULL, split, &ds) == RF_OK,
          "load split %d", (int)split);
    if (!ds)
        return;
    CHECK(rf_dataset_size(ds) == count, "%zu examples", rf_dataset_size(ds));
    CHECK(rf_dataset_rows(ds) == 28 && rf_dataset_cols(ds) == 28 &&
              rf_dataset_example_dim(ds) == 784,
          "shape");
    CHECK(rf_dataset_num_classes(ds) == 10, "%d classes",
          (int)rf_dataset_num_classes(ds));
    size_t per_class[10] = {0};
    double sum = 0;
    float lo = 1, hi = 0;
    bool in_range = true;
    for (size_t i = 0; i < rf_dataset_size(ds); i++) {
        const float *x;
        int32_t y;
        rf_dataset_example(ds, i, &x, &y, NULL);
        if (y < 0 || y > 9) {
            CHECK(false, "label %d of example %zu", (int)y, i);
            break;
        }
        per_class[y]++;
        for (size_t k = 0; k < 784; k++) {
            in_range &= x[k] >= 0.0f && x[k] <= 1.0f;
            lo = x[k] < lo ? x[k] : lo;
            hi = x[k] > hi ? x[k] : hi;
            sum += x[k];
        }
        if (i < 10)
            CHECK(y == first[i], "label of example %zu is %d, expected %d", i,
                  (int)y, (int)first[i]);
    }
    CHECK(in_range && lo == 0.0f && hi == 1.0f, "pixels in [%g, %g]",
          (double)lo, (double)hi);
    /* Fashion-MNIST is balanced: count / 10 examples of every class. */
    for (int c = 0; c < 10; c++)
        CHECK(per_class[c] == count / 10, "class %d has %zu", c, per_class[c]);
    double mean = sum / ((double)count * 784);
    CHECK(mean > mean_lo && mean < mean_hi, "mean pixel %.5f", mean);

    if (split == RF_DATA_TRAIN) {
        /* 4 workers: 15000 each, disjoint, and roughly balanced classes. */
        static unsigned char owner[60000];
        memset(owner, 0, sizeof owner);
        for (uint32_t t = 0; t < 4; t++) {
            rf_dataset *s = NULL;
            CHECK(rf_dataset_shard(ds, 4, t, 2024, &s) == RF_OK, "shard");
            if (!s)
                continue;
            CHECK(rf_dataset_size(s) == 15000, "shard size %zu",
                  rf_dataset_size(s));
            size_t cls[10] = {0};
            for (size_t i = 0; i < rf_dataset_size(s); i++) {
                int32_t y;
                size_t src;
                rf_dataset_example(s, i, NULL, &y, &src);
                cls[y]++;
                CHECK(owner[src]++ == 0, "example %zu in two shards", src);
            }
            for (int c = 0; c < 10; c++)
                CHECK(cls[c] > 1300 && cls[c] < 1700,
                      "shard %u class %d has %zu", t, c, cls[c]);
            rf_dataset_set_shuffle(s, true, t);
            float x[32 * 784];
            int32_t y[32];
            CHECK(rf_dataset_next_batch(s, 32, x, y) == RF_OK, "batch");
            rf_dataset_free(s);
        }
    }
    rf_dataset_free(ds);
}

/* The loader's Fashion-MNIST checks, on files with the right names. */
static void test_impostors(void)
{
    make_tmp_dir();
    rf_dataset *ds = (rf_dataset *)&not_a_dataset;
    /* Missing directory: the error names the images file. */
    CHECK(rf_dataset_load_fashion_mnist(tmp_path("nowhere"), RF_DATA_TEST,
                                        &ds) == RF_ERR_IO &&
              ds == NULL &&
              strstr(rf_error_message(), "nowhere/t10k-images-idx3-ubyte.gz"),
          "missing dir: '%s'", rf_error_message());
    /* 2x2 images. */
    write_indexed_set(tmp_path("t10k-images-idx3-ubyte.gz"),
                      tmp_path("t10k-labels-idx1-ubyte.gz"), 20, 2, 2, 10);
    CHECK(rf_dataset_load_fashion_mnist(tmp_dir, RF_DATA_TEST, &ds) ==
                  RF_ERR_CORRUPT &&
              ds == NULL && strstr(rf_error_message(), "2x2") &&
              strstr(rf_error_message(), "t10k-images-idx3-ubyte.gz"),
          "2x2: '%s'", rf_error_message());
    /* 28x28 but 12 classes. */
    write_indexed_set(tmp_path("train-images-idx3-ubyte.gz"),
                      tmp_path("train-labels-idx1-ubyte.gz"), 24, 28, 28, 12);
    CHECK(rf_dataset_load_fashion_mnist(tmp_dir, RF_DATA_TRAIN, &ds) ==
                  RF_ERR_CORRUPT &&
              strstr(rf_error_message(), "label 11") &&
              strstr(rf_error_message(), "train-labels-idx1-ubyte.gz"),
          "12 classes: '%s'", rf_error_message());
    /* 28x28 with 10 classes loads. */
    write_indexed_set(tmp_path("train-images-idx3-ubyte.gz"),
                      tmp_path("train-labels-idx1-ubyte.gz"), 24, 28, 28, 10);
    CHECK(rf_dataset_load_fashion_mnist(tmp_dir, RF_DATA_TRAIN, &ds) == RF_OK &&
              rf_dataset_size(ds) == 24,
          "small valid set");
    rf_dataset_free(ds);
    CHECK(rf_dataset_load_fashion_mnist(tmp_dir, (rf_data_split)7, &ds) ==
              RF_ERR_INVALID_ARG,
          "bad split");
    remove_tmp_dir();
}

int main(void)
{
    test_impostors();
    char probe[4096];
    snprintf(probe, sizeof probe, "%s/train-images-idx3-ubyte.gz", data_dir());
    if (access(probe, R_OK) != 0) {
        printf("unit.data.fashion_mnist: %s missing (install "
               "dataset-fashion-mnist); real-data checks skipped\n",
               probe);
        return 77;
    }
    /* First labels and mean pixels are well-known properties of the set. */
    const int32_t train_first[10] = {9, 0, 0, 3, 0, 2, 7, 2, 5, 5};
    const int32_t test_first[10] = {9, 2, 1, 1, 6, 1, 4, 6, 5, 7};
    check_split(RF_DATA_TRAIN, 60000, train_first, 0.2855, 0.2865);
    check_split(RF_DATA_TEST, 10000, test_first, 0.280, 0.295);
    printf("unit.data.fashion_mnist: all checks passed\n");
    return 0;
}
