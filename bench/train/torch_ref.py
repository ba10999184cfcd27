#!/usr/bin/python3
"""bench/train/torch_ref.py: PyTorch's reference for bench/train/vs-pytorch.

rf-trainer's default MLP job done with PyTorch alone: 784 -> 256 -> 128 ->
10, ReLU, softmax cross-entropy, Adam (learning rate 0.001, beta1 0.9,
beta2 0.999, epsilon 1e-8: rf-trainer's defaults), batch 250 drawn from
Fashion-MNIST's training IDX files (pixels / 255 as float32, a fresh
shuffle each epoch, as rf-trainer's dataset), a fixed number of steps.

  local  one process, torch.set_num_threads(T), torch.optim.Adam;
         OpenBLAS single-threaded (--blas-threads) as rf-trainer keeps
         it, and OMP_WAIT_POLICY=PASSIVE unless the environment sets it
         (libgomp's spinning idle threads otherwise starve the working
         ones on a shared host: 8.5k instead of 72k examples/s at T=2).
  rpc    a parameter server on torch.distributed.rpc (TensorPipe over
         loopback): P ps processes each hold a shard of the parameters
         (the first layer's kernel cut by rows into P parts, as
         rf-trainer's default partitioner does; the other tensors whole,
         greedily by bytes) and apply Adam to the gradients they receive,
         asynchronously and without locking (rf-trainer --apply=ps);
         W worker processes each step fetch every shard (rpc_async),
         compute forward and backward locally and send each ps its
         gradients. The global step lives on ps 0: each worker stops once
         its own update returns a global step >= --steps, so the cluster
         does the work of the local run, shared among the workers.

Output (one line each): "torch: ..." (version, threads, BLAS library and
OpenBLAS core), "training: N steps of B in S s, E examples/s" (local: the
training loop; rpc: the cluster, N the workers' steps summed, S the union
of the workers' training phases), per rpc worker "worker I: M steps in S s",
"global_step at the end: G" (rpc), "test accuracy: A", and "cpu: C s" (user
+ system seconds of every process of the run, start-up included). Exit
status: 0 ok, 1 a run failed, 2 usage.
"""

import argparse
import ctypes
import gzip
import importlib.util
import os
import re
import resource
import socket
import struct
import subprocess
import sys
import tempfile
import time

DATA_DIR = os.environ.get("RF_FASHION_MNIST_DIR",
                          "/usr/share/datasets/fashion-mnist")
LAYERS = (784, 256, 128, 10)
LR, BETA1, BETA2, EPS = 0.001, 0.9, 0.999, 1e-8


