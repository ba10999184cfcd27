#!/usr/bin/python3
"""tests/integration/kubernetes/run_manifest.py: runs the containers of a
TFJob or JobSet manifest (deploy/kubernetes/) as local processes, the
way their controllers would run the pods, and reports what happened.

run_manifest.py MANIFEST --tools DIR --workdir DIR [--set OLD=>NEW ...]
                [--secret FILE ...] [--kill POD@STEP ...] [--timeout SECS]

Every pod gets its own network namespace (a veth into a bridge in a
switch namespace, all made here and removed at the end), an address in
10.213.0.0/24 and its own /etc/hosts (ip netns exec mounts
/etc/netns/<ns>/hosts over /etc/hosts) mapping every pod's DNS name to
its address, as the cluster's DNS would:
  - TFJob (training-operator): pods <job>-<type>-<i>, names
    <pod>.<namespace>.svc, TF_CONFIG {"cluster": {type: [name:port...]},
    "task": {"type", "index"}} set by the harness as the operator does
    (an evaluator replica is left out of the cluster);
  - JobSet: pods <jobset>-<replicatedJob>-<j>-<k>, names
    <pod>.<subdomain>, JOB_COMPLETION_INDEX=k; the container builds its
    own TF_CONFIG.
A container runs its command and args from the manifest with its env
(literal values; a valueFrom is refused), found on PATH from --tools
(the image's binaries); the only rewrites are a volume's mountPath,
which becomes a local directory, and the --set=OLD=>NEW text
substitutions the test asks for (each OLD must occur; an argument they
leave empty is dropped). Volumes, by kind:
  - persistentVolumeClaim: one directory under --workdir/volumes, shared
    by every pod and every start;
  - secret: the Secret named secretName, from a --secret FILE (a Secret
    object, YAML or JSON, as `kubectl create secret generic NAME
    --from-file=KEY=PATH --dry-run=client -o yaml` writes it), written
    for each pod start as the kubelet does: the files (every key, or
    items' key -> path) with defaultMode (items' mode; 0644 without
    either) in a timestamped folder, reached through the ..data link
    and one link per file; a Secret that was not given is an error
    (unless optional: an empty volume), and so is a missing key;
  - emptyDir: an empty directory per pod start;
any other kind, or a mount naming no volume, is an error. Every pod
start is a new container: it gets a new empty TMPDIR and RF_TOKEN_DIR
(<tmp>/rdmaflow-UID, the default /tmp/rdmaflow-UID of a fresh /tmp)
under --workdir/pods/<pod>/<start> (the manifest's env may set either),
so nothing a task kept in /tmp survives its restart; the secret volumes
are removed when the run ends.

Restarts follow the pod's policy: TFJob restartPolicy ExitCode restarts
a container on 128-255 (a SIGKILL is 137) and fails the job on 1-127; a
JobSet Job's podFailurePolicy fails it on the listed exit codes, and
other failures are retried within backoffLimit. Both controllers make a
new pod, so a restarted pod comes back with a new address (the next
free one) under the same name (every pod's /etc/hosts rewritten first,
as DNS would) and a new start folder. The job succeeds when the chief
(TFJob: the Chief replica, else worker 0; JobSet: every pod of
successPolicy's target jobs) exits 0; then the other pods are deleted
(SIGTERM, then SIGKILL after 10 s).

--kill POD@STEP (repeatable, fired in order): once the chief's log shows
global_step STEP or more (a "step ..., loss ..." line) and the kill
before it fired, pod POD's container is killed with SIGKILL; its pod's
policy decides what follows, as for any exit.

The readiness probe (httpGet on the pod's address, made with curl from
the pod's network namespace) is polled every 0.5 s and the first time
each pod is ready is reported.

Prints one JSON object: {"result": "succeeded"|"failed"|"timeout",
"pods": {name: {"address", "exits": [...], "restarts", "ready_after",
"log", "starts": [{"address", "dir", "tmpdir", "secret_files": {path:
mode}}]}}, "killed": [{"pod", "at_step", "old_address",
"new_address"}]}. Exit 0 when it ran (whatever the job did), 2 on a
usage or setup error (nothing is started then)."""

import argparse
import base64
import binascii
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import yaml

NET = "10.213.0."


class SetupError(Exception):
    """What the manifest or the arguments ask that cannot be run."""


def run(*cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE)


