"""tf.layers: dense, conv2d, max_pooling2d, flatten. With TensorFlow's
default initializers (glorot_uniform kernel, zero bias) a layer is the C
library's own builder (rf_dense, rf_conv2d_layer: the same variables,
names and seeds as rf-trainer's models); other initializers or
activations are composed from get_variable and the ops, as TensorFlow's
layers are."""

from rdmaflow import _rdmaflow as _rf
from rdmaflow import framework as _fw
from rdmaflow import nn as _nn
from rdmaflow import ops as _ops
from rdmaflow import variables as _vars
from rdmaflow.framework import Tensor

_ACTIVATIONS = {None: None, _nn.relu: "relu", _nn.sigmoid: "sigmoid",
                _nn.tanh: "tanh", _nn.softmax: "softmax"}


def _act_name(activation):
    """The C activation of a function, or False if the layer must call
    it itself."""
    try:
        return _ACTIVATIONS[activation]
    except (KeyError, TypeError):
        return False


def _is_default(kernel_initializer, bias_initializer):
    def zeros(init):
        return init is None or (isinstance(init, _vars.Initializer)
                                and init.init == ("zeros",))
    return kernel_initializer is None and zeros(bias_initializer)


def _check_unsupported(**kwargs):
    for k, v in kwargs.items():
        if v is not None:
            raise NotImplementedError("tf.layers: %s is not supported by "
                                      "rdmaflow" % k)


def dense(inputs, units, activation=None, use_bias=True,
          kernel_initializer=None, bias_initializer=None,
          kernel_regularizer=None, bias_regularizer=None,
          activity_regularizer=None, kernel_constraint=None,
          bias_constraint=None, trainable=True, name=None, reuse=None):
    """tf.layers.dense: "<name>/kernel" [in, units], "<name>/bias"
    [units], MatMul, BiasAdd, activation."""
    _check_unsupported(kernel_regularizer=kernel_regularizer,
                       bias_regularizer=bias_regularizer,
                       activity_regularizer=activity_regularizer,
                       kernel_constraint=kernel_constraint,
                       bias_constraint=bias_constraint)
    g = _fw.get_default_graph()
    x = _fw.convert_to_tensor(inputs)
    act = _act_name(activation)
    if (use_bias and trainable and reuse is None and act is not False
            and _is_default(kernel_initializer, bias_initializer)):
        return Tensor(_rf.dense(g._g, x._node, int(units), act, name))
    with _vars.variable_scope(None, default_name=name or "dense",
                              reuse=reuse):
        kernel = _vars.get_variable(
            "kernel", [x.shape.as_list()[-1], int(units)],
            initializer=kernel_initializer, trainable=trainable)
        return _bias_activation(_ops.matmul(x, kernel), int(units),
                                use_bias, bias_initializer, trainable,
                                activation)


def _bias_activation(y, units, use_bias, bias_initializer, trainable,
                     activation):
    """A composed layer's "bias" [units] (zeros by default), BiasAdd and
    activation, inside its variable scope."""
    if use_bias:
        bias = _vars.get_variable(
            "bias", [units],
            initializer=bias_initializer or _vars.zeros_initializer(),
            trainable=trainable)
        y = _nn.bias_add(y, bias)
    return y if activation is None else activation(y)


def _pair(v, what):
    if isinstance(v, int):
        return v, v
    v = tuple(v)
    if len(v) != 2:
        raise ValueError("%s: an int or a pair, got %r" % (what, v))
    return int(v[0]), int(v[1])


def conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
           data_format="channels_last", dilation_rate=(1, 1),
           activation=None, use_bias=True, kernel_initializer=None,
           bias_initializer=None, kernel_regularizer=None,
           bias_regularizer=None, activity_regularizer=None,
           kernel_constraint=None, bias_constraint=None, trainable=True,
           name=None, reuse=None):
    """tf.layers.conv2d (NHWC): "kernel" [kh, kw, in, filters], "bias"."""
    _check_unsupported(kernel_regularizer=kernel_regularizer,
                       bias_regularizer=bias_regularizer,
                       activity_regularizer=activity_regularizer,
                       kernel_constraint=kernel_constraint,
                       bias_constraint=bias_constraint)
    if data_format != "channels_last":
        raise NotImplementedError("tf.layers.conv2d: rdmaflow is "
                                  "channels_last (NHWC) only")
    if _pair(dilation_rate, "dilation_rate") != (1, 1):
        raise NotImplementedError("tf.layers.conv2d: no dilation in "
                                  "rdmaflow")
    g = _fw.get_default_graph()
    x = _fw.convert_to_tensor(inputs)
    kh, kw = _pair(kernel_size, "kernel_size")
    sh, sw = _pair(strides, "strides")
    pad = _nn._padding(padding)
    act = _act_name(activation)
    if (use_bias and trainable and reuse is None and act is not False
            and sh == sw and _is_default(kernel_initializer,
                                         bias_initializer)):
        return Tensor(_rf.conv2d_layer(g._g, x._node, int(filters), kh, kw,
                                       sh, pad, act, name))
    with _vars.variable_scope(None, default_name=name or "conv2d",
                              reuse=reuse):
        kernel = _vars.get_variable(
            "kernel", [kh, kw, x.shape.as_list()[-1], int(filters)],
            initializer=kernel_initializer, trainable=trainable)
        return _bias_activation(_nn.conv2d(x, kernel, [1, sh, sw, 1], pad),
                                int(filters), use_bias, bias_initializer,
                                trainable, activation)


def max_pooling2d(inputs, pool_size, strides, padding="valid",
                  data_format="channels_last", name=None):
    if data_format != "channels_last":
        raise NotImplementedError("tf.layers.max_pooling2d: rdmaflow is "
                                  "channels_last (NHWC) only")
    kh, kw = _pair(pool_size, "pool_size")
    sh, sw = _pair(strides, "strides")
    return _nn.max_pool(inputs, [1, kh, kw, 1], [1, sh, sw, 1],
                        _nn._padding(padding), name=name)


def flatten(inputs, name=None, data_format="channels_last"):
    g = _fw.get_default_graph()
    return Tensor(_rf.flatten(g._g, _fw.convert_to_tensor(inputs)._node,
                              name))
