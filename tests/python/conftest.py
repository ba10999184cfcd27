"""tests/python/conftest.py: the fixtures every test of the Python package
shares (tests/python/README.md shows them in use).

  build_dir    the build tree (RF_BUILD_DIR; by hand: <source>/build)
  source_dir   the source tree (RF_SOURCE_DIR; by hand: this file's ../..)
  python       the interpreter running the tests (ctest: RF_PYTHON,
               Debian's /usr/bin/python3), for the processes tests start
  tools        build/tools' programs: tools.rf_launch, tools.rf_trainer,
               tools.rf_ckpt, or tools["rf-info"] for any other
  free_ports   free_ports(n): n distinct loopback ports, each bound and
               closed, that no other test of this run is handed meanwhile
  cluster      starts real processes (one per task), waits for them,
               reads their logs, signals them; kills what is left after
               the test

A run in which a test was skipped and none failed exits 77, which ctest
reports as a skip (SKIP_RETURN_CODE), never as a pass.

Run by ctest (tests/python/CMakeLists.txt), which sets PYTHONPATH to
build/python; run by hand, this file puts build/python on sys.path and
PYTHONPATH itself:

    /usr/bin/python3 -m pytest -q tests/python/test_import.py
"""

import errno
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

SOURCE_DIR = Path(os.environ.get("RF_SOURCE_DIR")
                  or Path(__file__).resolve().parents[2])
BUILD_DIR = Path(os.environ.get("RF_BUILD_DIR") or SOURCE_DIR / "build")


def _use_build_tree():
    """Makes build/python importable here and in every child process
    (which inherit PYTHONPATH), unless PYTHONPATH names it already."""
    pkg = str(BUILD_DIR / "python")
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
             if p]
    if pkg not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([pkg] + paths)
    if pkg not in sys.path:
        sys.path.insert(0, pkg)


_use_build_tree()


@pytest.fixture(scope="session")
def build_dir():
    """The build tree (a pathlib.Path)."""
    return BUILD_DIR


@pytest.fixture(scope="session")
def source_dir():
    """The source tree (a pathlib.Path)."""
    return SOURCE_DIR


@pytest.fixture(scope="session")
def python():
    """The interpreter running the tests (a str): start Python tasks with
    it, not with whatever `python3` is first on PATH (which may lack
    numpy)."""
    return sys.executable


class Tools:
    """Paths (str) of the build tree's tools: attributes for rf-launch,
    rf-trainer and rf-ckpt (tools.rf_launch), items for any program in
    build/tools (tools["rf-info"]). A tool that is not built fails the
    test that asks for it."""

    def __init__(self, tools_dir):
        self._dir = Path(tools_dir)

    def __getitem__(self, name):
        path = self._dir / name
        if not os.access(path, os.X_OK):
            pytest.fail(f"{path} is not built (cmake --build {BUILD_DIR})",
                        pytrace=False)
        return str(path)

    def __getattr__(self, attr):
        if attr.startswith("_"):
            raise AttributeError(attr)
        return self[attr.replace("_", "-")]


@pytest.fixture(scope="session")
def tools(build_dir):
    """build/tools' programs (see Tools); rf-launch, rf-trainer and
    rf-ckpt must be built."""
    t = Tools(build_dir / "tools")
    for name in ("rf-launch", "rf-trainer", "rf-ckpt"):
        t[name]
    return t


# Ports. A port handed out here is bound (to prove it free) and closed
# again for the task that will listen on it; between the two another
# process may take it, so each is also reserved, for the rest of the
# pytest run, in the directory tests/common/lib.sh's free_port uses
# ($RF_TEST_PORT_DIR, default ${TMPDIR:-/tmp}/rf-test-ports: a directory
# per port, made with mkdir, holding the owner's pid), which the shell
# tests running beside this one under `ctest -j` respect as this does
# theirs. Ports come from 20000 up to the kernel's ephemeral range (as
# lib.sh's), which outgoing connections do not take a source port from.
# The C tests' rft_free_port binds port 0, i.e. takes ephemeral ports.

_PORT_LOW = 20000


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


