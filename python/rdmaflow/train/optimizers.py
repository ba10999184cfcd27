"""tf.train's optimizers (GradientDescent, Momentum, Adagrad, Adam,
RMSProp, Ftrl) with TensorFlow 1.x's defaults and update rules (the C
library's kernels), minimize / compute_gradients / apply_gradients, and
SyncReplicasOptimizer. Each train op an optimizer makes is recorded on its
graph, with the optimizer, for MonitoredTrainingSession: the distributed
session turns its apply ops into pushes to the ps tasks."""

from rdmaflow import _rdmaflow as _rf
from rdmaflow import framework as _fw
from rdmaflow import variables as _vars
from rdmaflow.framework import Operation, Tensor


class Optimizer:
    """tf.train.Optimizer: the base of the optimizers below."""

    GATE_NONE = 0
    GATE_OP = 1
    GATE_GRAPH = 2

    def __init__(self, use_locking, name, kind, **config):
        self._use_locking = bool(use_locking)
        self._name = name
        self._config = dict(config, kind=kind)

    def get_name(self):
        return self._name

    @property
    def use_locking(self):
        return self._use_locking

    def _config_dict(self):
        return {k: v for k, v in self._config.items() if v is not None}

    def compute_gradients(self, loss, var_list=None,
                          gate_gradients=GATE_OP, aggregation_method=None,
                          colocate_gradients_with_ops=False,
                          grad_loss=None):
        """A list of (gradient, variable); the gradient is None where
        loss does not depend on the variable."""
        if grad_loss is not None:
            raise NotImplementedError("compute_gradients: grad_loss is not "
                                      "supported by rdmaflow")
        g = _fw.get_default_graph()
        loss_node = _fw.node_of(loss, "loss")
        if var_list is None:
            var_list = _vars.trainable_variables()
        var_list = list(var_list)
        if not var_list:
            raise ValueError("No variables to optimize.")
        nodes = [_fw.node_of(v, "var_list") for v in var_list]
        grads = _rf.gradients(g._g, loss_node, nodes)
        return [(None if gr is None else Tensor(gr), v)
                for gr, v in zip(grads, var_list)]

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """The train op: every variable's update, then global_step += 1."""
        grads_and_vars = list(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("No variables provided.")
        if all(g is None for g, _ in grads_and_vars):
            raise ValueError(
                "No gradients provided for any variable, check your graph "
                "for ops that do not support gradients, between variables "
                "%s and loss." % ([v.name for _, v in grads_and_vars],))
        g = _fw.get_default_graph()
        g._check_not_finalized()
        pairs = [(gr, v) for gr, v in grads_and_vars if gr is not None]
        op = _rf.apply_gradients(
            g._g, self._config_dict(),
            [_fw.node_of(v, "variable") for _, v in pairs],
            [_fw.node_of(gr, "gradient") for gr, _ in pairs],
            None if global_step is None
            else _fw.node_of(global_step, "global_step"),
            name if name is not None else
            (self._name if self._name != _default_name(self) else None))
        return self._record(g, Operation(op))

    def minimize(self, loss, global_step=None, var_list=None,
                 gate_gradients=GATE_OP, aggregation_method=None,
                 colocate_gradients_with_ops=False, name=None,
                 grad_loss=None):
        grads_and_vars = self.compute_gradients(
            loss, var_list=var_list, gate_gradients=gate_gradients,
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops,
            grad_loss=grad_loss)
        return self.apply_gradients(grads_and_vars, global_step=global_step,
                                    name=name)

    def _record(self, g, op):
        g._train_ops.append((op, self))
        return op

    def get_slot(self, var, name):
        node = _rf.get_slot(_fw.node_of(var, "var"), name)
        return None if node is None else _vars.Variable(_node=node)

    def get_slot_names(self):
        return list(_SLOTS[self._config["kind"]](self._config))

    def variables(self):
        return [v for v in _vars.global_variables()
                if v._node.slot_primary is not None]


def _default_name(opt):
    return _DEFAULT_NAMES.get(opt._config["kind"])


_DEFAULT_NAMES = {"sgd": "GradientDescent", "momentum": "Momentum",
                  "adagrad": "Adagrad", "adam": "Adam",
                  "rmsprop": "RMSProp", "ftrl": "Ftrl"}
_SLOTS = {
    "sgd": lambda c: [],
    "momentum": lambda c: ["momentum"],
    "adagrad": lambda c: ["accumulator"],
    "adam": lambda c: ["m", "v"],
    "rmsprop": lambda c: ["rms", "momentum"] + (["mg"] if c.get("centered")
                                                else []),
    "ftrl": lambda c: ["accum", "linear"],
}


class GradientDescentOptimizer(Optimizer):
    def __init__(self, learning_rate, use_locking=False,
                 name="GradientDescent"):
        super().__init__(use_locking, name, "sgd",
                         learning_rate=float(learning_rate))


class MomentumOptimizer(Optimizer):
    def __init__(self, learning_rate, momentum, use_locking=False,
                 name="Momentum", use_nesterov=False):
        super().__init__(use_locking, name, "momentum",
                         learning_rate=float(learning_rate),
                         momentum=float(momentum),
                         use_nesterov=bool(use_nesterov))


class AdagradOptimizer(Optimizer):
    def __init__(self, learning_rate, initial_accumulator_value=0.1,
                 use_locking=False, name="Adagrad"):
        super().__init__(use_locking, name, "adagrad",
                         learning_rate=float(learning_rate),
                         initial_accumulator_value=float(
                             initial_accumulator_value))


class AdamOptimizer(Optimizer):
    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999,
                 epsilon=1e-08, use_locking=False, name="Adam"):
        super().__init__(use_locking, name, "adam",
                         learning_rate=float(learning_rate),
                         beta1=float(beta1), beta2=float(beta2),
                         epsilon=float(epsilon))


