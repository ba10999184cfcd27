"""tests/python/test_bad_input_dist.py (ctest python.bad_input_dist): bad
input to a distributed job gives a clear exception naming the culprit,
and what was running goes on.

- In a running MonitoredTrainingSession (1 ps task, 2 workers running
  tests/python/hooks_job.py --case=bad_input, real processes on
  loopback), on each worker: a feed of the wrong dtype and of the wrong
  shape (InvalidArgumentError naming the placeholder, the expected and
  the given dtype and shape; the same for a non-contiguous array), a
  placeholder of another graph (TypeError naming it), a fetch of another
  graph's tensor or of a name not in the graph (ValueError naming it, as
  TensorFlow's), a hook whose
  before_run returns a list (TypeError naming the hook's class and
  SessionRunArgs); after each the session trains on (global_step rises),
  each worker 22 runs, every task exits 0; a run of the closed session
  raises RuntimeError.
- MonitoredTrainingSession(is_chief=True) on worker 1 raises ValueError
  naming the cluster's chief (worker 0); worker 1 then joins as a worker.
- tf.train.Server with a job name or a task index the cluster does not
  have, or an unknown protocol, raises ValueError naming it (in this
  process: nothing is started); with RF_REQUIRE_SECRET=1 and no secret it
  raises UnauthenticatedError; without a secret a process warns once that
  its cluster is unauthenticated, however many Servers it starts.
- MonitoredTrainingSession(embedding_lookup=...) with anything but
  "auto", "rows" or "gather" raises ValueError naming the accepted ways."""

# ctest-timeout: 120

import json
import os
import subprocess

import pytest

import rdmaflow as tf

LAST_STEP = 1000  # StopAtStepHook's, not reached: the workers stop first
BAD_INPUTS = 7


@pytest.fixture(scope="module")
def bad_input_job(tmp_path_factory, python, source_dir, _port_registry):
    """hooks_job.py --case=bad_input, 1 ps task and 2 workers: the
    workers' RESULT records once every task exited 0 (one job for the
    file's distributed tests)."""
    from conftest import Cluster
    cluster = Cluster(tmp_path_factory.mktemp("bad_input"))
    try:
        ports = _port_registry.take(3)
        job = [python, source_dir / "tests/python/hooks_job.py",
               f"--ps_hosts=127.0.0.1:{ports[0]}",
               f"--worker_hosts=127.0.0.1:{ports[1]},127.0.0.1:{ports[2]}",
               "--case=bad_input", f"--last_step={LAST_STEP}"]
        cluster.start({
            "ps0": job + ["--job_name=ps", "--task_index=0"],
            "worker0": job + ["--job_name=worker", "--task_index=0"],
            "worker1": job + ["--job_name=worker", "--task_index=1"]},
            env={"RF_FABRIC": "sock"})
        cluster.wait(90, check=True)
        assert "ps 0: joined" in cluster.output("ps0")
        results = []
        for w in ("worker0", "worker1"):
            m = cluster.wait_for_output(w, r"^RESULT (.*)$", 0)
            results.append(json.loads(m.group(1)))
        yield results
    finally:
        cluster.close()


def bad(result, name):
    """(exception type name, message) of the bad input `name`."""
    found = [e[2:] for e in result["events"] if e[:2] == ["bad", name]]
    assert len(found) == 1, f"{name}: {found}"
    assert found[0][0] is not None, f"{name} raised nothing: {found[0][1]}"
    return found[0]


@pytest.mark.parametrize("worker", [0, 1])
def test_bad_feeds(bad_input_job, worker):
    r = bad_input_job[worker]
    name, msg = bad(r, "dtype")
    assert name == "InvalidArgumentError"
    assert "'x'" in msg and "float32[?,4]" in msg and "float64[8,4]" in msg
    name, msg = bad(r, "shape")
    assert name == "InvalidArgumentError"
    assert "'x'" in msg and "float32[?,4]" in msg and "float32[8,5]" in msg
    name, msg = bad(r, "noncontiguous")
    assert name == "InvalidArgumentError"
    assert "'x'" in msg and "C-contiguous" in msg
    assert "float32[?,4]" in msg and "given float32[8,4]" in msg
    name, msg = bad(r, "alien_feed")
    assert name == "TypeError"
    assert "alien_x:0" in msg and "not an element of this graph" in msg


@pytest.mark.parametrize("worker", [0, 1])
def test_bad_fetches_and_hook(bad_input_job, worker):
    r = bad_input_job[worker]
    name, msg = bad(r, "alien_fetch")
    assert name == "ValueError"
    assert "alien_out:0" in msg and "not an element of this graph" in msg
    name, msg = bad(r, "no_such_name")
    # TensorFlow's _ElementFetchMapper turns the graph's KeyError into a
    # ValueError
    assert name == "ValueError" and "no_such_tensor:0" in msg
    assert "does not exist" in msg
    name, msg = bad(r, "hook_args")
    assert name == "TypeError"
    assert "BadArgsHook.before_run" in msg and "SessionRunArgs" in msg
    assert "list" in msg


