"""tests/python/test_data_ckpt.py (ctest python.data_ckpt): rdmaflow.data's
Fashion-MNIST batches (Debian's dataset-fashion-mnist, checked against
the IDX files read here: shapes, dtypes, pixel values and range; the same
seed gives the same batches, another seed another order; shards
partition the set), and TensorFlow 1.x's checkpoint readers
(tf.train.latest_checkpoint, load_checkpoint, list_variables,
get_tensor) on a checkpoint directory rf-trainer writes, their values
checked against the files' bytes parsed here and against rf-trainer's
--variables_out; a truncated or damaged copy is refused with
tf.errors.DataLossError naming the file."""

# ctest-timeout: 120

import functools
import gzip
import json
import os
import re
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

import rdmaflow as tf

DATA_DIR = Path(os.environ.get("RF_FASHION_MNIST_DIR")
                or "/usr/share/datasets/fashion-mnist")
FILES = {"train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
         "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")}
SIZES = {"train": 60000, "test": 10000}


@functools.lru_cache(maxsize=None)
def idx(split):
    """(pixels uint8 [n, 784], labels uint8 [n]) read from the IDX files
    here, independently of the extension (once per split); a missing file
    fails the test saying what to install."""
    images, labels = (DATA_DIR / f for f in FILES[split])
    for f in (images, labels):
        if not f.is_file():
            pytest.fail(f"Fashion-MNIST is missing: {f} (Debian's package "
                        "dataset-fashion-mnist, which tools/rf-setup deps "
                        "installs; or set RF_FASHION_MNIST_DIR)",
                        pytrace=False)
    with gzip.open(images) as f:
        raw = f.read()
    magic, n, rows, cols = struct.unpack(">IIII", raw[:16])
    assert (magic, rows, cols) == (2051, 28, 28)
    pixels = np.frombuffer(raw, np.uint8, offset=16).reshape(n, rows * cols)
    with gzip.open(labels) as f:
        raw = f.read()
    magic, m = struct.unpack(">II", raw[:8])
    assert (magic, m) == (2049, n)
    return pixels, np.frombuffer(raw, np.uint8, offset=8)


@pytest.fixture(scope="module")
def test_idx():
    return idx("test")


def dataset(split):
    idx(split)  # a clear failure when the files are missing
    return tf.data.Dataset.fashion_mnist(split)


def rows(x):
    """x's rows as sortable byte strings (a multiset of examples)."""
    x = np.ascontiguousarray(x)
    return np.sort(x.view(np.dtype((np.void, x.shape[1] * x.itemsize)))
                   .ravel())


# ---- rdmaflow.data ---------------------------------------------------------


def test_sizes():
    for split in ("train", "test"):
        d = dataset(split)
        assert (d.size, d.example_dim, d.num_classes) == \
            (SIZES[split], 784, 10)


def test_batches_are_the_files_examples(test_idx):
    pixels, labels = test_idx
    d = dataset("test")
    x, y = d.next_batch(250)
    assert x.shape == (250, 784) and x.dtype == np.float32
    assert y.shape == (250,) and y.dtype == np.int32
    # unshuffled: the files' order, pixels scaled to [0, 1]
    np.testing.assert_array_equal(y, labels[:250])
    np.testing.assert_array_equal(
        x, pixels[:250].astype(np.float32) / np.float32(255))
    x2, y2 = d.next_batch(250)
    np.testing.assert_array_equal(y2, labels[250:500])
    xs, ys = d.next_batch(SIZES["test"])  # across the epoch's end
    assert 0.0 <= xs.min() and xs.max() <= 1.0
    assert xs.min() == 0.0 and xs.max() == 1.0
    assert set(np.unique(ys)) == set(range(10))


def test_train_split_labels():
    pixels, labels = idx("train")
    d = dataset("train")
    x, y = d.next_batch(1000)
    np.testing.assert_array_equal(y, labels[:1000])
    np.testing.assert_array_equal(
        x, pixels[:1000].astype(np.float32) / np.float32(255))


def test_same_seed_same_batches_other_seed_other_order():
    a = dataset("test").shuffle(5)
    b = dataset("test").shuffle(5)
    c = dataset("test").shuffle(6)
    plain = dataset("test")
    for _ in range(3):
        xa, ya = a.next_batch(100)
        xb, yb = b.next_batch(100)
        np.testing.assert_array_equal(xa, xb)
        np.testing.assert_array_equal(ya, yb)
    xc, yc = c.next_batch(100)
    xp, yp = plain.next_batch(100)
    assert not np.array_equal(xa, xc) and not np.array_equal(ya, yc)
    assert not np.array_equal(xa, xp)


