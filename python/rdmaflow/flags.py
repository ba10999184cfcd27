"""tf.app.flags (absl-style flags, as TensorFlow 1.x programs define
them): DEFINE_string, DEFINE_integer, DEFINE_float, DEFINE_boolean,
DEFINE_list, DEFINE_enum and FLAGS. Parsed by tf.app.run, or on first
use of a flag's value; --name=value, --name value, --flag / --noflag for
booleans. An unknown flag is left for the program; a bad value is an
error naming the flag (exit status 2, as argparse)."""

import sys


class _Flag:
    def __init__(self, name, default, help_, parse, kind):
        self.name = name
        self.default = default
        self.help = help_
        self.parse = parse
        self.kind = kind
        self.value = default


class _Flags:
    def __init__(self):
        object.__setattr__(self, "_flags", {})
        object.__setattr__(self, "_parsed", False)

    def _define(self, flag):
        if flag.name in self._flags:
            raise ValueError("flag --%s defined twice" % flag.name)
        self._flags[flag.name] = flag

    def _parse(self, argv):
        """Sets the flags of argv[1:]; returns argv[0] and what is not a
        flag of ours."""
        rest = [argv[0]] if argv else []
        i = 1
        while i < len(argv):
            arg = argv[i]
            i += 1
            if arg == "--":
                rest.extend(argv[i:])
                break
            if not arg.startswith("-") or arg == "-":
                rest.append(arg)
                continue
            name, eq, value = arg.lstrip("-").partition("=")
            flag = self._flags.get(name)
            if flag is None and name.startswith("no") and not eq:
                negated = self._flags.get(name[2:])
                if negated is not None and negated.kind == "bool":
                    negated.value = False
                    continue
            if flag is None:
                rest.append(arg)
                continue
            if flag.kind == "bool" and not eq:
                flag.value = True
                continue
            if not eq:
                if i >= len(argv):
                    self._fail("--%s needs a value" % name)
                value = argv[i]
                i += 1
            try:
                flag.value = flag.parse(value)
            except ValueError as e:
                self._fail("--%s=%s: %s" % (name, value, e))
        object.__setattr__(self, "_parsed", True)
        return rest

    @staticmethod
    def _fail(message):
        prog = sys.argv[0] if sys.argv else "program"
        sys.stderr.write("%s: error: %s\n" % (prog, message))
        sys.exit(2)

    def __getattr__(self, name):
        flags = object.__getattribute__(self, "_flags")
        if name not in flags:
            raise AttributeError("no flag --%s is defined" % name)
        if not object.__getattribute__(self, "_parsed"):
            self._parse(sys.argv)
        return flags[name].value

    def __setattr__(self, name, value):
        if name not in self._flags:
            raise AttributeError("no flag --%s is defined" % name)
        self._flags[name].value = value

    def __contains__(self, name):
        return name in self._flags

    def __call__(self, argv):
        return self._parse(argv)


FLAGS = _Flags()


def _bool(text):
    t = text.lower()
    if t in ("true", "t", "1", "yes"):
        return True
    if t in ("false", "f", "0", "no"):
        return False
    raise ValueError("not a boolean (true or false)")


def DEFINE_string(name, default, help, **kwargs):  # noqa: N802 (TF's name)
    FLAGS._define(_Flag(name, default, help, str, "string"))


def DEFINE_integer(name, default, help, lower_bound=None, upper_bound=None,
                   **kwargs):  # noqa: N802
    def parse(text):
        v = int(text)
        if (lower_bound is not None and v < lower_bound) or (
                upper_bound is not None and v > upper_bound):
            raise ValueError("out of range [%s, %s]" % (lower_bound,
                                                        upper_bound))
        return v
    FLAGS._define(_Flag(name, default, help, parse, "int"))


def DEFINE_float(name, default, help, **kwargs):  # noqa: N802
    FLAGS._define(_Flag(name, default, help, float, "float"))


def DEFINE_boolean(name, default, help, **kwargs):  # noqa: N802
    FLAGS._define(_Flag(name, default, help, _bool, "bool"))


DEFINE_bool = DEFINE_boolean


def DEFINE_list(name, default, help, **kwargs):  # noqa: N802
    FLAGS._define(_Flag(name, default, help,
                        lambda t: [s for s in t.split(",") if s], "list"))


def DEFINE_enum(name, default, enum_values, help, **kwargs):  # noqa: N802
    def parse(text):
        if text not in enum_values:
            raise ValueError("must be one of %s" % ", ".join(enum_values))
        return text
    FLAGS._define(_Flag(name, default, help, parse, "enum"))
