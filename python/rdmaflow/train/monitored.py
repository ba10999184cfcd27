"""tf.train.MonitoredTrainingSession over the C library's monitored
session: the chief restores the newest checkpoint or initialises, the
others wait for it; hooks run in TensorFlow's order (chief-only hooks,
StepCounter, SummarySaver, CheckpointSaver, then the caller's); a run
that meets a ps restart or a lost peer is recovered inside run(),
exactly as in C.

Where rdmaflow departs (docs/guide/python.md): the graph's one train op
(the optimizer's) is what training runs run, so it is found when the
session is made; is_chief must agree with the cluster's own choice of
chief (else ValueError); when the chief's session closes it waits for the
other workers, reads the final variables into the graph (a local
tf.Session then evaluates them) and shuts the ps tasks down, so every
task's program ends."""

from rdmaflow import _rdmaflow as _rf
from rdmaflow import errors as _errors
from rdmaflow import fetches as _fetches
from rdmaflow import framework as _fw
from rdmaflow import session as _session
from rdmaflow import variables as _vars
from rdmaflow.train import cluster as _cluster
from rdmaflow.train import hooks as _hooks
from rdmaflow.train import optimizers as _opt

USE_DEFAULT = object()


class Scaffold:
    """tf.train.Scaffold: rdmaflow reads saver (its max_to_keep); the
    other pieces are the C session's own (initialisation, readiness)."""

    def __init__(self, init_op=None, init_feed_dict=None, init_fn=None,
                 ready_op=None, ready_for_local_init_op=None,
                 local_init_op=None, summary_op=None, saver=None,
                 copy_from_scaffold=None):
        for what, v in (("init_fn", init_fn),
                        ("init_feed_dict", init_feed_dict)):
            if v is not None:
                raise NotImplementedError("Scaffold(%s=...) is not supported "
                                          "by rdmaflow" % what)
        self.saver = saver
        self.summary_op = summary_op

    def finalize(self):
        pass


class Saver:
    """tf.train.Saver as a holder of max_to_keep for Scaffold and
    CheckpointSaverHook (the chief's saves are the C session's)."""

    def __init__(self, var_list=None, max_to_keep=5, **kwargs):
        self.max_to_keep = int(max_to_keep or 0)

    def save(self, *args, **kwargs):
        raise NotImplementedError("tf.train.Saver.save: checkpoints are "
                                  "saved by MonitoredTrainingSession "
                                  "(checkpoint_dir) in rdmaflow")

    def restore(self, *args, **kwargs):
        raise NotImplementedError("tf.train.Saver.restore: the chief's "
                                  "MonitoredTrainingSession restores "
                                  "checkpoint_dir in rdmaflow")


class _Summaries:
    """Where and how often the chief writes summaries."""

    def __init__(self, summary_dir, steps, secs):
        self.dir = summary_dir
        self.steps = steps
        self.secs = secs

    def hooks(self, log_step_count_steps, scaffold):
        """The chief's StepCounter and SummarySaver, as TensorFlow's."""
        if not self.dir:
            return []
        out = []
        if log_step_count_steps and log_step_count_steps > 0:
            out.append(_hooks.StepCounterHook(
                every_n_steps=log_step_count_steps, output_dir=self.dir))
        if (self.steps and self.steps > 0) or (self.secs and self.secs > 0):
            out.append(_hooks.SummarySaverHook(
                save_steps=self.steps if self.steps else None,
                save_secs=None if self.steps else self.secs,
                output_dir=self.dir, scaffold=scaffold or Scaffold()))
        return out


def _train_op(graph):
    ops = graph._train_ops
    if not ops:
        raise ValueError(
            "MonitoredTrainingSession: the graph has no train op (make one "
            "with an optimizer's minimize or apply_gradients first)")
    if len(ops) > 1:
        raise ValueError(
            "MonitoredTrainingSession: the graph has %d train ops (%s); "
            "rdmaflow's distributed session trains with one"
            % (len(ops), ", ".join(op.name for op, _ in ops)))
    return ops[0]