def test_shuffled_epochs_are_permutations(test_idx):
    pixels, labels = test_idx
    n = SIZES["test"]
    d = dataset("test").shuffle(11)
    first = d.next_batch(6000)
    second = d.next_batch(6000)  # 4000 of epoch 0, then 2000 of epoch 1
    epoch0 = np.concatenate([first[0], second[0][:4000]])
    expected = rows(pixels.astype(np.float32) / np.float32(255))
    np.testing.assert_array_equal(rows(epoch0), expected)
    np.testing.assert_array_equal(
        np.sort(np.concatenate([first[1], second[1][:4000]])),
        np.sort(labels.astype(np.int32)))
    rest = d.next_batch(n - 2000)  # the remainder of epoch 1
    epoch1 = np.concatenate([second[0][4000:], rest[0]])
    np.testing.assert_array_equal(rows(epoch1), expected)
    # each epoch has an order of its own
    assert not np.array_equal(epoch0[:100], epoch1[:100])


def test_shards_partition_the_set(test_idx):
    pixels, _ = test_idx
    d = dataset("test")
    n = SIZES["test"]
    for num in (2, 3, 7):
        shards = [d.shard(num, i, 42) for i in range(num)]
        sizes = [s.size for s in shards]
        assert sum(sizes) == n and max(sizes) - min(sizes) <= 1
        parts = [s.next_batch(s.size)[0] for s in shards]
        np.testing.assert_array_equal(
            rows(np.concatenate(parts)),
            rows(pixels.astype(np.float32) / np.float32(255)))
    again = d.shard(3, 1, 42).next_batch(500)
    np.testing.assert_array_equal(again[0],
                                  d.shard(3, 1, 42).next_batch(500)[0])
    other = d.shard(3, 1, 43).next_batch(500)
    assert not np.array_equal(again[0], other[0])


def test_missing_split_and_directory(tmp_path):
    with pytest.raises(ValueError, match="split"):
        tf.data.Dataset.fashion_mnist("validation")
    with pytest.raises(tf.errors.OpError, match=str(tmp_path)):
        tf.data.Dataset.fashion_mnist("test", data_dir=str(tmp_path))


# ---- checkpoints rf-trainer writes ---------------------------------------

STEPS, EVERY = 50, 20


def read_safetensors(path):
    """{name: array} and the metadata of a safetensors file, parsed here:
    an 8-byte little-endian header length, a JSON header, the data."""
    raw = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    dtypes = {"F32": np.float32, "I32": np.int32, "I64": np.int64}
    tensors = {}
    for name, t in header.items():
        begin, end = t["data_offsets"]
        tensors[name] = np.frombuffer(
            raw[8 + n + begin:8 + n + end],
            dtypes[t["dtype"]]).reshape(t["shape"])
    return tensors, meta


