"""tests/python/global_step_job.py: test_global_step.py's job, run once
per task (1 ps + 2 workers):

  python3 global_step_job.py --ps_hosts=H:P --worker_hosts=H:P,H:P \\
      --job_name=worker --task_index=0 --dir=DIR

Worker 1 waits until the chief has run one training step (the file
DIR/chief_ran), trains 50 steps and closes. The chief then reads
global_step in a run without train_op, fetching it and an op computed
from it, then runs one more training step fetching global_step, and
prints "RESULT <json>" with what it saw."""

import argparse
import json
import os
import sys
import time

import numpy as np

import rdmaflow as tf


def wait_file(path, timeout=60):
    end = time.time() + timeout
    while not os.path.exists(path):
        if time.time() > end:
            sys.exit("global_step_job: no %s after %d s" % (path, timeout))
        time.sleep(0.05)


def main(flags):
    cluster = tf.train.ClusterSpec({"ps": flags.ps_hosts.split(","),
                                    "worker": flags.worker_hosts.split(",")})
    server = tf.train.Server(cluster, job_name=flags.job_name,
                             task_index=flags.task_index)
    if flags.job_name == "ps":
        server.join()
        return
    with tf.device(tf.train.replica_device_setter(cluster=cluster)):
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        y = tf.placeholder(tf.int64, [None], name="y")
        logits = tf.layers.dense(x, 3)
        loss = tf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
        gs = tf.train.get_or_create_global_step()
        gs_copy = tf.identity(gs, name="gs_copy")
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(
            loss, global_step=gs)
    feed = {x: np.ones((2, 4), np.float32), y: np.array([0, 1], np.int64)}
    chief = flags.task_index == 0
    ran, done = (os.path.join(flags.dir, f) for f in ("chief_ran", "w1_done"))
    result = {}
    with tf.train.MonitoredTrainingSession(master=server.target,
                                           is_chief=chief) as sess:
        if chief:
            sess.run(train_op, feed_dict=feed)
            open(ran, "w").close()
            wait_file(done)
            result["read"] = [int(v) for v in sess.run([gs, gs_copy])]
            result["train"] = int(sess.run([train_op, gs],
                                           feed_dict=feed)[1])
        else:
            wait_file(ran)
            for _ in range(50):
                sess.run(train_op, feed_dict=feed)
            open(done, "w").close()
    if chief:
        print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    for flag in ("ps_hosts", "worker_hosts", "job_name", "dir"):
        ap.add_argument("--" + flag, required=True)
    ap.add_argument("--task_index", type=int, required=True)
    main(ap.parse_args())
