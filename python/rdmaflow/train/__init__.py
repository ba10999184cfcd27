"""tf.train: clusters and servers, placement, optimizers, the monitored
session and its hooks, global_step, and checkpoint readers."""

from rdmaflow.train.checkpoints import (CheckpointReader,
                                        NewCheckpointReader,
                                        checkpoint_exists,
                                        get_checkpoint_state,
                                        latest_checkpoint, list_variables,
                                        load_checkpoint, load_variable)
from rdmaflow.train.cluster import ClusterSpec, Server
from rdmaflow.train.device_setter import (GreedyLoadBalancingStrategy,
                                          byte_size_load_fn,
                                          replica_device_setter)
from rdmaflow.train.hooks import (CheckpointSaverHook, FeedFnHook,
                                  FinalOpsHook, LoggingTensorHook,
                                  NanTensorHook, SessionRunArgs,
                                  SessionRunContext, SessionRunHook,
                                  SessionRunValues, StepCounterHook,
                                  StopAtStepHook, SummarySaverHook)
from rdmaflow.train.monitored import (MonitoredTrainingSession, Saver,
                                      Scaffold)
from rdmaflow.train.optimizers import (AdagradOptimizer, AdamOptimizer,
                                       FtrlOptimizer,
                                       GradientDescentOptimizer,
                                       MomentumOptimizer, Optimizer,
                                       RMSPropOptimizer,
                                       SyncReplicasOptimizer)
from rdmaflow.errors import NanLossDuringTrainingError
from rdmaflow.variables import (create_global_step, get_global_step,
                                get_or_create_global_step)


def global_step(sess, global_step_tensor):
    """tf.train.global_step: the value of global_step in a session."""
    return int(sess.run(global_step_tensor))
