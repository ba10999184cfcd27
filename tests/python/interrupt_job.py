"""tests/python/interrupt_job.py: the program test_interrupt.py signals.
One process blocks in an rdmaflow call and waits there for the test's
SIGINT:

  python3 interrupt_job.py join --ps_hosts=H:P --worker_hosts=H:P
      a ps task (ps 0) in server.join(); its workers never come
  python3 interrupt_job.py wait --ps_hosts=H:P --worker_hosts=H:P
      worker 0 creating its MonitoredTrainingSession (max_wait_secs=3600)
      while its ps task never comes
  python3 interrupt_job.py sleep
      rdmaflow._rdmaflow._blocking_sleep(5000), no thread of its own

Each prints "blocking: <what> (<n> Python threads)" right before the
call. With --counter a
second Python thread waits until the main thread is inside the call
(sys._current_frames() shows the call's frame on top), counts as fast as
it can for one second, and prints "counted N in the call" if the main
thread was still in the call then (else "left the call"): N > 0 only if
the call released the GIL (the count runs only while the main thread's
innermost Python frame is at the line making the C call)."""

import argparse
import linecache
import signal
import sys
import threading
import time

import rdmaflow as tf
from rdmaflow import _rdmaflow


def in_call(call):
    """The main thread's innermost Python frame is at the line making the
    C call whose text is call: it is in that call."""
    frame = sys._current_frames().get(threading.main_thread().ident)
    return frame is not None and call in linecache.getline(
        frame.f_code.co_filename, frame.f_lineno)


def counter(call):
    deadline = time.monotonic() + 60
    while not in_call(call):
        if time.monotonic() > deadline:
            print("never saw the main thread in %s" % call)
            return
        time.sleep(0.01)
    n = 0
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        n += 1
    if in_call(call):
        print("counted %d in the call" % n)
    else:
        print("left the call")
    sys.stdout.flush()


def block_in_join():
    server.join()


def block_in_wait():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    with tf.device(tf.train.replica_device_setter(cluster=cluster)):
        w = tf.Variable(tf.zeros([2, 1]), name="w")
        loss = tf.reduce_sum(tf.matmul(x, w))
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(
            loss, global_step=tf.train.get_or_create_global_step())
    print("graph built: %s" % train_op.name)
    tf.train.MonitoredTrainingSession(master=server.target, is_chief=True,
                                      max_wait_secs=3600)


def block_in_sleep():
    _rdmaflow._blocking_sleep(5000)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["join", "wait", "sleep"])
    parser.add_argument("--ps_hosts", default="")
    parser.add_argument("--worker_hosts", default="")
    parser.add_argument("--counter", action="store_true")
    FLAGS = parser.parse_args()
    # Python raises KeyboardInterrupt on SIGINT unless the process was
    # started with SIGINT ignored (as a shell's background jobs are):
    # make sure it does, as in an interactive terminal
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if FLAGS.mode != "sleep":
        cluster = tf.train.ClusterSpec({
            "ps": FLAGS.ps_hosts.split(","),
            "worker": FLAGS.worker_hosts.split(",")})
        job = "ps" if FLAGS.mode == "join" else "worker"
        server = tf.train.Server(cluster, job_name=job, task_index=0)
    call = {"join": block_in_join, "wait": block_in_wait,
            "sleep": block_in_sleep}[FLAGS.mode]
    # the text of the line in rdmaflow making the blocking C call
    c_call = {"join": "self._server.join()",
              "wait": "_rf.MonitoredSession(",
              "sleep": "_rdmaflow._blocking_sleep("}[FLAGS.mode]
    if FLAGS.counter:
        threading.Thread(target=counter, args=(c_call,),
                         daemon=True).start()
    print("blocking: %s (%d Python threads)"
          % (FLAGS.mode, threading.active_count()))
    sys.stdout.flush()
    call()
    print("returned from %s" % FLAGS.mode)
