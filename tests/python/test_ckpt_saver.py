"""tests/python/test_ckpt_saver.py (ctest python.ckpt_saver):
CheckpointSaverHook's max_failed_saves, rdmaflow's keyword (also
MonitoredTrainingSession's): the default 3 and 0 (never stop) make a
hook, a negative, non-int or bool value is refused naming the argument,
both by the Python class and by the extension it calls."""

# ctest-timeout: 60

import inspect

import pytest

import rdmaflow as tf
from rdmaflow import _rdmaflow as _rf


def test_default_is_three():
    sig = inspect.signature(tf.train.MonitoredTrainingSession)
    assert sig.parameters["max_failed_saves"].default == 3
    sig = inspect.signature(tf.train.CheckpointSaverHook)
    assert sig.parameters["max_failed_saves"].default == 3


@pytest.mark.parametrize("n", [0, 1, 3, 1000])
def test_accepted(tmp_path, n):
    hook = tf.train.CheckpointSaverHook(str(tmp_path), save_steps=10,
                                        max_failed_saves=n)
    assert hook._c_hook(None) is not None
    assert _rf.checkpoint_saver_hook(str(tmp_path), 0.0, 10, 5, n) is not None


@pytest.mark.parametrize("bad", [-1, 1.5, "3", True, None])
def test_refused_by_the_class(tmp_path, bad):
    with pytest.raises(ValueError, match=r"max_failed_saves=.*an int >= 0"):
        tf.train.CheckpointSaverHook(str(tmp_path), save_steps=10,
                                     max_failed_saves=bad)


def test_refused_by_the_extension(tmp_path):
    with pytest.raises(ValueError, match=r"max_failed_saves: -1 is out of "
                                         r"range"):
        _rf.checkpoint_saver_hook(str(tmp_path), 0.0, 10, 5, -1)
    with pytest.raises(TypeError, match="max_failed_saves: expected an int"):
        _rf.checkpoint_saver_hook(str(tmp_path), 0.0, 10, 5, "3")
