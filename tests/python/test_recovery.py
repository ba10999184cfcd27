"""tests/python/test_recovery.py (ctest python.recovery): a ps task killed
mid-run under rf-launch --restart_on_failure, with the Python tutorial
trainer (examples/python/trainer.py, 2 ps tasks and 2 workers on
loopback, --checkpoint_dir), as tests/integration/fault's ps_kill does it
with rf-trainer. Once the chief has saved its first checkpoint (when its
session was created) and the job is under way (global_step >= 2000 of
8000, by its step counter), ps0 (which holds global_step) or ps1 is
killed with SIGKILL. Then:

- the job completes: rf-launch exits 0 without a warning (every task's
  final exit is 0), it restarted exactly the killed ps task, once;
- the chief's output shows the recovery: "session lost" after the kill,
  then "recovered in ... s: restored <the newest checkpoint the state file
  named at the kill>, global_step <its step> (recovery 1)", once; worker
  1 recovered too;
- the chief's test accuracy is >= 0.85;
- every checkpoint left verifies (rf-ckpt verify, strict: every CRC32C
  there and matching), no temporary file is left, and the newest is of the
  last global step (>= 8000)."""

# ctest-timeout: 240

import os
import re
import signal

import pytest

MIN_ACCURACY = 0.85
STATE = re.compile(r'^model_checkpoint_path: "(.*)"$', re.MULTILINE)


def children(pid):
    """The pids of pid's child processes."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2:].split()[1]) == pid:
                out.append(int(entry))
    return out


def task_pid(launch_pid, job, index):
    """The pid of rf-launch's task (its child with --job_name=job
    --task_index=index among its arguments)."""
    want = [f"--job_name={job}", f"--task_index={index}"]
    for c in children(launch_pid):
        try:
            with open(f"/proc/{c}/cmdline", "rb") as f:
                argv = f.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        if all(w in argv for w in want):
            return c
    pytest.fail(f"rf-launch (pid {launch_pid}) has no {job}{index} task")


def lines(out, task):
    prefix = f"[{task}] "
    return "\n".join(x[len(prefix):] for x in out.splitlines()
                     if x.startswith(prefix))


@pytest.mark.parametrize("victim", [0, 1])
def test_ps_killed_mid_run(cluster, tools, python, source_dir, tmp_path,
                           victim):
    ckpt = tmp_path / "ckpt"
    cluster.start({"launch": [
        tools.rf_launch, "--ps", "2", "--workers", "2",
        "--restart_on_failure", "--", python,
        source_dir / "examples/python/trainer.py",
        f"--checkpoint_dir={ckpt}"]}, env={"RF_FABRIC": "sock"})
    cluster.wait_for_output(
        "launch", r"^\[worker0\] saved checkpoint \S*/model\.ckpt-0\."
        r"safetensors \(global_step 0", 120)
    cluster.wait_for_output(
        "launch", r"^\[worker0\] global_step/sec: \S+ \(global_step "
        r"([2-9]\d{3})\)$", 120)
    newest = STATE.search((ckpt / "checkpoint").read_text()).group(1)
    pid = task_pid(cluster.pid("launch"), "ps", victim)
    killed_at = len(cluster.output("launch"))
    os.kill(pid, signal.SIGKILL)

    assert cluster.wait(200, check=True) == {"launch": 0}
    out = cluster.output("launch")
    after = out[killed_at:]
    name = f"ps{victim}"
    own = [x for x in out.splitlines() if x.startswith("rf-launch:")]
    assert own[0].startswith(f"rf-launch: {name} was killed by signal 9 "
                             "(SIGKILL); restarting it"), own
    want = {"ps0": 0, "ps1": 0, "worker0": 0, "worker1": 0, name: 1}
    assert own[1:] == ["rf-launch: restarts: " + ", ".join(
        f"{t} {n}" for t, n in want.items())], own

    chief = lines(after, "worker0")
    lost = re.search(r"^/job:worker/task:0: session lost \(.*\); "
                     r"recovering$", chief, re.MULTILINE)
    assert lost, chief
    rec = re.search(r"^/job:worker/task:0: recovered in [0-9.]+ s: "
                    r"restored (\S+), global_step (\d+) \(recovery 1\)$",
                    chief, re.MULTILINE)
    assert rec and rec.start() > lost.start(), chief
    assert rec.group(1) == str(ckpt / newest)
    assert newest == f"model.ckpt-{rec.group(2)}.safetensors"
    assert re.search(r"^/job:worker/task:1: recovered in [0-9.]+ s: ",
                     lines(after, "worker1"), re.MULTILINE)
    # one kill: the chief recovered once
    assert len(re.findall(r"recovered in", chief)) == 1, chief

    acc = re.search(r"^test accuracy ([0-9.]+)$", lines(out, "worker0"),
                    re.MULTILINE)
    assert acc and float(acc.group(1)) >= MIN_ACCURACY, lines(out, "worker0")

    files = sorted(p.name for p in ckpt.iterdir())
    assert not [f for f in files if "tmp" in f], files
    last = STATE.search((ckpt / "checkpoint").read_text()).group(1)
    assert int(re.fullmatch(r"model\.ckpt-(\d+)\.safetensors",
                            last).group(1)) >= 8000
    # strict (never --allow-unchecked): every kept checkpoint carries a
    # CRC32C for each tensor and its header, and each matches
    cluster.start({"verify": [tools.rf_ckpt, "verify", ckpt]})
    assert cluster.wait(60, ["verify"]) == {"verify": 0}, \
        cluster.tail("verify")
    verified = cluster.output("verify").splitlines()
    assert verified and all(re.fullmatch(
        r"ok .*: \d+ tensors, every CRC32C matches", v) for v in verified), \
        cluster.tail("verify")
