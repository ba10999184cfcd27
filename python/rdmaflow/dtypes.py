"""tf.DType: the element types rdmaflow's graph has (float32, int32, int64,
bool), and float64 / others as names that are refused with a clear error
when a graph op is asked for them."""

import numpy as np


class DType:
    """An element type, compared by name (tf.float32 == "float32" is
    False, as in TensorFlow; use tf.as_dtype)."""

    __slots__ = ("_name", "_np")

    def __init__(self, name, np_type):
        self._name = name
        self._np = np_type

    @property
    def name(self):
        return self._name

    @property
    def as_numpy_dtype(self):
        return self._np

    @property
    def base_dtype(self):
        return self

    @property
    def is_floating(self):
        return self._np is not None and np.issubdtype(self._np, np.floating)

    @property
    def is_integer(self):
        return self._np is not None and np.issubdtype(self._np, np.integer)

    @property
    def is_bool(self):
        return self._name == "bool"

    @property
    def size(self):
        return np.dtype(self._np).itemsize

    @property
    def supported(self):
        """Whether rdmaflow's graph has tensors of this type."""
        return self._name in _SUPPORTED

    def __eq__(self, other):
        if isinstance(other, DType):
            return self._name == other._name
        try:
            return self._name == as_dtype(other)._name
        except (TypeError, ValueError):
            return False

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(self._name)

    def __repr__(self):
        return "tf.%s" % self._name

    def __str__(self):
        return "<dtype: '%s'>" % self._name


float32 = DType("float32", np.float32)
int32 = DType("int32", np.int32)
int64 = DType("int64", np.int64)
bool = DType("bool", np.bool_)  # noqa: A001 (TensorFlow's name)
float16 = DType("float16", np.float16)
float64 = DType("float64", np.float64)
int8 = DType("int8", np.int8)
int16 = DType("int16", np.int16)
uint8 = DType("uint8", np.uint8)
string = DType("string", None)
double = float64
half = float16

_SUPPORTED = ("float32", "int32", "int64", "bool")
_ALL = {d.name: d for d in (float32, int32, int64, bool, float16, float64,
                            int8, int16, uint8, string)}


def as_dtype(value):
    """tf.as_dtype: a DType from a DType, a name, a numpy dtype or type."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        if value in _ALL:
            return _ALL[value]
        if value in ("float", "double"):
            return float32 if value == "float" else float64
        raise TypeError("Cannot convert %r to a dtype (rdmaflow has "
                        "float32, int32, int64 and bool)" % (value,))
    try:
        name = np.dtype(value).name
    except TypeError:
        raise TypeError("Cannot convert %r to a dtype" % (value,)) from None
    if name in _ALL:
        return _ALL[name]
    raise TypeError("Cannot convert %r to a dtype (rdmaflow has float32, "
                    "int32, int64 and bool)" % (value,))


def checked(value, what):
    """The DType of value, refused with a TypeError naming what unless
    rdmaflow's graph has it."""
    d = as_dtype(value)
    if not d.supported:
        raise TypeError("%s: dtype %s is not supported by rdmaflow "
                        "(float32, int32, int64, bool)" % (what, d.name))
    return d