def positive(text):
    """argparse type: an integer >= 1."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("not a number: %r" % text)
    if v < 1:
        raise argparse.ArgumentTypeError("must be >= 1: %r" % text)
    return v


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="torch_ref.py",
        description="PyTorch's reference of rf-trainer's MLP job "
        "(bench/train/vs-pytorch).")
    sub = p.add_subparsers(dest="mode", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--steps", type=positive, default=2000,
                        help="training steps (rpc: the global step to "
                        "stop at; default 2000)")
    common.add_argument("--batch", type=positive, default=250,
                        help="batch size (default 250)")
    common.add_argument("--threads", type=positive, default=1,
                        help="torch threads per process (local: the "
                        "process; rpc: each worker; default 1)")
    common.add_argument("--data", default=DATA_DIR,
                        help="Fashion-MNIST IDX directory (default %s)"
                        % DATA_DIR)
    common.add_argument("--no-eval", action="store_true",
                        help="skip the test accuracy")
    rpcopts = argparse.ArgumentParser(add_help=False)
    rpcopts.add_argument("--ps", type=positive, default=2, help="ps tasks")
    rpcopts.add_argument("--workers", type=positive, default=2,
                         help="worker tasks")
    rpcopts.add_argument("--transport", choices=("uv", "shm"), default="uv",
                         help="TensorPipe transport: uv (TCP over loopback,"
                         " the default) or shm (shared memory and CMA)")
    rpcopts.add_argument("--timeout", type=positive, default=900,
                         help="seconds before the run is killed "
                         "(default 900)")
    loc = sub.add_parser("local", parents=[common], help="one process")
    loc.add_argument("--blas-threads", type=positive, default=1,
                     help="OpenBLAS's own threads inside each GEMM "
                     "(default 1: torch's threads split the other ops, as "
                     "rf-trainer keeps OpenBLAS single-threaded)")
    sub.add_parser("rpc", parents=[common, rpcopts],
                   help="P ps x W workers on torch.distributed.rpc")
    t = sub.add_parser("task", parents=[common, rpcopts])
    t.add_argument("--role", choices=("ps", "worker"), required=True)
    t.add_argument("--index", type=int, required=True)
    t.add_argument("--port", type=int, required=True)
    a = p.parse_args(argv)
    if a.mode == "task":
        n = a.ps if a.role == "ps" else a.workers
        if not 0 <= a.index < n:
            p.error("--index %d outside 0..%d" % (a.index, n - 1))
    return a


def read_idx(path):
    """An IDX file (gzip) as a numpy array of uint8."""
    import numpy as np
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    if magic >> 8 != 0x08:
        raise ValueError("%s: not an IDX file of unsigned bytes" % path)
    ndim = magic & 0xff
    dims = struct.unpack(">%dI" % ndim, data[4:4 + 4 * ndim])
    arr = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
    return arr.reshape(dims)


def load_split(data_dir, prefix):
    """Images as float32 [n, 784] scaled by 1/255, labels as int64."""
    import torch
    images = read_idx(os.path.join(data_dir,
                                   prefix + "-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(data_dir,
                                   prefix + "-labels-idx1-ubyte.gz"))
    x = torch.from_numpy(images.reshape(len(images), -1).copy())
    x = x.to(torch.float32).div_(255.0)
    return x, torch.from_numpy(labels.astype("int64"))


def batches(x, y, batch, seed):
    """Endless batches: each epoch a fresh permutation, gathered rows."""
    import torch
    g = torch.Generator()
    g.manual_seed(seed)
    n = len(x)
    order, pos = torch.randperm(n, generator=g), 0
    while True:
        idx = []
        need = batch
        while need:
            if pos == n:
                order, pos = torch.randperm(n, generator=g), 0
            take = min(need, n - pos)
            idx.append(order[pos:pos + take])
            pos += take
            need -= take
        i = idx[0] if len(idx) == 1 else torch.cat(idx)
        yield x.index_select(0, i), y.index_select(0, i)


def initial_params(seed=1):
    """Kernels [in, out] Glorot-uniform (tf.layers.dense's default) and
    zero biases, in the order w1 b1 w2 b2 w3 b3."""
    import torch
    g = torch.Generator()
    g.manual_seed(seed)
    out = []
    for fan_in, fan_out in zip(LAYERS[:-1], LAYERS[1:]):
        limit = (6.0 / (fan_in + fan_out)) ** 0.5
        w = torch.rand(fan_in, fan_out, generator=g) * (2 * limit) - limit
        out += [w, torch.zeros(fan_out)]
    return out


def forward(params, x):
    import torch
    h = x
    for i in range(0, len(params), 2):
        h = torch.addmm(params[i + 1], h, params[i])
        if i + 2 < len(params):
            h = torch.relu(h)
    return h


def accuracy(params, x, y):
    import torch
    with torch.no_grad():
        return float((forward(params, x).argmax(1) == y).float().mean())


def blas_info():
    """What torch's float GEMMs run on: the BLAS library mapped into this
    process and, for OpenBLAS, its version and kernel core."""
    import torch
    libs = set()
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            name = os.path.basename(path)
            if path.startswith("/") and ("blas" in name or "mkl" in name):
                libs.add(path)
    desc = []
    for path in sorted(libs):
        try:
            lib = ctypes.CDLL(path)
            core = lib.openblas_get_corename
            conf = lib.openblas_get_config
        except (OSError, AttributeError):
            continue
        core.restype = ctypes.c_char_p
        conf.restype = ctypes.c_char_p
        desc.append("%s, core %s, %d thread(s) (%s)" % (
            conf().decode().split(" NO_")[0].split(" DYNAMIC")[0],
            core().decode(), lib.openblas_get_num_threads(), path))
        break
    if not desc:
        desc.append("no OpenBLAS mapped (%s)" % (", ".join(sorted(libs))
                                                 or "no BLAS library"))
    info = re.search(r"BLAS_INFO=(\w+)", torch.__config__.show())
    return "torch %s, %d thread(s), OMP_WAIT_POLICY=%s, %s; BLAS_INFO=%s" % (
        torch.__version__, torch.get_num_threads(),
        os.environ.get("OMP_WAIT_POLICY", "unset"), desc[0],
        info.group(1) if info else "unknown")


def set_threads(n, blas=1):
    """Before torch is imported: OpenMP's and OpenBLAS's threads, and
    OpenMP's idle threads sleeping (OMP_WAIT_POLICY=PASSIVE unless the
    environment says otherwise): on a shared 2-core host libgomp's
    spinning threads starve the ones doing the work (see
    bench/train/README.md)."""
    os.environ["OMP_NUM_THREADS"] = str(n)
    os.environ["OPENBLAS_NUM_THREADS"] = str(blas)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def cpu_seconds():
    """User + system seconds of this process and its waited-for children."""
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def run_local(a):
    set_threads(a.threads, a.blas_threads)
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(a.threads)
    print("torch: " + blas_info(), flush=True)
    x, y = load_split(a.data, "train")
    params = [p.requires_grad_() for p in initial_params()]
    opt = torch.optim.Adam(params, lr=LR, betas=(BETA1, BETA2), eps=EPS)
    it = batches(x, y, a.batch, seed=2)
    t0 = time.perf_counter()
    for _ in range(a.steps):
        bx, by = next(it)
        loss = F.cross_entropy(forward(params, bx), by)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    t = time.perf_counter() - t0
    print("training: %d steps of %d in %.2f s, %.0f examples/s, loss %.4f"
          % (a.steps, a.batch, t, a.steps * a.batch / t, float(loss)))
    if not a.no_eval:
        tx, ty = load_split(a.data, "t10k")
        print("test accuracy: %.4f" % accuracy(params, tx, ty))
    print("cpu: %.2f s" % cpu_seconds())
    return 0


# --- the RPC parameter server ------------------------------------------

def shard_plan(nps):
    """[(param index, first row, end row, ps)]: w1 cut by rows into nps
    parts, the other tensors whole on the ps with the fewest bytes."""
    sizes = [LAYERS[0] * LAYERS[1], LAYERS[1], LAYERS[1] * LAYERS[2],
             LAYERS[2], LAYERS[2] * LAYERS[3], LAYERS[3]]
    rows = [LAYERS[0], 1, LAYERS[1], 1, LAYERS[2], 1]
    load = [0] * nps
    plan = []
    for k in range(nps):
        lo, hi = LAYERS[0] * k // nps, LAYERS[0] * (k + 1) // nps
        if hi > lo:
            plan.append((0, lo, hi, k))
            load[k] += (hi - lo) * LAYERS[1]
    for i in sorted(range(1, 6), key=lambda i: -sizes[i]):
        k = min(range(nps), key=lambda k: load[k])
        plan.append((i, 0, rows[i], k))
        load[k] += sizes[i]
    return sorted(plan)


# The ps task's state: its shard's tensors and Adam's slots.
_PS = {}


def ps_get():
    """The shard's current values (read while others may be writing)."""
    return _PS["params"]


