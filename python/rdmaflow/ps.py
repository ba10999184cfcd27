"""rdmaflow.ps: variables on the ps tasks for a model rdmaflow's graph
does not build (PyTorch, numpy). Each named array becomes a variable
placed by replica_device_setter on the ps tasks, trained by an optimizer
(apply=ps, apply=worker or SyncReplicasOptimizer's sync) inside the same
monitored session as a graph program: checkpoints, recovery, hooks.

    server = tf.train.Server(cluster, job_name=..., task_index=...)
    with rdmaflow.ps.Session(server, {"w": w0, "b": b0},
                             tf.train.AdamOptimizer(1e-3),
                             is_chief=task_index == 0,
                             checkpoint_dir=...,
                             hooks=[tf.train.StopAtStepHook(last_step=N)]
                             ) as sess:
        while not sess.should_stop():
            params = sess.pull()      # {name: ndarray}, no copy
            ... gradients from params ...
            sess.push({"w": dw, "b": db})

pull() READs every variable one-sided into registered memory and returns
numpy views of it (valid until the next pull or push: a push may recover
the session, which frees that memory); push() hands each gradient (a
C-contiguous float32 array of the variable's shape, read in place) to the
push strategy and advances global_step. Each is one run of the monitored
session, so hooks see both. After close(), the chief's values() are the
job's final variables."""

import numpy as np

from rdmaflow import framework as _fw
from rdmaflow import ops as _ops
from rdmaflow import variables as _vars
from rdmaflow.train import cluster as _cluster
from rdmaflow.train import device_setter as _ds
from rdmaflow.train import monitored as _monitored


def _check_name(name):
    """A variable's name: the graph's characters (ASCII letters, digits,
    '_', '.', '-', '/'), so torch's names ("fc1.weight") are taken as
    they are; others are refused here, naming the name (the C library's
    own message about a non-ASCII name is lost)."""
    if not isinstance(name, str) or not name or not name.isascii():
        raise ValueError(
            "rdmaflow.ps.Session: variable name %r: a name is a non-empty "
            "ASCII string of letters, digits, '_', '.', '-' and '/' (torch's "
            "'fc1.weight' is one)" % (name,))


class Session:
    """The variables (a dict name -> initial value; the chief's are the
    ones used) and their monitored session on this worker."""

    def __init__(self, server, variables, optimizer, is_chief=None,
                 checkpoint_dir=None, hooks=None, chief_only_hooks=None,
                 save_checkpoint_secs=_monitored.USE_DEFAULT,
                 save_checkpoint_steps=_monitored.USE_DEFAULT,
                 log_step_count_steps=100, stop_grace_period_secs=120,
                 max_wait_secs=7200, apply=None, ps_strategy=None,
                 config=None):
        server = _cluster.server_for(server)
        if server.job_name == "ps":
            raise ValueError("rdmaflow.ps.Session runs on a worker; a ps "
                             "task calls server.join()")
        if not variables:
            raise ValueError("rdmaflow.ps.Session: no variables")
        self._graph = _fw.Graph()
        self._names = list(variables)
        with self._graph.as_default():
            setter = _ds.replica_device_setter(
                cluster=server.cluster_spec, ps_strategy=ps_strategy,
                worker_device="/job:%s/task:%d" % (server.job_name,
                                                   server.task_index))
            with _fw.device(setter):
                self._global_step = _vars.get_or_create_global_step()
                self._vars, self._grads, pairs = [], [], []
                for name in self._names:
                    _check_name(name)
                    value = np.asarray(variables[name], dtype=np.float32,
                                       order="C")  # 0-d stays 0-d
                    var = _vars.Variable(value, name=name)
                    if var._node.name != name:
                        raise ValueError(
                            "rdmaflow.ps.Session: variable name %r is "
                            "taken (the graph named it %r): a name must "
                            "not be global_step, another variable's "
                            "'<name>/gradient' or end in '/'"
                            % (name, var._node.name))
                    grad = _ops.placeholder("float32", value.shape,
                                            name=name + "/gradient")
                    self._vars.append(var)
                    self._grads.append(grad._node)
                    # an op of the plan, so the push hooks it
                    pairs.append((_ops.identity(grad), var))
                self._train_op = optimizer.apply_gradients(
                    pairs, global_step=self._global_step)
            if is_chief is None:
                is_chief = server.is_chief
            self._session = _monitored.MonitoredTrainingSession(
                master=server, is_chief=is_chief,
                checkpoint_dir=checkpoint_dir, hooks=hooks,
                chief_only_hooks=chief_only_hooks,
                save_checkpoint_secs=save_checkpoint_secs,
                save_checkpoint_steps=save_checkpoint_steps,
                log_step_count_steps=log_step_count_steps,
                stop_grace_period_secs=stop_grace_period_secs,
                max_wait_secs=max_wait_secs, apply=apply, config=config)
        self._var_nodes = [v._node for v in self._vars]
        self._train_nodes = [self._train_op._node]

    @property
    def names(self):
        return list(self._names)

    @property
    def graph(self):
        return self._graph

    def pull(self):
        """{name: ndarray}: every variable READ from its ps task into
        registered memory, viewed without a copy."""
        views, _ = self._session._ms.run([], [], self._var_nodes)
        if views is None:  # the job ended while this task recovered
            views = [None] * len(self._names)
        return {n: (None if v is None else np.asarray(v))
                for n, v in zip(self._names, views)}

    def push(self, gradients):
        """Pushes one gradient per variable ({name: array} or a list in
        the variables' order); returns global_step after the update."""
        if isinstance(gradients, dict):
            missing = [n for n in self._names if n not in gradients]
            extra = [n for n in gradients if n not in self._names]
            if missing or extra:
                raise ValueError("push: %s (the variables are %s)" % (
                    "; ".join(
                        ([] if not missing else
                         ["no gradient for %s" % missing]) +
                        ([] if not extra else
                         ["%s are not variables" % extra])),
                    self._names))
            values = [gradients[n] for n in self._names]
        else:
            values = list(gradients)
            if len(values) != len(self._names):
                raise ValueError("push: %d gradients for %d variables"
                                 % (len(values), len(self._names)))
        _, step = self._session._ms.run(self._grads, values,
                                        self._train_nodes)
        return step

    @property
    def global_step(self):
        return self._session.global_step

    @property
    def recoveries(self):
        return self._session.recoveries

    def should_stop(self):
        return self._session.should_stop()

    def request_stop(self):
        self._session.request_stop()

    def values(self):
        """{name: ndarray}: copies of this process's variables now (the
        chief's final ones after close())."""
        return {n: v.numpy_value() for n, v in zip(self._names, self._vars)}

    def close(self):
        self._session.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        return self._session.__exit__(exc_type, exc, tb)
