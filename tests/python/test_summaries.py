"""tests/python/test_summaries.py (ctest python.summaries): tf.summary and
the chief's TensorBoard event files, read back by an independent reader
(tests/unit/tfrecord/read_tfrecord.py for the record framing and its
CRCs, the classes protoc generated from session/proto/ for the Event
protocol buffers, in the build tree):

- a job of real processes (1 ps task, 1 worker: hooks_job.py --case
  summaries): the chief's event file in --summary_dir (none in the
  checkpoint directory) holds file_version "brain.Event:2", a SessionLog
  START at step 1, the scalar summaries at global steps 1, 6, 11, 16
  (save_summaries_steps=5) with the tags TensorFlow gives ("train/loss"
  in a name scope, "progress/progress/global_step" with a family), each
  loss bit for bit the loss the worker's own fetch of that run returned
  and global_step its step, and global_step/sec at 4, 8, 12, 16, 20
  (log_step_count_steps=4); a FileWriter writes a Session.run of
  merge_all and a hand-made tf.Summary;
- without a cluster: scalar's refusals (a non-scalar, a bool tensor),
  tag cleaning, merge's duplicate tags, merge_all of nothing is None,
  FileWriter.add_summary refuses bytes and writes at step 0 by default,
  and histogram raises NotImplementedError."""

# ctest-timeout: 180

import json
import os
import socket
import sys

import numpy as np
import pytest

import rdmaflow as tf


@pytest.fixture(scope="module")
def reader(build_dir, source_dir):
    """(read_records, event_pb2): the independent reader."""
    sys.path.insert(0, str(source_dir / "tests/unit/tfrecord"))
    sys.path.insert(0, str(build_dir / "tests/unit/tfrecord/pb"))
    import read_tfrecord
    import tensorboard_event_pb2
    return read_tfrecord.read_records, tensorboard_event_pb2


def events(reader, path):
    """Every Event of the file at path, framing and CRCs checked."""
    read_records, pb = reader
    with open(path, "rb") as f:
        blob = f.read()
    return [pb.Event.FromString(d) for _, d in read_records(blob)]


def scalars(ev):
    return [(v.tag, v.simple_value) for v in ev.summary.value]


def only_file(d):
    files = [f for f in os.listdir(d) if f.startswith("events.out.")]
    assert len(files) == 1, files
    name = files[0]
    assert name.endswith("." + socket.gethostname()), name
    return os.path.join(d, name)


def test_job_event_file(cluster, python, source_dir, free_ports, tmp_path,
                        reader):
    ckpt, sdir = tmp_path / "ckpt", tmp_path / "summaries"
    ports = free_ports(2)
    job = [python, source_dir / "tests/python/hooks_job.py",
           f"--ps_hosts=127.0.0.1:{ports[0]}",
           f"--worker_hosts=127.0.0.1:{ports[1]}", "--case=summaries",
           "--last_step=20", f"--checkpoint_dir={ckpt}",
           f"--summary_dir={sdir}"]
    cluster.start({"ps0": job + ["--job_name=ps", "--task_index=0"],
                   "worker0": job + ["--job_name=worker",
                                     "--task_index=0"]},
                  env={"RF_FABRIC": "sock"})
    cluster.wait(120, check=True)
    m = cluster.wait_for_output("worker0", r"^RESULT (.*)$", 0)
    r = json.loads(m.group(1))
    assert r["runs"] == 20
    losses = {int(k): v for k, v in r["losses"].items()}
    assert sorted(losses) == list(range(1, 21))
    assert not [f for f in os.listdir(ckpt) if f.startswith("events.")]

    evs = events(reader, only_file(sdir))
    assert evs[0].WhichOneof("what") == "file_version"
    assert evs[0].file_version == "brain.Event:2"
    starts = [e.step for e in evs if e.WhichOneof("what") == "session_log"]
    assert starts == [1]
    assert evs[1].session_log.status == 1  # START, before the first summary
    saved, rates = {}, {}
    for e in evs[2:]:
        assert e.WhichOneof("what") == "summary", e
        vals = dict(scalars(e))
        if "global_step/sec" in vals:
            assert set(vals) == {"global_step/sec"}
            rates[e.step] = vals["global_step/sec"]
        else:
            assert e.step not in saved
            saved[e.step] = scalars(e)
    assert sorted(saved) == [1, 6, 11, 16]
    for step, vals in saved.items():
        tags = [t for t, _ in vals]
        assert tags == ["train/loss", "progress/progress/global_step"]
        assert vals[0][1] == np.float32(losses[step])  # bit for bit
        assert vals[1][1] == step
    assert sorted(rates) == [4, 8, 12, 16, 20]
    assert all(v > 0 for v in rates.values())
    wall = [e.wall_time for e in evs]
    assert wall == sorted(wall)

    # the FileWriter's file: merge_all's Summary, then the hand-made one
    man = events(reader, r["manual"])
    kinds = [e.WhichOneof("what") for e in man]
    assert kinds == ["file_version", "summary", "summary"]
    assert [e.step for e in man[1:]] == [20, 21]
    assert [[t, v] for t, v in scalars(man[1])] == r["merged"]
    assert r["merged"][1] == ["progress/progress/global_step", 20.0]
    assert scalars(man[2]) == [("hand", 1.5)]


