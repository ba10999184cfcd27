#!/usr/bin/python3
"""tests/unit/tfrecord/read_events.py: an independent event file reader.

read_events.py FILE PB_DIR: FILE's records (framing and CRCs checked by
read_tfrecord.py's reader) decoded as tensorflow.Event with the classes
protoc generated from session/proto/tensorboard_event.proto into PB_DIR,
and checked against what rf_test_event_file write wrote: file_version
"brain.Event:2" first, then steps 100, 200, 300, each with loss,
global_step/sec and examples/sec at their exact values, and the file's
name in TensorFlow's pattern. Exit 0 if all holds, else 1 naming what
does not; 2 on usage.
"""

import os
import re
import socket
import sys

import read_tfrecord

T0 = 1764800000.0


def check(path, event_pb2):
    name = os.path.basename(path)
    want = r"events\.out\.tfevents\.\d{10}\.%s$" % re.escape(
        socket.gethostname())
    if not re.match(want, name):
        return "file name %s does not match %s" % (name, want)
    with open(path, "rb") as f:
        blob = f.read()
    try:
        records = [d for _, d in read_tfrecord.read_records(blob)]
    except ValueError as e:
        return str(e)
    if len(records) != 4:
        return "%d records, want 4" % len(records)
    events = [event_pb2.Event.FromString(r) for r in records]
    first = events[0]
    if first.WhichOneof("what") != "file_version" or \
            first.file_version != "brain.Event:2" or first.wall_time != T0:
        return "first event: %r" % first
    for ev, s in zip(events[1:], (100, 200, 300)):
        if ev.step != s or ev.wall_time != T0 + s or \
                ev.WhichOneof("what") != "summary":
            return "event of step %d: %r" % (s, ev)
        got = [(v.tag, v.simple_value) for v in ev.summary.value]
        want = [("loss", 2.0 - s / 200.0), ("global_step/sec", s / 4.0),
                ("examples/sec", 250.0 * s / 4.0)]
        if got != want:
            return "step %d: scalars %r, want %r" % (s, got, want)
    return None


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: read_events.py FILE PB_DIR\n")
        return 2
    sys.path.insert(0, argv[2])
    import tensorboard_event_pb2
    err = check(argv[1], tensorboard_event_pb2)
    if err:
        print("read_events: %s: %s" % (argv[1], err))
        return 1
    print("read_events: %s: 4 events as written" % argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
