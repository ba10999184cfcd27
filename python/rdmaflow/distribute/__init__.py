"""tf.distribute: the cluster resolvers (cluster_resolver)."""

from rdmaflow.distribute import cluster_resolver  # noqa: F401
