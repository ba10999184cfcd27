#!/usr/bin/python3
"""tests/integration/kubernetes/kubernetes_test.py CASE BUILD_DIR: the
manifests of deploy/kubernetes run as local processes by
run_manifest.py (network namespaces, one per pod; root), checked.

Every run makes its own random cluster secret (32 bytes) as the Secret
the manifest mounts; the harness writes it into each pod start's
secret volume (mode 0400) and gives each start an empty TMPDIR and
RF_TOKEN_DIR, as a new container's /tmp. Both cases check that every
pod of every start saw the secret file with mode 0400 and none ran
unauthenticated (no "the cluster is unauthenticated" warning).

  tfjob   deploy/kubernetes/tfjob.yaml (2 ps, 2 workers), 4000 steps.
          Without the Secret the harness refuses to start (exit 2,
          naming it). Then ps 1 is killed with SIGKILL once the chief
          passed global_step 500 and worker 1 once it passed 1500; each
          comes back as a new pod (exit 137: the ExitCode policy
          restarts it) under its name with a new address and an empty
          /tmp. The job succeeds (the chief exits 0, worker 1's second
          start too, after joining the session before the end), the
          workers reached ps 1 at its new address (their logs name the
          recovery), worker 1's second start made a new task token (its
          token file differs from the first start's) and both ps tasks
          let it back in on the cluster secret ("takes the slot of
          another task token ... proved the cluster secret"; no
          refusal), the chief's test accuracy is >= 0.85, its final
          checkpoint model.ckpt-<step >= 4000> is in the shared volume,
          both ps tasks logged their shutdown by the chief, and every
          pod's readiness probe (/ready on the metrics port) answered;
  jobset  deploy/kubernetes/jobset.yaml (2 ps, 2 workers), 3000 steps:
          names published before the pods listen, TF_CONFIG built from
          JOB_COMPLETION_INDEX; worker 1's pod is killed with SIGKILL
          once the chief passed global_step 1000 and its Job makes a new
          pod (137 is not among podFailurePolicy's FailJob codes); the
          JobSet succeeds, worker 1 came back as in tfjob (a new token,
          let in on the secret), the accuracy and the final checkpoint
          are as in tfjob.
Exit 0 on success, 1 on failure, 77 without root or the dataset."""

import base64
import glob
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
SECRET_FILE = "/etc/rdmaflow/secret"   # the manifests' RF_CLUSTER_SECRET_FILE
UNAUTH = "the cluster is unauthenticated"
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


def make_secret(work, name):
    """This run's cluster secret as the Secret object `kubectl create
    secret generic NAME --from-file=secret=FILE --dry-run=client -o yaml`
    prints for 32 random bytes; its path."""
    path = os.path.join(work, name + ".yaml")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write("apiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\n"
                "type: Opaque\ndata:\n  secret: %s\n"
                % (name, base64.b64encode(os.urandom(32)).decode()))
    return path


def run_manifest(manifest, build, work, sets, extra=()):
    argv = [sys.executable, os.path.join(HERE, "run_manifest.py"),
            os.path.join(SRC, "deploy/kubernetes", manifest),
            "--tools", os.path.join(build, "tools"), "--workdir", work]
    argv += ["--set=%s=>%s" % kv for kv in sets] + list(extra)
    return subprocess.run(argv, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=240)


def run(manifest, build, work, sets, extra=()):
    p = run_manifest(manifest, build, work, sets, extra)
    if p.returncode != 0:
        fail("run_manifest.py exited %d: %s" % (p.returncode,
                                                p.stderr.strip()))
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


def start_log(path, n):
    """The part of a pod's log written by its start n."""
    parts = re.split(r"^=== start \d+ .*\n", text(path), flags=re.M)
    return parts[n + 1] if n + 1 < len(parts) else ""


def common(r, prefix):
    if not check(r and r["result"] == "succeeded",
                 "the job succeeded: %s" % (r and r["result"])):
        for p in (r or {}).get("pods", {}).values():
            show(p["log"])
        return False
    pods = r["pods"]
    for name, p in pods.items():
        modes = [s["secret_files"] for s in p["starts"]]
        check(len(modes) == p["restarts"] + 1 and
              all(m == {SECRET_FILE: "0400"} for m in modes),
              "%s: each of its %d start(s) had %s, mode 0400: %s"
              % (name, len(modes), SECRET_FILE, modes))
        check(UNAUTH not in text(p["log"]),
              "%s ran authenticated (no '%s' warning)" % (name, UNAUTH))
        if "-ps-" in name:
            check("shut down by the chief" in text(p["log"]),
                  "%s logged its shutdown by the chief" % name)
        else:
            check(p["exits"][-1] == 0, "%s: exit %s" % (name, p["exits"]))
        check(p["ready_after"] is not None,
              "%s: ready after %s s" % (name, p["ready_after"]))
    return True