def ps_apply(grads):
    """Adam on the shard, in place, no lock (TF's ApplyAdam with
    use_locking=False); ps 0 also counts the global step and returns it."""
    import torch
    with torch.no_grad():
        _PS["t"] += 1
        t = _PS["t"]
        lr_t = LR * (1 - BETA2 ** t) ** 0.5 / (1 - BETA1 ** t)
        for p, m, v, g in zip(_PS["params"], _PS["m"], _PS["v"], grads):
            m.mul_(BETA1).add_(g, alpha=1 - BETA1)
            v.mul_(BETA2).addcmul_(g, g, value=1 - BETA2)
            p.addcdiv_(m, v.sqrt().add_(EPS), value=-lr_t)
    if "global_step" in _PS:
        _PS["global_step"] += 1
        return _PS["global_step"]
    return None


def rpc_options(a):
    from torch.distributed import rpc
    kw = {"init_method": "tcp://127.0.0.1:%d" % a.port,
          "num_worker_threads": 8, "rpc_timeout": a.timeout}
    if a.transport == "uv":
        kw.update(_transports=["uv"], _channels=["basic"])
    return rpc.TensorPipeRpcBackendOptions(**kw)


def run_ps(a):
    set_threads(1)
    import torch
    from torch.distributed import rpc
    torch.set_num_threads(1)
    full = initial_params()
    mine = [(i, lo, hi) for i, lo, hi, k in shard_plan(a.ps) if k == a.index]
    _PS["params"] = [full[i][lo:hi].clone() for i, lo, hi in mine]
    _PS["m"] = [torch.zeros_like(p) for p in _PS["params"]]
    _PS["v"] = [torch.zeros_like(p) for p in _PS["params"]]
    _PS["t"] = 0
    if a.index == 0:
        _PS["global_step"] = 0
    rpc.init_rpc("ps%d" % a.index, rank=a.index, world_size=a.ps + a.workers,
                 rpc_backend_options=rpc_options(a))
    rpc.shutdown()  # waits for every worker to finish
    return 0


