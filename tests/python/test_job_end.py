"""tests/python/test_job_end.py (ctest python.job_end): a Python job ends
when a task dies for good (issue 25), as rf-trainer's do
(tests/integration/fault's sync_quorum_lost and ps_chief_gone):
examples/python/sync_trainer.py, 2 ps tasks and 2 workers started by hand
on free loopback ports (sock), 2 of 2 replicas, --max_wait_secs small.

- a lost worker: worker 1 stops itself at its step 30 (the session's test
  hook RF_TEST_SYNC_STOP_AFTER_PUSH) and is killed with SIGKILL, never
  restarted. The chief exits 138 (retryable) within the member timeout
  (a ps's 10 s) plus --max_wait_secs plus a few seconds, its last words
  naming the missing worker, the count a step needs and what it did ("no
  step can complete ... replicas_to_aggregate=2; missing
  /job:worker/task:1 ...; saved PATH; the ps tasks shut down"), it did
  not recover; it saved that checkpoint (the state
  file names it, rf-ckpt verify passes) and both ps tasks exit 0, shut
  down by it (their SHUTDOWN line at RF_LOG_LEVEL=info);
- the chief gone: the chief is killed with SIGKILL mid-run, never
  restarted. Both ps tasks exit 138 within --max_wait_secs plus a few
  seconds (Server(max_wait_secs=): join() raised DeadlineExceededError
  naming the chief), worker 1 exits 138 too (its sync step cannot
  complete without the chief);
- a ps task whose chief never comes: Server(ps_idle_exit_secs=2) in a
  task of its own, alone in its cluster: join() raises
  DeadlineExceededError after 2 s, and without it join() is still
  waiting 4 s later;
- bad lifetimes are refused before anything starts, naming the argument.
"""

# ctest-timeout: 300

import re
import signal
import time

import pytest

import rdmaflow as tf

MAX_WAIT = 5
# A ps keeps a worker whose connection closed as a member this long
# (rf_server_options.member_timeout_ms's default) before the chief's
# step counts it missing and waits MAX_WAIT for it.
MEMBER_TIMEOUT = 10
STATE = re.compile(r'^model_checkpoint_path: "(.*)"$', re.MULTILINE)


def hosts(free_ports):
    ports = free_ports(4)
    ps = ",".join(f"127.0.0.1:{p}" for p in ports[:2])
    workers = ",".join(f"127.0.0.1:{p}" for p in ports[2:])
    return [f"--ps_hosts={ps}", f"--worker_hosts={workers}"]


def start_job(cluster, python, source_dir, free_ports, tmp_path, env):
    """The four tasks of sync_trainer.py, by hand; the checkpoint
    directory."""
    ckpt = tmp_path / "ckpt"
    flags = hosts(free_ports) + [
        "--protocol=sock", f"--max_wait_secs={MAX_WAIT}",
        "--train_steps=100000", f"--checkpoint_dir={ckpt}"]
    trainer = [python, source_dir / "examples/python/sync_trainer.py"]
    cluster.start({
        f"{job}{i}": trainer + flags + [f"--job_name={job}",
                                        f"--task_index={i}"]
        for job in ("ps", "worker") for i in range(2)},
        env=dict({"RF_FABRIC": None, "RF_LOG_LEVEL": "info"}, **env))
    return ckpt


