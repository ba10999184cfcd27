"""tests/python/test_fixtures.py (ctest python.fixtures): conftest.py's
fixtures, which every multi-process test relies on, on small programs of
their own: free_ports hands out distinct free ports and reserves them;
cluster starts tasks with their environment and logs, waits, reports a
task still running by name with its log's tail, signals a task or its
group, and leaves no process behind, neither a task's own children nor
those rf-launch starts in process groups of their own."""

# ctest-timeout: 120

import os
import signal
import socket
import sys
import textwrap
import time

import pytest

from conftest import Cluster, _session_members

PY = sys.executable


def alive(pid):
    """pid is a live process (not a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def gone_within(pids, seconds=10):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(alive(p) for p in pids):
            return True
        time.sleep(0.05)
    return False


def test_free_ports_are_distinct_free_and_reserved(free_ports):
    first = free_ports(3)
    second = free_ports(2)
    ports = first + second
    assert len(set(ports)) == 5
    for p in ports:
        assert 20000 <= p < 65536
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", p))  # free: a task can listen on it
        finally:
            s.close()
        d = os.environ.get("RF_TEST_PORT_DIR") or os.path.join(
            os.environ.get("TMPDIR") or "/tmp", "rf-test-ports")
        owner = open(os.path.join(d, str(p), "pid")).read().strip()
        assert owner == str(os.getpid())
    with pytest.raises(ValueError):
        free_ports(0)


def test_tools(tools, build_dir):
    assert tools.rf_launch == str(build_dir / "tools" / "rf-launch")
    assert tools["rf-trainer"] == str(build_dir / "tools" / "rf-trainer")
    assert os.access(tools.rf_ckpt, os.X_OK)
    with pytest.raises(pytest.fail.Exception, match="not built"):
        tools["rf-no-such-tool"]


def test_start_wait_output_env(cluster, tmp_path):
    code = textwrap.dedent("""
        import os, sys
        print("task", sys.argv[1], os.environ.get("RF_X"),
              os.environ.get("HOME") is None, os.getcwd())
        print("to stderr", file=sys.stderr)
        sys.exit(int(sys.argv[1]))
    """)
    cluster.start({"ps0": [PY, "-c", code, "0"],
                   "worker0": [PY, "-c", code, "3"]},
                  env={"RF_X": "x", "HOME": None})
    codes = cluster.wait(30)
    assert codes == {"ps0": 0, "worker0": 3}
    assert cluster.tasks == ["ps0", "worker0"]
    out = cluster.output("worker0")
    assert f"task 3 x True {tmp_path}" in out
    assert "to stderr" in out
    assert cluster.log_path("ps0") == tmp_path / "ps0.log"
    assert cluster.poll("ps0") == 0


def test_wait_check_names_the_failed_task(cluster):
    cluster.start({"ok": [PY, "-c", "pass"],
                   "bad": [PY, "-c", "print('last words'); exit(7)"]})
    with pytest.raises(pytest.fail.Exception) as e:
        cluster.wait(30, check=True)
    msg = str(e.value)
    assert "bad exited with status 7" in msg
    assert "last words" in msg
    assert "ok exited" not in msg


def test_wait_check_stops_at_the_first_failure(cluster):
    # a ps waiting forever for a worker that died: no need to wait 60 s
    cluster.start({"ps0": [PY, "-c", "import time; time.sleep(600)"],
                   "worker0": [PY, "-c", "import sys; sys.exit('boom')"]})
    t0 = time.monotonic()
    with pytest.raises(pytest.fail.Exception) as e:
        cluster.wait(60, check=True)
    assert time.monotonic() - t0 < 30
    msg = str(e.value)
    assert msg.startswith("worker0 exited with status 1")
    assert "| boom" in msg
    assert "killed ps0" in msg
    assert cluster.poll("ps0") == -signal.SIGKILL


def test_wait_timeout_names_the_task_and_shows_its_log(cluster):
    cluster.start({"quick": [PY, "-c", "pass"],
                   "died": [PY, "-c", "print('dying'); exit(2)"],
                   "stuck": [PY, "-c",
                             "print('stuck here'); import time; "
                             "time.sleep(600)"]})
    cluster.wait_for_output("stuck", r"^stuck here$", 30)
    with pytest.raises(pytest.fail.Exception) as e:
        cluster.wait(1)
    msg = str(e.value)
    assert msg.startswith("stuck still running after 1 s")
    assert "| stuck here" in msg
    assert "meanwhile died exited with status 2" in msg
    assert "| dying" in msg
    assert cluster.poll("stuck") == -signal.SIGKILL  # killed for the log


def test_wait_for_output_fails_if_the_task_exits_first(cluster):
    cluster.start({"t": [PY, "-c", "print('something else')"]})
    with pytest.raises(pytest.fail.Exception, match="t exited with status 0"):
        cluster.wait_for_output("t", "never printed", 30)


def test_kill_and_start_again(cluster):
    cluster.start({"ps0": [PY, "-c", "print('up', flush=True); "
                           "import time; time.sleep(600)"]})
    cluster.wait_for_output("ps0", "up", 30)
    with pytest.raises(ValueError, match="running"):
        cluster.start({"ps0": [PY, "-c", "pass"]})
    cluster.kill("ps0", signal.SIGTERM)
    assert cluster.wait(30) == {"ps0": -signal.SIGTERM}
    with pytest.raises(ProcessLookupError):
        cluster.kill("ps0")
    cluster.start({"ps0": [PY, "-c", "print('again')"]})
    assert cluster.wait(30) == {"ps0": 0}
    out = cluster.output("ps0")
    assert out.index("up") < out.index("--- started again") < \
        out.index("again\n")


def test_kill_group(cluster):
    # a shell and its background child, one process group (SIGTERM: a
    # background job of a shell without job control ignores SIGINT)
    cluster.start({"sh": ["sh", "-c", "sleep 600 & echo child $!; wait"]})
    child = int(cluster.wait_for_output("sh", r"child (\d+)", 30).group(1))
    cluster.kill("sh", signal.SIGTERM, group=True)
    cluster.wait(30)
    assert gone_within([child])


def test_teardown_kills_the_session(tmp_path):
    # a task's child in a process group of its own, as rf-launch makes
    c = Cluster(tmp_path)
    code = textwrap.dedent("""
        import os, subprocess, time
        p = subprocess.Popen(["sleep", "600"], process_group=0)
        print("child", p.pid, flush=True)
        time.sleep(600)
    """)
    c.start({"parent": [PY, "-c", code]})
    child = int(c.wait_for_output("parent", r"child (\d+)", 30).group(1))
    assert os.getpgid(child) == child  # not the task's group
    parent = c.pid("parent")
    c.close()
    assert gone_within([parent, child])
    assert c.poll("parent") == -signal.SIGKILL


def test_teardown_kills_rf_launch_tasks(tmp_path, tools):
    c = Cluster(tmp_path)
    task = [PY, "-c", "import sys, time; print(sys.argv[1:], flush=True); "
            "time.sleep(600)"]
    c.start({"launch": [tools.rf_launch, "--ps", "1", "--workers", "2",
                        "--"] + task})
    for t in ("ps0", "worker0", "worker1"):
        c.wait_for_output("launch", rf"^\[{t}\] .*--job_name=", 30)
    pids = _session_members(c.pid("launch"))
    assert len(pids) >= 4  # rf-launch and its three tasks
    c.close()
    assert gone_within(pids)
