"""tests/python/test_ps.py (ctest python.ps): rdmaflow.ps, variables on
the ps tasks for a model of the program's own (here numpy), on real ps
processes (ps_job.py) over sock, the worker being this process except in
the synchronous test:

- linear regression with analytic gradients, GradientDescentOptimizer, 1
  or 2 ps tasks, apply=ps and apply="worker": every pull holds exactly
  numpy's float32 SGD (w = w - np.float32(lr) * g, in push order) of the
  gradients pushed so far, push returns the new global_step, and after
  close the chief's values() are numpy's last values, bitwise;
- pull() returns numpy views of the variables' registered memory, no
  copies: the next pull refills the same memory;
- SyncReplicasOptimizer with 2 workers (N = M = 2): global_step advances
  once per pair of pushes, every step applies the mean of the two
  workers' gradients, both workers see the same values at every step;
- 2 asynchronous workers: every push is applied once and counted once;
- bad gradients (wrong shape, wrong dtype, not C-contiguous, a missing
  name, an extra name, a list of the wrong length) each raise a clear
  error naming what is wrong, and the session goes on as if they had not
  been pushed;
- checkpoint_dir: the final checkpoint holds every variable under its
  own name, and a new job on that directory restores them;
- names: torch's dotted names ("fc1.weight") are taken as they are (the
  graph, the ps shards and the checkpoints accept '.'), names the graph
  cannot hold raise ValueError naming them."""

# ctest-timeout: 240

import json

import numpy as np
import pytest

import rdmaflow as tf
import rdmaflow.ps

import ps_job

LR = 0.1
STEPS = 25


class Job:
    """ps tasks of ps_job.py (started by start()) and this process's
    worker server."""

    def __init__(self, cluster, python, source_dir, free_ports):
        self.cluster = cluster
        self.job = [python, str(source_dir / "tests/python/ps_job.py")]
        self.free_ports = free_ports
        self.servers = []

    def start(self, num_ps, num_workers=1):
        self.ps = ["127.0.0.1:%d" % p for p in self.free_ports(num_ps)]
        self.workers = ["127.0.0.1:%d" % p
                        for p in self.free_ports(num_workers)]
        self.flags = ["--ps_hosts=" + ",".join(self.ps),
                      "--worker_hosts=" + ",".join(self.workers)]
        self.cluster.start(
            {"ps%d" % i: self.job + self.flags + ["--job_name=ps",
                                                  "--task_index=%d" % i]
             for i in range(num_ps)}, env={"RF_FABRIC": "sock"})
        return self

    def server(self, task_index=0):
        """This process as worker task_index."""
        spec = tf.train.ClusterSpec({"ps": self.ps, "worker": self.workers})
        s = tf.train.Server(spec, job_name="worker", task_index=task_index,
                            protocol="sock")
        self.servers.append(s)
        return s

    def worker(self, task_index, argv):
        """Worker task_index as a process of ps_job.py."""
        self.cluster.start({"worker%d" % task_index: self.job + self.flags + [
            "--job_name=worker", "--task_index=%d" % task_index] + argv},
            env={"RF_FABRIC": "sock"})

    def wait_ps_shut_down(self):
        """Every ps task ends by the chief's shutdown, exit 0."""
        names = [t for t in self.cluster.tasks if t.startswith("ps")]
        assert self.cluster.wait(30, tasks=names, check=True) == {
            t: 0 for t in names}
        for t in names:
            assert "shut down by the chief" in self.cluster.output(t)

    def stop(self):
        for s in self.servers:
            s.stop()


@pytest.fixture
def job(cluster, python, source_dir, free_ports, monkeypatch):
    monkeypatch.setenv("RF_FABRIC", "sock")
    j = Job(cluster, python, source_dir, free_ports)
    yield j
    j.stop()


def session(server, variables, optimizer=None, **kwargs):
    kwargs.setdefault("max_wait_secs", 30)
    kwargs.setdefault("stop_grace_period_secs", 30)
    return rdmaflow.ps.Session(
        server, variables,
        optimizer or tf.train.GradientDescentOptimizer(LR), **kwargs)


# ---- linear regression -------------------------------------------------