class _PortRegistry:
    def __init__(self):
        self.dir = Path(os.environ.get("RF_TEST_PORT_DIR")
                        or Path(os.environ.get("TMPDIR") or "/tmp")
                        / "rf-test-ports")
        self.taken = set()    # handed out in this run
        self.reserved = []    # directories to remove at the end

    def _reserve(self, port):
        """Takes port's reservation for this process; False if another
        live process holds it."""
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError:
            return True  # nowhere to reserve: the bind probe only
        d = self.dir / str(port)
        try:
            d.mkdir()
        except FileExistsError:
            try:
                owner = int((d / "pid").read_text().strip())
            except (OSError, ValueError):
                return False  # being made, or unreadable: held
            try:
                os.kill(owner, 0)
                return False
            except ProcessLookupError:
                pass  # its owner is gone: take it over
            except PermissionError:
                return False
            try:
                (d / "pid").unlink()
                d.rmdir()
                d.mkdir()
            except OSError:
                return False
        except OSError:
            return True
        (d / "pid").write_text(f"{os.getpid()}\n")
        self.reserved.append(d)
        return True

    @staticmethod
    def _bind_probe(port):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False
        finally:
            s.close()

    def take(self, n):
        high = max(_ephemeral_low(), _PORT_LOW + 1000)
        rng = random.Random()
        ports = []
        for _ in range(200 * n):
            if len(ports) == n:
                break
            p = rng.randrange(_PORT_LOW, high)
            if p in self.taken:
                continue
            if not self._reserve(p):
                continue
            self.taken.add(p)  # handed out or not: this run keeps it
            if self._bind_probe(p):
                ports.append(p)
        if len(ports) < n:
            pytest.fail(f"found only {len(ports)} of {n} free loopback "
                        f"ports in {_PORT_LOW}..{high - 1}", pytrace=False)
        return ports

    def release(self):
        for d in self.reserved:
            try:
                (d / "pid").unlink()
                d.rmdir()
            except OSError:
                pass
        self.reserved.clear()


@pytest.fixture(scope="session")
def _port_registry():
    reg = _PortRegistry()
    yield reg
    reg.release()


@pytest.fixture
def free_ports(_port_registry):
    """free_ports(n): a list of n distinct loopback (127.0.0.1) ports
    nothing listens on, each bound and closed a moment ago and handed out
    once per run (see above)."""
    def take(n=1):
        if n < 1:
            raise ValueError("free_ports(n): n must be at least 1")
        return _port_registry.take(n)
    return take


