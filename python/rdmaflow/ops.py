"""TensorFlow 1.x's array and math ops (tf.placeholder, tf.constant,
tf.matmul, tf.reduce_mean, ...) over the extension's builders: every op
rdmaflow's graph has, under TensorFlow's name and argument names."""

import numpy as np

from rdmaflow import _rdmaflow as _rf
from rdmaflow import dtypes as _dtypes
from rdmaflow import framework as _fw
from rdmaflow.framework import Operation, Tensor


def _g():
    g = _fw.get_default_graph()
    g._check_not_finalized()
    return g._g


def _t(node):
    return Tensor(node)


def _n(x, what, dtype=None):
    return _fw.convert_to_tensor(x, dtype=dtype)._node \
        if not isinstance(x, Tensor) else x._node


def _pair(a, b):
    """Two operands as nodes, a Python or numpy value taking the other's
    dtype (TensorFlow's convert_to_tensor with the tensor's dtype)."""
    if isinstance(a, Tensor) or hasattr(a, "_as_graph_element"):
        a = _fw.convert_to_tensor(a)
        b = _fw.convert_to_tensor(b, dtype=a.dtype)
    else:
        b = _fw.convert_to_tensor(b)
        a = _fw.convert_to_tensor(a, dtype=b.dtype)
    return a._node, b._node


# ---- sources -------------------------------------------------------------


def placeholder(dtype, shape=None, name=None):
    """tf.placeholder. rdmaflow needs the rank (None for unknown dims)."""
    d = _dtypes.checked(dtype, "tf.placeholder")
    if shape is None:
        raise ValueError("tf.placeholder%s: rdmaflow needs the shape's rank "
                         "(e.g. shape=[None, 784])"
                         % (" '%s'" % name if name else ""))
    dims = _fw.TensorShape(shape).as_list()
    return _t(_rf.placeholder(_g(), d.name, dims, name))


def placeholder_with_default(input, shape, name=None):
    raise NotImplementedError("tf.placeholder_with_default is not supported "
                              "by rdmaflow (feed a placeholder)")


def constant(value, dtype=None, shape=None, name="Const",
             verify_shape=False):
    """tf.constant from a Python or numpy value."""
    if value is None:
        raise ValueError("None values not supported.")
    if dtype is None:
        arr = np.asarray(value)
        if arr.dtype == np.float64:
            arr = arr.astype(np.float32)  # TensorFlow's default float
        elif arr.dtype.kind in "iu" and not isinstance(value, np.ndarray):
            arr = arr.astype(np.int32)  # and default int
        d = _dtypes.checked(arr.dtype, "tf.constant")
    else:
        d = _dtypes.checked(dtype, "tf.constant")
        try:
            arr = np.asarray(value, dtype=d.as_numpy_dtype)
        except (TypeError, ValueError):
            raise TypeError("Expected %s, got %r of type '%s' instead."
                            % (d.name, value, type(value).__name__)) from None
    if shape is not None:
        shape = _fw.TensorShape(shape).as_list()
        if arr.size == 1:
            arr = np.full(shape, arr.reshape(()), dtype=arr.dtype)
        elif list(arr.shape) != shape:
            if verify_shape or arr.size != int(np.prod(shape)):
                raise TypeError("Expected Tensor's shape: %s, got %s."
                                % (tuple(shape), arr.shape))
            arr = arr.reshape(shape)
    # not np.ascontiguousarray: it makes a 0-d value 1-d
    arr = np.asarray(arr, dtype=d.as_numpy_dtype, order="C")
    g = _fw.get_default_graph()
    node = _rf.const(_g(), d.name, arr.shape, arr, name)
    g._const_values[node.id] = arr  # a tf.Variable's initial value
    return _t(node)


def zeros(shape, dtype=_dtypes.float32, name=None):
    d = _dtypes.checked(dtype, "tf.zeros")
    return constant(np.zeros(_fw.TensorShape(shape).as_list(),
                             d.as_numpy_dtype), name=name or "zeros")


def ones(shape, dtype=_dtypes.float32, name=None):
    d = _dtypes.checked(dtype, "tf.ones")
    return constant(np.ones(_fw.TensorShape(shape).as_list(),
                            d.as_numpy_dtype), name=name or "ones")


def fill(dims, value, name=None):
    return constant(value, shape=dims, name=name or "Fill")


class InitialValue:
    """What tf.random_uniform / tf.truncated_normal return in rdmaflow: an
    initial value drawn by a variable's own initializer (the C library's
    seeded streams), usable as a tf.Variable's initial_value only."""

    def __init__(self, shape, dtype, init):
        self.shape = _fw.TensorShape(shape).as_list()
        self.dtype = _dtypes.checked(dtype, "initial value")
        self.init = init

    def _as_graph_element(self):
        raise NotImplementedError(
            "rdmaflow draws random values only as a variable's initial value "
            "(tf.Variable(tf.truncated_normal(...))), not as a tensor")


def _seed(seed):
    return int(seed) if seed else 0


def random_uniform(shape, minval=0, maxval=None, dtype=_dtypes.float32,
                   seed=None, name=None):
    return InitialValue(shape, dtype, ("random_uniform", float(minval),
                                       1.0 if maxval is None
                                       else float(maxval), _seed(seed)))


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32,
                     seed=None, name=None):
    return InitialValue(shape, dtype, ("truncated_normal", float(mean),
                                       float(stddev), _seed(seed)))