def run_worker(a):
    set_threads(a.threads)
    import torch
    import torch.nn.functional as F
    from torch.distributed import rpc
    torch.set_num_threads(a.threads)
    if a.index == 0:
        print("torch: " + blas_info(), flush=True)
    x, y = load_split(a.data, "train")
    plan = shard_plan(a.ps)
    # parts[k]: the (param, lo, hi) of ps k, in the order it holds them
    parts = [[(i, lo, hi) for i, lo, hi, kk in plan if kk == k]
             for k in range(a.ps)]
    rpc.init_rpc("worker%d" % a.index, rank=a.ps + a.index,
                 world_size=a.ps + a.workers,
                 rpc_backend_options=rpc_options(a))

    def fetch():
        futs = [rpc.rpc_async("ps%d" % k, ps_get) for k in range(a.ps)]
        pieces = [[] for _ in range(6)]
        for k, f in enumerate(futs):
            for (i, lo, hi), t in zip(parts[k], f.wait()):
                pieces[i].append((lo, t))
        return [torch.cat([t for _, t in sorted(p, key=lambda e: e[0])])
                if len(p) > 1 else p[0][1] for p in pieces]

    it = batches(x, y, a.batch, seed=100 + a.index)
    steps, gstep = 0, 0
    t0 = time.time()
    while gstep < a.steps:
        params = [p.requires_grad_() for p in fetch()]
        bx, by = next(it)
        loss = F.cross_entropy(forward(params, bx), by)
        grads = torch.autograd.grad(loss, params)
        futs = [rpc.rpc_async("ps%d" % k, ps_apply,
                              args=([grads[i][lo:hi]
                                     for i, lo, hi in parts[k]],))
                for k in range(a.ps)]
        got = [f.wait() for f in futs]
        gstep = got[0]
        steps += 1
    t1 = time.time()
    print("worker %d: %d steps in %.3f s, start %.6f end %.6f, loss %.4f"
          % (a.index, steps, t1 - t0, t0, t1, float(loss)), flush=True)
    if a.index == 0:
        print("global_step at the end: %d"
              % rpc.rpc_sync("ps0", ps_apply_count), flush=True)
        if not a.no_eval:
            tx, ty = load_split(a.data, "t10k")
            print("test accuracy: %.4f" % accuracy(fetch(), tx, ty),
                  flush=True)
    rpc.shutdown()
    return 0