def regression_data():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((64, 5)).astype(np.float32)
    w_true = rng.standard_normal((5, 3)).astype(np.float32)
    y = (x @ w_true + np.float32(0.5)
         + np.float32(0.01) * rng.standard_normal((64, 3)).astype(
             np.float32)).astype(np.float32)
    return x, y


def initial(names):
    w, b = names
    return {w: np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3),
            b: np.zeros(3, np.float32)}


def loss_and_gradients(params, names, x, y):
    """Half the mean squared error of x w + b against y, and its
    gradients (float32)."""
    w, b = names
    n = np.float32(len(x))
    r = x @ params[w] + params[b] - y
    loss = float(np.sum(r * r) / (2 * n))
    return loss, {w: (x.T @ r / n).astype(np.float32),
                  b: (r.sum(axis=0) / n).astype(np.float32)}


def numpy_sgd(start, pushed):
    """numpy's float32 SGD of the gradients in push order: the values
    before each push and at the end."""
    lr = np.float32(LR)
    values = {n: v.copy() for n, v in start.items()}
    history = []
    for grads in pushed:
        history.append({n: v.copy() for n, v in values.items()})
        values = {n: values[n] - lr * grads[n] for n in values}
    return history, values


def assert_bitwise(got, want, what):
    assert sorted(got) == sorted(want), what
    for n in want:
        assert got[n].dtype == np.float32, (what, n)
        assert got[n].shape == want[n].shape, (what, n)
        assert got[n].tobytes() == want[n].tobytes(), (
            "%s: %s differs from numpy's SGD by up to %g"
            % (what, n, np.max(np.abs(got[n] - want[n]))))


@pytest.mark.parametrize("apply", ["ps", "worker"])
@pytest.mark.parametrize("num_ps", [1, 2])
@pytest.mark.parametrize("names", [("w", "b"), ("fc1.weight", "fc1.bias")],
                         ids=["plain", "dotted"])
def test_sgd_equals_numpy(job, num_ps, apply, names):
    x, y = regression_data()
    job.start(num_ps)
    start = initial(names)
    pulled, pushed, steps, losses = [], [], [], []
    with session(job.server(), start, apply=apply, is_chief=True,
                 hooks=[tf.train.StopAtStepHook(last_step=STEPS)]) as sess:
        assert sess.names == list(names)
        with sess.graph.as_default():
            devices = {v.op.name: v.device for v in tf.trainable_variables()}
        while not sess.should_stop():
            params = sess.pull()
            pulled.append({n: v.copy() for n, v in params.items()})
            loss, grads = loss_and_gradients(params, names, x, y)
            losses.append(loss)
            pushed.append(grads)
            steps.append(sess.push(grads))
        assert sess.global_step == STEPS
    final = sess.values()
    job.wait_ps_shut_down()
    assert devices == {names[0]: "/job:ps/task:0",
                       names[1]: "/job:ps/task:%d" % (num_ps - 1)}
    assert steps == list(range(1, STEPS + 1))
    history, want = numpy_sgd(start, pushed)
    for k, (got, expected) in enumerate(zip(pulled, history)):
        assert_bitwise(got, expected, "pull %d" % k)
    assert_bitwise(final, want, "values() after close")
    # it trains: numpy's SGD, not a fixed point
    assert losses[-1] < 0.2 * losses[0]


def test_pull_returns_views_of_the_variables(job):
    job.start(1)
    names = ("w", "b")
    start = initial(names)
    ones = {"w": np.ones((5, 3), np.float32), "b": np.ones(3, np.float32)}
    with session(job.server(), start, is_chief=True) as sess:
        first = sess.pull()
        for n in names:
            v = first[n]
            assert isinstance(v, np.ndarray) and v.dtype == np.float32
            assert v.shape == start[n].shape
            assert not v.flags.owndata  # a view of the session's memory
            assert isinstance(v.base, memoryview)
            assert v.tobytes() == start[n].tobytes()  # the ps's values
        before = {n: v.copy() for n, v in first.items()}
        assert sess.push(ones) == 1
        second = sess.pull()
        for n in names:
            # the same registered memory, READ again: the first views
            # now show the ps's new values
            assert np.shares_memory(first[n], second[n])
            want = before[n] - np.float32(LR) * ones[n]
            assert second[n].tobytes() == want.tobytes()
            assert first[n].tobytes() == want.tobytes()
        # values() are copies
        values = sess.values()
        assert not np.shares_memory(values["w"], second["w"])
    job.wait_ps_shut_down()


