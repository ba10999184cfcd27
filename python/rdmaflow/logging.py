"""tf.logging (TensorFlow 1.x): set_verbosity and the level functions,
over Python's logging module (logger "rdmaflow")."""

import logging as _logging

DEBUG = _logging.DEBUG
INFO = _logging.INFO
WARN = _logging.WARNING
ERROR = _logging.ERROR
FATAL = _logging.CRITICAL

_logger = _logging.getLogger("rdmaflow")
if not _logger.handlers:
    _handler = _logging.StreamHandler()
    _handler.setFormatter(_logging.Formatter("%(levelname)s:%(message)s"))
    _logger.addHandler(_handler)
    _logger.setLevel(WARN)


def set_verbosity(v):
    _logger.setLevel(v)


def get_verbosity():
    return _logger.getEffectiveLevel()


def debug(msg, *args):
    _logger.debug(msg, *args)


def info(msg, *args):
    _logger.info(msg, *args)


def warning(msg, *args):
    _logger.warning(msg, *args)


warn = warning


def error(msg, *args):
    _logger.error(msg, *args)


def fatal(msg, *args):
    _logger.critical(msg, *args)
