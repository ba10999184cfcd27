"""tf.compat.v1: rdmaflow itself (TensorFlow 1.x's names), so both
`import rdmaflow as tf` and `import rdmaflow.compat.v1 as tf` work."""

import sys

v1 = sys.modules["rdmaflow"]
sys.modules[__name__ + ".v1"] = v1
