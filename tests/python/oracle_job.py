"""tests/python/oracle_job.py: one task of test_oracle.py's job, the Python
twin of rf-trainer's oracle run (tests/integration/trainer_dist/
trainer_dist_test.sh, `oracle_flags`):

  rf-trainer --model=mlp:32,16 --optimizer=adam --batch_size=50
             --train_steps=60 --threads=1 --seed=3

built as tools/trainer/train_graph.c and model.c build it: the graph seed
3, global_step first, placeholders x (float32 [-1, 784]) and y (int32
[-1]), dense 32 relu, dense 16 relu, dense 10 named "logits" (the C
library's own layers: glorot-uniform kernels, zero biases, rf-trainer's
names and seeds), the mean of sparse_softmax_cross_entropy_with_logits,
AdamOptimizer with TensorFlow's defaults (rf-trainer's adam), minimize
with global_step. One worker reads the whole training set shuffled per
epoch with the seed (rdmaflow.data, the C library's rf_dataset: what
rf-trainer's local run and dist_worker.c's select_data do for one
worker), 50 examples a step, under MonitoredTrainingSession with
StopAtStepHook(last_step=60) and one executor thread.

After the chief's session closed, every variable of its graph (the
model's, the Adam slots, beta1_power, beta2_power and global_step) is
written to --out as an .npz of numpy_value()s, which the test compares
bitwise with rf-trainer's --variables_out. The classic flags (rf-launch's
or by hand), plus --out FILE and --apply ps|worker:

  python3 oracle_job.py --ps_hosts=... --worker_hosts=... \\
      --job_name=worker --task_index=0 --out vars.npz
"""

import argparse
import sys

import numpy as np

import rdmaflow as tf
import rdmaflow.data

SEED = 3
BATCH = 50
STEPS = 60


def build_model():
    """rf-trainer's mlp:32,16 (train_graph.c's order); returns (x, y,
    loss, train_op)."""
    tf.set_random_seed(SEED)
    global_step = tf.train.get_or_create_global_step()
    x = tf.placeholder(tf.float32, [None, 784], name="x")
    y = tf.placeholder(tf.int32, [None], name="y")
    h = tf.layers.dense(x, 32, activation=tf.nn.relu)
    h = tf.layers.dense(h, 16, activation=tf.nn.relu)
    logits = tf.layers.dense(h, 10, name="logits")
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=y, logits=logits), name="loss")
    optimizer = tf.train.AdamOptimizer()
    train_op = optimizer.minimize(loss, global_step=global_step)
    return x, y, loss, train_op


def main(flags):
    cluster = tf.train.ClusterSpec({"ps": flags.ps_hosts.split(","),
                                    "worker": flags.worker_hosts.split(",")})
    server = tf.train.Server(cluster, job_name=flags.job_name,
                             task_index=flags.task_index,
                             protocol=flags.protocol)
    if flags.job_name == "ps":
        server.join()
        return 0
    is_chief = flags.task_index == 0
    with tf.device(tf.train.replica_device_setter(
            worker_device="/job:worker/task:%d" % flags.task_index,
            cluster=cluster)):
        x, y, loss, train_op = build_model()
    for v in tf.trainable_variables():
        print("placed %s on %s" % (v.op.name, v.device))
    train = rdmaflow.data.Dataset.fashion_mnist("train")
    train.shuffle(SEED)
    steps = 0
    with tf.train.MonitoredTrainingSession(
            master=server.target, is_chief=is_chief,
            hooks=[tf.train.StopAtStepHook(last_step=STEPS)],
            config=tf.ConfigProto(intra_op_parallelism_threads=1),
            apply=flags.apply,
            embedding_lookup=flags.embedding_lookup) as sess:
        while not sess.should_stop():
            bx, by = train.next_batch(BATCH)
            value, _ = sess.run([loss, train_op], feed_dict={x: bx, y: by})
            steps += 1
            if steps == 1 or steps % 20 == 0:
                print("step %d, loss %.6f" % (steps, value))
    print("worker %d: %d steps" % (flags.task_index, steps))
    if is_chief:
        values = {v.op.name: v.numpy_value() for v in tf.global_variables()}
        np.savez(flags.out, **values)
        print("wrote %d variables to %s" % (len(values), flags.out))
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--ps_hosts", required=True)
    parser.add_argument("--worker_hosts", required=True)
    parser.add_argument("--job_name", required=True)
    parser.add_argument("--task_index", type=int, default=0)
    parser.add_argument("--apply", default=None, help="ps or worker")
    # passed through (the model has no embedding table: nothing to fetch)
    parser.add_argument("--embedding_lookup", default=None,
                        choices=["auto", "rows", "gather"])
    parser.add_argument("--protocol", default=None,
                        help="sock, shm, verbs (default: RF_FABRIC or auto)")
    parser.add_argument("--out", default="variables.npz")
    sys.exit(main(parser.parse_args()))
