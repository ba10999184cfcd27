"""The graph as TensorFlow 1.x's Python shows it: tf.Graph (the default
graph), tf.Tensor and tf.Operation over the extension's nodes (every
rdmaflow node has one output, so a node is both), tf.TensorShape, and the
graph's scopes: name_scope, device (a string, a device function, a
replica_device_setter, None), control_dependencies and colocate_with.
The ops themselves are in ops.py, nn.py, layers.py; variables in
variables.py."""

import contextlib
import threading

import numpy as np

from rdmaflow import _rdmaflow as _rf
from rdmaflow import dtypes as _dtypes


# ---- shapes --------------------------------------------------------------


class Dimension:
    """tf.Dimension: a dimension, value None when unknown."""

    __slots__ = ("_value",)

    def __init__(self, value):
        self._value = None if value is None else int(value)

    @property
    def value(self):
        return self._value

    def __int__(self):
        if self._value is None:
            raise ValueError("the dimension is unknown (None)")
        return self._value

    __index__ = __int__

    def __eq__(self, other):
        other = other.value if isinstance(other, Dimension) else other
        if self._value is None or other is None:
            return None
        return self._value == other

    def __hash__(self):
        return hash(self._value)

    def __repr__(self):
        return "Dimension(%r)" % (self._value,)

    def __str__(self):
        return "?" if self._value is None else str(self._value)


class TensorShape:
    """tf.TensorShape of a known rank (rdmaflow's shapes always have
    one)."""

    def __init__(self, dims):
        if isinstance(dims, TensorShape):
            dims = dims.as_list()
        self._dims = [None if d is None or (not isinstance(d, Dimension)
                                            and d < 0)
                      else (d.value if isinstance(d, Dimension) else int(d))
                      for d in dims]

    @property
    def ndims(self):
        return len(self._dims)

    rank = ndims

    @property
    def dims(self):
        return [Dimension(d) for d in self._dims]

    def as_list(self):
        return list(self._dims)

    def is_fully_defined(self):
        return all(d is not None for d in self._dims)

    def num_elements(self):
        if not self.is_fully_defined():
            return None
        return int(np.prod(self._dims, dtype=np.int64))

    def __len__(self):
        return len(self._dims)

    def __iter__(self):
        return iter(self.dims)

    def __getitem__(self, key):
        if isinstance(key, slice):
            return TensorShape(self._dims[key])
        return Dimension(self._dims[key])

    def __eq__(self, other):
        try:
            other = TensorShape(other)
        except TypeError:
            return NotImplemented
        return self._dims == other._dims

    def __hash__(self):
        return hash(tuple(self._dims))

    def __repr__(self):
        return "TensorShape(%r)" % (self._dims,)

    def __str__(self):
        return "(%s)" % ", ".join("?" if d is None else str(d)
                                  for d in self._dims)


# ---- tensors and operations --------------------------------------------


class Operation:
    """tf.Operation: a node run for its effect (a train op, a group)."""

    __slots__ = ("_node",)

    def __init__(self, node):
        self._node = node

    @property
    def name(self):
        return self._node.name

    @property
    def type(self):
        return self._node.op

    @property
    def device(self):
        return self._node.assigned_device or self._node.device

    @property
    def graph(self):
        return Graph._of(self._node.graph)

    @property
    def inputs(self):
        return [Tensor(n) for n in self._node.inputs]

    @property
    def control_inputs(self):
        return [Operation(n) for n in self._node.control_inputs]

    @property
    def outputs(self):
        return [Tensor(self._node)]

    def run(self, feed_dict=None, session=None):
        from rdmaflow import session as _session
        (session or _session.get_default_session()).run(self, feed_dict)

    def __eq__(self, other):
        return isinstance(other, Operation) and other._node == self._node

    def __hash__(self):
        return hash(("op", self._node))

    def __repr__(self):
        return "<tf.Operation '%s' type=%s>" % (self.name, self.type)


