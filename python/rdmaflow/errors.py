"""tf.errors: TensorFlow 1.x's OpError classes, and the mapping of
rdmaflow's rf_status codes to them (the extension module raises through
``_make_error``), each carrying the library's message."""

from rdmaflow import _rdmaflow as _rf

OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15
UNAUTHENTICATED = 16


class OpError(Exception):
    """A failed operation (TensorFlow's OpError). ``rf_status`` is the
    rdmaflow status code it came from (0 if raised by Python code)."""

    def __init__(self, node_def, op, message, error_code, rf_status=0):
        super().__init__(message)
        self._node_def = node_def
        self._op = op
        self._message = message
        self._error_code = error_code
        self.rf_status = rf_status

    @property
    def message(self):
        return self._message

    @property
    def op(self):
        return self._op

    @property
    def node_def(self):
        return self._node_def

    @property
    def error_code(self):
        return self._error_code

    def __str__(self):
        return self._message

    def __reduce__(self):
        return (type(self), (self._node_def, self._op, self._message))


def _subclass(name, code, doc):
    def __init__(self, node_def, op, message, *args, **kwargs):
        OpError.__init__(self, node_def, op, message, code,
                         kwargs.get("rf_status", 0))
    return type(name, (OpError,), {"__init__": __init__, "__doc__": doc})


CancelledError = _subclass("CancelledError", CANCELLED,
                           "An operation was cancelled.")
UnknownError = _subclass("UnknownError", UNKNOWN, "An unknown error.")
InvalidArgumentError = _subclass("InvalidArgumentError", INVALID_ARGUMENT,
                                 "An operation received an invalid "
                                 "argument.")
DeadlineExceededError = _subclass("DeadlineExceededError",
                                  DEADLINE_EXCEEDED,
                                  "A deadline expired before the operation "
                                  "could complete.")
NotFoundError = _subclass("NotFoundError", NOT_FOUND,
                          "A requested entity was not found.")
AlreadyExistsError = _subclass("AlreadyExistsError", ALREADY_EXISTS,
                               "An entity to create already exists.")
PermissionDeniedError = _subclass("PermissionDeniedError", PERMISSION_DENIED,
                                  "The caller may not run the operation.")
ResourceExhaustedError = _subclass("ResourceExhaustedError",
                                   RESOURCE_EXHAUSTED,
                                   "Some resource has been exhausted.")
FailedPreconditionError = _subclass("FailedPreconditionError",
                                    FAILED_PRECONDITION,
                                    "The system is not in a state to run "
                                    "the operation.")
AbortedError = _subclass("AbortedError", ABORTED,
                         "The operation was aborted (a ps task restarted).")
OutOfRangeError = _subclass("OutOfRangeError", OUT_OF_RANGE,
                            "An operation went past the valid range.")
UnimplementedError = _subclass("UnimplementedError", UNIMPLEMENTED,
                               "The operation is not implemented or not "
                               "supported here.")
InternalError = _subclass("InternalError", INTERNAL,
                          "An internal error (an operating-system I/O "
                          "error, for rdmaflow).")
UnavailableError = _subclass("UnavailableError", UNAVAILABLE,
                             "A peer is unavailable or went away.")
DataLossError = _subclass("DataLossError", DATA_LOSS,
                          "Unrecoverable data loss or corruption.")
UnauthenticatedError = _subclass("UnauthenticatedError", UNAUTHENTICATED,
                                 "The peer did not authenticate.")


class NanLossDuringTrainingError(RuntimeError):
    """tf.train.NanLossDuringTrainingError: NanTensorHook found a NaN
    loss."""

    def __str__(self):
        return self.args[0] if self.args else "NaN loss during training."


# rf_status -> the class a TensorFlow user expects for that failure.
_BY_STATUS = {
    _rf.RF_ERR_INVALID_ARG: InvalidArgumentError,
    _rf.RF_ERR_NO_MEMORY: ResourceExhaustedError,
    _rf.RF_ERR_NO_RESOURCE: ResourceExhaustedError,
    _rf.RF_ERR_UNSUPPORTED: UnimplementedError,
    _rf.RF_ERR_REMOTE_ACCESS: PermissionDeniedError,
    _rf.RF_ERR_TIMEOUT: DeadlineExceededError,
    _rf.RF_ERR_DISCONNECTED: UnavailableError,
    _rf.RF_ERR_ABORTED: AbortedError,
    _rf.RF_ERR_UNAVAILABLE: UnavailableError,
    _rf.RF_ERR_IO: InternalError,
    _rf.RF_ERR_CORRUPT: DataLossError,
    _rf.RF_ERR_AUTH: UnauthenticatedError,
}


def error_class(status):
    """The tf.errors class (or NanLossDuringTrainingError) for an
    rf_status code."""
    if status == _rf.RF_ERR_NUMERIC:
        return NanLossDuringTrainingError
    return _BY_STATUS.get(status, UnknownError)


def _make_error(status, message):
    cls = error_class(status)
    text = "%s (%s)" % (message, _rf.status_name(status))
    if cls is NanLossDuringTrainingError:
        return cls(text)
    return cls(None, None, text, rf_status=status)


_rf.set_error_factory(_make_error)


def raise_status(status, message):
    """Raises the error of an rf_status code with a message (for the
    package's own checks)."""
    raise _make_error(status, message)
