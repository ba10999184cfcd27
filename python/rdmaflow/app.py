"""tf.app: run(main, argv) as TensorFlow 1.x's (main gets the arguments
left after the flags defined with tf.app.flags were parsed, and its
return value is the exit status), and tf.app.flags.

Unlike TensorFlow's, run() gives an error of the library the exit status
rf-trainer gives it (rf_status_exit_code, README "Exit status"): a
tf.errors.OpError from rdmaflow exits 138 when a restart can cure it (a
peer unreachable past max_wait_secs, a lost ps that did not come back),
2 for a usage or configuration error, 1 otherwise, as does
tf.train.NanLossDuringTrainingError; after the traceback, the last line
says which ("prog: exit 138 (retryable): <message>"), so that Kubeflow's
restartPolicy: ExitCode restarts the task only when that can help. Any
other exception is Python's (exit 1)."""

import os
import sys
import traceback

from rdmaflow import _rdmaflow as _rf
from rdmaflow import errors
from rdmaflow import flags

_KINDS = {0: "success", 1: "permanent", 2: "usage"}


def exit_status(error):
    """The exit status for an exception raised by rdmaflow (an OpError's
    rf_status through rf_status_exit_code; NanLossDuringTrainingError:
    1); None for any other exception."""
    if isinstance(error, errors.NanLossDuringTrainingError):
        return _rf.exit_code(_rf.RF_ERR_NUMERIC)
    if isinstance(error, errors.OpError) and error.rf_status:
        return _rf.exit_code(error.rf_status)
    return None


def run(main=None, argv=None):
    """Parses the tf.app.flags flags of argv (default sys.argv), calls
    main(remaining argv) and exits with its return value, or with the
    exit status of the rdmaflow error it raised."""
    args = sys.argv if argv is None else list(argv)
    remaining = flags.FLAGS._parse(args)
    if main is None:
        main = sys.modules["__main__"].main
    try:
        code = main(remaining)
    except Exception as e:  # only rdmaflow's errors are mapped
        code = exit_status(e)
        if code is None:
            raise
        traceback.print_exc()
        prog = os.path.basename(args[0]) if args else "program"
        kind = _KINDS.get(code, "permanent" if code < 128 else "retryable")
        sys.stderr.write("%s: exit %d (%s): %s\n" % (prog, code, kind, e))
        sys.stderr.flush()
    sys.exit(code)
