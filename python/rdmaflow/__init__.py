"""rdmaflow: TensorFlow 1.x's distributed runtime (ps/worker training,
MonitoredTrainingSession, SyncReplicasOptimizer) over rdmaflow's
one-sided RDMA data plane, with TensorFlow 1.x's names:

    import rdmaflow as tf        # or: import rdmaflow.compat.v1 as tf

runs the "Distributed TensorFlow" tutorial's trainer.py (see
examples/python/ and docs/guide/python.md, which maps every supported
tf.* name). rdmaflow.ps holds the variables of a model rdmaflow's graph
does not build (PyTorch, numpy) on the ps tasks."""

from rdmaflow import _rdmaflow
from rdmaflow import errors
from rdmaflow.dtypes import (DType, as_dtype, bool, double, float16,
                             float32, float64, half, int8, int16, int32,
                             int64, string, uint8)
from rdmaflow.framework import (DeviceSpec, Dimension, Graph, Operation,
                                Tensor, TensorShape, colocate_with,
                                control_dependencies, convert_to_tensor,
                                device, get_default_graph, name_scope,
                                reset_default_graph)
from rdmaflow.ops import (add, add_n, argmax, assign, assign_add, cast,
                          concat, constant, equal, fill, gather, group,
                          identity, matmul, multiply, negative, no_op, ones,
                          ones_like, placeholder, reduce_mean, reduce_sum,
                          reshape, subtract, to_float, truncated_normal,
                          random_uniform, zeros, zeros_like)
from rdmaflow.variables import (AUTO_REUSE, Variable, all_variables,
                                constant_initializer, fixed_size_partitioner,
                                get_variable, get_variable_scope,
                                global_variables,
                                global_variables_initializer,
                                glorot_normal_initializer,
                                glorot_uniform_initializer,
                                initialize_all_variables,
                                local_variables,
                                local_variables_initializer,
                                min_max_variable_partitioner,
                                ones_initializer,
                                random_normal_initializer,
                                random_uniform_initializer,
                                trainable_variables,
                                truncated_normal_initializer,
                                variable_axis_size_partitioner,
                                variable_scope, variables_initializer,
                                zeros_initializer)
from rdmaflow.session import (ConfigProto, InteractiveSession, Session,
                              get_default_session)
from rdmaflow import (app, contrib, data, distribute, flags, layers, logging,
                      losses, nn, summary, train)
from rdmaflow.summary import Summary

__version__ = _rdmaflow.version().split()[0]

sub = subtract
mul = multiply
neg = negative


def set_random_seed(seed):
    """tf.set_random_seed: the default graph's seed (variables created
    without their own seed derive theirs from it and their name)."""
    get_default_graph().seed = int(seed)


class GraphKeys:
    GLOBAL_VARIABLES = "variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    LOSSES = "losses"
    GLOBAL_STEP = "global_step"
    TRAIN_OP = "train_op"
    SUMMARIES = "summaries"


def get_collection(key, scope=None):
    return get_default_graph().get_collection(key, scope)


def add_to_collection(name, value):
    get_default_graph().add_to_collection(name, value)


initializers = type("initializers", (), {
    "zeros": staticmethod(zeros_initializer),
    "ones": staticmethod(ones_initializer),
    "constant": staticmethod(constant_initializer),
    "random_uniform": staticmethod(random_uniform_initializer),
    "truncated_normal": staticmethod(truncated_normal_initializer),
    "glorot_uniform": staticmethod(glorot_uniform_initializer),
    "global_variables": staticmethod(global_variables_initializer),
    "variables": staticmethod(variables_initializer),
})

from rdmaflow import compat  # noqa: E402  (needs the module complete)
from rdmaflow import ps  # noqa: E402