# ---- synchronous training ----------------------------------------------

def test_sync_replicas_two_workers_apply_the_mean(job, tmp_path):
    steps = 12
    job.start(2, num_workers=2)
    for i in (1, 0):
        job.worker(i, ["--steps=%d" % steps,
                       "--out=%s" % (tmp_path / ("w%d.json" % i))])
    codes = job.cluster.wait(90, check=True)
    assert set(codes.values()) == {0}
    results = [json.loads((tmp_path / ("w%d.json" % i)).read_text())
               for i in (0, 1)]
    lr = np.float32(ps_job.LR)
    grads = [ps_job.sync_gradients(i) for i in (0, 1)]
    mean = {n: (grads[0][n] + grads[1][n]) / np.float32(2)
            for n in grads[0]}
    value = ps_job.sync_initial()
    want_pulls = []
    for _ in range(steps):
        want_pulls.append({n: v.tolist() for n, v in value.items()})
        value = {n: value[n] - lr * mean[n] for n in value}
    for i, r in enumerate(results):
        # one global step per pair of pushes: each push of worker i
        # returned the step its pair made
        assert r["steps"] == list(range(1, steps + 1)), "worker %d" % i
        assert r["global_step"] == steps
        # before step k both saw k means applied, nothing else
        assert r["pulls"] == want_pulls, "worker %d" % i
    got = {n: np.array(v, np.float32)
           for n, v in results[0]["values"].items()}
    assert_bitwise(got, value, "the chief's values()")
    # neither one worker's gradients nor their sum
    assert not np.array_equal(got["fc.bias"],
                              ps_job.sync_initial()["fc.bias"]
                              - steps * lr * grads[0]["fc.bias"])


def test_async_two_workers_apply_every_push_once(job, tmp_path):
    steps = 400
    job.start(2, num_workers=2)
    for i in (1, 0):
        job.worker(i, ["--async", "--steps=%d" % steps,
                       "--start_together=%s" % tmp_path,
                       "--out=%s" % (tmp_path / ("w%d.json" % i))])
    codes = job.cluster.wait(90, check=True)
    assert set(codes.values()) == {0}
    results = [json.loads((tmp_path / ("w%d.json" % i)).read_text())
               for i in (0, 1)]
    pushes = [len(r["steps"]) for r in results]
    assert min(pushes) > 0, "a worker never pushed: %s" % pushes
    # one FETCH_AND_ADD per push: every global_step once; a worker may
    # push once more after the other passed the last step
    assert sorted(results[0]["steps"] + results[1]["steps"]) == list(
        range(1, sum(pushes) + 1))
    assert steps <= sum(pushes) <= steps + 1
    # each push applied exactly once (exact numbers, in any order)
    lr = np.float32(ps_job.LR)
    grads = [ps_job.sync_gradients(i) for i in (0, 1)]
    want = {n: v - lr * (np.float32(pushes[0]) * grads[0][n]
                         + np.float32(pushes[1]) * grads[1][n])
            for n, v in ps_job.sync_initial().items()}
    got = {n: np.array(v, np.float32)
           for n, v in results[0]["values"].items()}
    assert_bitwise(got, want, "the chief's values()")


# ---- bad gradients -----------------------------------------------------