class Tensor:
    """tf.Tensor: the value of a node, with Python's operators."""

    __slots__ = ("_node",)

    def __init__(self, node):
        self._node = node

    @property
    def name(self):
        return self._node.name + ":0"

    @property
    def op(self):
        return Operation(self._node)

    @property
    def dtype(self):
        return _dtypes.as_dtype(self._node.dtype)

    @property
    def shape(self):
        return TensorShape(self._node.shape)

    def get_shape(self):
        return self.shape

    def set_shape(self, shape):
        if not _compatible(self._node.shape, TensorShape(shape).as_list()):
            raise ValueError("Tensor '%s' has shape %s, incompatible with %s"
                             % (self.name, self.shape, TensorShape(shape)))

    @property
    def device(self):
        return self._node.assigned_device or self._node.device

    @property
    def graph(self):
        return Graph._of(self._node.graph)

    @property
    def value_index(self):
        return 0

    def consumers(self):
        g = self._node.graph
        return [Operation(g.node(i)) for i in range(g.num_nodes())
                if self._node in g.node(i).inputs]

    def eval(self, feed_dict=None, session=None):
        from rdmaflow import session as _session
        return (session or _session.get_default_session()).run(
            self, feed_dict)

    def __eq__(self, other):
        # TensorFlow 1.x: tensors compare by identity in graph mode.
        return isinstance(other, Tensor) and other._node == self._node

    def __hash__(self):
        return hash(("tensor", self._node))

    def __repr__(self):
        return "<tf.Tensor '%s' shape=%s dtype=%s>" % (
            self.name, self.shape, self.dtype.name)

    def __bool__(self):
        raise TypeError("Using a `tf.Tensor` as a Python `bool` is not "
                        "allowed in graph mode.")

    def __iter__(self):
        raise TypeError("'Tensor' object is not iterable.")

    def __neg__(self):
        from rdmaflow import ops
        return ops.negative(self)


def _operator(name, op_name, reflected=False):
    """Tensor's binary operator for ops.<op_name> (TensorFlow's
    _OverrideBinaryOperatorHelper): x + y is ops.add(x, y), 2 + x (the
    reflected form) ops.add(2, x)."""
    def method(self, other):
        from rdmaflow import ops
        fn = getattr(ops, op_name)
        return fn(other, self) if reflected else fn(self, other)
    method.__name__ = "__%s%s__" % ("r" if reflected else "", name)
    return method


for _name, _op in (("add", "add"), ("sub", "subtract"),
                   ("mul", "multiply"), ("matmul", "matmul")):
    setattr(Tensor, "__%s__" % _name, _operator(_name, _op))
    setattr(Tensor, "__r%s__" % _name, _operator(_name, _op, reflected=True))
del _name, _op


def _compatible(have, want):
    return len(have) == len(want) and all(
        a is None or b is None or a == b for a, b in zip(have, want))


# ---- graphs --------------------------------------------------------------


