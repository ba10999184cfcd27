"""examples/python/sync_trainer.py: examples/python/trainer.py (TensorFlow
1.x's tutorial trainer) with synchronous training, as TensorFlow 1.x's
SyncReplicasOptimizer does it: every global step applies the mean of the
gradients of --replicas_to_aggregate workers (default: all of them);
more workers than that are backup workers, whose late gradients are
dropped. The same program runs once per task:

  H="--ps_hosts=127.0.0.1:2222,127.0.0.1:2223
     --worker_hosts=127.0.0.1:2224,127.0.0.1:2225"
  python3 sync_trainer.py $H --job_name=ps --task_index=0 &
  python3 sync_trainer.py $H --job_name=ps --task_index=1 &
  python3 sync_trainer.py $H --job_name=worker --task_index=1 &
  python3 sync_trainer.py $H --job_name=worker --task_index=0

(with PYTHONPATH=build/python in a build tree, or rdmaflow installed;
Debian's /usr/bin/python3 has numpy). Or under rf-launch, which picks
free ports and starts every task:

  rf-launch --ps 2 --workers 2 -- python3 sync_trainer.py

and with a backup worker (2 of 3 aggregated each step):

  rf-launch --ps 2 --workers 3 -- python3 sync_trainer.py \
      --replicas_to_aggregate=2

The chief (worker 0) prints the test accuracy at the end; when its
MonitoredTrainingSession closes, the ps tasks' server.join() returns and
every task exits 0. --checkpoint_dir makes the job survive a task's
death (rf-launch --restart_on_failure restarts it; the chief restores).
A job ends even when a task never comes back: with fewer workers left
than --replicas_to_aggregate for --max_wait_secs the chief names the
missing ones, saves a checkpoint, shuts the ps tasks down and exits 138
(retryable), as every worker does; a ps task whose chief has been gone
that long exits 138 too.
"""

import argparse
import sys

import fashion_mnist
import rdmaflow as tf

FLAGS = None


def main(_):
    ps_hosts = FLAGS.ps_hosts.split(",")
    worker_hosts = FLAGS.worker_hosts.split(",")

    # Create a cluster from the parameter server and worker hosts.
    cluster = tf.train.ClusterSpec({"ps": ps_hosts, "worker": worker_hosts})

    # Create and start a server for the local task.
    server = tf.train.Server(cluster,
                             job_name=FLAGS.job_name,
                             task_index=FLAGS.task_index,
                             protocol=FLAGS.protocol,
                             max_wait_secs=FLAGS.max_wait_secs)

    if FLAGS.job_name == "ps":
        server.join()
    elif FLAGS.job_name == "worker":

        # Assigns ops to the local worker by default.
        with tf.device(tf.train.replica_device_setter(
                worker_device="/job:worker/task:%d" % FLAGS.task_index,
                cluster=cluster)):

            # Build model...
            tf.set_random_seed(FLAGS.seed)
            x = tf.placeholder(tf.float32, [None, 784], name="x")
            y_ = tf.placeholder(tf.int64, [None], name="y_")
            hidden = tf.layers.dense(x, 128, activation=tf.nn.relu)
            logits = tf.layers.dense(hidden, 10)
            loss = tf.losses.sparse_softmax_cross_entropy(labels=y_,
                                                          logits=logits)
            accuracy = tf.reduce_mean(tf.cast(
                tf.equal(tf.argmax(logits, 1), y_), tf.float32))

            global_step = tf.contrib.framework.get_or_create_global_step()

            num_workers = len(worker_hosts)
            opt = tf.train.SyncReplicasOptimizer(
                tf.train.AdagradOptimizer(FLAGS.learning_rate),
                replicas_to_aggregate=(FLAGS.replicas_to_aggregate or
                                       num_workers),
                total_num_replicas=num_workers)
            train_op = opt.minimize(loss, global_step=global_step)

        is_chief = (FLAGS.task_index == 0)
        # The StopAtStepHook handles stopping after running given steps;
        # the SyncReplicasOptimizer's hook is passed as TensorFlow's
        # programs do.
        hooks = [opt.make_session_run_hook(is_chief),
                 tf.train.StopAtStepHook(last_step=FLAGS.train_steps)]

        train_x, train_y = fashion_mnist.load("train", FLAGS.data_dir)
        batches = fashion_mnist.batches(train_x, train_y, FLAGS.batch_size,
                                        FLAGS.seed * 1000 + FLAGS.task_index)

        # The MonitoredTrainingSession takes care of session
        # initialization, restoring from a checkpoint, saving to a
        # checkpoint, and closing when done or an error occurs.
        with tf.train.MonitoredTrainingSession(
                master=server.target,
                is_chief=is_chief,
                checkpoint_dir=FLAGS.checkpoint_dir or None,
                hooks=hooks,
                max_wait_secs=FLAGS.max_wait_secs) as mon_sess:
            while not mon_sess.should_stop():
                # Run a training step synchronously: it returns once the
                # step's aggregated update was applied.
                batch_x, batch_y = next(batches)
                mon_sess.run(train_op, feed_dict={x: batch_x, y_: batch_y})

        if FLAGS.task_index == 0:
            # The chief's graph holds the job's final variables now.
            test_x, test_y = fashion_mnist.load("test", FLAGS.data_dir)
            with tf.Session() as sess:
                acc = sess.run(accuracy, feed_dict={x: test_x, y_: test_y})
            print("test accuracy %.4f" % acc)
            sys.stdout.flush()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.register("type", "bool", lambda v: v.lower() == "true")
    # Flags for defining the tf.train.ClusterSpec
    parser.add_argument(
        "--ps_hosts", type=str, default="",
        help="Comma-separated list of hostname:port pairs")
    parser.add_argument(
        "--worker_hosts", type=str, default="",
        help="Comma-separated list of hostname:port pairs")
    parser.add_argument(
        "--job_name", type=str, default="",
        help="One of 'ps', 'worker'")
    # Flags for defining the tf.train.Server
    parser.add_argument(
        "--task_index", type=int, default=0,
        help="Index of task within the job")
    parser.add_argument(
        "--protocol", type=str, default=None,
        help="rdmaflow fabric: grpc (automatic), sock, shm or verbs")
    # The model and its training
    parser.add_argument("--replicas_to_aggregate", type=int, default=0,
                        help="gradients averaged per step (0: every "
                        "worker)")
    parser.add_argument("--train_steps", type=int, default=4000,
                        help="StopAtStepHook's last_step")
    parser.add_argument("--batch_size", type=int, default=100)
    parser.add_argument("--learning_rate", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data_dir", type=str, default=None)
    parser.add_argument("--checkpoint_dir", type=str, default="")
    parser.add_argument(
        "--max_wait_secs", type=int, default=7200,
        help="how long a task waits for the others: the workers for the "
        "ps tasks and the variables, a step for a lost worker, a ps task "
        "for a chief that went away")
    FLAGS, unparsed = parser.parse_known_args()
    tf.app.run(main=main, argv=[sys.argv[0]] + unparsed)