def ps_apply_count():
    return _PS["global_step"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_rpc(a):
    """Starts P ps and W worker processes of this script, waits, sums."""
    port = free_port()
    base = [sys.executable, os.path.abspath(__file__), "task",
            "--steps", str(a.steps), "--batch", str(a.batch),
            "--threads", str(a.threads), "--data", a.data,
            "--ps", str(a.ps), "--workers", str(a.workers),
            "--transport", a.transport, "--timeout", str(a.timeout),
            "--port", str(port)] + (["--no-eval"] if a.no_eval else [])
    procs, logs = [], []
    for role, n in (("ps", a.ps), ("worker", a.workers)):
        for i in range(n):
            logs.append(tempfile.TemporaryFile("w+"))
            procs.append(("%s%d" % (role, i), subprocess.Popen(
                base + ["--role", role, "--index", str(i)],
                stdout=logs[-1], stderr=subprocess.STDOUT, text=True)))
    # Waits for all; the first task to fail or the timeout ends the rest
    # (a task waiting in rpc.shutdown for a dead peer would never return).
    deadline = time.monotonic() + a.timeout
    failed = None
    while failed is None and any(p.poll() is None for _, p in procs):
        for name, p in procs:
            if p.poll() not in (None, 0):
                failed = "%s exited with status %d" % (name, p.returncode)
        if time.monotonic() > deadline:
            failed = "killed after --timeout %d s" % a.timeout
        time.sleep(0.05)
    for name, p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()
        if failed is None and p.returncode != 0:
            failed = "%s exited with status %d" % (name, p.returncode)
    outs = {}
    for (name, _), f in zip(procs, logs):
        f.seek(0)
        outs[name] = f.read()
        f.close()
    if failed:
        for name, _ in procs:
            for line in outs[name].splitlines():
                print("[%s] %s" % (name, line), file=sys.stderr)
        print("torch_ref.py: the rpc run failed: %s" % failed,
              file=sys.stderr)
        return 1
    total, start, end = 0, None, None
    for name, _ in procs:
        for line in outs[name].splitlines():
            f = line.split()
            if line.startswith("worker "):
                total += int(f[2])
                s, e = float(f[8].rstrip(",")), float(f[10].rstrip(","))
                start = s if start is None else min(start, s)
                end = e if end is None else max(end, e)
                print(line)
            elif line.startswith(("torch: ", "global_step", "test acc")):
                print(line)
    if start is None or end <= start:
        print("torch_ref.py: no worker reported its steps", file=sys.stderr)
        return 1
    print("training: %d steps of %d in %.2f s, %.0f examples/s (cluster: "
          "%d ps x %d workers, TensorPipe %s)"
          % (total, a.batch, end - start, total * a.batch / (end - start),
             a.ps, a.workers, a.transport))
    print("cpu: %.2f s" % cpu_seconds())
    return 0


def main(argv):
    a = parse_args(argv)
    if importlib.util.find_spec("torch") is None:
        print("torch_ref.py: no PyTorch for %s (Debian: apt-get install "
              "python3-torch)" % sys.executable, file=sys.stderr)
        return 2
    if not os.path.isdir(a.data):
        print("torch_ref.py: no Fashion-MNIST at %s (Debian: apt-get "
              "install dataset-fashion-mnist)" % a.data, file=sys.stderr)
        return 2
    if a.mode == "local":
        return run_local(a)
    if a.mode == "rpc":
        return run_rpc(a)
    return run_ps(a) if a.role == "ps" else run_worker(a)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
