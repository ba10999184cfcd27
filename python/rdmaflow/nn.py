"""tf.nn: activations, losses on logits, convolution and pooling, and
embedding_lookup (whose rows a distributed worker READs from the ps tasks
one-sided), over the extension's builders."""

from rdmaflow import _rdmaflow as _rf
from rdmaflow import framework as _fw
from rdmaflow.framework import Tensor


def _g():
    g = _fw.get_default_graph()
    g._check_not_finalized()
    return g._g


def _n(x):
    return _fw.convert_to_tensor(x)._node


def relu(features, name=None):
    return Tensor(_rf.relu(_g(), _n(features), name))


def sigmoid(x, name=None):
    return Tensor(_rf.sigmoid(_g(), _n(x), name))


def tanh(x, name=None):
    return Tensor(_rf.tanh(_g(), _n(x), name))


def softmax(logits, axis=None, name=None, dim=None):
    axis = axis if axis is not None else dim
    if axis not in (None, -1) and axis != len(_fw.convert_to_tensor(
            logits).shape) - 1:
        raise NotImplementedError("tf.nn.softmax: rdmaflow takes the last "
                                  "axis only")
    return Tensor(_rf.softmax(_g(), _n(logits), name))


def bias_add(value, bias, data_format=None, name=None):
    if data_format not in (None, "NHWC", "N...C"):
        raise NotImplementedError("tf.nn.bias_add: rdmaflow is NHWC only")
    return Tensor(_rf.bias_add(_g(), _n(value), _n(bias), name))


def _labels_logits(fn, labels, logits, sentinel):
    if sentinel is not None:
        raise ValueError("Only call `%s` with named arguments (labels=..., "
                         "logits=..., ...)" % fn)
    if labels is None or logits is None:
        raise ValueError("Both labels and logits must be provided.")
    return _n(labels), _n(logits)


def sparse_softmax_cross_entropy_with_logits(_sentinel=None, labels=None,
                                             logits=None, name=None):
    labels, logits = _labels_logits(
        "sparse_softmax_cross_entropy_with_logits", labels, logits,
        _sentinel)
    return Tensor(_rf.sparse_softmax_cross_entropy_with_logits(
        _g(), labels, logits, name))


def sigmoid_cross_entropy_with_logits(_sentinel=None, labels=None,
                                      logits=None, name=None):
    labels, logits = _labels_logits("sigmoid_cross_entropy_with_logits",
                                    labels, logits, _sentinel)
    return Tensor(_rf.sigmoid_cross_entropy_with_logits(_g(), labels,
                                                        logits, name))


def _strides4(strides, what):
    s = list(strides)
    if len(s) != 4 or s[0] != 1 or s[3] != 1:
        raise ValueError("%s: strides are [1, h, w, 1] (NHWC), got %r"
                         % (what, strides))
    return int(s[1]), int(s[2])


def _padding(padding):
    p = padding.upper() if isinstance(padding, str) else padding
    if p not in ("SAME", "VALID"):
        raise ValueError("padding must be 'SAME' or 'VALID', got %r"
                         % (padding,))
    return p


def conv2d(input, filter=None, strides=None, padding=None,
           use_cudnn_on_gpu=True, data_format="NHWC", dilations=None,
           name=None, filters=None):
    filter = filter if filter is not None else filters
    if data_format != "NHWC":
        raise NotImplementedError("tf.nn.conv2d: rdmaflow is NHWC only")
    if dilations not in (None, [1, 1, 1, 1], (1, 1, 1, 1)):
        raise NotImplementedError("tf.nn.conv2d: no dilations in rdmaflow")
    sh, sw = _strides4(strides, "tf.nn.conv2d")
    return Tensor(_rf.conv2d(_g(), _n(input), _n(filter), sh, sw,
                             _padding(padding), name))


def max_pool(value, ksize, strides, padding, data_format="NHWC", name=None,
             input=None):
    value = value if value is not None else input
    if data_format != "NHWC":
        raise NotImplementedError("tf.nn.max_pool: rdmaflow is NHWC only")
    kh, kw = _strides4(ksize, "tf.nn.max_pool ksize")
    sh, sw = _strides4(strides, "tf.nn.max_pool")
    return Tensor(_rf.max_pool(_g(), _n(value), kh, kw, sh, sw,
                               _padding(padding), name))


def embedding_lookup(params, ids, partition_strategy="mod", name=None,
                     validate_indices=True, max_norm=None):
    """tf.nn.embedding_lookup over one table, its parts (a list), or a
    partitioned variable, with TensorFlow's mod and div id mapping."""
    if max_norm is not None:
        raise NotImplementedError("embedding_lookup: max_norm is not "
                                  "supported by rdmaflow")
    if partition_strategy not in ("mod", "div"):
        raise ValueError("Unrecognized partition strategy: %r"
                         % (partition_strategy,))
    ids = _n(ids)
    if isinstance(params, (list, tuple)):
        parts = [_n(p) for p in params]
        if len(parts) == 1:
            return Tensor(_rf.embedding_lookup_partitioned(
                _g(), parts[0], ids, partition_strategy, name))
        return Tensor(_rf.embedding_lookup(_g(), parts, ids,
                                           partition_strategy, name))
    return Tensor(_rf.embedding_lookup_partitioned(_g(), _n(params), ids,
                                                   partition_strategy, name))


def l2_loss(t, name=None):
    from rdmaflow import ops
    t = _fw.convert_to_tensor(t)
    return ops.multiply(ops.reduce_sum(ops.multiply(t, t)), 0.5,
                        name=name)


def zero_fraction(value, name=None):
    raise NotImplementedError("tf.nn.zero_fraction is not supported by "
                              "rdmaflow")