@pytest.mark.parametrize("worker", [0, 1])
def test_session_trains_on(bad_input_job, worker):
    r = bad_input_job[worker]
    assert r["left"] == []  # every bad input was tried
    ev = r["events"]
    assert len([e for e in ev if e[0] == "bad_after"]) == BAD_INPUTS
    for i, e in enumerate(ev):
        if e[0] == "bad_after":
            # the next run trains: global_step beyond where it was
            ran = [x for x in ev[i + 1:] if x[:2] == ["loop", "ran"]]
            assert ran and ran[0][3] > e[2], (e, ran[:1])
    steps = [e[3] for e in ev if e[:2] == ["loop", "ran"]]
    assert steps == sorted(set(steps))
    assert r["runs"] == len(steps) == 3 * BAD_INPUTS + 1
    assert r["global_step"] == steps[-1] < LAST_STEP
    name, msg = bad(r, "closed")
    assert name == "RuntimeError" and "closed" in msg


def test_is_chief_on_worker1(bad_input_job):
    chief, other = bad_input_job
    assert not [e for e in chief["events"] if e[1] == "is_chief"]
    name, msg = bad(other, "is_chief")
    assert name == "ValueError"
    assert "is_chief=True" in msg and "worker:1" in msg
    assert "chief is worker:0" in msg
    # worker 1 then trained as a worker
    assert other["runs"] > 0


@pytest.fixture
def spec(free_ports, monkeypatch):
    # a Server that started would set RF_FABRIC for the tasks this
    # process starts later: restore it
    monkeypatch.delenv("RF_FABRIC", raising=False)
    ps, worker = free_ports(2)
    return tf.train.ClusterSpec({"ps": [f"127.0.0.1:{ps}"],
                                 "worker": [f"127.0.0.1:{worker}"]})


def test_server_bad_job_name(spec):
    with pytest.raises(ValueError, match=r"'chief'.*ps, worker"):
        tf.train.Server(spec, job_name="chief", task_index=0)


def test_server_bad_task_index(spec):
    with pytest.raises(ValueError, match=r"task_index 1 .*'worker'"):
        tf.train.Server(spec, job_name="worker", task_index=1)
    with pytest.raises(ValueError, match=r"task_index -1 .*'ps'"):
        tf.train.Server(spec, job_name="ps", task_index=-1)


def test_server_bad_protocol(spec):
    with pytest.raises(ValueError, match=r"protocol 'grpc\+ib'.*'sock'"):
        tf.train.Server(spec, job_name="ps", task_index=0,
                        protocol="grpc+ib")


def test_server_require_secret(spec, monkeypatch):
    """RF_REQUIRE_SECRET=1 (the library's, as for rf-trainer): a Server
    without a cluster secret is refused, naming what required it."""
    monkeypatch.setenv("RF_REQUIRE_SECRET", "1")
    with pytest.raises(tf.errors.UnauthenticatedError,
                       match=r"no cluster secret .* RF_REQUIRE_SECRET=1 "
                             r"requires one"):
        tf.train.Server(spec, job_name="ps", task_index=0)


def test_server_warns_once(spec, python):
    """Without a secret a process warns once that its cluster is
    unauthenticated, however many Servers it starts."""
    spec_json = json.dumps(spec.as_dict())
    code = ("import json, rdmaflow as tf\n"
            f"spec = tf.train.ClusterSpec(json.loads({spec_json!r}))\n"
            "for _ in range(3):\n"
            "    tf.train.Server(spec, job_name='worker', task_index=0,\n"
            "                    protocol='sock').stop()\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("RF_CLUSTER_SECRET_FILE", "RF_REQUIRE_SECRET",
                        "RF_LOG_LEVEL", "RF_LOG_FILE")}
    out = subprocess.run([python, "-c", code], env=env, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stderr.splitlines()
             if "the cluster is unauthenticated" in line]
    assert len(lines) == 1, out.stderr
    assert "read and write every variable and global_step" in lines[0]


@pytest.mark.parametrize("way", ["fast", "Rows", "", 1])
def test_monitored_session_bad_embedding_lookup(way):
    """MonitoredTrainingSession(embedding_lookup=...) other than "auto",
    "rows" or "gather" raises ValueError naming the argument and the
    accepted ways, before any connection is tried."""
    with pytest.raises(ValueError,
                       match=r"embedding_lookup=.*not one of \"auto\", "
                             r"\"rows\", \"gather\""):
        tf.train.MonitoredTrainingSession(master="grpc://127.0.0.1:1",
                                          embedding_lookup=way)
