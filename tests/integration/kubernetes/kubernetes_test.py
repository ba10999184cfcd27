#!/usr/bin/python3
"""tests/integration/kubernetes/kubernetes_test.py CASE BUILD_DIR: the
manifests of deploy/kubernetes run as local processes by
run_manifest.py (network namespaces, one per pod; root), checked:

  tfjob   deploy/kubernetes/tfjob.yaml (2 ps, 2 workers), 3000 steps:
          ps 1 is killed with SIGKILL once the chief passed global_step
          500 and comes back under its name with a new address; the job
          succeeds (the chief exits 0, the other worker too), ps 1 was
          restarted once, the workers reached it at its new address
          (their logs name the recovery), the chief's final checkpoint
          model.ckpt-<step >= 3000> is in the shared volume, both ps
          tasks logged their shutdown by the chief, and every pod's
          readiness probe (/ready on the metrics port) answered;
  jobset  deploy/kubernetes/jobset.yaml (2 ps, 2 workers), 1500 steps:
          names published before the pods listen, TF_CONFIG built from
          JOB_COMPLETION_INDEX; the JobSet succeeds and the final
          checkpoint is there.
Exit 0 on success, 1 on failure, 77 without root or the dataset."""

import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
DATA = os.environ.get("RF_FASHION_MNIST_DIR",
                      "/usr/share/datasets/fashion-mnist")
failures = 0


def ok(what):
    print("ok: " + what)


def fail(what):
    global failures
    failures += 1
    print("FAIL: " + what)


def check(cond, what):
    (ok if cond else fail)(what)
    return cond


def run(manifest, build, work, sets, extra=()):
    argv = [sys.executable, os.path.join(HERE, "run_manifest.py"),
            os.path.join(SRC, "deploy/kubernetes", manifest),
            "--tools", os.path.join(build, "tools"), "--workdir", work]
    argv += ["--set=%s=>%s" % kv for kv in sets] + list(extra)
    p = subprocess.run(argv, stdout=subprocess.PIPE, text=True,
                       timeout=240)
    if p.returncode != 0:
        fail("run_manifest.py exited %d" % p.returncode)
        return None
    return json.loads(p.stdout.strip().splitlines()[-1])


def show(path, n=12):
    try:
        with open(path) as f:
            for line in f.read().splitlines()[-n:]:
                print("    | " + line)
    except OSError as e:
        print("    | (%s)" % e)


def text(path):
    with open(path) as f:
        return f.read()


def final_checkpoint(ckpt_dir, last):
    names = os.listdir(ckpt_dir) if os.path.isdir(ckpt_dir) else []
    steps = [int(m.group(1)) for m in
             (re.match(r"model\.ckpt-(\d+)\.safetensors$", n)
              for n in names) if m]
    return check(steps and max(steps) >= last,
                 "the final checkpoint in %s: steps %s"
                 % (ckpt_dir, sorted(steps)))


def common(r, prefix):
    if not check(r and r["result"] == "succeeded",
                 "the job succeeded: %s" % (r and r["result"])):
        for p in (r or {}).get("pods", {}).values():
            show(p["log"])
        return False
    pods = r["pods"]
    for name, p in pods.items():
        if "-ps-" in name:
            check("shut down by the chief" in text(p["log"]),
                  "%s logged its shutdown by the chief" % name)
        else:
            check(p["exits"][-1] == 0, "%s: exit %s" % (name, p["exits"]))
        check(p["ready_after"] is not None,
              "%s: ready after %s s" % (name, p["ready_after"]))
    return True


def case_tfjob(build, work):
    r = run("tfjob.yaml", build, work,
            [("--train_steps=7200", "--train_steps=3000"),
             ("--save_checkpoint_secs=60", "--save_checkpoint_secs=1")],
            ["--kill-ps", "1", "--kill-after-step", "500"])
    if not common(r, "rdmaflow-mnist"):
        return
    k = r["killed"]
    check(k and k["new_address"] != k["old_address"],
          "ps 1 killed at step %s, back at %s (was %s)"
          % (k.get("at_step"), k.get("new_address"), k.get("old_address")))
    ps1 = r["pods"]["rdmaflow-mnist-ps-1"]
    check(ps1["restarts"] == 1 and ps1["exits"][0] == -9,
          "ps 1: restarts %d, exits %s" % (ps1["restarts"], ps1["exits"]))
    for w in ("worker-0", "worker-1"):
        log = text(r["pods"]["rdmaflow-mnist-" + w]["log"])
        check(re.search(r"recovered in [0-9.]+ s", log) is not None,
              "%s recovered from the lost ps" % w)
    final_checkpoint(os.path.join(work, "volumes/ckpt/rdmaflow-mnist"),
                     3000)


def case_jobset(build, work):
    r = run("jobset.yaml", build, work,
            [("--train_steps=7200", "--train_steps=1500")])
    if not common(r, "rdmaflow"):
        return
    final_checkpoint(os.path.join(work, "volumes/ckpt/rdmaflow"), 1500)


def main(argv):
    if len(argv) != 3 or argv[1] not in ("tfjob", "jobset"):
        sys.stderr.write("usage: kubernetes_test.py tfjob|jobset BUILD\n")
        return 2
    if os.geteuid() != 0:
        print("SKIP: needs root (network namespaces)")
        return 77
    if not os.path.exists(os.path.join(DATA, "train-images-idx3-ubyte.gz")):
        print("SKIP: no Fashion-MNIST in %s" % DATA)
        return 77
    with tempfile.TemporaryDirectory() as work:
        {"tfjob": case_tfjob, "jobset": case_jobset}[argv[1]](argv[2], work)
    print("%s: %d failure(s)" % (argv[1], failures) if failures
          else "%s: ok" % argv[1])
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
