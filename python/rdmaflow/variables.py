"""Variables as TensorFlow 1.x makes them: tf.Variable, tf.get_variable
under tf.variable_scope (initializer, partitioner, reuse), the
initializers and partitioners, tf.global_variables_initializer,
tf.train.get_or_create_global_step. A variable's value lives in the C
graph's storage (on a worker of a cluster: registered memory the session
READs the ps shards into)."""

import contextlib

import numpy as np

from rdmaflow import _rdmaflow as _rf
from rdmaflow import dtypes as _dtypes
from rdmaflow import framework as _fw
from rdmaflow import ops as _ops
from rdmaflow.framework import Operation, Tensor


class Variable(Tensor):
    """tf.Variable: a VariableV2 node, usable wherever a tensor is."""

    __slots__ = ()

    def __init__(self, initial_value=None, trainable=True, collections=None,
                 validate_shape=True, caching_device=None, name=None,
                 variable_def=None, dtype=None, expected_shape=None,
                 import_scope=None, constraint=None, use_resource=None,
                 synchronization=None, aggregation=None, shape=None,
                 _node=None):
        if _node is not None:
            super().__init__(_node)
            return
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        if callable(initial_value) and not isinstance(initial_value,
                                                      _ops.InitialValue):
            initial_value = initial_value()
        g = _fw.get_default_graph()
        g._check_not_finalized()
        name = name or "Variable"
        if isinstance(initial_value, _ops.InitialValue):
            d = (_dtypes.checked(dtype, "tf.Variable") if dtype
                 else initial_value.dtype)
            node = _rf.variable(g._g, d.name, initial_value.shape,
                                initial_value.init, name, bool(trainable))
        else:
            value = _constant_value(initial_value, dtype)
            d = _dtypes.checked(value.dtype, "tf.Variable")
            node = _rf.variable(g._g, d.name, value.shape, ("zeros",), name,
                                bool(trainable))
            _rf.variable_assign(node, value)
            _keep_initial_value(g, node, value)
        super().__init__(node)

    def _as_graph_element(self):
        return Tensor(self._node)

    @property
    def initializer(self):
        return InitOp([self])

    @property
    def initial_value(self):
        raise NotImplementedError("rdmaflow keeps a variable's initializer, "
                                  "not its initial value as a tensor")

    def value(self):
        return Tensor(self._node)

    def read_value(self):
        return _ops.identity(self)

    @property
    def trainable(self):
        return self._node.trainable

    def assign(self, value, use_locking=None, name=None, read_value=True):
        return _ops.assign(self, value, name=name)

    def assign_add(self, delta, use_locking=None, name=None,
                   read_value=True):
        return _ops.assign_add(self, delta, name=name)

    def load(self, value, session=None):
        """Variable.load: writes value into the variable now (locally)."""
        value = np.asarray(value, dtype=self.dtype.as_numpy_dtype,
                           order="C")
        _rf.variable_assign(self._node, value)

    def numpy_value(self):
        """rdmaflow: the variable's value in this process's graph now (a
        worker's last READ; the chief's final values after its
        MonitoredTrainingSession closed), as a numpy copy."""
        return np.array(_rf.variable_read(self._node))

    def __repr__(self):
        return "<tf.Variable '%s' shape=%s dtype=%s>" % (
            self.name, self.shape, self.dtype.name)


class PartitionedVariable(Tensor):
    """What tf.get_variable returns under a partitioner: the parts (each a
    Variable "<name>/part_<i>", placed one by one), and as a tensor their
    ConcatV2 along the sliced axis."""

    __slots__ = ()

    def __iter__(self):
        return iter(self._get_variable_list())

    def __len__(self):
        return len(self._get_variable_list())

    def _get_variable_list(self):
        node = self._node
        if node.is_variable:
            return [Variable(_node=node)]
        return [Variable(_node=n) for n in node.inputs if n.is_variable]

    def _as_graph_element(self):
        return Tensor(self._node)


def _constant_value(value, dtype):
    """A numpy array for a variable's initial value given as data (or a
    tf.constant made in this process)."""
    if isinstance(value, Tensor):
        g = value.graph
        const = getattr(g, "_const_values", {}).get(value._node.id)
        if const is None:
            raise NotImplementedError(
                "tf.Variable: rdmaflow takes an initial value that is data "
                "(numpy, Python), a tf.constant, an initializer or "
                "tf.truncated_normal/tf.random_uniform, not the tensor %s"
                % value.name)
        value = const
    arr = np.asarray(value)
    if dtype is not None:
        arr = arr.astype(_dtypes.checked(dtype, "tf.Variable").as_numpy_dtype)
    elif arr.dtype == np.float64:
        arr = arr.astype(np.float32)
    elif arr.dtype.kind in "iu" and arr.dtype != np.int64:
        arr = arr.astype(np.int32)
    return np.asarray(arr, order="C")  # ascontiguousarray makes 0-d 1-d


