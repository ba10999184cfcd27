"""tf.train.replica_device_setter and its strategies, computed by the C
library exactly as TensorFlow's _ReplicaDeviceChooser: round-robin over
the ps tasks in creation order, or greedy by bytes
(GreedyLoadBalancingStrategy with byte_size_load_fn), or a strategy of the
user's (a callable of the op returning a ps task index)."""

from rdmaflow import _rdmaflow as _rf
from rdmaflow import framework as _fw
from rdmaflow.train import cluster as _cluster


class _OpDesc:
    """What a user's ps_strategy is called with: the op about to be
    placed (its name, type and bytes)."""

    def __init__(self, name, type_, nbytes):
        self.name = name
        self.type = type_
        self.bytes = nbytes

    def __repr__(self):
        return "<op %s (%s, %d bytes)>" % (self.name, self.type, self.bytes)


def byte_size_load_fn(op):
    """tf.contrib.training.byte_size_load_fn: an op's load is its bytes."""
    return op.bytes


class GreedyLoadBalancingStrategy:
    """tf.contrib.training.GreedyLoadBalancingStrategy(num_tasks,
    load_fn): each variable goes to the ps task with the least load so far
    (the C library's greedy strategy; load_fn byte_size_load_fn only)."""

    def __init__(self, num_tasks, load_fn=None):
        if load_fn not in (None, byte_size_load_fn):
            raise NotImplementedError(
                "GreedyLoadBalancingStrategy: rdmaflow balances by bytes "
                "(byte_size_load_fn) only")
        self._num_tasks = int(num_tasks)


class _ReplicaDeviceSetter:
    """The device function replica_device_setter returns: tf.device takes
    it (the C library's setter places each op as it is created); called
    with an op it gives the device it would place that op on."""

    def __init__(self, native):
        self._native_setter = native

    @property
    def ps_tasks(self):
        return self._native_setter.ps_tasks

    def __call__(self, op):
        return self._native_setter.device_for(_fw.node_of(op, "op"))


def replica_device_setter(ps_tasks=0, ps_device="/job:ps",
                          worker_device="/job:worker", merge_devices=True,
                          cluster=None, ps_ops=None, ps_strategy=None):
    """tf.train.replica_device_setter: None when there is nothing to place
    on (no ps task), as TensorFlow."""
    jobs = None
    if cluster is not None:
        spec = _cluster.ClusterSpec(cluster)
        jobs = {job: spec.num_tasks(job) for job in spec.jobs}
    if ps_strategy is None:
        strategy = "round_robin"
    elif isinstance(ps_strategy, GreedyLoadBalancingStrategy):
        strategy = "greedy"
    elif callable(ps_strategy):
        def strategy(name, type_, nbytes, num_tasks, _s=ps_strategy):
            return int(_s(_OpDesc(name, type_, nbytes)))
    else:
        raise TypeError("ps_strategy must be callable")
    native = _rf.replica_device_setter(
        ps_tasks=int(ps_tasks), cluster=jobs, ps_device=ps_device or "",
        worker_device=worker_device or "", merge_devices=bool(merge_devices),
        ps_ops=list(ps_ops) if ps_ops is not None else None,
        strategy=strategy)
    return None if native is None else _ReplicaDeviceSetter(native)