def identity(input, name=None):
    return _t(_rf.identity(_g(), _n(input, "identity"), name))


def no_op(name=None):
    return Operation(_rf.no_op(_g(), [], name))


def group(*inputs, **kwargs):
    """tf.group: an Operation that depends on every input."""
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError("tf.group: unknown arguments %s" % sorted(kwargs))
    flat = []
    for i in inputs:
        flat.extend(i if isinstance(i, (list, tuple)) else [i])
    deps = [_fw.node_of(i, "tf.group") for i in flat if i is not None]
    return Operation(_rf.no_op(_g(), deps, name))


def tuple_(tensors, name=None, control_inputs=None):
    return list(tensors)


# ---- math ------------------------------------------------------------------


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False,
           adjoint_b=False, a_is_sparse=False, b_is_sparse=False,
           name=None):
    a, b = _pair(a, b)
    return _t(_rf.matmul(_g(), a, b, bool(transpose_a or adjoint_a),
                         bool(transpose_b or adjoint_b), name))


def add(x, y, name=None):
    x, y = _pair(x, y)
    return _t(_rf.add(_g(), x, y, name))


def subtract(x, y, name=None):
    x, y = _pair(x, y)
    return _t(_rf.sub(_g(), x, y, name))


def multiply(x, y, name=None):
    x, y = _pair(x, y)
    return _t(_rf.mul(_g(), x, y, name))


def negative(x, name=None):
    return _t(_rf.neg(_g(), _n(x, "tf.negative"), name))


def add_n(inputs, name=None):
    return _t(_rf.add_n(_g(), [_n(i, "tf.add_n") for i in inputs], name))


def _axes(axis, reduction_indices, what):
    if axis is not None and reduction_indices is not None:
        raise ValueError("%s: give axis or reduction_indices, not both"
                         % what)
    axis = axis if axis is not None else reduction_indices
    if axis is None:
        return None
    return [int(a) for a in (axis if isinstance(axis, (list, tuple))
                             else [axis])]


def reduce_sum(input_tensor, axis=None, keepdims=None, name=None,
               reduction_indices=None, keep_dims=None):
    keep = bool(keepdims if keepdims is not None else keep_dims)
    if _axes(axis, reduction_indices, "reduce_sum") == []:
        return identity(input_tensor, name=name)  # TF: no axis, no change
    return _t(_rf.reduce_sum(_g(), _n(input_tensor, "tf.reduce_sum"),
                             _axes(axis, reduction_indices, "reduce_sum"),
                             keep, name))


def reduce_mean(input_tensor, axis=None, keepdims=None, name=None,
                reduction_indices=None, keep_dims=None):
    keep = bool(keepdims if keepdims is not None else keep_dims)
    if _axes(axis, reduction_indices, "reduce_mean") == []:
        return identity(input_tensor, name=name)
    return _t(_rf.reduce_mean(_g(), _n(input_tensor, "tf.reduce_mean"),
                              _axes(axis, reduction_indices, "reduce_mean"),
                              keep, name))


def argmax(input, axis=None, name=None, dimension=None,
           output_type=_dtypes.int64):
    if axis is None:
        axis = 0 if dimension is None else dimension
    d = _dtypes.checked(output_type, "tf.argmax output_type")
    return _t(_rf.argmax(_g(), _n(input, "tf.argmax"), int(axis), d.name,
                         name))


def equal(x, y, name=None):
    x, y = _pair(x, y)
    return _t(_rf.equal(_g(), x, y, name))


def cast(x, dtype, name=None):
    d = _dtypes.checked(dtype, "tf.cast")
    return _t(_rf.cast(_g(), _n(x, "tf.cast"), d.name, name))


def to_float(x, name="ToFloat"):
    return cast(x, _dtypes.float32, name)


def reshape(tensor, shape, name=None):
    if isinstance(shape, Tensor):
        raise TypeError("tf.reshape: rdmaflow needs a static shape (a list "
                        "of ints, -1 for one inferred dimension)")
    dims = [int(d) for d in shape]
    return _t(_rf.reshape(_g(), _n(tensor, "tf.reshape"), dims, name))


def concat(values, axis, name="concat"):
    return _t(_rf.concat(_g(), [_n(v, "tf.concat") for v in values],
                         int(axis), name))


def ones_like(tensor, dtype=None, name=None, optimize=True):
    return _t(_rf.ones_like(_g(), _n(tensor, "tf.ones_like"), name))


def zeros_like(tensor, dtype=None, name=None, optimize=True):
    return _t(_rf.zeros_like(_g(), _n(tensor, "tf.zeros_like"), name))


def gather(params, indices, validate_indices=None, name=None, axis=0):
    if axis not in (0, None):
        raise NotImplementedError("tf.gather: rdmaflow gathers along axis "
                                  "0 only")
    return _t(_rf.gather(_g(), _n(params, "tf.gather params"),
                         _n(indices, "tf.gather indices"), name))


def assign(ref, value, use_locking=None, name=None, validate_shape=True):
    var = _fw.node_of(ref, "tf.assign ref")
    return _t(_rf.assign(_g(), var, _pair(ref, value)[1], name))


def assign_add(ref, value, use_locking=None, name=None):
    var = _fw.node_of(ref, "tf.assign_add ref")
    return _t(_rf.assign_add(_g(), var, _pair(ref, value)[1], name))
