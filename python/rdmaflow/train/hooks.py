"""tf.train's SessionRunHook machinery: the hook base class and its
arguments (SessionRunArgs, SessionRunContext, SessionRunValues), the
built-in hooks, which are the C library's (StopAtStep, CheckpointSaver,
StepCounter, SummarySaver, NanTensor, LoggingTensor), and the bridge
through which the C monitored session calls a user's hook in
TensorFlow's order."""

import collections
import logging
import math
import time

from rdmaflow import _rdmaflow as _rf
from rdmaflow import errors as _errors
from rdmaflow import fetches as _fetches
from rdmaflow import framework as _fw

_log = logging.getLogger("rdmaflow")


class SessionRunArgs(collections.namedtuple(
        "SessionRunArgs", ["fetches", "feed_dict", "options"])):
    """What a hook's before_run asks to add to the run."""

    def __new__(cls, fetches, feed_dict=None, options=None):
        return super().__new__(cls, fetches, feed_dict, options)


class SessionRunValues(collections.namedtuple(
        "SessionRunValues", ["results", "options", "run_metadata"])):
    """What after_run gets: results in the structure before_run asked."""


class SessionRunContext:
    """The run a hook is called around; request_stop() ends the loop
    after this run."""

    def __init__(self, original_args, session):
        self._original_args = original_args
        self._session = session
        self._stop_requested = False

    @property
    def original_args(self):
        return self._original_args

    @property
    def session(self):
        return self._session

    @property
    def stop_requested(self):
        return self._stop_requested

    def request_stop(self):
        self._stop_requested = True


class SessionRunHook:
    """tf.train.SessionRunHook: override any of these."""

    def begin(self):
        pass

    def after_create_session(self, session, coord):
        pass

    def before_run(self, run_context):
        return None

    def after_run(self, run_context, run_values):
        pass

    def end(self, session):
        pass


# ---- built-in hooks (C hooks) -------------------------------------------


class _CHook(SessionRunHook):
    """A hook the C library implements; _c_hook makes a new one for each
    session."""

    def _c_hook(self, graph):
        raise NotImplementedError


class StopAtStepHook(_CHook):
    """Stops at last_step, or num_steps after the global_step the first
    session started from."""

    def __init__(self, num_steps=None, last_step=None):
        if num_steps is None and last_step is None:
            raise ValueError("One of num_steps or last_step must be "
                             "specified.")
        if num_steps is not None and last_step is not None:
            raise ValueError("Only one of num_steps or last_step can be "
                             "specified.")
        if (num_steps if num_steps is not None else last_step) <= 0:
            raise ValueError("num_steps or last_step must be > 0 in "
                             "rdmaflow, got %r"
                             % (num_steps if num_steps is not None
                                else last_step,))
        self._num_steps = int(num_steps or 0)
        self._last_step = int(last_step or 0)

    def _c_hook(self, graph):
        return _rf.stop_at_step_hook(self._num_steps, self._last_step)


class NanTensorHook(_CHook):
    """Fails the run with NanLossDuringTrainingError on a NaN loss, or with
    fail_on_nan_loss=False logs it and stops the loop."""

    def __init__(self, loss_tensor, fail_on_nan_loss=True):
        self._loss = loss_tensor
        self._fail = bool(fail_on_nan_loss)

    def _c_hook(self, graph):
        if not self._fail:
            return None  # the Python methods below do it
        return _rf.nan_tensor_hook(_fw.node_of(self._loss, "loss_tensor"))

    def before_run(self, run_context):
        return SessionRunArgs(self._loss)

    def after_run(self, run_context, run_values):
        if math.isnan(float(run_values.results)):
            _log.warning("Model diverged with loss = NaN.")
            run_context.request_stop()


class LoggingTensorHook(_CHook):
    """Logs the tensors' values every every_n_iter runs of this task (the
    C hook: "loss = 0.4127, global_step = 1200 (0.812 sec)"), or every
    every_n_secs / with a formatter (in Python, through logging)."""

    def __init__(self, tensors, every_n_iter=None, every_n_secs=None,
                 at_end=False, formatter=None):
        if (every_n_iter is None) == (every_n_secs is None) and not at_end:
            raise ValueError("either at_end and/or exactly one of "
                             "every_n_iter and every_n_secs must be "
                             "provided.")
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError("invalid every_n_iter=%s." % every_n_iter)
        if isinstance(tensors, dict):
            self._tags = list(tensors)
            self._tensors = [tensors[t] for t in self._tags]
        else:
            self._tensors = list(tensors)
            self._tags = [getattr(t, "name", str(t)) for t in self._tensors]
        self._every_n_iter = every_n_iter
        self._every_n_secs = every_n_secs
        self._at_end = at_end
        self._formatter = formatter
        self._last = None
        self._iter = 0

    def _in_c(self):
        return (self._every_n_iter and not self._formatter
                and not self._at_end)

    def _c_hook(self, graph):
        if not self._in_c():
            return None
        nodes = [graph.as_graph_element(t)._node for t in self._tensors]
        return _rf.logging_hook(nodes, int(self._every_n_iter))

    def before_run(self, run_context):
        due = (self._every_n_iter and self._iter % self._every_n_iter == 0
               ) or (self._every_n_secs and (
                   self._last is None
                   or time.time() - self._last >= self._every_n_secs))
        self._due = bool(due)
        return SessionRunArgs(self._tensors) if due else None

    def after_run(self, run_context, run_values):
        self._iter += 1
        if self._due:
            self._show(run_values.results)
            self._last = time.time()

    def _show(self, values):
        values = dict(zip(self._tags, values))
        if self._formatter:
            _log.info(self._formatter(values))
        else:
            _log.info(", ".join("%s = %s" % (k, values[k])
                                for k in self._tags))


