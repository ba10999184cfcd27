"""tests/python/test_app_exit.py (ctest python.app_exit): tf.app.run's
exit statuses. A library error exits with rf_status_exit_code of its
status, the same table as rf-trainer's: a chief whose ps never comes up
within max_wait_secs exits 138 (retryable), its last line saying so;
main's return value is the exit status; an exception that is not
rdmaflow's is Python's (exit 1, traceback); exit_status() agrees with
the extension's table for every status."""

# ctest-timeout: 120

import subprocess
import sys

import rdmaflow as tf
from rdmaflow import _rdmaflow as _rf

PY = sys.executable

# README "Exit status".
WANT = {"RF_OK": 0, "RF_ERR_INVALID_ARG": 2, "RF_ERR_NO_MEMORY": 1,
        "RF_ERR_NO_RESOURCE": 1, "RF_ERR_UNSUPPORTED": 2,
        "RF_ERR_REMOTE_ACCESS": 1, "RF_ERR_TIMEOUT": 138,
        "RF_ERR_DISCONNECTED": 138, "RF_ERR_ABORTED": 138,
        "RF_ERR_UNAVAILABLE": 138, "RF_ERR_IO": 1, "RF_ERR_CORRUPT": 1,
        "RF_ERR_AUTH": 2, "RF_ERR_NUMERIC": 1}

CHIEF = """
import rdmaflow as tf

def main(argv):
    cluster = tf.train.ClusterSpec({"ps": ["127.0.0.1:%d"],
                                    "worker": ["127.0.0.1:%d"]})
    server = tf.train.Server(cluster, job_name="worker", task_index=0)
    with tf.device(tf.train.replica_device_setter(cluster=cluster)):
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        loss = tf.reduce_sum(tf.layers.dense(x, 1))
        gs = tf.train.get_or_create_global_step()
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(
            loss, global_step=gs)
    with tf.train.MonitoredTrainingSession(master=server.target,
                                           is_chief=True, max_wait_secs=1,
                                           save_checkpoint_secs=None) as s:
        s.run(train_op, feed_dict={x: [[1.0, 2.0]]})
    return 0

tf.app.run(main)
"""


def run(code, *argv):
    return subprocess.run([PY, "-c", code, "prog"] + list(argv),
                          capture_output=True, text=True, timeout=60)


def test_table_is_the_library_s():
    for name, want in WANT.items():
        assert _rf.exit_code(getattr(_rf, name)) == want, name
    assert _rf.exit_code(-99) == 1
    for name, want in WANT.items():
        if name == "RF_OK":
            continue
        err = tf.errors._make_error(getattr(_rf, name), "m")
        assert tf.app.exit_status(err) == want, name
    assert tf.app.exit_status(ValueError("x")) is None


def test_unreachable_ps_exits_138(free_ports):
    ps, worker = free_ports(2)
    p = run(CHIEF % (ps, worker))
    assert p.returncode == 138, p.stderr
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("-c: exit 138 (retryable): "), last
    assert "max_wait_secs=1" in last and "/job:ps/task:0" in last, last
    assert "Traceback" in p.stderr


def test_return_value_and_other_exceptions():
    p = run("import rdmaflow as tf\ntf.app.run(lambda argv: 3)\n")
    assert p.returncode == 3, p.stderr
    p = run("import rdmaflow as tf\n"
            "def main(argv):\n    raise ValueError('mine')\n"
            "tf.app.run(main)\n")
    assert p.returncode == 1
    assert p.stderr.strip().splitlines()[-1] == "ValueError: mine"