class Pod:
    def __init__(self, name, dns, podspec, env, task, restart, index):
        self.name = name
        self.dns = dns
        self.container = podspec["containers"][0]
        self.volumes = {v.get("name"): v for v in podspec.get("volumes", [])}
        self.env = env
        self.task = task          # (type, index) for TF_CONFIG, or None
        self.restart = restart    # "ExitCode" or ("jobset", fail_codes)
        self.index = index
        self.ns = None
        self.address = None
        self.proc = None
        self.exits = []
        self.restarts = 0
        self.ready_after = None
        self.done = False
        self.log = None
        self.next_probe = 0.0
        self.starts = []


def tfjob_pods(doc):
    """The pods of a TFJob and the TF_CONFIG cluster the operator gives
    them."""
    job = doc["metadata"]["name"]
    ns = doc["metadata"].get("namespace", "default")
    pods, cluster = [], {}
    for rtype, spec in doc["spec"]["tfReplicaSpecs"].items():
        t = rtype.lower()
        podspec = spec["template"]["spec"]
        port = next((p["containerPort"]
                     for p in podspec["containers"][0].get("ports", [])
                     if p.get("name") == "tfjob-port"), 2222)
        for i in range(int(spec.get("replicas", 1))):
            name = "%s-%s-%d" % (job, t, i)
            dns = "%s.%s.svc" % (name, ns)
            if t != "evaluator":
                cluster.setdefault(t, []).append("%s:%d" % (dns, port))
            pods.append(Pod(name, dns, podspec, {}, (t, i),
                            spec.get("restartPolicy", "Never"), i))
    for p in pods:
        p.env["TF_CONFIG"] = json.dumps({
            "cluster": cluster,
            "task": {"type": p.task[0], "index": p.task[1]},
            "environment": "cloud"})
    chief = "chief" if "chief" in cluster else "worker"
    return pods, lambda ps: [p for p in ps if p.task == (chief, 0)]


def jobset_pods(doc):
    js = doc["metadata"]["name"]
    net = doc["spec"].get("network", {})
    sub = net.get("subdomain", js)
    pods = []
    for rj in doc["spec"]["replicatedJobs"]:
        jspec = rj["template"]["spec"]
        podspec = jspec["template"]["spec"]
        fail = []
        for rule in jspec.get("podFailurePolicy", {}).get("rules", []):
            if rule.get("action") == "FailJob" and "onExitCodes" in rule:
                fail += rule["onExitCodes"]["values"]
        for j in range(int(rj.get("replicas", 1))):
            for k in range(int(jspec.get("parallelism", 1))):
                name = "%s-%s-%d-%d" % (js, rj["name"], j, k)
                pod = Pod(name, "%s.%s" % (name, sub), podspec,
                          {"JOB_COMPLETION_INDEX": str(k)}, None,
                          ("jobset", fail, int(jspec.get("backoffLimit",
                                                         6))), k)
                pod.rjob = rj["name"]
                pods.append(pod)
    every = [rj["name"] for rj in doc["spec"]["replicatedJobs"]]
    targets = doc["spec"].get("successPolicy", {}).get(
        "targetReplicatedJobs") or every
    return pods, lambda ps: [p for p in ps if p.rjob in targets]


def load_secrets(paths):
    """The --secret files: {name: {key: bytes}}."""
    secrets = {}
    for path in paths:
        try:
            with open(path) as f:
                docs = [d for d in yaml.safe_load_all(f) if d]
        except (OSError, yaml.YAMLError) as e:
            raise SetupError("--secret %s: %s" % (path, e))
        for d in docs:
            name = (d.get("metadata") or {}).get("name")
            if d.get("kind") != "Secret" or not name:
                raise SetupError("--secret %s: not a Secret with a "
                                 "metadata.name" % path)
            data = {}
            for k, v in (d.get("data") or {}).items():
                try:
                    data[k] = base64.b64decode(v, validate=True)
                except (binascii.Error, TypeError):
                    raise SetupError("--secret %s: data.%s is not base64"
                                     % (path, k))
            for k, v in (d.get("stringData") or {}).items():
                data[k] = str(v).encode()
            secrets[name] = data
    return secrets


def secret_files(vol, secrets):
    """A secret volume's files, [(path, bytes, mode)], as the kubelet
    projects them; raises SetupError for a Secret or key not given."""
    src = vol["secret"]
    name = src.get("secretName")
    mode = src.get("defaultMode", 0o644)
    if name not in secrets:
        if src.get("optional"):
            return []
        raise SetupError("volume %s: Secret %r was not given (--secret)"
                         % (vol["name"], name))
    data = secrets[name]
    if "items" not in src:
        return [(k, v, mode) for k, v in sorted(data.items())]
    files = []
    for it in src["items"]:
        if it["key"] not in data:
            if src.get("optional"):
                continue
            raise SetupError("volume %s: Secret %r has no key %r"
                             % (vol["name"], name, it["key"]))
        files.append((it["path"], data[it["key"]], it.get("mode", mode)))
    return files