class StepCounterHook(_CHook):
    """Every every_n_steps global steps, the cluster's global_step/sec
    (and examples/sec), logged and, with output_dir or summary_writer,
    written as summaries "global_step/sec" and "examples/sec"."""

    def __init__(self, every_n_steps=100, every_n_secs=None, output_dir=None,
                 summary_writer=None, examples_per_step=0):
        if every_n_secs is not None:
            raise NotImplementedError("StepCounterHook: rdmaflow counts every "
                                      "N steps (every_n_steps)")
        self._every = int(every_n_steps)
        self._examples = int(examples_per_step)
        self._writer = summary_writer
        self._output_dir = output_dir

    def _c_hook(self, graph):
        from rdmaflow import summary as _summary
        w = self._writer
        if w is None and self._output_dir:
            w = _summary.FileWriterCache.get(self._output_dir)
        return _rf.step_counter_hook(self._every, self._examples,
                                     w._writer if w is not None else None)


class SummarySaverHook(_CHook):
    """The scalar summaries of summary_op (or of scaffold's, else of the
    graph's tf.summary.merge_all()) written every save_steps global steps
    or save_secs seconds, and at the first run, through summary_writer
    or the FileWriter of output_dir. Without summaries it does nothing."""

    def __init__(self, save_steps=None, save_secs=None, output_dir=None,
                 summary_writer=None, scaffold=None, summary_op=None):
        if (scaffold is None) == (summary_op is None):
            raise ValueError("Exactly one of scaffold or summary_op should "
                             "be passed.")
        if (save_steps is None) == (save_secs is None):
            raise ValueError("exactly one of save_secs or save_steps should "
                             "be provided.")
        if summary_writer is None and output_dir is None:
            raise ValueError("SummarySaverHook: output_dir or summary_writer "
                             "is needed")
        self._steps = int(save_steps or 0)
        self._secs = float(save_secs or 0)
        self._output_dir = output_dir
        self._writer = summary_writer
        self._scaffold = scaffold
        self._summary_op = summary_op

    def _parts(self, graph):
        from rdmaflow import summary as _summary
        op = self._summary_op
        if op is None:
            op = getattr(self._scaffold, "summary_op", None)
        ops = op if isinstance(op, (list, tuple)) else [op]
        if op is None:  # the graph's tf.summary.merge_all()
            ops = graph.get_collection(_summary.SUMMARIES)
        return _summary.merge(ops)._summary_parts if ops else []

    def _c_hook(self, graph):
        from rdmaflow import summary as _summary
        parts = self._parts(graph)
        if not parts:
            return None
        w = self._writer or _summary.FileWriterCache.get(self._output_dir)
        return _rf.summary_saver_hook(
            w._writer, self._steps, self._secs,
            [graph.as_graph_element(t)._node for _, t in parts],
            [tag for tag, _ in parts])