class RMSPropOptimizer(Optimizer):
    def __init__(self, learning_rate, decay=0.9, momentum=0.0,
                 epsilon=1e-10, use_locking=False, centered=False,
                 name="RMSProp"):
        super().__init__(use_locking, name, "rmsprop",
                         learning_rate=float(learning_rate),
                         decay=float(decay), momentum=float(momentum),
                         epsilon=float(epsilon), centered=bool(centered))


class FtrlOptimizer(Optimizer):
    def __init__(self, learning_rate, learning_rate_power=-0.5,
                 initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0,
                 l2_regularization_strength=0.0, use_locking=False,
                 name="Ftrl", accum_name=None, linear_name=None,
                 l2_shrinkage_regularization_strength=0.0):
        if accum_name or linear_name:
            raise NotImplementedError("FtrlOptimizer: accum_name and "
                                      "linear_name are not supported")
        super().__init__(
            use_locking, name, "ftrl", learning_rate=float(learning_rate),
            learning_rate_power=float(learning_rate_power),
            initial_accumulator_value=float(initial_accumulator_value),
            l1_regularization_strength=float(l1_regularization_strength),
            l2_regularization_strength=float(l2_regularization_strength),
            l2_shrinkage_regularization_strength=float(
                l2_shrinkage_regularization_strength))


class SyncReplicasOptimizer(Optimizer):
    """tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate,
    total_num_replicas): every global step the mean of the gradients of
    replicas_to_aggregate workers is applied once on the ps tasks (stale
    gradients dropped; total_num_replicas > replicas_to_aggregate gives
    backup workers). rdmaflow's accumulators live on the ps tasks, so the
    hook of make_session_run_hook has nothing to start (no queue runner,
    no tokens); it is accepted as TensorFlow's programs pass it."""

    def __init__(self, opt, replicas_to_aggregate, total_num_replicas=None,
                 variable_averages=None, variables_to_average=None,
                 use_locking=False, name="sync_replicas"):
        if variable_averages is not None:
            raise NotImplementedError("SyncReplicasOptimizer: "
                                      "variable_averages is not supported")
        if not isinstance(opt, Optimizer) or isinstance(
                opt, SyncReplicasOptimizer):
            raise TypeError("SyncReplicasOptimizer wraps an optimizer")
        if int(replicas_to_aggregate) < 1:
            raise ValueError("replicas_to_aggregate must be >= 1")
        total = int(total_num_replicas or replicas_to_aggregate)
        if total < int(replicas_to_aggregate):
            raise ValueError("total_num_replicas (%d) must be >= "
                             "replicas_to_aggregate (%d)"
                             % (total, int(replicas_to_aggregate)))
        super().__init__(use_locking, name, opt._config["kind"])
        self._opt = opt
        self.replicas_to_aggregate = int(replicas_to_aggregate)
        self.total_num_replicas = total

    def _config_dict(self):
        return self._opt._config_dict()

    def compute_gradients(self, *args, **kwargs):
        return self._opt.compute_gradients(*args, **kwargs)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        if global_step is None:
            raise ValueError("Global step is required to check staleness")
        op = self._opt.apply_gradients(grads_and_vars, global_step, name)
        g = _fw.get_default_graph()
        g._train_ops[-1] = (op, self)
        return op

    def get_slot(self, var, name):
        return self._opt.get_slot(var, name)

    def get_slot_names(self):
        return self._opt.get_slot_names()

    def make_session_run_hook(self, is_chief, num_tokens=-1):
        from rdmaflow.train import hooks as _hooks
        return _hooks.SyncReplicasHook(self, is_chief)

    def get_chief_queue_runner(self):
        raise NotImplementedError(
            "SyncReplicasOptimizer.get_chief_queue_runner: rdmaflow has no "
            "queue runners; pass make_session_run_hook(is_chief) to "
            "MonitoredTrainingSession")

    def get_init_tokens_op(self, num_tokens=-1):
        raise NotImplementedError(
            "SyncReplicasOptimizer.get_init_tokens_op: rdmaflow has no "
            "tokens; pass make_session_run_hook(is_chief) to "
            "MonitoredTrainingSession")
