"""tests/python/test_torch.py (ctest python.torch): the PyTorch example
(examples/python/torch_trainer.py), whose parameters live on rdmaflow's
ps tasks, on 2 ps + 2 workers under rf-launch (sock): every task exits 0
(rf-launch's exit status, no task reported failed or left running), both
workers print their step-time split, and the chief's test accuracy is
within 0.025 of the same model trained by torch alone
(`torch_trainer.py --torch_only`: the same steps, torch.optim.SGD at the
same learning rate), both figures parsed from the programs' output. The
example's defaults (batch 500, learning rate 0.05, 3000 steps: 25
epochs), where the last iterate of constant-rate SGD moves little (torch
alone 0.8445). The two workers are asynchronous, so how stale their
gradients are depends on the machine's load: distributed runs measured
0.8436 on a quiet machine, 0.8382 beside two busy loops and 0.8321 in a
CI run beside the rxe guests (2026-12-04), hence the bound; a model that
does not train ends near 0.1. The two programs run side by side. Needs
Debian's python3-torch."""

# ctest-timeout: 150

import re

TRAIN_STEPS = 3000
BOUND = 0.025


def test_torch_on_ps_tasks_matches_torch_alone(cluster, python, source_dir,
                                               tools):
    example = str(source_dir / "examples/python/torch_trainer.py")
    flags = ["--train_steps=%d" % TRAIN_STEPS]
    cluster.start({
        "launch": [tools.rf_launch, "--ps", "2", "--workers", "2",
                   "--timeout", "120", "--", python, example] + flags,
        "torch": [python, example, "--torch_only"] + flags,
    }, env={"RF_FABRIC": "sock"}, cwd=str(source_dir / "examples/python"))
    codes = cluster.wait(130, check=True)
    assert codes == {"launch": 0, "torch": 0}
    log = cluster.output("launch")
    # rf-launch says nothing of its own when every task exited 0; it
    # names a task that failed, or a ps task it had to stop
    assert not re.search(r"^rf-launch: ", log, re.MULTILINE), \
        cluster.tail("launch")
    for w in (0, 1):
        m = re.search(r"^\[worker%d\] step time: pull [0-9.]+ us, torch "
                      r"[0-9.]+ us, push [0-9.]+ us \((\d+) steps\)$" % w,
                      log, re.MULTILINE)
        assert m, "worker%d printed no step times" % w
        assert int(m.group(1)) > 0
    found = re.findall(r"^\[worker0\] test accuracy ([0-9.]+)$", log,
                       re.MULTILINE)
    assert len(found) == 1, cluster.tail("launch")
    distributed = float(found[0])
    m = re.search(r"^torch alone: test accuracy ([0-9.]+)$",
                  cluster.output("torch"), re.MULTILINE)
    assert m, cluster.tail("torch")
    alone = float(m.group(1))
    print("test accuracy: distributed %.4f, torch alone %.4f (%d steps)"
          % (distributed, alone, TRAIN_STEPS))
    assert alone > 0.8  # trained, not a chance-level pair
    assert abs(distributed - alone) <= BOUND, (
        "distributed %.4f, torch alone %.4f" % (distributed, alone))
