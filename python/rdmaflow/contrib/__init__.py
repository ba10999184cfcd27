"""tf.contrib's names TensorFlow 1.x's distributed programs use:
framework.get_or_create_global_step and training's placement strategies."""

import types

from rdmaflow import variables as _vars
from rdmaflow.train import device_setter as _ds

framework = types.SimpleNamespace(
    get_or_create_global_step=_vars.get_or_create_global_step,
    get_global_step=_vars.get_global_step,
    create_global_step=_vars.create_global_step)

training = types.SimpleNamespace(
    GreedyLoadBalancingStrategy=_ds.GreedyLoadBalancingStrategy,
    byte_size_load_fn=_ds.byte_size_load_fn)
