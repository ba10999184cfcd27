"""tf.summary (TensorFlow 1.x) for TensorBoard: scalar summaries of the
graph (scalar, merge, merge_all), the Summary values a run of them
returns, and FileWriter, which writes them into an event file
(events.out.tfevents.<time>.<host>, the C library's rdmaflow/summary.h)
that TensorBoard reads. MonitoredTrainingSession's chief writes the
graph's scalar summaries by itself (SummarySaverHook) into summary_dir,
else checkpoint_dir.

Where rdmaflow departs: only scalar summaries exist (histogram, image,
audio, text and tensor_summary raise NotImplementedError); running a
summary returns a Summary object, not its serialized bytes; a FileWriter
does not write the graph (TensorBoard's Graphs tab stays empty)."""

import re
import threading

from rdmaflow import _rdmaflow as _rf
from rdmaflow import dtypes as _dtypes
from rdmaflow import framework as _fw
from rdmaflow import logging as _logging

SUMMARIES = "summaries"  # tf.GraphKeys.SUMMARIES
_INVALID_TAG = re.compile(r"[^-/\w\.]")


class Summary:
    """tf.Summary: a list of values, each a tag and a simple_value (what
    running a scalar summary gives, and what FileWriter.add_summary
    takes)."""

    class Value:
        __slots__ = ("tag", "simple_value")

        def __init__(self, tag="", simple_value=0.0):
            self.tag = str(tag)
            self.simple_value = float(simple_value)

        def __repr__(self):
            return "Summary.Value(tag=%r, simple_value=%r)" % (
                self.tag, self.simple_value)

        def __eq__(self, other):
            return (isinstance(other, Summary.Value)
                    and (self.tag, self.simple_value)
                    == (other.tag, other.simple_value))

    def __init__(self, value=None):
        self.value = list(value or [])
        for v in self.value:
            if not isinstance(v, Summary.Value):
                raise TypeError("Summary(value=...): expected Summary.Value "
                                "items, got %s" % type(v).__name__)

    def __repr__(self):
        return "Summary(value=%r)" % (self.value,)

    def __eq__(self, other):
        return isinstance(other, Summary) and self.value == other.value


class SummaryOp:
    """What scalar, merge and merge_all return: fetched by Session.run it
    gives a Summary of its scalars' values. parts: (tag, Tensor) pairs."""

    def __init__(self, name, parts):
        self.name = name
        self._summary_parts = list(parts)

    @property
    def tags(self):
        return [tag for tag, _ in self._summary_parts]

    def __repr__(self):
        return "<SummaryOp %s: %s>" % (self.name, ", ".join(self.tags))


def _clean_tag(name):
    """TensorFlow's clean_tag: characters other than letters, digits,
    '_', '-', '/' and '.' become '_'; leading '/' are dropped."""
    if name is None:
        return None
    new = _INVALID_TAG.sub("_", str(name)).lstrip("/")
    if new != name:
        _logging.info("Summary name %s is illegal; using %s instead.",
                      name, new)
    return new


def scalar(name, tensor, collections=None, family=None):
    """tf.summary.scalar: a summary of a scalar tensor (float32, int32 or
    int64); its tag is the name inside the current name scope (made
    unique), "family/" in front when a family is given. Added to
    tf.GraphKeys.SUMMARIES (or the given collections)."""
    g = _fw.get_default_graph()
    try:
        t = g.as_graph_element(tensor)
    except (KeyError, ValueError, TypeError):
        t = None
    if not isinstance(t, _fw.Tensor):
        raise TypeError("tf.summary.scalar(%r): expected a Tensor, got %s"
                        % (name, type(tensor).__name__))
    if t.dtype not in (_dtypes.float32, _dtypes.int32, _dtypes.int64):
        raise ValueError("tf.summary.scalar(%r): %s is %s; a summary is of "
                         "float32, int32 or int64" % (name, t.name,
                                                      t.dtype.name))
    dims = t.shape.as_list() if t.shape.ndims is not None else None
    if dims is not None and any(d is not None and d != 1 for d in dims):
        raise ValueError("tf.summary.scalar(%r): %s has shape %s; a scalar "
                         "summary needs one value" % (name, t.name,
                                                      t.shape))
    name = _clean_tag(name)
    family = _clean_tag(family)
    base = name if family is None else "%s/%s" % (family, name)
    with _fw.name_scope(base, graph=g) as scope:
        tag = scope.rstrip("/")
    if family is not None:
        tag = "%s/%s" % (family, tag)
    op = SummaryOp(tag, [(tag, t)])
    for key in (collections if collections is not None else [SUMMARIES]):
        g.add_to_collection(key, op)
    return op


