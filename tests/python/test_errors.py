"""tests/python/test_errors.py (ctest python.errors): rdmaflow's rf_status
codes as TensorFlow 1.x's exceptions. Every status maps to the class
docs/guide/python.md's table names (tf.errors.error_class and
_make_error, which the extension raises through), a subclass of
tf.errors.OpError with TF's error_code, carrying the library's message
and the status; NUMERIC is tf.train.NanLossDuringTrainingError, a
RuntimeError; errors the extension itself raises (checkpoint readers on
a missing or corrupt file, feeds, optimizer settings, the dataset) come
through that mapping."""

# ctest-timeout: 60

import pickle
import re

import numpy as np
import pytest

import rdmaflow as tf
from rdmaflow import _rdmaflow as _rf

# TensorFlow's canonical error codes (error_codes.proto).
TF_CODES = {"OK": 0, "CANCELLED": 1, "UNKNOWN": 2, "INVALID_ARGUMENT": 3,
            "DEADLINE_EXCEEDED": 4, "NOT_FOUND": 5, "ALREADY_EXISTS": 6,
            "PERMISSION_DENIED": 7, "RESOURCE_EXHAUSTED": 8,
            "FAILED_PRECONDITION": 9, "ABORTED": 10, "OUT_OF_RANGE": 11,
            "UNIMPLEMENTED": 12, "INTERNAL": 13, "UNAVAILABLE": 14,
            "DATA_LOSS": 15, "UNAUTHENTICATED": 16}

# Each tf.errors class and its code, as TensorFlow 1.x has them.
TF_CLASSES = {
    "CancelledError": "CANCELLED", "UnknownError": "UNKNOWN",
    "InvalidArgumentError": "INVALID_ARGUMENT",
    "DeadlineExceededError": "DEADLINE_EXCEEDED",
    "NotFoundError": "NOT_FOUND", "AlreadyExistsError": "ALREADY_EXISTS",
    "PermissionDeniedError": "PERMISSION_DENIED",
    "ResourceExhaustedError": "RESOURCE_EXHAUSTED",
    "FailedPreconditionError": "FAILED_PRECONDITION",
    "AbortedError": "ABORTED", "OutOfRangeError": "OUT_OF_RANGE",
    "UnimplementedError": "UNIMPLEMENTED", "InternalError": "INTERNAL",
    "UnavailableError": "UNAVAILABLE", "DataLossError": "DATA_LOSS",
    "UnauthenticatedError": "UNAUTHENTICATED",
}

# docs/guide/python.md, "Errors and checkpoints": rf_status -> class.
MAPPING = {
    "RF_ERR_INVALID_ARG": "InvalidArgumentError",
    "RF_ERR_NO_MEMORY": "ResourceExhaustedError",
    "RF_ERR_NO_RESOURCE": "ResourceExhaustedError",
    "RF_ERR_UNSUPPORTED": "UnimplementedError",
    "RF_ERR_REMOTE_ACCESS": "PermissionDeniedError",
    "RF_ERR_TIMEOUT": "DeadlineExceededError",
    "RF_ERR_DISCONNECTED": "UnavailableError",
    "RF_ERR_UNAVAILABLE": "UnavailableError",
    "RF_ERR_ABORTED": "AbortedError",
    "RF_ERR_IO": "InternalError",
    "RF_ERR_CORRUPT": "DataLossError",
    "RF_ERR_AUTH": "UnauthenticatedError",
    "RF_ERR_UNKNOWN": "UnknownError",  # not in the table: TF's UNKNOWN
}


def statuses():
    """Every rf_status error code the extension exports: {name: value}."""
    return {k: getattr(_rf, k) for k in dir(_rf)
            if k.startswith("RF_ERR_")}


def test_codes_are_tensorflows():
    for name, code in TF_CODES.items():
        assert getattr(tf.errors, name) == code, name
    for cls_name, code_name in TF_CLASSES.items():
        cls = getattr(tf.errors, cls_name)
        assert issubclass(cls, tf.errors.OpError), cls_name
        e = cls(None, None, "what happened")
        assert e.error_code == TF_CODES[code_name], cls_name
        assert e.message == str(e) == "what happened"
        assert e.node_def is None and e.op is None
        assert e.rf_status == 0  # raised by Python code, not a status
        with pytest.raises(tf.errors.OpError):
            raise e


def test_every_status_is_mapped():
    names = set(statuses())
    assert names == set(MAPPING) | {"RF_ERR_NUMERIC"}, (
        "rf_status codes without a documented class: %s"
        % sorted(names - set(MAPPING) - {"RF_ERR_NUMERIC"}))
    assert _rf.RF_OK == 0
    assert all(v < 0 for v in statuses().values())


@pytest.mark.parametrize("name", sorted(MAPPING))
def test_status_maps_to_its_class(name):
    status = getattr(_rf, name)
    cls = getattr(tf.errors, MAPPING[name])
    assert tf.errors.error_class(status) is cls
    message = "ps task 1 at 10.0.0.2:2223: shard 'dense/kernel' (%s)" % name
    e = tf.errors._make_error(status, message)
    assert type(e) is cls
    assert isinstance(e, tf.errors.OpError)
    assert e.error_code == TF_CODES[TF_CLASSES[MAPPING[name]]]
    assert e.rf_status == status
    assert message in str(e) and message in e.message
    assert _rf.status_name(status) in str(e)  # which status it was
    # raised, it is caught as TensorFlow code catches it
    with pytest.raises(cls) as caught:
        tf.errors.raise_status(status, message)
    assert caught.value.rf_status == status