def stopped(pid):
    """Whether the process is stopped (state T in /proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read()
    return stat[stat.rindex(")") + 2] == "T"


def wait_exit(cluster, tasks, within):
    """Waits for tasks to exit; their codes and how long that took."""
    t0 = time.monotonic()
    codes = cluster.wait(within, tasks)
    return codes, time.monotonic() - t0


def test_sync_worker_lost_ends_the_job(cluster, tools, python, source_dir,
                                       free_ports, tmp_path):
    marker = tmp_path / "stop"
    marker.write_text("30 1\n")  # worker 1 stops itself at its step 30
    ckpt = start_job(cluster, python, source_dir, free_ports, tmp_path,
                     {"RF_TEST_SYNC_STOP_AFTER_PUSH": marker})
    deadline = time.monotonic() + 120
    while not stopped(cluster.pid("worker1")):
        assert cluster.poll("worker1") is None, cluster.tail("worker1")
        assert time.monotonic() < deadline, (
            "worker 1 never stopped itself at step 30\n"
            + cluster.tail("worker1") + "\n" + cluster.tail("worker0"))
        time.sleep(0.05)
    cluster.kill("worker1")

    codes, took = wait_exit(cluster, ["worker0"], MAX_WAIT + 60)
    out = cluster.output("worker0")
    assert codes == {"worker0": 138}, cluster.tail("worker0")
    bound = MEMBER_TIMEOUT + MAX_WAIT + 5
    assert took <= bound, f"the chief ended {took:.1f} s after the kill " \
        f"(bound {bound} s)\n{cluster.tail('worker0')}"
    last = re.search(r"exit 138 \(retryable\): (.*)$", out, re.MULTILINE)
    assert last, cluster.tail("worker0")
    why = last.group(1)
    m = re.search(r"no step can complete: 1 of 2 workers connected, step "
                  r"\d+ needs replicas_to_aggregate=2; missing "
                  r"/job:worker/task:1 \(not back within 5 s\); saved "
                  r"(\S+); the ps tasks shut down \(RF_ERR_UNAVAILABLE\)$",
                  why)
    assert m, why
    saved = m.group(1)
    assert "recovered" not in out, cluster.tail("worker0")
    assert re.search(rf"^/job:worker/task:0: saved checkpoint "
                     rf"{re.escape(saved)} after the sync step stopped$",
                     out, re.MULTILINE), cluster.tail("worker0")
    assert str(ckpt / STATE.search(
        (ckpt / "checkpoint").read_text()).group(1)) == saved

    codes, _ = wait_exit(cluster, ["ps0", "ps1"], 30)
    assert codes == {"ps0": 0, "ps1": 0}, \
        cluster.tail("ps0") + "\n" + cluster.tail("ps1")
    for k in (0, 1):
        out = cluster.output(f"ps{k}")
        assert re.search(rf"ps {k}: SHUTDOWN from ", out), \
            cluster.tail(f"ps{k}")
    cluster.start({"verify": [tools.rf_ckpt, "verify", saved]})
    assert cluster.wait(60, ["verify"]) == {"verify": 0}, \
        cluster.tail("verify")


def test_chief_gone_ends_the_ps_tasks(cluster, python, source_dir,
                                      free_ports, tmp_path):
    start_job(cluster, python, source_dir, free_ports, tmp_path, {})
    cluster.wait_for_output(
        "worker0", r"global_step/sec: \S+ \(global_step ([1-9]\d{2,})\)",
        120)
    cluster.kill("worker0")

    codes, took = wait_exit(cluster, ["ps0", "ps1", "worker1"],
                            MAX_WAIT + 60)
    assert codes == {"ps0": 138, "ps1": 138, "worker1": 138}, "\n".join(
        cluster.tail(t) for t in ("ps0", "ps1", "worker1"))
    assert took <= MAX_WAIT + 15, f"they ended {took:.1f} s after the kill"
    for ps in ("ps0", "ps1"):
        assert re.search(r"exit 138 \(retryable\): .*no chief connection "
                         r"for [0-9.]+ s \(the chief, client 0, was last "
                         r"connected from 127\.0\.0\.1", cluster.output(ps)), \
            cluster.tail(ps)


IDLE_PS = """
import sys
import rdmaflow as tf
spec = tf.train.ClusterSpec({"ps": ["127.0.0.1:%s"],
                             "worker": ["127.0.0.1:%s"]})
server = tf.train.Server(spec, job_name="ps", task_index=0,
                         protocol="sock", ps_idle_exit_secs=int(sys.argv[1]))
print("serving", flush=True)
try:
    server.join()
except tf.errors.DeadlineExceededError as e:
    print("join raised DeadlineExceededError:", e, flush=True)
    sys.exit(3)
"""


@pytest.mark.parametrize("idle", [2, 0])
def test_ps_without_a_chief(cluster, python, free_ports, tmp_path, idle):
    ports = free_ports(2)
    program = tmp_path / "idle_ps.py"
    program.write_text(IDLE_PS % tuple(ports))
    cluster.start({"ps": [python, program, str(idle)]},
                  env={"RF_FABRIC": None})
    cluster.wait_for_output("ps", r"^serving$", 60)
    t0 = time.monotonic()
    if idle:
        assert cluster.wait(idle + 30, ["ps"]) == {"ps": 3}, \
            cluster.tail("ps")
        took = time.monotonic() - t0
        assert took <= idle + 5, f"join returned after {took:.1f} s"
        assert re.search(r"^join raised DeadlineExceededError: .*no chief "
                         r"connected within 2\.0 s of the start",
                         cluster.output("ps"), re.MULTILINE), \
            cluster.tail("ps")
    else:
        time.sleep(4)
        assert cluster.poll("ps") is None, cluster.tail("ps")
        cluster.kill("ps", signal.SIGKILL)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"max_wait_secs": -1}, ValueError,
     r"max_wait_secs=-1 is not a whole number of seconds from 0 to 2000000"),
    ({"ps_idle_exit_secs": 2000001}, ValueError,
     r"ps_idle_exit_secs=2000001 is not a whole number"),
    ({"ps_idle_exit_secs": 1.5}, ValueError,
     r"ps_idle_exit_secs=1.5 is not a whole number"),
    ({"max_wait_secs": float("nan")}, ValueError,
     r"max_wait_secs=nan is not a whole number"),
    ({"max_wait_secs": "60"}, TypeError,
     r"max_wait_secs must be a number of seconds, got '60'"),
    ({"resolve_wait_secs": True}, TypeError,
     r"resolve_wait_secs must be a number of seconds, got True"),
])
def test_bad_lifetimes_are_refused(free_ports, kwargs, error, message):
    ports = free_ports(2)
    spec = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{ports[0]}"],
                                 "worker": [f"127.0.0.1:{ports[1]}"]})
    with pytest.raises(error, match=message):
        tf.train.Server(spec, job_name="ps", task_index=0, protocol="sock",
                        **kwargs)
