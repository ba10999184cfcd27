"""examples/python/fashion_mnist.py: Fashion-MNIST for the Python examples,
read with numpy from Debian's dataset-fashion-mnist
(/usr/share/datasets/fashion-mnist, or RF_FASHION_MNIST_DIR): images as
float32 [N, 784] in [0, 1], labels as int64 [N]; and a batch iterator
that reshuffles every epoch with a seed of its own."""

import gzip
import os
import sys

import numpy as np

DEFAULT_DIR = "/usr/share/datasets/fashion-mnist"
_FILES = {"train": ("train-images-idx3-ubyte.gz",
                    "train-labels-idx1-ubyte.gz"),
          "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")}


def _read_idx(path, magic, item_shape):
    try:
        with gzip.open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        sys.exit("fashion_mnist: cannot read %s: %s (install Debian's "
                 "dataset-fashion-mnist or set RF_FASHION_MNIST_DIR)"
                 % (path, e))
    header = 8 + 4 * len(item_shape)
    if len(data) < header or int.from_bytes(data[:4], "big") != magic:
        sys.exit("fashion_mnist: %s is not an IDX file (magic %d)"
                 % (path, magic))
    n = int.from_bytes(data[4:8], "big")
    dims = [int.from_bytes(data[8 + 4 * i:12 + 4 * i], "big")
            for i in range(len(item_shape))]
    if dims != list(item_shape) or len(data) != header + n * int(
            np.prod(item_shape or [1])):
        sys.exit("fashion_mnist: %s has a wrong size" % path)
    return np.frombuffer(data, np.uint8, offset=header).reshape(
        [n] + list(item_shape))


def load(split, data_dir=None):
    """(images float32 [N, 784], labels int64 [N]) of "train" or "test"."""
    data_dir = data_dir or os.environ.get("RF_FASHION_MNIST_DIR",
                                          DEFAULT_DIR)
    images_file, labels_file = _FILES[split]
    images = _read_idx(os.path.join(data_dir, images_file), 2051, (28, 28))
    labels = _read_idx(os.path.join(data_dir, labels_file), 2049, ())
    if len(images) != len(labels):
        sys.exit("fashion_mnist: %d images but %d labels in %s"
                 % (len(images), len(labels), data_dir))
    x = (images.reshape(len(images), 784) / np.float32(255)).astype(
        np.float32)
    return x, labels.astype(np.int64)


def batches(x, y, batch_size, seed):
    """Endless (x, y) batches, each a C-contiguous copy, in an order
    reshuffled every epoch."""
    rng = np.random.default_rng(seed)
    while True:
        order = rng.permutation(len(x))
        for i in range(0, len(order) - batch_size + 1, batch_size):
            idx = order[i:i + batch_size]
            yield x[idx], y[idx]
