"""tf.distribute.cluster_resolver: TFConfigClusterResolver (the cluster
and this task from the TF_CONFIG environment variable, as Kubeflow's
TFJob sets it) and SimpleClusterResolver."""

import json
import os

from rdmaflow.train.cluster import ClusterSpec


class SimpleClusterResolver:
    def __init__(self, cluster_spec, master="", task_type=None, task_id=None,
                 environment="", num_accelerators=None, rpc_layer=None):
        self._spec = ClusterSpec(cluster_spec)
        self.task_type = task_type
        self.task_id = task_id
        self.rpc_layer = rpc_layer
        self.environment = environment
        self._master = master

    def cluster_spec(self):
        return self._spec

    def master(self, task_type=None, task_id=None, rpc_layer=None):
        return self._master


class TFConfigClusterResolver:
    """The cluster ("cluster") and this task ("task": type, index) of
    TF_CONFIG; a malformed TF_CONFIG is a ValueError naming what is
    wrong."""

    def __init__(self, task_type=None, task_id=None, rpc_layer=None,
                 environment=None):
        text = os.environ.get("TF_CONFIG", "")
        try:
            config = json.loads(text) if text else {}
        except ValueError as e:
            raise ValueError("TF_CONFIG is not JSON: %s" % e) from None
        if not isinstance(config, dict):
            raise ValueError("TF_CONFIG must be a JSON object")
        task = config.get("task", {})
        self._cluster = config.get("cluster", {})
        self.task_type = task_type if task_type is not None \
            else task.get("type")
        self.task_id = task_id if task_id is not None else task.get("index")
        self.rpc_layer = rpc_layer or config.get("rpc_layer")
        self.environment = environment or config.get("environment", "")

    def cluster_spec(self):
        return ClusterSpec(self._cluster)

    def master(self, task_type=None, task_id=None, rpc_layer=None):
        task_type = task_type or self.task_type
        task_id = self.task_id if task_id is None else task_id
        if not task_type or task_id is None:
            return ""
        address = self.cluster_spec().task_address(task_type, task_id)
        layer = rpc_layer or self.rpc_layer
        return "%s://%s" % (layer, address) if layer else address

    def num_accelerators(self, task_type=None, task_id=None,
                         config_proto=None):
        return {}