def token(start):
    """The task token file a pod start made in its RF_TOKEN_DIR."""
    files = glob.glob(os.path.join(start["tmpdir"], "rdmaflow-*",
                                   "token-*"))
    return text(files[0]).strip() if len(files) == 1 else files


def killed_and_back(r, names):
    """Each pod of names was killed once and came back as a new pod."""
    kills = r["killed"]
    check([k["pod"] for k in kills] == names, "killed: %s" % kills)
    for k in kills:
        check(k.get("new_address") not in (None, k["old_address"]),
              "%s killed at step %s, back at %s (was %s)"
              % (k["pod"], k["at_step"], k.get("new_address"),
                 k["old_address"]))
    for name in names:
        p = r["pods"][name]
        check(p["restarts"] == 1 and p["exits"][0] == -9,
              "%s: restarts %d, exits %s" % (name, p["restarts"],
                                             p["exits"]))


def worker1_back(r, name, ps_names, steps):
    """Worker 1's pod restarted with an empty /tmp: a new task token, let
    back in by every ps on the cluster secret, in time to train."""
    w1 = r["pods"][name]
    if len(w1["starts"]) == 2:
        t0, t1 = (token(s) for s in w1["starts"])
        check(isinstance(t0, str) and isinstance(t1, str) and t0 != t1,
              "worker 1's second start made a new task token: %s, then %s"
              % (t0, t1))
    joined = re.search(r"session ready: joined, global_step (\d+)",
                       start_log(w1["log"], 1))
    check(joined and int(joined.group(1)) < steps,
          "worker 1's second start joined the session at global_step %s"
          % (joined and joined.group(1)))
    for ps in ps_names:
        log = text(r["pods"][ps]["log"])
        back = re.search(r"client 1 from %s:\d+ takes the slot of another "
                         r"task token .*proved the cluster secret"
                         % re.escape(w1["address"]), log)
        check(back is not None, "%s let worker 1 back in (%s) on the "
              "cluster secret with its new token" % (ps, w1["address"]))
        check("refusing" not in log, "%s refused no one" % ps)


def accuracy(r, chief, least):
    acc = re.search(r"^\[worker0\] test accuracy: ([0-9.]+)",
                    text(r["pods"][chief]["log"]), re.M)
    check(acc and float(acc.group(1)) >= least,
          "the chief's test accuracy %s >= %.2f"
          % (acc and acc.group(1), least))


def case_tfjob(build, work):
    steps = 4000
    sets = [("--train_steps=7200", "--train_steps=%d" % steps),
            ("--save_checkpoint_secs=60", "--save_checkpoint_secs=1")]
    p = run_manifest("tfjob.yaml", build, os.path.join(work, "nosecret"),
                     sets)
    check(p.returncode == 2 and "Secret 'rdmaflow-mnist-secret' was not "
          "given" in p.stderr,
          "without the Secret the harness refuses: exit %d, %s"
          % (p.returncode, p.stderr.strip()))
    secret = make_secret(work, "rdmaflow-mnist-secret")
    r = run("tfjob.yaml", build, work, sets,
            ["--secret", secret, "--kill", "rdmaflow-mnist-ps-1@500",
             "--kill", "rdmaflow-mnist-worker-1@1500"])
    if not common(r, "rdmaflow-mnist"):
        return
    killed_and_back(r, ["rdmaflow-mnist-ps-1", "rdmaflow-mnist-worker-1"])
    for w in ("worker-0", "worker-1"):
        log = text(r["pods"]["rdmaflow-mnist-" + w]["log"])
        check(re.search(r"recovered in [0-9.]+ s", log) is not None,
              "%s recovered from the lost ps" % w)
    worker1_back(r, "rdmaflow-mnist-worker-1",
                 ["rdmaflow-mnist-ps-0", "rdmaflow-mnist-ps-1"], steps)
    accuracy(r, "rdmaflow-mnist-worker-0", 0.85)
    final_checkpoint(os.path.join(work, "volumes/ckpt/rdmaflow-mnist"),
                     steps)


def case_jobset(build, work):
    steps = 3000
    r = run("jobset.yaml", build, work,
            [("--train_steps=7200", "--train_steps=%d" % steps)],
            ["--secret", make_secret(work, "rdmaflow-secret"),
             "--kill", "rdmaflow-worker-0-1@1000"])
    if not common(r, "rdmaflow"):
        return
    killed_and_back(r, ["rdmaflow-worker-0-1"])
    worker1_back(r, "rdmaflow-worker-0-1",
                 ["rdmaflow-ps-0-0", "rdmaflow-ps-0-1"], steps)
    accuracy(r, "rdmaflow-worker-0-0", 0.85)
    final_checkpoint(os.path.join(work, "volumes/ckpt/rdmaflow"), steps)


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