@pytest.fixture(scope="module")
def trained(tmp_path_factory, tools):
    """rf-trainer's mlp:16 (1 ps, 1 worker on loopback), STEPS steps,
    a checkpoint every EVERY steps and at the end, and its final
    variables (--variables_out)."""
    idx("train")
    d = tmp_path_factory.mktemp("trained")
    ckpt = d / "ckpt"
    variables = d / "variables.safetensors"
    cmd = [tools.rf_launch, "--ps", "1", "--workers", "1", "--timeout", "90",
           "--", tools.rf_trainer, "--model=mlp:16", "--optimizer=adagrad",
           f"--train_steps={STEPS}", "--batch_size=50", "--log_every=0",
           f"--checkpoint_dir={ckpt}", f"--save_checkpoint_steps={EVERY}",
           f"--variables_out={variables}"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, (
        f"{' '.join(cmd)} exited {out.returncode}:\n{out.stdout}\n"
        f"{out.stderr}")
    return ckpt, variables


EXPECTED = [("dense/bias", [16]), ("dense/bias/Adagrad", [16]),
            ("dense/kernel", [784, 16]), ("dense/kernel/Adagrad", [784, 16]),
            ("global_step", []), ("logits/bias", [10]),
            ("logits/bias/Adagrad", [10]), ("logits/kernel", [16, 10]),
            ("logits/kernel/Adagrad", [16, 10])]


def test_latest_checkpoint(trained):
    ckpt, _ = trained
    latest = tf.train.latest_checkpoint(str(ckpt))
    assert latest == str(ckpt / ("model.ckpt-%d.safetensors" % STEPS))
    assert tf.train.checkpoint_exists(latest)
    state = tf.train.get_checkpoint_state(str(ckpt))
    assert state.model_checkpoint_path == latest
    assert state.all_model_checkpoint_paths == [
        str(ckpt / ("model.ckpt-%d.safetensors" % s))
        for s in (0, 20, 40, 50)]
    assert tf.train.latest_checkpoint(str(ckpt / "nowhere")) is None


def test_list_variables(trained, tools):
    ckpt, _ = trained
    assert tf.train.list_variables(str(ckpt)) == EXPECTED
    # what rf-ckpt lists of the same directory
    out = subprocess.run([tools.rf_ckpt, "list", str(ckpt)], check=True,
                         capture_output=True, text=True, timeout=30).stdout
    listed = re.findall(r"^(\S+)\s+(F32|I32|I64)\s+\[([\d,]*)\]\s+\d+\s+"
                        r"[0-9a-f]{8}$", out, re.MULTILINE)
    assert [(name, [int(d) for d in dims.split(",") if d])
            for name, _, dims in listed] == EXPECTED, out
    latest = tf.train.latest_checkpoint(str(ckpt))
    assert tf.train.list_variables(latest) == EXPECTED
    reader = tf.train.load_checkpoint(str(ckpt))
    assert reader.get_variable_to_shape_map() == dict(EXPECTED)
    dtypes = reader.get_variable_to_dtype_map()
    assert dtypes["global_step"] == tf.int64
    assert all(dtypes[n] == tf.float32 for n, _ in EXPECTED
               if n != "global_step")


def test_get_tensor_values(trained):
    ckpt, variables = trained
    for path in sorted(ckpt.glob("model.ckpt-*.safetensors")):
        step = int(path.name.split("-")[1].split(".")[0])
        expected, meta = read_safetensors(path)
        assert meta["global_step"] == str(step)
        reader = tf.train.load_checkpoint(str(path))
        assert reader.path == str(path)
        assert sorted(expected) == [n for n, _ in EXPECTED]
        for name, want in expected.items():
            got = reader.get_tensor(name)
            assert np.asarray(got).dtype == want.dtype, name
            np.testing.assert_array_equal(got, want, err_msg=name)
        gs = reader.get_tensor("global_step")
        assert np.ndim(gs) == 0 and gs == step  # a numpy scalar
    # the last checkpoint is the final variables rf-trainer wrote
    final, _ = read_safetensors(variables)
    reader = tf.train.load_checkpoint(str(ckpt))
    assert sorted(final) == [n for n, _ in EXPECTED]
    for name, want in final.items():
        np.testing.assert_array_equal(reader.get_tensor(name), want,
                                      err_msg=name)
    assert tf.train.load_variable(str(ckpt), "global_step") == STEPS
    # trained: not the initial values
    first = tf.train.load_checkpoint(
        str(ckpt / "model.ckpt-0.safetensors"))
    assert not np.array_equal(first.get_tensor("dense/kernel"),
                              final["dense/kernel"])
    np.testing.assert_array_equal(first.get_tensor("dense/bias/Adagrad"),
                                  np.full(16, 0.1, np.float32))


def test_unknown_tensor_is_not_found(trained):
    ckpt, _ = trained
    reader = tf.train.load_checkpoint(str(ckpt))
    assert reader.has_tensor("dense/kernel")
    assert not reader.has_tensor("dense/kernel/Adam")
    with pytest.raises(tf.errors.NotFoundError, match="dense/kernel/Adam"):
        reader.get_tensor("dense/kernel/Adam")
    np.testing.assert_array_equal(reader.get_tensor("logits/bias").shape,
                                  [10])


@pytest.mark.parametrize("damage", ["truncated", "header-only", "flipped",
                                    "empty"])
def test_damaged_copy_is_data_loss(trained, tmp_path, damage):
    ckpt, _ = trained
    latest = Path(tf.train.latest_checkpoint(str(ckpt)))
    data = latest.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    copy = tmp_path / latest.name
    if damage == "truncated":
        copy.write_bytes(data[:len(data) * 2 // 3])
    elif damage == "header-only":
        copy.write_bytes(data[:8 + n])
    elif damage == "flipped":  # one bit of the last tensor's data
        flipped = bytearray(data)
        flipped[-5] ^= 0x10
        copy.write_bytes(bytes(flipped))
    else:
        copy.write_bytes(b"")
    with pytest.raises(tf.errors.DataLossError) as e:
        tf.train.load_checkpoint(str(copy))
    assert str(copy) in str(e.value)
    assert e.value.error_code == tf.errors.DATA_LOSS
    with pytest.raises(tf.errors.DataLossError, match=str(copy)):
        tf.train.list_variables(str(copy))
    # the original still reads
    assert tf.train.load_checkpoint(str(latest)).get_tensor(
        "global_step") == STEPS


def test_truncated_latest_in_a_directory(trained, tmp_path):
    # a directory's reader is its newest checkpoint's, damaged or not (no
    # silent fall back to an older one)
    ckpt, _ = trained
    copy = tmp_path / "ckpt"
    shutil.copytree(ckpt, copy)
    latest = Path(tf.train.latest_checkpoint(str(copy)))
    latest.write_bytes(latest.read_bytes()[:1000])
    with pytest.raises(tf.errors.DataLossError, match=str(latest)):
        tf.train.load_checkpoint(str(copy))
    with pytest.raises(tf.errors.DataLossError, match=str(latest)):
        tf.train.list_variables(str(copy))