def test_bad_gradients_raise_and_the_session_goes_on(job):
    job.start(1)
    names = ("fc1.weight", "fc1.bias")
    start = initial(names)
    good = {names[0]: np.full((5, 3), 2, np.float32),
            names[1]: np.full(3, 2, np.float32)}
    wide = np.ones((5, 6), np.float32)
    bad = [
        ({names[0]: np.ones((3, 5), np.float32), names[1]: good[names[1]]},
         tf.errors.InvalidArgumentError,
         r"'fc1\.weight/gradient': wrong shape \(expected float32\[5,3\], "
         r"given float32\[3,5\]\)"),
        ({names[0]: good[names[0]], names[1]: np.ones(3, np.float64)},
         tf.errors.InvalidArgumentError,
         r"'fc1\.bias/gradient': wrong dtype \(expected float32\[3\], "
         r"given float64\[3\]\)"),
        ({names[0]: wide[:, ::2], names[1]: good[names[1]]},
         tf.errors.InvalidArgumentError,
         r"'fc1\.weight/gradient': the array is not C-contiguous"),
        ({names[0]: good[names[0]]}, ValueError,
         r"^push: no gradient for \['fc1\.bias'\] \(the variables are "),
        (dict(good, **{"fc2.weight": good[names[0]]}), ValueError,
         r"^push: \['fc2\.weight'\] are not variables \(the variables are "
         r"\['fc1\.weight', 'fc1\.bias'\]\)$"),
        ([good[names[0]]], ValueError,
         r"^push: 1 gradients for 2 variables$"),
    ]
    with session(job.server(), start, is_chief=True) as sess:
        assert sess.push(good) == 1
        for k, (grads, error, message) in enumerate(bad):
            with pytest.raises(error, match=message):
                sess.push(grads)
            assert sess.global_step == 1 + k
            # still usable: a good push is applied once, and only it
            assert sess.push(good) == 2 + k
        params = sess.pull()
        history, want = numpy_sgd(start, [good] * (1 + len(bad)))
        assert_bitwise(params, want, "after the bad pushes")
    job.wait_ps_shut_down()


# ---- checkpoints -------------------------------------------------------

def test_checkpoint_holds_the_variables_under_their_names(job, tmp_path):
    x, y = regression_data()
    names = ("fc1.weight", "fc1.bias")
    ckpt = tmp_path / "ckpt"
    job.start(2)
    with session(job.server(), initial(names), is_chief=True,
                 checkpoint_dir=str(ckpt),
                 hooks=[tf.train.StopAtStepHook(last_step=10)]) as sess:
        while not sess.should_stop():
            sess.push(loss_and_gradients(sess.pull(), names, x, y)[1])
    final = sess.values()
    job.wait_ps_shut_down()
    path = tf.train.latest_checkpoint(str(ckpt))
    assert path.endswith("model.ckpt-10.safetensors")
    assert sorted(n for n, _ in tf.train.list_variables(path)) == sorted(
        ["fc1.bias", "fc1.weight", "global_step"])
    reader = tf.train.load_checkpoint(str(ckpt))
    assert int(reader.get_tensor("global_step")) == 10
    assert_bitwise({n: reader.get_tensor(n) for n in names}, final,
                   "the checkpoint")

    # a new job on the directory: the chief restores them, not its own
    # initial values, and goes on from global_step 10
    job.start(1)
    zeros = {n: np.zeros_like(v) for n, v in final.items()}
    with session(job.server(), zeros, is_chief=True,
                 checkpoint_dir=str(ckpt),
                 hooks=[tf.train.StopAtStepHook(last_step=11)]) as sess:
        assert sess.global_step == 10
        assert_bitwise({n: v.copy() for n, v in sess.pull().items()}, final,
                       "restored")
        assert sess.push(zeros) == 11
    job.wait_ps_shut_down()
    assert tf.train.latest_checkpoint(str(ckpt)).endswith(
        "model.ckpt-11.safetensors")


# ---- names -------------------------------------------------------------

@pytest.mark.parametrize("name, message", [
    ("fc 1.weight", r"invalid character ' ' in name 'fc 1\.weight'"),
    ("fc1:weight", r"invalid character ':' in name 'fc1:weight'"),
    ("", r"variable name '': a name is a non-empty ASCII string"),
    ("gewicht.ä", r"variable name 'gewicht\.ä': a name is a non-empty "
     r"ASCII string"),
    ("global_step", r"variable name 'global_step' is taken \(the graph "
     r"named it 'global_step_1'\)"),
])
def test_names_the_graph_cannot_hold_are_refused(job, name, message):
    # refused while the graph is built, before any ps task is asked
    job.start(1)
    with pytest.raises(ValueError, match=message):
        session(job.server(), {name: np.zeros(2, np.float32)})
