"""rdmaflow.data: Fashion-MNIST batches exactly as rf-trainer makes them
(the C library's seeded per-epoch shuffles and shards, identical on every
machine), so a Python program and rf-trainer can train on the same
examples in the same order."""

import numpy as np

from rdmaflow import _rdmaflow as _rf


class Dataset:
    """A dataset in memory; next_batch gives (x float32 [n, dim], y int32
    [n]), continuing into the next epoch's order mid-batch."""

    def __init__(self, native):
        self._ds = native

    @classmethod
    def fashion_mnist(cls, split="train", data_dir=None):
        """Debian's dataset-fashion-mnist (or data_dir, or
        RF_FASHION_MNIST_DIR): split "train" (60000) or "test" (10000)."""
        return cls(_rf.Dataset.fashion_mnist(data_dir, split))

    @property
    def size(self):
        return self._ds.size

    @property
    def example_dim(self):
        return self._ds.example_dim

    @property
    def num_classes(self):
        return self._ds.num_classes

    def shard(self, num_tasks, task_index, seed):
        """Shard task_index of num_tasks of a permutation seeded by
        seed."""
        return Dataset(self._ds.shard(int(num_tasks), int(task_index),
                                      int(seed)))

    def shuffle(self, seed, on=True):
        """A fresh permutation every epoch, seeded by (seed, epoch);
        rewinds to epoch 0."""
        self._ds.set_shuffle(bool(on), int(seed))
        return self

    def next_batch(self, batch_size):
        x = np.empty((batch_size, self.example_dim), np.float32)
        y = np.empty((batch_size,), np.int32)
        self._ds.next_batch(int(batch_size), x, y)
        return x, y

    def all(self):
        """Every example in the dataset's own order: (x, y)."""
        n = self.size
        x = np.empty((n, self.example_dim), np.float32)
        y = np.empty((n,), np.int32)
        for i in range(n):
            pixels, label = self._ds.example(i)
            x[i] = np.frombuffer(pixels, np.float32)
            y[i] = label
        return x, y

    @property
    def position(self):
        return self._ds.position()
