"""tests/python/hooks_job.py: the program of test_hooks.py's jobs (and of
test_bad_input_dist.py's), run once per task as the tutorial's
trainer.py is:

  python3 hooks_job.py --ps_hosts=H:P --worker_hosts=H:P,H:P \\
      --job_name=worker --task_index=0 --case=order [--last_step=N]
      [--checkpoint_dir=DIR]

A ps task serves until the chief ends the job. A worker trains a tiny
softmax model (4 inputs, 3 classes, plain SGD) in a
MonitoredTrainingSession with the hooks of its --case, records what the
hooks and its loop saw, and prints it as one line "RESULT <json>" when its
session has closed (then exits 0):

  order         hooks=[A, StopAtStepHook, B], chief_only_hooks=[C], each
                Recorder logging its calls; A fetches global_step, B a
                nested structure; the loop fetches [train_op, global_step,
                loss]; before its third run the chief waits (at most 30 s)
                until every other worker has run once (files ran.<i> in
                the tasks' shared current directory)
  request_stop  a hook calling run_context.request_stop() in its third
                after_run
  raise         a hook whose second after_run raises HookError, and a
                hook whose fourth before_run raises KeyError; the loop
                catches them and trains on
  stop_at_step  StopAtStepHook(last_step=N) and a Recorder fetching
                global_step
  nan           NanTensorHook(loss); the third run feeds a NaN input
  summaries     tf.summary.scalar of the loss (in a name scope) and of
                global_step (a family); MonitoredTrainingSession with
                --summary_dir, save_summaries_steps=5,
                log_step_count_steps=4; the loss of every step recorded;
                then merge_all run in a local tf.Session on the final
                variables and written by a FileWriter into
                <summary_dir>/manual with a hand-made tf.Summary
  bad_input     (test_bad_input_dist.py) bad feeds and fetches and a hook
                returning a non-SessionRunArgs in a running session, each
                caught and recorded, training on between them (each
                worker until it has tried them all, and three runs more),
                then a run of the closed session; worker 1 first asks for
                MonitoredTrainingSession(is_chief=True)

"events" are [who, what, ...] lists in the order they happened; who is a
hook's name or "loop" (the program around mon_sess.run). A Recorder's
begin and after_create_session carry the time they were called
(time.time()), to be compared with the ps task's log."""

import argparse
import json
import os
import sys
import time

import numpy as np

import rdmaflow as tf

EVENTS = []
FLAGS = None


def record(*event):
    EVENTS.append(list(event))


def describe(value):
    """A JSON picture of a fetch result: its structure and values."""
    if value is None:
        return None
    if isinstance(value, dict):
        return {"dict": {k: describe(v) for k, v in value.items()}}
    if isinstance(value, tuple):
        return {"tuple": [describe(v) for v in value]}
    if isinstance(value, list):
        return {"list": [describe(v) for v in value]}
    if isinstance(value, np.generic):
        return {"scalar": value.item(), "dtype": str(value.dtype)}
    if isinstance(value, np.ndarray):
        return {"array": list(value.shape), "dtype": str(value.dtype)}
    return {"other": type(value).__name__}


def checkpoints():
    """The checkpoint files in --checkpoint_dir now (sorted names)."""
    if not FLAGS.checkpoint_dir or not os.path.isdir(FLAGS.checkpoint_dir):
        return []
    return sorted(f for f in os.listdir(FLAGS.checkpoint_dir)
                  if f.startswith("model.ckpt-"))


class Recorder(tf.train.SessionRunHook):
    """Records each call; fetches what make_fetches() (called in begin,
    when a hook may still add ops to the graph) returns."""

    def __init__(self, name, make_fetches=None):
        self.name = name
        self.make_fetches = make_fetches
        self.fetches = None

    def begin(self):
        if self.make_fetches:
            self.fetches = self.make_fetches()
        record(self.name, "begin", checkpoints(), time.time())

    def after_create_session(self, session, coord):
        record(self.name, "after_create_session", checkpoints(),
               session.graph is tf.get_default_graph(), time.time())

    def before_run(self, run_context):
        record(self.name, "before_run",
               isinstance(run_context, tf.train.SessionRunContext))
        if self.fetches is None:
            return None
        return tf.train.SessionRunArgs(self.fetches)

    def after_run(self, run_context, run_values):
        record(self.name, "after_run", describe(run_values.results))

    def end(self, session):
        record(self.name, "end", checkpoints())