def merge(inputs, collections=None, name=None):
    """tf.summary.merge: one summary of every scalar of inputs (tags must
    be distinct)."""
    parts, seen = [], set()
    for s in inputs:
        if not isinstance(s, SummaryOp):
            raise TypeError("tf.summary.merge: expected summaries "
                            "(tf.summary.scalar's), got %s"
                            % type(s).__name__)
        for tag, t in s._summary_parts:
            if tag in seen:
                raise ValueError("tf.summary.merge: duplicate tag %r" % tag)
            seen.add(tag)
            parts.append((tag, t))
    op = SummaryOp(name or "Merge/MergeSummary", parts)
    g = _fw.get_default_graph()
    for key in collections or []:
        g.add_to_collection(key, op)
    return op


def merge_all(key=SUMMARIES, scope=None, name=None):
    """tf.summary.merge_all: every summary of the collection merged, or
    None when it has none."""
    ops = _fw.get_default_graph().get_collection(key, scope)
    if not ops:
        return None
    return merge(ops, name=name)


def _unsupported(what):
    def fn(*args, **kwargs):
        raise NotImplementedError(
            "tf.summary.%s: rdmaflow writes scalar summaries only "
            "(tf.summary.scalar)" % what)
    fn.__name__ = what
    return fn


histogram = _unsupported("histogram")
image = _unsupported("image")
audio = _unsupported("audio")
text = _unsupported("text")
tensor_summary = _unsupported("tensor_summary")


class FileWriter:
    """tf.summary.FileWriter(logdir): a new event file in logdir (made if
    missing). add_summary writes a Summary (what running a summary
    returns, or one built by hand) at a global step; records reach the
    file at once, flush() makes them durable. The graph, if given, is not
    written (rdmaflow's event files hold scalar summaries)."""

    def __init__(self, logdir, graph=None, max_queue=10, flush_secs=120,
                 filename_suffix=None, session=None, graph_def=None):
        if filename_suffix:
            raise NotImplementedError("FileWriter(filename_suffix=...): "
                                      "rdmaflow names event files as "
                                      "TensorFlow does, without a suffix")
        if graph is not None or graph_def is not None:
            _logging.info("FileWriter(%s): the graph is not written (scalar "
                          "summaries only)", logdir)
        self._logdir = str(logdir)
        self._writer = _rf.SummaryWriter(self._logdir)
        self._lock = threading.Lock()

    def get_logdir(self):
        return self._logdir

    @property
    def path(self):
        """rdmaflow: the event file's path."""
        return self._writer.path

    def add_summary(self, summary, global_step=None):
        """Writes summary's values as one Event at global_step (0 if
        None)."""
        if isinstance(summary, (bytes, bytearray)):
            raise TypeError("FileWriter.add_summary: rdmaflow takes the "
                            "Summary object a summary's run returns, not "
                            "serialized bytes")
        if not isinstance(summary, Summary):
            raise TypeError("FileWriter.add_summary: expected a Summary, "
                            "got %s" % type(summary).__name__)
        if not summary.value:
            return
        step = 0 if global_step is None else int(global_step)
        with self._lock:
            self._writer.scalars(step, [v.tag for v in summary.value],
                                 [v.simple_value for v in summary.value])

    def add_session_start(self, global_step):
        """rdmaflow: a SessionLog START event at global_step (TensorBoard
        drops the events of an earlier run past it)."""
        with self._lock:
            self._writer.session_start(int(global_step))

    def flush(self):
        self._writer.flush()

    def close(self):
        self._writer.close()

    def reopen(self):
        if self._writer.closed:
            self._writer = _rf.SummaryWriter(self._logdir)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class FileWriterCache:
    """tf.summary.FileWriterCache: one FileWriter per directory in this
    process (what the hooks of one summary_dir share)."""

    _cache = {}
    _lock = threading.Lock()

    @staticmethod
    def get(logdir):
        with FileWriterCache._lock:
            w = FileWriterCache._cache.get(logdir)
            if w is None or w._writer.closed:
                w = FileWriterCache._cache[logdir] = FileWriter(logdir)
            return w

    @staticmethod
    def clear():
        with FileWriterCache._lock:
            for w in FileWriterCache._cache.values():
                w.close()
            FileWriterCache._cache.clear()