class CheckpointSaverHook(_CHook):
    """The chief's checkpoints: after the session is created, every
    save_steps global steps or save_secs seconds, and at the end
    (model.ckpt-<step>.safetensors and a `checkpoint` state file,
    max_to_keep of them, from saver.max_to_keep or 5). rdmaflow's own
    max_failed_saves (default 3): a save that fails (a full disk, a
    read-only directory) is logged and training goes on; the chief stops
    once that many in a row have failed (0: never). TensorFlow stops at
    the first."""

    def __init__(self, checkpoint_dir, save_secs=None, save_steps=None,
                 saver=None, checkpoint_basename="model.ckpt",
                 scaffold=None, listeners=None, save_graph_def=True,
                 max_failed_saves=3):
        if (save_secs is None) == (save_steps is None):
            raise ValueError("exactly one of save_secs or save_steps should "
                             "be provided.")
        if checkpoint_basename != "model.ckpt":
            raise NotImplementedError("CheckpointSaverHook: the basename is "
                                      "model.ckpt in rdmaflow")
        if listeners:
            raise NotImplementedError("CheckpointSaverHook: listeners are "
                                      "not supported by rdmaflow")
        if saver is None and scaffold is not None:
            saver = getattr(scaffold, "saver", None)
        self._dir = checkpoint_dir
        self._secs = float(save_secs or 0)
        self._steps = int(save_steps or 0)
        self._keep = int(getattr(saver, "max_to_keep", 5) or 0)
        if isinstance(max_failed_saves, bool) or \
                not isinstance(max_failed_saves, int) or max_failed_saves < 0:
            raise ValueError("CheckpointSaverHook(max_failed_saves=%r): an "
                             "int >= 0 is required" % (max_failed_saves,))
        self._max_failed = max_failed_saves

    def _c_hook(self, graph):
        return _rf.checkpoint_saver_hook(self._dir, self._secs, self._steps,
                                         self._keep, self._max_failed)


class SyncReplicasHook(SessionRunHook):
    """What SyncReplicasOptimizer.make_session_run_hook returns: the sync
    settings travel with the optimizer, so it does nothing in the run."""

    def __init__(self, optimizer, is_chief):
        self.optimizer = optimizer
        self.is_chief = bool(is_chief)


class FinalOpsHook(SessionRunHook):
    def __init__(self, final_ops, final_ops_feed_dict=None):
        raise NotImplementedError("FinalOpsHook: the monitored session "
                                  "cannot run after its end in rdmaflow")


class FeedFnHook(SessionRunHook):
    def __init__(self, feed_fn):
        raise NotImplementedError("FeedFnHook: hooks cannot feed in "
                                  "rdmaflow; pass feed_dict to run()")


# ---- the bridge ------------------------------------------------------------


class _HookSession:
    """The `session` a hook's after_create_session and end get."""

    def __init__(self, graph):
        self.graph = graph

    def run(self, *args, **kwargs):
        raise NotImplementedError(
            "a hook cannot run the session from after_create_session or end "
            "in rdmaflow; ask for tensors in before_run (SessionRunArgs)")


class Bridge:
    """A Python hook as the extension calls it (python/src/README.md):
    the C monitored session calls these in TensorFlow's order, on its
    runner thread, so each call makes the session's graph the default
    there. An exception a method raises is raised by run() as itself;
    one from before_run fails the run before its step."""

    def __init__(self, hook, graph, monitored):
        self.hook = hook
        self.graph = graph
        self.monitored = monitored  # the MonitoredTrainingSession
        self.session = _HookSession(graph)
        self._ctx = None
        self._plan = None

    def begin(self, ms):
        with self.graph.as_default():
            self.hook.begin()

    def after_create_session(self, ms, global_step):
        with self.graph.as_default():
            self.hook.after_create_session(self.session, None)

    def before_run(self, ms):
        self._ctx = SessionRunContext(self.monitored._current_args,
                                      self.monitored)
        with self.graph.as_default():
            args = self.hook.before_run(self._ctx)
        self._plan = None
        if args is None:
            return []
        if not isinstance(args, SessionRunArgs):
            raise TypeError("%s.before_run must return None or "
                            "tf.train.SessionRunArgs, not %s"
                            % (type(self.hook).__name__,
                               type(args).__name__))
        if args.feed_dict:
            raise _errors.UnimplementedError(
                None, None, "%s.before_run: a hook's feed_dict is not "
                "supported by rdmaflow" % type(self.hook).__name__)
        if args.fetches is None:
            return []
        self._plan = _fetches.FetchPlan(self.graph, args.fetches)
        if self._plan.specials:
            raise _errors.UnimplementedError(
                None, None, "%s.before_run: an initializer cannot be run "
                "in a monitored session" % type(self.hook).__name__)
        return self._plan.nodes

    def after_run(self, ms, global_step, train, results):
        values = None if self._plan is None else self._plan.build(results)
        with self.graph.as_default():
            self.hook.after_run(self._ctx,
                                SessionRunValues(values, None, None))
        if self._ctx.stop_requested:
            ms.request_stop()

    def end(self, ms):
        with self.graph.as_default():
            self.hook.end(self.session)


def native_hooks(hooks, graph, monitored):
    """The extension's hooks for a list of hooks, in order: a built-in one
    as the C hook, another (or a built-in with options only Python has)
    through a Bridge."""
    out = []
    for h in hooks:
        if not isinstance(h, SessionRunHook):
            raise TypeError("hooks: %r is not a tf.train.SessionRunHook"
                            % (h,))
        c = h._c_hook(graph) if isinstance(h, _CHook) else None
        out.append(c if c is not None else Bridge(h, graph, monitored))
    return out