class StopRequester(Recorder):
    def __init__(self, name, at):
        super().__init__(name)
        self.at = at
        self.runs = 0

    def after_run(self, run_context, run_values):
        super().after_run(run_context, run_values)
        self.runs += 1
        if self.runs == self.at:
            run_context.request_stop()
            record(self.name, "requested_stop", run_context.stop_requested)


class HookError(Exception):
    pass


class Raiser(Recorder):
    """Raises exc in its at-th call of method."""

    def __init__(self, name, method, at, exc):
        super().__init__(name)
        self.method = method
        self.at = at
        self.exc = exc
        self.calls = 0

    def _maybe_raise(self, method):
        if method == self.method:
            self.calls += 1
            if self.calls == self.at:
                record(self.name, "raising", method)
                raise self.exc

    def before_run(self, run_context):
        self._maybe_raise("before_run")
        return super().before_run(run_context)

    def after_run(self, run_context, run_values):
        super().after_run(run_context, run_values)
        self._maybe_raise("after_run")


class BadArgsHook(tf.train.SessionRunHook):
    """Returns a plain list from before_run once (TensorFlow's hooks return
    SessionRunArgs or None)."""

    def __init__(self, tensor):
        self.tensor = tensor
        self.armed = False

    def before_run(self, run_context):
        if self.armed:
            self.armed = False
            return [self.tensor]
        return None


def model():
    """The graph of every worker: (x, y_, loss, global_step, train_op)."""
    cluster = tf.train.ClusterSpec({
        "ps": FLAGS.ps_hosts.split(","),
        "worker": FLAGS.worker_hosts.split(",")})
    with tf.device(tf.train.replica_device_setter(
            worker_device="/job:worker/task:%d" % FLAGS.task_index,
            cluster=cluster)):
        tf.set_random_seed(7)
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        y_ = tf.placeholder(tf.int64, [None], name="y_")
        logits = tf.layers.dense(x, 3)
        loss = tf.losses.sparse_softmax_cross_entropy(labels=y_,
                                                      logits=logits)
        global_step = tf.train.get_or_create_global_step()
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(
            loss, global_step=global_step)
    return x, y_, loss, global_step, train_op


def batch(step):
    rng = np.random.RandomState(1000 * FLAGS.task_index + step)
    bx = rng.rand(8, 4).astype(np.float32)
    by = (bx[:, 0] * 3).astype(np.int64).clip(0, 2)
    return bx, by


def session(server, hooks, chief_only_hooks=None, is_chief=None):
    return tf.train.MonitoredTrainingSession(
        master=server.target,
        is_chief=(FLAGS.task_index == 0) if is_chief is None else is_chief,
        checkpoint_dir=FLAGS.checkpoint_dir or None,
        hooks=hooks, chief_only_hooks=chief_only_hooks,
        max_wait_secs=60)


def wait_for_workers():
    """The chief waits (at most 30 s) until every other worker has run
    once (its file ran.<i> in the current directory, which the tasks
    share), so each has runs to record."""
    n = len(FLAGS.worker_hosts.split(","))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not all(
            os.path.exists("ran.%d" % i) for i in range(1, n)):
        time.sleep(0.01)


def case_order(server, result):
    x, y_, loss, global_step, train_op = model()
    a = Recorder("A", lambda: global_step)
    # B adds an op in begin, as TensorFlow's hooks may
    b = Recorder("B", lambda: {
        "gs": global_step,
        "pair": (tf.identity(global_step, name="gs_copy"), loss),
        "list": [loss]})
    c = Recorder("C")
    hooks = [a, tf.train.StopAtStepHook(last_step=FLAGS.last_step), b]
    mon_sess = session(server, hooks, chief_only_hooks=[c])
    record("loop", "created")
    with mon_sess:
        step = 0
        while not mon_sess.should_stop():
            if step == 2 and FLAGS.task_index == 0:
                wait_for_workers()
            bx, by = batch(step)
            record("loop", "run_call")
            out = mon_sess.run([train_op, global_step, loss],
                               feed_dict={x: bx, y_: by})
            record("loop", "run_return", describe(out))
            step += 1
            if step == 1:
                open("ran.%d" % FLAGS.task_index, "w").close()
        result["runs"] = step
        result["global_step"] = int(mon_sess.global_step)
    record("loop", "closed", checkpoints())


