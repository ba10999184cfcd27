"""tests/python/test_oracle.py (ctest python.oracle): one Python worker
reproduces rf-trainer's local run bitwise. rf-trainer trains the oracle
model of tests/integration/trainer_dist/trainer_dist_test.sh
(--model=mlp:32,16 --optimizer=adam --batch_size=50 --train_steps=60
--threads=1 --seed=3) in one process and writes every variable with
--variables_out; oracle_job.py builds the same model with `import
rdmaflow as tf` and trains it as the one worker of a cluster with 1 ps
and with 2 ps (the variables spread over both), apply=ps and
apply="worker", on sock and on shm, under MonitoredTrainingSession. The
chief's variables after close (Variable.numpy_value(): the model's, the
Adam slots, beta1_power, beta2_power, global_step) must equal the local
file's (tf.train.load_checkpoint) in names, dtypes, shapes and bytes, and
the progress losses rf-trainer prints must be the Python worker's."""

# ctest-timeout: 240

import re

import numpy as np
import pytest

import rdmaflow as tf

ORACLE_FLAGS = ["--model=mlp:32,16", "--optimizer=adam", "--batch_size=50",
                "--train_steps=60", "--threads=1", "--seed=3",
                "--log_every=20"]
LOSS_LINE = r"^(step \d+, loss [0-9.]+)"


@pytest.fixture(scope="module")
def local_run(tools, tmp_path_factory):
    """rf-trainer's local oracle run: (its variables file, {name:
    ndarray} read by tf.train.load_checkpoint, its progress lines)."""
    import subprocess
    d = tmp_path_factory.mktemp("local")
    path = d / "local.safetensors"
    out = subprocess.run([tools.rf_trainer] + ORACLE_FLAGS
                         + ["--variables_out=%s" % path],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    reader = tf.train.load_checkpoint(str(path))
    names = [n for n, _ in tf.train.list_variables(str(path))]
    variables = {n: reader.get_tensor(n) for n in names}
    losses = re.findall(LOSS_LINE, out.stdout, re.MULTILINE)
    return path, variables, losses


def test_local_oracle_holds_trained_variables(local_run):
    """The file compared with holds a trained model with its Adam state,
    else equality would prove little."""
    _, v, losses = local_run
    assert len(v) == 21
    assert v["global_step"].dtype == np.int64
    assert int(v["global_step"]) == 60
    assert v["dense/kernel/Adam_1"].shape == (784, 32)
    assert v["logits/bias"].shape == (10,)
    for name in ("beta1_power", "beta2_power"):
        assert v[name].dtype == np.float32 and v[name].shape == ()
    # 0.9 ** 61 and 0.999 ** 61, float32: the powers after 60 updates
    assert abs(float(v["beta1_power"]) - 0.9 ** 61) < 1e-6
    assert abs(float(v["beta2_power"]) - 0.999 ** 61) < 1e-5
    assert np.count_nonzero(v["dense/kernel/Adam"]) > 1000
    assert np.count_nonzero(v["logits/bias"]) == 10  # zeros at first
    assert [s.split(",")[0] for s in losses] == [
        "step 1", "step 20", "step 40", "step 60"]


def differences(want, got):
    """Names whose dtype, shape or bytes differ, with what differs."""
    out = []
    for name in sorted(want):
        a, b = want[name], got[name]
        if a.dtype != b.dtype or a.shape != b.shape:
            out.append("%s: %s %s, Python %s %s" % (name, a.dtype, a.shape,
                                                    b.dtype, b.shape))
        elif a.tobytes() != b.tobytes():
            diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
            out.append("%s: %d of %d elements differ (max %g)"
                       % (name, np.count_nonzero(a != b), a.size,
                          diff.max()))
    return out


@pytest.mark.parametrize("fabric", ["sock", "shm"])
@pytest.mark.parametrize("apply", ["ps", "worker"])
@pytest.mark.parametrize("num_ps", [1, 2])
def test_python_worker_equals_local_rf_trainer(
        local_run, cluster, python, source_dir, free_ports, tmp_path,
        num_ps, apply, fabric):
    _, want, want_losses = local_run
    ps = ["127.0.0.1:%d" % p for p in free_ports(num_ps)]
    worker = "127.0.0.1:%d" % free_ports(1)[0]
    out = tmp_path / "python.npz"
    job = [python, str(source_dir / "tests/python/oracle_job.py"),
           "--ps_hosts=" + ",".join(ps), "--worker_hosts=" + worker,
           "--apply=" + apply,
           # accepted by MonitoredTrainingSession (no table to look up)
           "--embedding_lookup=" + ("rows" if apply == "worker" else "auto")]
    tasks = {"ps%d" % i: job + ["--job_name=ps", "--task_index=%d" % i]
             for i in range(num_ps)}
    tasks["worker0"] = job + ["--job_name=worker", "--task_index=0",
                              "--out=%s" % out]
    cluster.start(tasks, env={"RF_FABRIC": fabric})
    assert cluster.wait(90, check=True) == {t: 0 for t in tasks}
    log = cluster.output("worker0")
    placed = dict(re.findall(r"^placed (\S+) on /job:ps/task:(\d+)$", log,
                             re.MULTILINE))
    assert len(placed) == 6
    assert set(placed.values()) == {str(i) for i in range(num_ps)}
    assert "worker 0: 60 steps" in log
    with np.load(out) as f:
        got = {n: f[n] for n in f.files}
    assert sorted(got) == sorted(want)
    assert differences(want, got) == []
    # the same losses on the way (rf-trainer's progress lines)
    assert re.findall(LOSS_LINE, log, re.MULTILINE) == want_losses