class _MonitoredSession:
    """What MonitoredTrainingSession returns (a context manager)."""

    def __init__(self, server, is_chief, checkpoint_dir, scaffold, hooks,
                 chief_only_hooks, save_checkpoint_secs,
                 save_checkpoint_steps, log_step_count_steps, config,
                 stop_grace_period_secs, max_wait_secs, apply, staleness,
                 embedding_lookup, summaries, max_failed_saves):
        self._graph = _fw.get_default_graph()
        self._closed = False
        self._current_args = None
        task = server._cluster.task
        if bool(is_chief) != bool(task["is_chief"]):
            chief = server._cluster.chief
            raise ValueError(
                "MonitoredTrainingSession(is_chief=%s) on %s:%d: the "
                "cluster's chief is %s:%d (the chief job's task, else worker "
                "0), and rdmaflow binds the chief's role to it"
                % (bool(is_chief), task["job"], task["index"], chief["job"],
                   chief["index"]))
        self.is_chief = bool(is_chief)
        train_op, optimizer = _train_op(self._graph)
        options = {
            "train_op": train_op._node,
            "use_locking": optimizer.use_locking,
            "max_wait_secs": int(max_wait_secs),
            "stop_grace_secs": int(stop_grace_period_secs),
            # the hooks below save and count, in TensorFlow's order
            "save_checkpoint_steps": 0,
            "save_checkpoint_secs": 0.0,
            "log_step_count_steps": 0,
        }
        gs = _vars.get_global_step(self._graph)
        if gs is not None:
            options["global_step"] = gs._node
        if apply is not None:
            options["apply"] = apply
        if staleness is not None:
            options["staleness"] = int(staleness)
        if embedding_lookup is not None:
            options["embedding_lookup"] = embedding_lookup
        if isinstance(optimizer, _opt.SyncReplicasOptimizer):
            options["sync_replicas"] = True
            options["replicas_to_aggregate"] = optimizer.replicas_to_aggregate
            options["total_num_replicas"] = optimizer.total_num_replicas
        if checkpoint_dir:
            options["checkpoint_dir"] = checkpoint_dir
        all_hooks = []
        if self.is_chief:
            all_hooks.extend(chief_only_hooks or [])
            all_hooks.extend(summaries.hooks(log_step_count_steps, scaffold))
            if checkpoint_dir and (save_checkpoint_secs or
                                   save_checkpoint_steps):
                all_hooks.append(_hooks.CheckpointSaverHook(
                    checkpoint_dir, save_secs=save_checkpoint_secs,
                    save_steps=save_checkpoint_steps, scaffold=scaffold,
                    max_failed_saves=max_failed_saves))
        all_hooks.extend(hooks or [])
        native = _hooks.native_hooks(all_hooks, self._graph, self)
        _vars.initialize_uninitialized(self._graph)
        self._executor = _rf.Executor(_session.executor_threads(config))
        self._ms = _rf.MonitoredSession(server._server, self._graph._g,
                                        self._executor, options, native, [])

    @property
    def graph(self):
        return self._graph

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """One run with the hooks around it; a training run when fetches
        include the train op. Recovers from a ps restart or a lost peer
        inside (TensorFlow's _RecoverableSession)."""
        _fetches.check_open(self._closed, "MonitoredSession")
        if self._ms.should_stop():
            raise RuntimeError("Run called even after should_stop "
                               "requested.")
        plan = _fetches.FetchPlan(self._graph, fetches)
        if plan.specials:
            raise _errors.UnimplementedError(
                None, None, "an initializer cannot be run in a "
                "MonitoredTrainingSession: it initialises (or restores) by "
                "itself")
        nodes, values = _fetches.feeds(self._graph, feed_dict)
        self._current_args = _hooks.SessionRunArgs(fetches, feed_dict)
        views, _ = self._ms.run(nodes, values, plan.nodes)
        if views is None:  # the job ended while this task recovered
            views = [None] * len(plan.nodes)
        return plan.build(views)

    def should_stop(self):
        return self._closed or self._ms.should_stop()

    def request_stop(self):
        self._ms.request_stop()

    @property
    def global_step(self):
        """rdmaflow: the last global_step this session saw."""
        return self._ms.global_step

    @property
    def recoveries(self):
        """rdmaflow: how many times run() recovered the session."""
        return self._ms.recoveries

    def close(self):
        """Ends this task's part of the job: a worker announces it is done;
        the chief waits for the others (stop_grace_period_secs), reads the
        final variables into the graph, saves the last checkpoint and shuts
        the ps tasks down."""
        if self._closed:
            return
        self._closed = True
        try:
            self._ms.close()
        finally:
            try:
                if self.is_chief:
                    self._ms.shutdown_cluster()
            finally:
                self._ms.destroy()

    def _abandon(self):
        """The program failed inside the `with`: free the session without
        ending the job (a restarted task recovers it)."""
        if not self._closed:
            self._closed = True
            self._ms.destroy()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None or issubclass(
                exc_type, (_errors.OutOfRangeError, StopIteration)):
            self.close()
            return exc_type is not None
        self._abandon()
        return False


