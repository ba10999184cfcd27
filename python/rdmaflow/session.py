"""tf.Session: a local session over the default (or a given) graph, run by
the C executor in this process (no cluster: a distributed program uses
tf.train.MonitoredTrainingSession). Variables are used in place: after a
chief's MonitoredTrainingSession closed they hold the job's final values,
so a local session evaluates the trained model."""

import contextlib
import threading

from rdmaflow import _rdmaflow as _rf
from rdmaflow import fetches as _fetches
from rdmaflow import framework as _fw


class ConfigProto:
    """tf.ConfigProto: the fields rdmaflow reads
    (intra_op_parallelism_threads: the executor's threads, 0 = every CPU);
    the others are accepted and ignored."""

    def __init__(self, intra_op_parallelism_threads=0,
                 inter_op_parallelism_threads=0, **kwargs):
        self.intra_op_parallelism_threads = intra_op_parallelism_threads
        self.inter_op_parallelism_threads = inter_op_parallelism_threads
        for k, v in kwargs.items():
            setattr(self, k, v)


def executor_threads(config):
    return int(getattr(config, "intra_op_parallelism_threads", 0) or 0)


class _SessionStack(threading.local):
    def __init__(self):
        self.stack = []


_sessions = _SessionStack()


def get_default_session():
    if not _sessions.stack:
        raise ValueError("No default session is registered. Use `with "
                         "sess.as_default()` or pass an explicit session")
    return _sessions.stack[-1]


class Session:
    """tf.Session(target="", graph=None, config=None)."""

    def __init__(self, target="", graph=None, config=None):
        if target:
            raise ValueError(
                "tf.Session(%r): rdmaflow runs a distributed graph in "
                "tf.train.MonitoredTrainingSession(master=server.target, "
                "...); tf.Session() is local" % (target,))
        self._graph = graph or _fw.get_default_graph()
        self._executor = _rf.Executor(executor_threads(config))
        self._session = _rf.LocalSession(self._graph._g, self._executor)
        self._closed = False
        self._plans = {}

    @property
    def graph(self):
        return self._graph

    @property
    def sess_str(self):
        return ""

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Runs what fetches need and returns their values in fetches'
        structure (numpy arrays; None for an op)."""
        _fetches.check_open(self._closed, "Session")
        plan = _fetches.FetchPlan(self._graph, fetches)
        for special in plan.specials:
            special._initialize()
        nodes, values = _fetches.feeds(self._graph, feed_dict)
        fetch_nodes = [n for n in plan.nodes]
        if not fetch_nodes:
            return plan.build([])
        views = self._session.run(nodes, values, fetch_nodes, [])
        return plan.build(views)

    def close(self):
        if not self._closed:
            self._session.close()
            self._closed = True

    def __enter__(self):
        self._ctx = self.as_default()
        self._ctx.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb):
        self._ctx.__exit__(exc_type, exc, tb)
        self.close()

    @contextlib.contextmanager
    def as_default(self):
        _sessions.stack.append(self)
        try:
            with self._graph.as_default():
                yield self
        finally:
            _sessions.stack.pop()


InteractiveSession = Session
