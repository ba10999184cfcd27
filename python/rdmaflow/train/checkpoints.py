"""Reading checkpoints as TensorFlow 1.x does: tf.train.latest_checkpoint,
tf.train.load_checkpoint(...).get_tensor(name), tf.train.list_variables.
rdmaflow's checkpoints are safetensors files with a CRC32C per tensor
(model.ckpt-<step>.safetensors, named by a `checkpoint` state file in
TensorFlow's format); a path is the file's, not a prefix."""

import os

import numpy as np

from rdmaflow import _rdmaflow as _rf


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The newest checkpoint the state file of checkpoint_dir names, or
    None if there is none."""
    if latest_filename not in (None, "checkpoint"):
        raise NotImplementedError("latest_checkpoint: the state file is "
                                  "'checkpoint' in rdmaflow")
    paths = _rf.checkpoint_list(checkpoint_dir)
    return paths[0] if paths else None


class CheckpointReader:
    """tf.train.load_checkpoint's reader: every tensor verified against
    its CRC32C when the file is opened."""

    def __init__(self, path):
        self._r = _rf.CheckpointReader(path)

    @property
    def path(self):
        return self._r.path

    def get_tensor(self, tensor_str):
        if tensor_str not in self._names():
            from rdmaflow import errors
            raise errors.NotFoundError(
                None, None, "Key %s not found in checkpoint %s"
                % (tensor_str, self._r.path))
        a = np.array(self._r.get(tensor_str))
        return a[()] if a.ndim == 0 else a

    def has_tensor(self, tensor_str):
        return tensor_str in self._names()

    def _names(self):
        return set(self._r.names())

    def get_variable_to_shape_map(self):
        return {n: list(self._r.shape(n)) for n in self._r.names()}

    def get_variable_to_dtype_map(self):
        from rdmaflow import dtypes
        return {n: dtypes.as_dtype(self._r.dtype(n))
                for n in self._r.names()}

    def debug_string(self):
        return "".join("%s (%s) %s\n" % (n, self._r.dtype(n),
                                         list(self._r.shape(n)))
                       for n in sorted(self._r.names())).encode()


def _resolve(ckpt_dir_or_file):
    if os.path.isdir(ckpt_dir_or_file):
        path = latest_checkpoint(ckpt_dir_or_file)
        if path is None:
            raise ValueError("Couldn't find 'checkpoint' file or checkpoints "
                             "in given directory %s" % ckpt_dir_or_file)
        return path
    return ckpt_dir_or_file


def load_checkpoint(ckpt_dir_or_file):
    """A reader of a checkpoint file, or of a directory's newest one."""
    return CheckpointReader(_resolve(ckpt_dir_or_file))


NewCheckpointReader = CheckpointReader


def load_variable(ckpt_dir_or_file, name):
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)


def list_variables(ckpt_dir_or_file):
    """[(name, shape)] of a checkpoint, sorted by name."""
    reader = load_checkpoint(ckpt_dir_or_file)
    shapes = reader.get_variable_to_shape_map()
    return [(n, shapes[n]) for n in sorted(shapes)]


def checkpoint_exists(checkpoint_prefix):
    return os.path.isfile(checkpoint_prefix)


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """The state file's content: model_checkpoint_path and
    all_model_checkpoint_paths (oldest first), or None."""
    paths = _rf.checkpoint_list(checkpoint_dir)
    if not paths:
        return None

    class CheckpointState:
        model_checkpoint_path = paths[0]
        all_model_checkpoint_paths = list(reversed(paths))
    return CheckpointState()
