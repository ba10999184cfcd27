"""tf.app: run(main, argv) as TensorFlow 1.x's (main gets the arguments
left after the flags defined with tf.app.flags were parsed, and its
return value is the exit status), and tf.app.flags."""

import sys

from rdmaflow import flags


def run(main=None, argv=None):
    """Parses the tf.app.flags flags of argv (default sys.argv), calls
    main(remaining argv) and exits with its return value."""
    args = sys.argv if argv is None else list(argv)
    remaining = flags.FLAGS._parse(args)
    if main is None:
        main = sys.modules["__main__"].main
    sys.exit(main(remaining))