def _keep_initial_value(g, node, value):
    """A variable given data rather than an initializer (the C variable's
    own is zeros): its initializer op assigns the data again."""
    g.__dict__.setdefault("_var_initial_values", {})[node.id] = value


def _initialize(node):
    """Runs a variable's initializer (or assigns its initial data)."""
    g = _fw.Graph._of(node.graph)
    value = getattr(g, "_var_initial_values", {}).get(node.id)
    if value is None:
        _rf.variable_initialize(node)
    else:
        _rf.variable_assign(node, value)


# ---- initializers ----------------------------------------------------------


class Initializer:
    """An initializer (tf.zeros_initializer(), ...): what get_variable and
    the layers take; called as TensorFlow's are, it gives an initial value
    for tf.Variable."""

    def __init__(self, init):
        self.init = init

    def __call__(self, shape, dtype=_dtypes.float32, partition_info=None):
        return _ops.InitialValue(shape, dtype, self.init)


def _seed(seed):
    return int(seed) if seed else 0


def zeros_initializer(dtype=_dtypes.float32):
    return Initializer(("zeros",))


def ones_initializer(dtype=_dtypes.float32):
    return Initializer(("constant", 1.0))


def constant_initializer(value=0, dtype=_dtypes.float32, verify_shape=False):
    arr = np.asarray(value)
    if arr.size != 1:
        return _ArrayInitializer(arr)
    return Initializer(("constant", float(arr.reshape(()))))


class _ArrayInitializer(Initializer):
    def __init__(self, arr):
        super().__init__(None)
        self.array = arr


def random_uniform_initializer(minval=0, maxval=None, seed=None,
                               dtype=_dtypes.float32):
    return Initializer(("random_uniform", float(minval),
                        1.0 if maxval is None else float(maxval),
                        _seed(seed)))


def truncated_normal_initializer(mean=0.0, stddev=1.0, seed=None,
                                 dtype=_dtypes.float32):
    return Initializer(("truncated_normal", float(mean), float(stddev),
                        _seed(seed)))


def glorot_uniform_initializer(seed=None, dtype=_dtypes.float32):
    return Initializer(("glorot_uniform", _seed(seed)))


def _unsupported_initializer(name):
    def make(*args, **kwargs):
        raise NotImplementedError(
            "%s is not supported by rdmaflow (zeros, ones, constant, "
            "random_uniform, truncated_normal and glorot_uniform are)" % name)
    return make


random_normal_initializer = _unsupported_initializer(
    "tf.random_normal_initializer")
glorot_normal_initializer = _unsupported_initializer(
    "tf.glorot_normal_initializer")
variance_scaling_initializer = _unsupported_initializer(
    "tf.variance_scaling_initializer")
orthogonal_initializer = _unsupported_initializer("tf.orthogonal_initializer")


def _init_tuple(initializer, what):
    if initializer is None:
        return ("glorot_uniform",)
    if isinstance(initializer, Initializer) and initializer.init:
        return initializer.init
    if isinstance(initializer, _ops.InitialValue):
        return initializer.init
    raise TypeError("%s: unsupported initializer %r" % (what, initializer))


# ---- partitioners ----------------------------------------------------------


class Partitioner:
    """A partitioner (tf.fixed_size_partitioner(...), ...) as the C
    library computes it, exactly as TensorFlow's."""

    def __init__(self, spec):
        self.spec = spec

    def __call__(self, shape, dtype):
        raise NotImplementedError("rdmaflow applies partitioners inside "
                                  "get_variable; they are not callable")


def fixed_size_partitioner(num_shards, axis=0):
    return Partitioner(("fixed_size", int(num_shards), int(axis)))


def min_max_variable_partitioner(max_partitions=1, axis=0,
                                 min_slice_size=256 << 10,
                                 bytes_per_string_element=16):
    return Partitioner(("min_max", int(max_partitions), int(axis),
                        int(min_slice_size), int(bytes_per_string_element)))


def variable_axis_size_partitioner(max_shard_bytes, axis=0,
                                   bytes_per_string_element=16,
                                   max_shards=None):
    return Partitioner(("variable_axis_size", int(max_shard_bytes),
                        int(axis), int(bytes_per_string_element),
                        int(max_shards or 0)))