def case_request_stop(server, result):
    x, y_, loss, global_step, train_op = model()
    hooks = [StopRequester("S", at=3),
             tf.train.StopAtStepHook(last_step=1000)]
    runs = 0
    with session(server, hooks) as mon_sess:
        while not mon_sess.should_stop():
            bx, by = batch(runs)
            mon_sess.run(train_op, feed_dict={x: bx, y_: by})
            runs += 1
            record("loop", "ran", runs, mon_sess.should_stop())
        result["global_step"] = int(mon_sess.global_step)
    result["runs"] = runs


def case_raise(server, result):
    x, y_, loss, global_step, train_op = model()
    hook_error = HookError("boom from after_run at run 2")
    key_error = KeyError("boom from before_run at run 4")
    hooks = [Raiser("R", "after_run", 2, hook_error),
             Raiser("K", "before_run", 4, key_error),
             tf.train.StopAtStepHook(last_step=FLAGS.last_step)]
    runs = 0
    with session(server, hooks) as mon_sess:
        while not mon_sess.should_stop():
            bx, by = batch(runs)
            runs += 1
            try:
                gs = mon_sess.run([train_op, global_step],
                                  feed_dict={x: bx, y_: by})[1]
                record("loop", "ran", runs, int(gs))
            except Exception as e:
                record("loop", "raised", runs,
                       "%s.%s" % (type(e).__module__, type(e).__qualname__),
                       str(e), e is hook_error or e is key_error)
        result["global_step"] = int(mon_sess.global_step)
    result["runs"] = runs


def case_stop_at_step(server, result):
    x, y_, loss, global_step, train_op = model()
    hooks = [tf.train.StopAtStepHook(last_step=FLAGS.last_step),
             Recorder("A", lambda: global_step)]
    runs = 0
    gs = None
    with session(server, hooks) as mon_sess:
        while not mon_sess.should_stop():
            bx, by = batch(runs)
            gs = mon_sess.run([train_op, global_step],
                              feed_dict={x: bx, y_: by})[1]
            runs += 1
        result["global_step"] = int(mon_sess.global_step)
    result["runs"] = runs
    result["last_fetched"] = int(gs)


def case_nan(server, result):
    x, y_, loss, global_step, train_op = model()
    hooks = [tf.train.NanTensorHook(loss),
             tf.train.StopAtStepHook(last_step=1000)]
    runs = 0
    with session(server, hooks) as mon_sess:
        while not mon_sess.should_stop():
            bx, by = batch(runs)
            runs += 1
            if runs == 3:
                bx[0, 0] = np.nan
            try:
                value = mon_sess.run([train_op, loss],
                                     feed_dict={x: bx, y_: by})[1]
                record("loop", "ran", runs, float(value))
            except tf.train.NanLossDuringTrainingError as e:
                record("loop", "nan", runs, type(e).__name__, str(e))
                break
    result["runs"] = runs


def try_run(name, fn):
    """Records what fn raised (its type's name and message) as
    ["bad", name, type, message]; or ["bad", name, null, result]."""
    try:
        value = fn()
    except Exception as e:
        record("bad", name, type(e).__name__, str(e))
    else:
        record("bad", name, None, repr(value))