class Graph:
    """tf.Graph over an rdmaflow graph. Besides the nodes it records what
    the distributed runtime needs to know about the program: the train ops
    the optimizers made and their settings (SyncReplicasOptimizer's)."""

    _by_native = {}

    def __init__(self):
        self._g = _rf.Graph()
        Graph._by_native[id(self._g)] = self
        self._device_stack = []  # what each device scope pushed
        self._train_ops = []  # (Operation, optimizer) in creation order
        self._variables = {}  # get_variable's store: name -> Variable
        self._collections = {}
        self._var_scope = [_VarScope("", None, None, None)]
        self._finalized = False
        self._global_step = None
        self._const_values = {}  # node id -> the tf.constant's value

    @classmethod
    def _of(cls, native):
        return cls._by_native.get(id(native))

    def __del__(self):
        Graph._by_native.pop(id(getattr(self, "_g", None)), None)

    @property
    def seed(self):
        return self._g.seed() or None

    @seed.setter
    def seed(self, value):
        self._g.set_seed(int(value))

    @contextlib.contextmanager
    def as_default(self):
        _default.stack.append(self)
        try:
            yield self
        finally:
            _default.stack.pop()

    def finalize(self):
        self._finalized = True

    @property
    def finalized(self):
        return self._finalized

    def get_operations(self):
        return [Operation(self._g.node(i))
                for i in range(self._g.num_nodes())]

    def get_operation_by_name(self, name):
        node = self._g.find(name)
        if node is None:
            raise KeyError("The name %r refers to an Operation not in the "
                           "graph." % (name,))
        return Operation(node)

    def get_tensor_by_name(self, name):
        if ":" not in name:
            raise ValueError("The name %r looks like an (invalid) Operation "
                             "name, not a Tensor (give 'name:0')." % (name,))
        op, _, index = name.rpartition(":")
        if index != "0":
            raise KeyError("The name %r refers to a Tensor which does not "
                           "exist (rdmaflow ops have one output, :0)"
                           % (name,))
        node = self._g.find(op)
        if node is None:
            raise KeyError("The name %r refers to a Tensor which does not "
                           "exist." % (name,))
        return Tensor(node)

    def as_graph_element(self, obj):
        """A Tensor or Operation for obj (one of them, or a name)."""
        if isinstance(obj, (Tensor, Operation)):
            if obj.graph is not self:
                raise ValueError("%r is not an element of this graph." % obj)
            return obj
        if hasattr(obj, "_as_graph_element"):
            return self.as_graph_element(obj._as_graph_element())
        if isinstance(obj, str):
            if ":" in obj:
                return self.get_tensor_by_name(obj)
            return self.get_operation_by_name(obj)
        raise TypeError("Can not convert a %s into a Tensor or Operation."
                        % type(obj).__name__)

    def add_to_collection(self, name, value):
        self._collections.setdefault(name, []).append(value)

    def get_collection(self, name, scope=None):
        items = list(self._collections.get(name, []))
        if scope:
            items = [i for i in items
                     if getattr(i, "name", "").startswith(scope)]
        return items

    def get_collection_ref(self, name):
        return self._collections.setdefault(name, [])

    def unique_name(self, name, mark_as_used=True):
        return self._g.unique_name(name)

    def get_name_scope(self):
        return self._g.name_scope()

    def name_scope(self, name):
        return name_scope(name, graph=self)

    def device(self, device_name_or_function):
        return device(device_name_or_function, graph=self)

    def control_dependencies(self, control_inputs):
        return control_dependencies(control_inputs, graph=self)

    def colocate_with(self, op, ignore_existing=False):
        return colocate_with(op, graph=self)

    def _check_not_finalized(self):
        if self._finalized:
            raise RuntimeError("Graph is finalized and cannot be modified.")


class _VarScope:
    __slots__ = ("name", "initializer", "partitioner", "reuse")

    def __init__(self, name, initializer, partitioner, reuse):
        self.name = name
        self.initializer = initializer
        self.partitioner = partitioner
        self.reuse = reuse


class _DefaultStack(threading.local):
    def __init__(self):
        self.stack = []


_default = _DefaultStack()
_global_graph = [None]


def get_default_graph():
    """tf.get_default_graph."""
    if _default.stack:
        return _default.stack[-1]
    if _global_graph[0] is None:
        _global_graph[0] = Graph()
    return _global_graph[0]


def reset_default_graph():
    """tf.reset_default_graph."""
    if _default.stack:
        raise AssertionError("Do not use tf.reset_default_graph() to clear "
                             "nested graphs.")
    _global_graph[0] = Graph()


def native(graph=None):
    """The extension's graph of graph (default: the default graph)."""
    return (graph or get_default_graph())._g


def node_of(value, what="value"):
    """The node of a Tensor, an Operation or a Variable."""
    if isinstance(value, (Tensor, Operation)):
        return value._node
    if hasattr(value, "_as_graph_element"):
        return node_of(value._as_graph_element(), what)
    raise TypeError("%s: expected a tf.Tensor or tf.Operation, got %s"
                    % (what, type(value).__name__))


def convert_to_tensor(value, dtype=None, name=None, preferred_dtype=None):
    """tf.convert_to_tensor: tensors as they are, Python and numpy values
    as constants."""
    if isinstance(value, Tensor):
        if dtype is not None and _dtypes.as_dtype(dtype) != value.dtype:
            raise ValueError("Tensor conversion requested dtype %s for "
                             "Tensor with dtype %s: %r"
                             % (_dtypes.as_dtype(dtype).name,
                                value.dtype.name, value))
        return value
    if hasattr(value, "_as_graph_element"):
        return convert_to_tensor(value._as_graph_element(), dtype, name)
    if isinstance(value, Operation):
        raise TypeError("Can not convert an Operation (%s) into a Tensor"
                        % value.name)
    from rdmaflow import ops
    return ops.constant(value, dtype=dtype or preferred_dtype, name=name)


