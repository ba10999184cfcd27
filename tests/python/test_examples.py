"""tests/python/test_examples.py (ctest python.examples): the Python
examples as their top comments run them, 2 ps tasks and 2 or 3 workers as
real processes on loopback, with the examples' own defaults (the
tutorial's 8000 steps, sync_trainer's 4000):

- examples/python/trainer.py, the four tasks started by hand on free
  ports with --protocol=sock (RF_FABRIC unset): every task exits 0, each
  opened the sock provider and each ps task served both workers over
  sock, the chief prints a test accuracy >= 0.85;
- trainer.py under rf-launch with RF_FABRIC=shm: rf-launch exits 0 with
  no warning (so every task exited 0, the ps tasks within their grace),
  every task opened the shm provider, accuracy >= 0.85;
- sync_trainer.py under rf-launch, 2 of 2 workers (shm) and 2 of 3 with a
  backup worker (--replicas_to_aggregate=2, sock): every task exits 0,
  every worker joined, each ps's sync accumulators averaged exactly 2
  gradients per update (the backup worker's late ones dropped as stale),
  accuracy >= 0.85."""

# ctest-timeout: 300

import re

ACCURACY = r"^(?:\[worker0\] )?test accuracy ([0-9.]+)$"
MIN_ACCURACY = 0.85


def hosts(free_ports, num_ps, num_workers):
    ports = free_ports(num_ps + num_workers)
    ps = ",".join(f"127.0.0.1:{p}" for p in ports[:num_ps])
    workers = ",".join(f"127.0.0.1:{p}" for p in ports[num_ps:])
    return [f"--ps_hosts={ps}", f"--worker_hosts={workers}"]


def task_lines(output, task):
    """The lines rf-launch forwarded from task ("[task] " dropped)."""
    prefix = f"[{task}] "
    return [line[len(prefix):] for line in output.splitlines()
            if line.startswith(prefix)]


def accuracy(text, where):
    m = re.search(ACCURACY, text, re.MULTILINE)
    assert m, f"{where} printed no test accuracy"
    acc = float(m.group(1))
    assert acc >= MIN_ACCURACY, f"{where}: test accuracy {acc}"
    return acc


def launch(cluster, tools, python, program, num_workers, args, fabric):
    """program under rf-launch (2 ps tasks) on fabric: its output once it
    exited 0."""
    cluster.start({"launch": [tools.rf_launch, "--ps", "2", "--workers",
                              str(num_workers), "--", python, program]
                   + args},
                  env={"RF_FABRIC": fabric, "RF_LOG_LEVEL": "info"})
    cluster.wait(240, check=True)
    out = cluster.output("launch")
    # a ps task not ending within rf-launch's grace is stopped with a
    # warning, yet the launch succeeds: there must be none (a task that
    # exits non-zero fails the launch)
    own = [line for line in out.splitlines()
           if line.startswith("rf-launch:")]
    assert not own, "rf-launch said:\n" + "\n".join(own)
    tasks = [f"ps{i}" for i in range(2)] + [f"worker{i}"
                                            for i in range(num_workers)]
    for task in tasks:
        lines = task_lines(out, task)
        assert any(f"fabric: opened provider {fabric}" in line
                   for line in lines), f"{task} did not open {fabric}"
        assert not any("Traceback" in line for line in lines), (
            f"{task}:\n" + "\n".join(lines[-20:]))
    return out


def test_trainer_by_hand_on_sock(cluster, python, source_dir, free_ports):
    flags = hosts(free_ports, 2, 2) + ["--protocol=sock"]
    trainer = [python, source_dir / "examples/python/trainer.py"]
    cluster.start({
        f"{job}{i}": trainer + flags + [f"--job_name={job}",
                                        f"--task_index={i}"]
        for job in ("ps", "worker") for i in range(2)},
        env={"RF_FABRIC": None, "RF_LOG_LEVEL": "info"})
    codes = cluster.wait(240, check=True)
    assert codes == {"ps0": 0, "ps1": 0, "worker0": 0, "worker1": 0}
    for task in cluster.tasks:
        assert "fabric: opened provider sock" in cluster.output(task), \
            cluster.tail(task)
    for ps in ("ps0", "ps1"):
        clients = re.findall(r"client (\d+)(?: \(chief\))? connected from "
                             r"\S+ over (\w+)", cluster.output(ps))
        assert sorted(set(clients)) == [("0", "sock"), ("1", "sock")], \
            cluster.tail(ps)
    accuracy(cluster.output("worker0"), "worker0")
    assert not re.search(ACCURACY, cluster.output("worker1"), re.MULTILINE)


def test_trainer_rf_launch_on_shm(cluster, tools, python, source_dir):
    out = launch(cluster, tools, python,
                 source_dir / "examples/python/trainer.py", 2, [], "shm")
    accuracy("\n".join(task_lines(out, "worker0")), "worker0")


def check_sync(out, num_workers, aggregate):
    """Every worker joined; each ps's sync accumulators (its info lines at
    the end) made every update of exactly `aggregate` gradients, at least
    4000 of them (the example's last step), and with a backup worker
    dropped some late gradients as stale."""
    for i in range(1, num_workers):
        assert any("session ready: joined" in line
                   for line in task_lines(out, f"worker{i}")), \
            f"worker{i} never joined"
    for ps in ("ps0", "ps1"):
        stats = [re.search(r"sync replicas '.*' part \d+: step (\d+), "
                           r"(\d+) averaged updates of (\d+) gradients, "
                           r"(\d+) gradients taken, (\d+) dropped as stale",
                           line) for line in task_lines(out, ps)]
        stats = [m for m in stats if m]
        assert stats, f"{ps} reported no sync accumulator"
        for m in stats:
            step, updates, of, taken, dropped = map(int, m.groups())
            assert of == aggregate, m.group(0)
            assert updates >= 4000 and taken == aggregate * updates, \
                m.group(0)
            if num_workers > aggregate:
                assert dropped > 0, m.group(0)


def test_sync_trainer_two_of_two(cluster, tools, python, source_dir):
    out = launch(cluster, tools, python,
                 source_dir / "examples/python/sync_trainer.py", 2, [],
                 "shm")
    check_sync(out, 2, 2)
    accuracy("\n".join(task_lines(out, "worker0")), "worker0")


def test_sync_trainer_two_of_three_backup(cluster, tools, python,
                                          source_dir):
    out = launch(cluster, tools, python,
                 source_dir / "examples/python/sync_trainer.py", 3,
                 ["--replicas_to_aggregate=2"], "sock")
    check_sync(out, 3, 2)
    accuracy("\n".join(task_lines(out, "worker0")), "worker0")