def write_secret_volume(d, files):
    """The kubelet's layout (its atomic writer): the files in a
    timestamped folder, ..data linking to it, each top-level name a link
    through ..data. Returns {path: mode as seen through the links}."""
    stamp = "..%s.%09d" % (time.strftime("%Y_%m_%d_%H_%M_%S"),
                           time.time_ns() % 10**9)
    os.makedirs(os.path.join(d, stamp))
    for path, data, mode in files:
        full = os.path.join(d, stamp, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        fd = os.open(full, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            os.fchmod(f.fileno(), mode)
    os.symlink(stamp, os.path.join(d, "..data"))
    for top in sorted({path.split("/")[0] for path, _, _ in files}):
        os.symlink(os.path.join("..data", top), os.path.join(d, top))
    return {path: "%04o" % (os.stat(os.path.join(d, path)).st_mode & 0o7777)
            for path, _, _ in files}


class Harness:
    def __init__(self, args):
        self.args = args
        self.tag = "rfk%d" % os.getpid()
        self.sw = self.tag + "-sw"
        self.namespaces = []
        self.next_addr = 10
        self.work = os.path.abspath(args.workdir)
        self.killed = []

    # ---- network ----------------------------------------------------------

    def net_up(self, pods):
        run("ip", "netns", "add", self.sw)
        self.namespaces.append(self.sw)
        run("ip", "-n", self.sw, "link", "add", "br0", "type", "bridge")
        run("ip", "-n", self.sw, "link", "set", "br0", "up")
        for k, p in enumerate(pods):
            p.ns = "%s-%d" % (self.tag, k)
            run("ip", "netns", "add", p.ns)
            self.namespaces.append(p.ns)
            run("ip", "-n", self.sw, "link", "add", "v%d" % k, "type",
                "veth", "peer", "name", "eth0", "netns", p.ns)
            run("ip", "-n", self.sw, "link", "set", "v%d" % k, "master",
                "br0", "up")
            run("ip", "-n", p.ns, "link", "set", "lo", "up")
            run("ip", "-n", p.ns, "link", "set", "eth0", "up")
            self.set_address(p)
        self.write_hosts(pods)

    def set_address(self, p):
        if p.address:
            run("ip", "-n", p.ns, "addr", "del", p.address + "/24", "dev",
                "eth0")
        p.address = NET + str(self.next_addr)
        self.next_addr += 1
        run("ip", "-n", p.ns, "addr", "add", p.address + "/24", "dev",
            "eth0")

    def write_hosts(self, pods):
        lines = ["127.0.0.1 localhost"]
        for p in pods:
            lines.append("%s %s %s" % (p.address, p.dns, p.name))
        text = "\n".join(lines) + "\n"
        for p in pods:
            d = "/etc/netns/" + p.ns
            os.makedirs(d, exist_ok=True)
            # in place: ip netns exec bind-mounts this very file over a
            # running pod's /etc/hosts (a new file would not be seen)
            with open(d + "/hosts", "w") as f:
                f.write(text)

    def net_down(self):
        for ns in self.namespaces:
            subprocess.run(["ip", "netns", "del", ns],
                           stderr=subprocess.DEVNULL)
            shutil.rmtree("/etc/netns/" + ns, ignore_errors=True)

    # ---- containers -------------------------------------------------------

    def rewrite(self, text, mounts):
        for path, local in mounts.items():
            text = text.replace(path, local)
        for old, new in self.args.set:
            text = text.replace(old, new)
        return text

    def check_sets(self, pods):
        """Every --set OLD must occur in some container's command."""
        for old, _ in self.args.set:
            if not any(old in " ".join(p.container.get("command", []) +
                                       p.container.get("args", []))
                       for p in pods):
                raise SetupError("--set %s: not in the manifest's commands"
                                 % old)

    def check_pod(self, p):
        """What this harness cannot run as the manifest says, before
        anything is started: a SetupError naming it."""
        for e in p.container.get("env", []):
            if "value" not in e:
                raise SetupError("pod %s: env %s: only literal values are "
                                 "emulated" % (p.name, e.get("name")))
        for m in p.container.get("volumeMounts", []):
            vol = p.volumes.get(m["name"])
            if vol is None:
                raise SetupError("pod %s: volumeMount %s names no volume of "
                                 "the pod" % (p.name, m["name"]))
            if "secret" in vol:
                try:
                    secret_files(vol, self.secrets)
                except SetupError as e:
                    raise SetupError("pod %s: %s" % (p.name, e))
            elif not ("persistentVolumeClaim" in vol or "emptyDir" in vol):
                kind = [k for k in vol if k != "name"]
                raise SetupError("pod %s: volume %s: kind %s is not "
                                 "emulated" % (p.name, m["name"], kind))

    def new_start(self, p):
        """A new container of pod p: its folder, an empty TMPDIR, its
        volumes; returns the mounts {mountPath: local path}."""
        d = os.path.join(self.work, "pods", p.name, str(len(p.starts)))
        tmp = os.path.join(d, "tmp")
        os.makedirs(tmp)
        os.chmod(tmp, 0o1777)
        start = {"address": p.address, "dir": d, "tmpdir": tmp,
                 "secret_files": {}}
        mounts = {}
        for m in p.container.get("volumeMounts", []):
            vol = p.volumes[m["name"]]
            if "persistentVolumeClaim" in vol:
                local = os.path.join(self.work, "volumes", m["name"])
                os.makedirs(local, exist_ok=True)
            else:
                local = os.path.join(d, "volumes", m["name"])
                os.makedirs(local)
                if "secret" in vol:
                    seen = write_secret_volume(
                        local, secret_files(vol, self.secrets))
                    for path, mode in seen.items():
                        start["secret_files"][
                            os.path.join(m["mountPath"], path)] = mode
            mounts[m["mountPath"]] = local
        p.starts.append(start)
        return mounts, tmp

    def argv_env(self, p):
        c = p.container
        mounts, tmp = self.new_start(p)
        argv = [self.rewrite(a, mounts)
                for a in c.get("command", []) + c.get("args", [])]
        argv = [a for a in argv if a]
        env = {"PATH": self.args.tools + ":/usr/sbin:/usr/bin:/sbin:/bin",
               "HOME": self.work, "LANG": "C.UTF-8", "TMPDIR": tmp,
               "RF_TOKEN_DIR": os.path.join(tmp,
                                            "rdmaflow-%d" % os.geteuid())}
        for e in c.get("env", []):
            env[e["name"]] = self.rewrite(str(e["value"]), mounts)
        for k in ("RF_FASHION_MNIST_DIR", "RF_TEST_TIME_SCALE"):
            if k in os.environ:
                env[k] = os.environ[k]
        env.update(p.env)
        env["HOSTNAME"] = p.name
        return argv, env

    def start(self, p):
        argv, env = self.argv_env(p)
        p.log = os.path.join(self.work, p.name + ".log")
        log = open(p.log, "a")
        log.write("=== start %d at %s (address %s)\n"
                  % (p.restarts, time.strftime("%H:%M:%S"), p.address))
        log.flush()
        p.proc = subprocess.Popen(
            ["ip", "netns", "exec", p.ns, "env", "-i"] +
            ["%s=%s" % kv for kv in env.items()] + argv,
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()

    def restart(self, p):
        """The controller's new pod for p: the same name, a new address
        (DNS updated first), a new container."""
        self.set_address(p)
        self.write_hosts(self.pods)
        p.restarts += 1
        for k in self.killed:
            if k["pod"] == p.name and "new_address" not in k:
                k["new_address"] = p.address
        self.start(p)

    def retryable(self, p, code):
        """Whether the pod's controller restarts a container that exited
        with code (negative: killed by a signal, as 128 + signal)."""
        if code < 0:
            code = 128 - code
        if p.restart == "ExitCode":
            return code >= 128
        if isinstance(p.restart, tuple):
            _, fail, backoff = p.restart
            return code not in fail and p.restarts < backoff
        return False

    def ready(self, p):
        """The readiness probe (httpGet), made from the pod's network
        namespace (the kubelet's is the node's, which reaches the pod's
        address; the root namespace here does not)."""
        probe = p.container.get("readinessProbe", {}).get("httpGet")
        if (not probe or p.ready_after is not None or not p.proc or
                time.monotonic() < p.next_probe):
            return
        p.next_probe = time.monotonic() + 0.5
        url = "http://%s:%s%s" % (p.address, probe["port"],
                                  probe.get("path", "/"))
        r = subprocess.run(["ip", "netns", "exec", p.ns, "curl", "-s",
                            "-o", "/dev/null", "-w", "%{http_code}",
                            "--max-time", "1", url],
                           stdout=subprocess.PIPE, text=True)
        if r.stdout.strip() == "200":
            p.ready_after = round(time.monotonic() - self.t0, 2)

    def chief_step(self, chief):
        try:
            with open(chief.log) as f:
                steps = re.findall(r"global_step (\d+)|step (\d+), loss",
                                   f.read())
        except OSError:
            return -1
        nums = [int(a or b) for a, b in steps]
        return max(nums) if nums else -1

    def next_kill(self, pods, chief):
        """Fires the next --kill once the chief is past its step."""
        if len(self.killed) == len(self.args.kill):
            return
        name, step = self.args.kill[len(self.killed)]
        at = self.chief_step(chief)
        p = next(p for p in pods if p.name == name)
        if at < step or not p.proc or p.proc.poll() is not None:
            return
        os.killpg(p.proc.pid, signal.SIGKILL)
        self.killed.append({"pod": name, "at_step": at,
                            "old_address": p.address})

    def main(self):
        with open(self.args.manifest) as f:
            docs = [d for d in yaml.safe_load_all(f) if d]
        doc = next((d for d in docs if d.get("kind") in ("TFJob", "JobSet")),
                   None)
        if doc is None:
            raise SetupError("no TFJob or JobSet in %s" % self.args.manifest)
        pods, chiefs = (tfjob_pods if doc["kind"] == "TFJob"
                        else jobset_pods)(doc)
        self.pods = pods
        self.secrets = load_secrets(self.args.secret)
        self.check_sets(pods)
        for p in pods:
            self.check_pod(p)
        names = [p.name for p in pods]
        for name, _ in self.args.kill:
            if name not in names:
                raise SetupError("--kill %s: no such pod (%s)"
                                 % (name, ", ".join(names)))
        targets = chiefs(pods)
        chief = targets[0]
        os.makedirs(self.work, exist_ok=True)
        try:
            self.net_up(pods)
            self.t0 = time.monotonic()
            for p in pods:
                self.start(p)
            result = self.watch(pods, targets, chief)
        finally:
            for p in pods:
                if p.proc and p.proc.poll() is None:
                    os.killpg(p.proc.pid, signal.SIGKILL)
                    p.proc.wait()
                for s in p.starts:  # a pod's secret volume goes with it
                    shutil.rmtree(os.path.join(s["dir"], "volumes"),
                                  ignore_errors=True)
            self.net_down()
        print(json.dumps({
            "result": result,
            "seconds": round(time.monotonic() - self.t0, 1),
            "killed": self.killed,
            "pods": {p.name: {"address": p.address, "exits": p.exits,
                              "restarts": p.restarts,
                              "ready_after": p.ready_after, "log": p.log,
                              "starts": p.starts}
                     for p in pods}}))

    def watch(self, pods, targets, chief):
        deadline = time.monotonic() + self.args.timeout
        while time.monotonic() < deadline:
            for p in pods:
                self.ready(p)
                code = p.proc.poll() if p.proc and not p.done else None
                if code is None:
                    continue
                p.exits.append(code)
                if code == 0:
                    p.done = True
                elif self.retryable(p, code):
                    self.restart(p)
                else:
                    p.done = True
                    return "failed"
            if all(p.done and p.exits[-1] == 0 for p in targets):
                self.delete_others(pods, targets)
                return "succeeded"
            self.next_kill(pods, chief)
            time.sleep(0.1)
        return "timeout"

    def delete_others(self, pods, targets):
        rest = [p for p in pods if p not in targets and p.proc and
                p.proc.poll() is None]
        for p in rest:
            os.killpg(p.proc.pid, signal.SIGTERM)
        end = time.monotonic() + 10
        for p in rest:
            try:
                p.proc.wait(max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(p.proc.pid, signal.SIGKILL)
                p.proc.wait()
            p.exits.append(p.proc.returncode)


def parse_set(s):
    old, sep, new = s.partition("=>")
    if not sep or not old:
        raise argparse.ArgumentTypeError("%r: not OLD=>NEW" % s)
    return old, new


def parse_kill(s):
    pod, sep, step = s.rpartition("@")
    if not sep or not pod or not step.isdigit():
        raise argparse.ArgumentTypeError("%r: not POD@STEP" % s)
    return pod, int(step)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("manifest")
    ap.add_argument("--tools", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--set", type=parse_set, action="append", default=[],
                    metavar="OLD=>NEW")
    ap.add_argument("--secret", action="append", default=[],
                    metavar="FILE")
    ap.add_argument("--kill", type=parse_kill, action="append", default=[],
                    metavar="POD@STEP")
    ap.add_argument("--timeout", type=float, default=120)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.stderr.write("run_manifest: needs root (network namespaces)\n")
        return 2
    try:
        Harness(args).main()
    except SetupError as e:
        sys.stderr.write("run_manifest: %s\n" % e)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