def case_bad_input(server, result):
    x, y_, loss, global_step, train_op = model()
    other = tf.Graph()
    with other.as_default():
        alien = tf.placeholder(tf.float32, [None, 4], name="alien_x")
        alien_out = tf.identity(alien, name="alien_out")
    bad_hook = BadArgsHook(loss)
    if FLAGS.task_index == 1:
        try_run("is_chief", lambda: session(
            server, [tf.train.StopAtStepHook(last_step=FLAGS.last_step)],
            is_chief=True))
    hooks = [bad_hook, tf.train.StopAtStepHook(last_step=FLAGS.last_step)]
    runs = 0
    with session(server, hooks) as mon_sess:
        def train(feed=None, fetches=None):
            bx, by = batch(runs)
            feed_dict = {x: bx, y_: by}
            feed_dict.update(feed or {})
            return mon_sess.run(fetches or [train_op, global_step],
                                feed_dict=feed_dict)

        bad = [
            ("dtype", lambda: train(
                {x: np.ones((8, 4), dtype=np.float64)})),
            ("shape", lambda: train(
                {x: np.ones((8, 5), dtype=np.float32)})),
            ("noncontiguous", lambda: train(
                {x: np.ones((4, 8), dtype=np.float32).T})),
            ("alien_feed", lambda: train(
                {alien: np.ones((8, 4), dtype=np.float32)})),
            ("alien_fetch", lambda: train(
                fetches=[train_op, alien_out])),
            ("no_such_name", lambda: train(
                fetches=[train_op, "no_such_tensor:0"])),
            ("hook_args", lambda: (setattr(bad_hook, "armed", True),
                                   train())),
        ]
        # every third run of this worker follows a bad input, until none
        # is left; then three more (not StopAtStepHook: each worker has to
        # get through its list)
        more = 3
        while not mon_sess.should_stop() and more > 0:
            if runs % 3 == 1 and bad:
                name, fn = bad.pop(0)
                try_run(name, fn)
                record("bad_after", name, int(mon_sess.global_step))
            # the session still trains
            gs = train()[1]
            runs += 1
            record("loop", "ran", runs, int(gs))
            more -= not bad
        result["global_step"] = int(mon_sess.global_step)
        result["left"] = [name for name, _ in bad]
    result["runs"] = runs
    try_run("closed", train)


def case_summaries(server, result):
    x, y_, loss, global_step, train_op = model()
    with tf.name_scope("train"):
        tf.summary.scalar("loss", loss)
    tf.summary.scalar("global_step", global_step, family="progress")
    merged = tf.summary.merge_all()
    losses = {}
    runs = 0
    with tf.train.MonitoredTrainingSession(
            master=server.target, is_chief=True,
            checkpoint_dir=FLAGS.checkpoint_dir or None,
            summary_dir=FLAGS.summary_dir, save_summaries_steps=5,
            log_step_count_steps=4, max_wait_secs=60,
            hooks=[tf.train.StopAtStepHook(last_step=FLAGS.last_step)]
    ) as mon_sess:
        while not mon_sess.should_stop():
            bx, by = batch(runs)
            _, gs, lv = mon_sess.run([train_op, global_step, loss],
                                     feed_dict={x: bx, y_: by})
            losses[int(gs)] = float(lv)
            runs += 1
    result["runs"] = runs
    result["losses"] = losses
    # the final variables, evaluated locally and written by hand
    bx, by = batch(0)
    with tf.Session() as sess:
        summ = sess.run(merged, feed_dict={x: bx, y_: by})
    result["merged"] = [[v.tag, v.simple_value] for v in summ.value]
    with tf.summary.FileWriter(FLAGS.summary_dir + "/manual") as w:
        w.add_summary(summ, FLAGS.last_step)
        w.add_summary(tf.Summary(value=[
            tf.Summary.Value(tag="hand", simple_value=1.5)]),
            FLAGS.last_step + 1)
        result["manual"] = w.path


CASES = {"order": case_order, "request_stop": case_request_stop,
         "raise": case_raise, "stop_at_step": case_stop_at_step,
         "nan": case_nan, "bad_input": case_bad_input,
         "summaries": case_summaries}


def main():
    cluster = tf.train.ClusterSpec({
        "ps": FLAGS.ps_hosts.split(","),
        "worker": FLAGS.worker_hosts.split(",")})
    server = tf.train.Server(cluster, job_name=FLAGS.job_name,
                             task_index=FLAGS.task_index)
    if FLAGS.job_name == "ps":
        server.join()
        print("ps %d: joined" % FLAGS.task_index)
        return
    result = {"task": FLAGS.task_index, "case": FLAGS.case}
    t0 = time.monotonic()
    CASES[FLAGS.case](server, result)
    result["events"] = EVENTS
    result["secs"] = round(time.monotonic() - t0, 3)
    print("RESULT " + json.dumps(result))
    sys.stdout.flush()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--ps_hosts", required=True)
    parser.add_argument("--worker_hosts", required=True)
    parser.add_argument("--job_name", required=True)
    parser.add_argument("--task_index", type=int, default=0)
    parser.add_argument("--case", choices=sorted(CASES), default="order")
    parser.add_argument("--last_step", type=int, default=20)
    parser.add_argument("--checkpoint_dir", default="")
    parser.add_argument("--summary_dir", default=None)
    FLAGS = parser.parse_args()
    main()
