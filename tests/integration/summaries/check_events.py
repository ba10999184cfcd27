#!/usr/bin/python3
"""tests/integration/summaries/check_events.py: what a 2 ps x 2 worker
rf-trainer job wrote for TensorBoard, read by an independent reader
(tests/unit/tfrecord/read_tfrecord.py: the record framing and CRCs;
protoc's Python classes of session/proto/tensorboard_event.proto: the
Event protocol buffers).

check_events.py PB_DIR CKPT_DIR CHIEF_METRICS EVAL_LOG BATCH EVERY

- CKPT_DIR holds one event file (the chief's), named as TensorFlow names
  them: file_version "brain.Event:2", one SessionLog START just before
  the first loss summary at its step (as TensorFlow's SummarySaverHook
  writes it), and scalar summaries: "loss" and "accuracy" at the
  chief's first run and then at exactly the runs TensorFlow's step timer
  picks (EVERY global steps, predicted from the run before; other
  workers' steps interleave), each equal, as float32,
  to the loss and batch accuracy of the chief's metrics line
  (--metrics_out, one line per run, 9 and 6 digits) of the same
  global_step; and
  "global_step/sec" and "examples/sec" (= global_step/sec x BATCH, to
  float32 rounding) at the chief's runs EVERY or more global steps past
  the previous line's;
- CKPT_DIR/eval holds the evaluator's: "accuracy" at the global step of
  each checkpoint it evaluated, equal to the "test accuracy" its log
  printed (4 decimals), the last at the job's end.
Prints what it checked; exit 0 if all holds, 1 naming what does not, 2
on usage."""

import json
import math
import os
import re
import socket
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "unit", "tfrecord"))
import read_tfrecord  # noqa: E402


class Bad(Exception):
    pass


def f32(x):
    """x rounded to float32 (the metrics file prints 9 and 6 digits)."""
    return struct.unpack("f", struct.pack("f", x))[0]


def need(cond, what):
    if not cond:
        raise Bad(what)


def events_of(d, pb):
    names = [n for n in os.listdir(d) if n.startswith("events.out.")]
    need(len(names) == 1, "%s: %d event files, want 1: %s"
         % (d, len(names), names))
    want = r"events\.out\.tfevents\.\d{10}\.%s$" % re.escape(
        socket.gethostname())
    need(re.match(want, names[0]), "%s: name not TensorFlow's" % names[0])
    path = os.path.join(d, names[0])
    with open(path, "rb") as f:
        blob = f.read()
    try:
        recs = [data for _, data in read_tfrecord.read_records(blob)]
    except ValueError as e:
        raise Bad("%s: %s" % (path, e))
    evs = [pb.Event.FromString(r) for r in recs]
    need(evs and evs[0].WhichOneof("what") == "file_version"
         and evs[0].file_version == "brain.Event:2",
         "%s: first event %r" % (path, evs[:1]))
    return path, evs


def chief_metrics(path):
    """global_step -> (loss, accuracy) of the chief's step lines."""
    out = {}
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            if rec.get("type") == "step":
                out[rec["global_step"]] = (rec["loss"], rec["accuracy"])
    need(out, "%s: no step lines" % path)
    return out


def check_timer(steps, runs, every):
    """TensorFlow's step timer over the chief's runs (every global_step
    its metrics file has, one line per run): a summary at its first run,
    then at the first run whose predicted step (the run before it + 1)
    reached the last summary's + every, and at no other run; however
    far the other worker moves global_step between the chief's runs."""
    need(len(steps) >= 2 and steps[0] == runs[0],
         "summary steps %s, the chief's first run %d" % (steps, runs[0]))
    last, want = runs[0], [runs[0]]
    for prev, run in zip(runs, runs[1:]):
        if prev + 1 >= last + every:
            want.append(run)
            last = run
    need(steps == want, "summary steps %s, the timer's over the chief's "
         "runs %s" % (steps, want))