def _partitioner_spec(p):
    if p is None:
        return None
    if isinstance(p, Partitioner):
        return p.spec
    raise TypeError("partitioner: expected tf.fixed_size_partitioner(...), "
                    "tf.min_max_variable_partitioner(...) or "
                    "tf.variable_axis_size_partitioner(...), got %r" % (p,))


# ---- variable scopes and get_variable ------------------------------------

AUTO_REUSE = "AUTO_REUSE"


class VariableScope:
    """What `with tf.variable_scope(...) as scope` yields."""

    def __init__(self, state):
        self._state = state

    @property
    def name(self):
        return self._state.name

    @property
    def original_name_scope(self):
        return self._state.name + "/" if self._state.name else ""

    @property
    def reuse(self):
        return self._state.reuse

    def reuse_variables(self):
        self._state.reuse = True

    @property
    def partitioner(self):
        return self._state.partitioner

    @property
    def initializer(self):
        return self._state.initializer


def get_variable_scope():
    return VariableScope(_fw.get_default_graph()._var_scope[-1])


@contextlib.contextmanager
def variable_scope(name_or_scope, default_name=None, values=None,
                   initializer=None, regularizer=None, caching_device=None,
                   partitioner=None, custom_getter=None, reuse=None,
                   dtype=None, use_resource=None, constraint=None,
                   auxiliary_name_scope=True):
    """tf.variable_scope: names get_variable's variables, sets their
    default initializer and partitioner (the layers' too), and opens a
    name scope of the same name."""
    g = _fw.get_default_graph()
    outer = g._var_scope[-1]
    if isinstance(name_or_scope, VariableScope):
        name = name_or_scope.name
        full = name
    else:
        name = name_or_scope if name_or_scope is not None else default_name
        if name is None:
            raise ValueError("variable_scope: a name or a default_name is "
                             "needed")
        if name_or_scope is None:
            name = g._g.unique_name(name).rpartition("/")[2]
        full = outer.name + "/" + name if outer.name else name
    state = _fw._VarScope(
        full, initializer if initializer is not None else outer.initializer,
        partitioner if partitioner is not None else outer.partitioner,
        reuse if reuse else outer.reuse)
    g._var_scope.append(state)
    g._g.set_partitioner(_partitioner_spec(state.partitioner))
    try:
        if auxiliary_name_scope:
            # a default_name was made unique above: its name scope is
            # that name as it is ("dense", not "dense_1")
            with _fw.name_scope(name + "/" if name_or_scope is None
                                else name):
                yield VariableScope(state)
        else:
            yield VariableScope(state)
    finally:
        g._var_scope.pop()
        g._g.set_partitioner(_partitioner_spec(g._var_scope[-1].partitioner))


def get_variable(name, shape=None, dtype=None, initializer=None,
                 regularizer=None, trainable=None, collections=None,
                 caching_device=None, partitioner=None, validate_shape=True,
                 use_resource=None, custom_getter=None, constraint=None,
                 synchronization=None, aggregation=None):
    """tf.get_variable: the variable "<variable scope>/<name>", created
    with the scope's (or this call's) initializer and partitioner, or the
    existing one when the scope reuses."""
    g = _fw.get_default_graph()
    g._check_not_finalized()
    scope = g._var_scope[-1]
    full = scope.name + "/" + name if scope.name else name
    if full in g._variables:
        if scope.reuse in (True, AUTO_REUSE):
            return g._variables[full]
        raise ValueError("Variable %s already exists, disallowed. Did you "
                         "mean to set reuse=True or reuse=tf.AUTO_REUSE in "
                         "VarScope?" % full)
    if scope.reuse is True:
        raise ValueError("Variable %s does not exist, or was not created "
                         "with tf.get_variable(). Did you mean to set "
                         "reuse=tf.AUTO_REUSE in VarScope?" % full)
    initializer = initializer if initializer is not None \
        else scope.initializer
    trainable = True if trainable is None else bool(trainable)
    value = None
    if isinstance(initializer, _ArrayInitializer):
        value = initializer.array
    elif initializer is not None and not isinstance(
            initializer, (Initializer, _ops.InitialValue)):
        value = initializer
    if value is not None:
        value = _constant_value(value, dtype)
        if shape is not None and list(value.shape) != list(shape):
            if value.size != 1:
                raise ValueError("get_variable %s: initial value of shape %s "
                                 "for shape %s" % (full, value.shape,
                                                   tuple(shape)))
            value = np.full(shape, value.reshape(()), dtype=value.dtype)
        d = _dtypes.checked(value.dtype, "tf.get_variable %s" % full)
        shape = value.shape
        init = ("zeros",)
    else:
        if shape is None:
            raise ValueError("Shape of a new variable (%s) must be fully "
                             "defined, but instead was None." % full)
        d = _dtypes.checked(dtype or _dtypes.float32,
                            "tf.get_variable %s" % full)
        if initializer is None and not d.is_floating:
            init = ("zeros",)  # TF's default for integer variables
        else:
            init = _init_tuple(initializer, "tf.get_variable %s" % full)
    shape = _fw.TensorShape(shape).as_list()
    spec = _partitioner_spec(partitioner if partitioner is not None
                             else scope.partitioner)
    g._g.set_partitioner(spec)
    if spec is not None:
        # the C library names the parts "<name given>/part_<i>": give it
        # the plain name in the variable scope's (absolute) name scope
        g._g.name_scope_push(scope.name + "/")
    try:
        node = _rf.get_variable(g._g, d.name, shape, init,
                                full + "/" if spec is None else name,
                                trainable)
    finally:
        if spec is not None:
            g._g.name_scope_pop()
        g._g.set_partitioner(_partitioner_spec(scope.partitioner))
    if value is not None:
        if not node.is_variable:
            raise NotImplementedError("get_variable %s: a partitioned "
                                      "variable takes an initializer, not "
                                      "data" % full)
        _rf.variable_assign(node, value)
        _keep_initial_value(g, node, value)
    # partitioned (TF: a PartitionedVariable, also of one part "part_0")
    # or not
    var = Variable(_node=node) if node.is_variable and node.name == full \
        else PartitionedVariable(node)
    g._variables[full] = var
    return var