def _proc_stat(pid):
    """(state, ppid, pgrp, session) of a process, or None if it is
    gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return fields[0], int(fields[1]), int(fields[2]), int(fields[3])


def _session_members(sid):
    """Every live process (not a zombie) of session sid (a task's children
    keep the task's session when they only change process group, as
    rf-launch's tasks do)."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = _proc_stat(int(entry))
            if st is not None and st[3] == sid and st[0] != "Z":
                pids.append(int(entry))
    return pids


class _Task:
    def __init__(self, name, argv, proc, log):
        self.name = name
        self.argv = argv
        self.proc = proc
        self.log = log


class Cluster:
    """Real processes, one per task, each in a session of its own
    (start_new_session), its stdout and stderr in <tmp_path>/<task>.log.

    start({task: argv}, env=None, cwd=None)  start tasks (argv: a list of
        str or paths). env adds to (or, with a value None, removes from)
        this process's environment, which has PYTHONPATH at build/python
        and PYTHONUNBUFFERED=1 (a Python task's lines reach its log at
        once); cwd defaults to tmp_path. A task that has exited may be
        started again: its log goes on after a line "--- started again".
    wait(timeout, tasks=None, check=False) -> {task: exit code}  waits for
        the tasks (default: every task started), -N for a task killed by
        signal N. A task still running after timeout seconds fails the
        test, naming it and showing its log's last lines (every task
        still running is killed first; tasks that exited non-zero
        meanwhile are named too, with their logs' tails). check=True
        fails the test for each task that exits non-zero, with its log's
        tail, as soon as one does (killing those still running, which
        might wait for it forever).
    wait_for_output(task, pattern, timeout) -> re.Match  waits until the
        task's log has a line matching the regular expression pattern;
        fails the test (with the log's tail) if the task exits first or
        timeout seconds pass.
    output(task) -> str  the task's log so far.
    kill(task, sig=SIGKILL, group=False)  sends sig to the task's process,
        or with group=True to its process group (as a terminal's Ctrl-C
        does to a foreground job).
    pid(task), poll(task) (exit code or None), log_path(task), tasks.
    After the test every process of every task's session is killed
    (SIGKILL) and reaped, also when the test failed."""

    TAIL_LINES = 40

    def __init__(self, tmp_path):
        self.dir = Path(tmp_path)
        self._tasks = {}

    # starting

    def start(self, argv_per_task, env=None, cwd=None):
        if not argv_per_task:
            raise ValueError("cluster.start: no task given")
        full_env = dict(os.environ)
        full_env["PYTHONUNBUFFERED"] = "1"
        for key, value in (env or {}).items():
            if value is None:
                full_env.pop(key, None)
            else:
                full_env[key] = str(value)
        for name, argv in argv_per_task.items():
            if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
                raise ValueError(f"cluster.start: bad task name {name!r}")
            old = self._tasks.get(name)
            if old is not None and old.proc.poll() is None:
                raise ValueError(f"cluster.start: {name} is running")
            argv = [os.fspath(a) for a in argv]
            log = self.dir / f"{name}.log"
            with open(log, "ab") as out:
                if old is not None:
                    out.write(b"--- started again\n")
                    out.flush()
                proc = subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=out,
                    stderr=subprocess.STDOUT, env=full_env,
                    cwd=os.fspath(cwd or self.dir), start_new_session=True)
            self._tasks[name] = _Task(name, argv, proc, log)

    # looking at them

    @property
    def tasks(self):
        """The names of the tasks started, in the order they started."""
        return list(self._tasks)

    def _task(self, name):
        try:
            return self._tasks[name]
        except KeyError:
            raise KeyError(f"no task {name!r} was started (tasks: "
                           f"{', '.join(self._tasks) or 'none'})") from None

    def pid(self, task):
        return self._task(task).proc.pid

    def poll(self, task):
        return self._task(task).proc.poll()

    def log_path(self, task):
        return self._task(task).log

    def output(self, task):
        return self._task(task).log.read_text(errors="replace")

    def tail(self, task, lines=TAIL_LINES):
        """The log's last lines, indented, under a heading naming the
        task and its command."""
        t = self._task(task)
        text = self.output(task).splitlines()[-lines:]
        head = f"--- {task} ({' '.join(t.argv)}), last lines of {t.log}:"
        return "\n".join([head] + ["    | " + x for x in text])

    # waiting

    def wait(self, timeout, tasks=None, check=False):
        names = list(self._tasks) if tasks is None else list(tasks)
        for name in names:
            self._task(name)
        deadline = time.monotonic() + timeout
        while True:
            codes = {n: self._tasks[n].proc.poll() for n in names}
            running = [n for n in names if codes[n] is None]
            failed = [n for n in names
                      if codes[n] is not None and codes[n] != 0]
            if not running:
                break
            if check and failed:
                # the others may wait for the failed one forever
                for name in running:
                    self._kill_session(self._tasks[name])
                pytest.fail(self._failure(failed, codes)
                            + f"\n(killed {', '.join(running)}, "
                            "still running then)", pytrace=False)
            if time.monotonic() >= deadline:
                for name in running:
                    self._kill_session(self._tasks[name])
                msg = (f"{running[0]} still running after {timeout} s"
                       + (f" (and {', '.join(running[1:])})"
                          if running[1:] else "") + "; killed")
                if failed:
                    msg += "\nmeanwhile " + self._failure(failed, codes)
                pytest.fail(msg + "\n" + "\n".join(
                    self.tail(n) for n in running), pytrace=False)
            time.sleep(0.05)
        if check and failed:
            pytest.fail(self._failure(failed, codes), pytrace=False)
        return codes

    def _failure(self, failed, codes):
        """"A exited with status 1; B exited on signal SIGKILL" and their
        logs' tails."""
        return ("; ".join(f"{n} exited {self._describe(codes[n])}"
                          for n in failed) + "\n"
                + "\n".join(self.tail(n) for n in failed))

    @staticmethod
    def _describe(code):
        if code < 0:
            try:
                return f"on signal {signal.Signals(-code).name}"
            except ValueError:
                return f"on signal {-code}"
        return f"with status {code}"

    def wait_for_output(self, task, pattern, timeout):
        t = self._task(task)
        regex = re.compile(pattern, re.MULTILINE)
        deadline = time.monotonic() + timeout
        while True:
            m = regex.search(self.output(task))
            if m:
                return m
            code = t.proc.poll()
            if code is not None:
                m = regex.search(self.output(task))  # its last words
                if m:
                    return m
                pytest.fail(f"{task} exited {self._describe(code)} before "
                            f"printing /{pattern}/\n{self.tail(task)}",
                            pytrace=False)
            if time.monotonic() >= deadline:
                pytest.fail(f"{task} did not print /{pattern}/ within "
                            f"{timeout} s\n{self.tail(task)}", pytrace=False)
            time.sleep(0.05)

    # signals

    def kill(self, task, sig=signal.SIGKILL, group=False):
        t = self._task(task)
        if t.proc.poll() is not None:
            raise ProcessLookupError(f"{task} has exited already "
                                     f"({self._describe(t.proc.returncode)})")
        if group:
            os.killpg(t.proc.pid, sig)
        else:
            t.proc.send_signal(sig)

    def _kill_session(self, t):
        """SIGKILL to every process of t's session (t's own process group
        and the groups its children made), then reaps t."""
        sid = t.proc.pid
        for _ in range(10):  # processes forked meanwhile: again
            pids = _session_members(sid)
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError as e:
                    if e.errno != errno.ESRCH:
                        raise
            if t.proc.poll() is None:
                try:
                    t.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
            time.sleep(0.02)
        if t.proc.poll() is None:
            t.proc.wait(timeout=10)

    def close(self):
        for t in self._tasks.values():
            self._kill_session(t)


@pytest.fixture
def cluster(tmp_path):
    """A Cluster whose logs are in this test's tmp_path; every process
    left is killed after the test."""
    c = Cluster(tmp_path)
    yield c
    c.close()


def pytest_sessionfinish(session, exitstatus):
    """A skip makes the whole run a skip for ctest: exit 77, not 0."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if exitstatus == 0 and reporter is not None and \
            reporter.stats.get("skipped"):
        session.exitstatus = 77