def test_scalar_refusals():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        with pytest.raises(ValueError, match="shape"):
            tf.summary.scalar("batch", x)
        flag = tf.equal(tf.constant(1), tf.constant(2))
        with pytest.raises(ValueError, match="bool"):
            tf.summary.scalar("flag", flag)
        with pytest.raises(TypeError, match="expected a Tensor"):
            tf.summary.scalar("no", "not_a_tensor:0")
        assert tf.summary.merge_all() is None
        c = tf.constant(2.0)
        a = tf.summary.scalar("bad name!", c)
        assert a.tags == ["bad_name_"]
        b = tf.summary.scalar("bad name!", c)
        assert b.tags == ["bad_name__1"]
        with pytest.raises(ValueError, match="duplicate tag"):
            tf.summary.merge([a, a])
        with pytest.raises(TypeError, match="expected summaries"):
            tf.summary.merge([c])
        assert tf.summary.merge_all().tags == ["bad_name_", "bad_name__1"]
    with pytest.raises(NotImplementedError, match="scalar summaries only"):
        tf.summary.histogram("h", c)


def test_file_writer(tmp_path, reader):
    g = tf.Graph()
    with g.as_default():
        v = tf.placeholder(tf.float32, [], name="value")
        s = tf.summary.scalar("v", v)
        with tf.Session() as sess:
            summ = sess.run(s, feed_dict={v: 0.25})
    assert summ == tf.Summary(value=[tf.Summary.Value("v", 0.25)])
    w = tf.summary.FileWriter(str(tmp_path / "logs"))
    with pytest.raises(TypeError, match="serialized bytes"):
        w.add_summary(b"\x0a\x00")
    w.add_summary(summ)  # step 0
    w.add_summary(summ, 7)
    w.close()
    with pytest.raises(ValueError, match="closed"):
        w.add_summary(summ, 8)
    evs = events(reader, w.path)
    assert [(e.step, scalars(e)) for e in evs[1:]] == [
        (0, [("v", 0.25)]), (7, [("v", 0.25)])]


def test_event_writer_refuses_bad_tags(tmp_path):
    """The C writer's tag list (pyrf_tags_from_seq, shared with
    SummarySaverHook): every item a str, as many tags as values."""
    from rdmaflow import _rdmaflow as _rf
    v = tf.Summary.Value("ok", 1.0)
    v.tag = 5  # a slot, assignable after construction
    w = tf.summary.FileWriter(str(tmp_path / "logs"))
    with pytest.raises(TypeError, match=r"tags\[0\]: expected a str, got "
                       r"int"):
        w.add_summary(tf.Summary(value=[v]), 1)
    w.close()
    raw = _rf.SummaryWriter(str(tmp_path / "raw"))
    with pytest.raises(TypeError, match=r"^tags: expected a sequence$"):
        raw.scalars(1, 5, [1.0])
    with pytest.raises(TypeError, match=r"tags\[1\]: expected a str, got "
                       r"NoneType"):
        raw.scalars(1, ["a", None], [1.0, 2.0])
    with pytest.raises(ValueError, match=r"^1 tags but 2 values$"):
        raw.scalars(1, ["a"], [1.0, 2.0])
    raw.scalars(1, ["a", "b"], [1.0, 2.0])
    raw.close()