# ---- collections of variables --------------------------------------------


def global_variables(scope=None):
    g = _fw.get_default_graph()
    out = [Variable(_node=n) for n in g._g.variables()]
    return [v for v in out if not scope or v.name.startswith(scope)]


all_variables = global_variables


def trainable_variables(scope=None):
    g = _fw.get_default_graph()
    out = [Variable(_node=n) for n in g._g.trainable_variables()]
    return [v for v in out if not scope or v.name.startswith(scope)]


def local_variables(scope=None):
    return []


def model_variables(scope=None):
    return trainable_variables(scope)


class InitOp(Operation):
    """An initializer op (tf.global_variables_initializer(),
    var.initializer): running it in a tf.Session initialises its variables
    in place; a MonitoredTrainingSession initialises (or restores) by
    itself."""

    __slots__ = ("_vars",)

    def __init__(self, variables, name="init"):
        super().__init__(None)
        self._vars = list(variables)

    @property
    def name(self):
        return "init"

    @property
    def type(self):
        return "NoOp"

    def _initialize(self):
        for v in self._vars:
            _initialize(v._node)

    def __eq__(self, other):
        return self is other

    def __hash__(self):
        return id(self)


def global_variables_initializer():
    return InitOp(global_variables())


initialize_all_variables = global_variables_initializer


def variables_initializer(var_list, name="init"):
    return InitOp(var_list, name)


def local_variables_initializer():
    return InitOp([])


def initialize_uninitialized(graph):
    """What a session does before it runs: every variable that has no value
    yet gets its initializer's (TensorFlow's Scaffold init_op)."""
    for node in graph._g.variables():
        if not node.initialized:
            _initialize(node)


# ---- global_step -----------------------------------------------------------


def get_global_step(graph=None):
    g = graph or _fw.get_default_graph()
    return g._global_step


def get_or_create_global_step(graph=None):
    """tf.train.get_or_create_global_step. Under a replica_device_setter
    that places on ps tasks, global_step goes on ps task 0 whenever it is
    created (rdmaflow keeps it in ps 0's globals word), without advancing
    the round-robin: a departure only where TensorFlow's tutorial, which
    creates it after the model, would put it on another ps task."""
    g = graph or _fw.get_default_graph()
    if g._global_step is not None:
        return g._global_step
    existing = g._g.find("global_step")
    if existing is not None and existing.is_variable:
        g._global_step = Variable(_node=existing)
        return g._global_step
    g._check_not_finalized()
    if _fw.in_ps_placement(g):
        g._g.device_push(None)
        g._g.device_fn_push(lambda node: "/job:ps/task:0")
        try:
            node = _rf.global_step(g._g)
        finally:
            g._g.device_pop()
            g._g.device_pop()
    else:
        node = _rf.global_step(g._g)
    g._global_step = Variable(_node=node)
    return g._global_step


def create_global_step(graph=None):
    g = graph or _fw.get_default_graph()
    if get_global_step(g) is not None or g._g.find("global_step"):
        raise ValueError("\"global_step\" already exists.")
    return get_or_create_global_step(g)
