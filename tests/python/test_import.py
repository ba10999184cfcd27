"""tests/python/test_import.py (ctest python.import): the package imports
from the build tree, reports the library's version, answers to
TensorFlow 1.x's compat.v1 name, and has the TF 1.x names the
"Distributed TensorFlow" tutorial's trainer.py uses."""

# ctest-timeout: 60

import functools
import re
import subprocess
from pathlib import Path

import pytest

# Every name the tutorial's program (examples/python/trainer.py) reaches
# through `tf.`.
TUTORIAL_NAMES = [
    "train.ClusterSpec",
    "train.Server",
    "train.replica_device_setter",
    "train.MonitoredTrainingSession",
    "train.StopAtStepHook",
    "train.AdagradOptimizer",
    "train.SyncReplicasOptimizer",
    "contrib.framework.get_or_create_global_step",
    "app.run",
    "layers.dense",
    "nn.relu",
    "losses.sparse_softmax_cross_entropy",
    "errors.AbortedError",
]


def test_imports_from_build_tree(build_dir):
    import rdmaflow
    where = Path(rdmaflow.__file__).resolve()
    assert where == (build_dir / "python" / "rdmaflow" /
                     "__init__.py").resolve()


def test_version_is_the_librarys(tools):
    import rdmaflow
    out = subprocess.run([tools.rf_trainer, "--version"], check=True,
                         capture_output=True, text=True, timeout=30).stdout
    # "rf-trainer (rdmaflow) 0.1.0 (git 684aa11409fc)"
    m = re.match(r"rf-trainer \(rdmaflow\) (\S+)", out)
    assert m, f"rf-trainer --version printed {out!r}"
    assert rdmaflow.__version__ == m.group(1)


def test_version_in_a_fresh_interpreter(python, tmp_path):
    # as a user types it, from outside the tree (PYTHONPATH: build/python)
    out = subprocess.run(
        [python, "-c", "import rdmaflow; print(rdmaflow.__version__)"],
        check=True, capture_output=True, text=True, cwd=tmp_path,
        timeout=60).stdout
    import rdmaflow
    assert out == rdmaflow.__version__ + "\n"


def test_compat_v1_is_the_package():
    import rdmaflow
    import rdmaflow.compat.v1 as tf
    assert tf is rdmaflow
    assert rdmaflow.compat.v1 is rdmaflow


@pytest.mark.parametrize("name", TUTORIAL_NAMES)
def test_tutorial_name(name):
    import rdmaflow as tf
    try:
        obj = functools.reduce(getattr, name.split("."), tf)
    except AttributeError as e:
        pytest.fail(f"tf.{name}: {e}")
    assert callable(obj), f"tf.{name} is {obj!r}, not callable"


def test_aborted_error_is_an_op_error():
    import rdmaflow as tf
    assert issubclass(tf.errors.AbortedError, tf.errors.OpError)
    assert issubclass(tf.errors.OpError, Exception)