def test_nan_loss_is_a_runtime_error():
    assert tf.train.NanLossDuringTrainingError is \
        tf.errors.NanLossDuringTrainingError
    cls = tf.errors.error_class(_rf.RF_ERR_NUMERIC)
    assert cls is tf.train.NanLossDuringTrainingError
    assert issubclass(cls, RuntimeError)
    assert not issubclass(cls, tf.errors.OpError)
    e = tf.errors._make_error(_rf.RF_ERR_NUMERIC, "loss is NaN at step 7")
    assert type(e) is cls
    assert "loss is NaN at step 7" in str(e)
    with pytest.raises(RuntimeError):
        raise e
    assert str(cls()) == "NaN loss during training."


def test_unknown_status_is_unknown_error():
    assert tf.errors.error_class(-999) is tf.errors.UnknownError
    e = tf.errors._make_error(-999, "something new")
    assert type(e) is tf.errors.UnknownError
    assert e.error_code == tf.errors.UNKNOWN
    assert "something new" in str(e)


def test_errors_pickle():
    e = tf.errors._make_error(_rf.RF_ERR_ABORTED, "ps 1 restarted")
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is tf.errors.AbortedError
    assert back.message == e.message and back.error_code == e.error_code


def test_doc_table_is_the_mapping(source_dir):
    text = (source_dir / "docs" / "guide" / "python.md").read_text()
    rows = [line for line in text.splitlines()
            if line.startswith("| `tf.errors.OpError` and subclasses")]
    assert len(rows) == 1, "the errors row of docs/guide/python.md"
    body = rows[0].split("library's message:", 1)[1]
    documented = {}
    for codes, cls in re.findall(
            r"([A-Z][A-Z_]+(?: and [A-Z][A-Z_]+)*) (?:\([^)]*\) )?`?"
            r"(?:tf\.train\.)?(\w+Error)", body):
        for code in codes.split(" and "):
            documented["RF_ERR_" + code] = cls
    expected = {k: v for k, v in MAPPING.items() if k != "RF_ERR_UNKNOWN"}
    expected["RF_ERR_NUMERIC"] = "NanLossDuringTrainingError"
    assert documented == expected
    for name, cls in documented.items():
        assert tf.errors.error_class(getattr(_rf, name)).__name__ == cls


# ---- raised by the extension, through the mapping ------------------------


def test_missing_checkpoint_file(tmp_path):
    path = tmp_path / "model.ckpt-7.safetensors"
    with pytest.raises(tf.errors.OpError) as e:
        tf.train.load_checkpoint(str(path))
    assert str(path) in str(e.value)
    assert e.value.rf_status == _rf.RF_ERR_IO
    assert type(e.value) is tf.errors.InternalError  # IO, as documented
    with pytest.raises(tf.errors.OpError, match=re.escape(str(path))):
        tf.train.list_variables(str(path))


@pytest.mark.parametrize("content", [
    b"",
    b"\x07\x00\x00\x00\x00\x00\x00\x00{\"a\":1}",
    b"\x10\x00\x00\x00\x00\x00\x00\x00{}",
    b"not a checkpoint at all, just text\n" * 4,
], ids=["empty", "no-metadata", "short-header", "text"])
def test_corrupt_checkpoint_file(tmp_path, content):
    path = tmp_path / "model.ckpt-3.safetensors"
    path.write_bytes(content)
    with pytest.raises(tf.errors.DataLossError) as e:
        tf.train.load_checkpoint(str(path))
    assert str(path) in str(e.value)
    assert e.value.rf_status == _rf.RF_ERR_CORRUPT
    assert e.value.error_code == tf.errors.DATA_LOSS
    with pytest.raises(tf.errors.DataLossError):
        _rf.CheckpointReader(str(path))  # the extension's own reader


def test_feed_error_is_invalid_argument():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError) as e:
                sess.run(x * 2.0, {x: np.zeros(2, np.float64)})
            assert e.value.rf_status == _rf.RF_ERR_INVALID_ARG
            assert "'x'" in str(e.value)
            assert sess.run(x * 2.0, {x: [1, 2]}).tolist() == [2.0, 4.0]


@pytest.mark.parametrize("make, what", [
    (lambda: tf.train.AdamOptimizer(-1.0), "learning_rate"),
    (lambda: tf.train.MomentumOptimizer(0.1, 2.0), "momentum"),
    (lambda: tf.train.AdagradOptimizer(
        0.1, initial_accumulator_value=0.0), "initial_accumulator_value"),
    (lambda: tf.train.RMSPropOptimizer(0.1, decay=1.5), "decay"),
], ids=["adam-lr", "momentum", "adagrad-accumulator", "rmsprop-decay"])
def test_optimizer_settings_are_invalid_argument(make, what):
    with tf.Graph().as_default():
        w = tf.Variable(np.ones(2, np.float32), name="w")
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            make().minimize(tf.reduce_sum(w))
        assert what in str(e.value)
        assert e.value.rf_status == _rf.RF_ERR_INVALID_ARG


def test_dataset_missing_directory(tmp_path):
    with pytest.raises(tf.errors.OpError) as e:
        tf.data.Dataset.fashion_mnist("train", data_dir=str(tmp_path))
    assert str(tmp_path) in str(e.value)
    assert e.value.rf_status == _rf.RF_ERR_IO


def test_status_names():
    for name, value in statuses().items():
        assert _rf.status_name(value) == name