# ---- scopes --------------------------------------------------------------


@contextlib.contextmanager
def name_scope(name, default_name=None, values=None, graph=None):
    """tf.name_scope: yields the scope's name with a trailing '/'."""
    g = graph or get_default_graph()
    name = name if name is not None else default_name
    if name is None:
        raise ValueError("name_scope: a name or a default_name is needed")
    if name == "":
        yield ""
        return
    scope = g._g.name_scope_push(name)
    try:
        yield scope + "/"
    finally:
        g._g.name_scope_pop()


@contextlib.contextmanager
def control_dependencies(control_inputs, graph=None):
    """tf.control_dependencies (None clears nothing here: rdmaflow keeps
    the outer dependencies)."""
    g = graph or get_default_graph()
    if control_inputs is None:
        yield
        return
    nodes = [node_of(c, "control_dependencies") for c in control_inputs]
    g._g.control_dependencies_push(nodes)
    try:
        yield
    finally:
        g._g.control_dependencies_pop()


@contextlib.contextmanager
def colocate_with(op, ignore_existing=False, graph=None):
    """tf.colocate_with."""
    g = graph or get_default_graph()
    if op is None:
        yield
        return
    g._g.colocation_push(node_of(op, "colocate_with"))
    try:
        yield
    finally:
        g._g.colocation_pop()


class DeviceSpec:
    """tf.DeviceSpec: a (partial) device, printed canonically."""

    def __init__(self, job=None, replica=None, task=None, device_type=None,
                 device_index=None):
        self.job = job
        self.replica = replica
        self.task = task
        self.device_type = device_type
        self.device_index = device_index

    @classmethod
    def from_string(cls, spec):
        fields = {}
        for part in filter(None, (spec or "").split("/")):
            key, _, value = part.partition(":")
            if key in ("job", "replica", "task"):
                fields[key] = value if key == "job" else int(value)
            elif key == "device":
                kind, _, index = value.partition(":")
                fields["device_type"] = kind.upper()
                if index not in ("", "*"):
                    fields["device_index"] = int(index)
            elif key.lower() in ("cpu", "gpu"):
                fields["device_type"] = key.upper()
                if value not in ("", "*"):
                    fields["device_index"] = int(value)
            else:
                raise ValueError("Unknown attribute: '%s' in '%s'"
                                 % (key, spec))
        return cls(**fields)

    def to_string(self):
        s = ""
        if self.job is not None:
            s += "/job:%s" % self.job
        if self.replica is not None:
            s += "/replica:%d" % self.replica
        if self.task is not None:
            s += "/task:%d" % self.task
        if self.device_type is not None:
            s += "/device:%s:%s" % (
                self.device_type,
                "*" if self.device_index is None else self.device_index)
        return s

    def __str__(self):
        return self.to_string()


@contextlib.contextmanager
def device(device_name_or_function, graph=None):
    """tf.device: a device string (merged with the outer scopes' as
    TensorFlow does), a DeviceSpec, a function of the op returning a
    device string, a replica_device_setter, or None (clears the outer
    scopes)."""
    g = graph or get_default_graph()
    spec = device_name_or_function
    native_setter = getattr(spec, "_native_setter", False)
    if native_setter is not False:
        g._g.setter_push(native_setter)
    elif spec is None or isinstance(spec, str):
        g._g.device_push(spec)
    elif isinstance(spec, DeviceSpec):
        g._g.device_push(spec.to_string())
    elif callable(spec):
        def fn(node, _spec=spec):
            out = _spec(Operation(node))
            if isinstance(out, DeviceSpec):
                out = out.to_string()
            return out
        g._g.device_fn_push(fn)
    else:
        raise TypeError("tf.device: expected a device string, a DeviceSpec, "
                        "a function or None, got %s"
                        % type(spec).__name__)
    g._device_stack.append(spec)
    try:
        yield
    finally:
        g._device_stack.pop()
        g._g.device_pop()


def in_ps_placement(graph=None):
    """Whether a replica_device_setter that places on ps tasks is active
    (innermost scopes first; tf.device(None) ends the walk)."""
    g = graph or get_default_graph()
    for spec in reversed(g._device_stack):
        if spec is None:
            return False
        native_setter = getattr(spec, "_native_setter", False)
        if native_setter:
            return True
    return False