def check_chief(ckpt, pb, metrics, batch, every):
    path, evs = events_of(ckpt, pb)
    saved, rates, starts = [], [], []
    for k, e in enumerate(evs[1:], 1):
        if e.WhichOneof("what") == "session_log":
            need(e.session_log.status == 1, "not START: %r" % e)
            starts.append(k)
            continue
        need(e.WhichOneof("what") == "summary", "not a summary: %r" % e)
        vals = {v.tag: v.simple_value for v in e.summary.value}
        if "loss" in vals:
            need(list(vals) == ["loss", "accuracy"],
                 "step %d: tags %s" % (e.step, list(vals)))
            saved.append((e.step, vals))
            if len(saved) == 1:  # SummarySaverHook: START just before
                need(starts == [k - 1] and evs[k - 1].step == e.step,
                     "SessionLog START at events %s, the first summary "
                     "(step %d) is event %d" % (starts, e.step, k))
        else:
            need(list(vals) == ["global_step/sec", "examples/sec"],
                 "step %d: tags %s" % (e.step, list(vals)))
            rates.append((e.step, vals))
    need(len(starts) == 1, "%d SessionLog STARTs" % len(starts))
    steps = [s for s, _ in saved]
    check_timer(steps, sorted(metrics), every)
    for step, vals in saved:
        need(step in metrics, "no metrics line of global_step %d" % step)
        loss, acc = metrics[step]
        need(vals["loss"] == f32(loss) and vals["accuracy"] == f32(acc),
             "step %d: event loss %r accuracy %r, metrics %r %r"
             % (step, vals["loss"], vals["accuracy"], loss, acc))
        need(math.isfinite(loss) and 0 <= acc <= 1, "step %d" % step)
    need(saved[-1][1]["loss"] < saved[0][1]["loss"],
         "loss did not fall: %r" % [(s, v["loss"]) for s, v in saved])
    # StepCounterHook: at the chief's runs EVERY or more global steps
    # past the last line's (the session was created at step 0)
    rsteps, want, last = [s for s, _ in rates], [], 0
    for run in sorted(metrics):
        if run - last >= every:
            want.append(run)
            last = run
    need(rsteps and rsteps == want,
         "global_step/sec at steps %s, want %s" % (rsteps, want))
    for step, vals in rates:
        r, x = vals["global_step/sec"], vals["examples/sec"]
        need(r > 0 and abs(x - r * batch) <= 1e-6 * x + 1e-3,
             "step %d: global_step/sec %r, examples/sec %r" % (step, r, x))
    print("ok: %s: %d loss/accuracy summaries at steps %s, equal to the "
          "metrics lines; %d global_step/sec" % (
              os.path.basename(path), len(saved), steps, len(rates)))


def check_eval(ckpt, pb, eval_log):
    path, evs = events_of(os.path.join(ckpt, "eval"), pb)
    printed = []  # (global_step, accuracy) in the evaluator's log
    step = None
    with open(eval_log) as f:
        for line in f:
            m = re.search(r"\(global_step (\d+)\)$", line)
            if m:
                step = int(m.group(1))
            m = re.search(r"test accuracy: ([0-9.]+) ", line)
            if m:
                printed.append((step, float(m.group(1))))
    got = [(e.step, [(v.tag, v.simple_value) for v in e.summary.value])
           for e in evs[1:]]
    need(len(got) == len(printed) and printed,
         "%d eval events, %d evaluations printed" % (len(got), len(printed)))
    for (s, vals), (ps, acc) in zip(got, printed):
        need(s == ps and len(vals) == 1 and vals[0][0] == "accuracy"
             and abs(vals[0][1] - acc) < 5e-5,
             "eval event at %d %r, log at %d: %r" % (s, vals, ps, acc))
    print("ok: eval/%s: accuracy at steps %s as printed"
          % (os.path.basename(path), [s for s, _ in got]))


def main(argv):
    if len(argv) != 7:
        sys.stderr.write(__doc__)
        return 2
    pb_dir, ckpt, metrics, eval_log = argv[1:5]
    batch, every = int(argv[5]), int(argv[6])
    sys.path.insert(0, pb_dir)
    import tensorboard_event_pb2 as pb
    try:
        check_chief(ckpt, pb, chief_metrics(metrics), batch, every)
        check_eval(ckpt, pb, eval_log)
    except Bad as e:
        print("FAIL: %s" % e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
