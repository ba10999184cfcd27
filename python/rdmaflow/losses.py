"""tf.losses: the losses TensorFlow 1.x's models use, each the mean over
the batch (TensorFlow's SUM_BY_NONZERO_WEIGHTS with weights 1.0), added to
the LOSSES collection."""

from rdmaflow import framework as _fw
from rdmaflow import nn as _nn
from rdmaflow import ops as _ops


class Reduction:
    NONE = "none"
    SUM = "weighted_sum"
    MEAN = "weighted_mean"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS


class GraphKeys:
    LOSSES = "losses"
    REGULARIZATION_LOSSES = "regularization_losses"


def _reduce(losses, weights, reduction, what):
    if not (isinstance(weights, (int, float)) and weights == 1.0):
        raise NotImplementedError("%s: rdmaflow takes weights=1.0 only"
                                  % what)
    if reduction == Reduction.NONE:
        return losses
    if reduction == Reduction.SUM:
        return _ops.reduce_sum(losses, name="value")
    return _ops.reduce_mean(losses, name="value")


def _finish(loss, loss_collection):
    if loss_collection:
        _fw.get_default_graph().add_to_collection(loss_collection, loss)
    return loss


def sparse_softmax_cross_entropy(labels, logits, weights=1.0, scope=None,
                                 loss_collection=GraphKeys.LOSSES,
                                 reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    with _fw.name_scope(scope, "sparse_softmax_cross_entropy_loss"):
        losses = _nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits, name="xentropy")
        loss = _reduce(losses, weights, reduction,
                       "tf.losses.sparse_softmax_cross_entropy")
    return _finish(loss, loss_collection)


def sigmoid_cross_entropy(multi_class_labels, logits, weights=1.0,
                          label_smoothing=0, scope=None,
                          loss_collection=GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    if label_smoothing:
        raise NotImplementedError("tf.losses.sigmoid_cross_entropy: no "
                                  "label_smoothing in rdmaflow")
    with _fw.name_scope(scope, "sigmoid_cross_entropy_loss"):
        losses = _nn.sigmoid_cross_entropy_with_logits(
            labels=multi_class_labels, logits=logits, name="xentropy")
        loss = _reduce(losses, weights, reduction,
                       "tf.losses.sigmoid_cross_entropy")
    return _finish(loss, loss_collection)


def mean_squared_error(labels, predictions, weights=1.0, scope=None,
                       loss_collection=GraphKeys.LOSSES,
                       reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    with _fw.name_scope(scope, "mean_squared_error"):
        diff = _ops.subtract(predictions, labels)
        losses = _ops.multiply(diff, diff)
        loss = _reduce(losses, weights, reduction,
                       "tf.losses.mean_squared_error")
    return _finish(loss, loss_collection)


def get_losses(scope=None, loss_collection=GraphKeys.LOSSES):
    return _fw.get_default_graph().get_collection(loss_collection, scope)


def get_total_loss(add_regularization_losses=True, name="total_loss",
                   scope=None):
    losses = get_losses(scope)
    if not losses:
        raise ValueError("No losses to sum.")
    return _ops.add_n(losses, name=name)
