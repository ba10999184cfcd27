"""What Session.run takes and gives back, as TensorFlow 1.x does: fetches
in nested structures (a tensor or an op, a name, lists, tuples,
namedtuples, dicts, a tf.summary op: its Summary) flattened into the
nodes to run and rebuilt from their values (an op's value is None; a
scalar comes back as a numpy scalar), and feed_dict normalised to (nodes,
buffers): numpy arrays are passed without a copy (a wrong dtype or a
non-contiguous array is refused by the extension, naming the
placeholder); Python values are converted to the placeholder's dtype."""

import numpy as np

from rdmaflow import _rdmaflow as _rf
from rdmaflow import dtypes as _dtypes
from rdmaflow import errors as _errors
from rdmaflow import framework as _fw


class _Leaf:
    __slots__ = ("index", "is_op", "special")

    def __init__(self, index, is_op, special=None):
        self.index = index
        self.is_op = is_op
        self.special = special


class FetchPlan:
    """A fetch structure of one graph: ``nodes`` to fetch (unique, in
    order), ``specials`` (initializer ops run by Python), and ``build``
    rebuilding the caller's structure from the nodes' values."""

    def __init__(self, graph, fetches):
        self.graph = graph
        self.nodes = []
        self.specials = []
        self._index = {}
        self._structure = self._flatten(fetches)

    def _node_index(self, node):
        i = self._index.get(node)
        if i is None:
            i = self._index[node] = len(self.nodes)
            self.nodes.append(node)
        return i

    def _flatten(self, f):
        from rdmaflow import variables as _vars
        if f is None:
            raise TypeError("Fetch argument None has invalid type <class "
                            "'NoneType'>")
        if isinstance(f, _vars.InitOp):
            self.specials.append(f)
            return _Leaf(-1, True, f)
        if hasattr(f, "_summary_parts"):  # tf.summary's: values -> Summary
            return ("summary", [(tag, self._flatten(t))
                                for tag, t in f._summary_parts])
        if isinstance(f, dict):
            return (type(f), [(k, self._flatten(v)) for k, v in f.items()])
        if isinstance(f, tuple) and hasattr(f, "_fields"):
            return ("namedtuple", type(f), [self._flatten(v) for v in f])
        if isinstance(f, (list, tuple)):
            return (type(f), [self._flatten(v) for v in f])
        try:
            elem = self.graph.as_graph_element(f)
        except (TypeError, KeyError, ValueError) as e:
            # as TensorFlow's _ElementFetchMapper: a name not in the graph
            # (KeyError) is a ValueError too
            cls = TypeError if isinstance(e, TypeError) else ValueError
            raise cls("Fetch argument %r cannot be interpreted as a "
                      "Tensor. (%s)" % (f, e.args[0] if e.args else e)) \
                from None
        is_op = isinstance(elem, _fw.Operation)
        return _Leaf(self._node_index(elem._node), is_op)

    def build(self, values):
        """The caller's structure from values[i] (memoryviews or None) of
        nodes[i]."""
        arrays = [None if v is None else _to_numpy(v) for v in values]
        return self._build(self._structure, arrays)

    def _build(self, s, arrays):
        if isinstance(s, _Leaf):
            return None if s.is_op else arrays[s.index]
        if s[0] == "namedtuple":
            return s[1](*[self._build(v, arrays) for v in s[2]])
        if s[0] == "summary":
            from rdmaflow import summary as _summary
            return _summary.Summary([
                _summary.Summary.Value(tag, float(
                    np.asarray(self._build(v, arrays)).reshape(-1)[0]))
                for tag, v in s[1]])
        kind, items = s
        if issubclass(kind, dict):
            out = kind()
            for k, v in items:
                out[k] = self._build(v, arrays)
            return out
        built = [self._build(v, arrays) for v in items]
        return built if kind is list else kind(built)


def _to_numpy(view):
    a = np.array(view)  # a copy: the view's buffer is the plan's
    return a[()] if a.ndim == 0 else a


def feeds(graph, feed_dict):
    """(nodes, values) of a feed_dict for the extension."""
    if not feed_dict:
        return [], []
    nodes, values = [], []
    for key, value in feed_dict.items():
        try:
            elem = graph.as_graph_element(key)
        except (TypeError, KeyError, ValueError) as e:
            raise TypeError("Cannot interpret feed_dict key %r as a Tensor: "
                            "%s" % (key, e)) from None
        if isinstance(elem, _fw.Operation):
            raise TypeError("Cannot feed the operation %s (feed a tensor)"
                            % elem.name)
        node = elem._node
        nodes.append(node)
        values.append(_feed_value(node, value))
    return nodes, values


def _feed_value(node, value):
    if isinstance(value, np.ndarray) and not value.flags.c_contiguous:
        # refused by the extension too, which cannot name what it was given
        _errors.raise_status(
            _rf.RF_ERR_INVALID_ARG,
            "feeding '%s': the array is not C-contiguous "
            "(np.ascontiguousarray makes a copy that is) (expected %s, "
            "given %s%s)" % (node.name, _describe(node.dtype, node.shape),
                             value.dtype, _shape_str(value.shape)))
    if isinstance(value, np.ndarray) or (
            not isinstance(value, (np.generic, list, tuple, int, float,
                                   bool)) and _is_buffer(value)):
        return value  # the extension checks dtype and layout, no copy
    if isinstance(value, _fw.Tensor):
        raise TypeError("The value of a feed cannot be a tf.Tensor object "
                        "(feeding %s)" % node.name)
    dtype = _dtypes.as_dtype(node.dtype).as_numpy_dtype
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as e:
        raise _errors.InvalidArgumentError(
            None, None, "feeding '%s': %s" % (node.name, e)) from None
    if arr.dtype.kind not in "biuf":
        raise _errors.InvalidArgumentError(
            None, None, "feeding '%s': a value of dtype %s (expected %s)"
            % (node.name, arr.dtype, node.dtype))
    # not np.ascontiguousarray: it makes a 0-d value 1-d
    return np.asarray(arr, dtype=dtype, order="C")


def _shape_str(shape):
    return "[%s]" % ",".join("?" if d is None else str(d) for d in shape)


def _describe(dtype, shape):
    """"float32[?,784]", as the extension's messages name a tensor."""
    return "%s%s" % (dtype, _shape_str(shape))


def _is_buffer(value):
    try:
        memoryview(value)
        return True
    except TypeError:
        return False


def check_open(closed, what):
    if closed:
        raise RuntimeError("Attempted to use a closed %s." % what)


__all__ = ["FetchPlan", "feeds", "check_open", "_rf"]
