"""tests/python/test_interrupt.py (ctest python.interrupt): Ctrl-C ends a
blocking rdmaflow call, and the call lets other Python threads run.
Real processes (tests/python/interrupt_job.py) on loopback, each blocked
in one call, get SIGINT from this test:

- a ps task in server.join() (its workers never come), SIGINT to its
  process group as a terminal's Ctrl-C sends it;
- a worker creating its MonitoredTrainingSession (max_wait_secs=3600)
  while its ps task never comes;
- rdmaflow._rdmaflow._blocking_sleep(5000).
Without --counter each process has one Python thread, the main one.
Each exits within 1 s of the signal (measured from the kill to the exit),
killed by SIGINT as an uncaught KeyboardInterrupt leaves Python, with a
traceback ending in the blocking call's line and KeyboardInterrupt.

With a second Python thread (--counter), while the main thread is in
join() or in the session's creation (or the sleep), that thread counts
for a second: it runs, at full speed, so the call released the GIL."""

# ctest-timeout: 120

import signal
import time

import pytest

# the line of rdmaflow's (or the program's) source making each blocking
# call, which the traceback shows last
CALL_LINE = {"join": "self._server.join()",
             "wait": "self._ms = _rf.MonitoredSession(",
             "sleep": "_rdmaflow._blocking_sleep(5000)"}
EXIT_WITHIN = 1.0  # seconds from SIGINT to the exit


def start(cluster, python, source_dir, free_ports, mode, counter=False):
    ps, worker = free_ports(2)
    argv = [python, source_dir / "tests/python/interrupt_job.py", mode,
            f"--ps_hosts=127.0.0.1:{ps}", f"--worker_hosts=127.0.0.1:{worker}"]
    if counter:
        argv.append("--counter")
    cluster.start({mode: argv}, env={"RF_FABRIC": "sock"})
    m = cluster.wait_for_output(mode, r"^blocking: \w+ \((\d+) Python "
                                r"threads\)$", 60)
    assert int(m.group(1)) == 1 + counter


def interrupt(cluster, task, group=False):
    """SIGINT to task (in the call): the seconds until it exited."""
    pid = cluster.pid(task)
    # in the call: its main thread sleeps (in the runner's wait)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not main_thread_sleeping(pid):
        time.sleep(0.01)
    time.sleep(0.3)  # from the Python line to the C call
    assert cluster.poll(task) is None, cluster.tail(task)
    t0 = time.monotonic()
    cluster.kill(task, signal.SIGINT, group=group)
    while cluster.poll(task) is None and time.monotonic() - t0 < 10:
        time.sleep(0.001)
    return time.monotonic() - t0


def main_thread_sleeping(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] == "S"


def check_keyboard_interrupt(cluster, task, mode, elapsed):
    code = cluster.poll(task)
    assert code == -signal.SIGINT, (
        f"{task} exit {code}, not killed by SIGINT\n{cluster.tail(task)}")
    assert elapsed < EXIT_WITHIN, (
        f"{task} exited {elapsed:.3f} s after SIGINT\n{cluster.tail(task)}")
    lines = cluster.output(task).rstrip().splitlines()
    assert "Traceback (most recent call last):" in lines, cluster.tail(task)
    assert lines[-1] == "KeyboardInterrupt", cluster.tail(task)
    # the innermost frame's source line is the blocking call (after it
    # maybe a line of ^ markers)
    code_lines = [x.strip() for x in lines[:-1]
                  if x.startswith("    ") and set(x.strip()) != {"^"}]
    assert code_lines[-1].startswith(CALL_LINE[mode]), cluster.tail(task)


@pytest.mark.parametrize("mode", ["join", "wait", "sleep"])
def test_sigint_ends_blocking_call(cluster, python, source_dir, free_ports,
                                   mode):
    start(cluster, python, source_dir, free_ports, mode)
    elapsed = interrupt(cluster, mode, group=(mode == "join"))
    check_keyboard_interrupt(cluster, mode, mode, elapsed)
    assert "returned from" not in cluster.output(mode)


@pytest.mark.parametrize("mode", ["join", "wait", "sleep"])
def test_other_threads_run_during_call(cluster, python, source_dir,
                                       free_ports, mode):
    start(cluster, python, source_dir, free_ports, mode, counter=True)
    m = cluster.wait_for_output(mode, r"^(counted (\d+) in the call|left "
                                r"the call|never saw .*)$", 60)
    assert m.group(2), cluster.tail(mode)
    # a thread holding the GIL in the call would let it count nothing; a
    # free one counts millions a second (100000 leaves room for a loaded
    # machine)
    assert int(m.group(2)) > 100000, m.group(0)
    elapsed = interrupt(cluster, mode)
    check_keyboard_interrupt(cluster, mode, mode, elapsed)