def MonitoredTrainingSession(master="", is_chief=True, checkpoint_dir=None,
                             scaffold=None, hooks=None,
                             chief_only_hooks=None,
                             save_checkpoint_secs=USE_DEFAULT,
                             save_summaries_steps=USE_DEFAULT,
                             save_summaries_secs=USE_DEFAULT, config=None,
                             stop_grace_period_secs=120,
                             log_step_count_steps=100, max_wait_secs=7200,
                             save_checkpoint_steps=USE_DEFAULT,
                             summary_dir=None, apply=None, staleness=None,
                             embedding_lookup=None, max_failed_saves=3):
    """tf.train.MonitoredTrainingSession on rdmaflow. master is
    server.target (the Server of this task). rdmaflow's own arguments:
    apply ("ps", the default: the ps applies the optimizer; "worker":
    one-sided read-apply-write by the worker, under the optimizer's
    use_locking), staleness (stale synchronous parallel bound) and
    embedding_lookup (how lookups fetch an embedding table's rows: "rows",
    one-sided row READs; "gather", the ps copies them; "auto", the
    default: per table, the cheaper by a cost model measured when the
    session is created) and max_failed_saves (the chief stops once that
    many checkpoint saves in a row have failed, default 3, 0: never; a
    failed save is logged and training goes on, where TensorFlow stops at
    the first)."""
    if embedding_lookup not in (None, "auto", "rows", "gather"):
        raise ValueError(
            "MonitoredTrainingSession(embedding_lookup=%r): not one of "
            "\"auto\", \"rows\", \"gather\"" % (embedding_lookup,))
    if not master:
        raise _errors.UnimplementedError(
            None, None, "MonitoredTrainingSession without a master: rdmaflow "
            "runs it in a cluster (master=server.target); a local program "
            "uses tf.Session()")
    if save_summaries_steps is USE_DEFAULT and \
            save_summaries_secs is USE_DEFAULT:
        save_summaries_steps, save_summaries_secs = 100, None
    elif save_summaries_secs is USE_DEFAULT:
        save_summaries_secs = None
    elif save_summaries_steps is USE_DEFAULT:
        save_summaries_steps = None
    if save_checkpoint_secs is USE_DEFAULT and \
            save_checkpoint_steps is USE_DEFAULT:
        save_checkpoint_secs, save_checkpoint_steps = 600, None
    elif save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_secs = None
    elif save_checkpoint_steps is USE_DEFAULT:
        save_checkpoint_steps = None
    server = _cluster.server_for(master)
    summaries = _Summaries(summary_dir or checkpoint_dir,
                           save_summaries_steps, save_summaries_secs)
    return _MonitoredSession(server, is_chief, checkpoint_dir, scaffold,
                             hooks, chief_only_hooks, save_checkpoint_secs,
                             save_checkpoint_steps, log_step_count_steps,
                             config, stop_grace_period_secs, max_wait_secs,
                             apply, staleness, embedding_lookup, summaries,
                             max_failed_saves)
