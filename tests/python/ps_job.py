"""tests/python/ps_job.py: a task of test_ps.py's jobs, the classic flags
(--ps_hosts, --worker_hosts, --job_name, --task_index) plus:

  --job_name=ps        serves (server.join()) until the chief ends the job,
                       then prints "ps I: shut down by the chief"
  --job_name=worker    trains SYNC_VARS with rdmaflow.ps.Session and
                       SyncReplicasOptimizer(GradientDescentOptimizer(LR),
                       replicas_to_aggregate=W, total_num_replicas=W) (W:
                       the cluster's workers) for --steps global steps:
                       each step it pulls, then pushes its constant
                       gradients sync_gradients(task_index); it writes
                       --out (JSON): what each pull held, the global_step
                       each push returned, and after close the chief's
                       values().
  --start_together=DIR each worker, once its session is created, writes
                       DIR/worker<I> and trains only when every worker's
                       file is there (at most 60 s): an async job whose
                       workers all push (the chief would otherwise be
                       done before a late worker's session is ready).

test_ps.py runs the ps tasks of every test with it, and both workers of the
synchronous test."""

import argparse
import json
import os
import sys
import time

import numpy as np

import rdmaflow as tf
import rdmaflow.ps

LR = 0.5


def sync_initial():
    """The variables' initial values, torch-style names with dots."""
    return {"fc.weight": np.arange(6, dtype=np.float32).reshape(2, 3),
            "fc.bias": np.full(3, 10, np.float32)}


def sync_gradients(task_index):
    """Worker task_index's gradients, the same at every step: worker 0's
    are 1..6 and 1..3, worker 1's those plus 2 (means 2..7 and 2..4, all
    exact in float32, as are the updates)."""
    k = np.float32(2 * task_index)
    return {"fc.weight": np.arange(1, 7, dtype=np.float32).reshape(2, 3) + k,
            "fc.bias": np.arange(1, 4, dtype=np.float32) + k}


def start_together(folder, task_index, num_workers):
    """The barrier of --start_together."""
    with open(os.path.join(folder, "worker%d" % task_index), "w"):
        pass
    names = [os.path.join(folder, "worker%d" % i) for i in range(num_workers)]
    deadline = time.monotonic() + 60
    while not all(os.path.exists(n) for n in names):
        if time.monotonic() > deadline:
            raise SystemExit("worker %d: the other workers did not start "
                             "within 60 s" % task_index)
        time.sleep(0.005)


def main(flags):
    workers = flags.worker_hosts.split(",")
    cluster = tf.train.ClusterSpec({"ps": flags.ps_hosts.split(","),
                                    "worker": workers})
    server = tf.train.Server(cluster, job_name=flags.job_name,
                             task_index=flags.task_index)
    if flags.job_name == "ps":
        server.join()
        print("ps %d: shut down by the chief" % flags.task_index)
        return 0
    opt = tf.train.GradientDescentOptimizer(LR)
    if not flags.async_:
        opt = tf.train.SyncReplicasOptimizer(
            opt, replicas_to_aggregate=len(workers),
            total_num_replicas=len(workers))
    is_chief = flags.task_index == 0
    hooks = [tf.train.StopAtStepHook(last_step=flags.steps)]
    if not flags.async_:
        hooks.append(opt.make_session_run_hook(is_chief))
    grads = sync_gradients(flags.task_index)
    pulls, steps = [], []
    with rdmaflow.ps.Session(
            server, sync_initial(), opt, is_chief=is_chief,
            hooks=hooks,
            max_wait_secs=60, stop_grace_period_secs=60) as sess:
        if flags.start_together:
            start_together(flags.start_together, flags.task_index,
                           len(workers))
        while not sess.should_stop():
            values = sess.pull()
            if any(v is None for v in values.values()):
                break  # the job ended meanwhile
            pulls.append({n: v.tolist() for n, v in values.items()})
            steps.append(int(sess.push(grads)))
        global_step = int(sess.global_step)
    result = {"pulls": pulls, "steps": steps, "global_step": global_step}
    if is_chief:
        result["values"] = {n: v.tolist() for n, v in sess.values().items()}
    with open(flags.out, "w") as f:
        json.dump(result, f)
    print("worker %d: %d pushes, global_step %d"
          % (flags.task_index, len(steps), result["global_step"]))
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--ps_hosts", required=True)
    parser.add_argument("--worker_hosts", required=True)
    parser.add_argument("--job_name", required=True)
    parser.add_argument("--task_index", type=int, default=0)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--out", default="result.json")
    parser.add_argument("--start_together", default=None)
    parser.add_argument("--async", dest="async_", action="store_true",
                        help="GradientDescentOptimizer without "
                        "SyncReplicasOptimizer")
    sys.exit(main(parser.parse_args()))
